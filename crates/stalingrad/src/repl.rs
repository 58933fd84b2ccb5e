//! `stalingrad repl`: a read-eval-print loop over the reference interpreter.
//!
//! A session is the list of top-level definitions accepted so far, kept as
//! read (with includes spliced in). Each input is expanded together with
//! them as one program, so the top level stays VLAD's `letrec*` and every
//! check `run` makes applies unchanged: the interpreter's values (closures
//! name lambdas of one program) cannot outlive the program they were made
//! in, so the program is rebuilt rather than extended. Running it evaluates
//! the session's value definitions again; VLAD is pure, so that costs time
//! only, and their output is muted ([`interp::Interp::quiet_stmts`]) because
//! it was seen when they were entered. For the same reason `read-real` has
//! no input here: a definition that read would read again with each input.
//!
//! A definition of a name that is already defined replaces the old one, as
//! at a Scheme REPL; an input that fails (to read, expand or run) leaves
//! the session as it was. Positions in messages count lines from the start
//! of the session (`<stdin>:LINE:COL` when scripted, `<repl>:LINE:COL` at a
//! terminal).

use crate::{compile_front, emit, fail, report, Emit, Front};
use base::diag::{Diagnostic, FileId, SourceMap};
use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use syntax::ast::TopItem;
use syntax::reader::{read_partial, Partial};
use syntax::sexp::Sexp;

pub const LONG_ABOUT: &str = "\
Read VLAD expressions and definitions, evaluate each with the reference \
interpreter and print its value as `stalingrad run` does. Definitions persist \
for the rest of the session, as if all were in one file: a new definition \
of a name replaces the old one wherever it is used, so procedures see the \
newest definition, but a value definition cannot use the value it replaces. \
A form may span several lines. An error is reported and the session goes on; \
an input that fails adds no definition. `read-real` has no input in the REPL.

At a terminal there is line editing and a history (kept in \
~/.stalingrad_history). When standard input is not a terminal the REPL reads \
forms from it with no prompt and no banner and prints only values and errors, \
so it can be scripted.";

