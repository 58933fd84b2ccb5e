//! The runtime of a compiled library (`stalingrad build --lib`): the
//! same runtime, built a second time with `--cfg vlad_lib`, and entered
//! once per call of an export instead of once per process.
//!
//! An export is compiled as a program whose main reads the export's
//! arguments with `read-real`, calls it, reads once more (the *end
//! marker*) and prints the result (`docs/library.md`). Here `read-real`
//! takes the arguments from the caller's array, the end marker switches
//! printing of reals into the caller's result array, and a run-time
//! error, instead of exiting the process, records its message and leaves
//! the call through `vlad_lib_throw` (the C entry of the library,
//! `crates/codegen/src/lib_entry.c`, which `longjmp`s back to its own
//! frame). What a call leaves behind is reset when it ends, either way:
//! the heap of cells is given back, the memo tables forgotten, the
//! message being assembled dropped.
//!
//! Jumping out is sound because nothing between the C entry's `setjmp`
//! and the runtime's call of `vlad_lib_throw` owns anything: compiled
//! code has no destructors and keeps no state outside the heap, and the
//! runtime frames on the way (`fail` and the `rt_*` function that called
//! it) hold only plain arrays; the state they were changing is reset
//! here before the next call. The C entry serialises calls with a lock,
//! so this file, like the rest of the runtime, sees one call at a time.

use crate::{gc, memo, Global, Line};
use core::fmt::Write as _;

extern "C" {
    /// Leaves the running call: `longjmp`s to the C entry's frame.
    fn vlad_lib_throw() -> !;
}

struct Call {
    args: *const f64,
    n_args: usize,
    /// How many `read-real`s this call made.
    reads: usize,
    results: *mut f64,
    n_results: usize,
    /// Reals printed since the end marker.
    written: usize,
    /// Past the end marker: printing goes to `results`.
    capturing: bool,
    /// An export over vectors: as many arguments and results as the
    /// caller says, `n_results` being the room for them.
    dynamic: bool,
    /// The message of the error that ended the call.
    error: Line,
}

static CALL: Global<Call> = Global::new(Call {
    args: core::ptr::null(),
    n_args: 0,
    reads: 0,
    results: core::ptr::null_mut(),
    n_results: 0,
    written: 0,
    capturing: false,
    dynamic: false,
    error: Line::new(),
});

/// Starts a call: `args` holds `n_args` reals, `results` room for
/// `n_results` (the result's reals that are not constants, or, for an
/// export over vectors (`dynamic`), the room the caller has); compiled
/// code runs below `stack_top` and must stay above `stack_limit`.
///
/// # Safety
/// `args` and `results` must be valid for the call's length, and no
/// other call may run until [`rt_lib_end`] or [`rt_lib_abandon`].
#[no_mangle]
pub unsafe extern "C" fn rt_lib_begin(
    args: *const f64,
    n_args: usize,
    results: *mut f64,
    n_results: usize,
    stack_top: usize,
    stack_limit: usize,
    dynamic: i32,
) {
    let c = CALL.get();
    c.dynamic = dynamic != 0;
    c.args = args;
    c.n_args = n_args;
    c.reads = 0;
    c.results = results;
    c.n_results = n_results;
    c.written = 0;
    c.capturing = false;
    c.error.len = 0;
    crate::reset_error_state();
    gc::set_stack_top(stack_top);
    // SAFETY: one call at a time (the C entry's lock); compiled code of
    // this call reads it only after this store.
    unsafe { crate::rt_stack_limit = stack_limit };
}

/// Ends a call whose code returned: 0 if it wrote every result, else 1
/// with a message (see [`rt_lib_message`]); for an export over vectors,
/// 1 also when the call read fewer arguments than the caller gave, and 2
/// when the result has more reals than the room given ([`rt_lib_written`]
/// says how many).
#[no_mangle]
pub extern "C" fn rt_lib_end() -> i32 {
    let c = CALL.get();
    let rc = if c.dynamic && (!c.capturing || c.reads != c.n_args + 1) {
        // The read that should have ended the arguments took one instead.
        c.error.len = 0;
        let _ = write!(
            c.error,
            "error: the arguments array holds {} reals, more than the arguments' shapes and lengths take",
            c.n_args
        );
        1
    } else if !c.capturing || (!c.dynamic && c.written != c.n_results) {
        c.error.len = 0;
        c.error
            .push(b"error: internal error: the export did not produce its result");
        1
    } else if c.written > c.n_results {
        c.error.len = 0;
        let _ = write!(
            c.error,
            "error: the result has {} reals, more than the results array holds ({})",
            c.written, c.n_results
        );
        2
    } else {
        0
    };
    finish();
    rc
}

/// How many reals the last call's result has (for an export over
/// vectors, whose result's length the caller learns from the call).
#[no_mangle]
pub extern "C" fn rt_lib_written() -> usize {
    CALL.get().written
}

/// Ends a call left by [`vlad_lib_throw`].
#[no_mangle]
pub extern "C" fn rt_lib_abandon() {
    finish();
}

/// Copies the message of the last failed call, NUL-terminated and cut to
/// `cap` bytes, into `buf`.
///
/// # Safety
/// `buf` must be valid for writing `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn rt_lib_message(buf: *mut u8, cap: usize) {
    if cap == 0 {
        return;
    }
    let msg = CALL.get().error.as_bytes();
    let n = msg.len().min(cap - 1);
    // SAFETY: the caller gives `cap` writable bytes; `n < cap`.
    unsafe {
        core::ptr::copy_nonoverlapping(msg.as_ptr(), buf, n);
        *buf.add(n) = 0;
    }
}

/// What a call leaves behind, reset: standard output flushed (what the
/// export printed on its way), the heap given back, the memo tables
/// forgotten, the stack of saved values emptied.
fn finish() {
    crate::flush();
    memo::forget();
    crate::saves::clear();
    gc::release_all();
    let c = CALL.get();
    c.args = core::ptr::null();
    c.results = core::ptr::null_mut();
}

/// `read-real` in a library: the next argument, then the end marker; any
/// other read is the export reading input, which a library has not.
pub fn read_real() -> f64 {
    let c = CALL.get();
    let i = c.reads;
    c.reads += 1;
    if i < c.n_args {
        // SAFETY: `args` holds `n_args` reals for the length of the call.
        return unsafe { *c.args.add(i) };
    }
    if i == c.n_args && !c.capturing {
        c.capturing = true;
        return 0.0;
    }
    if c.dynamic {
        crate::fail(&[b"error: the arguments array holds fewer reals than the arguments' shapes and lengths take"])
    }
    crate::fail(&[b"error: read-real: an exported procedure cannot read input"])
}

/// Printing a real: into the results once past the end marker (`true`:
/// taken), otherwise to standard output as in a program.
pub fn capture_real(x: f64) -> bool {
    let c = CALL.get();
    if !c.capturing {
        return false;
    }
    if c.written < c.n_results {
        // SAFETY: `results` has room for `n_results` reals.
        unsafe { *c.results.add(c.written) = x };
    }
    c.written += 1;
    true
}

/// Printing anything else past the end marker: the result's parentheses
/// and spaces, dropped (the header says where each real goes).
pub fn capturing() -> bool {
    CALL.get().capturing
}

/// A run-time error: keeps the message and leaves the call.
pub fn fail(msg: &[u8]) -> ! {
    let c = CALL.get();
    c.error.len = 0;
    c.error.push(msg);
    // SAFETY: the C entry that began this call is below us on the stack
    // with its `setjmp` armed; see the module documentation for why
    // nothing skipped needs cleaning up.
    unsafe { vlad_lib_throw() }
}
