//! The tokens of the text form: words, strings, punctuation and line
//! ends, each with its line and column; `;` starts a comment.

use super::Error;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok<'a> {
    /// A run of characters that are not blanks, punctuation or quotes.
    Word(&'a str),
    Str(String),
    Punct(char),
    Newline,
    Eof,
}

#[derive(Clone, Debug)]
pub(super) struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: u32,
    pub col: u32,
}

const PUNCT: &[char] = &['(', ')', '{', '}', ',', '=', ':', '#'];

pub(super) fn describe(t: &Tok<'_>) -> String {
    match t {
        Tok::Word(w) => format!("`{w}`"),
        Tok::Str(s) => format!("the string {s:?}"),
        Tok::Punct(c) => format!("`{c}`"),
        Tok::Newline => "the end of the line".into(),
        Tok::Eof => "the end of the input".into(),
    }
}

pub(super) fn lex(text: &str) -> Result<Vec<Token<'_>>, Error> {
    let mut toks = Vec::new();
    let mut chars = text.chars();
    let (mut line, mut col) = (1u32, 1u32);
    let err = |line, col, expected: &str, found: String| Error {
        line,
        col,
        expected: expected.into(),
        found,
    };
    while let Some(c) = chars.clone().next() {
        let (l0, c0) = (line, col);
        let mut push = |tok| {
            toks.push(Token {
                tok,
                line: l0,
                col: c0,
            })
        };
        if c == '\n' {
            chars.next();
            push(Tok::Newline);
            line += 1;
            col = 1;
        } else if c.is_whitespace() {
            chars.next();
            col += 1;
        } else if c == ';' {
            while next_if(&mut chars, |c| c != '\n').is_some() {}
        } else if PUNCT.contains(&c) {
            chars.next();
            col += 1;
            push(Tok::Punct(c));
        } else if c == '"' {
            chars.next();
            col += 1;
            let mut s = String::new();
            loop {
                let Some(c) = chars.next() else {
                    return Err(err(line, col, "`\"`", "the end of the input".into()));
                };
                col += 1;
                match c {
                    '"' => break,
                    '\n' => return Err(err(line, col - 1, "`\"`", "the end of the line".into())),
                    '\\' => {
                        let (el, ec) = (line, col - 1);
                        let e = chars.next();
                        col += 1;
                        s.push(match e {
                            Some('n') => '\n',
                            Some('t') => '\t',
                            Some('r') => '\r',
                            Some('0') => '\0',
                            Some(q @ ('\\' | '"' | '\'')) => q,
                            Some('u') => {
                                let mut hex = String::new();
                                let mut closed = false;
                                if next_if(&mut chars, |c| c == '{').is_some() {
                                    col += 1;
                                    while let Some(h) = next_if(&mut chars, |h| h != '\n') {
                                        col += 1;
                                        if h == '}' {
                                            closed = true;
                                            break;
                                        }
                                        hex.push(h);
                                    }
                                }
                                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                                    Some(u) if closed => u,
                                    _ => {
                                        return Err(err(
                                            el,
                                            ec,
                                            "an escape `\\u{HEX}` of a character",
                                            format!("`\\u{{{hex}`"),
                                        ))
                                    }
                                }
                            }
                            other => {
                                return Err(err(
                                    el,
                                    ec,
                                    "an escape (`\\n`, `\\t`, `\\r`, `\\0`, `\\\\`, `\\\"`, `\\'`, `\\u{..}`)",
                                    match other {
                                        Some(o) => format!("`\\{o}`"),
                                        None => "the end of the input".into(),
                                    },
                                ))
                            }
                        });
                    }
                    c => s.push(c),
                }
            }
            push(Tok::Str(s));
        } else {
            let rest = chars.as_str();
            while next_if(&mut chars, |c| {
                !c.is_whitespace() && !PUNCT.contains(&c) && c != '"' && c != ';'
            })
            .is_some()
            {
                col += 1;
            }
            push(Tok::Word(&rest[..rest.len() - chars.as_str().len()]));
        }
    }
    toks.push(Token {
        tok: Tok::Eof,
        line,
        col,
    });
    Ok(toks)
}

/// The next character, if `f` accepts it.
fn next_if(chars: &mut std::str::Chars, f: impl Fn(char) -> bool) -> Option<char> {
    let c = chars.clone().next().filter(|c| f(*c))?;
    chars.next();
    Some(c)
}
