//! The memo tables of `zero` and `plus` (`fir::Op::MemoGet`,
//! `fir::Op::MemoPut`): what a union map gave for the cells it has
//! already walked, so that a structure reached twice (shared, as the
//! sensitivities of reverse mode are) is walked once, as the interpreter
//! walks it.
//!
//! One open-addressing hash table holds every table's entries, keyed by
//! (table, first cell, second cell or 0). The collector empties it at each
//! collection (`forget`): a collection may free a cell named in a key and
//! hand its memory out again, and the table must never keep a cell alive
//! or name a freed one. Forgetting only costs walking again.

#![cfg_attr(test, allow(dead_code))]

use crate::Global;

extern "C" {
    fn calloc(n: usize, size: usize) -> *mut u8;
    fn free(p: *mut u8);
}

/// (table, first cell, second cell, result); a table of 0 marks a free
/// slot (table numbers start at 0, so they are stored plus one).
type Entry = [usize; 4];

struct Memo {
    slots: *mut Entry,
    /// A power of two, or 0 before the first entry.
    cap: usize,
    /// 64 minus the base-2 logarithm of `cap`: a hash shifted right by
    /// it is a slot. Kept rather than derived from `cap` at each lookup
    /// (grow-hvp-fr: 2.6% more instructions in all when derived).
    shift: u32,
    len: usize,
    /// Lookups and insertions since the program started, for
    /// `VLAD_GC_STATS` ([`counts`]).
    lookups: usize,
    insertions: usize,
}

static MEMO: Global<Memo> = Global::new(Memo {
    slots: core::ptr::null_mut(),
    cap: 0,
    shift: 64,
    len: 0,
    lookups: 0,
    insertions: 0,
});

/// The slots of the cells of one page of `a` lie in a window of this
/// many, in the order of the cells: a walk over a structure allocated in
/// sequence (a tape, a list, their sensitivities) then reads the table
/// in sequence too.
const WINDOW: usize = 2048;

/// How far apart the slots of neighbouring places of a page lie.
const SPREAD: usize = WINDOW / 512;

/// The slot of a key in a table of `1 << (64 - shift)` slots.
fn slot_of(shift: u32, table: usize, a: usize, b: usize) -> usize {
    // The page of `a` (with `b` and the table) picks where the window
    // starts, by the product's top bits (Fibonacci hashing), which every
    // bit of the key reaches; `a`'s place in its page picks the slot in
    // the window. A slot from all of `a` hashed scattered the cells of one
    // walk over the whole table: at a million cells each lookup missed
    // the cache (hvp-rr: 75% of `rt_memo_get` on its first load; 20% less
    // time in all at 10^6, 12% less at 10^3). Cells are 8-byte aligned and
    // at least 16 bytes apart, so the 512 places of a page are spread
    // `SPREAD` slots apart: packed at 1 or 2 apart, the windows of a few pages
    // that overlap filled past the table's load and the probe sequences
    // grew (grow-hvp-rr: 4.3 and 1.6 times the instructions in lookups).
    let page = (a >> 12) ^ (b >> 3).rotate_left(29) ^ table.rotate_left(47);
    let base = page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift;
    base.wrapping_add(((a >> 3) & 511) * SPREAD)
}

/// A zeroed table of `cap` entries (all slots free). A large one is its
/// own mapping, advised as huge pages (`gc::map_huge`): a table of 2^21
/// entries is 64 MiB, faulted in 4 KiB at a time as lookups land on it.
fn table_alloc(cap: usize) -> *mut Entry {
    let bytes = cap * core::mem::size_of::<Entry>();
    let p = if bytes >= crate::gc::HUGE_PAGE {
        crate::gc::map_huge(bytes)
    } else {
        // SAFETY: plain C allocation, zeroed; checked below.
        unsafe { calloc(cap, core::mem::size_of::<Entry>()) }
    };
    if p.is_null() {
        crate::fail(&[b"error: out of memory"]);
    }
    p as *mut Entry
}

