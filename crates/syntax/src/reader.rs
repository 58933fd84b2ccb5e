//! Text to [`Sexp`]s, with the line and column where each datum starts.
//!
//! This is a small hand-written reader rather than the `lexpr` crate that
//! docs/reference.md suggests: lexpr 0.2.7 rejects `1e5`, `4.` and `-.25`
//! and reads `.5` as a symbol, and patching numeric tokens before lexpr sees
//! them while keeping a position map would be more code than this reader,
//! which only has to know VLAD's tiny syntax (lists, `'`, `#t`/`#f`,
//! numerals, symbols, strings for `include`, `;` comments) and can point at
//! the exact token at fault in every error.
//!
//! The parser is iterative (an explicit stack of open lists), so hostile
//! input cannot overflow the Rust stack here; nesting is nevertheless
//! limited to [`MAX_DEPTH`] because every later stage walks the tree
//! recursively.

use crate::sexp::{Sexp, SexpKind};
use base::diag::{Diagnostic, FileId, SourceMap, Span};
use base::number::parse_numeral;

/// Deepest list nesting accepted. Real programs stay far below this; the
/// limit keeps the recursive later stages (expansion, analysis, printing)
/// within the default thread stack.
pub const MAX_DEPTH: usize = 500;

/// Reads every datum of `file`'s text.
pub fn read_file(map: &SourceMap, file: FileId) -> Result<Vec<Sexp>, Diagnostic> {
    read_str(&map.file(file).text, file)
}

/// Reads every datum of `text`, attributing positions to `file`.
pub fn read_str(text: &str, file: FileId) -> Result<Vec<Sexp>, Diagnostic> {
    read_inner(text, file, 1).map_err(|(d, _)| d)
}

/// What [`read_partial`] found.
#[derive(Debug)]
pub enum Partial {
    /// Every datum of the text.
    Complete(Vec<Sexp>),
    /// The text ends inside a list, after a `'` or inside a string: more
    /// lines may complete it. The error is the one to report if none come.
    Incomplete(Diagnostic),
}

/// Like [`read_str`], for a piece of a longer stream (a REPL's input) whose
/// first line is line `first_line` of that stream, so that positions count
/// from the start of the stream; a REPL reads lines until the text is not
/// [`Partial::Incomplete`].
pub fn read_partial(text: &str, file: FileId, first_line: u32) -> Result<Partial, Diagnostic> {
    match read_inner(text, file, first_line) {
        Ok(forms) => Ok(Partial::Complete(forms)),
        Err((d, true)) => Ok(Partial::Incomplete(d)),
        Err((d, false)) => Err(d),
    }
}

/// The reader, with errors flagged `true` when the only fault is that the
/// text ended too soon.
fn read_inner(text: &str, file: FileId, first_line: u32) -> Result<Vec<Sexp>, (Diagnostic, bool)> {
    let mut lexer = Lexer {
        chars: text.chars().collect(),
        i: 0,
        line: first_line,
        col: 1,
        file,
        unterminated: false,
    };
    let mut parser = Parser {
        stack: Vec::new(),
        out: Vec::new(),
    };
    loop {
        match lexer.next_token() {
            Ok(Some((tok, span))) => parser.token(tok, span).map_err(|d| (d, false))?,
            Ok(None) => break,
            Err(d) => return Err((d, lexer.unterminated)),
        }
    }
    let open = !parser.stack.is_empty();
    parser.finish().map_err(|d| (d, open))
}

#[derive(Debug)]
enum Tok {
    /// `(` or `[`; the payload is the matching closer.
    Open(char),
    /// `#(`, opening a vector literal.
    OpenVector,
    Close(char),
    Quote,
    Dot,
    Atom(SexpKind),
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: u32,
    col: u32,
    file: FileId,
    /// The text ended inside a string.
    unterminated: bool,
}

/// Characters that end a token.
fn is_delimiter(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | '"' | ';' | '\'')
}

impl Lexer {
    fn span(&self) -> Span {
        Span {
            file: self.file,
            line: self.line,
            col: self.col,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line = self.line.saturating_add(1);
            self.col = 1;
        } else {
            self.col = self.col.saturating_add(1);
        }
        Some(c)
    }

