//! Property (4): garbage input never panics, hangs or dies by a signal,
//! in `run`, `build --emit=anf` and `build`, and what a build makes runs
//! as `run` does.

use super::*;

use process::*;
use runner::Run;

/// Whether the first line of standard error is a clean diagnostic:
/// `FILE:LINE:COL: error: ...` or `error: ...`.
fn clean_error_line(stderr: &str) -> bool {
    let first = stderr.lines().next().unwrap_or("");
    if first.starts_with("error: ") {
        return true;
    }
    // FILE:LINE:COL: error: -- FILE may itself contain ':'.
    let Some(i) = first.find(": error: ") else {
        return false;
    };
    let mut parts = first[..i].rsplitn(3, ':');
    let col = parts.next().unwrap_or("");
    let line = parts.next().unwrap_or("");
    let file = parts.next().unwrap_or("");
    !file.is_empty()
        && !line.is_empty()
        && !col.is_empty()
        && line.bytes().all(|b| b.is_ascii_digit())
        && col.bytes().all(|b| b.is_ascii_digit())
}

/// What counts as acceptable for one input.
#[derive(Default)]
struct Tally {
    runs: usize,
    ok: usize,
    errors: usize,
    positionless: usize,
    /// `run` timeouts / memory kills of programs that `build` accepted:
    /// mutations can write genuinely non-terminating programs. Listed, not
    /// failed.
    diverged: Vec<String>,
    /// Inputs `stalingrad build` compiled to an executable.
    built: usize,
    /// Inputs `build` rejected as "not compiled yet" (unions of shapes).
    not_yet: usize,
    /// Executables whose behaviour was compared with `run`'s.
    compared: usize,
    /// Compared executables whose standard error differs from `run`'s in a
    /// known way (see [`known_difference`]). Listed, not failed.
    known: Vec<String>,
}

impl Tally {
    fn merge(&mut self, t: Tally) {
        self.runs += t.runs;
        self.ok += t.ok;
        self.errors += t.errors;
        self.positionless += t.positionless;
        self.diverged.extend(t.diverged);
        self.built += t.built;
        self.not_yet += t.not_yet;
        self.compared += t.compared;
        self.known.extend(t.known);
    }
}

/// Checks how one command ended on an arbitrary input: never a panic, a
/// signal, a hang or a runaway, always exit 0 or a clean error line.
/// Returns whether it finished (so its output can be compared).
fn check_ending(
    label: &str,
    r: &Run,
    cmd: &str,
    diverging_ok: bool,
    fail: &dyn Fn(&str, &Run, &str) -> String,
    failures: &mut Failures,
    tally: &mut Tally,
) -> bool {
    tally.runs += 1;
    if r.over_memory || r.timed_out {
        let why = if r.over_memory {
            "used more than 1 GiB (runaway recursion?)"
        } else {
            "timed out"
        };
        if diverging_ok {
            tally.diverged.push(format!("{label}: {cmd} {why}"));
        } else {
            failures.add(fail(cmd, r, why));
        }
        return false;
    }
    if r.stderr.contains("panicked") || r.stderr.contains("RUST_BACKTRACE") {
        failures.add(fail(cmd, r, "panicked"));
        return false;
    }
    let Some(status) = r.status else {
        failures.add(fail(cmd, r, "could not be waited for"));
        return false;
    };
    match status.code() {
        Some(0) => tally.ok += 1,
        Some(101) | None => {
            failures.add(fail(cmd, r, &format!("ended badly: {status}")));
            return false;
        }
        Some(_) => {
            if clean_error_line(&r.stderr) {
                tally.errors += 1;
                if r.stderr.starts_with("error: ") {
                    tally.positionless += 1;
                }
            } else {
                failures.add(fail(
                    cmd,
                    r,
                    "failed without a clean `FILE:LINE:COL: error:` line",
                ));
                return false;
            }
        }
    }
    true
}