/// Gives back a table [`table_alloc`] made for `cap` entries.
fn table_free(p: *mut Entry, cap: usize) {
    let bytes = cap * core::mem::size_of::<Entry>();
    if bytes >= crate::gc::HUGE_PAGE {
        crate::gc::unmap_huge(p as *mut u8, bytes);
    } else {
        // SAFETY: allocated by `calloc` in `table_alloc`, no longer used.
        unsafe { free(p as *mut u8) };
    }
}

impl Memo {
    #[allow(clippy::mut_from_ref)]
    fn slot(&self, i: usize) -> &mut Entry {
        debug_assert!(i < self.cap);
        // SAFETY: `i < cap` and `slots` holds `cap` entries; one thread,
        // and no two of these references are alive at once.
        unsafe { &mut *self.slots.add(i) }
    }

    /// The slot holding the key, or the free slot where it would go.
    fn find(&self, key: [usize; 3]) -> usize {
        let mask = self.cap - 1;
        let mut i = slot_of(self.shift, key[0], key[1], key[2]) & mask;
        loop {
            let e = self.slot(i);
            if e[0] == 0 || e[..3] == key {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    fn get(&mut self, key: [usize; 3]) -> usize {
        self.lookups += 1;
        if self.len == 0 {
            return 0;
        }
        let e = self.slot(self.find(key));
        if e[0] == 0 {
            0
        } else {
            e[3]
        }
    }

    fn put(&mut self, key: [usize; 3], r: usize) {
        self.insertions += 1;
        if 2 * (self.len + 1) > self.cap {
            self.grow();
        }
        let i = self.find(key);
        if self.slot(i)[0] == 0 {
            self.len += 1;
        }
        *self.slot(i) = [key[0], key[1], key[2], r];
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let old = (self.slots, self.cap);
        let cap = (self.cap * 2).max(1024);
        let slots = table_alloc(cap);
        self.slots = slots;
        self.cap = cap;
        self.shift = 64 - cap.trailing_zeros();
        // The keys are distinct and the new table has room for all: each
        // goes to the first free slot of its probe sequence, without the
        // comparisons of `find`.
        let mask = cap - 1;
        for i in 0..old.1 {
            // SAFETY: `i` is below the old capacity.
            let e = unsafe { *old.0.add(i) };
            if e[0] != 0 {
                let mut k = slot_of(self.shift, e[0], e[1], e[2]) & mask;
                while self.slot(k)[0] != 0 {
                    k = (k + 1) & mask;
                }
                *self.slot(k) = e;
            }
        }
        if !old.0.is_null() {
            table_free(old.0, old.1);
        }
    }

    fn forget(&mut self) {
        if self.len > 0 {
            // SAFETY: `slots` holds `cap` entries.
            unsafe { core::ptr::write_bytes(self.slots, 0, self.cap) };
            self.len = 0;
        }
    }
}

/// Empties every table (the collector calls this at each collection).
pub fn forget() {
    MEMO.get().forget();
}

/// How many lookups and insertions the memo tables have had.
pub fn counts() -> (usize, usize) {
    let m = MEMO.get();
    (m.lookups, m.insertions)
}

/// What table `table` recorded for the key, or 0 (no cell) if nothing.
#[no_mangle]
pub extern "C" fn rt_memo_get(table: usize, a: usize, b: usize) -> usize {
    MEMO.get().get([table + 1, a, b])
}

/// Records `r` in table `table` for the key.
#[no_mangle]
pub extern "C" fn rt_memo_put(table: usize, a: usize, b: usize, r: usize) {
    MEMO.get().put([table + 1, a, b], r);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_until_forgotten() {
        let _globals = crate::TEST_GLOBALS.lock();
        for i in 0..5000usize {
            rt_memo_put(i % 3, 8 * i + 16, 8 * (i % 7), 8 * i + 1024);
        }
        for i in 0..5000usize {
            assert_eq!(rt_memo_get(i % 3, 8 * i + 16, 8 * (i % 7)), 8 * i + 1024);
        }
        assert_eq!(rt_memo_get(0, 8, 0), 0);
        // A different table is a different key.
        assert_eq!(rt_memo_get(1, 16, 0), 0);
        forget();
        assert_eq!(rt_memo_get(0, 16, 0), 0);
        let (lookups, insertions) = counts();
        assert!(lookups >= 5003 && insertions >= 5000);
    }
}
