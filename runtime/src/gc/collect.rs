//! The collector: marking from the program's stack and the registers
//! it may hold values in, through the cells' pointer slots (and the
//! vectors' elements' ones), then the
//! sweep that turns what no mark reached into runs to bump through, and
//! the choice of the next collection's kind (full or minor).
//! The heap's layout and its invariants are in the parent module.

use super::*;

impl Heap {
    pub(super) fn push(&mut self, p: usize) {
        push_word(
            (&mut self.stack, &mut self.stack_len, &mut self.stack_cap),
            1024,
            p,
        );
    }

    /// Marks the cell `p` points into, if it is one not marked yet, and
    /// returns its pointer slots (from, to) if it has any.
    #[inline]
    fn mark(&mut self, p: usize) -> Option<(usize, usize)> {
        let i = self.find(p)?;
        let c = *self.chunk(i);
        if p >= c.used {
            return None;
        }
        let n = c.cell_index(p);
        // SAFETY: `n` is a cell of this chunk, whose bitmap covers all.
        let word = unsafe { &mut *c.marks.add(n / 64) };
        let bit = 1u64 << (n % 64);
        if *word & bit != 0 {
            return None;
        }
        *word |= bit;
        // The cell's header says how many pointer slots lead it (codegen's
        // `Alloc`): its reals are never scanned, nor mistaken for
        // pointers. A free cell a stale word pointed at holds the header
        // of what it last held, hence the bound. A vector's header says
        // where the pointers of its elements are.
        let start = c.start + n * c.cell;
        // SAFETY: `start` is a cell below `used`: written when it was
        // handed out.
        let header = unsafe { core::ptr::read_volatile(start as *const u64) };
        // The three tags that are not a cell's are the largest: one test
        // for a cell.
        use crate::cell_layout::{SUM_BASE_AT, SUM_BYTES, SUM_ROWS_TAG, SUM_TAG, VECTOR_TAG};
        if header as u32 >= SUM_ROWS_TAG {
            match header as u32 {
                VECTOR_TAG => {
                    self.push_vector_slots(start, c.cell);
                    return None;
                }
                SUM_TAG => return Some((start + SUM_BASE_AT, start + SUM_BYTES)),
                // A one-hot's entry (an index and a row) follows its
                // pointers, in the same cell.
                _ => return Some((start + SUM_BASE_AT, start + c.cell.min(SUM_BYTES + 16))),
            }
        }
        let header = (header >> 32) as u32;
        let slots = ((header >> 1) as usize).min(c.cell / 8 - 1);
        (slots > 0).then_some((start + 8, start + 8 + 8 * slots))
    }

    /// Keeps "a marked object points only to marked ones" when the
    /// runtime writes `young` into `old` after making it (a sum's
    /// elements, made when first read; a row added to a sum's log in
    /// place): a minor collection would not trace `young` from an old
    /// `old`, so it is marked with it, and what it points to.
    pub(super) fn written_into(&mut self, old: usize, young: usize) {
        let Some(i) = self.find(old) else { return };
        let c = *self.chunk(i);
        if old >= c.used {
            return;
        }
        let n = c.cell_index(old);
        // SAFETY: `n` is a cell of this chunk, whose bitmap covers all.
        let word = unsafe { *c.marks.add(n / 64) };
        if word & (1u64 << (n % 64)) != 0 {
            // `young` may lie in the run compiled code bumps, past its
            // chunk's `used`, where marking ignores words.
            if let Some(j) = self.find(young) {
                let w = self.chunk(j).cell / 8;
                if w < BUMP_WORDS {
                    self.catch_up(w);
                }
            }
            match self.mark(young) {
                Some((from, to)) => self.scan(from, to),
                None => self.scan(0, 0),
            }
        }
    }

    /// Marks from every word in `[from, to)`, and from the slots of every
    /// cell newly marked, through the mark stack. The slots of a cell
    /// found by the range's last word are scanned next without the stack:
    /// the spine of a list or a tape (its last pointer slot) is followed
    /// in a loop, not pushed and popped cell by cell.
    pub(super) fn scan(&mut self, from: usize, to: usize) {
        // Both ends are multiples of 8 (a cell's slots are), so the loop
        // tests `a < to` alone.
        let (mut a, mut to) = ((from + 7) & !7, to & !7);
        loop {
            while a < to {
                // SAFETY: `[a, to)` is readable memory: the live part of
                // the program's stack, the saved values, or the slots of a
                // cell.
                let w = unsafe { core::ptr::read_volatile(a as *const usize) };
                let marked = self.mark(w);
                a += 8;
                if let Some((from, end)) = marked {
                    if a == to {
                        (a, to) = (from, end);
                    } else {
                        self.push(from);
                        self.push(end);
                    }
                }
            }
            if self.stack_len == 0 {
                return;
            }
            self.stack_len -= 2;
            // SAFETY: both slots were filled above.
            (a, to) = unsafe {
                (
                    *self.stack.add(self.stack_len),
                    *self.stack.add(self.stack_len + 1),
                )
            };
        }
    }

