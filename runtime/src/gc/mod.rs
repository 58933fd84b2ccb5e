//! The heap of union cells: allocation and a conservative mark-sweep
//! collector.
//!
//! Union cells (`fir::Op::Alloc`: a header word, then one 8-byte slot
//! per scalar, pointers first; `base/src/cell_layout.rs`) and vectors
//! (`vector.rs`) are the only memory compiled code allocates. A program that
//! builds a tape in a loop for minutes allocates without bound, so cells
//! that are no longer reachable are reclaimed.
//!
//! Why conservative: compiled code keeps cell pointers in registers and in
//! Cranelift's stack slots, and emits no stack maps. The collector treats
//! every aligned word of the program thread's stack (and of the registers
//! the runtime's callers may hold, spilled first) as a possible pointer,
//! and every slot of a reachable cell likewise. A word that only looks
//! like a pointer (the bits of a real) keeps a dead cell alive until that
//! word changes; it never frees a live one. Interior pointers count.
//!
//! Layout: cells are grouped by size (in words) into chunks of
//! [`CHUNK_BYTES`]; a chunk holds cells of one size, each with a mark bit,
//! and has been handed out up to `used`. A cell of `CLASSES - 1` words or
//! more gets a chunk of its own, which a collection that finds it dead
//! unmaps. Vectors (`vector.rs`) are objects of the heap as cells are. Every chunk starts at a multiple of `CHUNK_BYTES`
//! and owns the granules (aligned `CHUNK_BYTES` of address space) it
//! covers, so the chunk a word points into is two table lookups away
//! (`Heap::find`, through a two-level radix table of granules): the
//! collector asks that of every word of the stack and of every reachable
//! cell. A binary search over the chunks cost half its time on a deep
//! recursion's stack, and a hash table of granules a quarter (the probe
//! loop and the hash's multiplication).
//!
//! A collection runs when a chunk would be added and the bytes allocated
//! since the last one exceed a multiple of the bytes of cells it found
//! live and the stack as deep as it is now, which the collection would
//! scan, plus half the bytes of the large objects it found live (at
//! least [`MIN_TRIGGER`]; [`Heap::allowance`]): a collection deep in a
//! non-tail recursion scans a deep stack, so it waits until the
//! allocation pays for that. The multiple is 2, and up to 4 as more of
//! what was allocated before a collection survived it ([`Heap::growth`]):
//! a program building a structure that stays live (a list and its
//! gradient) traces each cell once whenever it is collected, so
//! collecting it less often is all that saves work, while one that drops
//! what it allocates keeps its heap at three times its live data. What
//! the live cells buy is capped ([`MAX_CELL_ALLOWANCE`]), since a minor
//! collection does not trace them again: past 256 MB of allocation, a
//! heap holding a large record of a forward sweep grows by a quarter of
//! it between collections, not by two to four times it. Large
//! objects (vectors of megabytes) cost a collection nothing to trace, so
//! they buy no more allocation than half their size: a loop that makes
//! and drops a few large vectors per iteration keeps its heap within
//! one and a half times what it holds at once (lse-F: 48 MB at N = 1,
//! 80 MB at N = 5 and 10; it grew by 32 MB per iteration when they
//! counted as cells).
//!
//! Generations, without a write barrier: compiled code writes a cell's
//! slots only when it makes the cell, so a cell points only to cells made
//! before it (the vectors a `VecBuild` fills while it calls are the
//! exception, which `vector.rs` handles). A minor collection keeps the marks of the last collection:
//! a marked cell is old and everything it points to was marked with it,
//! so the cells of a list or tape that survived are not traced again, and
//! only the stack and what was made since are. The old cells that have
//! died stay marked (and their memory unused) until a full collection,
//! which clears the marks first; one runs once the marked bytes reach
//! one and a half times what the last full collection found live, or
//! when that is at most half the allocation allowed before the next and
//! less than half of what was allocated since the last collection
//! survived it.
//!
//! Allocation only ever bumps a pointer through a run of free cells (the
//! run is the region compiled code bumps inline, `rt_bump`). A chunk in
//! which a collection finds no live cell goes back whole to a pool of
//! empty chunks, which any size class takes and recuts; a chunk with live
//! cells keeps its mark bits until the next collection, and its runs of
//! unmarked cells (the holes) are bumped through in address order. There
//! are no free lists: a loop that builds and drops a tape per iteration
//! (reverse mode through a loop, run many times) reuses the same few
//! megabytes, warm in the cache, by bumping, instead of faulting in fresh
//! pages or taking cells one call at a time from a list.

// The C `main` that calls into this module is not compiled for unit tests.
#![cfg_attr(test, allow(dead_code))]

mod collect;
mod stack;
mod vector;
mod vector_sum;

use crate::cell_layout::{bump_slot, BUMP_WORDS};
use crate::{fail, Global};

extern "C" {
    fn malloc(n: usize) -> *mut u8;
    fn free(p: *mut u8);
    fn realloc(p: *mut u8, n: usize) -> *mut u8;
    fn getenv(name: *const u8) -> *const u8;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn munmap(addr: *mut u8, len: usize) -> i32;
    fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32;
}

const PROT_READ_WRITE: i32 = 0x1 | 0x2;
#[cfg(target_os = "macos")]
const MAP_PRIVATE_ANON: i32 = 0x0002 | 0x1000;
#[cfg(not(target_os = "macos"))]
const MAP_PRIVATE_ANON: i32 = 0x02 | 0x20;

