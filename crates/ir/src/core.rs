//! The core IR: alpha-converted A-normal form, the language the AD
//! transformations, the interpreter and the flow analysis are written against.
//!
//! A [`Lambda`] is the paper's `λx0. let x1 = e1; ...; xn = en in xr`: one
//! parameter, a straight-line list of single-assignment [`Binding`]s and a
//! result variable. Conditionals are not special: `if` is an application of
//! the primitive `if-procedure` to two thunks, so every transformation only
//! has to handle straight-line code.
//!
//! Invariants:
//! - every [`Var`] is bound exactly once in the whole program (by a
//!   parameter, a binding, or the top level), and is only used inside the
//!   scope of its binder;
//! - `Lambda::free` lists exactly the variables a lambda uses but does not
//!   bind, sorted by `Var` (the paper's order `≺`); it is the layout of the
//!   closure environment, and a `Rhs::Closure` names one variable per slot;
//! - all members of a letrec [`Group`] share the group's `free` layout, and
//!   refer to each other with `Rhs::Sibling`, never through variables;
//! - tag stacks are outermost first: `[Reverse, Forward]` is a reverse value
//!   of a forward value.

use crate::entity::Arena;
use crate::prim::Prim;
use base::diag::Span;

base::entity!(Var, "x");
base::entity!(LambdaId, "L");
base::entity!(GroupId, "G");
base::entity!(ConstId, "k");
base::entity!(PatId, "p");

/// The kinds of AD tag (docs/reference.md).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Tag {
    Perturb,
    Forward,
    Sensitize,
    Reverse,
}

impl Tag {
    pub fn name(self) -> &'static str {
        match self {
            Tag::Perturb => "perturbation",
            Tag::Forward => "forward",
            Tag::Sensitize => "sensitivity",
            Tag::Reverse => "reverse",
        }
    }
    /// One letter, for transformed variable names in dumps.
    pub fn letter(self) -> char {
        match self {
            Tag::Perturb => 'P',
            Tag::Forward => 'F',
            Tag::Sensitize => 'S',
            Tag::Reverse => 'R',
        }
    }
}

/// The names of the thunks `if` makes of its arms.
pub const THEN: &str = "then";
pub const ELSE: &str = "else";

/// A stack of tags, outermost first.
pub type Tags = Vec<Tag>;

/// Pushes `t` as the new outermost tag.
pub fn push_tag(t: Tag, tags: &[Tag]) -> Tags {
    let mut v = Vec::with_capacity(tags.len() + 1);
    v.push(t);
    v.extend_from_slice(tags);
    v
}

#[derive(Clone, Debug)]
pub struct VarData {
    pub name: VarName,
}

/// A variable's name (read with [`Program::var_name`]).
#[derive(Clone, Debug)]
pub enum VarName {
    /// The source name, or one a stage chose.
    Given(String),
    /// The name of a variable of the code a transformation was applied to,
    /// then `^` and a letter (`x^R`): written out only when printed, since
    /// every variable of every transformed lambda has one (2.2 million in a
    /// constant derivative tower of height 8, a string each).
    Derived(Var, char),
}

/// Constant data, before tags are applied.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstDatum {
    Real(f64),
    Bool(bool),
    Nil,
    Pair(Box<ConstDatum>, Box<ConstDatum>),
    Vector(Vec<ConstDatum>),
    Prim(Prim),
}

/// A constant of transformed code: `tags` applied (innermost last) to the
/// datum, e.g. `*j` of the primitive `+` is `{Prim(+), [Reverse]}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Const {
    pub datum: ConstDatum,
    pub tags: Tags,
}

/// Where a lambda came from: source text or a transformation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Origin {
    Source,
    /// The transformation `tag` of another lambda (its code and, for the
    /// inverse operations, the way back).
    Transform {
        tag: Tag,
        of: LambdaId,
    },
    /// The built-in transformed primitive `tag(prim)` from the AD prelude.
    PrimTransform {
        tag: Tag,
        prim: Prim,
    },
    /// The backpropagator built inside the reverse transform of `of`.
    Backprop {
        of: LambdaId,
    },
    /// The procedure `(custom-*j f fr)` returns (docs/reference.md): it applies
    /// `f`, whose closure is environment slot `f`, and its reverse
    /// transform applies `fr`, slot `fr`, instead of differentiating the
    /// code (crate `ad`, `custom.rs`).
    Custom {
        f: u32,
        fr: u32,
    },
}

#[derive(Clone, Debug)]
pub struct Lambda {
    pub param: Var,
    /// Shared: a lambda's code never changes once made, and the stages
    /// that walk it while adding lambdas to the program (the analysis,
    /// the AD transformations, lowering) hold it by a count instead of a
    /// copy (a copy per specialisation was a twentieth of the analysis of
    /// a constant derivative tower).
    pub body: std::sync::Arc<[Binding]>,
    pub result: Var,
    pub free: Vec<Var>,
    pub group: Option<GroupId>,
    pub origin: Origin,
    pub name: Option<String>,
    pub span: Option<Span>,
}

