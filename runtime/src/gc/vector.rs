//! Vectors in the heap (`fir::Op::VecOf` and the others; the layout is
//! `base/src/cell_layout.rs`): a header word whose first half is
//! `VECTOR_TAG` and whose second gives the slots per element and the
//! leading pointer slots of each, a length word, then the elements' slots.
//!
//! A vector is an object of the heap as a cell is, of any size: a large
//! one gets a chunk of its own (`Heap::alloc`), which a collection that
//! finds it dead gives back (`Heap::release_large`). The collector scans
//! only the pointer slots of each element, and nothing of a vector of
//! reals.
//!
//! The one place compiled code writes an object after it made others: a
//! `VecBuild` fills its vector while the function it calls allocates, and
//! may collect. The elements filled after a collection may then point to
//! cells younger than the vector, which a minor collection, keeping the
//! vector's mark, would not trace from it (see `gc/mod.rs`). So compiled
//! code says when it starts and ends filling a vector with pointers; the
//! collector traces the pointer slots of every vector being filled, and of
//! every vector filled across a collection, at the next one.

use super::*;
use crate::cell_layout::{vector_shape, VECTOR_SLOTS_AT, VECTOR_TAG};

/// The slots per element, the pointer slots per element and the length of
/// the vector at `start`, if the object there is one.
///
/// # Safety
/// `start` is an object of the heap below its chunk's `used`.
pub(super) unsafe fn shape(start: usize) -> Option<(usize, usize, usize)> {
    let tag = core::ptr::read_volatile(start as *const u32);
    if tag != VECTOR_TAG {
        return None;
    }
    let (stride, pointers) = vector_shape(core::ptr::read_volatile((start + 4) as *const u32));
    let len = core::ptr::read_volatile((start + 8) as *const usize);
    Some((stride, pointers, len))
}

/// The bytes of a vector of `len` elements of `stride` slots, if that
/// fits below 2^48 (the heap's addresses).
pub(super) fn vector_bytes(stride: usize, len: usize) -> Option<usize> {
    len.checked_mul(stride)?
        .checked_mul(8)?
        .checked_add(VECTOR_SLOTS_AT)
        .filter(|b| *b < 1 << 48)
}

impl Heap {
    /// Pushes, as ranges to scan, the pointer slots of the elements of
    /// the vector at `start` (of `bytes` bytes of memory): all its slots
    /// at once when every slot is a pointer, else each element's leading
    /// ones. A vector of reals has none.
    pub(super) fn push_vector_slots(&mut self, start: usize, bytes: usize) {
        // SAFETY: the caller's object was written when it was handed out.
        let Some((stride, pointers, len)) = (unsafe { shape(start) }) else {
            return;
        };
        // A stale word may point at memory a vector held once: the bounds
        // keep the scan inside the object's memory.
        let pointers = pointers.min(stride);
        let len = len.min(bytes.saturating_sub(VECTOR_SLOTS_AT) / (8 * stride.max(1)));
        let first = start + VECTOR_SLOTS_AT;
        if pointers == 0 || len == 0 {
            return;
        }
        if pointers == stride {
            self.push(first);
            self.push(first + 8 * stride * len);
        } else {
            for i in 0..len {
                let at = first + 8 * stride * i;
                self.push(at);
                self.push(at + 8 * pointers);
            }
        }
    }

    /// Marks from the pointer slots of the vectors being filled, and of
    /// those filled across the last collection (see the module doc).
    pub(super) fn scan_filled_vectors(&mut self) {
        // `building` holds pairs: a vector, and the collections before it.
        let building = self.building_len / 2;
        for k in 0..building + self.filled_len {
            // SAFETY: `k` is below the lengths of the two arrays.
            let v = unsafe {
                if k < building {
                    *self.building.add(2 * k)
                } else {
                    *self.filled.add(k - building)
                }
            };
            let Some(i) = self.find(v) else { continue };
            let cell = self.chunk(i).cell;
            self.push_vector_slots(v, cell);
            self.scan(0, 0);
        }
        self.filled_len = 0;
    }

