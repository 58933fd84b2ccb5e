//! `stalingrad repl` fed from a pipe (the scripted mode: no prompt, values
//! only), and the commands that describe the tool: `--version`,
//! `completions`, `help`.

mod common;

use common::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn repl(input: &str) -> Run {
    run_stalingrad(&args(&["repl"]), Some(input.as_bytes()))
}

/// No panic, no Rust backtrace, whatever the input.
fn assert_clean(run: &Run) {
    assert!(!run.timed_out, "{}", run.transcript());
    for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
        assert!(!run.stderr.contains(bad), "{}", run.transcript());
    }
}

fn assert_ok(run: &Run, stdout: &str) {
    assert_clean(run);
    assert!(run.success(), "{}", run.transcript());
    assert_eq!(run.stdout, stdout, "{}", run.transcript());
    assert_eq!(run.stderr, "", "{}", run.transcript());
}

#[test]
fn the_issues_example_prints_six() {
    let run = repl("(define (f x) (* x x))\n((derivative-R f) 3)\n");
    assert_ok(&run, "6\n");
}

#[test]
fn an_error_is_reported_and_the_next_form_runs() {
    let run = repl("(car 1)\n(+ 1 2)\n(undefined-thing 2)\n(* 2 3)\n");
    assert_clean(&run);
    assert_eq!(run.stdout, "3\n6\n", "{}", run.transcript());
    assert!(
        run.stderr.contains("<stdin>:1:1: error: pattern mismatch"),
        "{}",
        run.transcript()
    );
    assert!(
        run.stderr
            .contains("<stdin>:3:2: error: unbound variable `undefined-thing`"),
        "{}",
        run.transcript()
    );
    // A scripted session with an error ends with a failure status.
    assert_eq!(
        run.status.and_then(|s| s.code()),
        Some(1),
        "{}",
        run.transcript()
    );
}

#[test]
fn definitions_persist_and_can_be_replaced() {
    let run = repl(
        "(define (g x) (+ x 1))\n(define k 10)\n(g k)\n(define (g x) (* x k))\n(g 2)\n(define (h) (g 3))\n(h)\n",
    );
    assert_ok(&run, "11\n20\n30\n");
}

#[test]
fn a_definition_that_fails_is_not_kept() {
    // `bad` does not expand; `worse` expands but its value fails to run.
    let run = repl(
        "(define (bad x) (nowhere x))\n(define worse (car 1))\n(define ok 1)\nok\n(bad 1)\nworse\n",
    );
    assert_clean(&run);
    assert_eq!(run.stdout, "1\n", "{}", run.transcript());
    assert!(
        run.stderr
            .contains("<stdin>:5:2: error: unbound variable `bad`"),
        "{}",
        run.transcript()
    );
    assert!(
        run.stderr
            .contains("<stdin>:6:1: error: unbound variable `worse`"),
        "{}",
        run.transcript()
    );
}

#[test]
fn multi_line_forms_are_read_to_their_end() {
    let run = repl("(define (f x)\n  (* x\n     x))\n\n(f\n 4)   (f 5)\n'(1\n 2)\n");
    assert_ok(&run, "16\n25\n(1 2)\n");
    // Positions count lines from the start of the session.
    let run = repl("(define (f x)\n  (* x y))\n");
    assert_clean(&run);
    assert!(
        run.stderr
            .contains("<stdin>:2:8: error: unbound variable `y`"),
        "{}",
        run.transcript()
    );
}

#[test]
fn a_form_cut_short_by_the_end_of_input_is_an_error() {
    let run = repl("(+ 1 2)\n(define (f x)\n");
    assert_clean(&run);
    assert_eq!(run.stdout, "3\n", "{}", run.transcript());
    assert!(
        run.stderr
            .contains("<stdin>:2:1: error: expected `)` to close this `(`, found end of file"),
        "{}",
        run.transcript()
    );
    assert!(!run.success(), "{}", run.transcript());
}

