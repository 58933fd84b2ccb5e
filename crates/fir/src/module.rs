//! The FIR's data: a [`Module`] of functions, their blocks, instructions
//! and terminators (the invariants are in the crate documentation).

use base::EntityRef;
use std::collections::{BTreeMap, BTreeSet};

/// A scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    F64,
    /// 0 or 1 (an `i8` in machine code).
    Bool,
    /// A pointer to a union cell (an `i64`): the value of a union of
    /// shapes, the member's tag and then its scalars, 8 bytes each.
    Ptr,
}

base::entity!(
    /// A value of a function: a parameter or an instruction's result,
    /// indexing the function's `types`.
    Val,
    "v"
);
impl Val {
    /// The value's number, as lowering's symbolic values
    /// (`flow::Av::Leaf`) name it.
    pub fn number(self) -> u32 {
        u32::try_from(self.index()).expect("a value number fits in u32")
    }

    pub fn from_number(n: u32) -> Val {
        Val::new(n as usize)
    }
}

base::entity!(
    /// A function of the module, indexing `Module::funcs`.
    FuncId,
    "f"
);
base::entity!(
    /// A string constant of the module, indexing `Module::strings`.
    StrId,
    "s"
);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FBin {
    Add,
    /// An addition made by `plus` (accumulating sensitivities): counted
    /// with `plus`, not as arithmetic, as the interpreter counts it.
    PlusAdd,
    Sub,
    Mul,
    Div,
    /// `atan2(y, x)`: the first operand is y.
    Atan2,
}

/// Operations on one real and comparisons: VLAD's own, from `base`, so
/// that evaluation and constant folding compute them as the interpreter
/// does.
pub use base::scalar::{CmpOp as Cmp, UnOp as FUn};

impl FBin {
    /// The arithmetic this operation computes.
    pub fn scalar(self) -> base::scalar::BinOp {
        use base::scalar::BinOp;
        match self {
            FBin::Add | FBin::PlusAdd => BinOp::Add,
            FBin::Sub => BinOp::Sub,
            FBin::Mul => BinOp::Mul,
            FBin::Div => BinOp::Div,
            FBin::Atan2 => BinOp::Atan2,
        }
    }

    /// Its slot among the operation counters (`base::counters`); `None`
    /// for an addition made by `plus`, which is not an arithmetic
    /// primitive.
    pub fn counter_slot(self) -> Option<usize> {
        let name = match self {
            FBin::Add => "+",
            FBin::PlusAdd => return None,
            FBin::Sub => "-",
            FBin::Mul => "*",
            FBin::Div => "/",
            FBin::Atan2 => "atan",
        };
        base::counters::arithmetic_slot(name)
    }
}