/// Runs `stalingrad run`, `stalingrad build --emit=anf` and a full
/// `stalingrad build` on `text` and checks how each ends; when the build
/// makes an executable, runs it too (empty standard input, like `run`) and
/// requires the same standard output, standard error and exit status as
/// `run`. `label` names the input in messages.
/// Every other robustness input runs under this address-space cap (KiB),
/// as on a shared cluster or a CI runner: the compiler and the binaries it
/// makes must end cleanly there too.
const CAP_KB: u64 = 1 << 20;

fn check_input(
    text: &[u8],
    label: &str,
    dir: &Path,
    cap: Option<u64>,
    failures: &mut Failures,
    tally: &mut Tally,
) {
    let stalingrad = Path::new(env!("CARGO_BIN_EXE_stalingrad"));
    let run_binary =
        |args: &[&str], dir: &Path| run_process_capped(stalingrad, args, dir, b"", cap);
    let file = dir.join("input.vlad");
    std::fs::write(&file, text).expect("write input");
    let exe = dir.join("prog");
    let _ = std::fs::remove_file(&exe);
    let examples = repo_root().join("examples");
    let examples = examples.to_string_lossy();
    let anf = run_binary(&["build", "--emit=anf", "input.vlad", "-I", &examples], dir);
    let build = run_binary(&["build", "input.vlad", "-o", "prog", "-I", &examples], dir);
    let run = run_binary(&["run", "input.vlad", "-I", &examples], dir);
    let shown = String::from_utf8_lossy(text);
    let shown: String = shown.chars().take(4000).collect();
    let fail = |cmd: &str, r: &Run, why: &str| {
        format!(
            "{label}: `{cmd}` {why}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--- input ---\n{shown}",
            r.stdout.chars().take(2000).collect::<String>(),
            r.stderr.chars().take(2000).collect::<String>()
        )
    };
    let anf_ok = anf.success();
    check_ending(
        label,
        &anf,
        "stalingrad build --emit=anf",
        false,
        &fail,
        failures,
        tally,
    );
    let built = check_ending(
        label,
        &build,
        "stalingrad build",
        false,
        &fail,
        failures,
        tally,
    );
    let ran = check_ending(
        label,
        &run,
        "stalingrad run",
        anf_ok,
        &fail,
        failures,
        tally,
    );
    if !built {
        return;
    }
    if !build.success() {
        if build.stderr.contains("not compiled yet") {
            tally.not_yet += 1;
        } else if run.success() {
            failures.add(fail(
                "stalingrad build",
                &build,
                &format!(
                    "rejected a program that `stalingrad run` runs\n--- run stdout ---\n{}",
                    run.stdout
                ),
            ));
        }
        return;
    }
    tally.built += 1;
    if !anf_ok {
        failures.add(fail(
            "stalingrad build --emit=anf",
            &anf,
            "failed on a program that `stalingrad build` compiles",
        ));
    }
    let native = run_process_capped(&exe, &[], dir, b"", cap);
    // A program that diverges under `run` may diverge compiled too.
    let diverging_ok = !ran;
    if !check_ending(
        label,
        &native,
        "the compiled program",
        diverging_ok,
        &fail,
        failures,
        tally,
    ) || !ran
    {
        return;
    }
    if let Some(code) = native.status.and_then(|s| s.code()) {
        if code != 0 && code != 1 {
            failures.add(fail(
                "the compiled program",
                &native,
                "exited with a status other than 0 or 1",
            ));
            return;
        }
    }
    tally.compared += 1;
    let same_status = native.status.map(|s| s.code()) == run.status.map(|s| s.code());
    if same_status && native.stdout == run.stdout && native.stderr == run.stderr {
        return;
    }
    if let Some(kind) = known_difference(&run, &native) {
        tally.known.push(format!("{label}: {kind}"));
        return;
    }
    failures.add(format!(
        "{label}: the compiled program and `stalingrad run` differ\n\
         --- run: {} ---\n--- run stdout ---\n{}--- run stderr ---\n{}\
         --- compiled: {} ---\n--- compiled stdout ---\n{}--- compiled stderr ---\n{}\
         --- input ---\n{shown}",
        run.describe_status(),
        run.stdout,
        run.stderr,
        native.describe_status(),
        native.stdout,
        native.stderr,
    ));
}