#[test]
fn output_of_a_definition_is_seen_once() {
    // Each input runs the session's definitions again; what they print
    // was seen when they were entered.
    let run = repl("(define y (write-real 5))\ny\n(+ y 1)\n");
    assert_ok(&run, "5\n5\n6\n");
    // Also when a procedure it uses is redefined, which places that
    // procedure's new definition before it.
    let run = repl("(define (g x) x)\n(define y (write-real (g 5)))\n(define (g x) (* 2 x))\ny\n");
    assert_ok(&run, "5\n10\n");
}

#[test]
fn load_runs_a_file_and_keeps_its_definitions() {
    let file = "examples/13-include.vlad";
    let expected = run_stalingrad(&args(&["run", file]), None);
    assert!(expected.success(), "{}", expected.transcript());
    let run = repl(&format!(",load {file}\n(vsum '(1 2 3))\n(poly '(1 1) 2)\n"));
    assert_ok(&run, &format!("{}6\n3\n", expected.stdout));
    let run = repl(",load no/such/file.vlad\n(+ 1 1)\n");
    assert_clean(&run);
    assert_eq!(run.stdout, "2\n", "{}", run.transcript());
    assert!(
        run.stderr.contains("error: cannot read no/such/file.vlad"),
        "{}",
        run.transcript()
    );
}

#[test]
fn includes_are_found_from_the_current_directory_and_with_dash_i() {
    let input = "(include \"vectors\")\n(vsum '(1 2 3))\n(mean '(2 4))\n";
    let run = run_stalingrad(
        &args(&["repl", "-I", "examples/lib"]),
        Some(input.as_bytes()),
    );
    assert_ok(&run, "6\n3\n");
    let run = repl("(include \"examples/lib/vectors\")\n(vsum '(1 2 3))\n");
    assert_ok(&run, "6\n");
    let run = repl("(include \"no-such-library\")\n(+ 1 2)\n");
    assert_clean(&run);
    assert_eq!(run.stdout, "3\n", "{}", run.transcript());
    assert!(
        run.stderr
            .contains("<stdin>:1:1: error: cannot find included file `no-such-library.vlad`"),
        "{}",
        run.transcript()
    );
}

