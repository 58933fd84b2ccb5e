//! Compiling Cranelift functions on worker threads.
//!
//! Cranelift compiles one function at a time, and register allocation is
//! most of a build of a large program (tests/corpus/evaluator.vlad: half of
//! it). The functions are independent: [`Codegen`](crate) builds each one's
//! IR on the calling thread, hands it to a worker as a [`Job`], and the
//! object receives the machine code in the order the functions were built,
//! so the object file is byte for byte the one a single thread makes.

use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::Context;
use cranelift_module::{FuncId as ClFuncId, ModuleError, ModuleReloc};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::Mutex;

/// A function to compile: its IR, and where it goes in the object.
pub(crate) struct Job {
    pub index: usize,
    pub id: ClFuncId,
    pub ctx: Context,
    pub name: String,
}

/// A compiled function, ready for `Module::define_function_bytes`.
pub(crate) struct Compiled {
    pub id: ClFuncId,
    pub alignment: u64,
    pub bytes: Vec<u8>,
    pub relocs: Vec<ModuleReloc>,
}

/// What `Module::define_function` does before defining the bytes (and
/// with the same error text).
pub(crate) fn compile(isa: &dyn TargetIsa, job: Job) -> Result<Compiled, String> {
    let Job {
        id, mut ctx, name, ..
    } = job;
    ctx.compile(isa, &mut ControlPlane::default())
        .map_err(|e| {
            let e = ModuleError::Compilation(e.inner);
            format!("internal error: compiling `{name}`: {e:?}")
        })?;
    let Some(code) = ctx.compiled_code() else {
        return Err(format!("internal error: compiling `{name}`: no code"));
    };
    let alignment = code.buffer.alignment as u64;
    let bytes = code.buffer.data().to_vec();
    let relocs = code
        .buffer
        .relocs()
        .iter()
        .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    Ok(Compiled {
        id,
        alignment,
        bytes,
        relocs,
    })
}

/// How many threads compile: the processors this process may use, at
/// most 8 (beyond, the thread building the IR cannot keep them busy).
pub(crate) fn workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8)
}

/// Each worker's stack: Cranelift does not recurse deeply.
const WORKER_STACK: usize = 16 << 20;

/// Runs `produce` on this thread with a sender of jobs, while `workers`
/// threads compile them; returns the compiled functions in job order.
/// Without threads (one processor, or none could be made), `produce`
/// gets no sender and compiles its jobs itself ([`compile`]). It returns
/// what it compiled itself and how many jobs it made.
pub(crate) fn run(
    isa: &dyn TargetIsa,
    workers: usize,
    produce: impl FnOnce(Option<SyncSender<Job>>) -> Result<(Vec<(usize, Compiled)>, usize), String>,
) -> Result<Vec<Compiled>, String> {
    // Building is much faster than compiling: a queue without bound would
    // hold the IR of nearly every function at once (twice the heap of a
    // large build).
    let (job_tx, job_rx) = std::sync::mpsc::sync_channel::<Job>(2 * workers);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let job_rx = Mutex::new(job_rx);
    std::thread::scope(|s| {
        let mut spawned = 0;
        if workers > 1 {
            for _ in 0..workers {
                let (rx, tx) = (&job_rx, done_tx.clone());
                let ok = std::thread::Builder::new()
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(s, move || work(isa, rx, tx))
                    .is_ok();
                spawned += ok as usize;
            }
        }
        drop(done_tx);
        // `produce` owns the only sender: when it returns, the workers
        // finish the jobs left and stop.
        let (mut out, jobs) = produce((spawned > 0).then_some(job_tx))?;
        for r in done_rx.iter() {
            out.push(r?);
        }
        if out.len() != jobs {
            return Err("internal error: the code generator's threads stopped".to_string());
        }
        out.sort_by_key(|(i, _)| *i);
        Ok(out.into_iter().map(|(_, c)| c).collect())
    })
}

/// A worker: compiles jobs until the sender is gone. A panic in Cranelift
/// is reported as an error of its function: a worker that died would leave
/// the builder waiting on a full queue.
fn work(
    isa: &dyn TargetIsa,
    jobs: &Mutex<Receiver<Job>>,
    done: Sender<Result<(usize, Compiled), String>>,
) {
    loop {
        // A poisoned lock means another worker panicked: stop too, the
        // scope reports the panic.
        let next = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = next else { return };
        let (index, name) = (job.index, job.name.clone());
        let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compile(isa, job)))
            .unwrap_or_else(|_| {
                Err(format!(
                    "internal error: compiling `{name}`: Cranelift panicked"
                ))
            });
        if done.send(compiled.map(|c| (index, c))).is_err() {
            return;
        }
    }
}