/// Differences between a compiled program and `run` that are known and
/// accepted for now (as `STDERR_MAY_DIFFER` in `tests/compiled.rs`): the
/// same exit status, the same standard output and the same error message,
/// placed differently or without a position. Compiled code does not yet
/// track the dynamic call chain that the interpreter uses to place errors
/// raised inside a callee's parameter pattern or inside library code at the
/// user's call.
fn known_difference(run: &Run, native: &Run) -> Option<&'static str> {
    let code = |r: &Run| r.status.and_then(|s| s.code());
    if code(run) != code(native) || code(run) == Some(0) || run.stdout != native.stdout {
        return None;
    }
    let message = |r: &Run| {
        let first = r.stderr.lines().next().unwrap_or("");
        first.find("error: ").map(|i| first[i..].to_string())
    };
    if message(run).is_some() && message(run) == message(native) {
        return Some("the same error, placed differently");
    }
    // Compiled code bounds recursion by its stack, the interpreter by its
    // own (as tests/compiled.rs allows for runaway-recursion.vlad): each
    // says so in its own words.
    let deep = |r: &Run| message(r).is_some_and(|m| m.starts_with("error: recursion too deep"));
    if deep(run) && deep(native) {
        return Some("recursion too deep, each mode's stack");
    }
    // Under the address-space limit, an unbounded recursion of reverse
    // mode may fill the interpreter's memory (its frames hold its tapes)
    // before its depth bound, where the binary's stack fills first.
    let memory = |r: &Run| message(r).is_some_and(|m| m.starts_with("error: out of memory"));
    (memory(run) && deep(native)).then_some("a runaway recursion: memory in run, stack compiled")
}

/// Runs `gen(case)` for every case on two worker threads.
fn robustness(name: &str, prop: u64, default: usize, gen: fn(&mut Rng, usize) -> Vec<u8>) {
    let start = Instant::now();
    let list = cases(default);
    let results = on_two_workers(name, &list, |case, dir, state| {
        let (failures, tally): &mut (Failures, Tally) = state;
        let mut rng = case_rng(prop, case);
        let text = gen(&mut rng, case);
        let cap = (case % 2 == 1).then_some(CAP_KB);
        let label = match cap {
            Some(kib) => format!(
                "{name} case {case} ({}), under ulimit -v {kib}",
                reproduce(case)
            ),
            None => format!("{name} case {case} ({})", reproduce(case)),
        };
        check_input(&text, &label, dir, cap, failures, tally);
    });
    let mut failures = Failures::default();
    let mut tally = Tally::default();
    for (f, t) in results {
        failures.0.extend(f.0);
        tally.merge(t);
    }
    for d in &tally.diverged {
        println!("note: {d}");
    }
    for d in &tally.known {
        println!("known difference: {d}");
    }
    failures.finish(
        name,
        &format!(
            "{} inputs, {} runs: {} exit 0, {} clean errors ({} without a position), \
             {} runs diverged; {} built, {} not compiled yet, {} executables compared with \
             `run` ({} known differences), {:.1?}",
            list.len(),
            tally.runs,
            tally.ok,
            tally.errors,
            tally.positionless,
            tally.diverged.len(),
            tally.built,
            tally.not_yet,
            tally.compared,
            tally.known.len(),
            start.elapsed()
        ),
    );
}

/// Random bytes, biased towards characters that matter to the reader.
fn random_bytes(rng: &mut Rng, case: usize) -> Vec<u8> {
    const INTERESTING: &[u8] = b"()()()'\"#;.|\\ \n\t0123456789+-eE.xbodtf=>abclmnr*/?!";
    let len = rng.below(200);
    // Most inputs are ASCII, so that they get past UTF-8 decoding into the
    // reader; a quarter are arbitrary bytes.
    let raw = case.is_multiple_of(4);
    (0..len)
        .map(|_| {
            if rng.chance(0.75) {
                *rng.pick(INTERESTING)
            } else if raw {
                rng.next_u64() as u8
            } else {
                b' ' + rng.below(95) as u8
            }
        })
        .collect()
}

