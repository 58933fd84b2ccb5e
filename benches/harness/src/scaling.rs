//! The scaling table: how the time per element of AD on data of run-time
//! size grows with the data. Each case is a program of `tests/complexity`
//! that reads n and then how many times to run (the `grow-*` programs
//! read only n); compiled, it runs at n = 0, a small n (repeated, where
//! one run would be lost in the start-up's noise) and a large n, and its
//! time per element at each size is the best time at that size less the
//! best at n = 0 (the start-up), over the elements. A compiled program
//! keeps the language's complexity promise when the large size's time
//! per element stays within a small factor (2; 1.5 for the vector
//! programs, issue 36) of the small one's; the interpreter runs at a
//! middle size for the speed-up and for the output, which must be the
//! same.

use super::*;

pub(crate) struct Case {
    /// Its path in `tests/complexity`, without `.vlad`.
    pub(crate) name: &'static str,
    what: &'static str,
    small: u64,
    /// How many times the program runs at the small size.
    small_reps: u64,
    large: u64,
    /// The size both compiled code and the interpreter run at.
    versus: u64,
}

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "grow-sumsq-rec",
        what: "gradient-R of a sum of squares, by non-tail recursion over a list",
        small: 4_000,
        small_reps: 1,
        large: 256_000,
        versus: 16_000,
    },
    Case {
        name: "grow-hvp-fr",
        what: "Hessian-vector product, forward over reverse, over a list",
        small: 1_000,
        small_reps: 1,
        large: 64_000,
        versus: 1_000,
    },
    Case {
        name: "grow-horner-rr",
        what: "second derivative, reverse over reverse, through a loop",
        small: 1_000,
        small_reps: 1,
        large: 64_000,
        versus: 1_000,
    },
    Case {
        name: "vectors/sumsq-ref",
        what: "gradient-R of a sum of squares, by a loop of vector-ref",
        small: 1_000,
        small_reps: 1_000,
        large: 1_000_000,
        versus: 1_000,
    },
    Case {
        name: "vectors/logsumexp",
        what: "gradient-R of log-sum-exp, by vector-fold",
        small: 1_000,
        small_reps: 1_000,
        large: 1_000_000,
        versus: 1_000,
    },
    Case {
        name: "vectors/matvec",
        what: "gradient-R of the sum of squares of A x, with respect to A and x, A of n elements",
        small: 1_024,
        small_reps: 1_000,
        large: 1_048_576,
        versus: 1_024,
    },
    Case {
        name: "vectors/hvp-fr",
        what: "Hessian-vector product, forward over reverse, over a vector",
        small: 1_000,
        small_reps: 1_000,
        large: 1_000_000,
        versus: 1_000,
    },
    Case {
        name: "vectors/hvp-rr",
        what: "gradient of the sum of a gradient, reverse over reverse, over a vector",
        small: 1_000,
        small_reps: 1_000,
        large: 1_000_000,
        versus: 1_000,
    },
];

/// Runs at the small size and at n = 0, where a run takes about a
/// millisecond and the machine's noise is of that order: the best of many.
const SMALL_RUNS: usize = 31;
const LARGE_RUNS: usize = 7;

pub(crate) struct Scaled {
    case: &'static Case,
    /// Seconds per element, compiled, at the small and the large size.
    small: Result<f64, String>,
    large: Result<f64, String>,
    /// Seconds per run less the start-up, compiled and interpreted, at the
    /// middle size.
    compiled: Result<f64, String>,
    interp: Result<f64, String>,
    output: &'static str,
}

/// The best time of runs of `cmd` at each size (`(n, runs)`), and the
/// output of the last run at each. The sizes take turns, so that the
/// machine's load drifting over the measurement weighs on all alike.
fn best(
    ctx: &Ctx,
    cmd: &dyn Fn() -> Command,
    sizes: &[(u64, u64, usize)],
) -> Result<Vec<(f64, String)>, String> {
    let mut out: Vec<(f64, String)> = vec![(f64::INFINITY, String::new()); sizes.len()];
    let mut total = 0.0;
    let rounds = sizes.iter().map(|s| s.2).max().unwrap_or(0);
    for round in 0..rounds {
        for (k, &(n, reps, runs)) in sizes.iter().enumerate() {
            if round >= runs {
                continue;
            }
            match ctx.run(&mut cmd(), &format!("{n}\n{reps}\n"), ctx.limit) {
                Run::Done { secs, stdout, .. } => {
                    out[k].0 = out[k].0.min(secs);
                    out[k].1 = stdout;
                    total += secs;
                }
                Run::TimedOut => return Err(format!("> {} s (limit)", ctx.limit)),
                Run::Failed(m) => return Err(m),
            }
        }
        if total > ctx.limit {
            break;
        }
    }
    Ok(out)
}