/// Bytes of an ordinary chunk.
const CHUNK_BYTES: usize = 1 << 20;
/// A heap past this many bytes takes its chunks from arenas of
/// [`ARENA_BYTES`] the kernel may back with huge pages (2 MiB): faulting
/// in a fresh 4 KiB page cost 1.4 us on the machine of docs/benchmarks.md
/// and a 4 KiB share of a huge page 0.17 us, and a program that builds a
/// list of 256,000 reals and its gradient faulted 13,000 pages, a third of
/// its time. Below it, a chunk is its own mapping, so a small program
/// stays small (a huge page is resident whole once touched).
const HUGE_AFTER: usize = 8 << 20;
/// How many dead large chunks' mappings are kept for reuse: a program
/// that makes a few vectors of megabytes per step (forward mode over a
/// vector: the vector of forward values, its primals, its tangents) would
/// otherwise map them afresh each step, and the kernel zero each page
/// (lse-F: 46% of its time in `clear_page`). A gradient over 10^5 reals
/// makes two large objects a step (its sum's last log, then its
/// accumulator) and five steps between collections: with 8 kept, two of
/// every ten were mapped afresh, 79 page faults a step. Their bytes are
/// capped past the first [`SPARE_ANY`] ([`Heap::spare_cap`]), counted as
/// the pages their objects touched, not the whole chunks mapped: a
/// Runge-Kutta solve over 10^4 reals (GradBench's `ode`) makes 80 vectors
/// of 80 KB a call, each in a mapping of 1 MB, and with 32 kept (and a
/// cap counting megabytes) made 56 mappings a call, more than half of its
/// time in the kernel.
const SPARE_LARGE: usize = 256;
const SPARE_ANY: usize = 8;
const ARENA_BYTES: usize = 8 << 20;
pub(crate) const HUGE_PAGE: usize = 2 << 20;
#[cfg(target_os = "linux")]
const MADV_HUGEPAGE: i32 = 14;
/// Allocation between collections is at least this: small enough that a
/// program whose live data is small recycles memory still in the cache,
/// large enough that collections stay rare against the work of filling it.
const MIN_TRIGGER: usize = 4 << 20;
/// The allocation between collections that the live cells buy is at most
/// the larger of this and a quarter of them ([`Heap::allowance`]): a minor
/// collection traces only what was made since the last one (and sweeps
/// mark bits, a bit per word of heap), so allowing more saves little work
/// and costs memory the kernel must zero. Uncapped, the multiple of 2 to 4
/// gave a gradient whose record of the forward sweep stays live (GradBench's
/// det at ell = 9: 366 MB) a heap of 1.3 GB and 1.5 GB of resident memory.
const MAX_CELL_ALLOWANCE: usize = 256 << 20;
/// The granule table's two levels: addresses below 2^48 (what `mmap`
/// hands out without a hint, on every 64-bit target we build for) split
/// into their bits 32 to 47 and the granule's bits below 32.
const RADIX_TOP: usize = 1 << 16;
const RADIX_LEAF: usize = (1 << 32) / CHUNK_BYTES;
/// Cell sizes (in words) that are reused after a collection; larger cells
/// (the last class, mixed sizes) get a chunk each, unmapped once dead.
const CLASSES: usize = 4096;

#[derive(Clone, Copy)]
struct Chunk {
    start: usize,
    end: usize,
    /// Bytes per cell.
    cell: usize,
    /// `ceil(2^40 / cell)` (0 for a chunk of one cell): the collector
    /// finds the cell an address points into by a multiplication
    /// (`Chunk::cell_index`), not a division, for every word it scans.
    recip: u64,
    /// Cells below this address have been handed out (live or free).
    used: usize,
    /// The run being allocated from: `next` bumps up to `stop`. Runs are
    /// found in address order (`Heap::next_run`).
    next: usize,
    stop: usize,
    /// The next chunk of the same size class with holes, by start (0:
    /// none).
    next_partial: usize,
    /// One bit per cell: the cells found live by the last collection
    /// (cleared at the start of each).
    marks: *mut u64,
    /// The end of the memory the chunk owns (`end` is the end of its last
    /// whole cell), and the words its bitmap has room for: what a chunk
    /// taken from the pool of empty ones may be recut to.
    limit: usize,
    mark_words: usize,
}

/// The `recip` of a chunk of cells of `cell` bytes.
fn reciprocal(cell: usize) -> u64 {
    if cell > CHUNK_BYTES / 4 {
        0
    } else {
        (1u64 << 40).div_ceil(cell as u64)
    }
}

impl Chunk {
    /// The number of the cell holding address `p` (within the chunk).
    /// Exact: for an offset `x < 2^20` and a cell `c < 2^18`,
    /// `x * ceil(2^40 / c)` is `x * 2^40 / c` plus less than `x`, which
    /// stays below the next multiple of `2^40` as `x * c < 2^40`.
    #[inline]
    fn cell_index(&self, p: usize) -> usize {
        (((p - self.start) as u64 * self.recip) >> 40) as usize
    }

    /// The mark bits of its cells (the bitmap may have room for more).
    #[allow(clippy::mut_from_ref)]
    fn marks(&self) -> &mut [u64] {
        let words = ((self.end - self.start) / self.cell).div_ceil(64);
        // SAFETY: the bitmap has at least this many words (`mark_words`),
        // allocated for the chunk's life; the heap is touched by one
        // thread only, and callers hold no other view of it.
        unsafe { core::slice::from_raw_parts_mut(self.marks, words) }
    }
}

