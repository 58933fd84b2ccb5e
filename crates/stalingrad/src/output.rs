//! Standard output for `run`: buffered, and flushed as `base::flush`
//! says (at each line on a terminal, otherwise at a line once 100 ms have
//! passed since the last flush), as compiled programs do, so that a long
//! run shows its progress.

use std::io::{BufWriter, IsTerminal, Write};
use std::time::Instant;

pub struct Progress<W: Write> {
    inner: BufWriter<W>,
    terminal: bool,
    /// The last flush (`None`: none yet, so the first line goes out at
    /// once, as in compiled programs).
    flushed: Option<Instant>,
}

impl<W: Write> Progress<W> {
    #[cfg(test)]
    pub fn new(inner: W, terminal: bool) -> Self {
        Progress {
            inner: BufWriter::new(inner),
            terminal,
            flushed: None,
        }
    }
}

/// Standard output with the flushing policy, buffered where the exit for
/// want of memory writes it out before its message
/// (`base::memory::PendingStdout`).
pub fn stdout() -> Progress<base::memory::PendingStdout> {
    let terminal = std::io::stdout().is_terminal();
    Progress {
        inner: BufWriter::with_capacity(0, base::memory::PendingStdout),
        terminal,
        flushed: None,
    }
}

impl<W: Write> Write for Progress<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        let flushed = self.flushed;
        let since = || {
            flushed.map_or(u64::MAX, |t| {
                u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
            })
        };
        if base::flush::due(self.terminal, &buf[..n], since) {
            self.flush()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.flushed = Some(Instant::now());
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_sees_each_line() {
        let mut p = Progress::new(Vec::new(), true);
        p.write_all(b"1\n").expect("write");
        p.write_all(b"2\n").expect("write");
        assert_eq!(p.inner.get_ref().as_slice(), b"1\n2\n");
        p.write_all(b"(3").expect("write");
        assert_eq!(p.inner.get_ref().as_slice(), b"1\n2\n");
    }

    #[test]
    fn a_pipe_gets_lines_in_blocks() {
        let mut p = Progress::new(Vec::new(), false);
        p.write_all(b"1\n").expect("write");
        // The first line goes out at once; the next waits for the interval.
        assert_eq!(p.inner.get_ref().as_slice(), b"1\n");
        p.write_all(b"2\n").expect("write");
        assert_eq!(p.inner.get_ref().as_slice(), b"1\n");
        p.flushed = Some(Instant::now() - std::time::Duration::from_millis(200));
        p.write_all(b"3\n").expect("write");
        assert_eq!(p.inner.get_ref().as_slice(), b"1\n2\n3\n");
    }
}
