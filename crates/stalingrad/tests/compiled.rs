//! Compiled against interpreted: every program in `examples/` and `tests/`
//! is built with `stalingrad build`, run, and its standard output, standard
//! error and exit status compared with `stalingrad run`'s. Their
//! `--count-ops` arithmetic counts are compared too (compiled code may do
//! less, where the compiler folded constants; the difference is printed).
//!
//! Programs the compiler does not handle yet (none at the moment) must
//! fail to build with that message; they are
//! counted and listed, so the list cannot grow silently.

mod common;

use common::*;
use std::path::PathBuf;

/// How many programs may still be rejected as not compiled yet (none:
/// vectors compile since issue 36); the test fails if more are rejected.
const MAX_NOT_YET_COMPILED: usize = 0;

/// Run-time errors whose standard error may differ, with what compiled
/// code must still say: compiled code bounds recursion by stack size, not
/// by the interpreter's count of nested calls.
/// Standard output and exit status must still be identical.
const STDERR_MAY_DIFFER: &[(&str, &str)] = &[(
    "tests/errors/runaway-recursion.vlad",
    "error: recursion too deep",
)];

fn programs() -> Vec<PathBuf> {
    let root = repo_root();
    let mut v = vlad_files(&root.join("examples"));
    v.extend(vlad_files_recursive(
        &root.join("tests"),
        &[
            "tests/complexity",
            "tests/errors/inc",
            "tests/run/incdir",
            "tests/corpus/pending",
            "tests/refused",
        ],
    ));
    v
}

