//! The stack a thread may use, for code that recurses on it: the driver's
//! worker thread states the size it obtained ([`enter`]), and the
//! interpreter and the analysis check [`exhausted`] where they recurse, so
//! that deep recursion ends in a clean error whatever stack the process
//! could get (a 4 GiB thread, or much less under an address-space cap),
//! never in a stack-overflow abort.
//!
//! The position on the stack is the address of a local variable: stacks
//! grow down on every target this project supports.

use std::cell::Cell;

/// Kept free below the limit: the error path (formatting the message,
/// unwinding the recursion) needs stack of its own.
pub const MARGIN: usize = 256 << 10;

thread_local! {
    /// The lowest address recursion may reach on this thread (0: none set).
    static LIMIT: Cell<usize> = const { Cell::new(0) };
    /// The size given to [`enter`], for messages.
    static SIZE: Cell<usize> = const { Cell::new(0) };
}

fn here() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// Declares that the calling thread's stack, from about here down, holds
/// `size` bytes. Call it first thing on a thread made with that size.
pub fn enter(size: usize) {
    let limit = here().saturating_sub(size.saturating_sub(MARGIN));
    LIMIT.with(|l| l.set(limit));
    SIZE.with(|s| s.set(size));
}

/// Has recursion on this thread used its stack (but the margin)? Always
/// false on a thread that did not call [`enter`].
pub fn exhausted() -> bool {
    let limit = LIMIT.with(Cell::get);
    limit != 0 && here() < limit
}

/// The size given to [`enter`] on this thread, in MiB (0 if none).
pub fn size_mib() -> usize {
    SIZE.with(Cell::get) >> 20
}

/// The stack sizes a thread that recurses deeply should ask for, largest
/// first, under this process's address-space cap ([`crate::stack_sizes`]).
pub fn sizes_to_try() -> Vec<usize> {
    let cap = address_space_limit();
    crate::stack_sizes::SIZES
        .iter()
        .copied()
        .filter(|s| crate::stack_sizes::fits(*s, cap))
        .collect()
}

/// The soft limit on the process's address space in bytes, where the
/// system says (`/proc/self/limits` on Linux); `None` when unlimited or
/// unknown.
pub fn address_space_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_address_space(&limits)
}

fn parse_address_space(limits: &str) -> Option<usize> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft = line
        .trim_start_matches("Max address space")
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_until_exhausted(n: usize) -> usize {
        if exhausted() {
            return n;
        }
        let pad = std::hint::black_box([0u8; 512]);
        depth_until_exhausted(n + 1) + (pad[0] as usize)
    }

    #[test]
    fn recursion_stops_before_the_stack_ends() {
        let size = 4 << 20;
        let depth = std::thread::Builder::new()
            .stack_size(size)
            .spawn(move || {
                enter(size);
                depth_until_exhausted(0)
            })
            .expect("spawn a thread")
            .join()
            .expect("no overflow");
        // 512-byte frames in a 4 MiB stack less the margin.
        assert!(depth > 1000 && depth < 8192, "depth {depth}");
    }

    #[test]
    fn address_space_limits_are_read() {
        let text = "Limit                     Soft Limit           Hard Limit           Units\n\
                    Max stack size            8388608              unlimited            bytes\n\
                    Max address space         1073741824           unlimited            bytes\n";
        assert_eq!(parse_address_space(text), Some(1 << 30));
        let unlimited =
            "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(parse_address_space(unlimited), None);
    }

    #[test]
    fn no_limit_without_enter() {
        let exhausted = std::thread::spawn(exhausted).join().expect("join");
        assert!(!exhausted);
    }
}
