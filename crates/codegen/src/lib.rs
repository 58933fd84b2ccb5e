//! Code generation: a [`lower::fir::Module`] to a relocatable object file,
//! through Cranelift.
//!
//! One Cranelift function per FIR function, all with the `tail` calling
//! convention (DESIGN-NOTES section 4): `F64` values live in float
//! registers, `Bool`s are `i8` (0 or 1). A structured `If` becomes a
//! conditional branch to two blocks that jump to a merge block whose block
//! parameters are the `If`'s results. A `TailCall` to the function itself
//! is a jump to the loop header just after the entry block; any other tail
//! call is a `return_call`. Functions with more results than the
//! convention returns in registers (8 float, 8 integer) take a hidden
//! first parameter: the address of a caller-owned return area of 8 bytes
//! per result; a tail call forwards the caller's own area, which is why
//! `TailCall` needs equal return types.
//!
//! The object exports one C-ABI symbol, `vlad_main`, which calls the FIR
//! `main`; the runtime's `main` calls it, then flushes output. It also
//! defines `vlad_count_ops` (one byte, 1 when compiled with operation
//! counters), which tells the runtime whether to print the counters.
//! Imported symbols: the runtime's `rt_*` functions and `rt_counts`, and
//! libm's `exp log sin cos atan2`.

use cranelift_codegen::ir::{
    condcodes::{FloatCC, IntCC},
    types, AbiParam, Block as ClBlock, BlockArg, FuncRef, GlobalValue, InstBuilder, MemFlagsData,
    Signature, StackSlotData, StackSlotKind, TrapCode, Type, UserFuncName, Value as ClValue,
};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataDescription, DataId, FuncId as ClFuncId, Linkage, Module as _};
use cranelift_object::{ObjectBuilder, ObjectModule};
use lower::fir::{self, Cmp, FBin, FUn, FuncId, Op, StrId, Term, Ty, Val};
use std::collections::HashMap;

pub mod link;
pub use link::{link, Linked, RUNTIME};

/// What to compile and how.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Count arithmetic operations and comparisons at run time (printed by
    /// the runtime at exit in the interpreter's `--count-ops=json` format).
    pub count_ops: bool,
    /// Also return the Cranelift IR text of every function (before
    /// Cranelift's own optimisation).
    pub want_clif: bool,
}

/// The result of [`compile`].
pub struct Output {
    /// A relocatable object file for the host.
    pub object: Vec<u8>,
    /// Cranelift IR text, when [`Options::want_clif`] was set.
    pub clif: String,
}

/// The C-ABI entry point the runtime's `main` calls.
pub const ENTRY_SYMBOL: &str = "vlad_main";
/// The byte that tells the runtime whether counters were compiled in.
pub const COUNT_FLAG_SYMBOL: &str = "vlad_count_ops";

/// Index of each counted operation in the runtime's `rt_counts` array:
/// the arithmetic primitives in `Prim::ALL` order, then comparisons.
/// `None` for additions that are not arithmetic primitives.
pub fn count_index_bin(op: FBin) -> Option<usize> {
    match op {
        FBin::Add => Some(0),
        FBin::PlusAdd => None,
        FBin::Sub => Some(1),
        FBin::Mul => Some(2),
        FBin::Div => Some(3),
        FBin::Atan2 => Some(4),
    }
}

/// See [`count_index_bin`].
pub fn count_index_un(op: FUn) -> usize {
    match op {
        FUn::Sqrt => 5,
        FUn::Exp => 6,
        FUn::Log => 7,
        FUn::Sin => 8,
        FUn::Cos => 9,
    }
}

/// `rt_counts[COUNT_COMPARISONS]` counts `FCmp`s.
pub const COUNT_COMPARISONS: usize = 10;

/// Results returned in registers at most, per register class.
const MAX_REG_RETURNS: usize = 8;

/// Compiles a module to an object file for the host.
pub fn compile(m: &fir::Module, opts: &Options) -> Result<Output, String> {
    let isa = host_isa()?;
    let builder = ObjectBuilder::new(isa, "vlad", cranelift_module::default_libcall_names())
        .map_err(|e| format!("cannot create object: {e}"))?;
    let mut cg = Codegen {
        module: ObjectModule::new(builder),
        m,
        opts,
        funcs: Vec::new(),
        imports: HashMap::new(),
        strings: HashMap::new(),
        counts: None,
        stack_limit: None,
        clif: String::new(),
    };
    let groups = plan_groups(m);
    cg.declare_all(&groups)?;
    for group in &groups {
        cg.define(group)?;
    }
    cg.define_entry()?;
    cg.define_count_flag()?;
    let clif = std::mem::take(&mut cg.clif);
    let product = cg.module.finish();
    let object = product
        .emit()
        .map_err(|e| format!("cannot write object: {e}"))?;
    Ok(Output { object, clif })
}