    /// Gives back the memory of the chunk of one object (a large cell or
    /// vector) that the collection found dead: such a chunk is never
    /// reused otherwise. Its index (and bitmap) go to the next chunk made
    /// (`Heap::add_chunk`); its mapping too, if one of that size is made
    /// soon (`SPARE_LARGE`), else to the system.
    pub(super) fn release_large(&mut self, i: usize) {
        let c = *self.chunk(i);
        self.own_granules(i, 0);
        let owned = (c.limit - c.start).next_multiple_of(CHUNK_BYTES);
        let touched = (c.end - c.start).next_multiple_of(4096).min(owned);
        let kept = self.spare_large.iter().filter(|s| s.1 != 0);
        let (count, bytes) = kept.fold((0, 0), |(n, b), s| (n + 1, b + s.2));
        let mut room =
            count < SPARE_ANY || (owned <= HUGE_PAGE && bytes + touched <= self.spare_cap());
        if !room {
            // A spare kept by an earlier collection that a whole cycle of
            // allocation did not reuse is of a size the program no longer
            // makes (a sum's log, doubled since): it gives its slot to
            // this one, of a size just made. Kept, such spares filled
            // every slot, and the gradient of log-sum-exp over 10^6 reals
            // mapped its vectors afresh every step (a third of its time
            // in the kernel, clearing pages).
            let now = self.collections;
            let stale = self.spare_large.iter().enumerate();
            let stale = stale.filter(|(_, s)| s.1 != 0 && s.3 < now);
            if let Some(k) = stale.min_by_key(|(_, s)| s.3).map(|(k, _)| k) {
                let (start, bytes, ..) = self.spare_large[k];
                // SAFETY: a spare is a whole mapping that no chunk holds.
                unsafe { munmap(start as *mut u8, bytes) };
                self.spare_large[k] = (0, 0, 0, 0);
                room = true;
            }
        }
        if let Some(s) = self.spare_large.iter_mut().find(|s| s.1 == 0 && room) {
            *s = (c.start, owned, touched, self.collections);
        } else {
            // SAFETY: the chunk's memory was mapped whole granules at a
            // time (`add_chunk`), and nothing points into it: no mark
            // reached it.
            unsafe { munmap(c.start as *mut u8, owned) };
        }
        self.heap_bytes -= c.end - c.start;
        // Empty: no cells, no memory (`is_released`).
        let c = self.chunk_mut(i);
        c.end = c.start;
        c.used = c.start;
        c.limit = c.start;
        c.next = c.start;
        c.stop = c.start;
        push_word(
            (&mut self.dead, &mut self.dead_len, &mut self.dead_cap),
            16,
            i,
        );
    }

    /// The bytes (of pages touched) of dead large chunks kept for reuse
    /// past the first [`SPARE_ANY`], whatever their size (those past them are smaller
    /// than a huge page, each its own mapping faulted in 4 KiB at a time:
    /// a larger one comes from huge pages, quicker to fault in again,
    /// and kept it would cost a program of a few vectors of megabytes
    /// their size in resident memory): what the program may allocate
    /// before the next collection, since the ones kept longer are not
    /// reused before it finds more dead, four times over, as an object of
    /// a chunk of its own (over a quarter of a chunk) takes up to four
    /// times its bytes in whole chunks. Kept, they are memory the program
    /// touched already, so its resident size stays within what it
    /// reached.
    fn spare_cap(&self) -> usize {
        4 * self.bought.max(MIN_TRIGGER)
    }
}

impl Chunk {
    /// Was its memory given back (`Heap::release_large`)?
    pub(super) fn is_released(&self) -> bool {
        self.limit == self.start
    }
}

/// The bytes of memory the machine has (`usize::MAX` if it cannot say),
/// asked of the system once: two `sysconf` calls per vector made cost
/// more than making a short vector.
fn physical_memory() -> usize {
    use core::sync::atomic::{AtomicUsize, Ordering};
    static KNOWN: AtomicUsize = AtomicUsize::new(0);
    match KNOWN.load(Ordering::Relaxed) {
        0 => {
            let m = ask_physical_memory();
            KNOWN.store(m, Ordering::Relaxed);
            m
        }
        m => m,
    }
}

fn ask_physical_memory() -> usize {
    extern "C" {
        fn sysconf(name: i32) -> i64;
    }
    #[cfg(target_os = "macos")]
    const SC_PHYS_PAGES: i32 = 200;
    #[cfg(target_os = "macos")]
    const SC_PAGESIZE: i32 = 29;
    #[cfg(not(target_os = "macos"))]
    const SC_PHYS_PAGES: i32 = 85;
    #[cfg(not(target_os = "macos"))]
    const SC_PAGESIZE: i32 = 30;
    // SAFETY: `sysconf` only reads system configuration.
    let (pages, size) = unsafe { (sysconf(SC_PHYS_PAGES), sysconf(SC_PAGESIZE)) };
    match (usize::try_from(pages), usize::try_from(size)) {
        (Ok(p), Ok(s)) if p > 0 && s > 0 => p.saturating_mul(s),
        _ => usize::MAX,
    }
}

/// A new vector of `len` elements: the header's second half is `shape`
/// (`cell_layout::vector_header`). The length and header are written; the
/// slots are zeroed when some are pointers, which the collector may scan
/// before compiled code fills them.
#[no_mangle]
pub extern "C" fn rt_alloc_vector(shape: u64, len: u64) -> *mut u8 {
    let (stride, pointers) = vector_shape(shape as u32);
    let Some(bytes) = usize::try_from(len)
        .ok()
        .and_then(|n| vector_bytes(stride, n))
    else {
        out_of_memory()
    };
    // A vector larger than the machine's memory would be mapped (the
    // system may promise address space it cannot back) and then filled
    // until the system kills the program: refuse it as `run` does.
    if bytes > physical_memory() {
        out_of_memory()
    }
    let p = rt_alloc(bytes);
    // SAFETY: `p` is a fresh object of `bytes` bytes, 8-byte aligned.
    unsafe {
        (p as *mut u32).write(VECTOR_TAG);
        (p.add(4) as *mut u32).write(shape as u32);
        (p.add(8) as *mut u64).write(len);
        if pointers > 0 {
            core::ptr::write_bytes(p.add(VECTOR_SLOTS_AT), 0, bytes - VECTOR_SLOTS_AT);
        }
    }
    p
}