    pub(super) fn collect(&mut self) {
        // Every chunk's `used` must be up to date for marking and
        // sweeping.
        for w in 1..BUMP_WORDS {
            self.sync_in(w);
        }
        self.collections += 1;
        // A full collection starts from no marks. A minor one keeps the
        // last one's: an old cell is not traced again, as every cell it
        // points to is older still, hence marked too (cells are written
        // only when made; `memo` is forgotten below).
        let full = self.full_next;
        if full {
            self.fulls += 1;
            for i in 0..self.len {
                self.chunk(i).marks().fill(0);
            }
        }
        // The memo tables name cells this collection may free.
        crate::memo::forget();
        let regs = spill_registers();
        let here = core::ptr::addr_of!(regs) as usize;
        let mut stack_bytes = self.stack_top.saturating_sub(here);
        if self.stack_top > here {
            self.scan(here, self.stack_top);
        }
        // The values recursions made loops saved stand for the machine
        // stack's frames, and are scanned as those would have been.
        let (from, to) = crate::saves::live();
        if to > from {
            self.scan(from, to);
            stack_bytes += to - from;
        }
        self.scan_filled_vectors();
        // Sweep: a chunk with no cell marked goes back whole to the pool;
        // one with some keeps its marks, and its holes are bumped through
        // from its start (`next_run`). The filling chunks start afresh.
        self.filling = [0; CLASSES];
        self.partial = [0; CLASSES];
        self.empty_len = 0;
        let (mut live, mut cells) = (0, 0);
        for i in (0..self.len).rev() {
            let c = *self.chunk(i);
            let class = (c.cell / 8).min(CLASSES - 1);
            let marked: usize = c.marks().iter().map(|m| m.count_ones() as usize).sum();
            live += marked * c.cell;
            if class == CLASSES - 1 || c.cell > CHUNK_BYTES / 4 {
                // One object per chunk (`Heap::alloc`); none in a chunk
                // given back already.
                if marked == 0 && !c.is_released() {
                    self.release_large(i);
                }
                continue;
            }
            cells += marked * c.cell;
            let head = self.partial[class];
            let c = self.chunk_mut(i);
            c.next = c.start;
            c.stop = c.start;
            let start = c.start;
            if marked == 0 {
                c.used = start;
                self.push_empty(start);
            } else {
                c.next_partial = head;
                self.partial[class] = start;
            }
        }
        // What survived of the bytes allocated since the last collection
        // (an old cell that died in between, still marked after a minor
        // one, counts as surviving until the next full one).
        let survived = live.saturating_sub(self.live).min(self.since);
        self.growth = 200 + 200 * survived / self.since.max(1);
        self.since = 0;
        self.live = live;
        self.buy(live, cells);
        // Old cells that died stay marked until a full collection. One
        // runs once the marked bytes reach one and a half times what the
        // last one found live (at twice, a training loop whose minor
        // collections each kept a step's tape, dead by the next, let its
        // heap grow from 233 to 326 MB between 50 and 100 steps, as each
        // kept tape bought allocation; 241 MB at one and a half), or
        // whenever the live data are mostly large objects (an
        // eighth or less in cells): a vector of reals is marked without a
        // scan, so tracing them again costs little, and the large vectors
        // that died since are given back at once rather than kept until
        // the live data have doubled. Likewise when less than half of what
        // was allocated since the last one survived it and what the last
        // full one found live is at most half the allocation allowed
        // before the next: the program drops most of what it makes, so
        // much of what a minor collection would keep marked is dead (a
        // training step's tape), and tracing the rest again costs a
        // fraction of that allocation (softmax regression over 61,440
        // points: a heap of 101 MB after 10 steps, 147 MB after 50 and
        // 80; now 101 MB after each). A program whose record grows (a
        // forward sweep's) keeps what it makes, and its collections stay
        // minor: with this rule alone, det-gradient's were all full and
        // took 16% more instructions.
        if full {
            self.full_live = live;
        }
        let drops = self.growth < 300;
        self.full_next = 2 * live > 3 * self.full_live
            || 8 * cells <= live
            || (drops && 2 * self.full_live <= self.bought);
        self.stack_scanned += stack_bytes;
        self.live_marked += live;

        for w in 1..BUMP_WORDS {
            self.sync_out(w);
        }
    }
}

/// Copies the registers a caller may keep values in across a call into an
/// array on the stack, so that the stack scan sees them.
#[inline(never)]
fn spill_registers() -> [usize; 6] {
    #[allow(unused_mut)]
    let mut r = [0usize; 6];
    #[cfg(target_arch = "x86_64")]
    // SAFETY: only reads registers into locals.
    unsafe {
        core::arch::asm!(
            "mov {0}, rbx", "mov {1}, rbp", "mov {2}, r12",
            "mov {3}, r13", "mov {4}, r14", "mov {5}, r15",
            out(reg) r[0], out(reg) r[1], out(reg) r[2],
            out(reg) r[3], out(reg) r[4], out(reg) r[5],
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: only reads registers into locals.
    unsafe {
        core::arch::asm!(
            "mov {0}, x19", "mov {1}, x20", "mov {2}, x21",
            "mov {3}, x22", "mov {4}, x23", "mov {5}, x24",
            out(reg) r[0], out(reg) r[1], out(reg) r[2],
            out(reg) r[3], out(reg) r[4], out(reg) r[5],
        );
    }
    core::hint::black_box(r)
}