/// The host ISA with the flags DESIGN-NOTES section 4 asks for.
fn host_isa() -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    for (k, v) in [
        // FIR comes optimised (common subexpressions merged, dead code
        // removed) and its arithmetic ordered for the loops' critical
        // paths and registers (`lower::schedule`); Cranelift's own
        // optimiser would re-place every pure instruction at its first use,
        // which measured slower (more spills) on every benchmark.
        ("opt_level", "none"),
        ("is_pic", "true"),
        // `return_call` needs frame pointers on x86-64.
        ("preserve_frame_pointers", "true"),
    ] {
        flags
            .set(k, v)
            .map_err(|e| format!("cranelift setting {k}={v}: {e}"))?;
    }
    let mut isa = cranelift_codegen::isa::lookup(target_lexicon::Triple::host())
        .map_err(|e| format!("unsupported host: {e}"))?;
    // The executable runs where it is built (like `-march=native`): use
    // the three-operand AVX encodings of the scalar float instructions
    // when the host has them, which saves most register copies. Never
    // `has_fma`: Cranelift does not fuse on its own, but results must
    // stay the interpreter's bit for bit, so leave no room for it.
    #[cfg(target_arch = "x86_64")]
    for (flag, present) in [
        ("has_sse3", std::arch::is_x86_feature_detected!("sse3")),
        ("has_ssse3", std::arch::is_x86_feature_detected!("ssse3")),
        ("has_sse41", std::arch::is_x86_feature_detected!("sse4.1")),
        ("has_sse42", std::arch::is_x86_feature_detected!("sse4.2")),
        ("has_avx", std::arch::is_x86_feature_detected!("avx")),
    ] {
        if present {
            isa.enable(flag)
                .map_err(|e| format!("cranelift setting {flag}: {e}"))?;
        }
    }
    isa.finish(settings::Flags::new(flags))
        .map_err(|e| format!("cannot configure the code generator: {e}"))
}

fn block_args(vs: &[ClValue]) -> Vec<BlockArg> {
    vs.iter().map(|v| BlockArg::from(*v)).collect()
}

fn cl_ty(t: Ty) -> Type {
    match t {
        Ty::F64 => types::F64,
        Ty::Bool => types::I8,
        Ty::Ptr => types::I64,
    }
}

/// Whether a function with these results returns them through a return
/// area rather than in registers.
fn uses_ret_area(returns: &[Ty]) -> bool {
    let floats = returns.iter().filter(|t| **t == Ty::F64).count();
    floats > MAX_REG_RETURNS || returns.len() - floats > MAX_REG_RETURNS
}

/// Symbol-safe spelling of a FIR function name.
fn symbol(i: usize, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("vlad_f{i}_{clean}")
}

/// Most FIR instructions compiled into one Cranelift function by merging
/// the functions a function tail-calls into it.
const MAX_GROUP_SIZE: usize = 12_000;

fn tail_callees(b: &fir::Block, out: &mut Vec<FuncId>) {
    for i in &b.insts {
        if let Op::If { then_, else_, .. } = &i.op {
            tail_callees(then_, out);
            tail_callees(else_, out);
        }
    }
    if let Term::TailCall(g, _) = &b.term {
        out.push(*g);
    }
}

fn called(b: &fir::Block, out: &mut Vec<FuncId>) {
    for i in &b.insts {
        match &i.op {
            Op::Call(g, _) | Op::CallAt(g, _, _) => out.push(*g),
            Op::If { then_, else_, .. } => {
                called(then_, out);
                called(else_, out);
            }
            _ => {}
        }
    }
}