const VOCABULARY: &[&str] = &[
    "define",
    "lambda",
    "let",
    "let*",
    "letrec",
    "if",
    "cond",
    "else",
    "and",
    "or",
    "quote",
    "cons",
    "list",
    "cons*",
    "car",
    "cdr",
    "+",
    "-",
    "*",
    "/",
    "sqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "atan",
    "=",
    "<",
    ">",
    "<=",
    ">=",
    "zero?",
    "positive?",
    "null?",
    "pair?",
    "procedure?",
    "real?",
    "map",
    "map2",
    "map-n",
    "reduce",
    "length",
    "list-ref",
    "gradient-F",
    "gradient-R",
    "derivative-F",
    "derivative-R",
    "j*",
    "*j",
    "*j-inverse",
    "bundle",
    "primal",
    "tangent",
    "perturb",
    "unperturb",
    "sensitize",
    "unsensitize",
    "zero",
    "plus",
    "write",
    "write-real",
    "read-real",
    "real",
    "include",
    "custom-*j",
    "if-procedure",
    "forward?",
    "reverse?",
    "x",
    "y",
    "f",
    "g",
    "===>",
    "#t",
    "#f",
    "'()",
    "1",
    "0",
    "-1",
    "2.5",
    "4.",
    ".5",
    "-.25",
    "1e5",
    "1e400",
    "-0",
    "#xff",
    "#b101",
    "#o17",
    "#d10",
    "#xZZ",
    "1/2",
    "+inf.0",
    "+nan.0",
    "\"math\"",
    "\"nope\"",
    ".",
    "#(",
    "#|",
    "#;",
    "'",
    "`",
    ",",
    "1.2.3",
];

fn random_sexp(rng: &mut Rng, depth: u32, out: &mut String) {
    if depth == 0 || rng.chance(0.3) {
        let atom = *rng.pick(VOCABULARY);
        out.push_str(atom);
        return;
    }
    if rng.chance(0.1) {
        out.push('\'');
    }
    out.push('(');
    let n = rng.below(5);
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        random_sexp(rng, depth - 1, out);
    }
    if rng.chance(0.05) {
        out.push_str(" . ");
        random_sexp(rng, 0, out);
    }
    out.push(')');
}

/// A few random S-expressions over VLAD's vocabulary: mostly balanced,
/// mostly meaningless.
fn random_sexps(rng: &mut Rng, _case: usize) -> Vec<u8> {
    let mut s = String::new();
    // Sometimes start from a well-formed generated function, so that the
    // later forms can use `f`.
    if rng.chance(0.3) {
        let n = 1 + rng.below(3);
        let f = gen_function(rng, n, &Options::default());
        s.push_str(&f.program(false, ""));
    }
    for _ in 0..1 + rng.below(4) {
        random_sexp(rng, 4, &mut s);
        s.push('\n');
    }
    s.into_bytes()
}

/// Splits source into tokens that mutations operate on; whitespace and
/// comments are kept (as separate tokens) so the result stays readable.
fn source_tokens(text: &str) -> Vec<(String, bool)> {
    let mut toks: Vec<(String, bool)> = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let significant;
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            significant = false;
        } else if c == ';' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            significant = false;
        } else if c == '(' || c == ')' || c == '\'' {
            i += 1;
            significant = true;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            i = (i + 1).min(chars.len());
            significant = true;
        } else {
            while i < chars.len() && !chars[i].is_whitespace() && !"()';\"".contains(chars[i]) {
                i += 1;
            }
            significant = true;
        }
        toks.push((chars[start..i].iter().collect(), significant));
    }
    toks
}

fn example_sources() -> Vec<(String, String)> {
    let dir = repo_root().join("examples");
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "vlad"))
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, std::fs::read_to_string(&p).expect("read example")));
    }
    assert!(!out.is_empty(), "no examples found");
    out
}

/// An example program with 1 to 3 random token mutations: delete,
/// duplicate, swap two tokens, flip a parenthesis, or insert/replace with a
/// token from [`VOCABULARY`].
fn mutated_example(rng: &mut Rng, case: usize) -> Vec<u8> {
    thread_local! {
        static EXAMPLES: Vec<(String, String)> = example_sources();
    }
    let (_, text) = EXAMPLES.with(|e| e[case % e.len()].clone());
    mutate(rng, &text, &[])
}