fn arithmetic(counts: &str) -> Option<u64> {
    let line = counts.lines().rev().find(|l| l.starts_with('{'))?;
    let key = "\"arithmetic_total\":";
    let i = line.find(key)? + key.len();
    line[i..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .ok()
}

fn fail(f: &mut Failures, name: &str, msg: String) {
    f.add(format!("{name}: {msg}"));
}

#[test]
fn compiled_programs_behave_like_the_interpreter() {
    let dir = std::env::temp_dir().join(format!("stalingrad-compiled-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let mut failures = Failures::default();
    let mut not_yet = Vec::new();
    let mut compared = 0;
    for path in programs() {
        let name = rel(&path);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut extra = header_args(&text);
        let input = stdin_for(&path);
        let exe = dir.join(path.file_stem().unwrap_or_default());
        let mut build_args = vec!["build".to_string(), name.clone(), "-o".into()];
        build_args.push(exe.to_string_lossy().into_owned());
        build_args.append(&mut extra.clone());
        let build = run_stalingrad(&build_args, None);
        let mut run_args = vec!["run".to_string(), name.clone()];
        run_args.append(&mut extra);
        let interp = run_stalingrad(&run_args, input.as_deref());
        if build.status.is_some_and(|s| !s.success()) {
            if build.stderr.contains("not compiled yet") {
                not_yet.push(name);
                continue;
            }
            // Rejected at compile time: exactly as `run` rejects it.
            if interp.status.is_some_and(|s| s.success())
                || interp.stderr != build.stderr
                || !interp.stdout.is_empty()
            {
                fail(&mut failures, &name, format!(
                        "build failed differently from run:\n--- build stderr\n{}--- run stderr\n{}",
                        build.stderr, interp.stderr
                    ),
                );
            }
            continue;
        }
        let native = run_program(&exe, &[], input.as_deref());
        compared += 1;
        let same_status = native.status.map(|s| s.code()) == interp.status.map(|s| s.code());
        let stderr_ok = match STDERR_MAY_DIFFER.iter().find(|(f, _)| *f == name) {
            Some((_, must)) => native.stderr.contains(must) && !interp.stderr.is_empty(),
            None => native.stderr == interp.stderr,
        };
        if native.stdout != interp.stdout || !stderr_ok || !same_status {
            fail(&mut failures, &name, format!(
                    "compiled and interpreted differ:\n--- run stdout\n{}--- compiled stdout\n{}--- run stderr\n{}--- compiled stderr\n{}--- status {:?} vs {:?}",
                    interp.stdout, native.stdout, interp.stderr, native.stderr,
                    interp.status, native.status
                ),
            );
            continue;
        }
        // Operation counts, for programs that run to the end.
        if interp.status.is_some_and(|s| s.success()) {
            let mut counted = vec![
                "build".to_string(),
                name.clone(),
                "--count-ops".into(),
                "-o".into(),
            ];
            let cexe = dir.join(format!(
                "{}-count",
                path.file_stem().unwrap_or_default().to_string_lossy()
            ));
            counted.push(cexe.to_string_lossy().into_owned());
            counted.extend(header_args(&text));
            let _ = run_stalingrad(&counted, None);
            let c = run_program(&cexe, &[], input.as_deref());
            let mut args = vec!["run".to_string(), "--count-ops=json".into(), name.clone()];
            args.extend(header_args(&text));
            let i = run_stalingrad(&args, input.as_deref());
            match (arithmetic(&c.stderr), arithmetic(&i.stderr)) {
                (Some(c), Some(i)) if c <= i => {
                    println!("{name}: identical output; arithmetic {c} compiled, {i} interpreted ({} folded)", i - c)
                }
                (c, i) => fail(
                    &mut failures,
                    &name,
                    format!("arithmetic counts: compiled {c:?}, interpreted {i:?}"),
                ),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{compared} programs compared; not compiled yet: {not_yet:?}");
    if not_yet.len() > MAX_NOT_YET_COMPILED {
        fail(
            &mut failures,
            "(all)",
            format!(
                "{} programs need unions, more than {MAX_NOT_YET_COMPILED}",
                not_yet.len()
            ),
        );
    }
    failures.finish("compiled vs interpreted", compared);
}

/// Programs `run` answers that `build` cannot compile yet, or compiles to
/// a wrong answer (`tests/corpus/pending/`): each still fails to build with
/// the error its `;; build-fails:` line names, cleanly (no panic), or still
/// prints the wrong answer its `;; wrong-answer:` line records; and `run`
/// still succeeds. When one builds, this test fails and asks for it to be moved
/// to `tests/corpus/`, where it is compared with `run`.
#[test]
fn pending_programs_fail_as_documented() {
    let dir = repo_root().join("tests/corpus/pending");
    let mut failures = Failures::default();
    let programs = vlad_files(&dir);
    for path in &programs {
        let name = rel(path);
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let want = header(&text, "build-fails").into_iter().next();
        let wrong = header(&text, "wrong-answer").into_iter().next();
        if want.is_none() && wrong.is_none() {
            failures.add(format!(
                "{name}: no `;; build-fails:` or `;; wrong-answer:` line"
            ));
            continue;
        }
        let input = stdin_for(path);
        let interp = run_stalingrad(&["run".into(), name.clone()], input.as_deref());
        if !interp.success() {
            failures.add(format!("{name}: `run` fails:\n{}", interp.transcript()));
        }
        let exe = std::env::temp_dir().join(format!("stalingrad-pending-{}", std::process::id()));
        let build = build_to(&name, &exe);
        if let Some(wrong) = wrong {
            // Still builds, and still answers wrongly (as documented).
            let native = run_program(&exe, &[], input.as_deref());
            let _ = std::fs::remove_file(&exe);
            if !build.success() || native.stdout.trim() != wrong {
                failures.add(format!(
                    "{name}: no longer answers `{wrong}`; if it now prints what `run` prints, move it to tests/corpus/:\n{}\n{}",
                    build.transcript(),
                    native.transcript()
                ));
            }
            continue;
        }
        let want = want.unwrap_or_default();
        let _ = std::fs::remove_file(&exe);
        if build.success() {
            failures.add(format!(
                "{name}: builds now; move it to tests/corpus/ (with its expected output checked there)"
            ));
        } else if !build.stderr.contains(&want)
            || build.stderr.contains("panicked")
            || build.status.and_then(|s| s.code()) != Some(1)
        {
            failures.add(format!(
                "{name}: build fails otherwise than `{want}`:\n{}",
                build.transcript()
            ));
        }
    }
    failures.finish("pending programs", programs.len());
}

/// A compiled program that allocates far more union cells than it keeps
/// (lists of run-time length, built and dropped in a loop) runs in a heap
/// of bounded size: the collector reclaims them.
#[test]
fn union_cells_are_reclaimed() {
    let dir = std::env::temp_dir().join(format!("stalingrad-gc-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let src = dir.join("lists.vlad");
    let program = "\
(define (iota n) (let loop ((i n) (acc '())) (if (zero? i) acc (loop (- i 1) (cons i acc)))))
(define (sum l) (let loop ((l l) (s 0)) (if (null? l) s (loop (cdr l) (+ s (car l))))))
(define n (read-real))
(define rounds (read-real))
(let loop ((k 0) (total 0))
  (if (< k rounds) (loop (+ k 1) (+ total (sum (iota n)))) total))
";
    std::fs::write(&src, program).expect("write the program");
    let exe = dir.join("lists");
    let build = build_to(&src.to_string_lossy(), &exe);
    assert!(build.success(), "{}", build.transcript());
    // 200 lists of 100000 cells of 24 bytes: 480 MB allocated in all.
    let out = std::process::Command::new(&exe)
        .env("VLAD_GC_STATS", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(b"100000 200")?;
            }
            child.wait_with_output()
        })
        .expect("run the program");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.trim(), "1000010000000", "stderr: {stderr}");
    let gc = stderr.lines().find(|l| l.starts_with("gc: ")).unwrap_or("");
    let stats: Vec<u64> = gc
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    let [collections, _full, heap, _stack, _live] = stats[..] else {
        panic!("no gc statistics: {stderr}");
    };
    println!("{collections} collections, heap {heap} bytes");
    assert!(collections >= 2, "{stderr}");
    // At most one list (2.4 MB) is live: collections start at 4 MiB and
    // wholly free chunks are refilled before the heap grows (22 MB
    // measured; 75 MB before the pool of empty chunks).
    assert!(heap < 48 << 20, "the heap grew to {heap} bytes: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