struct Heap {
    /// In the order they were made: an index names a chunk for its life.
    chunks: *mut Chunk,
    len: usize,
    cap: usize,
    /// Granule (address / `CHUNK_BYTES`) to the index + 1 of the chunk
    /// that owns it (0: none): [`RADIX_TOP`] pointers (null until the
    /// first chunk) by the address's bits from 32 up, each null or a leaf
    /// of [`RADIX_LEAF`] indices by the granule's low bits.
    granules: *mut *mut u32,
    /// Per size class (words): the chunk being filled, as an index + 1
    /// into `chunks` (0: none), and the first of its chunks with holes
    /// left by the last collection, by start (0: none).
    filling: [usize; CLASSES],
    partial: [usize; CLASSES],
    /// Bytes handed out since the last collection, and those the last
    /// collection found live.
    since: usize,
    live: usize,
    /// What the live data of the last collection buy: the allocation
    /// before the next, but for the stack's part ([`Heap::allowance`]).
    bought: usize,
    /// The multiple of the live cells and stack allocated before the next
    /// collection ([`Heap::allowance`]), in percent: 200 plus 200 times
    /// the share of the bytes allocated before the last collection that it
    /// found live.
    growth: usize,
    /// The lowest and highest chunk addresses, for a quick range test.
    lo: usize,
    hi: usize,
    /// The starts of the empty ordinary chunks no size class fills.
    empty: *mut usize,
    empty_len: usize,
    empty_cap: usize,
    /// The mark stack: the pointer slots still to scan, as pairs of
    /// addresses (from, to).
    stack: *mut usize,
    stack_len: usize,
    stack_cap: usize,
    /// The highest address of the program thread's stack.
    stack_top: usize,
    collections: usize,
    /// Whether the next collection is full (clears every mark first) or
    /// minor (keeps them: the cells marked before are old), and the live
    /// bytes the last full one found.
    full_next: bool,
    full_live: usize,
    fulls: usize,
    /// Bytes of all chunks, and the most they have been (what
    /// `VLAD_GC_STATS` reports: large chunks found dead are given back).
    heap_bytes: usize,
    heap_peak: usize,
    /// The rest of the current arena ([`HUGE_AFTER`]): its next free
    /// address and its end.
    arena: usize,
    arena_end: usize,
    /// Over all collections: bytes of program stack scanned, and bytes of
    /// cells found live (for `VLAD_GC_STATS`).
    stack_scanned: usize,
    live_marked: usize,
    /// The vectors compiled code is filling, innermost last, each with
    /// the number of collections before it began (pairs of words), and
    /// those filled across a collection since the last one (`vector.rs`).
    building: *mut usize,
    building_len: usize,
    building_cap: usize,
    filled: *mut usize,
    filled_len: usize,
    filled_cap: usize,
    /// The indices of the chunks given back (`Heap::release_large`).
    dead: *mut usize,
    dead_len: usize,
    dead_cap: usize,
    /// Mappings of large chunks found dead (start, bytes, bytes of the
    /// pages its last object touched, the collection that kept it; 0
    /// bytes: none), kept for the next large object of the same size
    /// (`Heap::release_large`).
    spare_large: [(usize, usize, usize, usize); SPARE_LARGE],
}

static HEAP: Global<Heap> = Global::new(Heap::EMPTY);

impl Heap {
    /// No chunks yet.
    const EMPTY: Heap = Heap {
        chunks: core::ptr::null_mut(),
        len: 0,
        cap: 0,
        granules: core::ptr::null_mut(),
        filling: [0; CLASSES],
        partial: [0; CLASSES],
        since: 0,
        live: 0,
        bought: 0,
        growth: 200,
        lo: usize::MAX,
        hi: 0,
        empty: core::ptr::null_mut(),
        empty_len: 0,
        empty_cap: 0,
        stack: core::ptr::null_mut(),
        stack_len: 0,
        stack_cap: 0,
        stack_top: 0,
        collections: 0,
        full_next: true,
        full_live: 0,
        fulls: 0,
        heap_bytes: 0,
        heap_peak: 0,
        arena: 0,
        arena_end: 0,
        stack_scanned: 0,
        live_marked: 0,
        building: core::ptr::null_mut(),
        building_len: 0,
        building_cap: 0,
        filled: core::ptr::null_mut(),
        filled_len: 0,
        filled_cap: 0,
        dead: core::ptr::null_mut(),
        dead_len: 0,
        dead_cap: 0,
        spare_large: [(0, 0, 0, 0); SPARE_LARGE],
    };
}

/// `bytes` of fresh zeroed memory advised as huge pages (see
/// [`HUGE_AFTER`]), or null if the system has none to give.
pub(crate) fn map_huge(bytes: usize) -> *mut u8 {
    map_huge_flags(bytes, 0)
}

/// As [`map_huge`], but address space only: the system promises no
/// memory for it, and gives each page when it is first touched (or stops
/// the program then, if it has none). For a stack that may grow large
/// but whose growth must not copy.
pub(crate) fn reserve_huge(bytes: usize) -> *mut u8 {
    #[cfg(target_os = "linux")]
    const MAP_NORESERVE: i32 = 0x4000;
    #[cfg(not(target_os = "linux"))]
    const MAP_NORESERVE: i32 = 0;
    map_huge_flags(bytes, MAP_NORESERVE)
}

fn map_huge_flags(bytes: usize, flags: i32) -> *mut u8 {
    let len = bytes.next_multiple_of(HUGE_PAGE);
    let Some(start) = sys_map_aligned(len, HUGE_PAGE, flags) else {
        return core::ptr::null_mut();
    };
    #[cfg(target_os = "linux")]
    // SAFETY: advice on the mapping just made; a kernel without huge
    // pages ignores it (the result is only advice).
    unsafe {
        madvise(start as *mut u8, len, MADV_HUGEPAGE);
    }
    start as *mut u8
}

