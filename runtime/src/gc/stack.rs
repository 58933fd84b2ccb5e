//! Stacks of reals (`fir::Op::StackPush`): the buffer of a list that
//! FIR's `stacks` pass keeps as a count and a vector of its elements'
//! reals, such as reverse mode's record of a loop's steps.
//!
//! A buffer is a vector without pointers, so the collector never scans
//! it; element 0 holds in its first slot how many elements were pushed
//! on the buffer, and element i + 1 is the list's element i from the
//! bottom. Compiled code pushes in place when the list's count is the
//! buffer's and there is room; otherwise it pushes on the copy made
//! here, which is why no list of a buffer ever sees a change.

use super::vector::rt_alloc_vector;
use crate::cell_layout::{vector_shape, VECTOR_SLOTS_AT};

/// The most words a hint of room asks for.
const MAX_ROOM: usize = 1 << 28;

/// A new buffer holding the first `k` elements of `buf` (and its count
/// element), with room for at least k + 1 more: for the `room` more
/// pushes the compiled code expects after this one (a loop that pushes
/// once a level, knowing how many levels are left), else twice as many
/// elements as it must hold, so that pushing n elements copies O(n)
/// either way. Growing by doubling touched twice the memory the stack
/// needed, each buffer fresh from the system: at 10^6 steps of a sum of
/// squares, a sixth of the program's time went to the kernel's zeroing
/// those pages.
#[no_mangle]
pub extern "C" fn rt_stack_grow(buf: usize, k: u64, room: u64) -> usize {
    // SAFETY: compiled code passes a stack's buffer, a vector of at least
    // k + 1 elements whose header and length were written when it was
    // made; the caller's frame holds it while the copy is allocated.
    unsafe {
        let shape = *((buf + 4) as *const u32);
        let (stride, _) = vector_shape(shape);
        let k = k as usize;
        // A hint past what memory could hold is no hint.
        let room = (room as usize).min(MAX_ROOM / stride.max(1));
        let len = if room > 0 {
            // And a little more: the loop's hint does not count the pushes
            // after it, such as the levels of a recursion unrolled before
            // it (sumsq-ref pushed 7 more on a buffer of 10^6 made to
            // measure, which then took a copy twice its size).
            let hinted = k + 2 + room;
            (hinted + 64 + hinted / 32).max(3 * (k + 1) / 2)
        } else {
            2 * (k + 1)
        };
        let len = len.max(8) + 1;
        let p = rt_alloc_vector(u64::from(shape), len as u64) as usize;
        core::ptr::copy_nonoverlapping(
            (buf + VECTOR_SLOTS_AT) as *const u64,
            (p + VECTOR_SLOTS_AT) as *mut u64,
            (k + 1) * stride,
        );
        p
    }
}