/// Mutually recursive lambdas created together over one environment.
#[derive(Clone, Debug)]
pub struct Group {
    pub lambdas: Vec<LambdaId>,
    pub free: Vec<Var>,
}

#[derive(Clone, Debug)]
pub struct Binding {
    pub var: Var,
    pub rhs: Rhs,
    /// The source form this binding computes, for run-time errors.
    pub span: Option<Span>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Rhs {
    Const(ConstId),
    Copy(Var),
    /// Allocate a closure of `lambda`; `env[i]` fills slot `i`, i.e. the
    /// lambda's `free[i]`.
    Closure {
        lambda: LambdaId,
        env: Vec<Var>,
    },
    /// Inside a member of a letrec group: member `index` of the same group,
    /// over the current closure's environment.
    Sibling(u32),
    App {
        f: Var,
        arg: Var,
    },
    /// A pair in the world `tags`: `tags(cons a b)` built from `tags(a)`
    /// and `tags(b)`.
    Cons {
        tags: Tags,
        car: Var,
        cdr: Var,
    },
    Car {
        tags: Tags,
        pair: Var,
        pat: Option<PatId>,
    },
    Cdr {
        tags: Tags,
        pair: Var,
        pat: Option<PatId>,
    },
    /// A constant pattern: the value of `var` (seen through `tags`) must
    /// equal the constant; the binding's value is `var`'s.
    Check {
        tags: Tags,
        var: Var,
        expect: ConstId,
        pat: Option<PatId>,
    },
    /// Slot `index` of a closure's environment. Built by the reverse
    /// transform to take closure-shaped sensitivities apart.
    EnvRef {
        closure: Var,
        index: u32,
    },
    /// A copy of a closure with slot `index` replaced: the reverse of
    /// `EnvRef`, needed when reverse mode is applied to backpropagators.
    EnvUpdate {
        closure: Var,
        index: u32,
        value: Var,
    },
}

/// What a pattern match was, for the message when it fails.
#[derive(Clone, Debug)]
pub struct PatInfo {
    /// The procedure whose parameter (or `let`) it is.
    pub owner: Option<String>,
    /// The whole pattern, as written.
    pub text: String,
    pub span: Span,
}

/// A top-level statement.
#[derive(Clone, Debug)]
pub enum Stmt {
    Bind(Binding),
    /// Print (for `run`) or check (for `test`) the value of `var`.
    Show {
        var: Var,
        expect: Option<Expect>,
        span: Span,
    },
}

/// The datum after `===>`, with where it was written: what `stalingrad
/// test` compares the printed value against. The expander's own type,
/// re-exported so that the interpreter, which checks it, reads it from the
/// IR and needs nothing else of the front end.
pub use syntax::ast::{Expect, ExpectDatum};

/// A whole program: arenas plus the top-level statements. Transformations
/// append to the arenas; nothing is ever removed, so ids stay valid.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub vars: Arena<Var, VarData>,
    pub lambdas: Arena<LambdaId, Lambda>,
    pub groups: Arena<GroupId, Group>,
    pub consts: Arena<ConstId, Const>,
    pub patterns: Arena<PatId, PatInfo>,
    pub main: Vec<Stmt>,
}

impl Program {
    pub fn new_var(&mut self, name: impl Into<String>) -> Var {
        self.vars.push(VarData {
            name: VarName::Given(name.into()),
        })
    }

    /// A new variable named after `of`, with `^letter` (see
    /// [`VarName::Derived`]).
    pub fn derived_var(&mut self, of: Var, letter: char) -> Var {
        self.vars.push(VarData {
            name: VarName::Derived(of, letter),
        })
    }

