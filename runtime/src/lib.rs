//! The run-time library of compiled VLAD programs.
//!
//! `crates/codegen/build.rs` compiles this file with `rustc --crate-type
//! staticlib -C panic=abort` into `libruntime.a`, which `stalingrad build`
//! links (with the program's object, `cc` and `-lm`) into every executable.
//! It is `no_std`: a handful of C library calls (`read`, `write`, `exit`,
//! `mmap` for the chunks of the heap of union cells, `malloc` for its
//! tables) and the core-only modules of crate `base` (numerals, counters,
//! cell layout, message shortening, stack sizes, flushing), included from
//! the very same files, so that compiled programs read and print reals,
//! count and shorten values byte for byte as the interpreter does.
//!
//! What the generated code calls (C ABI):
//! - `rt_print_str(ptr, len)`, `rt_print_real(x)`, `rt_print_bool(b)`:
//!   buffered standard output, flushed at exit and before any error;
//! - `rt_read_real(msg_ptr, msg_len) -> f64`: the next whitespace-separated
//!   word of standard input as a VLAD numeral; `msg` is the end-of-input
//!   error message (see `fir::Op::ReadReal`);
//! - `rt_error(ptr, len)`: prints the message on standard error, exits 1;
//!   `rt_err_str`, `rt_err_real`, ..., `rt_err_end` do the same with a
//!   message assembled piece by piece, showing run-time values;
//! - `rt_alloc(bytes) -> ptr`: a union cell (see `fir::Op::Alloc`), from
//!   a heap with a conservative mark-sweep collector (`gc/`: the heap in
//!   `gc/mod.rs`, marking and sweeping in `gc/collect.rs`); compiled code
//!   bumps small cells inline through the regions of `rt_bump` and calls
//!   `rt_alloc` when one is used up;
//! - `rt_alloc_vector(shape, len) -> ptr`: a vector (see
//!   `fir::Op::VecOf`); `rt_vec_build_begin(v)` and `rt_vec_build_end(v)`
//!   bracket the filling of a vector with pointers by a `VecBuild`
//!   (`gc/vector.rs`);
//! - `rt_vec_zero(shape, len)`, `rt_vec_plus(a, b)` -> ptr: reverse
//!   mode's sums of vectors of reals (a one-hot, a sum of one addition,
//!   compiled code makes itself), and `rt_vec_dense(v) -> ptr`, the
//!   elements of a vector or a sum (`gc/vector_sum.rs`);
//! - `rt_stack_grow(buf, k, room) -> ptr`: a stack's buffer with room for more
//!   (`fir::Op::StackPush`, which compiled code makes inline while the
//!   buffer has room: `gc/stack.rs`);
//! - `rt_memo_get(table, a, b) -> ptr`, `rt_memo_put(table, a, b, r)`: the
//!   memo tables of `zero` and `plus` over union cells (`memo.rs`);
//! - `rt_saves`, `rt_saves_grow(bytes, which)`: the stacks of pointers
//!   and of reals saved by the recursions the FIR passes made loops,
//!   pushed and popped inline (`saves.rs`);
//! - `rt_counts`: the operation counters, incremented in place.
//!
//! What it calls: `vlad_main` (the program) and `vlad_count_ops` (a byte,
//! 1 when the program was compiled with counters), both defined by the
//! program's object file. The C `main` lives here.
//!
//! Single-threaded by construction: compiled VLAD programs have one thread.
//!
//! Built a second time with `--cfg vlad_lib` for libraries (`build
//! --lib`): no C `main`, no `vlad_main`; `read-real`, printing and errors
//! behave as `library.rs` says, and every call of an export begins and
//! ends there.

#![cfg_attr(not(test), no_std)]
// A library has no `main` and no standard input: what only they use is
// left unused there.
#![cfg_attr(vlad_lib, allow(dead_code, unused_imports))]

#[path = "../../crates/base/src/number_core.rs"]
#[allow(dead_code)]
mod number_core;

#[path = "../../crates/base/src/boolean.rs"]
mod boolean;

#[path = "../../crates/base/src/cell_layout.rs"]
#[allow(dead_code)]
mod cell_layout;