/// The slot of an operation on one real among the operation counters.
pub fn un_counter_slot(op: FUn) -> usize {
    let name = match op {
        FUn::Sqrt => "sqrt",
        FUn::Exp => "exp",
        FUn::Log => "log",
        FUn::Sin => "sin",
        FUn::Cos => "cos",
    };
    base::counters::arithmetic_slot(name).expect("every arithmetic primitive has a counter slot")
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    F64Const(f64),
    BoolConst(bool),
    FBin(FBin, Val, Val),
    FUn(FUn, Val),
    /// Comparison of two reals, giving a `Bool`.
    FCmp(Cmp, Val, Val),
    /// `Bool` negation.
    Not(Val),
    Call(FuncId, Vec<Val>),
    /// A call made from the user's code at the position named by the
    /// string: while it runs, a run-time error that has no position of its
    /// own (raised in library code, or a parameter that does not match) is
    /// reported there, as the interpreter reports it.
    CallAt(FuncId, Vec<Val>, StrId),
    /// Structured conditional: runs one block; its results are what that
    /// block yields.
    If {
        cond: Val,
        then_: Block,
        else_: Block,
    },
    /// Prints a constant string (no newline).
    PrintStr(StrId),
    /// Prints a real in VLAD's format (no newline).
    PrintReal(Val),
    /// Prints `#t` or `#f` (no newline).
    PrintBool(Val),
    /// `Capture(true)` starts, and `Capture(false)` ends, a stretch in
    /// which printing (the calls made included) writes the next
    /// [`ErrPart::Captured`] of the error the block ends in, not the
    /// output: a part of a value known only at run time (a union's cells,
    /// a vector of run-time length) shown as `print` would write it.
    /// Only in a block that ends in `ErrorWith`, in pairs.
    Capture(bool),
    /// A new union cell: tag, then the member's scalars, one per slot of
    /// the tag's layout ([`Module::cells`]), of the slots' types. Gives a
    /// `Ptr`.
    Alloc(u32, Vec<Val>),
    /// A new union cell known to hold a zero (what `zero` makes): as
    /// `Alloc`, and marked so that [`Op::IsZero`] recognises it, which is
    /// how `plus` skips a zero operand without walking it.
    AllocZero(u32, Vec<Val>),
    /// Does the cell hold the member with this tag? Gives a `Bool`.
    TagIs(Val, u32),
    /// Was the cell made by [`Op::AllocZero`]? Gives a `Bool`.
    IsZero(Val),
    /// Looks the key (cell pointers) up in memo table `n`: gives a `Bool`
    /// (found) and the `Ptr` recorded (meaningless when not found). The
    /// tables remember what `zero` and `plus` gave for cells already
    /// walked, so a cell reached twice is walked once; they forget
    /// everything at each collection, which may free and reuse the cells
    /// named in them.
    MemoGet(u32, Vec<Val>),
    /// Records in memo table `n` the last operand (a `Ptr`) for the key
    /// made of the others.
    MemoPut(u32, Vec<Val>),
    /// Adds one to the operation counter in slot `n` of `base::counters`
    /// (code generation drops it unless counters are compiled in).
    Count(u32),
    /// Scalar number `slot` (the second number) of the member with tag
    /// `tag` (the first) that a cell holds; code tests the tag first. The
    /// result has the slot's type in the tag's layout. The tag says whose slot it is, so that a pass
    /// can tell which slots of a member anything reads
    /// ([`crate::passes::fields`]).
    Load(Val, u32, u32),
    /// Reads the next real from standard input. The string is the whole
    /// error message for the end of input, `file:line:col: error: `read-real`
    /// reached the end of input` (position optional); when the next word is
    /// not a numeral, the message printed is that one with its ending
    /// `reached the end of input` replaced by ``expects a real, found `WORD` ``.
    ReadReal(StrId),
    /// A new vector of `len` elements (the number), given slot by slot:
    /// `len` times the slots of layout `layout` ([`Module::vectors`]), in
    /// order. Gives a `Ptr`.
    VecOf(u32, u32, Vec<Val>),
    /// A new vector of `len` elements (a non-negative integral `F64`,
    /// checked before): element `i` is what `func(args..., i)` returns,
    /// the slots of layout `layout`, for `i` = 0, 1, ... in order. A call
    /// of `func` for each element (it may print or fail), made under the
    /// position `at` when there is one, as a [`Op::CallAt`] is. Gives a
    /// `Ptr`. With a `state` (a `Ptr`), the calls are `func(args...,
    /// state, i)` and return the element's slots and then the state of
    /// the next call, the first call's being `state`: a vector made from
    /// a list, the state being the rest of the list.
    VecBuild {
        layout: u32,
        len: Val,
        func: FuncId,
        args: Vec<Val>,
        at: Option<StrId>,
        state: Option<Val>,
    },
    /// The number of elements of a vector, an `F64`.
    VecLen(Val),
    /// Slot `slot` (the second number) of element `i` (an `F64`, checked
    /// before: see [`Op::VecIndexOk`]) of a vector of layout `layout` (the
    /// first number); the slot's type.
    VecLoad(Val, Val, u32, u32),
    /// Is `i` (an `F64`) an index of the vector: integral and `0 <= i <
    /// length`? Gives a `Bool`.
    VecIndexOk(Val, Val),
    /// Is the `F64` a length a vector may have: integral, `0 <= n <=`
    /// [`MAX_VECTOR_LEN`]? Gives a `Bool`.
    IsCount(Val),
    /// A new vector of `len` elements (a count, checked before) of layout
    /// `layout`, whose slots are all `F64`: every element zero. Zeros and
    /// the two operations below are reverse mode's sensitivities of
    /// vectors; compiled code keeps them as sums (the runtime's
    /// `vector_sum.rs`), so that a gradient that reads a vector k times
    /// costs O(n + k), not O(n k), and a read of their elements makes them
    /// first.
    VecZero(u32, Val),
    /// A new vector of `len` elements of layout `layout` (all `F64`), zero
    /// but element `i` (an index, checked before), whose slots are `vals`.
    VecOneHot {
        layout: u32,
        len: Val,
        i: Val,
        vals: Vec<Val>,
    },
    /// The zero of a vector of vectors (rows) whose elements are those of
    /// vectors of layout `row` (all `F64`), as long as the vector `of`,
    /// with row i as long as `of`'s element i (a vector): a vector of
    /// layout `layout` (one `Ptr`). Reverse mode's sensitivity of a vector
    /// of vectors, kept as a sum as [`Op::VecZero`]'s is.
    VecZeroOf {
        layout: u32,
        row: u32,
        of: Val,
    },
    /// [`Op::VecZeroOf`] but for row `i` (an index of `of`, checked
    /// before), which is the vector `val` (of layout `row`, or a sum).
    VecOneHotOf {
        layout: u32,
        row: u32,
        of: Val,
        i: Val,
        val: Val,
    },
    /// The elementwise sum of two vectors of layout `layout` (all `F64`,
    /// or one `Ptr` to a row of the sums above, added as rows are)
    /// of one length (checked before): each slot the `FBin::PlusAdd` of
    /// the two, a one-hot's other elements being 0 (so a -0 becomes 0),
    /// as the interpreter's sums of vectors give it; but a zero
    /// (`VecZero`) adds nothing, as the interpreter's `plus` of a zero:
    /// the two differ only in the sign of a zero. Gives a `Ptr`.
    VecPlus(u32, Val, Val),
    /// A stack of reals, for [`crate::passes::stacks`]: `buf`, a buffer
    /// (a vector of layout `layout`, all `F64`, whose element 0 holds in
    /// its first slot how many elements were pushed on it, the others
    /// following it, oldest first), as the stack of its first `k`
    /// elements, with `vals` pushed: gives the buffer of the stack of
    /// k + 1 elements, whose element k + 1 is `vals`. That is `buf`
    /// itself, written in place, when nothing was pushed on it past `k`
    /// and it has room; else a new buffer with its first `k` elements.
    /// Either way no stack of at most k elements changes, so the
    /// operation is as pure as an allocation. Gives a `Ptr`. `room`, an
    /// `F64`, is how many more pushes the stack will likely take after
    /// this one: a new buffer then has room for them all, where it would
    /// otherwise be twice as large as the old one (a hint: it changes no
    /// value).
    StackPush {
        layout: u32,
        buf: Val,
        k: Val,
        vals: Vec<Val>,
        room: Option<Val>,
    },
    /// Pushes the values (`F64`s and `Ptr`s) on the program's one stack
    /// of saved values, which outlives every call: what a recursion made a
    /// loop (`passes::unrecurse`) keeps of each level for the code after
    /// its call. The collector sees the pointers on it, as it sees those
    /// of the machine stack. An effect: it neither moves past another
    /// save or restore nor goes.
    Save(Vec<Val>),
    /// Pops the values of the last [`Op::Save`], of these types: gives
    /// them in the order they were saved. The program never restores what
    /// it did not save, nor as other types.
    Restore(Vec<Ty>),
}

