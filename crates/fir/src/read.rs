//! Reads the text form of a module ([`crate::print::module`]) back into a
//! [`Module`], so that a pass can be tested on a module written by hand
//! (the filetests of `crates/fir/tests`).
//!
//! Input: the printed text, with `;` comments to the end of a line allowed
//! anywhere outside strings. Output: the module, or the first error with
//! its line and column, what was expected and what was found; no input
//! makes it panic.
//!
//! The text does not spell every value's type: the reader takes it from
//! the operation that defines the value, and where that does not say
//! (a call's results, a `load`, an `if`) from the callee's signature, the
//! cell's declared layout or the `alloc`s of that cell, the values the
//! arms yield, and last from the value's uses: what an operation, a
//! callee, a `return` takes there, and what an error message shows it as
//! (`vN` a real, `bool vN` a boolean). The results of an `if` whose arms
//! both diverge, and a load from a cell no `alloc` makes (in an arm a tag
//! test excludes), have no other. A value whose type none of those tell
//! is an error.
//!
//! Reading is the inverse of printing: `print(read(print(m))) ==
//! print(m)`, and the module read has the bodies, numbering, ids and
//! value types of the one printed. One exception: an `error` of one string
//! reads as [`Term::Error`], since the text does not tell it from a
//! [`Term::ErrorWith`] of that one string (which nothing makes).
//!
//! Vector lines (`vector #0 = (f64, f64)`) declare the element layouts,
//! before the operations that name them.
//!
//! Cell lines come in two forms: `cell #0 = 3 slots (1 pointer)` gives
//! sizes, which are checked against the module's `alloc`s; `cell #0 =
//! (ptr, f64, bool)` declares the layout, returned as [`Cells`].

use crate::{Block, Cmp, ErrPart, FBin, FUn, Func, FuncId, Inst, Module, Op, StrId, Term, Ty, Val};
use base::EntityRef;
use std::collections::BTreeMap;
use std::fmt;

mod inst;
mod lex;
#[cfg(test)]
mod tests;

use lex::{describe, lex, Tok, Token};

/// Value numbers stay below this (lowering's largest modules number a few
/// hundred thousand).
const MAX_VALUES: u32 = 1 << 22;

/// The layouts the cell lines declare: each member tag's slot types, in
/// order.
pub type Cells = BTreeMap<u32, Vec<Ty>>;

/// Where reading stopped: 1-based line and column, what the reader
/// expected there and what it found.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub line: u32,
    pub col: u32,
    pub expected: String,
    pub found: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: expected {}, found {}",
            self.line, self.col, self.expected, self.found
        )
    }
}

impl std::error::Error for Error {}

/// Reads a module.
pub fn module(text: &str) -> Result<Module, Error> {
    module_and_cells(text).map(|(m, _)| m)
}

/// Reads a module and the cell layouts its text declares.
pub fn module_and_cells(text: &str) -> Result<(Module, Cells), Error> {
    let toks = lex(text)?;
    let mut r = Reader {
        toks,
        at: 0,
        m: Module::default(),
        cells: Cells::new(),
        sizes: Vec::new(),
        funcs: Vec::new(),
    };
    r.module()?;
    r.finish()
}

/// What tells a value's type: its definition or a use.
#[derive(Clone, Copy, Debug)]
enum Src {
    Known(Ty),
    /// Result `n` of the function.
    Ret(FuncId, usize),
    /// Parameter `n` of the function.
    Param(FuncId, usize),
    /// Slot `n` of the cells of a tag: what loads from it give and what
    /// allocs store in it (all the cells of a tag have one layout).
    Slot(u32, u32),
    /// Another value of the function: an `If`'s result and what its arms
    /// yield there.
    Same(Val),
}

/// A function as read, before its values' types are known.
#[derive(Default)]
struct Pending {
    /// Per value: what its definition says of its type (the first
    /// definition: the verifier reports a second) and where it is.
    defs: Vec<Option<(Src, u32, u32)>>,
    /// Per value: what its uses say, in order. An `If` whose arms both
    /// diverge gives results that only their uses type.
    uses: Vec<Vec<Src>>,
}