pub const AFTER_HELP: &str = "\
Commands (at the start of an input):
  ,load FILE              evaluate FILE's forms as if typed: its values are
                          printed and its definitions join the session
  ,emit anf|flow|ir EXPR  print what `stalingrad build --emit=STAGE` prints
                          for the session's definitions and EXPR
  ,time EXPR              evaluate EXPR, then print the time it took (with
                          the session's definitions, evaluated again) to
                          standard error
  ,help                   list the commands
  ,quit                   leave (as does the end of input, or Ctrl-D)

Exit status: 0 at the end of an interactive session. A scripted session
(standard input not a terminal) goes on after an error, like a Scheme REPL
fed a file, and exits with 1 at the end if any input failed, else 0.

Example:
  printf '(define (f x) (* x x))\\n((derivative-R f) 3)\\n' | stalingrad repl
prints 6.";

const COMMANDS: &str = "\
,load FILE              evaluate FILE's forms; its definitions join the session
,emit anf|flow|ir EXPR  what `stalingrad build --emit=STAGE` prints for the
                        session's definitions and EXPR
,time EXPR              evaluate EXPR and print the time it took
,help                   this list
,quit                   leave (as does Ctrl-D)
";

/// Runs a session on standard input; `include` are the `-I` directories.
pub fn main(include: &[PathBuf]) -> ExitCode {
    let terminal = std::io::stdin().is_terminal();
    let mut session = Session {
        map: syntax::expand::library_map(),
        opts: syntax::expand::Options {
            include_dirs: include.to_vec(),
        },
        defs: Vec::new(),
        source: if terminal { "<repl>" } else { "<stdin>" },
        failures: 0,
    };
    if terminal {
        interactive(&mut session)
    } else {
        scripted(&mut session)
    }
}

struct Session {
    map: SourceMap,
    opts: syntax::expand::Options,
    /// The accepted top-level definitions, in the order they were entered.
    defs: Vec<Sexp>,
    /// The name of standard input in messages.
    source: &'static str,
    /// Inputs that failed.
    failures: usize,
}

enum Next {
    Continue,
    Quit,
}

impl Session {
    /// Handles one complete input (forms or a command) whose first line is
    /// line `line` of the session.
    fn input(&mut self, text: &str, line: u32) -> Next {
        if text.trim().is_empty() {
            return Next::Continue;
        }
        let result = match command(text) {
            Some((word, rest)) => match word {
                ",quit" | ",q" => return Next::Quit,
                ",help" | ",h" | ",?" => {
                    emit(COMMANDS);
                    Ok(())
                }
                ",load" => self.load(rest.trim()),
                ",emit" => self.emit_stage(&rest, line),
                ",time" => {
                    let start = Instant::now();
                    let result = self.read(&rest, line).and_then(|forms| self.eval(forms));
                    let elapsed = start.elapsed();
                    if result.is_ok() {
                        let _ = std::io::stdout().flush();
                        eprintln!(";; {:.3} ms", elapsed.as_secs_f64() * 1e3);
                    }
                    result
                }
                other => Err(Diagnostic::new(
                    None,
                    format!("unknown REPL command `{other}`: expected ,load, ,emit, ,time, ,help or ,quit"),
                )),
            },
            None => self.read(text, line).and_then(|forms| self.eval(forms)),
        };
        if let Err(d) = result {
            report(&d, &self.map);
            self.failures += 1;
        }
        Next::Continue
    }

    /// The forms of an input, its text kept as a file of the session.
    fn read(&mut self, text: &str, line: u32) -> Result<Vec<Sexp>, Diagnostic> {
        let id = self.map.add(PathBuf::from(self.source), text.to_string());
        match read_partial(text, id, line)? {
            Partial::Complete(forms) => Ok(forms),
            Partial::Incomplete(d) => Err(d),
        }
    }

    /// `,load FILE`.
    fn load(&mut self, name: &str) -> Result<(), Diagnostic> {
        let name = name.trim_matches('"');
        if name.is_empty() {
            return Err(Diagnostic::new(None, "`,load` needs a file name"));
        }
        let text = std::fs::read_to_string(name)
            .map_err(|e| Diagnostic::new(None, format!("cannot read {name}: {e}")))?;
        let id = self.map.add(PathBuf::from(name), text);
        let forms = syntax::reader::read_file(&self.map, id)?;
        self.eval(forms)
    }

    /// The session's definitions (less those `forms` define again) and
    /// `forms`, with includes spliced, as a checked program; also how many
    /// of its forms came from the session.
    fn program(&mut self, forms: Vec<Sexp>) -> Result<(Vec<Sexp>, ir::Program, usize), Diagnostic> {
        base::memory::set_phase(base::memory::Phase::Reading);
        let forms = syntax::expand::splice_includes(&mut self.map, forms, &self.opts)?;
        let redefined: HashSet<String> = forms
            .iter()
            .filter_map(syntax::expand::defined_name)
            .collect();
        let mut all: Vec<Sexp> = self
            .defs
            .iter()
            .filter(|d| !syntax::expand::defined_name(d).is_some_and(|n| redefined.contains(&n)))
            .cloned()
            .collect();
        let old = all.len();
        all.extend(forms);
        let ast = syntax::expand::expand_forms(&self.map, &all)?;
        // The statements of what the session already ran, which run again
        // quietly: the items before the first value definition or
        // expression from the new forms (value definitions and expressions
        // keep their order; a group of procedures, old or new, may be
        // placed anywhere before its first use, and prints nothing). The
        // map only grows, so the new forms' files are the highest.
        let quiet = match all[old..].iter().map(|d| d.span.file).min() {
            Some(first_new) => {
                let is_new = |item: &TopItem| match item {
                    TopItem::Define { span, .. } | TopItem::Show { span, .. } => {
                        span.file >= first_new
                    }
                    TopItem::Rec(_) => false,
                };
                let before = syntax::ast::Program {
                    items: ast
                        .items
                        .iter()
                        .take_while(|i| !is_new(i))
                        .cloned()
                        .collect(),
                };
                syntax::anf::lower_program(&before)?.main.len()
            }
            None => 0,
        };
        let prog = syntax::anf::lower_program(&ast)?;
        Ok((all, prog, quiet))
    }

    /// Evaluates `forms` after the session's definitions, printing the
    /// value of each expression; on success their definitions join the
    /// session.
    fn eval(&mut self, forms: Vec<Sexp>) -> Result<(), Diagnostic> {
        if forms.is_empty() {
            return Ok(());
        }
        let (mut all, prog, quiet) = self.program(forms)?;
        base::memory::set_phase(base::memory::Phase::Running);
        let mut input = std::io::empty();
        let mut out = crate::output::stdout();
        let mut it = interp::Interp::new(prog, &mut input, &mut out);
        it.quiet_stmts = quiet;
        let result = it.run_main(interp::Mode::Run, &self.map);
        drop(it);
        let _ = out.flush();
        result?;
        all.retain(|d| syntax::expand::defined_name(d).is_some());
        self.defs = all;
        Ok(())
    }

    /// `,emit STAGE EXPR`.
    fn emit_stage(&mut self, rest: &str, line: u32) -> Result<(), Diagnostic> {
        let (stage, expr) = first_word(rest);
        let stop = match stage {
            "anf" => Emit::Anf,
            "flow" => Emit::Flow,
            "ir" => Emit::Ir,
            other => {
                return Err(Diagnostic::new(
                    None,
                    format!(
                    "`,emit` takes a stage (anf, flow or ir) and an expression, found `{other}`"
                ),
                ))
            }
        };
        let forms = self.read(&expr, line)?;
        let (_, prog, _) = self.program(forms)?;
        match compile_front(prog, Some(stop), &self.map)? {
            Front::Text(text) => {
                emit(&text);
                Ok(())
            }
            Front::Module(_) => Err(Diagnostic::new(
                None,
                "internal error: no text for the stage `,emit` asked for",
            )),
        }
    }
}

/// `Some((",word", rest))` for a command input: `rest` is the text after
/// the word, with the word and what precedes it blanked out so that
/// positions in the rest stay those of the whole input.
fn command(text: &str) -> Option<(&str, String)> {
    if !text.trim_start().starts_with(',') {
        return None;
    }
    Some(first_word(text))
}

/// The first whitespace-separated word of `text`, and `text` with that
/// word and everything before it turned into spaces (newlines kept).
fn first_word(text: &str) -> (&str, String) {
    let start = text.len() - text.trim_start().len();
    let end = text[start..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| start + i);
    let blank: String = text[..end]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    (&text[start..end], blank + &text[end..])
}

/// Whether `text` is an input still waiting for lines: a form left open,
/// or a `,time`/`,emit` command whose expression is.
fn needs_more(text: &str) -> bool {
    let body = match command(text) {
        Some((",time", rest)) => rest,
        Some((",emit", rest)) => first_word(&rest).1,
        Some(_) => return false,
        None => text.to_string(),
    };
    // The file only names positions in messages, and this one is thrown
    // away.
    matches!(
        read_partial(&body, FileId(0), 1),
        Ok(Partial::Incomplete(_))
    )
}

/// Lines in an input, for numbering the next one.
fn line_count(text: &str) -> u32 {
    u32::try_from(text.lines().count().max(1)).unwrap_or(u32::MAX)
}

/// Standard input is not a terminal: forms are read as lines come, with
/// no prompt and no banner.
fn scripted(session: &mut Session) -> ExitCode {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock();
    let mut pending = String::new();
    let (mut first, mut next) = (1u32, 1u32);
    loop {
        let mut bytes = Vec::new();
        match lines.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                session.failures += 1;
                let _ = std::io::stdout().flush();
                eprintln!("error: cannot read standard input: {e}");
                break;
            }
        }
        if pending.is_empty() {
            first = next;
        }
        next = next.saturating_add(1);
        pending.push_str(&String::from_utf8_lossy(&bytes));
        if needs_more(&pending) {
            continue;
        }
        let text = std::mem::take(&mut pending);
        if let Next::Quit = session.input(&text, first) {
            return status(session);
        }
    }
    // An input the end of the file cut short: reading it reports why.
    session.input(&pending, first);
    status(session)
}

