//! Runs a child process for the tests and the benchmark harness: the one
//! place that feeds standard input, captures standard output and error,
//! and stops a process at a time limit (and, on Linux, a resident-memory
//! limit), so that a program that loops or runs away cannot hang or take
//! down the machine running the suite.
//!
//! Input: a configured [`Command`] (program, arguments, directory,
//! environment), the bytes of its standard input and its [`Limits`].
//! Output: an [`Outcome`]; `Err` only when the process could not start.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// When to stop a process.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub time: Duration,
    /// Resident memory in KiB (read from `/proc`; ignored where there is
    /// none).
    pub memory_kb: Option<u64>,
}

/// How a run ended and what it printed.
#[derive(Debug)]
pub struct Outcome {
    /// `None` when the process was stopped at a limit or could not be
    /// waited for.
    pub status: Option<ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
    pub over_memory: bool,
    /// Wall time from start to exit (or to the stop).
    pub elapsed: Duration,
}

/// A command that runs `program` with its address space capped at `kib`
/// KiB, as `ulimit -v` does: `sh` sets the limit and execs the program
/// (the standard library has no safe way to call `setrlimit` in a child).
/// Add the program's arguments to it as usual.
pub fn capped_command(program: &std::path::Path, kib: u64) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(program);
    cmd
}

/// Runs `cmd` with `stdin` as its standard input until it exits or passes
/// a limit (then it is killed). Standard output and error are read while it
/// runs, so a process that prints much cannot block on a full pipe.
pub fn run(cmd: &mut Command, stdin: &[u8], limits: &Limits) -> std::io::Result<Outcome> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let writer = child.stdin.take().map(|mut pipe| {
        let input = stdin.to_vec();
        // The program may exit without reading all of its input.
        thread::spawn(move || {
            let _ = pipe.write_all(&input);
        })
    });
    let out_reader = child.stdout.take().map(reader);
    let err_reader = child.stderr.take().map(reader);
    let (mut timed_out, mut over_memory) = (false, false);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {
                let e = start.elapsed();
                if e > limits.time {
                    timed_out = true;
                } else if limits
                    .memory_kb
                    .is_some_and(|max| rss_kb(child.id()).is_some_and(|kb| kb > max))
                {
                    over_memory = true;
                }
                if timed_out || over_memory {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                // Poll finely at first so that short runs are timed well.
                thread::sleep(if e < Duration::from_millis(50) {
                    Duration::from_micros(200)
                } else {
                    Duration::from_millis(3)
                });
            }
            Err(_) => break None,
        }
    };
    let elapsed = start.elapsed();
    if let Some(w) = writer {
        let _ = w.join();
    }
    let collect = |h: Option<thread::JoinHandle<Vec<u8>>>| {
        h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
    };
    Ok(Outcome {
        status,
        stdout: collect(out_reader),
        stderr: collect(err_reader),
        timed_out,
        over_memory,
        elapsed,
    })
}

fn reader(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GENEROUS: Limits = Limits {
        time: Duration::from_secs(20),
        memory_kb: None,
    };

    #[test]
    fn feeds_input_and_captures_output() {
        let o = run(
            Command::new("sh").args(["-c", "cat; echo err >&2; exit 3"]),
            b"hello",
            &GENEROUS,
        )
        .expect("sh starts");
        assert_eq!(o.stdout, b"hello");
        assert_eq!(o.stderr, b"err\n");
        assert_eq!(o.status.and_then(|s| s.code()), Some(3));
        assert!(!o.timed_out && !o.over_memory);
    }

    #[test]
    fn stops_a_process_at_the_time_limit() {
        let limits = Limits {
            time: Duration::from_millis(200),
            memory_kb: None,
        };
        let o = run(Command::new("sleep").arg("30"), b"", &limits).expect("sleep starts");
        assert!(o.timed_out);
        assert!(o.status.is_none());
        assert!(o.elapsed < Duration::from_secs(10));
    }

    #[test]
    fn a_program_that_does_not_exist_is_an_error() {
        assert!(run(&mut Command::new("/nonexistent/program"), b"", &GENEROUS).is_err());
    }
}

/// An [`Outcome`] with its output as text, for the tests: a process that
/// could not start is a run with no status whose standard error says why.
#[derive(Debug)]
pub struct Run {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub over_memory: bool,
    pub elapsed: Duration,
}

impl Run {
    /// True when the process exited normally with status 0.
    pub fn success(&self) -> bool {
        !self.timed_out && !self.over_memory && self.status.is_some_and(|s| s.success())
    }

    /// The exit status, or how the process ended otherwise.
    pub fn describe_status(&self) -> String {
        if self.timed_out {
            return format!("killed after the time limit ({:?})", self.elapsed);
        }
        if self.over_memory {
            return "killed when it passed the memory limit".to_string();
        }
        match self.status {
            Some(s) => match s.code() {
                Some(c) => format!("exit status {c}"),
                None => format!("terminated by a signal ({s})"),
            },
            None => "did not run".to_string(),
        }
    }

    /// Everything the process printed, for failure reports.
    pub fn transcript(&self) -> String {
        format!(
            "--- {} ---\n--- stdout ---\n{}--- stderr ---\n{}--- end ---",
            self.describe_status(),
            self.stdout,
            self.stderr
        )
    }
}

/// [`run`], with the output as text and a failure to start as a [`Run`].
pub fn run_text(cmd: &mut Command, stdin: &[u8], limits: &Limits) -> Run {
    match run(cmd, stdin, limits) {
        Ok(o) => Run {
            status: o.status,
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            timed_out: o.timed_out,
            over_memory: o.over_memory,
            elapsed: o.elapsed,
        },
        Err(e) => Run {
            status: None,
            stdout: String::new(),
            stderr: format!("could not start {:?}: {e}\n", cmd.get_program()),
            timed_out: false,
            over_memory: false,
            elapsed: Duration::ZERO,
        },
    }
}
