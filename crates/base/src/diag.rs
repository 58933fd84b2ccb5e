//! Positions and errors shared by every stage: the reader attaches a
//! [`Span`] to every form, later stages carry it in their IR, and every
//! user-facing problem, from a parse error to a run-time error of the
//! interpreter, is a [`Diagnostic`] rendered against the [`SourceMap`].

use std::fmt;
use std::path::{Path, PathBuf};

/// Index of a file in the [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// The start of a form in a source file. Lines and columns count from 1;
/// columns count characters, not bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: FileId,
    pub line: u32,
    pub col: u32,
}

/// The files a program was read from. File 0 is always the embedded
/// standard library, so that spans in library code print sensibly.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The path as the user should see it in messages.
    pub path: PathBuf,
    pub text: String,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap { files: Vec::new() }
    }

    pub fn add(&mut self, path: PathBuf, text: String) -> FileId {
        self.files.push(SourceFile { path, text });
        FileId(self.files.len() as u32 - 1)
    }

    /// No file yet (not even the library).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn path(&self, id: FileId) -> &Path {
        &self.files[id.0 as usize].path
    }

    /// `file:line:col` for a span.
    pub fn locate(&self, span: Span) -> String {
        format!(
            "{}:{}:{}",
            self.path(span.file).display(),
            span.line,
            span.col
        )
    }
}

/// An error found before or during a run. Every stage reports user-facing
/// problems with this type; the CLI renders it with
/// [`Diagnostic::render`] and exits non-zero.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// The form at fault, when there is one.
    pub span: Option<Span>,
    /// One line: what was expected and what was found.
    pub message: String,
    /// Further lines (e.g. the chain of an include cycle, a call stack).
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn new(span: Option<Span>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    pub fn at(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Some(span), message)
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// `file:line:col: error: message`, then the notes, one per line.
    pub fn render(&self, map: &SourceMap) -> String {
        let mut s = String::new();
        if let Some(span) = self.span {
            s.push_str(&map.locate(span));
            s.push_str(": ");
        }
        s.push_str("error: ");
        s.push_str(&self.message);
        for n in &self.notes {
            s.push_str("\n  note: ");
            s.push_str(n);
        }
        s
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)
    }
}

impl std::error::Error for Diagnostic {}