/// Which Cranelift functions to make: one per function entered from
/// outside by a call (or `main`), holding, as blocks, the functions it
/// reaches by tail calls (the mutual tail calls of a loop specialised into
/// several functions), so that those tail calls are jumps. The first
/// member of a group is the function it defines; a tail call out of a
/// group (over the size limit) makes its callee a group of its own.
fn plan_groups(m: &fir::Module) -> Vec<Vec<FuncId>> {
    let n = m.funcs.len();
    let sizes: Vec<usize> = m.funcs.iter().map(|f| f.body.size()).collect();
    let mut root = vec![false; n];
    let mut work: Vec<FuncId> = Vec::new();
    let mark = |g: FuncId, root: &mut Vec<bool>, work: &mut Vec<FuncId>| {
        if !root[g.0 as usize] {
            root[g.0 as usize] = true;
            work.push(g);
        }
    };
    if let Some(main) = m.main {
        mark(main, &mut root, &mut work);
    }
    let mut out = Vec::new();
    for f in &m.funcs {
        out.clear();
        called(&f.body, &mut out);
        for &g in &out {
            mark(g, &mut root, &mut work);
        }
    }
    let mut groups = Vec::new();
    let mut i = 0;
    while i < work.len() {
        let r = work[i];
        i += 1;
        let mut members = vec![r];
        let mut total = sizes[r.0 as usize];
        let mut seen = std::collections::HashSet::new();
        seen.insert(r);
        let mut k = 0;
        let mut out = Vec::new();
        while k < members.len() {
            out.clear();
            tail_callees(&m.func(members[k]).body, &mut out);
            k += 1;
            for &g in &out {
                if !seen.insert(g) {
                    continue;
                }
                if total + sizes[g.0 as usize] <= MAX_GROUP_SIZE {
                    total += sizes[g.0 as usize];
                    members.push(g);
                } else if !root[g.0 as usize] {
                    root[g.0 as usize] = true;
                    work.push(g);
                }
            }
        }
        groups.push(members);
    }
    groups
}

struct Codegen<'a> {
    module: ObjectModule,
    m: &'a fir::Module,
    opts: &'a Options,
    funcs: Vec<Option<ClFuncId>>,
    imports: HashMap<&'static str, ClFuncId>,
    strings: HashMap<StrId, DataId>,
    counts: Option<DataId>,
    stack_limit: Option<DataId>,
    clif: String,
}

