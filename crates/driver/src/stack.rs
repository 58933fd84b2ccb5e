//! The thread every stage runs on, and the one place that sizes it.
//!
//! The reader, the expander, the interpreter (every non-tail VLAD call and
//! the AD operations' walks over values) and the analysis (nested
//! specialisation) recurse on the Rust stack, so the pipeline runs on a
//! thread with the largest stack it can have: up to 4 GiB, less under an
//! address-space cap (`base::stack::sizes_to_try`). That is address space,
//! not memory: pages are touched only when used. The thread declares its
//! size (`base::stack::enter`), and the stages check it where they recurse,
//! so a smaller stack only ends deep recursion sooner, with the same clean
//! `recursion too deep` error.

use std::any::Any;

/// Why [`on_deep_stack`] or [`on_stack`] did not return `f`'s result.
#[derive(Debug)]
pub enum Failure {
    /// No thread could be made with a stack of even this many MiB.
    NoStack { smallest_mib: usize },
    /// `f` panicked (an internal error): the panic's message.
    Panicked(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::NoStack { smallest_mib } => write!(
                f,
                "out of memory: no thread stack of even {smallest_mib} MiB could be had"
            ),
            Failure::Panicked(msg) => write!(f, "internal error (the run was aborted): {msg}"),
        }
    }
}

/// Runs `f` on a thread with the largest stack this process can have.
pub fn on_deep_stack<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, Failure> {
    let sizes = base::stack::sizes_to_try();
    // A thread that cannot be made drops its closure: `f` waits here so
    // that a smaller stack can be tried with it.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(f)));
    for &size in &sizes {
        let mine = std::sync::Arc::clone(&slot);
        let spawned = std::thread::Builder::new().stack_size(size).spawn(move || {
            base::stack::enter(size);
            let f = mine.lock().ok().and_then(|mut s| s.take());
            f.map(|f| f())
        });
        // Only a failure to make the thread (no address space for its
        // stack) tries a smaller one.
        if let Ok(handle) = spawned {
            return joined(handle.join())?
                .ok_or_else(|| Failure::Panicked("the pipeline's thread lost its work".into()));
        }
    }
    let smallest_mib = sizes.last().copied().unwrap_or(0) >> 20;
    Err(Failure::NoStack { smallest_mib })
}

/// Runs `f` on a thread with a stack of exactly `size` bytes (tests that
/// pin the depth at which recursion ends).
pub fn on_stack<R: Send + 'static>(
    size: usize,
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, Failure> {
    let spawned = std::thread::Builder::new().stack_size(size).spawn(move || {
        base::stack::enter(size);
        f()
    });
    match spawned {
        Ok(handle) => joined(handle.join()),
        Err(_) => Err(Failure::NoStack {
            smallest_mib: size >> 20,
        }),
    }
}

fn joined<R>(r: Result<R, Box<dyn Any + Send>>) -> Result<R, Failure> {
    r.map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Failure::Panicked(msg)
    })
}
