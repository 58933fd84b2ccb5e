//! The end of the program's stack, caught by the hardware.
//!
//! A program's compiled functions need not compare the stack pointer with
//! a limit on entry (five instructions per call, a tenth of the
//! instructions of a gradient over a list of reals, docs/benchmarks.md
//! `sumsq-R`; only those that loop still do, see `codegen`). Instead the
//! pages just below the limit are made inaccessible, and the
//! first access to them, by compiled code or by the runtime it called,
//! raises SIGSEGV, whose handler runs on a stack of its own and reports
//! what the check reported: `error: recursion too deep: ...`, after the
//! output printed so far, exit status 1. A fault anywhere else is not
//! ours: the handler puts the default action back and returns, so the
//! access faults again and the program dies of it as it would have.
//!
//! Code generation keeps frames from stepping over the guard: a frame
//! larger than a page probes each of its pages in turn (Cranelift's inline
//! stack probes), as Rust's own code does. A library (`vlad_lib`) runs on
//! its caller's thread, where the signal handlers are the caller's: its
//! compiled code keeps the explicit check.

use crate::rt_stack_overflow;

extern "C" {
    fn sigaction(sig: i32, act: *const SigAction, old: *mut SigAction) -> i32;
    fn sigaltstack(ss: *const StackT, old: *mut StackT) -> i32;
    fn mprotect(addr: *mut u8, len: usize, prot: i32) -> i32;
}

const SIGSEGV: i32 = 11;
const SA_SIGINFO: i32 = 4;
const SA_ONSTACK: i32 = 0x0800_0000;
const PROT_NONE: i32 = 0;
const PAGE: usize = 4096;

/// Bytes made inaccessible below the limit: more than any frame of the
/// runtime or the C library it calls takes without probing.
const GUARD_BYTES: usize = 256 << 10;

/// `struct sigaction` of glibc and musl on 64-bit Linux.
#[repr(C)]
struct SigAction {
    handler: usize,
    mask: [u64; 16],
    flags: i32,
    restorer: usize,
}

/// `stack_t`.
#[repr(C)]
struct StackT {
    sp: *mut u8,
    flags: i32,
    size: usize,
}

/// The start of `siginfo_t`: signal, errno and code, then (for SIGSEGV)
/// the faulting address.
#[repr(C)]
struct SigInfo {
    signo: i32,
    errno: i32,
    code: i32,
    addr: usize,
}

/// The stack the handler runs on: the program's own is used up.
#[repr(C, align(16))]
struct AltStack([u8; 64 << 10]);

static mut ALT_STACK: AltStack = AltStack([0; 64 << 10]);

/// Faulting addresses that mean the stack is used up: from a little below
/// the guard (the main thread's stack, when no thread could be made, ends
/// where the kernel stops growing it) to the top of the stack.
static mut OVERFLOW_FROM: usize = 0;
static mut OVERFLOW_TO: usize = 0;

/// Guards the stack of the calling thread below `limit` (its frames are
/// between `limit` and `top`, the guard takes the pages below `limit`)
/// and installs the handler. `guard` is false on the main thread, whose
/// stack the kernel grows on demand up to its limit: nothing is mapped
/// below, and the kernel's own refusal to grow it faults there.
pub fn install(limit: usize, top: usize, guard: bool) {
    let hi = limit / PAGE * PAGE;
    let lo = hi.saturating_sub(GUARD_BYTES);
    // SAFETY: single-threaded: written before any compiled code runs and
    // read only by the handler.
    unsafe {
        OVERFLOW_FROM = lo.saturating_sub(2 << 20);
        OVERFLOW_TO = top;
    }
    if guard {
        // SAFETY: `lo..hi` lies in this thread's stack mapping below the
        // frames in use (the limit keeps a margin above the stack's end)
        // and nothing is stored there. On failure the stack is unguarded
        // below the limit but still ends in the C library's guard page,
        // inside the reported range.
        unsafe {
            mprotect(lo as *mut u8, hi - lo, PROT_NONE);
        }
    }
    // SAFETY: the alternate stack is a static this thread alone uses, of
    // the size given; the handler is an `extern "C"` function of the
    // signature SA_SIGINFO calls, and the mask (no signal blocked) and
    // flags are plain data.
    unsafe {
        let ss = StackT {
            sp: core::ptr::addr_of_mut!(ALT_STACK) as *mut u8,
            flags: 0,
            size: core::mem::size_of::<AltStack>(),
        };
        sigaltstack(&ss, core::ptr::null_mut());
        let act = SigAction {
            handler: on_fault as *const () as usize,
            mask: [0; 16],
            flags: SA_SIGINFO | SA_ONSTACK,
            restorer: 0,
        };
        sigaction(SIGSEGV, &act, core::ptr::null_mut());
    }
}

extern "C" fn on_fault(sig: i32, info: *mut SigInfo, _context: *mut u8) {
    // SAFETY: the kernel passes a valid `siginfo_t` for a SIGSEGV handler
    // installed with SA_SIGINFO; the range was written before the program
    // ran.
    let (addr, from, to) = unsafe { ((*info).addr, OVERFLOW_FROM, OVERFLOW_TO) };
    if (from..to).contains(&addr) {
        rt_stack_overflow();
    }
    let default = SigAction {
        handler: 0,
        mask: [0; 16],
        flags: 0,
        restorer: 0,
    };
    // SAFETY: restores the default action (SIG_DFL); returning then runs
    // the faulting instruction again, which kills the program.
    unsafe {
        sigaction(sig, &default, core::ptr::null_mut());
    }
}