impl Codegen<'_> {
    fn signature(&self, f: &fir::Func) -> Signature {
        let mut sig = Signature::new(CallConv::Tail);
        if uses_ret_area(&f.returns) {
            sig.params.push(AbiParam::new(types::I64));
        } else {
            sig.returns
                .extend(f.returns.iter().map(|t| AbiParam::new(cl_ty(*t))));
        }
        sig.params
            .extend(f.params.iter().map(|t| AbiParam::new(cl_ty(*t))));
        sig
    }

    /// Declares the functions that head a group (the others are only
    /// blocks of their groups).
    fn declare_all(&mut self, groups: &[Vec<FuncId>]) -> Result<(), String> {
        self.funcs = vec![None; self.m.funcs.len()];
        for g in groups {
            let i = g[0].0 as usize;
            let f = &self.m.funcs[i];
            let sig = self.signature(f);
            let id = self
                .module
                .declare_function(&symbol(i, &f.name), Linkage::Local, &sig)
                .map_err(|e| format!("declaring `{}`: {e}", f.name))?;
            self.funcs[i] = Some(id);
        }
        Ok(())
    }

    fn func_id(&self, f: FuncId) -> Result<ClFuncId, String> {
        self.funcs[f.0 as usize].ok_or_else(|| {
            format!(
                "internal error: `{}` has no function of its own",
                self.m.func(f).name
            )
        })
    }

    /// An imported C function (SystemV), declared on first use.
    fn import(&mut self, name: &'static str) -> Result<ClFuncId, String> {
        if let Some(id) = self.imports.get(name) {
            return Ok(*id);
        }
        let (params, returns): (&[Type], &[Type]) = match name {
            "exp" | "log" | "sin" | "cos" => (&[types::F64], &[types::F64]),
            "atan2" => (&[types::F64, types::F64], &[types::F64]),
            "rt_print_str" | "rt_error" => (&[types::I64, types::I64], &[]),
            "rt_print_real" => (&[types::F64], &[]),
            "rt_print_bool" => (&[types::I32], &[]),
            "rt_read_real" => (&[types::I64, types::I64], &[types::F64]),
            "rt_alloc" => (&[types::I64], &[types::I64]),
            "rt_stack_overflow" | "rt_err_end" | "rt_err_value_start" | "rt_err_value_end"
            | "rt_err_site" => (&[], &[]),
            "rt_err_str" => (&[types::I64, types::I64], &[]),
            "rt_err_real" => (&[types::F64], &[]),
            "rt_err_bool" => (&[types::I32], &[]),
            _ => return Err(format!("internal error: unknown import `{name}`")),
        };
        let mut sig = Signature::new(CallConv::SystemV);
        sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        sig.returns
            .extend(returns.iter().map(|t| AbiParam::new(*t)));
        let id = self
            .module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| format!("declaring `{name}`: {e}"))?;
        self.imports.insert(name, id);
        Ok(id)
    }

    fn string_data(&mut self, s: StrId) -> Result<DataId, String> {
        if let Some(id) = self.strings.get(&s) {
            return Ok(*id);
        }
        let text = self
            .m
            .strings
            .get(s.0 as usize)
            .ok_or_else(|| format!("internal error: no string {}", s.0))?;
        let id = self
            .module
            .declare_data(&format!("vlad_str{}", s.0), Linkage::Local, false, false)
            .map_err(|e| e.to_string())?;
        let mut desc = DataDescription::new();
        // One spare byte so that an empty string is still a valid object.
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        desc.define(bytes.into_boxed_slice());
        self.module
            .define_data(id, &desc)
            .map_err(|e| e.to_string())?;
        self.strings.insert(s, id);
        Ok(id)
    }

    /// The runtime's lowest allowed stack address.
    fn stack_limit_data(&mut self) -> Result<DataId, String> {
        if let Some(id) = self.stack_limit {
            return Ok(id);
        }
        let id = self
            .module
            .declare_data("rt_stack_limit", Linkage::Import, false, false)
            .map_err(|e| e.to_string())?;
        self.stack_limit = Some(id);
        Ok(id)
    }

    fn counts_data(&mut self) -> Result<DataId, String> {
        if let Some(id) = self.counts {
            return Ok(id);
        }
        let id = self
            .module
            .declare_data("rt_counts", Linkage::Import, true, false)
            .map_err(|e| e.to_string())?;
        self.counts = Some(id);
        Ok(id)
    }

    fn define_count_flag(&mut self) -> Result<(), String> {
        let id = self
            .module
            .declare_data(COUNT_FLAG_SYMBOL, Linkage::Export, false, false)
            .map_err(|e| e.to_string())?;
        let mut desc = DataDescription::new();
        desc.define(vec![self.opts.count_ops as u8].into_boxed_slice());
        self.module
            .define_data(id, &desc)
            .map_err(|e| e.to_string())
    }

    /// `vlad_main`: a SystemV function calling the FIR main.
    fn define_entry(&mut self) -> Result<(), String> {
        let sig = Signature::new(CallConv::SystemV);
        let id = self
            .module
            .declare_function(ENTRY_SYMBOL, Linkage::Export, &sig)
            .map_err(|e| e.to_string())?;
        let mut ctx = self.module.make_context();
        ctx.func.signature = sig;
        ctx.func.name = UserFuncName::user(1, self.m.funcs.len() as u32);
        let mut fctx = FunctionBuilderContext::new();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let entry = b.create_block();
            b.switch_to_block(entry);
            if let Some(main) = self.m.main {
                let f = self.m.func(main);
                if !f.params.is_empty() || !f.returns.is_empty() {
                    return Err("internal error: FIR main must take and return nothing".into());
                }
                let main_id = self.func_id(main)?;
                let callee = self.module.declare_func_in_func(main_id, b.func);
                b.ins().call(callee, &[]);
            }
            b.ins().return_(&[]);
            b.seal_all_blocks();
            b.finalize(self.module.target_config());
        }
        self.finish_function(id, &mut ctx, ENTRY_SYMBOL)
    }

    fn finish_function(
        &mut self,
        id: ClFuncId,
        ctx: &mut Context,
        name: &str,
    ) -> Result<(), String> {
        if self.opts.want_clif {
            self.clif
                .push_str(&format!("; {name}\n{}\n", ctx.func.display()));
        }
        self.module
            .define_function(id, ctx)
            .map_err(|e| format!("internal error: compiling `{name}`: {e:?}"))
    }

    /// Defines the Cranelift function of a group: its first member's
    /// entry, then every member as two blocks, `pre` (all parameters; other
    /// members' tail calls jump here) and `loop` (the parameters its self
    /// tail calls change; they jump here). A parameter every self tail call
    /// passes back unchanged is not a parameter of `loop`: it keeps its
    /// value from `pre`, with no copy on the back edge.
    fn define(&mut self, group: &[FuncId]) -> Result<(), String> {
        let fid = group[0];
        let f = self.m.func(fid);
        let mut ctx = self.module.make_context();
        ctx.func.signature = self.signature(f);
        ctx.func.name = UserFuncName::user(0, fid.0);
        let mut fctx = FunctionBuilderContext::new();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let entry_params = b.block_params(entry).to_vec();
            let ret_area = uses_ret_area(&f.returns).then(|| entry_params[0]);
            let offset = ret_area.is_some() as usize;
            let mut members = HashMap::new();
            for &g in group {
                let gf = self.m.func(g);
                let pre = b.create_block();
                for t in &gf.params {
                    b.append_block_param(pre, cl_ty(*t));
                }
                let fixed = invariant_params(g, gf);
                let lp = b.create_block();
                for (t, fx) in gf.params.iter().zip(&fixed) {
                    if !fx {
                        b.append_block_param(lp, cl_ty(*t));
                    }
                }
                members.insert(g, Member { pre, lp, fixed });
            }
            // Deep non-tail recursion would run off the stack: every
            // function checks the stack pointer against the limit the
            // runtime set, and reports instead of crashing.
            let limit_id = self.stack_limit_data()?;
            let limit_gv = self.module.declare_data_in_func(limit_id, b.func);
            let limit_addr = b.ins().symbol_value(types::I64, limit_gv);
            let limit = b
                .ins()
                .load(types::I64, MemFlagsData::trusted(), limit_addr, 0);
            let sp = b.ins().get_stack_pointer(types::I64);
            let ok = b.ins().icmp(IntCC::UnsignedGreaterThan, sp, limit);
            let overflow = b.create_block();
            b.ins().brif(
                ok,
                members[&fid].pre,
                &block_args(&entry_params[offset..]),
                overflow,
                &[],
            );
            b.switch_to_block(overflow);
            let over_id = self.import("rt_stack_overflow")?;
            let over_ref = self.module.declare_func_in_func(over_id, b.func);
            b.ins().call(over_ref, &[]);
            b.ins().trap(TrapCode::unwrap_user(1));
            let mut fb = FnBuilder {
                cg: self,
                b,
                f,
                fid,
                vals: Vec::new(),
                members,
                ret_area,
                yield_to: Vec::new(),
                func_refs: HashMap::new(),
                globals: HashMap::new(),
            };
            for &g in group {
                let gf = fb.cg.m.func(g);
                let mem = &fb.members[&g];
                let (pre, lp) = (mem.pre, mem.lp);
                let fixed = mem.fixed.clone();
                fb.b.switch_to_block(pre);
                let pre_params = fb.b.block_params(pre).to_vec();
                let moving: Vec<ClValue> = pre_params
                    .iter()
                    .zip(&fixed)
                    .filter(|(_, fx)| !**fx)
                    .map(|(v, _)| *v)
                    .collect();
                fb.b.ins().jump(lp, &block_args(&moving));
                fb.b.switch_to_block(lp);
                let lp_params = fb.b.block_params(lp).to_vec();
                let mut vals = vec![None; gf.types.len()];
                let mut next = lp_params.iter();
                for (i, fx) in fixed.iter().enumerate() {
                    vals[i] = Some(if *fx {
                        pre_params[i]
                    } else {
                        *next.next().expect("loop parameter")
                    });
                }
                fb.f = gf;
                fb.fid = g;
                fb.vals = vals;
                fb.block(&gf.body)?;
            }
            fb.b.seal_all_blocks();
            let config = fb.cg.module.target_config();
            fb.b.finalize(config);
        }
        let id = self.func_id(fid)?;
        self.finish_function(id, &mut ctx, &f.name)
    }
}

