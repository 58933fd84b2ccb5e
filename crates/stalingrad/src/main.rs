//! `stalingrad`: the command line.
//!
//! Parses the commands and hands each to crate `driver`, which runs the
//! pipeline: `run` and `test` evaluate a program with the reference
//! interpreter; `build` compiles it to an executable linked by the system
//! `cc` with the embedded runtime, or prints a stage (`--emit=anf`,
//! `flow`, `fir`, `clif`) or writes the object file (`--emit=obj`);
//! `build --lib` makes a C library ([`library`]); `repl` is a
//! read-eval-print loop over the interpreter ([`repl`]); `gradbench`
//! speaks GradBench's protocol ([`gradbench`]); `completions` and `help`
//! describe the tool itself. Every failure is a [`base::diag::Diagnostic`]
//! printed as `file:line:col: error: ...` with a non-zero exit, never a
//! panic.

use base::diag::Diagnostic;
use clap::{Args, Parser, Subcommand, ValueEnum};
use driver::{Emit, Session};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const ABOUT: &str = "An ahead-of-time compiler and reference interpreter for VLAD, \
a pure higher-order Scheme with first-class forward and reverse AD.";

const EXAMPLES: &str = "\
Examples:
  stalingrad run examples/08-gradients-hessians.vlad   print every top-level value
  echo 1000 | stalingrad run prog.vlad          input for (read-real)
  stalingrad run --count-ops prog.vlad          also count arithmetic and AD steps
  stalingrad test examples/*.vlad               check every `expr ===> value`
  stalingrad build prog.vlad -o prog            compile to a native executable
  stalingrad build prog.vlad -o prog && ./prog  compile to a native executable
  stalingrad build --lib --export \"f real\" prog.vlad -o libprog.so
                                                a C library (and libprog.h)
  stalingrad build --emit=flow prog.vlad        show what the flow analysis found
  stalingrad repl                               try expressions interactively
  stalingrad help tutorial                      where the manual starts

A tiny program (gradient.vlad):
  (define (f (list x y)) (+ (* 2 (* x x)) (* 3 (* x y))))
  ((gradient-R f) '(3 4))   ===> (24 9)";

mod gradbench;
mod json;
mod library;
mod output;
mod repl;

#[derive(Parser, Clone)]
#[command(
    name = "stalingrad",
    version,
    about = ABOUT,
    after_help = EXAMPLES,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Clone)]
enum Command {
    /// Evaluate a program with the reference interpreter, printing the value
    /// of each top-level expression on its own line.
    #[command(after_help = "Example:\n  stalingrad run examples/13-include.vlad -I examples/lib")]
    Run(RunArgs),
    /// Check the `===>` expectations of one or more programs; prints PASS or
    /// FAIL per expectation and `N passed, M failed`.
    #[command(after_help = "Example:\n  stalingrad test examples/*.vlad")]
    Test(TestArgs),
    /// Compile a program to a native executable (linked with the system
    /// `cc`), or print one of its intermediate forms.
    #[command(
        after_help = "Examples:\n  stalingrad build examples/08-gradients-hessians.vlad -o hessians\n  stalingrad build --emit=fir examples/08-gradients-hessians.vlad"
    )]
    Build(BuildArgs),
    /// Read expressions and definitions, evaluate them with the
    /// interpreter and print their values; definitions persist.
    #[command(long_about = repl::LONG_ABOUT, after_help = repl::AFTER_HELP)]
    Repl(ReplArgs),
    /// Speak GradBench's protocol (JSON lines on standard input and
    /// output): a tool for all twelve of its evals, each module compiled
    /// with `build --lib` on `define`.
    #[command(
        after_help = "Example (gradbench/run-evals.sh runs GradBench's own evals against it):
  echo '{\"id\":0,\"kind\":\"start\"}' | stalingrad gradbench"
    )]
    Gradbench(GradbenchArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish,
    /// powershell) to standard output.
    #[command(
        after_help = "Examples:\n  stalingrad completions bash > ~/.local/share/bash-completion/completions/stalingrad\n  stalingrad completions zsh > ~/.zfunc/_stalingrad\n  stalingrad completions fish > ~/.config/fish/completions/stalingrad.fish"
    )]
    Completions { shell: clap_complete::Shell },
    /// Point to a part of the manual (tutorial, reference, guide,
    /// benchmarks), or print a command's help (`help run`).
    #[command(after_help = HELP_AFTER)]
    Help {
        /// A manual topic or a command name; none lists them all.
        topic: Option<String>,
    },
}

/// The manual's parts: topic, what it holds, file in the repository.
const TOPICS: &[(&str, &str, &str)] = &[
    (
        "tutorial",
        "VLAD and AD step by step, from the first derivative to nested Hessians and closures",
        "docs/tutorial.md",
    ),
    (
        "reference",
        "the language: forms, patterns, primitives, the standard library, AD operators, errors",
        "docs/reference.md",
    ),
    (
        "guide",
        "using stalingrad: build, the --emit stages, --count-ops, memory and performance advice",
        "docs/guide.md",
    ),
    (
        "benchmarks",
        "measured run times of compiled programs against hand-written baselines",
        "docs/benchmarks.md",
    ),
];

const HELP_AFTER: &str = "\
Topics:
  tutorial     docs/tutorial.md
  reference    docs/reference.md
  guide        docs/guide.md
  benchmarks   docs/benchmarks.md
A command name (run, test, build, repl, gradbench, completions, help) prints that
command's help, as `stalingrad COMMAND --help` does.";

#[derive(Args, Clone)]
struct Common {
    /// Directories searched for `(include "name")` after the including
    /// file's own directory.
    #[arg(short = 'I', value_name = "DIR")]
    include: Vec<PathBuf>,
    /// The most memory the compiler or interpreter may use, as `512M`,
    /// `2G` or bytes (default: three quarters of the physical memory or of
    /// the address-space cap, whichever is smaller). Past it, the analysis
    /// stops with a positioned error and anything else with `out of
    /// memory`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_memory: Option<usize>,
}

fn parse_size(text: &str) -> Result<usize, String> {
    base::memory::parse_size(text)
        .ok_or_else(|| format!("expected a size such as 512M or 2G, found `{text}`"))
}

/// Every allocation is counted against the memory budget, and running out
/// is a clean error (`base::memory`). Under the count, mimalloc: the
/// compiler's passes make and drop many small vectors and maps, and with
/// glibc's allocator a third of a build's cycles went to `malloc` and
/// `free` (tests/scale/generated-3070.vlad: 2.45 s, 1.6 s with mimalloc).
/// Built without transparent huge pages (`no_thp`): each fresh 2 MiB page
/// of its arenas cost the kernel 2 MiB of zeroing, where the compiler
/// touches much less (the same build: 0.49 s of system time, 0.25 s).
#[global_allocator]
static ALLOCATOR: base::memory::Budgeted<mimalloc::MiMalloc> =
    base::memory::Budgeted(mimalloc::MiMalloc);

#[derive(Args, Clone)]
struct RunArgs {
    file: PathBuf,
    #[command(flatten)]
    common: Common,
    /// After the run, print to standard error how many times each
    /// arithmetic primitive ran and how many zero, plus and transformation
    /// steps ran.
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true, default_missing_value = "table")]
    count_ops: Option<CountFormat>,
}

#[derive(Clone, Copy, ValueEnum)]
enum CountFormat {
    Table,
    Json,
}

#[derive(Args, Clone)]
struct TestArgs {
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Clone)]
struct BuildArgs {
    file: PathBuf,
    #[command(flatten)]
    common: Common,
    /// The executable to write (default: the program's file name without
    /// its extension, in the current directory; with `--emit=obj`, that
    /// name with `.o`).
    #[arg(short = 'o', value_name = "PROG")]
    output: Option<PathBuf>,
    /// Print a stage instead of building: `anf` is the core IR, `flow` the
    /// flow analysis (every specialisation, the abstract value of every
    /// binding, and the transformed code it analysed), `fir` the first-order
    /// IR (`ir`, its former name, still works), `clif` the Cranelift IR;
    /// `obj` writes the object file (to `-o`) without linking.
    #[arg(long, value_name = "STAGE", value_parser = parse_emit)]
    emit: Option<Emit>,
    /// Keep the temporary directory holding the object file and the
    /// runtime library, and print its path.
    #[arg(long)]
    keep_temps: bool,
    /// Compile in operation counters: the executable prints them at exit
    /// on standard error, as `run --count-ops=json` does.
    #[arg(long)]
    count_ops: bool,
    /// Build a library instead of an executable: `-o libNAME.so` (shared,
    /// the default) or `-o libNAME.a` (static), and a C header beside it;
    /// the procedures named by `--export` become C functions over arrays
    /// of doubles (docs/library.md).
    #[arg(long, conflicts_with_all = ["emit", "count_ops"])]
    lib: bool,
    /// With `--lib`: a top-level procedure to export and its arguments'
    /// shapes, as `"NAME SHAPE..."`, each shape `real` or a parenthesised
    /// list of shapes (`--export "saddle (real real)"`); repeatable.
    #[arg(long, value_name = "NAME SHAPE...", requires = "lib")]
    export: Vec<String>,
    /// With `--lib`: where to write the C header (default: the library's
    /// path with `.h`).
    #[arg(long, value_name = "FILE", requires = "lib")]
    header: Option<PathBuf>,
    /// Print to standard error, as each stage ends, its wall time and the
    /// change and peak of the compiler's heap: parse, ir, analysis, lower,
    /// each optimisation pass (with its number of runs), codegen, link
    /// (docs/guide.md describes the format).
    #[arg(long)]
    time_passes: bool,
}

#[derive(Args, Clone)]
struct GradbenchArgs {
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Clone)]
pub(crate) struct ReplArgs {
    #[command(flatten)]
    common: Common,
}

/// `--emit`'s stage: a name of [`driver::EMIT_NAMES`]; a former name
/// (`ir`) is read as its successor, with a note on standard error.
fn parse_emit(text: &str) -> Result<Emit, String> {
    let stage = Emit::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = driver::EMIT_NAMES
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| driver::renamed(n).is_none())
            .collect();
        format!("expected one of {}, found `{text}`", names.join(", "))
    })?;
    if let Some(new) = driver::renamed(text) {
        eprintln!("note: `--emit={text}` is now `--emit={new}`; the old name will be removed in the next release");
    }
    Ok(stage)
}

/// Every command but `completions` and `help` runs on the driver's thread,
/// whose stack deep recursion in VLAD needs (`driver::stack`).
fn main() -> ExitCode {
    let cli = Cli::parse();
    let common = match &cli.command {
        Command::Run(a) => &a.common,
        Command::Test(a) => &a.common,
        Command::Build(a) => &a.common,
        Command::Repl(a) => &a.common,
        Command::Gradbench(a) => &a.common,
        Command::Completions { shell } => return completions(*shell),
        Command::Help { topic } => return help(topic.as_deref()),
    };
    driver::set_memory_budget(common.max_memory);
    let ran = driver::stack::on_deep_stack(move || match cli.command {
        Command::Run(a) => run(a),
        Command::Test(a) => test(a),
        Command::Build(a) => build(a),
        Command::Repl(a) => repl::main(&a.common.include),
        Command::Gradbench(a) => gradbench_main(&a.common.include),
        // Answered above, before any thread.
        Command::Completions { .. } | Command::Help { .. } => ExitCode::SUCCESS,
    });
    match ran {
        Ok(code) => code,
        Err(driver::stack::Failure::Panicked(_)) => {
            // The panic's message is already on standard error.
            eprintln!("stalingrad: internal error (the run was aborted)");
            ExitCode::from(101)
        }
        Err(e) => fail(&e.to_string()),
    }
}

/// A session over the program in `file` and its core IR, or the failure
/// reported on standard error.
fn load_or_report(file: &Path, common: &Common) -> Result<(Session, ir::Program), ExitCode> {
    let mut session = Session::new(common.include.clone());
    match session.load(file) {
        Ok(p) => Ok((session, p)),
        Err(d) => {
            report(&d, &session);
            Err(ExitCode::FAILURE)
        }
    }
}

/// A diagnostic on standard error, after the output so far.
pub(crate) fn report(d: &Diagnostic, session: &Session) {
    let _ = std::io::stdout().flush();
    eprintln!("{}", session.render(d));
}

fn run(a: RunArgs) -> ExitCode {
    let (session, prog) = match load_or_report(&a.file, &a.common) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let stdin = std::io::stdin();
    let mut out = output::stdout();
    let ran = session.interpret(prog, interp::Mode::Run, 0, &mut stdin.lock(), &mut out);
    let _ = out.flush();
    let code = match ran.result {
        Ok(_) => ExitCode::SUCCESS,
        Err(d) => {
            report(&d, &session);
            ExitCode::FAILURE
        }
    };
    match a.count_ops {
        Some(CountFormat::Json) => eprintln!("{}", ran.counters.json()),
        Some(CountFormat::Table) => eprint!("{}", ran.counters.table()),
        None => {}
    }
    code
}

fn test(a: TestArgs) -> ExitCode {
    let (mut passed, mut failed) = (0, 0);
    for file in &a.files {
        let mut session = Session::new(a.common.include.clone());
        let prog = match session.load(file) {
            Ok(p) => p,
            Err(d) => {
                emit(&format!(
                    "FAIL {}: {}\n",
                    file.display(),
                    session.render(&d)
                ));
                failed += 1;
                continue;
            }
        };
        let stdin = std::io::stdin();
        let stdout = std::io::stdout();
        let ran = session.interpret(
            prog,
            interp::Mode::Test,
            0,
            &mut stdin.lock(),
            &mut stdout.lock(),
        );
        match ran.result {
            Ok(r) => {
                passed += r.passed;
                failed += r.failed;
            }
            Err(d) => {
                emit(&format!("FAIL {}\n", session.render(&d)));
                failed += 1;
            }
        }
    }
    emit(&format!("{passed} passed, {failed} failed\n"));
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `build`, with `--time-passes`' report of the stages that ran (all of
/// them, or those up to a failure).
fn build(a: BuildArgs) -> ExitCode {
    if a.time_passes {
        base::timing::enable();
    }
    let code = build_stages(a);
    base::timing::finish();
    code
}

fn build_stages(a: BuildArgs) -> ExitCode {
    if a.lib {
        let request = library::Request {
            file: &a.file,
            include: &a.common.include,
            exports: &a.export,
            output: a.output.clone(),
            header: a.header.clone(),
            keep_temps: a.keep_temps,
        };
        return match library::build(&request) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let (session, prog) = match load_or_report(&a.file, &a.common) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if let Some(stage) = a.emit.filter(|e| e.is_front()) {
        return match session.emit_text(prog, stage) {
            Ok(text) => {
                emit(&text);
                ExitCode::SUCCESS
            }
            Err(d) => {
                report(&d, &session);
                ExitCode::FAILURE
            }
        };
    }
    let module = match session.compile(prog) {
        Ok(m) => m,
        Err(d) => {
            report(&d, &session);
            return ExitCode::FAILURE;
        }
    };
    let opts = codegen::Options {
        count_ops: a.count_ops,
        want_clif: a.emit == Some(Emit::Clif),
    };
    let out = match session.codegen(&module, &opts) {
        Ok(out) => out,
        Err(e) => return fail(&e),
    };
    let stem = a
        .file
        .file_stem()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("a.out"));
    match a.emit {
        Some(Emit::Clif) => {
            emit(&out.clif);
            ExitCode::SUCCESS
        }
        Some(Emit::Obj) => {
            let path = a.output.unwrap_or_else(|| stem.with_extension("o"));
            match std::fs::write(&path, &out.object) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&format!("cannot write {}: {e}", path.display())),
            }
        }
        _ => {
            let path = a.output.unwrap_or(stem);
            match session.link(&out.object, &path, a.keep_temps) {
                Ok(linked) => {
                    if a.keep_temps {
                        eprintln!("kept temporary files in {}", linked.temp_dir.display());
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
    }
}

/// `stalingrad gradbench`: the protocol on standard input and output.
fn gradbench_main(include: &[PathBuf]) -> ExitCode {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    match gradbench::serve(&mut stdin.lock(), &mut stdout.lock(), include) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// `stalingrad completions SHELL`.
fn completions(shell: clap_complete::Shell) -> ExitCode {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "stalingrad", &mut script);
    emit(&String::from_utf8_lossy(&script));
    ExitCode::SUCCESS
}

/// `stalingrad help [TOPIC]`: the manual's topics, or a command's help.
/// It replaces clap's own `help` command, whose work it also does.
fn help(topic: Option<&str>) -> ExitCode {
    use clap::CommandFactory;
    let cli = Cli::command();
    // What `stalingrad ARGS --help` prints, exactly.
    let clap_help = |args: &[&str]| match cli.clone().try_get_matches_from(args) {
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => Some(e.render().to_string()),
        _ => None,
    };
    let Some(topic) = topic else {
        let mut text = clap_help(&["stalingrad", "--help"]).unwrap_or_default();
        text.push_str("\nThe manual (stalingrad help TOPIC):\n");
        for (name, _, path) in TOPICS {
            text.push_str(&format!("  {name:<11} {path}\n"));
        }
        emit(&text);
        return ExitCode::SUCCESS;
    };
    if let Some((name, what, path)) = TOPICS.iter().find(|(name, _, _)| *name == topic) {
        emit(&format!(
            "The {name}: {what}.\nSee {path} in the stalingrad repository.\n"
        ));
        return ExitCode::SUCCESS;
    }
    if cli.find_subcommand(topic).is_some() {
        if let Some(text) = clap_help(&["stalingrad", topic, "--help"]) {
            emit(&text);
            return ExitCode::SUCCESS;
        }
    }
    let topics: Vec<&str> = TOPICS.iter().map(|(name, _, _)| *name).collect();
    let commands: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
    fail(&format!(
        "unknown help topic `{topic}`: expected a manual topic ({}) or a command ({})",
        topics.join(", "),
        commands.join(", ")
    ))
}

/// A failure with no source position: `error: MSG` and status 1.
pub(crate) fn fail(msg: &str) -> ExitCode {
    let _ = std::io::stdout().flush();
    eprintln!("error: {msg}");
    ExitCode::FAILURE
}

/// Writes to standard output. A reader that goes away (`| head`) ends the
/// program quietly, as it ends other Unix tools; any other failure is an
/// error message.
pub(crate) fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}