    /// Skips whitespace and `;` comments.
    fn skip_atmosphere(&mut self) {
        while let Some(c) = self.peek() {
            if c == ';' {
                while let Some(c) = self.bump() {
                    if c == '\n' {
                        break;
                    }
                }
            } else if c.is_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }

    /// Reads characters up to the next delimiter.
    fn token_text(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek() {
            if is_delimiter(c) {
                break;
            }
            s.push(c);
            self.bump();
        }
        s
    }

    fn next_token(&mut self) -> Result<Option<(Tok, Span)>, Diagnostic> {
        self.skip_atmosphere();
        let span = self.span();
        let c = match self.peek() {
            Some(c) => c,
            None => return Ok(None),
        };
        let tok = match c {
            '(' | '[' => {
                self.bump();
                Tok::Open(if c == '(' { ')' } else { ']' })
            }
            ')' | ']' => {
                self.bump();
                Tok::Close(c)
            }
            '\'' => {
                self.bump();
                Tok::Quote
            }
            '"' => Tok::Atom(SexpKind::String(self.string(span)?)),
            '`' | ',' => {
                return Err(Diagnostic::at(
                    span,
                    format!("unexpected `{c}`: VLAD has no quasiquote"),
                ))
            }
            '#' if self.chars.get(self.i + 1) == Some(&'(') => {
                self.bump();
                self.bump();
                Tok::OpenVector
            }
            '#' => Tok::Atom(self.hash(span)?),
            _ => {
                let text = self.token_text();
                atom(text, span)?
            }
        };
        Ok(Some((tok, span)))
    }

    /// A string literal; `span` is its opening quote.
    fn string(&mut self, span: Span) -> Result<String, Diagnostic> {
        self.bump();
        let mut s = String::new();
        loop {
            let here = self.span();
            match self.bump() {
                None => {
                    self.unterminated = true;
                    return Err(Diagnostic::at(
                        span,
                        "unterminated string: expected a closing `\"`, found end of file",
                    ));
                }
                Some('"') => return Ok(s),
                Some('\\') => match self.bump() {
                    Some('"') => s.push('"'),
                    Some('\\') => s.push('\\'),
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some(other) => {
                        return Err(Diagnostic::at(
                            here,
                            format!(
                                "unknown string escape `\\{other}`: expected `\\\"`, `\\\\`, `\\n` or `\\t`"
                            ),
                        ))
                    }
                    None => {
                        self.unterminated = true;
                        return Err(Diagnostic::at(
                            span,
                            "unterminated string: expected a closing `\"`, found end of file",
                        ));
                    }
                },
                Some(c) => s.push(c),
            }
        }
    }

    /// Everything that starts with `#`: booleans and prefixed numerals;
    /// every other `#` syntax of Scheme is rejected with a reason.
    fn hash(&mut self, span: Span) -> Result<SexpKind, Diagnostic> {
        let next = self.chars.get(self.i + 1).copied();
        let why = match next {
            Some('|') => Some(("#|", "VLAD has no block comments")),
            Some(';') => Some(("#;", "VLAD has no datum comments")),
            Some('\\') => Some(("#\\", "VLAD has no characters")),
            Some('[') => Some(("#[", "a vector literal opens with `#(`")),
            _ => None,
        };
        if let Some((what, why)) = why {
            return Err(Diagnostic::at(
                span,
                format!("unknown `#` syntax `{what}`: {why}"),
            ));
        }
        let text = self.token_text();
        match text.as_str() {
            "#t" | "#true" => return Ok(SexpKind::Bool(true)),
            "#f" | "#false" => return Ok(SexpKind::Bool(false)),
            _ => {}
        }
        let radix = text.chars().nth(1).map(|c| c.to_ascii_lowercase());
        if let Some(r @ ('b' | 'o' | 'd' | 'x')) = radix {
            return match parse_numeral(&text) {
                Some(x) => Ok(SexpKind::Number(x)),
                None => {
                    let digits = match r {
                        'b' => "binary digits (0-1)",
                        'o' => "octal digits (0-7)",
                        'd' => "decimal digits (0-9)",
                        _ => "hexadecimal digits (0-9, a-f)",
                    };
                    Err(Diagnostic::at(
                        span,
                        format!(
                            "bad numeral `{text}`: expected an optional sign and {digits} after `#{r}`"
                        ),
                    ))
                }
            };
        }
        Err(Diagnostic::at(
            span,
            format!("unknown `#` syntax `{text}`: expected #t, #f, or a numeral like #xff"),
        ))
    }
}

/// Classifies a token that does not start with `#`, `(`, `"`, ...
fn atom(text: String, span: Span) -> Result<Tok, Diagnostic> {
    if text == "." {
        return Ok(Tok::Dot);
    }
    if let Some(x) = parse_numeral(&text) {
        return Ok(Tok::Atom(SexpKind::Number(x)));
    }
    if looks_numeric(&text) {
        return Err(Diagnostic::at(
            span,
            format!(
                "bad numeral `{text}`: expected digits with an optional `.` fraction and `e` exponent, like 2.5 or 1e-3"
            ),
        ));
    }
    Ok(Tok::Atom(SexpKind::Symbol(text)))
}

/// Does the token start like a number (a digit, or a sign and/or `.`
/// followed by a digit)? Such tokens are never symbols (as in R7RS), so a
/// typo like `1.2.3` or `1/2` is reported here rather than surfacing later
/// as an unbound variable.
fn looks_numeric(text: &str) -> bool {
    let mut cs = text.chars().peekable();
    if let Some('+' | '-') = cs.peek() {
        cs.next();
    }
    if let Some('.') = cs.peek() {
        cs.next();
    }
    matches!(cs.next(), Some(c) if c.is_ascii_digit())
}

enum Frame {
    List {
        span: Span,
        close: char,
        items: Vec<Sexp>,
        /// Where the `.` of a dotted list was, once seen.
        dot: Option<Span>,
        tail: Option<Sexp>,
        /// Opened by `#(`: a vector literal.
        vector: bool,
    },
    /// A `'` waiting for its datum.
    Quote { span: Span },
}

struct Parser {
    stack: Vec<Frame>,
    out: Vec<Sexp>,
}

impl Parser {
    /// Nesting depth; a pending `'` counts, since it becomes a list.
    fn depth(&self) -> usize {
        self.stack.len()
    }