    /// The name of `v`, a derived one written out.
    pub fn var_name(&self, v: Var) -> std::borrow::Cow<'_, str> {
        let mut letters = Vec::new();
        let mut at = v;
        loop {
            match &self.vars[at].name {
                VarName::Given(s) if letters.is_empty() => return s.as_str().into(),
                VarName::Given(s) => {
                    let mut name = s.clone();
                    for c in letters.iter().rev() {
                        name.push('^');
                        name.push(*c);
                    }
                    return name.into();
                }
                VarName::Derived(of, c) => {
                    letters.push(*c);
                    at = *of;
                }
            }
        }
    }

    /// The outermost tag a closure of this lambda carries, if any.
    pub fn lambda_tag(&self, l: LambdaId) -> Option<Tag> {
        match self.lambdas[l].origin {
            Origin::Transform { tag, .. } | Origin::PrimTransform { tag, .. } => Some(tag),
            Origin::Source | Origin::Backprop { .. } | Origin::Custom { .. } => None,
        }
    }

    /// The transformations that made lambda `l` (outermost first) and the
    /// lambda they were applied to: the world of `l`'s code, the
    /// derivatives in effect where it runs. No tags for a lambda of the
    /// source, a backpropagator or a custom derivative.
    pub fn transforms(&self, mut l: LambdaId) -> (Vec<Tag>, LambdaId) {
        let mut tags = Vec::new();
        while let Origin::Transform { tag, of } = self.lambdas[l].origin {
            tags.push(tag);
            l = of;
        }
        (tags, l)
    }

    /// The procedure of the user's whose code lambda `l` is: `l`, or for
    /// the thunk of an arm of `if`, the procedure holding that `if`.
    pub fn procedure_of(&self, mut l: LambdaId) -> LambdaId {
        loop {
            let lam = &self.lambdas[l];
            let arm = matches!(lam.origin, Origin::Source)
                && matches!(lam.name.as_deref(), Some(THEN | ELSE));
            match self.holder(l).filter(|_| arm) {
                Some(k) => l = k,
                None => return l,
            }
        }
    }

    /// The lambda whose code makes closures of lambda `l`, if any.
    fn holder(&self, l: LambdaId) -> Option<LambdaId> {
        self.lambdas
            .iter()
            .find(|(_, m)| {
                m.body
                    .iter()
                    .any(|b| matches!(b.rhs, Rhs::Closure { lambda, .. } if lambda == l))
            })
            .map(|(k, _)| k)
    }

    /// The world of lambda `l`'s code: the tags of the derivatives in
    /// effect where it runs, outermost first ([`Program::transforms`]; for
    /// a transformed primitive, [`Program::prim_chain`]; for a lambda
    /// written inside a transformed primitive of the AD prelude, such as
    /// the thunks of `if-procedure`'s, that primitive's world within).
    pub fn world(&self, l: LambdaId) -> Vec<Tag> {
        if let Some(tags) = self.prim_chain(l) {
            return tags;
        }
        let (mut tags, root) = self.transforms(l);
        let in_library = self.lambdas[root].span.is_none_or(|s| s.file.0 == 0);
        if matches!(self.lambdas[root].origin, Origin::Source) && in_library {
            if let Some(h) = self.holder(root) {
                tags.extend(self.world(h));
            }
        }
        tags
    }

    /// Whether lambda `l` is, or transforms, a backpropagator: code of a
    /// backward sweep, which the reverse transform wrote.
    pub fn is_backward_sweep(&self, mut l: LambdaId) -> bool {
        loop {
            match self.lambdas[l].origin {
                Origin::Backprop { .. } => return true,
                Origin::Transform { of, .. } => l = of,
                _ => return false,
            }
        }
    }

    /// The tags that took a primitive to lambda `l` (outermost first), if
    /// `l` is a chain of transformations of an AD prelude entry: such a
    /// closure is the transformed primitive itself (its zero is a nil
    /// tangent, and `bundle` and `tangent` treat it as one), in the
    /// interpreter and in the flow analysis alike.
    pub fn prim_chain(&self, mut l: LambdaId) -> Option<Vec<Tag>> {
        let mut tags = Vec::new();
        loop {
            match self.lambdas[l].origin {
                Origin::Transform { tag, of } => {
                    tags.push(tag);
                    l = of;
                }
                Origin::PrimTransform { tag, .. } => {
                    tags.push(tag);
                    return Some(tags);
                }
                Origin::Source | Origin::Backprop { .. } | Origin::Custom { .. } => return None,
            }
        }
    }
}

impl Rhs {
    /// The variables this right-hand side reads.
    pub fn uses(&self) -> Vec<Var> {
        self.each_use().collect()
    }

    /// [`Self::uses`], without making a vector (the analysis asks it of
    /// every binding of every specialisation).
    pub fn each_use(&self) -> impl Iterator<Item = Var> + '_ {
        let (two, env): ([Option<Var>; 2], &[Var]) = match self {
            Rhs::Const(_) | Rhs::Sibling(_) => ([None, None], &[]),
            Rhs::Copy(v) => ([Some(*v), None], &[]),
            Rhs::Closure { env, .. } => ([None, None], env),
            Rhs::App { f, arg } => ([Some(*f), Some(*arg)], &[]),
            Rhs::Cons { car, cdr, .. } => ([Some(*car), Some(*cdr)], &[]),
            Rhs::Car { pair, .. } | Rhs::Cdr { pair, .. } => ([Some(*pair), None], &[]),
            Rhs::Check { var, .. } => ([Some(*var), None], &[]),
            Rhs::EnvRef { closure, .. } => ([Some(*closure), None], &[]),
            Rhs::EnvUpdate { closure, value, .. } => ([Some(*closure), Some(*value)], &[]),
        };
        two.into_iter().flatten().chain(env.iter().copied())
    }
}

/// The free variables of a lambda body: used but not bound, sorted.
pub fn free_vars(param: Var, body: &[Binding], result: Var) -> Vec<Var> {
    let mut bound = std::collections::HashSet::new();
    bound.insert(param);
    let mut free = std::collections::BTreeSet::new();
    for b in body {
        for u in b.rhs.uses() {
            if !bound.contains(&u) {
                free.insert(u);
            }
        }
        bound.insert(b.var);
    }
    if !bound.contains(&result) {
        free.insert(result);
    }
    free.into_iter().collect()
}