fn status(session: &Session) -> ExitCode {
    if session.failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The line editor's view of an input: it asks for another line while a
/// form is open, so a multi-line form is one history entry.
struct Helper;

impl rustyline::completion::Completer for Helper {
    type Candidate = String;
}

impl rustyline::hint::Hinter for Helper {
    type Hint = String;
}

impl rustyline::highlight::Highlighter for Helper {}

impl rustyline::validate::Validator for Helper {
    fn validate(
        &self,
        ctx: &mut rustyline::validate::ValidationContext,
    ) -> rustyline::Result<rustyline::validate::ValidationResult> {
        Ok(if needs_more(ctx.input()) {
            rustyline::validate::ValidationResult::Incomplete
        } else {
            rustyline::validate::ValidationResult::Valid(None)
        })
    }
}

impl rustyline::Helper for Helper {}

fn history_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".stalingrad_history"))
}

/// Standard input is a terminal: a prompt, line editing and a history.
fn interactive(session: &mut Session) -> ExitCode {
    use rustyline::error::ReadlineError;
    let config = rustyline::Config::builder().auto_add_history(true).build();
    let mut editor =
        match rustyline::Editor::<Helper, rustyline::history::DefaultHistory>::with_config(config) {
            Ok(e) => e,
            Err(e) => return fail(&format!("cannot start the line editor: {e}")),
        };
    editor.set_helper(Some(Helper));
    let history = history_file();
    if let Some(path) = &history {
        // No history yet is the usual first run, not an error.
        let _ = editor.load_history(path);
    }
    emit(&format!(
        "stalingrad {} REPL for VLAD. ,help lists the commands; ,quit or Ctrl-D leaves.\n",
        env!("CARGO_PKG_VERSION")
    ));
    let mut line = 1u32;
    loop {
        match editor.readline("vlad> ") {
            Ok(text) => {
                let next = session.input(&text, line);
                line = line.saturating_add(line_count(&text));
                if let Next::Quit = next {
                    break;
                }
            }
            // Ctrl-C drops the line being typed, as in a shell.
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                let _ = history.as_ref().map(|p| editor.save_history(p));
                return fail(&format!("cannot read a line: {e}"));
            }
        }
    }
    if let Some(path) = &history {
        // A history that cannot be saved (read-only home) must not turn a
        // finished session into a failure.
        let _ = editor.save_history(path);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_keep_positions() {
        let (word, rest) = first_word(",emit ir (f 3)");
        assert_eq!(word, ",emit");
        assert_eq!(rest, "      ir (f 3)");
        let (stage, expr) = first_word(&rest);
        assert_eq!((stage, expr.as_str()), ("ir", "         (f 3)"));
        assert_eq!(first_word(",quit"), (",quit", "     ".to_string()));
    }

    #[test]
    fn open_forms_wait_for_more_lines() {
        assert!(needs_more("(define (f x)\n"));
        assert!(needs_more(",time (f\n"));
        assert!(needs_more(",emit ir (f\n"));
        assert!(!needs_more("(f 3)\n"));
        assert!(!needs_more(",load x\n"));
        // An error is reported at once rather than waiting for a close.
        assert!(!needs_more("(f))\n"));
    }
}