#[path = "../../crates/base/src/counters.rs"]
#[allow(dead_code)]
mod counters;

#[path = "../../crates/base/src/message.rs"]
#[allow(dead_code)]
mod message;

#[path = "../../crates/base/src/stack_sizes.rs"]
#[allow(dead_code)]
mod stack_sizes;

#[path = "../../crates/base/src/flush.rs"]
#[allow(dead_code)]
mod flush_policy;

mod gc;
#[cfg(vlad_lib)]
mod library;
mod memo;
mod saves;
#[cfg(all(not(test), not(vlad_lib), target_os = "linux"))]
mod stack_guard;

use core::cell::UnsafeCell;

extern "C" {
    fn write(fd: i32, buf: *const u8, n: usize) -> isize;
    fn read(fd: i32, buf: *mut u8, n: usize) -> isize;
    fn exit(code: i32) -> !;
}

#[cfg(all(not(test), not(vlad_lib)))]
extern "C" {
    fn vlad_main();
    static vlad_count_ops: u8;
}

/// A global touched only by the program's single thread.
#[repr(transparent)]
pub struct Global<T>(UnsafeCell<T>);

// SAFETY: compiled programs are single-threaded; no reference to the
// contents outlives one runtime call, and runtime calls do not nest.
unsafe impl<T> Sync for Global<T> {}

impl<T> Global<T> {
    const fn new(x: T) -> Global<T> {
        Global(UnsafeCell::new(x))
    }

    #[allow(clippy::mut_from_ref)]
    fn get(&self) -> &mut T {
        // SAFETY: see the `Sync` impl: one thread, and each runtime entry
        // point takes this reference for the length of the call only.
        unsafe { &mut *self.0.get() }
    }
}

// ---------------------------------------------------------------- output

const OUT_CAP: usize = 1 << 16;

struct Out {
    buf: [u8; OUT_CAP],
    len: usize,
    /// Is standard output a terminal: 1 yes, 0 no, -1 not asked yet.
    terminal: i8,
    /// When the buffer was last flushed (monotonic nanoseconds; 0: never).
    flushed_at: u64,
}

static OUT: Global<Out> = Global::new(Out {
    buf: [0; OUT_CAP],
    len: 0,
    terminal: -1,
    flushed_at: 0,
});

/// `struct timespec`.
#[cfg(not(test))]
#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

#[cfg(not(test))]
extern "C" {
    fn isatty(fd: i32) -> i32;
    fn clock_gettime(clock: i32, t: *mut Timespec) -> i32;
}

/// Monotonic time in nanoseconds.
#[cfg(not(test))]
fn now_ns() -> u64 {
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `t` is a valid, writable `struct timespec`; 1 is
    // CLOCK_MONOTONIC.
    unsafe { clock_gettime(1, &mut t) };
    (t.sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.nsec as u64)
}

#[cfg(test)]
fn now_ns() -> u64 {
    0
}

#[cfg(not(test))]
fn stdout_is_terminal() -> bool {
    // SAFETY: `isatty` only inspects the descriptor.
    unsafe { isatty(1) == 1 }
}

#[cfg(test)]
fn stdout_is_terminal() -> bool {
    false
}

