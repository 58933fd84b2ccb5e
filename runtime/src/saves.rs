//! The stack of saved values (`fir::Op::Save`, `fir::Op::Restore`): what
//! a recursion the FIR passes made two loops (`fir::passes::unrecurse`)
//! keeps of each level for the code after its call, reals and pointers a
//! word each, where a frame of the machine's stack kept it with its spill
//! slots, saved registers and return address.
//!
//! One buffer for the whole program, pushed and popped inline by compiled
//! code: the loops of every such recursion save and restore in the order
//! of the calls they stand for, so they share it as frames share the
//! machine stack, and its memory, grown to the deepest recursion, serves
//! every later one without copying. The collector scans its words as it
//! scans the machine stack ([`live`]): a real that looks like a pointer
//! may keep a dead cell alive, never free a live one.

use crate::Global;

extern "C" {
    fn realloc(p: *mut u8, n: usize) -> *mut u8;
}

/// The top of the stack (the address the next word goes to) and its end;
/// both 0 before the first save. Read and written by compiled code.
#[no_mangle]
pub static mut rt_saves: [usize; 2] = [0, 0];

/// Where the buffer starts (0 before the first save).
static BASE: Global<usize> = Global::new(0);

/// The most bytes the stack holds: as much as the machine stack of a
/// program's thread, whose recursions it stands for. Past it a runaway
/// recursion stops as it would have on the machine stack.
const MAX_BYTES: usize = 4 << 30;

/// Makes room for `bytes` more past the top: a buffer at least twice as
/// large, with what the old one held, or the program stops with "out of
/// memory", or "recursion too deep" past [`MAX_BYTES`].
#[no_mangle]
pub extern "C" fn rt_saves_grow(bytes: usize) {
    let base = BASE.get();
    // SAFETY: one thread; compiled code is not running while the runtime is.
    let [top, end] = unsafe { rt_saves };
    let used = top - *base;
    if used + bytes > MAX_BYTES {
        crate::fail(&[crate::message::RECURSION_TOO_DEEP.as_bytes()]);
    }
    let cap = (2 * (end - *base)).max(used + bytes).max(1 << 16);
    // SAFETY: `*base` is null or the buffer `realloc` gave before.
    let p = unsafe { realloc(*base as *mut u8, cap) } as usize;
    if p == 0 {
        crate::fail(&[b"error: out of memory"]);
    }
    *base = p;
    // SAFETY: as above.
    unsafe { rt_saves = [p + used, p + cap] };
}

/// The words saved now, as the addresses `[from, to)`: roots of the
/// collector.
pub fn live() -> (usize, usize) {
    // SAFETY: as in `rt_saves_grow`.
    let top = unsafe { rt_saves[0] };
    (*BASE.get(), top.max(*BASE.get()))
}

/// Empties the stack: a library call that stopped with an error may have
/// left values on it.
#[cfg(any(vlad_lib, test))]
pub fn clear() {
    // SAFETY: as in `rt_saves_grow`.
    unsafe {
        if rt_saves[0] != 0 {
            rt_saves[0] = *BASE.get();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_was_saved_as_it_grows() {
        let _globals = crate::TEST_GLOBALS.lock();
        clear();
        let save = |x: f64| unsafe {
            if rt_saves[0] + 8 > rt_saves[1] {
                rt_saves_grow(8);
            }
            *(rt_saves[0] as *mut f64) = x;
            rt_saves[0] += 8;
        };
        for i in 0..100_000 {
            save(i as f64);
        }
        let (from, to) = live();
        assert_eq!(to - from, 800_000);
        for i in (0..100_000).rev() {
            let x = unsafe {
                rt_saves[0] -= 8;
                *(rt_saves[0] as *const f64)
            };
            assert_eq!(x, i as f64);
        }
        clear();
    }
}
