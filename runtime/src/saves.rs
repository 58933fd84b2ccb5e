//! The stack of saved values (`fir::Op::Save`, `fir::Op::Restore`): what
//! a recursion the FIR passes made two loops (`fir::passes::unrecurse`)
//! keeps of each level for the code after its call, reals and pointers a
//! word each, where a frame of the machine's stack kept it with its spill
//! slots, saved registers and return address.
//!
//! Two buffers for the whole program, pushed and popped inline by
//! compiled code: one for pointers, one for reals (and booleans). The
//! loops of every such recursion save and restore in the order of the
//! calls they stand for, so they share the two as frames share the machine
//! stack, and their memory, grown to the deepest recursion, serves every
//! later one without copying. The collector scans the pointers' words as
//! it scans the machine stack ([`live`]) and never the reals': a backward
//! sweep over a million elements saves millions of reals, which a scan at
//! every collection would read again (a third of the instructions of
//! `tests/complexity/vectors/sumsq-ref` at n = 10^6), and any of which
//! that looked like a pointer would keep a dead cell alive.

use crate::gc::HUGE_PAGE;
use crate::Global;
extern "C" {
    fn realloc(p: *mut u8, n: usize) -> *mut u8;
    fn free(p: *mut u8);
}

use crate::cell_layout::{SAVES_POINTERS as POINTERS, SAVES_REALS as REALS};

/// For each stack ([`POINTERS`], [`REALS`]), the top (the address the
/// next word goes to) and the end; all 0 before the first save. Read and
/// written by compiled code.
#[no_mangle]
pub static mut rt_saves: [usize; 4] = [0; 4];

/// Where each buffer starts (0 before its first save).
static BASE: Global<[usize; 2]> = Global::new([0, 0]);

/// The most bytes the two stacks hold together: as much as the machine
/// stack of a program's thread, whose recursions they stand for. Past it
/// a runaway recursion stops as it would have on the machine stack.
const MAX_BYTES: usize = 4 << 30;

/// Makes room for `bytes` more past the top of stack `which`: a buffer at
/// least twice as large, with what the old one held, or the program stops
/// with "out of memory", or "recursion too deep" past [`MAX_BYTES`].
#[no_mangle]
pub extern "C" fn rt_saves_grow(bytes: usize, which: usize) {
    let which = which.min(REALS);
    let base = BASE.get();
    // SAFETY: one thread; compiled code is not running while the runtime is.
    let saves = unsafe { rt_saves };
    let used = |w: usize| saves[2 * w] - base[w];
    if used(POINTERS) + used(REALS) + bytes > MAX_BYTES {
        crate::fail(&[crate::message::RECURSION_TOO_DEEP.as_bytes()]);
    }
    let (top, end) = (saves[2 * which], saves[2 * which + 1]);
    let (old, old_cap) = (base[which], end - base[which]);
    let used = top - old;
    let mut cap = (2 * old_cap).max(used + bytes).max(1 << 16);
    let p = if cap < HUGE_PAGE {
        // SAFETY: `old` is null or the buffer `realloc` gave before (a
        // buffer below a huge page came from `realloc`).
        unsafe { realloc(old as *mut u8, cap) as usize }
    } else {
        // Past a huge page, address space for the whole stack, advised as
        // huge pages, so that it never grows again: a backward sweep over
        // 10^6 elements saved 16 MB, faulted in 4 KiB at a time from
        // `realloc`, and each doubling touched fresh memory to copy into.
        // Under a cap on address space, mappings twice as large each time.
        let reserved = crate::gc::reserve_huge(MAX_BYTES) as usize;
        let p = if reserved != 0 {
            cap = MAX_BYTES;
            reserved
        } else {
            crate::gc::map_huge(cap) as usize
        };
        if p != 0 && old != 0 {
            // SAFETY: the new mapping has room for the `used` bytes of the
            // old buffer, which is given back as it was obtained.
            unsafe {
                core::ptr::copy_nonoverlapping(old as *const u8, p as *mut u8, used);
                if old_cap < HUGE_PAGE {
                    free(old as *mut u8);
                } else {
                    crate::gc::unmap_huge(old as *mut u8, old_cap);
                }
            }
        }
        p
    };
    if p == 0 {
        crate::fail(&[b"error: out of memory"]);
    }
    let cap = if cap < HUGE_PAGE {
        cap
    } else {
        cap.next_multiple_of(HUGE_PAGE)
    };
    base[which] = p;
    // SAFETY: as above.
    unsafe {
        rt_saves[2 * which] = p + used;
        rt_saves[2 * which + 1] = p + cap;
    }
}

/// The pointers saved now, as the addresses `[from, to)`: roots of the
/// collector.
pub fn live() -> (usize, usize) {
    let base = BASE.get()[POINTERS];
    // SAFETY: as in `rt_saves_grow`.
    let top = unsafe { rt_saves[2 * POINTERS] };
    (base, top.max(base))
}

/// Empties both stacks: a library call that stopped with an error may
/// have left values on them.
#[cfg(any(vlad_lib, test))]
pub fn clear() {
    let base = BASE.get();
    for w in [POINTERS, REALS] {
        // SAFETY: as in `rt_saves_grow`.
        unsafe {
            if rt_saves[2 * w] != 0 {
                rt_saves[2 * w] = base[w];
            }
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
        let save = |x: f64, w: usize| unsafe {
            if rt_saves[2 * w] + 8 > rt_saves[2 * w + 1] {
                rt_saves_grow(8, w);
            }
            *(rt_saves[2 * w] as *mut f64) = x;
            rt_saves[2 * w] += 8;
        };
        for i in 0..400_000 {
            save(i as f64, REALS);
            if i % 4 == 0 {
                save(-(i as f64), POINTERS);
            }
        }
        // Past a huge page the reals moved to a mapping of their own, and
        // only the pointers are the collector's roots.
        let (from, to) = live();
        assert_eq!(to - from, 800_000);
        for i in (0..400_000).rev() {
            let pop = |w: usize| unsafe {
                rt_saves[2 * w] -= 8;
                *(rt_saves[2 * w] as *const f64)
            };
            if i % 4 == 0 {
                assert_eq!(pop(POINTERS), -(i as f64));
            }
            assert_eq!(pop(REALS), i as f64);
        }
        clear();
    }
}