/// Gives back what [`map_huge`] gave for `bytes`.
pub(crate) fn unmap_huge(p: *mut u8, bytes: usize) {
    // SAFETY: `p` is a mapping of `bytes` rounded up to a huge page, made
    // by `map_huge` and no longer used.
    unsafe {
        munmap(p, bytes.next_multiple_of(HUGE_PAGE));
    }
}

/// Advises the kernel to back the stack between `limit` and `top` with
/// huge pages, but for its top [`HUGE_PAGE`] (where a program that does
/// not recurse deeply stays): a deep non-tail recursion faults its stack
/// in as it goes down, a page at a time (see [`HUGE_AFTER`]).
pub fn huge_stack(limit: usize, top: usize) {
    let lo = limit.next_multiple_of(HUGE_PAGE);
    let hi = (top.saturating_sub(HUGE_PAGE) / HUGE_PAGE) * HUGE_PAGE;
    if hi > lo {
        #[cfg(target_os = "linux")]
        // SAFETY: advice on part of this thread's own stack mapping, below
        // the frames in use; it changes no contents.
        unsafe {
            madvise(lo as *mut u8, hi - lo, MADV_HUGEPAGE);
        }
    }
}

/// Records the top of the stack compiled code runs on: the collector scans
/// from its own frame up to here.
pub fn set_stack_top(top: usize) {
    HEAP.get().stack_top = top;
}

fn out_of_memory() -> ! {
    fail(&[b"error: out of memory"])
}

/// Memory from the C library, or the end of the program.
fn sys_alloc(n: usize) -> *mut u8 {
    // SAFETY: plain C allocation; the result is checked for null.
    let p = unsafe { malloc(n) };
    if p.is_null() {
        out_of_memory();
    }
    p
}

/// `bytes` (a multiple of `CHUNK_BYTES`) of fresh zeroed memory starting
/// at a multiple of `align` (a multiple of `CHUNK_BYTES`), or the end of
/// the program.
fn sys_alloc_aligned(bytes: usize, align: usize) -> usize {
    sys_map_aligned(bytes, align, 0).unwrap_or_else(|| out_of_memory())
}

/// As [`sys_alloc_aligned`], or `None` if the system has no such mapping
/// to give: mapped with room to align, the excess unmapped.
fn sys_map_aligned(bytes: usize, align: usize, flags: i32) -> Option<usize> {
    let len = bytes + align;
    // SAFETY: an anonymous private mapping asks for no existing memory;
    // the result is checked for failure.
    let p = unsafe {
        mmap(
            core::ptr::null_mut(),
            len,
            PROT_READ_WRITE,
            MAP_PRIVATE_ANON | flags,
            -1,
            0,
        )
    };
    if p as isize == -1 || p.is_null() {
        return None;
    }
    let p = p as usize;
    let start = p.next_multiple_of(align);
    // SAFETY: both ranges lie within the mapping just made, are page
    // aligned (CHUNK_BYTES is a multiple of the page size) and hold
    // nothing yet.
    unsafe {
        if start > p {
            munmap(p as *mut u8, start - p);
        }
        if p + len > start + bytes {
            munmap((start + bytes) as *mut u8, p + len - (start + bytes));
        }
    }
    Some(start)
}

/// `n` zeroed bytes from the C library, or the end of the program.
fn sys_alloc_zeroed(n: usize) -> *mut u8 {
    extern "C" {
        fn calloc(n: usize, size: usize) -> *mut u8;
    }
    // SAFETY: plain C allocation; the result is checked for null.
    let p = unsafe { calloc(n, 1) };
    if p.is_null() {
        out_of_memory();
    }
    p
}

/// Pushes `v` on a growable array of words (pointer, length, capacity),
/// doubling it (to at least `min` words) when full.
#[inline]
fn push_word((buf, len, cap): (&mut *mut usize, &mut usize, &mut usize), min: usize, v: usize) {
    if *len == *cap {
        *cap = (*cap * 2).max(min);
        *buf = sys_grow(*buf, *cap);
    }
    // SAFETY: `len < cap`, and the array has room for `cap` words.
    unsafe { buf.add(*len).write(v) };
    *len += 1;
}

fn sys_grow<T>(p: *mut T, cap: usize) -> *mut T {
    // SAFETY: `p` is null or was returned by malloc/realloc; the result is
    // checked for null.
    let q = unsafe { realloc(p as *mut u8, cap * core::mem::size_of::<T>()) } as *mut T;
    if q.is_null() {
        out_of_memory();
    }
    q
}

impl Heap {
    fn chunk(&self, i: usize) -> &Chunk {
        debug_assert!(i < self.len);
        // SAFETY: `i < len <= cap` and `chunks` holds `len` initialised
        // chunks; the heap is touched by one thread only.
        unsafe { &*self.chunks.add(i) }
    }

    fn chunk_mut(&mut self, i: usize) -> &mut Chunk {
        debug_assert!(i < self.len);
        // SAFETY: as in `chunk`, and `&mut self` makes it exclusive.
        unsafe { &mut *self.chunks.add(i) }
    }

    /// A new chunk for cells of `cell` bytes; returns its index.
    /// `bytes` (a multiple of `CHUNK_BYTES`) from the current arena, or
    /// from a new one (of at least [`ARENA_BYTES`], aligned to and
    /// advised as huge pages).
    fn arena_alloc(&mut self, bytes: usize) -> usize {
        if self.arena_end - self.arena < bytes {
            let len = bytes.max(ARENA_BYTES).next_multiple_of(HUGE_PAGE);
            let start = map_huge(len) as usize;
            if start == 0 {
                // Under a tight address-space cap, a chunk of its own.
                return sys_alloc_aligned(bytes, CHUNK_BYTES);
            }
            self.arena = start;
            self.arena_end = start + len;
        }
        let p = self.arena;
        self.arena += bytes;
        p
    }