/// Held by the unit tests that touch the runtime's global state (the memo
/// tables, which a collection forgets), which run on parallel threads.
#[cfg(test)]
static TEST_GLOBALS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes all of `bytes` to `fd`, giving up on an error (a closed pipe:
/// there is nobody left to tell).
fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a valid readable slice of the given length.
        let n = unsafe { write(fd, bytes.as_ptr(), bytes.len()) };
        if n <= 0 {
            if n < 0 && errno_is_eintr() {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

#[cfg(not(test))]
fn errno_is_eintr() -> bool {
    extern "C" {
        fn __errno_location() -> *mut i32;
    }
    // SAFETY: glibc and musl both provide `__errno_location`, returning a
    // valid pointer to the calling thread's errno.
    unsafe { *__errno_location() == 4 }
}

#[cfg(test)]
fn errno_is_eintr() -> bool {
    false
}

fn flush() {
    let out = OUT.get();
    write_all(1, &out.buf[..out.len]);
    out.len = 0;
}

fn print_bytes(bytes: &[u8]) {
    let out = OUT.get();
    if out.len + bytes.len() > OUT_CAP {
        flush();
        if bytes.len() > OUT_CAP {
            write_all(1, bytes);
            return;
        }
    }
    out.buf[out.len..out.len + bytes.len()].copy_from_slice(bytes);
    out.len += bytes.len();
    // Long runs show their progress (`base::flush`).
    if out.terminal < 0 {
        out.terminal = i8::from(stdout_is_terminal());
    }
    let flushed_at = out.flushed_at;
    if flush_policy::due(out.terminal == 1, bytes, || {
        now_ns().saturating_sub(flushed_at)
    }) {
        flush();
        OUT.get().flushed_at = now_ns();
    }
}

/// # Safety
/// `ptr` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rt_print_str(ptr: *const u8, len: usize) {
    // SAFETY: the caller passes a string of the program's object file.
    let s = unsafe { core::slice::from_raw_parts(ptr, len) };
    if CAPTURE.get().take(s) {
        return;
    }
    #[cfg(vlad_lib)]
    if library::capturing() {
        return;
    }
    print_bytes(s);
}

#[no_mangle]
pub extern "C" fn rt_print_real(x: f64) {
    let text = number_core::format_real(x);
    if CAPTURE.get().take(text.as_bytes()) {
        return;
    }
    #[cfg(vlad_lib)]
    if library::capture_real(x) {
        return;
    }
    print_bytes(text.as_bytes());
}

#[no_mangle]
pub extern "C" fn rt_print_bool(b: i32) {
    let text = boolean::text(b != 0);
    if CAPTURE.get().take(text.as_bytes()) {
        return;
    }
    print_bytes(text.as_bytes());
}

/// What printing writes between `rt_capture_start` and `rt_capture_end`
/// (`fir::Op::Capture`): parts of a value known only at run time that an
/// error message shows, each taken by an `rt_err_captured` in order.
struct Capture {
    on: bool,
    text: Line,
    /// Where each stretch ends in `text`.
    ends: [usize; CAPTURES],
    count: usize,
    taken: usize,
}

/// The most stretches one message shows (one per unknown part of a
/// value); more are shown empty.
const CAPTURES: usize = 16;

/// The most bytes of one stretch kept: a message shortens each value to
/// 120 bytes (`message::value_cut`).
const CAPTURE_BYTES: usize = 240;

static CAPTURE: Global<Capture> = Global::new(Capture {
    on: false,
    text: Line::new(),
    ends: [0; CAPTURES],
    count: 0,
    taken: 0,
});

impl Capture {
    /// Keeps `bytes` if a stretch is open; says whether one was.
    fn take(&mut self, bytes: &[u8]) -> bool {
        if !self.on {
            return false;
        }
        let start = self.count.checked_sub(1).map_or(0, |i| self.ends[i]);
        let room = (start + CAPTURE_BYTES).saturating_sub(self.text.len);
        self.text.push(&bytes[..bytes.len().min(room)]);
        true
    }
}

#[no_mangle]
pub extern "C" fn rt_capture_start() {
    CAPTURE.get().on = true;
}

#[no_mangle]
pub extern "C" fn rt_capture_end() {
    let c = CAPTURE.get();
    c.on = false;
    if c.count < CAPTURES {
        c.ends[c.count] = c.text.len;
        c.count += 1;
    }
}

/// Adds the next stretch captured to the message.
#[no_mangle]
pub extern "C" fn rt_err_captured() {
    let c = CAPTURE.get();
    if c.taken < c.count {
        let start = c.taken.checked_sub(1).map_or(0, |i| c.ends[i]);
        ERR_LINE.get().push(&c.text.buf[start..c.ends[c.taken]]);
        c.taken += 1;
    }
}

// ---------------------------------------------------------------- errors

/// Prints `msg` and a newline on standard error (after flushing standard
/// output, so the two interleave as in the interpreter), then the counters
/// if they were asked for, and exits with status 1.
fn fail(parts: &[&[u8]]) -> ! {
    let mut line = Line::new();
    for p in parts {
        line.push(p);
    }
    #[cfg(vlad_lib)]
    library::fail(line.as_bytes());
    #[cfg(not(vlad_lib))]
    fail_exit(line)
}

/// [`fail`] in a program.
#[cfg(not(vlad_lib))]
fn fail_exit(mut line: Line) -> ! {
    flush();
    line.push(b"\n");
    write_all(2, line.as_bytes());
    finish_counts();
    // SAFETY: `exit` is always safe to call; it does not return.
    unsafe { exit(1) }
}

/// # Safety
/// `ptr` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rt_error(ptr: *const u8, len: usize) -> ! {
    // SAFETY: the caller passes a string of the program's object file.
    let msg = unsafe { core::slice::from_raw_parts(ptr, len) };
    fail(&[msg])
}

/// The message of a run-time error that shows run-time values, assembled
/// by `rt_err_*` calls and printed by `rt_err_end`.
static ERR_LINE: Global<Line> = Global::new(Line::new());

/// # Safety
/// `ptr` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rt_err_str(ptr: *const u8, len: usize) {
    // SAFETY: the caller passes a string of the program's object file.
    let s = unsafe { core::slice::from_raw_parts(ptr, len) };
    ERR_LINE.get().push(s);
}