/// The blocks of a group member (see [`Codegen::define`]).
struct Member {
    pre: ClBlock,
    lp: ClBlock,
    /// Parameters every self tail call passes back unchanged.
    fixed: Vec<bool>,
}

/// Which parameters of `f` every self tail call of `f` passes back in
/// their own position.
fn invariant_params(fid: FuncId, f: &fir::Func) -> Vec<bool> {
    fn walk(b: &fir::Block, fid: FuncId, fixed: &mut [bool]) {
        for i in &b.insts {
            if let Op::If { then_, else_, .. } = &i.op {
                walk(then_, fid, fixed);
                walk(else_, fid, fixed);
            }
        }
        if let Term::TailCall(g, args) = &b.term {
            if *g == fid {
                for (i, a) in args.iter().enumerate() {
                    if a.0 as usize != i {
                        fixed[i] = false;
                    }
                }
            }
        }
    }
    let mut fixed = vec![true; f.params.len()];
    walk(&f.body, fid, &mut fixed);
    fixed
}

struct FnBuilder<'a, 'b> {
    cg: &'b mut Codegen<'a>,
    b: FunctionBuilder<'b>,
    f: &'a fir::Func,
    fid: FuncId,
    vals: Vec<Option<ClValue>>,
    /// The functions of this group, as blocks.
    members: HashMap<FuncId, Member>,
    ret_area: Option<ClValue>,
    /// Merge blocks of the enclosing `If`s, innermost last.
    yield_to: Vec<ClBlock>,
    func_refs: HashMap<ClFuncId, FuncRef>,
    globals: HashMap<DataId, GlobalValue>,
}

impl FnBuilder<'_, '_> {
    fn val(&self, v: Val) -> Result<ClValue, String> {
        self.vals
            .get(v.0 as usize)
            .copied()
            .flatten()
            .ok_or_else(|| {
                format!(
                    "internal error: {v} used before definition in `{}`",
                    self.f.name
                )
            })
    }

    fn vals(&self, vs: &[Val]) -> Result<Vec<ClValue>, String> {
        vs.iter().map(|v| self.val(*v)).collect()
    }

