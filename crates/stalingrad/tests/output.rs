//! Output that shows up: a long run shows its progress. A program that
//! prints a line and then waits (here, for input that the test sends only
//! once it has seen the line) must have printed that line already, under
//! `run` and compiled, with standard output a pipe and with it a terminal
//! (a pseudo-terminal made by util-linux's `script`). Buffering until exit
//! would leave this test waiting until its deadline.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Starts `program ARGS`, waits for its first line of output, then sends
/// `2` on its standard input; gives the first line (or why not) and the
/// rest of the output (without the terminal's echo of the `2` when
/// `echoed`).
fn first_line_before_input(mut cmd: Command, echoed: bool) -> Result<(String, String), String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("start {program}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // A terminal ends lines with "\r\n".
        let mut lines = BufReader::new(stdout)
            .lines()
            .map(|l| l.map(|l| l.trim_end_matches('\r').to_string()));
        let first = lines.next().and_then(|l| l.ok());
        let _ = tx.send(first);
        let mut rest: Vec<String> = lines.map_while(|l| l.ok()).collect();
        if echoed {
            if let Some(i) = rest.iter().position(|l| l == "2") {
                rest.remove(i);
            }
        }
        let _ = tx.send(Some(rest.join("\n")));
    });
    let first = rx.recv_timeout(Duration::from_secs(20));
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let _ = stdin.write_all(b"2\n");
    drop(stdin);
    let _ = child.wait();
    let first = match first {
        Ok(Some(l)) => l,
        Ok(None) => return Err("no output at all".into()),
        Err(_) => {
            return Err("the first line did not arrive while the program waited".into());
        }
    };
    let rest = rx
        .recv_timeout(Duration::from_secs(20))
        .ok()
        .flatten()
        .unwrap_or_default();
    Ok((first, rest))
}

#[test]
fn printed_lines_show_up_before_the_program_waits() {
    let dir = std::env::temp_dir().join(format!("stalingrad-output-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let src = dir.join("prompt.vlad");
    std::fs::write(&src, "(write-real 1)\n(* 10 (read-real))\n").expect("write the program");
    let src_s = src.to_string_lossy().into_owned();
    let exe = dir.join("prompt");
    let build = build_to(&src_s, &exe);
    assert!(build.success(), "{}", build.transcript());
    let mut failures = Failures::default();
    // Under a terminal, `script` runs the command; the terminal echoes the
    // `2` the test types, at whatever point the echo races the program's
    // own output, so that line is taken out before comparing.
    let in_terminal = |command: String| {
        let mut cmd = Command::new("script");
        cmd.args(["-qfec", &command, "/dev/null"]);
        cmd
    };
    let quote = |p: &Path| format!("'{}'", p.to_string_lossy().replace('\'', "'\\''"));
    let mut run = Command::new(binary());
    run.args(["run", src_s.as_str()]);
    let runs = [
        ("run, piped", run, "1\n20"),
        ("compiled, piped", Command::new(&exe), "1\n20"),
        (
            "run, in a terminal",
            in_terminal(format!(
                "{} run {}",
                quote(Path::new(binary())),
                quote(&src)
            )),
            "1\n20",
        ),
        ("compiled, in a terminal", in_terminal(quote(&exe)), "1\n20"),
    ];
    let count = runs.len();
    for (what, cmd, expected) in runs {
        let echoed = what.ends_with("terminal");
        match first_line_before_input(cmd, echoed) {
            Ok((first, rest)) if first == "1" && rest.trim_end() == expected => {}
            Ok((first, rest)) => failures.add(format!("{what}: printed {first:?} then {rest:?}")),
            Err(e) => failures.add(format!("{what}: {e}")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    failures.finish("output before waiting for input", count);
}
