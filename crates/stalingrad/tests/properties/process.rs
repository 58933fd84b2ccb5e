//! Running the `stalingrad` binary and the programs it builds, bounded
//! in time and memory, in scratch directories: what the compiled-versus-
//! interpreted and robustness properties share.

use super::*;
use std::sync::RwLock;

pub(crate) use runner::Run;

const TIME_LIMIT: Duration = Duration::from_secs(10);
/// Resident memory beyond which a run is killed: unbounded non-tail
/// recursion in a mutated program otherwise grows the interpreter's 4 GiB
/// stack until the process aborts (see the report in
/// `tests/regressions/deep-recursion.vlad`).
const MEMORY_LIMIT_KB: u64 = 1 << 20;

pub(crate) fn run_binary(args: &[&str], dir: &Path) -> Run {
    run_process(Path::new(env!("CARGO_BIN_EXE_stalingrad")), args, dir, b"")
}

/// Held shared by every process the properties run, and exclusively by
/// [`run_binary_alone`]: a build timed alone is not slowed by the other
/// workers' processes.
static ALONE: RwLock<()> = RwLock::new(());

/// Runs `program ARGS...` in `dir` with `stdin` as its standard input,
/// killing it after [`TIME_LIMIT`] or when it passes [`MEMORY_LIMIT_KB`].
pub(crate) fn run_process(program: &Path, args: &[&str], dir: &Path, stdin: &[u8]) -> Run {
    run_process_capped(program, args, dir, stdin, None)
}

/// [`run_binary`] while no other process of the properties runs: for
/// timing a build as a user would, on a machine of its own.
pub(crate) fn run_binary_alone(args: &[&str], dir: &Path) -> Run {
    let _alone = ALONE.write().unwrap_or_else(|e| e.into_inner());
    run(
        Path::new(env!("CARGO_BIN_EXE_stalingrad")),
        args,
        dir,
        b"",
        None,
    )
}

/// [`run_process`], with the address space capped at `cap` KiB when given
/// ([`runner::capped_command`]).
pub(crate) fn run_process_capped(
    program: &Path,
    args: &[&str],
    dir: &Path,
    stdin: &[u8],
    cap: Option<u64>,
) -> Run {
    let _shared = ALONE.read().unwrap_or_else(|e| e.into_inner());
    run(program, args, dir, stdin, cap)
}

fn run(program: &Path, args: &[&str], dir: &Path, stdin: &[u8], cap: Option<u64>) -> Run {
    let mut cmd = match cap {
        None => Command::new(program),
        Some(kib) => runner::capped_command(program, kib),
    };
    // The FIR verifier runs after each pass on every program built.
    cmd.args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .env("VLAD_VERIFY_PASSES", "1");
    let limits = runner::Limits {
        time: TIME_LIMIT,
        memory_kb: Some(MEMORY_LIMIT_KB),
    };
    runner::run_text(&mut cmd, stdin, &limits)
}

pub(crate) fn repo_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..");
    dir.canonicalize().unwrap_or(dir)
}

/// A fresh scratch directory for one property's runs.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("properties-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Runs `case` for every case of `list` on two worker threads, each with
/// a scratch directory of its own (`NAME-W`) and a state it folds the
/// cases into; the workers' states, in order.
pub(crate) fn on_two_workers<S: Default + Send>(
    name: &str,
    list: &[usize],
    case: impl Fn(usize, &Path, &mut S) + Sync,
) -> Vec<S> {
    const WORKERS: usize = 2;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let case = &case;
                s.spawn(move || {
                    let dir = scratch(&format!("{name}-{w}"));
                    let mut state = S::default();
                    for &c in list.iter().skip(w).step_by(WORKERS) {
                        case(c, &dir, &mut state);
                    }
                    state
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}
