//! Where a build's time goes (`stalingrad build --time-passes`, in the
//! manner of rustc's `-Z time-passes`): every stage opens a [`Span`] by
//! name, and once [`enable`]d, each outermost span prints on standard
//! error, when it ends, its wall time, the change and the peak of the
//! compiler's heap ([`crate::memory`]) during it, and its inner spans
//! aggregated by name (a pass that ran several times is one line with its
//! number of runs). Disabled (the default), a span only measures its own
//! time, which `VLAD_PASS_TRACE` prints: one clock for both.
//!
//! The format, documented for users in docs/guide.md, is stable: one line
//! per stage, `time-passes:`, seconds, runs, heap change, heap peak, then
//! the stage's name, indented two spaces per level of nesting; a header
//! line before the first stage and a `total` line from [`finish`].

use crate::memory;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ENABLED: AtomicBool = AtomicBool::new(false);
static STATE: Mutex<State> = Mutex::new(State {
    open: Vec::new(),
    start: None,
    header: false,
});

struct State {
    /// The spans begun and not yet ended, outermost first.
    open: Vec<Open>,
    start: Option<Instant>,
    header: bool,
}

struct Open {
    name: String,
    heap_before: usize,
    /// The heap peak before this span began: the peak counter restarts at
    /// each span and the outer span's peak is restored at its end.
    outer_peak: usize,
    children: Vec<Node>,
}

/// A finished stage, with its inner stages merged by name.
struct Node {
    name: String,
    runs: usize,
    time: Duration,
    heap_change: isize,
    heap_peak: usize,
    children: Vec<Node>,
}

impl Node {
    /// Adds `other`, another run of the same stage.
    fn merge(&mut self, other: Node) {
        self.runs += other.runs;
        self.time += other.time;
        self.heap_change += other.heap_change;
        self.heap_peak = self.heap_peak.max(other.heap_peak);
        for c in other.children {
            add_child(&mut self.children, c);
        }
    }
}

fn add_child(children: &mut Vec<Node>, node: Node) {
    match children.iter_mut().find(|c| c.name == node.name) {
        Some(c) => c.merge(node),
        None => children.push(node),
    }
}

fn state() -> std::sync::MutexGuard<'static, State> {
    // A panic while printing cannot leave the state inconsistent enough to
    // matter for a report.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts recording: spans from now on are reported.
pub fn enable() {
    let mut s = state();
    s.start = Some(Instant::now());
    memory::reset_peak();
    ENABLED.store(true, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A stage being timed; it ends at [`Span::end`] or when dropped (an early
/// return with an error ends it too).
#[must_use = "a span measures until it ends"]
pub struct Span {
    start: Instant,
    recorded: bool,
    ended: bool,
}

/// Begins the stage `name`, nested in the spans open on this thread.
pub fn span(name: impl Into<String>) -> Span {
    let recorded = enabled();
    if recorded {
        let mut s = state();
        let outer_peak = memory::reset_peak();
        s.open.push(Open {
            name: name.into(),
            heap_before: memory::in_use(),
            outer_peak,
            children: Vec::new(),
        });
    }
    Span {
        start: Instant::now(),
        recorded,
        ended: false,
    }
}

/// Times `f` as the stage `name`.
pub fn time<R>(name: &str, f: impl FnOnce() -> R) -> R {
    let s = span(name);
    let r = f();
    s.end();
    r
}

impl Span {
    /// Ends the stage, returning its wall time.
    pub fn end(mut self) -> Duration {
        self.close()
    }

    fn close(&mut self) -> Duration {
        let time = self.start.elapsed();
        if self.ended {
            return time;
        }
        self.ended = true;
        if !self.recorded {
            return time;
        }
        let mut s = state();
        let Some(open) = s.open.pop() else {
            return time;
        };
        let heap_peak = memory::peak();
        memory::raise_peak(open.outer_peak);
        let node = Node {
            name: open.name,
            runs: 1,
            time,
            heap_change: memory::in_use() as isize - open.heap_before as isize,
            heap_peak,
            children: open.children,
        };
        match s.open.last_mut() {
            Some(parent) => add_child(&mut parent.children, node),
            None => {
                let mut text = String::new();
                if !s.header {
                    s.header = true;
                    text.push_str(&header());
                }
                write_node(&mut text, &node, 0);
                eprint!("{text}");
            }
        }
        time
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        self.close();
    }
}

/// Prints the `total` line: the time since [`enable`] and the heap's peak.
/// Does nothing unless enabled.
pub fn finish() {
    if !enabled() {
        return;
    }
    let mut s = state();
    let Some(start) = s.start else {
        return;
    };
    let mut text = String::new();
    if !s.header {
        s.header = true;
        text.push_str(&header());
    }
    let total = Node {
        name: "total".into(),
        runs: 1,
        time: start.elapsed(),
        heap_change: 0,
        heap_peak: memory::peak(),
        children: Vec::new(),
    };
    line(&mut text, &total, 0, false);
    eprint!("{text}");
}

fn header() -> String {
    format!(
        "time-passes: {:>9} {:>5} {:>13} {:>12}  stage\n",
        "seconds", "runs", "heap change", "heap peak"
    )
}

fn write_node(text: &mut String, node: &Node, depth: usize) {
    line(text, node, depth, true);
    for c in &node.children {
        write_node(text, c, depth + 1);
    }
}

fn line(text: &mut String, node: &Node, depth: usize, change: bool) {
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let change = if change {
        format!("{:+.1} MiB", mib(node.heap_change as f64))
    } else {
        "-".to_string()
    };
    text.push_str(&format!(
        "time-passes: {:>9.3} {:>5} {:>13} {:>8.1} MiB  {:indent$}{}\n",
        node.time.as_secs_f64(),
        node.runs,
        change,
        mib(node.heap_peak as f64),
        "",
        node.name,
        indent = 2 * depth
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_a_stage_merge_by_name() {
        let mut a = Node {
            name: "optimize".into(),
            runs: 1,
            time: Duration::from_millis(5),
            heap_change: 10,
            heap_peak: 100,
            children: Vec::new(),
        };
        for (name, ms, peak) in [("inline", 1, 50), ("simplify", 2, 70), ("simplify", 3, 90)] {
            add_child(
                &mut a.children,
                Node {
                    name: name.into(),
                    runs: 1,
                    time: Duration::from_millis(ms),
                    heap_change: -1,
                    heap_peak: peak,
                    children: Vec::new(),
                },
            );
        }
        let names: Vec<_> = a
            .children
            .iter()
            .map(|c| (c.name.as_str(), c.runs))
            .collect();
        assert_eq!(names, [("inline", 1), ("simplify", 2)]);
        let s = &a.children[1];
        assert_eq!(
            (s.time, s.heap_change, s.heap_peak),
            (Duration::from_millis(5), -2, 90)
        );
        let mut text = String::new();
        write_node(&mut text, &a, 0);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("time-passes:") && lines[0].ends_with("  optimize"));
        assert!(lines[2].ends_with("    simplify"), "{}", lines[2]);
        assert!(lines[2].contains(" 2 "), "{}", lines[2]);
    }
}