    fn add_chunk(&mut self, cell: usize) -> usize {
        // A cell of the last class is alone in its chunk (`Heap::alloc`,
        // and the sweep gives the chunk back when it dies), which is then
        // no larger than it: a chunk of cells of 32 to 256 KB cut for
        // many held one, and a huge page of the arena made each cost a
        // megabyte of memory (LSTM's gradient: 2.3 GB for 126 MB live).
        let alone = cell > CHUNK_BYTES / 4 || cell / 8 >= CLASSES - 1;
        let (bytes, owned) = if alone {
            (cell, cell.next_multiple_of(CHUNK_BYTES))
        } else {
            (CHUNK_BYTES - CHUNK_BYTES % cell, CHUNK_BYTES)
        };
        let spare = self
            .spare_large
            .iter_mut()
            .find(|s| s.1 == owned && alone)
            .map(|s| core::mem::take(s).0);
        let start = if let Some(start) = spare {
            start
        } else if alone && cell >= HUGE_PAGE || self.heap_bytes >= HUGE_AFTER && !alone {
            // An object of a huge page or more is mostly touched whatever
            // the heap's size: a gradient over 10^6 reals faulted its 8 MB
            // vector in 4 KiB at a time, a fifth of its page faults.
            self.arena_alloc(owned)
        } else {
            sys_alloc_aligned(owned, CHUNK_BYTES)
        };
        self.heap_bytes += bytes;
        self.heap_peak = self.heap_peak.max(self.heap_bytes);
        let cells = bytes / cell;
        let words = cells.div_ceil(64);
        let marks = sys_alloc(words * 8) as *mut u64;
        // SAFETY: `marks` has room for `words` u64s.
        unsafe { core::ptr::write_bytes(marks, 0, words) };
        // The index of a chunk given back (its bitmap freed), or a new one.
        let i = if self.dead_len > 0 {
            self.dead_len -= 1;
            // SAFETY: `dead_len < dead_cap` was a filled slot, the index of
            // a released chunk, whose bitmap came from `malloc` and is
            // replaced below.
            unsafe {
                let i = *self.dead.add(self.dead_len);
                free(self.chunk(i).marks as *mut u8);
                i
            }
        } else {
            if self.len == self.cap {
                self.cap = (self.cap * 2).max(64);
                self.chunks = sys_grow(self.chunks, self.cap);
            }
            self.len += 1;
            self.len - 1
        };
        // SAFETY: `i < len <= cap`: a slot of the array.
        unsafe {
            self.chunks.add(i).write(Chunk {
                start,
                end: start + bytes,
                cell,
                recip: reciprocal(cell),
                used: start,
                next: start,
                stop: start,
                next_partial: 0,
                marks,
                limit: start + bytes,
                mark_words: words,
            });
        }
        let Ok(owner) = u32::try_from(i + 1) else {
            out_of_memory()
        };
        self.own_granules(i, owner);
        i
    }

    /// Records that chunk `i` owns the granules it covers (`owner` =
    /// `i + 1`), or that they are owned no more (`owner` = 0).
    fn own_granules(&mut self, i: usize, owner: u32) {
        let c = *self.chunk(i);
        let (first, last) = (c.start / CHUNK_BYTES, (c.limit - 1) / CHUNK_BYTES);
        if last / RADIX_LEAF >= RADIX_TOP {
            fail(&[b"error: internal error: the heap was given memory above 2^48"]);
        }
        if self.granules.is_null() {
            self.granules = sys_alloc_zeroed(RADIX_TOP * 8) as *mut *mut u32;
        }
        for g in first..=last {
            // SAFETY: `g / RADIX_LEAF < RADIX_TOP` (checked above), and a
            // leaf has `RADIX_LEAF` entries.
            unsafe {
                let top = self.granules.add(g / RADIX_LEAF);
                if (*top).is_null() {
                    *top = sys_alloc_zeroed(RADIX_LEAF * 4) as *mut u32;
                }
                (*top).add(g % RADIX_LEAF).write(owner);
            }
        }
        if owner != 0 {
            self.lo = self.lo.min(c.start);
            self.hi = self.hi.max(c.limit);
        }
    }

    /// The chunk holding address `p`, if any.
    #[inline]
    fn find(&self, p: usize) -> Option<usize> {
        if p < self.lo || p >= self.hi {
            return None;
        }
        let g = p / CHUNK_BYTES;
        // SAFETY: `lo < hi` only once a chunk, hence the top level,
        // exists, and `p < hi <= 2^48` keeps the index within it; a leaf
        // has `RADIX_LEAF` entries.
        let owner = unsafe {
            let leaf = *self.granules.add(g / RADIX_LEAF);
            if leaf.is_null() {
                return None;
            }
            *leaf.add(g % RADIX_LEAF)
        };
        let i = (owner as usize).checked_sub(1)?;
        if p >= self.chunk(i).end {
            return None;
        }
        Some(i)
    }

