use super::*;

/// Parses, expands and runs `text` with the reference interpreter,
/// returning standard output or the rendered error.
fn run(text: &str) -> Result<String, String> {
    run_with_input(text, "")
}

/// [`run`] with `stdin` as standard input.
fn run_with_input(text: &str, stdin: &str) -> Result<String, String> {
    driver::run_text(text.to_string(), stdin.as_bytes().to_vec(), 256 << 20)
}

#[test]
fn rng_is_deterministic() {
    let mut a = Rng::new(7);
    let mut b = Rng::new(7);
    for _ in 0..100 {
        assert_eq!(a.next_u64(), b.next_u64());
    }
    let u = Rng::new(1).unit();
    assert!((0.0..1.0).contains(&u));
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(
        gen_program(&mut Rng::new(42)),
        gen_program(&mut Rng::new(42))
    );
    let o = Options::default();
    let a = gen_function(&mut Rng::new(3), 2, &o).definitions;
    let b = gen_function(&mut Rng::new(3), 2, &o).definitions;
    assert_eq!(a, b);
}

#[test]
fn real_literals_round_trip() {
    for x in [0.1, -2.5e-9, 1e21, 3.0, -0.0, 1.0 / 3.0] {
        let out = run(&format!("{}\n", real_literal(x))).unwrap();
        assert_eq!(out.trim().parse::<f64>().unwrap(), x, "{x}");
    }
}

#[test]
fn generated_programs_parse_and_run() {
    for seed in 0..60 {
        let text = gen_program(&mut Rng::new(seed));
        if let Err(e) = run(&text) {
            panic!("seed {seed}: generated program failed:\n{e}\n--- program ---\n{text}");
        }
    }
}

#[test]
fn io_programs_run_and_hide_their_inputs() {
    for seed in 0..40 {
        let inputs = if seed % 2 == 0 {
            Inputs::Stdin
        } else {
            Inputs::RealLiterals
        };
        let p = gen_io_program(&mut Rng::new(seed), inputs, &Options::default(), true);
        assert_eq!(p.stdin.is_empty(), inputs == Inputs::RealLiterals);
        let out = run_with_input(&p.text, &p.stdin).unwrap_or_else(|e| {
            panic!(
                "seed {seed}: {e}\n--- program ---\n{}\n--- stdin ---\n{}",
                p.text, p.stdin
            )
        });
        assert!(out.lines().count() >= 10, "seed {seed}: {out}");
    }
}

#[test]
fn generated_functions_return_finite_reals() {
    let mut rng = Rng::new(99);
    for case in 0..60 {
        let n = 1 + case % 3;
        let f = gen_function(&mut rng, n, &Options::default());
        let p = point_literal(&gen_point(&mut rng, n));
        let text = f.program(false, &format!("(f {p})\n"));
        let out = run(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let v: f64 = out.trim().parse().unwrap_or(f64::NAN);
        assert!(v.is_finite(), "case {case}: f = {out}\n{text}");
    }
}

#[test]
fn instrumented_prelude_prints_signatures() {
    let f = RealFunction {
        arity: 1,
        name: "f".into(),
        vector: false,
        definitions: "(define (f (list x1)) (if (vg-lt x1 1) x1 (* 2 x1)))".into(),
    };
    let out = run(&f.program(true, "(f (list 0.5))\n")).unwrap();
    assert_eq!(out, "(-0.5 . #t)\n0.5\n");
}

/// The programs `build` must refuse are legal: `run` answers them at small
/// heights.
#[test]
fn unbounded_programs_run() {
    let mut rng = Rng::new(3);
    for _ in 0..12 {
        let text = unbounded_program(&mut rng);
        for height in ["0", "2"] {
            let out = run_with_input(&text, height);
            assert!(out.is_ok(), "height {height}:\n{text}\n{out:?}");
        }
    }
}

fn vector_options(seed: u64) -> Options {
    Options {
        depth: 3 + (seed % 2) as u32,
        vectors: true,
        ..Options::default()
    }
}

#[test]
fn vector_io_programs_run() {
    for seed in 0..60 {
        let inputs = if seed % 2 == 0 {
            Inputs::Stdin
        } else {
            Inputs::RealLiterals
        };
        let p = gen_io_program(&mut Rng::new(seed), inputs, &vector_options(seed), true);
        let out = run_with_input(&p.text, &p.stdin).unwrap_or_else(|e| {
            panic!(
                "seed {seed}: {e}\n--- program ---\n{}\n--- stdin ---\n{}",
                p.text, p.stdin
            )
        });
        assert!(out.contains("#("), "seed {seed}: no vector printed\n{out}");
    }
}

#[test]
fn vector_functions_return_finite_reals_and_use_vectors() {
    let mut rng = Rng::new(98);
    let mut counts = std::collections::BTreeMap::new();
    // Every case is generated and its operations counted; the first 80 run.
    for case in 0..400 {
        let n = 1 + case % 3;
        let f = gen_function(&mut rng, n, &vector_options(case as u64));
        assert!(f.vector);
        let p = f.point(&gen_point(&mut rng, n));
        for op in [
            "#(",
            "(vector ",
            "make-vector",
            "build-vector",
            "vector-length",
            "vector-ref",
            "vector-map",
            "vector-fold",
            "vector-append",
            "vector-copy",
            "vector->list",
            "list->vector",
            "vector?",
            "equal?",
        ] {
            *counts.entry(op).or_insert(0) += f.definitions.matches(op).count();
        }
        if case >= 80 {
            continue;
        }
        let text = f.program(false, &format!("(f {p})\n((gradient-R f) {p})\n"));
        let out = run(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let v: f64 = out.lines().next().unwrap_or("").parse().unwrap_or(f64::NAN);
        assert!(v.is_finite(), "case {case}: f = {out}\n{text}");
    }
    assert!(
        counts.values().all(|&c| c >= 3),
        "some vector operations are (almost) never generated: {counts:?}"
    );
}

#[test]
fn vector_error_programs_fail_with_their_message() {
    for seed in 0..60 {
        let p = vector_error_program(&mut Rng::new(seed));
        match run(&p.text) {
            Ok(out) => panic!("seed {seed}: ran to the end:\n{out}\n{}", p.text),
            Err(e) => assert!(
                e.contains(&format!("error: {}", p.message)),
                "seed {seed}: expected {:?}, got:\n{e}\n--- program ---\n{}",
                p.message,
                p.text
            ),
        }
    }
}

/// Long programs run: a literal of 300 elements and a chain of 60
/// procedures, for several seeds (every shape, width and form of each).
#[test]
fn long_programs_run() {
    for seed in 0..8 {
        let text = long_literal_program(&mut Rng::new(seed), 300);
        let out = run(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        assert!(out.starts_with("300\n"), "seed {seed}: {out}");
        assert_eq!(out.lines().count(), 4, "seed {seed}: {out}");
        let text = chain_program(&mut Rng::new(seed), 60);
        let out = run(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        assert_eq!(out.lines().count(), 2, "seed {seed}: {out}");
    }
}