    fn set(&mut self, v: Val, x: ClValue) -> Result<(), String> {
        let slot = self
            .vals
            .get_mut(v.0 as usize)
            .ok_or_else(|| format!("internal error: {v} has no type"))?;
        *slot = Some(x);
        Ok(())
    }

    fn func_ref(&mut self, id: ClFuncId) -> FuncRef {
        if let Some(r) = self.func_refs.get(&id) {
            return *r;
        }
        let r = self.cg.module.declare_func_in_func(id, self.b.func);
        self.func_refs.insert(id, r);
        r
    }

    /// Addresses of the runtime's current call site (`rt_site_ptr`,
    /// `rt_site_len`).
    fn site_globals(&mut self) -> Result<(ClValue, ClValue), String> {
        let addr = |name: &str, this: &mut Self| -> Result<ClValue, String> {
            let id = this
                .cg
                .module
                .declare_data(name, Linkage::Import, true, false)
                .map_err(|e| e.to_string())?;
            let g = this.global(id);
            Ok(this.b.ins().symbol_value(types::I64, g))
        };
        let p = addr("rt_site_ptr", self)?;
        let l = addr("rt_site_len", self)?;
        Ok((p, l))
    }

    fn global(&mut self, id: DataId) -> GlobalValue {
        if let Some(g) = self.globals.get(&id) {
            return *g;
        }
        let g = self.cg.module.declare_data_in_func(id, self.b.func);
        self.globals.insert(id, g);
        g
    }

    fn call_import(
        &mut self,
        name: &'static str,
        args: &[ClValue],
    ) -> Result<Option<ClValue>, String> {
        let id = self.cg.import(name)?;
        let r = self.func_ref(id);
        let call = self.b.ins().call(r, args);
        Ok(self.b.inst_results(call).first().copied())
    }

    /// Address and length of a module string.
    fn string(&mut self, s: StrId) -> Result<[ClValue; 2], String> {
        let id = self.cg.string_data(s)?;
        let len = self.cg.m.strings[s.0 as usize].len();
        let g = self.global(id);
        let ptr = self.b.ins().symbol_value(types::I64, g);
        let len = self.b.ins().iconst(types::I64, len as i64);
        Ok([ptr, len])
    }

    fn count(&mut self, index: usize) -> Result<(), String> {
        if !self.cg.opts.count_ops {
            return Ok(());
        }
        let id = self.cg.counts_data()?;
        let g = self.global(id);
        let base = self.b.ins().symbol_value(types::I64, g);
        let off = (index * 8) as i32;
        let n = self
            .b
            .ins()
            .load(types::I64, MemFlagsData::trusted(), base, off);
        let n = self.b.ins().iadd_imm_s(n, 1);
        self.b.ins().store(MemFlagsData::trusted(), n, base, off);
        Ok(())
    }

    fn block(&mut self, blk: &fir::Block) -> Result<(), String> {
        for inst in &blk.insts {
            self.inst(inst)?;
        }
        self.term(&blk.term)
    }