    fn alloc(&mut self, bytes: usize) -> *mut u8 {
        let words = bytes.div_ceil(8).max(1);
        let cell = words * 8;
        let class = words.min(CLASSES - 1);
        self.since += cell;
        if let Some(p) = self.refill(class, cell) {
            return p;
        }
        let here = core::ptr::addr_of!(words) as usize;
        let stack = self.stack_top.saturating_sub(here);
        if self.since > self.allowance(stack) {
            self.collect();
            if let Some(p) = self.refill(class, cell) {
                return p;
            }
        }
        let i = self.add_chunk(cell);
        if words < CLASSES - 1 {
            self.filling[class] = i + 1;
        }
        let c = self.chunk_mut(i);
        c.stop = c.end;
        let p = c.next;
        c.next += cell;
        c.used = c.next;
        p as *mut u8
    }

    /// The bytes to allocate after the last collection before the next,
    /// with the stack `stack` bytes deep (which that one would scan): a
    /// multiple ([`Heap::growth`]) of the live cells (at most
    /// [`MAX_CELL_ALLOWANCE`] or a quarter of them) and the stack, so
    /// that the work of tracing and scanning them is paid for by the
    /// allocation, and half the bytes of the live large objects
    /// (vectors), which cost a collection little to trace: the heap
    /// grows by half what they take, no more.
    fn allowance(&self, stack: usize) -> usize {
        (self.bought + self.growth * stack / 100).max(MIN_TRIGGER)
    }

    /// [`Heap::bought`], after a collection that found `live` bytes live,
    /// `cells` of them in cells.
    fn buy(&mut self, live: usize, cells: usize) {
        let by_cells = (self.growth * cells / 100).min(MAX_CELL_ALLOWANCE.max(cells / 4));
        self.bought = by_cells + (live - cells) / 2;
    }

    /// A cell of `cell` bytes from memory the heap already has: the run
    /// being bumped, the next run of the chunk being filled, a chunk with
    /// holes, or an empty chunk.
    fn refill(&mut self, class: usize, cell: usize) -> Option<*mut u8> {
        if class == CLASSES - 1 {
            return None;
        }
        loop {
            if let Some(p) = self.bump(class, cell) {
                return Some(p);
            }
            let f = self.filling[class];
            if f != 0 && self.next_run(f - 1) {
                continue;
            }
            let next = if self.partial[class] != 0 {
                let start = self.partial[class];
                let i = self.find(start)?;
                self.partial[class] = self.chunk(i).next_partial;
                Some(i)
            } else {
                self.take_empty(cell)
            };
            // A library's chunks kept empty from earlier calls.
            #[cfg(vlad_lib)]
            let next = next.or_else(|| self.spare(cell));
            self.filling[class] = next? + 1;
        }
    }

    /// Moves chunk `i`'s run to the next run of cells that are free: not
    /// marked by the last collection, or never handed out. False when the
    /// chunk has none left.
    fn next_run(&mut self, i: usize) -> bool {
        let c = *self.chunk(i);
        let total = (c.end - c.start) / c.cell;
        // Cells from `high` on were never handed out: free, whatever
        // their bits say (they are clear).
        let high = (c.used - c.start) / c.cell;
        // The first cell at or after `n` below `high` whose mark bit is
        // `bit`, a word of the bitmap at a time; `high` if none.
        let seek = |mut n: usize, bit: bool| -> usize {
            while n < high {
                // SAFETY: `n < high <= total`: the bitmap covers it.
                let word = unsafe { *c.marks.add(n / 64) };
                let rest = (if bit { word } else { !word }) >> (n % 64);
                if rest != 0 {
                    return (n + rest.trailing_zeros() as usize).min(high);
                }
                n = (n / 64 + 1) * 64;
            }
            high
        };
        let from = (c.stop - c.start) / c.cell;
        let n = if from < high { seek(from, false) } else { from };
        if n >= total {
            return false;
        }
        let m = if n < high { seek(n + 1, true) } else { total };
        // A run that reaches `high` goes on to the end.
        let m = if m >= high { total } else { m };
        let c = self.chunk_mut(i);
        c.next = c.start + n * c.cell;
        c.stop = c.start + m * c.cell;
        true
    }

    /// An empty chunk for cells of `cell` bytes (`release_all` keeps
    /// them).
    #[cfg(vlad_lib)]
    fn spare(&self, cell: usize) -> Option<usize> {
        (0..self.len).find(|&i| {
            let c = self.chunk(i);
            c.cell == cell && c.used == c.start
        })
    }

    /// An empty chunk from the pool, recut for cells of `cell` bytes; its
    /// index.
    fn take_empty(&mut self, cell: usize) -> Option<usize> {
        if self.empty_len == 0 {
            return None;
        }
        self.empty_len -= 1;
        // SAFETY: `empty_len < empty_cap` was a filled slot.
        let start = unsafe { *self.empty.add(self.empty_len) };
        let i = self.find(start)?;
        let mut c = *self.chunk(i);
        let bytes = c.limit - c.start;
        let words = (bytes / cell).div_ceil(64);
        if words > c.mark_words {
            c.marks = sys_grow(c.marks, words);
            c.mark_words = words;
        }
        // SAFETY: the bitmap has room for `words` u64s.
        unsafe { core::ptr::write_bytes(c.marks, 0, words) };
        c.cell = cell;
        c.recip = reciprocal(cell);
        c.end = c.start + bytes - bytes % cell;
        c.used = c.start;
        c.next = c.start;
        c.stop = c.start;
        *self.chunk_mut(i) = c;
        Some(i)
    }

    fn push_empty(&mut self, start: usize) {
        push_word(
            (&mut self.empty, &mut self.empty_len, &mut self.empty_cap),
            64,
            start,
        );
    }