/// Compiled code starts filling the vector `v` (with pointer slots) by
/// calls that may collect.
#[no_mangle]
pub extern "C" fn rt_vec_build_begin(v: usize) {
    let h = HEAP.get();
    let collections = h.collections;
    for w in [v, collections] {
        push_word(
            (&mut h.building, &mut h.building_len, &mut h.building_cap),
            32,
            w,
        );
    }
}

/// Compiled code has filled the vector `v` (the last one begun): if a
/// collection ran meanwhile, the next one traces it again.
#[no_mangle]
pub extern "C" fn rt_vec_build_end(v: usize) {
    let h = HEAP.get();
    if h.building_len < 2 {
        fail(&[b"error: internal error: a vector filled but never begun"]);
    }
    h.building_len -= 2;
    // SAFETY: the slot was filled by `rt_vec_build_begin`.
    let before = unsafe { *h.building.add(h.building_len + 1) };
    if before != h.collections {
        push_word((&mut h.filled, &mut h.filled_len, &mut h.filled_cap), 16, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell_layout::vector_header;

    /// A vector of `len` elements of `stride` slots, `pointers` of them
    /// pointers, made in `h` as `rt_alloc_vector` makes one.
    fn vector(h: &mut Heap, stride: usize, pointers: usize, len: usize) -> usize {
        let p = h.alloc(vector_bytes(stride, len).unwrap()) as usize;
        // SAFETY: a fresh object of that many bytes.
        unsafe {
            (p as *mut u32).write(VECTOR_TAG);
            ((p + 4) as *mut u32).write(vector_header(stride, pointers));
            ((p + 8) as *mut usize).write(len);
        }
        p
    }

    /// The ranges on the mark stack, taken off it.
    fn pushed(h: &mut Heap) -> std::vec::Vec<(usize, usize)> {
        let mut out = std::vec::Vec::new();
        for k in (0..h.stack_len).step_by(2) {
            // SAFETY: both words of each pair were pushed.
            unsafe { out.push((*h.stack.add(k), *h.stack.add(k + 1))) };
        }
        h.stack_len = 0;
        out
    }

    #[test]
    fn only_the_pointer_slots_of_the_elements_are_scanned() {
        let mut h = Heap::EMPTY;
        let reals = vector(&mut h, 2, 0, 10);
        h.push_vector_slots(reals, 16 + 160);
        assert_eq!(pushed(&mut h), []);
        // (ptr, f64, f64) elements: the first slot of each.
        let mixed = vector(&mut h, 3, 1, 4);
        h.push_vector_slots(mixed, 16 + 96);
        let first = mixed + 16;
        let want: std::vec::Vec<_> = (0..4)
            .map(|i| (first + 24 * i, first + 24 * i + 8))
            .collect();
        assert_eq!(pushed(&mut h), want);
        // All pointers: one range. A length beyond the object's memory
        // (a stale header) is cut to it.
        let ptrs = vector(&mut h, 2, 2, 5);
        h.push_vector_slots(ptrs, 16 + 80);
        assert_eq!(pushed(&mut h), [(ptrs + 16, ptrs + 96)]);
        h.push_vector_slots(ptrs, 16 + 32);
        assert_eq!(pushed(&mut h), [(ptrs + 16, ptrs + 48)]);
    }

    #[test]
    fn a_large_vector_lives_by_an_interior_pointer_and_its_chunk_goes_when_dead() {
        // A collection forgets the memo tables.
        let _globals = crate::TEST_GLOBALS.lock();
        let mut h = Heap::EMPTY;
        // 10 MB of reals: a chunk of its own.
        let n = (10 << 20) / 8;
        let inner = core::hint::black_box(vector(&mut h, 1, 0, n) + (5 << 20));
        let i = h.find(inner).unwrap();
        assert_eq!(h.chunk(i).end - h.chunk(i).start, 16 + 8 * n);
        // Only a pointer into its middle is on the stack scanned.
        let roots = [inner];
        h.stack_top = roots.as_ptr() as usize + 8;
        h.full_next = true;
        h.collect();
        assert_eq!(h.find(inner), Some(i));
        let bytes = h.heap_bytes;
        // No root: a full collection gives the chunk back.
        h.stack_top = 0;
        h.full_next = true;
        h.collect();
        assert_eq!(h.find(inner), None);
        assert_eq!(h.heap_bytes, bytes - (16 + 8 * n));
        // The next large object takes its index.
        let again = vector(&mut h, 1, 0, n);
        assert_eq!(h.find(again), Some(i));
    }
}