    fn inst(&mut self, inst: &fir::Inst) -> Result<(), String> {
        let one = |results: &[Val]| -> Result<Val, String> {
            match results {
                [r] => Ok(*r),
                _ => Err("internal error: instruction needs exactly one result".to_string()),
            }
        };
        match &inst.op {
            Op::F64Const(x) => {
                let v = self.b.ins().f64const(*x);
                self.set(one(&inst.results)?, v)?;
            }
            Op::BoolConst(x) => {
                let v = self.b.ins().iconst(types::I8, *x as i64);
                self.set(one(&inst.results)?, v)?;
            }
            Op::FBin(op, x, y) => {
                let (x, y) = (self.val(*x)?, self.val(*y)?);
                if let Some(i) = count_index_bin(*op) {
                    self.count(i)?;
                }
                let v = match op {
                    FBin::Add | FBin::PlusAdd => self.b.ins().fadd(x, y),
                    FBin::Sub => self.b.ins().fsub(x, y),
                    FBin::Mul => self.b.ins().fmul(x, y),
                    FBin::Div => self.b.ins().fdiv(x, y),
                    FBin::Atan2 => self
                        .call_import("atan2", &[x, y])?
                        .ok_or("internal error: atan2 result")?,
                };
                self.set(one(&inst.results)?, v)?;
            }
            Op::FUn(op, x) => {
                let x = self.val(*x)?;
                self.count(count_index_un(*op))?;
                let name = match op {
                    FUn::Sqrt => None,
                    FUn::Exp => Some("exp"),
                    FUn::Log => Some("log"),
                    FUn::Sin => Some("sin"),
                    FUn::Cos => Some("cos"),
                };
                let v = match name {
                    None => self.b.ins().sqrt(x),
                    Some(name) => self
                        .call_import(name, &[x])?
                        .ok_or("internal error: libm result")?,
                };
                self.set(one(&inst.results)?, v)?;
            }
            Op::FCmp(c, x, y) => {
                let (x, y) = (self.val(*x)?, self.val(*y)?);
                self.count(COUNT_COMPARISONS)?;
                let cc = match c {
                    Cmp::Eq => FloatCC::Equal,
                    Cmp::Lt => FloatCC::LessThan,
                    Cmp::Gt => FloatCC::GreaterThan,
                    Cmp::Le => FloatCC::LessThanOrEqual,
                    Cmp::Ge => FloatCC::GreaterThanOrEqual,
                };
                let v = self.b.ins().fcmp(cc, x, y);
                self.set(one(&inst.results)?, v)?;
            }
            Op::Not(x) => {
                let x = self.val(*x)?;
                let v = self.b.ins().bxor_imm_u(x, 1);
                self.set(one(&inst.results)?, v)?;
            }
            Op::Call(callee, args) | Op::CallAt(callee, args, _) => {
                // The runtime's current call site, set for the call's
                // duration (see `ErrPart::Site`).
                let saved = match &inst.op {
                    Op::CallAt(_, _, site) => {
                        let [ptr, len] = self.string(*site)?;
                        let (pa, la) = self.site_globals()?;
                        let old_p = self
                            .b
                            .ins()
                            .load(types::I64, MemFlagsData::trusted(), pa, 0);
                        let old_l = self
                            .b
                            .ins()
                            .load(types::I64, MemFlagsData::trusted(), la, 0);
                        self.b.ins().store(MemFlagsData::trusted(), ptr, pa, 0);
                        self.b.ins().store(MemFlagsData::trusted(), len, la, 0);
                        Some((pa, la, old_p, old_l))
                    }
                    _ => None,
                };
                let results = self.call(*callee, args)?;
                if let Some((pa, la, old_p, old_l)) = saved {
                    self.b.ins().store(MemFlagsData::trusted(), old_p, pa, 0);
                    self.b.ins().store(MemFlagsData::trusted(), old_l, la, 0);
                }
                if results.len() != inst.results.len() {
                    return Err(format!(
                        "internal error: call of `{}` with {} results",
                        self.cg.m.func(*callee).name,
                        inst.results.len()
                    ));
                }
                for (r, v) in inst.results.iter().zip(results) {
                    self.set(*r, v)?;
                }
            }
            Op::If { cond, then_, else_ } => {
                let c = self.val(*cond)?;
                let then_blk = self.b.create_block();
                let else_blk = self.b.create_block();
                let merge = self.b.create_block();
                for r in &inst.results {
                    let t = self.f.types[r.0 as usize];
                    self.b.append_block_param(merge, cl_ty(t));
                }
                self.b.ins().brif(c, then_blk, &[], else_blk, &[]);
                self.yield_to.push(merge);
                self.b.switch_to_block(then_blk);
                self.block(then_)?;
                self.b.switch_to_block(else_blk);
                self.block(else_)?;
                self.yield_to.pop();
                self.b.switch_to_block(merge);
                let params = self.b.block_params(merge).to_vec();
                for (r, v) in inst.results.iter().zip(params) {
                    self.set(*r, v)?;
                }
            }
            Op::PrintStr(s) => {
                let args = self.string(*s)?;
                self.call_import("rt_print_str", &args)?;
            }
            Op::PrintReal(x) => {
                let x = self.val(*x)?;
                self.call_import("rt_print_real", &[x])?;
            }
            Op::PrintBool(x) => {
                let x = self.val(*x)?;
                let x = self.b.ins().uextend(types::I32, x);
                self.call_import("rt_print_bool", &[x])?;
            }
            Op::ReadReal(s) => {
                let args = self.string(*s)?;
                let v = self
                    .call_import("rt_read_real", &args)?
                    .ok_or("internal error: read-real result")?;
                self.set(one(&inst.results)?, v)?;
            }
            Op::Alloc(tag, fields) => {
                // A cell: the tag, then one 8-byte slot per scalar.
                let fields = self.vals(fields)?;
                let size = self
                    .b
                    .ins()
                    .iconst(types::I64, 8 * (1 + fields.len() as i64));
                let p = self
                    .call_import("rt_alloc", &[size])?
                    .ok_or("internal error: rt_alloc result")?;
                let t = self.b.ins().iconst(types::I64, i64::from(*tag));
                self.b.ins().store(MemFlagsData::trusted(), t, p, 0);
                for (i, x) in fields.into_iter().enumerate() {
                    let off = 8 * (1 + i as i32);
                    self.b.ins().store(MemFlagsData::trusted(), x, p, off);
                }
                self.set(one(&inst.results)?, p)?;
            }
            Op::TagIs(p, tag) => {
                let p = self.val(*p)?;
                let t = self.b.ins().load(types::I64, MemFlagsData::trusted(), p, 0);
                let v = self.b.ins().icmp_imm_s(IntCC::Equal, t, i64::from(*tag));
                self.set(one(&inst.results)?, v)?;
            }
            Op::Load(p, n) => {
                let p = self.val(*p)?;
                let r = one(&inst.results)?;
                let ty = cl_ty(self.f.types[r.0 as usize]);
                let off = 8 * (1 + *n as i32);
                let v = self.b.ins().load(ty, MemFlagsData::trusted(), p, off);
                self.set(r, v)?;
            }
        }
        Ok(())
    }

