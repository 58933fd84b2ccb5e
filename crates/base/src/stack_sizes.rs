//! The stacks a thread that recurses deeply asks for, for the CLI's worker
//! thread (`stack`) and the compiled program's thread (the runtime
//! includes this file): up to 4 GiB, and under an address-space cap
//! (`ulimit -v`) at most half the cap and 256 MiB less than it, because
//! the rest of the process (code, heap, the allocator's per-thread arenas,
//! which reserve address space too) needs its share. Core-only.

/// The sizes to try, largest first.
pub const SIZES: [usize; 8] = [
    4 << 30,
    2 << 30,
    1 << 30,
    512 << 20,
    256 << 20,
    128 << 20,
    64 << 20,
    16 << 20,
];

/// Should a thread ask for a stack of `size` under an address-space cap
/// of `address_space` bytes (`None`: no cap)? The smallest size always.
pub fn fits(size: usize, address_space: Option<usize>) -> bool {
    let cap = address_space.map_or(usize::MAX, |a| (a / 2).min(a.saturating_sub(256 << 20)));
    size <= cap || size == SIZES[SIZES.len() - 1]
}