#[no_mangle]
pub extern "C" fn rt_err_real(x: f64) {
    ERR_LINE.get().push(number_core::format_real(x).as_bytes());
}

#[no_mangle]
pub extern "C" fn rt_err_bool(b: i32) {
    ERR_LINE.get().push(boolean::text(b != 0).as_bytes());
}

/// The position (`file:line:col`) of the innermost call from the user's
/// code that is running, set and restored around such calls by compiled
/// code; null when there is none.
#[no_mangle]
pub static mut rt_site_ptr: *const u8 = core::ptr::null();
#[no_mangle]
pub static mut rt_site_len: usize = 0;

/// Adds `file:line:col: ` of the current call site, if any, to the message.
#[no_mangle]
pub extern "C" fn rt_err_site() {
    // SAFETY: single-threaded; compiled code only ever stores the address
    // and length of one of its own strings (or restores a previous pair).
    let (ptr, len) = unsafe { (rt_site_ptr, rt_site_len) };
    if !ptr.is_null() {
        // SAFETY: see above: `ptr` points to `len` bytes of the program.
        let site = unsafe { core::slice::from_raw_parts(ptr, len) };
        err_site(site);
    }
}

/// Adds the position of `site` (`message::site_parts`) to the message
/// and keeps its note for the end.
fn err_site(site: &'static [u8]) {
    let (at, note) = message::site_parts(site);
    let line = ERR_LINE.get();
    line.push(at);
    line.push(b": ");
    *ERR_NOTE.get() = note;
}

/// The note on the derivatives in effect at the call site of the message
/// being assembled, which ends it.
static ERR_NOTE: Global<&'static [u8]> = Global::new(&[]);

/// `file:line:col: ` of a position given by compiled code (a callee
/// inlined at a call site, whose errors name that site).
///
/// # Safety
/// `ptr` and `len` must name bytes of the program, as for [`rt_err_str`].
#[no_mangle]
pub unsafe extern "C" fn rt_err_at(ptr: *const u8, len: usize) {
    // SAFETY: the caller passes a string of the program's object file.
    let site = unsafe { core::slice::from_raw_parts(ptr, len) };
    err_site(site);
}

/// Where the value being added to the error message began.
static ERR_VALUE_START: Global<usize> = Global::new(0);

/// Forgets a message being assembled and the call site: a library call
/// starts afresh after one that failed.
#[cfg(vlad_lib)]
fn reset_error_state() {
    ERR_LINE.get().len = 0;
    *ERR_VALUE_START.get() = 0;
    *ERR_NOTE.get() = &[];
    let c = CAPTURE.get();
    (c.on, c.text.len, c.count, c.taken) = (false, 0, 0, 0);
    // SAFETY: one call at a time; no compiled code is running.
    unsafe {
        rt_site_ptr = core::ptr::null();
        rt_site_len = 0;
    }
}