    /// A non-tail call; returns the callee's results.
    fn call(&mut self, callee: FuncId, args: &[Val]) -> Result<Vec<ClValue>, String> {
        let g = self.cg.m.func(callee);
        let mut argv = self.vals(args)?;
        let area = if uses_ret_area(&g.returns) {
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                (g.returns.len() * 8) as u32,
                3,
            ));
            let addr = self.b.ins().stack_addr(types::I64, slot, 0);
            argv.insert(0, addr);
            Some(addr)
        } else {
            None
        };
        let id = self.cg.func_id(callee)?;
        let r = self.func_ref(id);
        let call = self.b.ins().call(r, &argv);
        match area {
            None => Ok(self.b.inst_results(call).to_vec()),
            Some(addr) => Ok(g
                .returns
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    self.b
                        .ins()
                        .load(cl_ty(*t), MemFlagsData::trusted(), addr, (i * 8) as i32)
                })
                .collect()),
        }
    }

    fn term(&mut self, t: &Term) -> Result<(), String> {
        match t {
            Term::Return(vs) => {
                let vs = self.vals(vs)?;
                match self.ret_area {
                    None => {
                        self.b.ins().return_(&vs);
                    }
                    Some(addr) => {
                        for (i, v) in vs.iter().enumerate() {
                            self.b
                                .ins()
                                .store(MemFlagsData::trusted(), *v, addr, (i * 8) as i32);
                        }
                        self.b.ins().return_(&[]);
                    }
                }
            }
            Term::TailCall(callee, args) => {
                let mut argv = self.vals(args)?;
                if let Some(mem) = self.members.get(callee) {
                    if *callee == self.fid {
                        let moving: Vec<ClValue> = argv
                            .iter()
                            .zip(&mem.fixed)
                            .filter(|(_, fx)| !**fx)
                            .map(|(v, _)| *v)
                            .collect();
                        self.b.ins().jump(mem.lp, &block_args(&moving));
                    } else {
                        self.b.ins().jump(mem.pre, &block_args(&argv));
                    }
                } else {
                    if let Some(addr) = self.ret_area {
                        argv.insert(0, addr);
                    }
                    let id = self.cg.func_id(*callee)?;
                    let r = self.func_ref(id);
                    self.b.ins().return_call(r, &argv);
                }
            }
            Term::Yield(vs) => {
                let vs = self.vals(vs)?;
                let merge = *self
                    .yield_to
                    .last()
                    .ok_or("internal error: `yield` outside an `if`")?;
                self.b.ins().jump(merge, &block_args(&vs));
            }
            Term::Error(s) => {
                let args = self.string(*s)?;
                self.call_import("rt_error", &args)?;
                self.b.ins().trap(TrapCode::unwrap_user(1));
            }
            Term::ErrorWith(parts) => {
                for p in parts {
                    match p {
                        lower::fir::ErrPart::Str(s) => {
                            let args = self.string(*s)?;
                            self.call_import("rt_err_str", &args)?;
                        }
                        lower::fir::ErrPart::Real(v) => {
                            let x = self.val(*v)?;
                            self.call_import("rt_err_real", &[x])?;
                        }
                        lower::fir::ErrPart::Bool(v) => {
                            let x = self.val(*v)?;
                            let x = self.b.ins().uextend(types::I32, x);
                            self.call_import("rt_err_bool", &[x])?;
                        }
                        lower::fir::ErrPart::Site => {
                            self.call_import("rt_err_site", &[])?;
                        }
                        lower::fir::ErrPart::ValueStart => {
                            self.call_import("rt_err_value_start", &[])?;
                        }
                        lower::fir::ErrPart::ValueEnd => {
                            self.call_import("rt_err_value_end", &[])?;
                        }
                    }
                }
                self.call_import("rt_err_end", &[])?;
                self.b.ins().trap(TrapCode::unwrap_user(1));
            }
        }
        Ok(())
    }
}