pub(crate) fn measure(ctx: &Ctx, case: &'static Case) -> Scaled {
    eprintln!("== scaling: {}", case.name);
    let src = ctx
        .root
        .join(format!("tests/complexity/{}.vlad", case.name));
    let exe = ctx.work.join(case.name.replace('/', "-"));
    let mut build = Command::new(&ctx.stalingrad);
    build.arg("build").arg(&src).arg("-o").arg(&exe);
    let built = match ctx.run(&mut build, "", 600.0) {
        Run::Done { .. } => Ok(()),
        Run::TimedOut => Err("build timed out (600 s)".to_string()),
        Run::Failed(m) => Err(m),
    };
    let compiled = || Command::new(&exe);
    let interp = || {
        let mut c = Command::new(&ctx.stalingrad);
        c.arg("run").arg(&src);
        c
    };
    let runs = built.clone().and_then(|()| {
        best(
            ctx,
            &compiled,
            &[
                (0, 0, SMALL_RUNS),
                (case.small, case.small_reps, SMALL_RUNS),
                (case.versus, 1, SMALL_RUNS),
                (case.large, 1, LARGE_RUNS),
            ],
        )
    });
    let at = |k: usize| runs.as_ref().map(|r| r[k].clone()).map_err(Clone::clone);
    // A run no slower than the start-up alone (the machine's load at
    // n = 0) says nothing of the work: shown so, not as 0.
    let above_start = |t: f64| -> Result<f64, String> {
        if t > 0.0 {
            Ok(t)
        } else {
            Err("within the start-up's noise".to_string())
        }
    };
    let per_element = |k: usize, n: u64| -> Result<f64, String> {
        Ok(above_start(at(k)?.0 - at(0)?.0)? / n as f64)
    };
    let small = per_element(1, case.small * case.small_reps);
    let large = per_element(3, case.large);
    let c = at(2).and_then(|(t, out)| Ok((t - at(0)?.0, out)));
    let i = built.clone().and_then(|()| {
        let r = best(ctx, &interp, &[(0, 0, 3), (case.versus, 1, 3)])?;
        Ok((r[1].0 - r[0].0, r[1].1.clone()))
    });
    let output = match (&c, &i) {
        (Ok((_, a)), Ok((_, b))) if a == b => "same",
        (Ok(_), Ok(_)) => "DIFFERS",
        _ => "n/a",
    };
    let c = c.and_then(|(t, out)| Ok((above_start(t)?, out)));
    let i = i.and_then(|(t, out)| Ok((above_start(t)?, out)));
    let s = Scaled {
        case,
        small,
        large,
        compiled: c.map(|(t, _)| t),
        interp: i.map(|(t, _)| t),
        output,
    };
    eprintln!("  {}", row(&s));
    s
}

fn time(r: &Result<f64, String>) -> String {
    match r {
        Ok(t) => fmt_time(*t),
        Err(m) => m.clone(),
    }
}

fn row(s: &Scaled) -> String {
    let c = s.case;
    let quotient = |a: &Result<f64, String>, b: &Result<f64, String>| match (a, b) {
        (Ok(a), Ok(b)) if *b > 0.0 => fmt_ratio(a / b),
        _ => String::new(),
    };
    format!(
        "| {} ({}) | {} | {} | {} | {} | {} | {} | {} | {} |",
        c.name,
        c.what,
        time(&s.small),
        time(&s.large),
        quotient(&s.large, &s.small),
        c.versus,
        time(&s.compiled),
        time(&s.interp),
        quotient(&s.interp, &s.compiled),
        s.output,
    )
}

/// The section of `docs/benchmarks.md`.
pub(crate) fn markdown(rows: &[Scaled]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n## Scaling\n\nCompiled time per element of AD on data of run-time size (`tests/complexity`), at a small and a large n: the best of {SMALL_RUNS} runs at the small size and at n = 0, of {LARGE_RUNS} at the large one (the sizes taking turns), less the best at n = 0, over the elements (a vector program runs its small size 1000 times in one run). Then the compiled program and the interpreter (`stalingrad run`) at a middle n, each less its own start-up (best of {SMALL_RUNS} and of 3 runs), and whether they print the same.\n"
    );
    let _ = writeln!(s, "| program | compiled / element, small n | large n | large / small | middle n | compiled | interpreter | interpreter / compiled | output |");
    let _ = writeln!(
        s,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    );
    for r in rows {
        let _ = writeln!(s, "{}", row(r));
    }
    let _ = writeln!(
        s,
        "\nSizes: {}.",
        rows.iter()
            .map(|r| {
                let times = match r.case.small_reps {
                    1 => String::new(),
                    k => format!(" ({k} times a run)"),
                };
                format!(
                    "{} small n = {}{times}, large n = {}",
                    r.case.name, r.case.small, r.case.large
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    );
    s
}