struct Reader<'a> {
    toks: Vec<Token<'a>>,
    at: usize,
    m: Module,
    cells: Cells,
    /// The sizes the old form of cell lines gives: tag, slots, pointers
    /// and the line's position.
    sizes: Vec<(u32, usize, usize, u32, u32)>,
    funcs: Vec<Pending>,
}

type R<T> = Result<T, Error>;

impl<'a> Reader<'a> {
    fn peek(&self) -> &Token<'a> {
        &self.toks[self.at]
    }

    fn next(&mut self) -> Token<'a> {
        let t = self.toks[self.at].clone();
        if t.tok != Tok::Eof {
            self.at += 1;
        }
        t
    }

    fn err_at<T>(&self, t: &Token<'_>, expected: &str) -> R<T> {
        Err(Error {
            line: t.line,
            col: t.col,
            expected: expected.into(),
            found: describe(&t.tok),
        })
    }

    fn fail<T>(&self, expected: &str) -> R<T> {
        self.err_at(self.peek(), expected)
    }

    fn punct(&mut self, c: char) -> R<()> {
        if self.peek().tok == Tok::Punct(c) {
            self.next();
            Ok(())
        } else {
            self.fail(&format!("`{c}`"))
        }
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let yes = self.peek().tok == Tok::Punct(c);
        if yes {
            self.next();
        }
        yes
    }

    fn word(&mut self, what: &str) -> R<(&'a str, Token<'a>)> {
        let t = self.next();
        match t.tok {
            Tok::Word(w) => Ok((w, t)),
            _ => self.err_at(&t, what),
        }
    }

    fn keyword(&mut self, k: &str) -> R<()> {
        match &self.peek().tok {
            Tok::Word(w) if *w == k => {
                self.next();
                Ok(())
            }
            _ => self.fail(&format!("`{k}`")),
        }
    }

    fn is_word(&self, k: &str) -> bool {
        matches!(&self.peek().tok, Tok::Word(w) if *w == k)
    }

    fn newline(&mut self) -> R<()> {
        match self.peek().tok {
            Tok::Newline => {
                while self.peek().tok == Tok::Newline {
                    self.next();
                }
                Ok(())
            }
            Tok::Eof => Ok(()),
            _ => self.fail("the end of the line"),
        }
    }

    /// A number of decimal digits.
    fn number(&mut self, what: &str) -> R<u32> {
        let (w, t) = self.word(what)?;
        digits(w).map_or_else(|| self.err_at(&t, what), Ok)
    }

    /// `PREFIX` followed by a number: `v3`, `f0`, `s2`.
    fn named(&mut self, prefix: char, what: &str) -> R<(u32, Token<'a>)> {
        let (w, t) = self.word(what)?;
        match w.strip_prefix(prefix).and_then(digits) {
            Some(n) => Ok((n, t)),
            None => self.err_at(&t, what),
        }
    }

    fn val(&mut self) -> R<Val> {
        let (n, t) = self.named('v', "a value (`v0`, `v1`, ...)")?;
        self.checked_val(n, &t)
    }

    /// Value `n`, written at `t`.
    fn checked_val(&self, n: u32, t: &Token<'_>) -> R<Val> {
        if n >= MAX_VALUES {
            // The reader keeps a table entry per value number.
            return self.err_at(t, &format!("a value numbered below {MAX_VALUES}"));
        }
        Ok(Val::from_number(n))
    }

    fn func_id(&mut self) -> R<FuncId> {
        Ok(FuncId::new(
            self.named('f', "a function (`f0`, `f1`, ...)")?.0 as usize,
        ))
    }

    fn str_id(&mut self) -> R<StrId> {
        Ok(StrId::new(
            self.named('s', "a string (`s0`, `s1`, ...)")?.0 as usize,
        ))
    }

    /// `fN(vA, vB, ...)`: a callee and the arguments, which take the types
    /// of its parameters.
    fn callee_and_args(&mut self, p: &mut Pending) -> R<(FuncId, Vec<Val>)> {
        let g = self.func_id()?;
        let args = self.list(Self::val)?;
        for (i, a) in args.iter().enumerate() {
            p.used(*a, Src::Param(g, i));
        }
        Ok((g, args))
    }

    /// `at sN` after a call, if there.
    fn at_site(&mut self) -> R<Option<StrId>> {
        if !self.is_word("at") {
            return Ok(None);
        }
        self.next();
        self.str_id().map(Some)
    }

    /// A `vec_build`'s ` state v`, if it has one.
    fn state(&mut self) -> R<Option<Val>> {
        if !self.is_word("state") {
            return Ok(None);
        }
        self.next();
        self.val().map(Some)
    }

    /// `#N.K`: a tag or layout, a slot, and where they were written.
    fn numbered_slot(&mut self, what: &str) -> R<(u32, u32, Token<'a>)> {
        self.punct('#')?;
        let (w, t) = self.word(what)?;
        match w
            .split_once('.')
            .and_then(|(a, b)| Some((digits(a)?, digits(b)?)))
        {
            Some((n, k)) => Ok((n, k, t)),
            None => self.err_at(&t, what),
        }
    }

    /// `#N`.
    fn tag(&mut self) -> R<u32> {
        self.punct('#')?;
        self.number("a number")
    }

    fn ty(&mut self) -> R<Ty> {
        let (w, t) = self.word("a type (`f64`, `bool`, `ptr`)")?;
        match w {
            "f64" => Ok(Ty::F64),
            "bool" => Ok(Ty::Bool),
            "ptr" => Ok(Ty::Ptr),
            _ => self.err_at(&t, "a type (`f64`, `bool`, `ptr`)"),
        }
    }

    /// `(A, B, ...)`, each read by `one`.
    fn list<T>(&mut self, mut one: impl FnMut(&mut Self) -> R<T>) -> R<Vec<T>> {
        self.punct('(')?;
        let mut out = Vec::new();
        if self.eat_punct(')') {
            return Ok(out);
        }
        loop {
            out.push(one(self)?);
            if self.eat_punct(')') {
                return Ok(out);
            }
            self.punct(',')?;
        }
    }

    /// Values separated by commas, up to the end of the line.
    fn vals_to_eol(&mut self) -> R<Vec<Val>> {
        let mut out = Vec::new();
        if matches!(self.peek().tok, Tok::Newline | Tok::Eof) {
            return Ok(out);
        }
        loop {
            out.push(self.val()?);
            if !self.eat_punct(',') {
                return Ok(out);
            }
        }
    }

    fn module(&mut self) -> R<()> {
        let mut main_seen = false;
        while self.peek().tok == Tok::Newline {
            self.next();
        }
        loop {
            let t = self.peek().clone();
            match &t.tok {
                Tok::Eof => break,
                Tok::Word(w) if *w == "str" => self.string_line()?,
                Tok::Word(w) if *w == "cell" => self.cell_line()?,
                Tok::Word(w) if *w == "vector" => self.vector_line()?,
                Tok::Word(w) if *w == "func" => self.func()?,
                Tok::Word(w) if *w == "main" && !main_seen => {
                    self.next();
                    main_seen = true;
                    if self.is_word("none") {
                        self.next();
                    } else {
                        self.m.main = Some(self.func_id()?);
                    }
                    self.newline()?;
                }
                _ => {
                    let what = if main_seen {
                        "`str`, `cell`, `vector`, `func` or the end of the input"
                    } else {
                        "`str`, `cell`, `vector`, `func` or `main`"
                    };
                    return self.err_at(&t, what);
                }
            }
        }
        if !main_seen {
            return self.fail("`main`");
        }
        Ok(())
    }

    fn string_line(&mut self) -> R<()> {
        self.keyword("str")?;
        let want = format!("`s{}`", self.m.strings.len());
        let (w, t) = self.word(&want)?;
        if format!("`{w}`") != want {
            return self.err_at(&t, &want);
        }
        self.punct('=')?;
        let t = self.next();
        let Tok::Str(s) = t.tok else {
            return self.err_at(&t, "a string in quotes");
        };
        self.m.strings.push(s);
        self.newline()
    }

    fn cell_line(&mut self) -> R<()> {
        let start = self.peek().clone();
        self.keyword("cell")?;
        let tag = self.tag()?;
        self.punct('=')?;
        if self.peek().tok == Tok::Punct('(') {
            let layout = self.list(Self::ty)?;
            if self.cells.insert(tag, layout).is_some() {
                return self.err_at(&start, &format!("one line for cell #{tag}"));
            }
        } else {
            let slots = self.number("a number of slots or a layout `(ty, ...)`")?;
            self.plural("slot", slots)?;
            self.punct('(')?;
            let pointers = self.number("a number of pointers")?;
            self.plural("pointer", pointers)?;
            self.punct(')')?;
            self.sizes.push((
                tag,
                slots as usize,
                pointers as usize,
                start.line,
                start.col,
            ));
        }
        self.newline()
    }

    /// `vector #N = (ty, ...)`: the element layout of vectors `#N`.
    fn vector_line(&mut self) -> R<()> {
        let start = self.peek().clone();
        self.keyword("vector")?;
        let layout = self.tag()?;
        self.punct('=')?;
        let slots = self.list(Self::ty)?;
        if self.m.vectors.insert(layout, slots).is_some() {
            return self.err_at(&start, &format!("one line for vector #{layout}"));
        }
        self.newline()
    }

    /// `#N`, a vector layout declared by an earlier line: its slot types.
    fn vector_layout(&mut self) -> R<(u32, Vec<Ty>)> {
        let t = self.peek().clone();
        let layout = self.tag()?;
        match self.m.vectors.get(&layout) {
            Some(slots) => Ok((layout, slots.clone())),
            None => self.err_at(
                &t,
                &format!("a vector layout declared above (`vector #{layout} = (...)`)"),
            ),
        }
    }

    /// `slot` after 1, `slots` after any other number.
    fn plural(&mut self, what: &str, n: u32) -> R<()> {
        let want = if n == 1 {
            what.to_string()
        } else {
            format!("{what}s")
        };
        self.keyword(&want)
    }

    fn func(&mut self) -> R<()> {
        self.keyword("func")?;
        let id = self.m.funcs.len();
        let (n, t) = self.named('f', "a function (`f0`, `f1`, ...)")?;
        if n as usize != id {
            return self.err_at(&t, &format!("`f{id}` (functions are numbered in order)"));
        }
        let (name, _) = self.word("the function's name")?;
        let mut pending = Pending::default();
        let mut i = 0;
        let params = self.list(|r| {
            let t = r.peek().clone();
            let v = r.val()?;
            if v.number() != i {
                return r.err_at(&t, &format!("`v{i}` (parameters are numbered in order)"));
            }
            i += 1;
            r.punct(':')?;
            let ty = r.ty()?;
            pending.define(v, Src::Known(ty), &t);
            Ok(ty)
        })?;
        self.keyword("->")?;
        let returns = self.list(Self::ty)?;
        self.punct('{')?;
        self.newline()?;
        let body = self.block(&mut pending, &returns)?;
        self.punct('}')?;
        self.newline()?;
        self.m.funcs.push(Func {
            name: name.to_string(),
            params,
            returns,
            types: Vec::new(),
            body,
        });
        self.funcs.push(pending);
        Ok(())
    }

    /// Instructions and a terminator, up to (not including) the `}` that
    /// closes the block.
    fn block(&mut self, p: &mut Pending, returns: &[Ty]) -> R<Block> {
        let mut insts = Vec::new();
        loop {
            if let Some(term) = self.term()? {
                self.newline()?;
                match &term {
                    Term::Return(vs) => {
                        for (v, t) in vs.iter().zip(returns) {
                            p.used(*v, Src::Known(*t));
                        }
                    }
                    Term::TailCall(g, vs) => {
                        for (i, v) in vs.iter().enumerate() {
                            p.used(*v, Src::Param(*g, i));
                        }
                    }
                    Term::ErrorWith(parts) => {
                        for part in parts {
                            match part {
                                ErrPart::Real(v) => p.used(*v, Src::Known(Ty::F64)),
                                ErrPart::Bool(v) => p.used(*v, Src::Known(Ty::Bool)),
                                _ => {}
                            }
                        }
                    }
                    // Yields are typed by their `If`.
                    _ => {}
                }
                return Ok(Block { insts, term });
            }
            insts.push(self.inst(p, returns)?);
            self.newline()?;
        }
    }

    fn term(&mut self) -> R<Option<Term>> {
        let Tok::Word(w) = &self.peek().tok else {
            return Ok(None);
        };
        let term = match *w {
            "return" => {
                self.next();
                Term::Return(self.vals_to_eol()?)
            }
            "yield" => {
                self.next();
                Term::Yield(self.vals_to_eol()?)
            }
            "tailcall" => {
                self.next();
                let g = self.func_id()?;
                Term::TailCall(g, self.list(Self::val)?)
            }
            "error" => {
                self.next();
                let mut parts = Vec::new();
                while !matches!(self.peek().tok, Tok::Newline | Tok::Eof) {
                    let (w, t) = self.word("a part of an error message")?;
                    parts.push(match w {
                        "<" => ErrPart::ValueStart,
                        ">" => ErrPart::ValueEnd,
                        "site" => ErrPart::Site,
                        "captured" => ErrPart::Captured(self.number("the number of a captured stretch")?),
                        "at" => ErrPart::At(self.str_id()?),
                        "bool" => ErrPart::Bool(self.val()?),
                        _ => match (
                            w.strip_prefix('s').and_then(digits),
                            w.strip_prefix('v').and_then(digits),
                        ) {
                            (Some(n), _) => ErrPart::Str(StrId::new(n as usize)),
                            (_, Some(n)) => ErrPart::Real(self.checked_val(n, &t)?),
                            _ => {
                                return self.err_at(
                                    &t,
                                    "a part of an error message (`sN`, `vN`, `bool vN`, `<`, `>`, `site`, `at sN`, `captured N`)",
                                )
                            }
                        },
                    });
                }
                match parts[..] {
                    [ErrPart::Str(s)] => Term::Error(s),
                    _ => Term::ErrorWith(parts),
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(term))
    }

    /// Gives every value its type, checks the sizes cell lines give, and
    /// tells reals from booleans in error messages.
    fn finish(mut self) -> R<(Module, Cells)> {
        let funcs = std::mem::take(&mut self.funcs);
        let types = self.infer(&funcs);
        for (fi, (p, types)) in funcs.iter().zip(types).enumerate() {
            let mut tys = Vec::with_capacity(types.len());
            for (vi, t) in types.iter().enumerate() {
                tys.push(match (t, p.defs.get(vi).and_then(|d| d.as_ref())) {
                    (Some(t), _) => *t,
                    // Never defined: nothing can read it, and the verifier
                    // reports any use.
                    (None, None) => Ty::F64,
                    (None, Some((_, line, col))) => {
                        return Err(Error {
                            line: *line,
                            col: *col,
                            expected: "a value whose type its definition or a use tells".into(),
                            found: format!("`v{vi}`, of unknown type"),
                        });
                    }
                });
            }
            self.m.funcs[fi].types = tys;
        }
        let allocs = alloc_layouts(&self.m);
        for (tag, slots, pointers, line, col) in &self.sizes {
            let actual = allocs.get(tag).map_or((0, 0), |l| {
                (l.len(), l.iter().filter(|t| **t == Ty::Ptr).count())
            });
            if actual != (*slots, *pointers) {
                return Err(Error {
                    line: *line,
                    col: *col,
                    expected: format!(
                        "the sizes of the `alloc`s of cell #{tag}: {} slots, {} pointers",
                        actual.0, actual.1
                    ),
                    found: format!("{slots} slots, {pointers} pointers"),
                });
            }
        }
        // A tag without a `cell #N = (...)` line (a text of the older size
        // form, or a hand-written test) has the layout its allocs give.
        let mut cells = self.cells.clone();
        for (tag, layout) in allocs {
            cells.entry(tag).or_insert(layout);
        }
        self.m.cells = cells;
        Ok((self.m, self.cells))
    }

    /// The type of each value of each function, where its sources tell it.
    /// Values and cell slots are the nodes of a graph whose edges say
    /// "same type" (an `If`'s result and what its arms yield there; a slot
    /// and what loads from it give and allocs store in it); the types that
    /// definitions, uses, signatures and layouts fix spread along the
    /// edges, each node settled once.
    fn infer(&self, funcs: &[Pending]) -> Vec<Vec<Option<Ty>>> {
        let mut start = Vec::with_capacity(funcs.len());
        let mut n = 0;
        for p in funcs {
            start.push(n);
            n += p.defs.len().max(p.uses.len());
        }
        let mut ty: Vec<Option<Ty>> = vec![None; n];
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut slots: std::collections::HashMap<(u32, u32), usize> = Default::default();
        let mut slot_node =
            |tag: u32, k: u32, ty: &mut Vec<Option<Ty>>, edges: &mut Vec<Vec<usize>>| {
                *slots.entry((tag, k)).or_insert_with(|| {
                    let declared = self
                        .cells
                        .get(&tag)
                        .and_then(|l| l.get(k as usize))
                        .copied();
                    ty.push(declared);
                    edges.push(Vec::new());
                    ty.len() - 1
                })
            };
        for (fi, p) in funcs.iter().enumerate() {
            let values = p.defs.len().max(p.uses.len());
            for vi in 0..values {
                let node = start[fi] + vi;
                let def = p.defs.get(vi).and_then(|d| d.as_ref().map(|d| &d.0));
                let uses = p.uses.get(vi).map_or(&[][..], |u| &u[..]);
                let sig = |g: FuncId| self.m.funcs.get(g.index());
                for src in def.into_iter().chain(uses) {
                    let fixed = match *src {
                        Src::Known(t) => Some(t),
                        Src::Ret(g, k) => sig(g).and_then(|g| g.returns.get(k).copied()),
                        Src::Param(g, k) => sig(g).and_then(|g| g.params.get(k).copied()),
                        Src::Same(v) => {
                            if v.index() < values && v.index() != vi {
                                edges[node].push(start[fi] + v.index());
                                edges[start[fi] + v.index()].push(node);
                            }
                            None
                        }
                        Src::Slot(tag, k) => {
                            let s = slot_node(tag, k, &mut ty, &mut edges);
                            edges[node].push(s);
                            edges[s].push(node);
                            None
                        }
                    };
                    // The first source that tells counts: the definition's
                    // before the uses'.
                    if ty[node].is_none() {
                        ty[node] = fixed;
                    }
                }
            }
        }
        let mut work: Vec<usize> = (0..ty.len()).filter(|i| ty[*i].is_some()).collect();
        while let Some(i) = work.pop() {
            for j in std::mem::take(&mut edges[i]) {
                if ty[j].is_none() {
                    ty[j] = ty[i];
                    work.push(j);
                }
            }
        }
        funcs
            .iter()
            .enumerate()
            .map(|(fi, p)| ty[start[fi]..start[fi] + p.defs.len().max(p.uses.len())].to_vec())
            .collect()
    }
}

impl Pending {
    fn define(&mut self, v: Val, src: Src, at: &Token<'_>) {
        let i = v.index();
        if self.defs.len() <= i {
            self.defs.resize(i + 1, None);
        }
        if self.defs[i].is_none() {
            self.defs[i] = Some((src, at.line, at.col));
        }
    }

    fn used(&mut self, v: Val, src: Src) {
        let i = v.index();
        if self.uses.len() <= i {
            self.uses.resize(i + 1, Vec::new());
        }
        self.uses[i].push(src);
    }
}

/// A number written in decimal digits only (no sign).
fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The slot types of the cells each tag's allocs make, in slot order.
fn alloc_layouts(m: &Module) -> Cells {
    fn walk(f: &Func, b: &Block, out: &mut Cells) {
        for i in &b.insts {
            match &i.op {
                Op::Alloc(tag, fields) | Op::AllocZero(tag, fields) => {
                    let layout = fields.iter().map(|v| f.types[v.index()]).collect();
                    out.insert(*tag, layout);
                }
                Op::If { then_, else_, .. } => {
                    walk(f, then_, out);
                    walk(f, else_, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Cells::new();
    for f in &m.funcs {
        walk(f, &f.body, &mut out);
    }
    out
}