    fn token(&mut self, tok: Tok, span: Span) -> Result<(), Diagnostic> {
        match tok {
            Tok::Open(_) | Tok::OpenVector => {
                let (close, vector) = match tok {
                    Tok::Open(close) => (close, false),
                    _ => (')', true),
                };
                if self.depth() >= MAX_DEPTH {
                    return Err(Diagnostic::at(
                        span,
                        format!("lists nested more than {MAX_DEPTH} deep"),
                    ));
                }
                self.stack.push(Frame::List {
                    span,
                    close,
                    items: Vec::new(),
                    dot: None,
                    tail: None,
                    vector,
                });
                Ok(())
            }
            Tok::Close(c) => match self.stack.pop() {
                None => Err(Diagnostic::at(
                    span,
                    format!("unexpected `{c}`: no list is open"),
                )),
                Some(Frame::Quote { .. }) => Err(Diagnostic::at(
                    span,
                    format!("expected a datum after `'`, found `{c}`"),
                )),
                Some(Frame::List {
                    span: open,
                    close,
                    items,
                    dot,
                    tail,
                    vector,
                }) => {
                    if c != close {
                        let opener = match (vector, close) {
                            (true, _) => "#(",
                            (false, ')') => "(",
                            (false, _) => "[",
                        };
                        return Err(Diagnostic::at(
                            span,
                            format!(
                                "expected `{close}` to close the `{opener}` at line {} column {}, found `{c}`",
                                open.line, open.col
                            ),
                        ));
                    }
                    let kind = match (dot, tail) {
                        (Some(dot), _) if vector => {
                            return Err(Diagnostic::at(
                                dot,
                                "unexpected `.` in a vector literal: expected a datum or `)`",
                            ))
                        }
                        (None, None) if vector => SexpKind::Vector(items),
                        (_, Some(tail)) => SexpKind::Dotted(items, Box::new(tail)),
                        (Some(_), None) => {
                            return Err(Diagnostic::at(
                                span,
                                format!("expected a datum after `.`, found `{c}`"),
                            ))
                        }
                        (None, None) => SexpKind::List(items),
                    };
                    self.complete(Sexp { kind, span: open })
                }
            },
            Tok::Quote => {
                if self.depth() >= MAX_DEPTH {
                    return Err(Diagnostic::at(
                        span,
                        format!("lists nested more than {MAX_DEPTH} deep"),
                    ));
                }
                self.stack.push(Frame::Quote { span });
                Ok(())
            }
            Tok::Dot => match self.stack.last_mut() {
                Some(Frame::List {
                    items, dot, tail, ..
                }) if !items.is_empty() && dot.is_none() && tail.is_none() => {
                    *dot = Some(span);
                    Ok(())
                }
                Some(Frame::List { items, .. }) if items.is_empty() => Err(Diagnostic::at(
                    span,
                    "unexpected `.`: expected a datum before the `.` of a dotted list",
                )),
                Some(Frame::List { .. }) => Err(Diagnostic::at(
                    span,
                    "unexpected `.`: a dotted list has one `.`, followed by exactly one datum and `)`",
                )),
                Some(Frame::Quote { .. }) => Err(Diagnostic::at(
                    span,
                    "expected a datum after `'`, found `.`",
                )),
                None => Err(Diagnostic::at(
                    span,
                    "unexpected `.` outside a list: expected a datum",
                )),
            },
            Tok::Atom(kind) => self.complete(Sexp { kind, span }),
        }
    }