/// The longest vector: lengths are `F64`s, and code generation makes them
/// integers; `IsCount` holds what may be a length to this
/// (`base::number::MAX_COUNT`, what every stage calls a length).
pub const MAX_VECTOR_LEN: f64 = base::number::MAX_COUNT;

#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub results: Vec<Val>,
    pub op: Op,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    Return(Vec<Val>),
    TailCall(FuncId, Vec<Val>),
    /// Ends an `If` arm with the `If`'s results.
    Yield(Vec<Val>),
    /// A run-time error: prints the string (a whole message, with its
    /// position) on standard error and exits with status 1.
    Error(StrId),
    /// A run-time error whose message shows values known only at run time:
    /// the parts, printed as `PrintStr`, `PrintReal` and `PrintBool` print,
    /// make one line on standard error; then exit with status 1.
    ErrorWith(Vec<ErrPart>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ErrPart {
    Str(StrId),
    Real(Val),
    Bool(Val),
    /// Brackets the text of one value: longer than 120 bytes, it is cut to
    /// 117 and `...` added, as the interpreter shortens values in messages.
    ValueStart,
    ValueEnd,
    /// `file:line:col: ` of the innermost `CallAt` running, if any.
    Site,
    /// `file:line:col: ` of this position (the string): a `Site` of a
    /// callee inlined at a `CallAt` of that position.
    At(StrId),
    /// What the block's stretch number `n` (from 0, in order) of
    /// [`Op::Capture`] printed.
    Captured(u32),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub insts: Vec<Inst>,
    pub term: Term,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    /// For dumps and symbol names; unique within the module.
    pub name: String,
    pub params: Vec<Ty>,
    pub returns: Vec<Ty>,
    /// The type of every value, indexed by `Val`.
    pub types: Vec<Ty>,
    pub body: Block,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    pub funcs: Vec<Func>,
    /// Runs the top-level expressions: no parameters, no results.
    pub main: Option<FuncId>,
    pub strings: Vec<String>,
    /// The layout of the cells of each member tag: the type of each slot,
    /// in order, its `Ptr`s first (the collector scans only a cell's
    /// leading pointer slots). Every tag an operation names is here.
    pub cells: BTreeMap<u32, Vec<Ty>>,
    /// The layout of the elements of the vectors of each layout number:
    /// the type of each slot of one element, its `Ptr`s first (the
    /// collector scans only the leading pointer slots of each element).
    /// Every layout a vector operation names is here.
    pub vectors: BTreeMap<u32, Vec<Ty>>,
}

impl Block {
    /// Instructions in the block, the blocks nested in it and its
    /// terminator: the measure of code size the inliner and code
    /// generation bound. The printing of an error message's values
    /// (`Op::Capture` stretches, a call each) is not counted: it runs once
    /// if ever, and counted, it took the inliner's budget from code that
    /// runs (det-gradient: 16% more instructions).
    pub fn size(&self) -> usize {
        let mut capturing = false;
        self.insts
            .iter()
            .map(|i| {
                if let Op::Capture(start) = i.op {
                    capturing = start;
                    return 0;
                }
                usize::from(!capturing)
                    + match &i.op {
                        Op::If { then_, else_, .. } => then_.size() + else_.size(),
                        _ => 0,
                    }
            })
            .sum::<usize>()
            + 1
    }
}

impl Module {
    pub fn func(&self, f: FuncId) -> &Func {
        &self.funcs[f.index()]
    }
    pub fn string(&self, s: StrId) -> &str {
        &self.strings[s.index()]
    }

    /// The id of string `s`, added if the module has no such string.
    pub fn intern(&mut self, s: &str) -> StrId {
        match self.strings.iter().position(|t| t == s) {
            Some(k) => StrId::new(k),
            None => {
                self.strings.push(s.to_string());
                StrId::new(self.strings.len() - 1)
            }
        }
    }

    /// Which functions a `VecBuild` calls: their signature is the
    /// vector's element layout and the index parameter, which the passes
    /// that change signatures leave as they are.
    pub fn built_funcs(&self) -> Vec<bool> {
        let mut out = vec![false; self.funcs.len()];
        for f in &self.funcs {
            f.body.for_each_call(&mut |g, _, kind| {
                if kind == crate::CallKind::Build {
                    if let Some(b) = out.get_mut(g.index()) {
                        *b = true;
                    }
                }
            });
        }
        out
    }

    /// The tags of the cells some `Alloc` or `AllocZero` makes.
    pub fn allocated_tags(&self) -> BTreeSet<u32> {
        let mut out = BTreeSet::new();
        for f in &self.funcs {
            f.body.for_each_inst(&mut |i| {
                if let Op::Alloc(t, _) | Op::AllocZero(t, _) = i.op {
                    out.insert(t);
                }
            });
        }
        out
    }
}
