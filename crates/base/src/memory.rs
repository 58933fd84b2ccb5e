//! The memory budget of the compiler and the interpreter: an allocator
//! that counts the bytes in use, refuses to pass a budget, and turns
//! exhaustion (of the budget or of the system) into `error: out of memory
//! while <phase>` and exit status 1, instead of Rust's abort with a
//! backtrace. The CLI installs it (`#[global_allocator]`) and sets the
//! budget; the analysis reads [`in_use`] to stop, positioned, before the
//! budget is reached.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

/// What the process is doing, for the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Phase {
    Starting,
    Reading,
    Analysing,
    Lowering,
    Compiling,
    Running,
}

impl Phase {
    const ALL: [Phase; 6] = [
        Phase::Starting,
        Phase::Reading,
        Phase::Analysing,
        Phase::Lowering,
        Phase::Compiling,
        Phase::Running,
    ];

    fn text(self) -> &'static [u8] {
        match self {
            Phase::Starting => b"starting",
            Phase::Reading => b"reading the program",
            Phase::Analysing => b"analysing the program",
            Phase::Lowering => b"lowering the program",
            Phase::Compiling => b"generating code",
            Phase::Running => b"running the program",
        }
    }
}

/// Bytes in use, as far as the threads have reported them: each thread
/// counts its own allocations in [`UNREPORTED`] and adds them here once
/// they pass [`SLACK`] either way, so that most allocations touch no
/// shared counter (two atomic operations per allocation were 10% of a
/// build's cycles). Signed, since one thread may free what another
/// allocated before that one reports it.
static IN_USE: AtomicIsize = AtomicIsize::new(0);
/// How far a thread's own count may run ahead of or behind [`IN_USE`].
const SLACK: isize = 64 << 10;
thread_local! {
    static UNREPORTED: Cell<isize> = const { Cell::new(0) };
}
/// The most bytes in use since the last [`reset_peak`].
static PEAK: AtomicUsize = AtomicUsize::new(0);
static BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);
static PHASE: AtomicUsize = AtomicUsize::new(Phase::Starting as usize);

/// Bytes allocated and not yet freed (through [`Budgeted`]), to within
/// [`SLACK`] per thread.
pub fn in_use() -> usize {
    IN_USE.load(Ordering::Relaxed).max(0) as usize
}

/// The most bytes in use since the last [`reset_peak`] (for
/// `--time-passes`, `crate::timing`).
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Restarts [`peak`] from the bytes in use now, returning the peak so far.
pub fn reset_peak() -> usize {
    PEAK.swap(in_use(), Ordering::Relaxed)
}

/// Makes [`peak`] at least `bytes` (restoring an outer measurement).
pub fn raise_peak(bytes: usize) {
    PEAK.fetch_max(bytes, Ordering::Relaxed);
}

/// The budget in bytes (`usize::MAX`: none).
pub fn budget() -> usize {
    BUDGET.load(Ordering::Relaxed)
}

pub fn set_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

pub fn set_phase(p: Phase) {
    PHASE.store(p as usize, Ordering::Relaxed);
}

/// The default budget: three quarters of the memory the process can
/// actually have, the smaller of physical memory and the address-space
/// cap (`None` where neither is known).
pub fn default_budget() -> Option<usize> {
    let physical = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| parse_mem_total(&m));
    let cap = crate::stack::address_space_limit();
    let available = match (physical, cap) {
        (Some(p), Some(c)) => p.min(c),
        (p, c) => p.or(c)?,
    };
    Some(available / 4 * 3)
}

fn parse_mem_total(meminfo: &str) -> Option<usize> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Reads a size such as `512M`, `2G`, `1500000K` or a number of bytes.
pub fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: usize = digits.parse().ok()?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

thread_local! {
    /// Output the program has written and that has not gone out yet
    /// (`run`'s standard output, [`PendingStdout`]): an exit for want of
    /// memory on the thread that wrote it writes it out before its
    /// message, as a compiled program's runtime does. A buffer of the
    /// thread, not behind a lock: a lock per write made a loop printing
    /// 200,000 reals 8% slower.
    static PENDING: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How many bytes [`PENDING`] holds before they go out.
const PENDING_BYTES: usize = 8192;

/// Standard output, buffered where an exit for want of memory finds it.
pub struct PendingStdout;

impl PendingStdout {
    fn drain(p: &mut Vec<u8>) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(p)?;
        p.clear();
        out.flush()
    }
}