    /// A datum is finished: wrap it in pending quotes, then add it to the
    /// innermost open list (or to the output).
    fn complete(&mut self, mut d: Sexp) -> Result<(), Diagnostic> {
        loop {
            match self.stack.last_mut() {
                None => {
                    self.out.push(d);
                    return Ok(());
                }
                Some(Frame::Quote { span }) => {
                    let span = *span;
                    self.stack.pop();
                    d = Sexp {
                        kind: SexpKind::List(vec![
                            Sexp {
                                kind: SexpKind::Symbol("quote".into()),
                                span,
                            },
                            d,
                        ]),
                        span,
                    };
                }
                Some(Frame::List {
                    items, dot, tail, ..
                }) => {
                    if tail.is_some() {
                        let found = d.describe();
                        return Err(Diagnostic::at(
                            d.span,
                            format!("expected `)` after the datum following `.`, found {found}"),
                        ));
                    }
                    if dot.is_some() {
                        *tail = Some(d);
                    } else {
                        items.push(d);
                    }
                    return Ok(());
                }
            }
        }
    }

    fn finish(mut self) -> Result<Vec<Sexp>, Diagnostic> {
        match self.stack.pop() {
            None => Ok(self.out),
            Some(Frame::Quote { span }) => Err(Diagnostic::at(
                span,
                "expected a datum after `'`, found end of file",
            )),
            Some(Frame::List { span, close, .. }) => {
                let opener = if close == ')' { '(' } else { '[' };
                Err(Diagnostic::at(
                    span,
                    format!("expected `{close}` to close this `{opener}`, found end of file"),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FileId = FileId(3);

    fn sp(line: u32, col: u32) -> Span {
        Span { file: F, line, col }
    }

    fn read(s: &str) -> Vec<Sexp> {
        match read_str(s, F) {
            Ok(v) => v,
            Err(e) => panic!("{s:?}: {e:?}"),
        }
    }

    fn err(s: &str) -> Diagnostic {
        match read_str(s, F) {
            Ok(v) => panic!("{s:?} should fail, read {v:?}"),
            Err(e) => e,
        }
    }

    /// Renders a datum back to text, to compare structure compactly.
    fn show(d: &Sexp) -> String {
        match &d.kind {
            SexpKind::Number(x) => base::number::format_real(*x),
            SexpKind::Bool(b) => if *b { "#t" } else { "#f" }.into(),
            SexpKind::Symbol(s) => s.clone(),
            SexpKind::String(s) => format!("{s:?}"),
            SexpKind::List(v) => {
                format!("({})", v.iter().map(show).collect::<Vec<_>>().join(" "))
            }
            SexpKind::Dotted(v, t) => format!(
                "({} . {})",
                v.iter().map(show).collect::<Vec<_>>().join(" "),
                show(t)
            ),
            SexpKind::Vector(v) => {
                format!("#({})", v.iter().map(show).collect::<Vec<_>>().join(" "))
            }
        }
    }

    fn shows(s: &str) -> String {
        read(s).iter().map(show).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn partial_text_asks_for_more() {
        for text in [
            "(define (f x)",
            "'",
            "(f '",
            "(include \"a",
            "(a) [b",
            "(a . ",
            "#(1 (2",
        ] {
            match read_partial(text, F, 1) {
                Ok(Partial::Incomplete(d)) => assert!(d.message.contains("end of file"), "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn partial_text_that_cannot_be_completed_is_an_error() {
        for text in ["(a))", "(a]", "#(1]", "1.2.3", "(a . b c"] {
            assert!(read_partial(text, F, 1).is_err(), "{text}");
        }
    }

    #[test]
    fn partial_text_counts_lines_from_its_start() {
        match read_partial("\n  (f\n x)", F, 7) {
            Ok(Partial::Complete(forms)) => assert_eq!(forms[0].span, sp(8, 3)),
            other => panic!("{other:?}"),
        }
    }
    #[test]
    fn atoms() {
        assert_eq!(
            shows("3 -1 2.5 4. .5 -.25 +5 1e-5 2.073e-2 1E5 #b101 #o17 #d10 #xff #x-ff"),
            "3 -1 2.5 4 0.5 -0.25 5 0.00001 0.02073 100000 5 15 10 255 -255"
        );
        assert_eq!(shows("#t #f #true #false"), "#t #f #t #f");
        assert_eq!(
            shows("+ - ... ->x a.b <= *j *j-inverse ===> Foo foo |x| +inf.0 -inf.0"),
            "+ - ... ->x a.b <= *j *j-inverse ===> Foo foo |x| +inf.0 -inf.0"
        );
        assert_eq!(read("Foo")[0].kind, SexpKind::Symbol("Foo".into()));
        assert_eq!(
            read(r#""a\"b\\c\nd\te""#)[0].kind,
            SexpKind::String("a\"b\\c\nd\te".into())
        );
    }

    #[test]
    fn lists_and_quote() {
        assert_eq!(shows("(a [b c] ())"), "(a (b c) ())");
        assert_eq!(shows("#(1 #(2 x) (3 . 4)) #()"), "#(1 #(2 x) (3 . 4)) #()");
        assert_eq!(shows("'#(1)"), "(quote #(1))");
        assert_eq!(
            shows("(a . b) (a b . c) (a . (b))"),
            "(a . b) (a b . c) (a . (b))"
        );
        assert_eq!(
            shows("'a '(1 2) ''x"),
            "(quote a) (quote (1 2)) (quote (quote x))"
        );
        assert_eq!(shows("(a'b)"), "(a (quote b))");
        assert_eq!(shows("a;comment\nb ; more\n;last"), "a b");
        assert_eq!(shows("(f\"x\")"), "(f \"x\")");
        assert_eq!(shows(""), "");
        assert_eq!(shows("  ;; only a comment"), "");
    }

    #[test]
    fn positions() {
        let v = read("(define (f x)\n  (+ x 1))\n\n  'q\té 7");
        assert_eq!(v[0].span, sp(1, 1));
        let l = v[0].list().unwrap_or(&[]);
        assert_eq!(l[0].span, sp(1, 2));
        assert_eq!(l[1].span, sp(1, 9));
        assert_eq!(l[1].list().unwrap_or(&[])[1].span, sp(1, 12));
        assert_eq!(l[2].span, sp(2, 3));
        assert_eq!(l[2].list().unwrap_or(&[])[2].span, sp(2, 8));
        // quote form: both the form and the `quote` symbol are at the `'`.
        assert_eq!(v[1].span, sp(4, 3));
        assert_eq!(v[1].list().unwrap_or(&[])[1].span, sp(4, 4));
        // columns count characters, not bytes: `é` is two bytes.
        assert_eq!(v[2].span, sp(4, 6));
        assert_eq!(v[3].span, sp(4, 8));
    }

    #[test]
    fn errors() {
        let cases: &[(&str, (u32, u32), &str)] = &[
            ("a )", (1, 3), "unexpected `)`: no list is open"),
            (
                "(a\n (b)",
                (1, 1),
                "expected `)` to close this `(`, found end of file",
            ),
            (
                "[a (b]",
                (1, 6),
                "expected `)` to close the `(` at line 1 column 4, found `]`",
            ),
            (
                "#| x |#",
                (1, 1),
                "unknown `#` syntax `#|`: VLAD has no block comments",
            ),
            (
                "a #;b",
                (1, 3),
                "unknown `#` syntax `#;`: VLAD has no datum comments",
            ),
            (
                "#\\a",
                (1, 1),
                "unknown `#` syntax `#\\`: VLAD has no characters",
            ),
            ("#(1 . 2)", (1, 5), "unexpected `.` in a vector literal"),
            (
                "#(1 2]",
                (1, 6),
                "expected `)` to close the `#(` at line 1 column 1",
            ),
            ("#[1 2]", (1, 1), "a vector literal opens with `#(`"),
            ("#foo", (1, 1), "unknown `#` syntax `#foo`"),
            ("#", (1, 1), "unknown `#` syntax `#`"),
            ("#%car", (1, 1), "unknown `#` syntax `#%car`"),
            ("  #b102", (1, 3), "bad numeral `#b102`"),
            ("#x", (1, 1), "bad numeral `#x`"),
            ("1.2.3", (1, 1), "bad numeral `1.2.3`"),
            ("-1x", (1, 1), "bad numeral `-1x`"),
            ("1/2", (1, 1), "bad numeral `1/2`"),
            ("( . a)", (1, 3), "unexpected `.`: expected a datum before"),
            ("(a . )", (1, 6), "expected a datum after `.`, found `)`"),
            (
                "(a . b c)",
                (1, 8),
                "expected `)` after the datum following `.`, found the symbol `c`",
            ),
            (
                "(a . b . c)",
                (1, 8),
                "unexpected `.`: a dotted list has one `.`",
            ),
            (" .", (1, 2), "unexpected `.` outside a list"),
            ("'", (1, 1), "expected a datum after `'`, found end of file"),
            ("('.)", (1, 3), "expected a datum after `'`, found `.`"),
            ("(')", (1, 3), "expected a datum after `'`, found `)`"),
            ("\"abc", (1, 1), "unterminated string"),
            ("\n  \"a\\", (2, 3), "unterminated string"),
            ("\"a\\qb\"", (1, 3), "unknown string escape `\\q`"),
            ("`a", (1, 1), "VLAD has no quasiquote"),
            (",a", (1, 1), "VLAD has no quasiquote"),
        ];
        for (src, (line, col), msg) in cases {
            let e = err(src);
            assert_eq!(e.span, Some(sp(*line, *col)), "{src:?}: {e:?}");
            assert!(e.message.contains(msg), "{src:?}: {:?}", e.message);
        }
    }

    #[test]
    fn depth_limit() {
        let ok = format!("{}{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(read(&ok).len(), 1);
        let deep = "(".repeat(MAX_DEPTH + 1);
        assert!(err(&deep).message.contains("nested"));
        // A `'` becomes a list, so it counts as nesting too.
        let quotes = format!("{}a", "'".repeat(MAX_DEPTH + 1));
        assert!(err(&quotes).message.contains("nested"));
    }

    #[test]
    fn never_panics_on_garbage() {
        let alphabet: Vec<char> = "()[]'\"\\#;.ab1e+-|xt \n\tλ".chars().collect();
        let mut x: u64 = 12345;
        for _ in 0..5000 {
            let mut s = String::new();
            for _ in 0..(x % 40) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            let _ = read_str(&s, F);
            x = x.wrapping_add(1);
        }
    }
}