#[no_mangle]
pub extern "C" fn rt_err_value_start() {
    *ERR_VALUE_START.get() = ERR_LINE.get().len;
}

/// Shortens the value just added as the interpreter shortens values in
/// messages: past 120 bytes, to 117 and `...`.
#[no_mangle]
pub extern "C" fn rt_err_value_end() {
    let line = ERR_LINE.get();
    let start = *ERR_VALUE_START.get();
    if let Some(cut) = message::value_cut(&line.buf[start..line.len]) {
        line.len = start + cut;
        line.push(message::ELLIPSIS.as_bytes());
    }
}

#[no_mangle]
pub extern "C" fn rt_err_end() -> ! {
    let line = ERR_LINE.get();
    fail(&[line.as_bytes(), ERR_NOTE.get()])
}

/// A message line assembled before one `write`, so that it is not torn.
struct Line {
    buf: [u8; 4096],
    len: usize,
}

impl Line {
    const fn new() -> Line {
        Line {
            buf: [0; 4096],
            len: 0,
        }
    }
    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl core::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

// ----------------------------------------------------------------- input

const IN_CAP: usize = 1 << 16;
const WORD_CAP: usize = 1 << 16;

struct In {
    buf: [u8; IN_CAP],
    pos: usize,
    len: usize,
    eof: bool,
    word: [u8; WORD_CAP],
}

static IN: Global<In> = Global::new(In {
    buf: [0; IN_CAP],
    pos: 0,
    len: 0,
    eof: false,
    word: [0; WORD_CAP],
});

/// ASCII white space as Rust's `split_whitespace` (which the interpreter
/// uses) sees it.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

impl In {
    fn next_byte(&mut self) -> Option<u8> {
        if self.pos == self.len {
            if self.eof {
                return None;
            }
            // A program waiting for input shows what it printed first (a
            // prompt, the results so far).
            flush();
            loop {
                // SAFETY: `buf` is a valid writable buffer of `IN_CAP` bytes.
                let n = unsafe { read(0, self.buf.as_mut_ptr(), IN_CAP) };
                if n < 0 && errno_is_eintr() {
                    continue;
                }
                if n <= 0 {
                    self.eof = true;
                    return None;
                }
                self.pos = 0;
                self.len = n as usize;
                break;
            }
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Some(b)
    }

    /// The next word's length in `self.word` (truncated to `WORD_CAP`), or
    /// `None` at end of input.
    fn next_word(&mut self) -> Option<usize> {
        let mut b = self.next_byte()?;
        while is_space(b) {
            b = self.next_byte()?;
        }
        let mut n = 0;
        loop {
            if n < WORD_CAP {
                self.word[n] = b;
                n += 1;
            }
            match self.next_byte() {
                Some(c) if !is_space(c) => b = c,
                _ => return Some(n),
            }
        }
    }
}

/// # Safety
/// `msg` must point to `msg_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rt_read_real(msg: *const u8, msg_len: usize) -> f64 {
    // SAFETY: the caller passes a string of the program's object file.
    let msg = unsafe { core::slice::from_raw_parts(msg, msg_len) };
    #[cfg(vlad_lib)]
    {
        let _ = msg;
        library::read_real()
    }
    #[cfg(not(vlad_lib))]
    read_stdin(msg)
}

/// `read-real` in a program: the next word of standard input.
#[cfg(not(vlad_lib))]
fn read_stdin(msg: &[u8]) -> f64 {
    let input = IN.get();
    let n = match input.next_word() {
        Some(n) => n,
        None => fail_read(msg, &[msg]),
    };
    let word = &input.word[..n];
    if let Some(x) = core::str::from_utf8(word)
        .ok()
        .and_then(number_core::parse_numeral)
    {
        return x;
    }
    let head = msg
        .strip_suffix(message::END_OF_INPUT.as_bytes())
        .unwrap_or(msg);
    let [before, after] = message::NOT_A_NUMERAL;
    fail_read(msg, &[head, before.as_bytes(), word, after.as_bytes()])
}

/// Fails with `read-real`'s error `parts`, of its message `msg`; one
/// without a position of its own (`message::UNPLACED`) is placed at the
/// running call site.
#[cfg(not(vlad_lib))]
fn fail_read(msg: &[u8], parts: &[&[u8]]) -> ! {
    if !msg.starts_with(message::UNPLACED.as_bytes()) {
        fail(parts)
    }
    rt_err_site();
    for p in parts {
        ERR_LINE.get().push(p);
    }
    rt_err_end()
}

// -------------------------------------------------------------- counters

/// The counters in the slots of `base::counters`; generated code
/// increments `rt_counts[i]` in place.
#[no_mangle]
pub static rt_counts: Global<[u64; counters::SLOTS]> = Global::new([0; counters::SLOTS]);

/// Prints the counters as the interpreter's `--count-ops=json` does, if the
/// program was compiled with them.
fn finish_counts() {
    #[cfg(all(not(test), not(vlad_lib)))]
    {
        // SAFETY: a byte defined by the program's object file.
        if unsafe { vlad_count_ops } == 0 {
            return;
        }
    }
    let mut line = Line::new();
    let _ = counts_json(rt_counts.get(), &mut line);
    line.push(b"\n");
    write_all(2, line.as_bytes());
}

fn counts_json(c: &[u64; counters::SLOTS], out: &mut dyn core::fmt::Write) -> core::fmt::Result {
    counters::write_json(c, out)
}

// ------------------------------------------------------------------ main

// The program runs on a thread with the largest stack `stack_sizes`
// allows (address space; pages are only touched when used), as the CLI
// does: non-tail VLAD recursion is non-tail machine recursion. The stack
// check uses the size obtained.

/// `struct rlimit`: soft and hard limits.
#[cfg(all(not(test), not(vlad_lib)))]
#[repr(C)]
struct Rlimit {
    cur: u64,
    max: u64,
}

#[cfg(all(not(test), not(vlad_lib)))]
const RLIMIT_STACK: i32 = 3;
#[cfg(all(not(test), not(vlad_lib)))]
const RLIMIT_AS: i32 = 9;
#[cfg(all(not(test), not(vlad_lib)))]
const RLIM_INFINITY: u64 = u64::MAX;

/// The soft limit `resource` has, if any.
#[cfg(all(not(test), not(vlad_lib)))]
fn soft_limit(resource: i32) -> Option<usize> {
    let mut r = Rlimit { cur: 0, max: 0 };
    // SAFETY: `r` is a valid, writable `struct rlimit` for the call.
    let ok = unsafe { getrlimit(resource, &mut r) } == 0;
    (ok && r.cur != RLIM_INFINITY).then_some(r.cur as usize)
}

/// The size of the stack the program thread got (0: it runs on the main
/// thread).
#[cfg(all(not(test), not(vlad_lib)))]
static mut PROGRAM_STACK: usize = 0;

/// `pthread_attr_t` is 56 bytes on 64-bit glibc and musl.
#[cfg(all(not(test), not(vlad_lib)))]
#[repr(C, align(8))]
struct PthreadAttr([u8; 64]);

#[cfg(all(not(test), not(vlad_lib)))]
extern "C" {
    fn pthread_attr_init(attr: *mut PthreadAttr) -> i32;
    fn pthread_attr_setstacksize(attr: *mut PthreadAttr, size: usize) -> i32;
    fn pthread_create(
        thread: *mut usize,
        attr: *const PthreadAttr,
        start: extern "C" fn(*mut u8) -> *mut u8,
        arg: *mut u8,
    ) -> i32;
    fn pthread_join(thread: usize, ret: *mut *mut u8) -> i32;
    fn getrlimit(resource: i32, rlim: *mut Rlimit) -> i32;
}

/// The lowest stack address compiled code may use, where the code checks
/// it: every compiled function of a library, and of a program the
/// functions that loop (see `codegen`), compare the stack pointer with
/// this on entry; below it, a program's stack ends in guard pages on Linux
/// (`stack_guard`). Zero (no limit) until set.
#[no_mangle]
pub static mut rt_stack_limit: usize = 0;

/// Stack kept below the limit: on Linux it holds the guard pages
/// (`stack_guard`); elsewhere it is the room the runtime's own calls
/// (printing the error, libm) have below the last check.
#[cfg(all(not(test), not(vlad_lib)))]
const STACK_MARGIN: usize = 1 << 20;

/// Called by compiled code whose stack is exhausted.
#[no_mangle]
pub extern "C" fn rt_stack_overflow() -> ! {
    fail(&[message::RECURSION_TOO_DEEP.as_bytes()])
}

#[cfg(all(not(test), not(vlad_lib)))]
extern "C" fn program_thread(_: *mut u8) -> *mut u8 {
    let here = 0u8;
    let top = core::ptr::addr_of!(here) as usize;
    gc::set_stack_top(top + 64);
    // SAFETY: `PROGRAM_STACK` was written by `main` before this thread
    // started (or this is `main`'s own thread), and is not written again.
    let (size, own_thread) = match unsafe { PROGRAM_STACK } {
        // On the main thread: its stack is what `ulimit -s` gives it.
        0 => (soft_limit(RLIMIT_STACK).unwrap_or(8 << 20), false),
        n => (n, true),
    };
    let limit = top.saturating_sub(size.saturating_sub(STACK_MARGIN));
    #[cfg(target_os = "linux")]
    stack_guard::install(limit, top, own_thread);
    #[cfg(not(target_os = "linux"))]
    let _ = own_thread;
    // SAFETY: single-threaded: the limit is written once, here, before any
    // compiled code runs on this thread and reads it.
    unsafe {
        rt_stack_limit = limit;
    }
    gc::huge_stack(limit, top);
    // SAFETY: `vlad_main` is the compiled program's entry point: a C-ABI
    // function without arguments or results.
    unsafe { vlad_main() };
    core::ptr::null_mut()
}

#[cfg(all(not(test), not(vlad_lib)))]
#[no_mangle]
pub extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    let cap = soft_limit(RLIMIT_AS);
    let mut thread = 0usize;
    let mut started = false;
    for size in stack_sizes::SIZES {
        if !stack_sizes::fits(size, cap) {
            continue;
        }
        let mut attr = PthreadAttr([0; 64]);
        // SAFETY: written before the program thread exists; read by it.
        unsafe { PROGRAM_STACK = size };
        // SAFETY: `attr` and `thread` are valid, writable and live across
        // the calls; the new thread only runs the program, and is joined
        // before `main` goes on, so the runtime stays single-threaded in
        // effect.
        started = unsafe {
            pthread_attr_init(&mut attr) == 0
                && pthread_attr_setstacksize(&mut attr, size) == 0
                && pthread_create(&mut thread, &attr, program_thread, core::ptr::null_mut()) == 0
        };
        if started {
            break;
        }
    }
    if !started {
        // SAFETY: no other thread exists.
        unsafe { PROGRAM_STACK = 0 };
    }
    if started {
        // SAFETY: `thread` was created above and is joined once.
        unsafe { pthread_join(thread, core::ptr::null_mut()) };
    } else {
        // No big stack to be had: run on this one.
        program_thread(core::ptr::null_mut());
    }
    flush();
    finish_counts();
    gc::report();
    0
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    fail(&[b"error: internal error in the runtime"])
}

/// `core` is precompiled with unwinding tables that name this symbol;
/// with `panic=abort` nothing ever unwinds, so it is never called.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn rust_eh_personality() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_matches_the_interpreter_layout() {
        let mut c = [0u64; counters::SLOTS];
        c[0] = 3;
        c[9] = 1;
        c[10] = 7;
        c[counters::PLUS] = 2;
        let mut s = String::new();
        counts_json(&c, &mut s).unwrap();
        assert_eq!(
            s,
            "{\"arithmetic\":{\"+\":3,\"-\":0,\"*\":0,\"/\":0,\"atan\":0,\"sqrt\":0,\"exp\":0,\"log\":0,\"sin\":0,\"cos\":1},\"arithmetic_total\":4,\"comparisons\":7,\"zero\":0,\"plus\":2,\"transform\":0}"
        );
    }

    #[test]
    fn whitespace_is_ascii_white_space() {
        for b in 0u8..128 {
            assert_eq!(is_space(b), (b as char).is_whitespace(), "{b}");
        }
    }
}