/// A generated program (inputs written as `(real LITERAL)`, so that the
/// compiler cannot fold them) with 1 to 3 random token mutations, as in
/// [`mutated_example`]: mostly programs that build, then fail or not at run
/// time.
fn mutated_generated(rng: &mut Rng, _case: usize) -> Vec<u8> {
    let opts = Options {
        depth: 3,
        branches: rng.chance(0.5),
        ..Options::default()
    };
    let derivatives = rng.chance(0.5);
    let prog = gen_io_program(rng, Inputs::RealLiterals, &opts, derivatives);
    mutate(rng, &prog.text, &[])
}

/// What vector programs add to [`VOCABULARY`] for their mutations.
const VECTOR_VOCABULARY: &[&str] = &[
    "vector",
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
    "#(",
    "#()",
    "#(1 2)",
    "#(#(1) 2)",
    "3",
    "-2",
    "0.5",
];

/// A generated vector program ([`vladgen::Options::vectors`]; one case in
/// four a program that fails on a vector, [`vladgen::vector_error_program`])
/// with 1 to 3 random token mutations, some from [`VECTOR_VOCABULARY`].
fn mutated_vector_generated(rng: &mut Rng, case: usize) -> Vec<u8> {
    let text = if case % 4 == 3 {
        vladgen::vector_error_program(rng).text
    } else {
        let opts = Options {
            depth: 3,
            branches: rng.chance(0.5),
            vectors: true,
            ..Options::default()
        };
        let derivatives = rng.chance(0.5);
        gen_io_program(rng, Inputs::RealLiterals, &opts, derivatives).text
    };
    mutate(rng, &text, VECTOR_VOCABULARY)
}

/// `text` with 1 to 3 random token mutations; inserted or replacing tokens
/// come from [`VOCABULARY`], or, half the time, from `extra` when not empty.
fn mutate(rng: &mut Rng, text: &str, extra: &[&str]) -> Vec<u8> {
    let word = |rng: &mut Rng| {
        if !extra.is_empty() && rng.chance(0.5) {
            *rng.pick(extra)
        } else {
            *rng.pick(VOCABULARY)
        }
    };
    let mut toks = source_tokens(text);
    let sig: Vec<usize> = (0..toks.len()).filter(|&i| toks[i].1).collect();
    for _ in 0..1 + rng.below(3) {
        if sig.is_empty() {
            break;
        }
        let i = *rng.pick(&sig);
        match rng.below(6) {
            0 => toks[i].0.clear(),
            1 => {
                let t = toks[i].0.clone();
                toks[i].0 = format!("{t} {t}");
            }
            2 => {
                let j = *rng.pick(&sig);
                let t = toks[i].0.clone();
                toks[i].0 = toks[j].0.clone();
                toks[j].0 = t;
            }
            3 => {
                let parens: Vec<usize> = sig
                    .iter()
                    .copied()
                    .filter(|&k| toks[k].0 == "(" || toks[k].0 == ")")
                    .collect();
                if let Some(&k) = parens.get(rng.below(parens.len().max(1))) {
                    toks[k].0 = if toks[k].0 == "(" { ")" } else { "(" }.to_string();
                }
            }
            4 => {
                let t = word(rng);
                toks[i].0 = format!("{t} {}", toks[i].0);
            }
            _ => toks[i].0 = word(rng).to_string(),
        }
    }
    toks.into_iter()
        .map(|(t, _)| t)
        .collect::<String>()
        .into_bytes()
}

#[test]
fn robustness_random_bytes() {
    robustness("random-bytes", 41, 80, random_bytes);
}

#[test]
fn robustness_random_sexps() {
    robustness("random-sexps", 42, 80, random_sexps);
}

#[test]
fn robustness_mutated_examples() {
    robustness("mutated-examples", 43, 320, mutated_example);
}

#[test]
fn robustness_mutated_vector_generated() {
    robustness(
        "mutated-vector-generated",
        45,
        120,
        mutated_vector_generated,
    );
}

#[test]
fn robustness_mutated_generated() {
    robustness("mutated-generated", 44, 240, mutated_generated);
}