#[test]
fn emit_prints_what_build_prints() {
    let defs = "(define (f x) (* x x))\n(define (g x) ((derivative-R f) x))\n";
    let expr = "(g 3)";
    let dir = std::env::temp_dir().join(format!("stalingrad-repl-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let src = dir.join("emit.vlad");
    for stage in ["anf", "fir", "ir"] {
        // The expression where the REPL reads it (after `,emit STAGE `), so
        // that the positions compiled in for run-time errors agree.
        let pad = " ".repeat(format!(",emit {stage} ").len());
        std::fs::write(&src, format!("{defs}{pad}{expr}\n")).expect("write program");
        let built = run_stalingrad(
            &args(&["build", &format!("--emit={stage}"), &src.to_string_lossy()]),
            None,
        );
        assert!(built.success(), "{}", built.transcript());
        let run = repl(&format!("{defs},emit {stage} {expr}\n"));
        let expected = built.stdout.replace(&*src.to_string_lossy(), "<stdin>");
        assert_ok(&run, &expected);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let run = repl(",emit bogus (+ 1 2)\n");
    assert_clean(&run);
    assert!(
        run.stderr
            .contains("`,emit` takes a stage (anf, flow or fir)"),
        "{}",
        run.transcript()
    );
}

#[test]
fn errors_inside_derivatives_read_as_run_prints_them() {
    let programs = [
        "((derivative-R (lambda (x) (car x))) 3)\n",
        "(define (g w) (lambda (x) (* w (car x))))\n\
         ((derivative-F (lambda (w) ((derivative-R (g w)) 2))) 1)\n",
        "((derivative-F (lambda (x) (+ x (list 1)))) 3)\n",
    ];
    let dir = std::env::temp_dir().join(format!("stalingrad-repl-ad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let src = dir.join("ad.vlad");
    for program in programs {
        std::fs::write(&src, program).expect("write program");
        let ran = run_stalingrad(&args(&["run", &src.to_string_lossy()]), None);
        assert!(!ran.success(), "{}", ran.transcript());
        assert!(
            ran.stderr.contains("note: while taking"),
            "{}",
            ran.transcript()
        );
        let run = repl(program);
        assert_clean(&run);
        let expected = ran.stderr.replace(&*src.to_string_lossy(), "<stdin>");
        assert_eq!(run.stderr, expected, "{}", run.transcript());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn time_prints_the_value_then_the_time() {
    let run = repl(",time (+ 1 2)\n");
    assert_clean(&run);
    assert!(run.success(), "{}", run.transcript());
    assert_eq!(run.stdout, "3\n", "{}", run.transcript());
    assert!(
        run.stderr.starts_with(";; ") && run.stderr.trim_end().ends_with(" ms"),
        "{}",
        run.transcript()
    );
}

#[test]
fn help_and_quit_commands() {
    let run = repl(",help\n(+ 1 1)\n,quit\n(+ 2 2)\n");
    assert_clean(&run);
    assert!(run.success(), "{}", run.transcript());
    assert!(run.stdout.contains(",load FILE"), "{}", run.transcript());
    assert!(run.stdout.ends_with("\n2\n"), "{}", run.transcript());
    let run = repl(",frobnicate\n");
    assert_clean(&run);
    assert!(!run.success(), "{}", run.transcript());
    assert!(
        run.stderr.contains("unknown REPL command `,frobnicate`"),
        "{}",
        run.transcript()
    );
}

#[test]
fn version_names_the_tool_and_its_version() {
    let run = run_stalingrad(&args(&["--version"]), None);
    assert_ok(&run, &format!("stalingrad {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn completions_are_generated_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = run_stalingrad(&args(&["completions", shell]), None);
        assert_clean(&run);
        assert!(run.success(), "{shell}: {}", run.transcript());
        assert!(run.stdout.contains("repl"), "{shell}: {}", run.transcript());
    }
    let run = run_stalingrad(&args(&["completions", "tcsh"]), None);
    assert_clean(&run);
    assert!(!run.success(), "{}", run.transcript());
}

#[test]
fn help_topics_name_the_manual() {
    for topic in ["tutorial", "reference", "guide", "benchmarks"] {
        let run = run_stalingrad(&args(&["help", topic]), None);
        assert_clean(&run);
        assert!(run.success(), "{}", run.transcript());
        assert!(
            run.stdout
                .contains(&format!("See docs/{topic}.md in the stalingrad repository")),
            "{}",
            run.transcript()
        );
    }
    // Without a topic: the tool's help and the list of topics.
    let run = run_stalingrad(&args(&["help"]), None);
    assert!(run.success(), "{}", run.transcript());
    assert!(
        run.stdout.contains("Usage: stalingrad"),
        "{}",
        run.transcript()
    );
    assert!(run.stdout.contains("docs/guide.md"), "{}", run.transcript());
}

#[test]
fn help_on_a_command_prints_its_help() {
    let run = run_stalingrad(&args(&["help", "build"]), None);
    let direct = run_stalingrad(&args(&["build", "--help"]), None);
    assert!(run.success(), "{}", run.transcript());
    assert!(
        run.stdout.contains("Usage: stalingrad build"),
        "{}",
        run.transcript()
    );
    assert_eq!(run.stdout, direct.stdout);
}

#[test]
fn an_unknown_help_topic_fails_cleanly() {
    let run = run_stalingrad(&args(&["help", "nonsense"]), None);
    assert_clean(&run);
    assert!(!run.success(), "{}", run.transcript());
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("unknown help topic `nonsense`")
            && run
                .stderr
                .contains("tutorial, reference, guide, benchmarks"),
        "{}",
        run.transcript()
    );
}