impl Write for PendingStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            if p.capacity() == 0 {
                p.reserve(PENDING_BYTES);
            }
            p.extend_from_slice(buf);
            if p.len() >= PENDING_BYTES {
                Self::drain(&mut p)?;
            }
            Ok(buf.len())
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        PENDING.with(|p| Self::drain(&mut p.borrow_mut()))
    }
}

/// Writes out what [`PendingStdout`] holds on this thread, allocating
/// nothing: straight to the file descriptor, as everything before it was
/// flushed through `std::io::stdout`.
fn write_pending() {
    let _ = PENDING.try_with(|p| {
        let Ok(mut p) = p.try_borrow_mut() else {
            return;
        };
        #[cfg(unix)]
        {
            use std::os::fd::FromRawFd;
            // SAFETY: descriptor 1 is open for the whole process; the file
            // is never dropped, so it is not closed.
            let mut out = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
            let _ = out.write_all(&p);
        }
        #[cfg(not(unix))]
        let _ = std::io::stdout().write_all(&p);
        p.clear();
    });
}

/// Ends the process: the budget or the system's memory is exhausted.
fn out_of_memory() -> ! {
    let phase = Phase::ALL
        .get(PHASE.load(Ordering::Relaxed))
        .copied()
        .unwrap_or(Phase::Starting);
    write_pending();
    // Standard error is unbuffered: these writes allocate nothing.
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"error: out of memory while ");
    let _ = err.write_all(phase.text());
    let _ = err.write_all(b"\n");
    std::process::exit(1)
}

/// An allocator (`A`, the system's by default), counting the bytes in use
/// and keeping them within the budget.
pub struct Budgeted<A = System>(pub A);

impl<A> Budgeted<A> {
    fn reserve(&self, bytes: usize) {
        let Ok(bytes) = isize::try_from(bytes) else {
            out_of_memory()
        };
        let local = UNREPORTED.get().saturating_add(bytes);
        if local < SLACK {
            UNREPORTED.set(local);
            return;
        }
        UNREPORTED.set(0);
        let now = IN_USE
            .fetch_add(local, Ordering::Relaxed)
            .saturating_add(local)
            .max(0) as usize;
        if now > BUDGET.load(Ordering::Relaxed) {
            IN_USE.fetch_sub(local, Ordering::Relaxed);
            out_of_memory();
        }
        if now > PEAK.load(Ordering::Relaxed) {
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
    }

    fn release(&self, bytes: usize) {
        let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
        let local = UNREPORTED.get().saturating_sub(bytes);
        if local > -SLACK {
            UNREPORTED.set(local);
        } else {
            UNREPORTED.set(0);
            IN_USE.fetch_add(local, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards to `A` with the caller's layout and
// pointer unchanged, so `A`'s guarantees are the caller's; the counting
// touches only atomics, and a failure ends the process instead of
// returning null.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Budgeted<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.reserve(layout.size());
        // SAFETY: the caller's contract for `alloc` is `A`'s.
        let p = unsafe { self.0.alloc(layout) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.reserve(layout.size());
        // SAFETY: as for `alloc`.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `A` (through this allocator)
        // with `layout`, as the caller guarantees.
        unsafe { self.0.dealloc(ptr, layout) };
        self.release(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            self.reserve(new_size - layout.size());
        } else {
            self.release(layout.size() - new_size);
        }
        // SAFETY: the caller's contract for `realloc` is `A`'s.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read() {
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("2gib"), Some(2 << 30));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("10K"), Some(10 << 10));
        assert_eq!(parse_size("12X"), None);
        assert_eq!(parse_size("M"), None);
    }

    #[test]
    fn physical_memory_is_read() {
        let m = "MemTotal:       24576000 kB\nMemFree:         1000 kB\n";
        assert_eq!(parse_mem_total(m), Some(24576000 * 1024));
    }
}