    /// A cell from the run of the chunk being filled for this size, if it
    /// has room.
    fn bump(&mut self, class: usize, cell: usize) -> Option<*mut u8> {
        let f = self.filling[class];
        if f == 0 || class == CLASSES - 1 {
            return None;
        }
        let c = self.chunk_mut(f - 1);
        if c.cell != cell || c.stop - c.next < cell {
            return None;
        }
        let p = c.next;
        c.next += cell;
        c.used = c.used.max(c.next);
        Some(p as *mut u8)
    }
}

/// Ordinary chunks a library keeps between calls, at most (bytes).
#[cfg(vlad_lib)]
const KEEP_BYTES: usize = 256 << 20;

/// Gives back every cell: the end of a library call, when no cell is
/// reachable any more (the results were copied out as reals). Ordinary
/// chunks (up to [`KEEP_BYTES`]) are kept, emptied, for the next calls
/// (`spare`): a call that builds a tape would otherwise fault in fresh
/// pages every time; oversized ones are unmapped. Also after a
/// call left by an error, perhaps in the middle of a collection: nothing
/// here depends on the state that was left.
#[cfg(vlad_lib)]
pub fn release_all() {
    let h = HEAP.get();
    let (mut kept, mut bytes) = (0, 0);
    h.lo = usize::MAX;
    h.hi = 0;
    // Every chunk's granules are owned by none, then each kept one's by
    // its new index.
    for i in 0..h.len {
        h.own_granules(i, 0);
    }
    for i in 0..h.len {
        let mut c = *h.chunk(i);
        let size = c.end - c.start;
        if c.cell / 8 < CLASSES - 1
            && size == CHUNK_BYTES - CHUNK_BYTES % c.cell
            && bytes + size <= KEEP_BYTES
        {
            c.marks().fill(0);
            c.used = c.start;
            c.next = c.start;
            c.stop = c.start;
            // SAFETY: `kept <= i < len`: the slot is initialised.
            unsafe { h.chunks.add(kept).write(c) };
            h.own_granules(kept, kept as u32 + 1);
            kept += 1;
            bytes += size;
        } else {
            // A large object's mapping is kept as a spare for the next
            // calls, as the ordinary chunks are: the gradient of
            // log-sum-exp over 1.28 million reals (GradBench's lse) faulted
            // in its vectors afresh every call, a quarter of its time.
            let owned = (c.limit - c.start).next_multiple_of(CHUNK_BYTES);
            let touched = size.next_multiple_of(4096).min(owned);
            let spared: usize = h.spare_large.iter().map(|s| s.2).sum();
            let large = c.cell > CHUNK_BYTES / 4 || c.cell / 8 >= CLASSES - 1;
            let slot = h.spare_large.iter().position(|s| s.1 == 0);
            let keep = large && !c.is_released() && spared + touched <= KEEP_BYTES;
            // SAFETY: the chunk's memory was mapped whole granules at a
            // time by `add_chunk` and its bitmap came from `malloc`; both
            // are given back once (or the mapping kept as a spare, which
            // only `add_chunk` takes): the chunk leaves the list.
            unsafe {
                match slot.filter(|_| keep) {
                    Some(k) => h.spare_large[k] = (c.start, owned, touched, h.collections),
                    None if !c.is_released() => {
                        munmap(c.start as *mut u8, owned);
                    }
                    None => {}
                }
                free(c.marks as *mut u8);
            }
        }
    }
    h.len = kept;
    for w in 1..BUMP_WORDS {
        set_bump_entries(w, 0, 0);
    }
    h.filling = [0; CLASSES];
    h.partial = [0; CLASSES];
    h.empty_len = 0;
    h.since = 0;
    h.live = 0;
    h.bought = 0;
    h.growth = 200;
    h.full_next = true;
    h.full_live = 0;
    h.stack_len = 0;
    h.heap_bytes = bytes;
    h.building_len = 0;
    h.filled_len = 0;
    h.dead_len = 0;
}

/// Where compiled code allocates small cells without a call: for cells of
/// `w` words, `rt_bump[bump_slot(w)]` is the next free address and the
/// next entry the end of the region (both 0: no region; compiled code
/// then calls [`rt_alloc`]). A region is the rest of the run of its size's
/// filling chunk, whose `next` lags behind what compiled code bumped until
/// the runtime takes the region back (`Heap::sync_in`): at every
/// `rt_alloc` of that size and before a collection.
#[no_mangle]
pub static mut rt_bump: [usize; 2 * BUMP_WORDS] = [0; 2 * BUMP_WORDS];

/// The entries of `rt_bump` for cells of `w` words.
fn bump_entries(w: usize) -> (usize, usize) {
    // SAFETY: compiled code and the runtime run on one thread (a library
    // serialises its calls), and compiled code is not running while the
    // runtime is.
    unsafe {
        let r = &raw const rt_bump;
        ((*r)[bump_slot(w)], (*r)[bump_slot(w) + 1])
    }
}

/// An object of `words` words (fewer than `BUMP_WORDS`) for the runtime
/// itself (`vector_sum.rs`): bumped through the region compiled code
/// bumps for that size, as compiled code does, else from `rt_alloc`.
pub(crate) fn alloc_small(words: usize) -> usize {
    let (next, end) = bump_entries(words);
    if next != 0 && end - next >= 8 * words {
        set_bump_entries(words, next + 8 * words, end);
        return next;
    }
    rt_alloc(8 * words) as usize
}

fn set_bump_entries(w: usize, next: usize, end: usize) {
    // SAFETY: as in `bump_entries`.
    unsafe {
        let r = &raw mut rt_bump;
        (*r)[bump_slot(w)] = next;
        (*r)[bump_slot(w) + 1] = end;
    }
}

