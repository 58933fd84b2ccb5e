//! When printed output is pushed out of its buffer, for `run` and for
//! compiled programs alike: at each newline when standard output is a
//! terminal, and otherwise at a newline once [`INTERVAL_NS`] have passed
//! since the last flush, so that a long run shows its progress (a line
//! printed after a long computation appears at once) while a program that
//! prints many lines quickly still writes in large blocks. Core-only: the
//! runtime includes this file.

/// The most time a completed line waits in the buffer while lines keep
/// coming, in nanoseconds.
pub const INTERVAL_NS: u64 = 100_000_000;

/// Should the buffer be flushed now, after writing `bytes`?
/// `since_flush_ns` is the time since the last flush; it is asked for only
/// at the end of a line, so callers read the clock no more often.
pub fn due(terminal: bool, bytes: &[u8], since_flush_ns: impl FnOnce() -> u64) -> bool {
    bytes.contains(&b'\n') && (terminal || since_flush_ns() >= INTERVAL_NS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_flushed_on_a_terminal_and_after_the_interval() {
        assert!(due(true, b"1\n", || 0));
        assert!(!due(true, b"1", || 0));
        assert!(!due(false, b"1\n", || INTERVAL_NS - 1));
        assert!(due(false, b"1\n", || INTERVAL_NS));
        assert!(!due(false, b"(1 2", || INTERVAL_NS));
    }
}