impl Heap {
    /// Takes back the region of cells of `w` words: its chunk's `used`
    /// catches up with what compiled code bumped (and so does `used`),
    /// and those bytes count toward the next collection.
    fn sync_in(&mut self, w: usize) {
        self.catch_up(w);
        set_bump_entries(w, 0, 0);
    }

    /// [`Heap::sync_in`] but leaving the region to compiled code: the
    /// chunk's `used` covers what was bumped so far.
    fn catch_up(&mut self, w: usize) {
        let (next, _) = bump_entries(w);
        if next == 0 {
            return;
        }
        let f = self.filling[w];
        if f != 0 {
            let c = self.chunk_mut(f - 1);
            if c.next <= next && next <= c.stop {
                let grown = next - c.next;
                c.next = next;
                c.used = c.used.max(next);
                self.since += grown;
            }
        }
    }

    /// Gives compiled code the rest of the run of the filling chunk of
    /// cells of `w` words as its region.
    fn sync_out(&mut self, w: usize) {
        let f = self.filling[w];
        if f == 0 {
            return;
        }
        let c = *self.chunk(f - 1);
        if c.cell == 8 * w && c.next < c.stop {
            set_bump_entries(w, c.next, c.stop);
        }
    }
}

/// A union cell of `bytes` bytes, 8-byte aligned: what compiled code
/// calls when the cell does not fit its size's region, or is too large
/// for one.
#[no_mangle]
pub extern "C" fn rt_alloc(bytes: usize) -> *mut u8 {
    let h = HEAP.get();
    let words = bytes.div_ceil(8).max(1);
    if words < BUMP_WORDS {
        h.sync_in(words);
    }
    let p = h.alloc(bytes);
    if words < BUMP_WORDS {
        h.sync_out(words);
    }
    p
}

/// With `VLAD_GC_STATS` set in the environment, prints at exit on
/// standard error how many collections ran and how big the heap grew, so
/// that tests can check that memory stays bounded, and how many lookups
/// and insertions the memo tables of `zero` and `plus` had (`memo.rs`).
pub fn report() {
    // SAFETY: a NUL-terminated name; the result is only tested for null.
    if unsafe { getenv(c"VLAD_GC_STATS".as_ptr() as *const u8) }.is_null() {
        return;
    }
    let h = HEAP.get();
    let mut line = crate::Line::new();
    let _ = core::fmt::Write::write_fmt(
        &mut line,
        format_args!(
            "gc: {} collections ({} full), {} bytes of heap, {} bytes of stack scanned, {} bytes found live\n",
            h.collections, h.fulls, h.heap_peak, h.stack_scanned, h.live_marked
        ),
    );
    let (lookups, insertions) = crate::memo::counts();
    let _ = core::fmt::Write::write_fmt(
        &mut line,
        format_args!("memo: {lookups} lookups, {insertions} insertions\n"),
    );
    crate::write_all(2, line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs of a chunk, in the order `next_run` gives them, as cell
    /// numbers.
    fn runs(h: &mut Heap, i: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        while h.next_run(i) {
            let c = *h.chunk(i);
            out.push(((c.next - c.start) / c.cell, (c.stop - c.start) / c.cell));
            h.chunk_mut(i).next = c.stop;
        }
        out
    }

    #[test]
    fn cell_index_divides_exactly() {
        let mut c = Chunk {
            start: CHUNK_BYTES,
            end: 2 * CHUNK_BYTES,
            cell: 8,
            recip: 0,
            used: 0,
            next: 0,
            stop: 0,
            next_partial: 0,
            marks: core::ptr::null_mut(),
            limit: 0,
            mark_words: 0,
        };
        for cell in (8..=CHUNK_BYTES / 4).step_by(8) {
            c.cell = cell;
            c.recip = reciprocal(cell);
            let last = CHUNK_BYTES / cell - 1;
            for n in [0, 1, last / 2, last.saturating_sub(1), last] {
                for off in [0, 1, 7, cell - 1] {
                    let p = c.start + n * cell + off;
                    assert_eq!(
                        c.cell_index(p),
                        n,
                        "cell {cell}, address {n} * {cell} + {off}"
                    );
                }
            }
        }
    }

    #[test]
    fn runs_are_the_unmarked_cells_then_the_untouched_tail() {
        let mut h = Heap::EMPTY;
        let i = h.add_chunk(16);
        let c = *h.chunk(i);
        let total = (c.end - c.start) / 16;
        // 200 cells handed out; 3-4, 64 and 130-198 survived a collection.
        h.chunk_mut(i).used = c.start + 200 * 16;
        let live = [3, 4, 64].into_iter().chain(130..199);
        for n in live {
            // SAFETY: `n < total`: the bitmap covers it.
            unsafe { *c.marks.add(n / 64) |= 1 << (n % 64) };
        }
        assert_eq!(runs(&mut h, i), [(0, 3), (5, 64), (65, 130), (199, total)]);
        // Exhausted: no run until a collection.
        assert!(!h.next_run(i));
        // Every cell handed out survived: only the tail is free.
        h.chunk_mut(i).stop = c.start;
        h.chunk_mut(i).used = c.start + 128 * 16;
        // SAFETY: the bitmap covers the first 128 cells.
        unsafe {
            *c.marks = u64::MAX;
            *c.marks.add(1) = u64::MAX
        };
        assert_eq!(runs(&mut h, i), [(128, total)]);
        // A fresh chunk is one run.
        let j = h.add_chunk(24);
        let total = (h.chunk(j).end - h.chunk(j).start) / 24;
        assert_eq!(runs(&mut h, j), [(0, total)]);
    }
}
