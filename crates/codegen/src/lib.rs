//! Code generation: a [`fir::Module`] to a relocatable object file,
//! through Cranelift. Input: a module that satisfies `fir::verify`. Output:
//! an object file (and, on request, the Cranelift IR as text).
//!
//! A FIR function entered by a call (or `main`) becomes one Cranelift
//! function, which also holds, as blocks, the functions it reaches by tail
//! calls (up to a size limit): a tail call within such a group, mutual ones
//! included, is a jump, and any other tail call a `return_call`. All
//! functions use the `tail` calling convention: `F64` values live in float
//! registers, `Bool`s are `i8` (0 or 1). A structured `If` becomes a
//! conditional branch to two blocks that jump to a merge block whose block
//! parameters are the `If`'s results. Functions with more results than the
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

use base::EntityRef;
use cranelift_codegen::ir::{
    condcodes::{FloatCC, IntCC},
    types, AbiParam, Block as ClBlock, BlockArg, FuncRef, GlobalValue, InstBuilder,
    InstructionData, MemFlagsData, Opcode, Signature, StackSlotData, StackSlotKind, TrapCode, Type,
    UserFuncName, Value as ClValue, ValueDef,
};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataDescription, DataId, FuncId as ClFuncId, Linkage, Module as _};
use cranelift_object::{ObjectBuilder, ObjectModule};
use fir::{self, Cmp, FBin, FUn, FuncId, Op, StrId, Term, Ty, Val};
use std::collections::{HashMap, HashSet};

mod acc_loop;
mod cold;
mod function;
mod groups;
mod induction;
pub mod lib_export;
pub mod link;
mod parallel;
mod vector;

use function::{invariant_params, Fact, FnBuilder, Known, Member};
use groups::{plan_groups, tail_callees};
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

/// Results returned in registers at most, per register class.
const MAX_REG_RETURNS: usize = 8;

/// Compiles a module to an object file for the host.
pub fn compile(m: &fir::Module, opts: &Options) -> Result<Output, String> {
    compile_entry(m, opts, ENTRY_SYMBOL)
}

/// [`compile`] for one export of a library (`lib_export`): the FIR `main`
/// is entered through the C-ABI symbol `entry`, and the object defines no
/// `vlad_count_ops` (a library has no exit to print counters at), so that
/// the objects of several exports link together.
pub fn compile_export(m: &fir::Module, opts: &Options, entry: &str) -> Result<Output, String> {
    compile_entry(m, opts, entry)
}

fn compile_entry(m: &fir::Module, opts: &Options, entry: &str) -> Result<Output, String> {
    let isa = host_isa()?;
    let builder = ObjectBuilder::new(
        isa.clone(),
        "vlad",
        cranelift_module::default_libcall_names(),
    )
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
        stack_checks: entry != ENTRY_SYMBOL || !cfg!(target_os = "linux"),
        clif: String::new(),
        jobs: None,
        done: Vec::new(),
        next_job: 0,
        consumed: fir::owned::consumed_sums(m),
        whole: fir::whole::whole_values(m),
        tested: m.funcs.iter().map(vector::tested_params).collect(),
        colds: HashMap::new(),
        cold_result: None,
    };
    // Cranelift compiles each function as it is defined.
    let functions = base::timing::span("cranelift");
    let groups = plan_groups(m);
    cg.declare_all(&groups)?;
    let compiled = parallel::run(&*isa, parallel::workers(), |jobs| {
        cg.jobs = jobs;
        let built = groups
            .iter()
            .try_for_each(|group| cg.define(group))
            .and_then(|()| cg.define_entry(entry));
        // Dropping the sender lets the workers stop once the queue is
        // empty, also after an error.
        cg.jobs = None;
        built?;
        Ok((std::mem::take(&mut cg.done), cg.next_job))
    })?;
    for c in compiled {
        cg.module
            .define_function_bytes(c.id, c.alignment, &c.bytes, &c.relocs)
            .map_err(|e| format!("internal error: defining a function: {e:?}"))?;
    }
    functions.end();
    let _object = base::timing::span("object");
    if entry == ENTRY_SYMBOL {
        cg.define_count_flag()?;
    }
    let clif = std::mem::take(&mut cg.clif);
    let product = cg.module.finish();
    let object = product
        .emit()
        .map_err(|e| format!("cannot write object: {e}"))?;
    Ok(Output { object, clif })
}

/// Whether Cranelift verifies each function it compiles.
fn verify_clif() -> bool {
    cfg!(debug_assertions) || std::env::var_os("VLAD_VERIFY_CLIF").is_some()
}

/// The host ISA with the flags DESIGN-NOTES section 4 asks for.
fn host_isa() -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    for (k, v) in [
        // FIR comes optimised (common subexpressions merged, dead code
        // removed) and its arithmetic ordered for the loops' critical
        // paths and registers (`fir::passes::schedule`); Cranelift's own
        // optimiser would re-place every pure instruction at its first use,
        // which measured slower (more spills) on every benchmark.
        ("opt_level", "none"),
        // Cranelift's verifier checks the IR this crate makes from FIR
        // (itself verified after lowering): a fifth of code generation
        // (tests/corpus/evaluator.vlad: 1.86 s -> 1.47 s). Debug builds
        // and the test suite (`VLAD_VERIFY_CLIF`) keep it.
        (
            "enable_verifier",
            if verify_clif() { "true" } else { "false" },
        ),
        ("is_pic", "true"),
        // `return_call` needs frame pointers on x86-64.
        ("preserve_frame_pointers", "true"),
        // A frame larger than a page touches its pages in order, so that
        // deep recursion meets the guard pages below the stack's limit
        // rather than stepping over them (runtime/src/stack_guard.rs).
        ("enable_probestack", "true"),
        ("probestack_strategy", "inline"),
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

struct Codegen<'a> {
    module: ObjectModule,
    m: &'a fir::Module,
    opts: &'a Options,
    funcs: Vec<Option<ClFuncId>>,
    imports: HashMap<&'static str, ClFuncId>,
    strings: HashMap<StrId, DataId>,
    counts: Option<DataId>,
    stack_limit: Option<DataId>,
    /// Whether every function compares the stack pointer with
    /// `rt_stack_limit` on entry (see `define`).
    stack_checks: bool,
    clif: String,
    /// Where finished functions go to be compiled (`parallel`); without
    /// workers, they are compiled at once into `done`.
    jobs: Option<std::sync::mpsc::SyncSender<parallel::Job>>,
    done: Vec<(usize, parallel::Compiled)>,
    next_job: usize,
    /// Per function, the `VecPlus`es that may add to an operand in place
    /// (`fir::owned`): (the result, the operand).
    consumed: Vec<HashSet<(fir::Val, fir::Val)>>,
    /// Per function, per value: whether it is a whole real
    /// (`fir::whole`), whose check as an index needs no test of it.
    whole: Vec<Vec<bool>>,
    /// Per function, per parameter: whether it is tested for equality with
    /// constants more than once ([`FnBuilder::index_eq`]).
    tested: Vec<Vec<bool>>,
    /// The trampolines of runtime functions called from cold blocks
    /// (`cold`), and the word they leave results in.
    colds: HashMap<&'static str, (ClFuncId, bool)>,
    cold_result: Option<DataId>,
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
            let i = g[0].index();
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
        self.funcs[f.index()].ok_or_else(|| {
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
            "rt_alloc_vector" => (&[types::I64; 2], &[types::I64]),
            "rt_vec_zero" | "rt_vec_plus" | "rt_vec_zero_of" => (&[types::I64; 2], &[types::I64]),
            "rt_vec_one_hot_of" => (&[types::I64; 4], &[types::I64]),
            "rt_vec_plus_owned" => (&[types::I64; 3], &[types::I64]),
            "rt_vec_plus_hot" => (
                &[types::I64, types::I64, types::F64, types::I64],
                &[types::I64],
            ),
            "rt_vec_dense" => (&[types::I64], &[types::I64]),
            "rt_stack_grow" => (&[types::I64; 3], &[types::I64]),
            "rt_saves_grow" => (&[types::I64; 2], &[]),
            "rt_vec_build_begin" | "rt_vec_build_end" => (&[types::I64], &[]),
            "rt_memo_get" => (&[types::I64; 3], &[types::I64]),
            "rt_memo_put" => (&[types::I64; 4], &[]),
            "rt_stack_overflow" | "rt_err_end" | "rt_err_value_start" | "rt_err_value_end"
            | "rt_err_site" | "rt_err_captured" | "rt_capture_start" | "rt_capture_end" => {
                (&[], &[])
            }
            "rt_err_str" | "rt_err_at" => (&[types::I64, types::I64], &[]),
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
            .get(s.index())
            .ok_or_else(|| format!("internal error: no string {s}"))?;
        let id = self
            .module
            .declare_data(
                &format!("vlad_str{}", s.index()),
                Linkage::Local,
                false,
                false,
            )
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

    /// `vlad_main` (or an export's entry): a SystemV function calling the
    /// FIR main.
    fn define_entry(&mut self, entry: &str) -> Result<(), String> {
        let sig = Signature::new(CallConv::SystemV);
        let id = self
            .module
            .declare_function(entry, Linkage::Export, &sig)
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
        self.finish_function(id, ctx, entry)
    }

    /// Hands a built function to be compiled (see `parallel`).
    fn finish_function(&mut self, id: ClFuncId, ctx: Context, name: &str) -> Result<(), String> {
        if self.opts.want_clif {
            self.clif
                .push_str(&format!("; {name}\n{}\n", ctx.func.display()));
        }
        let job = parallel::Job {
            index: self.next_job,
            id,
            ctx,
            name: name.to_string(),
        };
        self.next_job += 1;
        match &self.jobs {
            Some(tx) => tx
                .send(job)
                .map_err(|_| "internal error: the code generator's threads stopped".to_string()),
            None => {
                let index = job.index;
                let c = parallel::compile(self.module.isa(), job)?;
                self.done.push((index, c));
                Ok(())
            }
        }
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
        ctx.func.name = UserFuncName::user(0, fid.index() as u32);
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
                let counters =
                    induction::counters(g, gf, &fixed, &self.whole[g.index()]).map(|plan| {
                        let lp_int = b.create_block();
                        for (j, (t, fx)) in gf.params.iter().zip(&fixed).enumerate() {
                            if !fx && plan.passed(j) {
                                b.append_block_param(
                                    lp_int,
                                    if plan.is_counter(j) {
                                        types::I64
                                    } else {
                                        cl_ty(*t)
                                    },
                                );
                            }
                        }
                        (plan, lp_int)
                    });
                members.insert(
                    g,
                    Member {
                        pre,
                        lp,
                        fixed,
                        counters,
                    },
                );
            }
            // Deep non-tail recursion would run off the stack. A program
            // on Linux ends its stack in guard pages the runtime catches
            // (runtime/src/stack_guard.rs), so its functions need no check
            // (five instructions per call, 12% of sumsq-R's). A library,
            // on its caller's thread whose signals are the caller's, and a
            // program elsewhere compare the stack pointer with the limit
            // the runtime set on entry to every function, and report
            // instead of crashing. A program's functions that loop (their
            // group tail-calls its members) keep the check too: it runs
            // once per loop, not per iteration, and without its cold call
            // register allocation of saddle-FF's loops spilled more
            // (14.2M -> 15.1M stack moves, 6% slower), a change of
            // allocation measured, not chosen.
            let iterates = group.iter().any(|&g| {
                let mut callees = Vec::new();
                tail_callees(&self.m.func(g).body, &mut callees);
                callees.iter().any(|h| group.contains(h))
            });
            if self.stack_checks || iterates {
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
            } else {
                b.ins()
                    .jump(members[&fid].pre, &block_args(&entry_params[offset..]));
            }
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
                hot: HashSet::new(),
                deferred: HashMap::new(),
                inlining: Vec::new(),
                known: Known::default(),
                int_mode: None,
            };
            for &g in group {
                let gf = fb.cg.m.func(g);
                let mem = &fb.members[&g];
                let (pre, lp) = (mem.pre, mem.lp);
                let fixed = mem.fixed.clone();
                let counters = mem.counters.clone();
                fb.b.switch_to_block(pre);
                let pre_params = fb.b.block_params(pre).to_vec();
                fb.known.clear();
                fb.f = gf;
                fb.fid = g;
                let (dense, measured) = fb.read_vectors(g, gf, &fixed);
                for p in dense {
                    let d = fb.dense(pre_params[p.index()])?;
                    fb.known.learn(p, Fact::Dense, d);
                }
                fb.vals = pre_params.iter().map(|x| Some(*x)).collect();
                fb.vals.resize(gf.types.len(), None);
                for p in measured {
                    fb.len_of(p)?;
                }
                let moving: Vec<ClValue> = pre_params
                    .iter()
                    .zip(&fixed)
                    .filter(|(_, fx)| !**fx)
                    .map(|(v, _)| *v)
                    .collect();
                // The accumulator version (`acc_loop`), with the integer
                // version's parameters.
                let hot = fb.fused_one_hots(gf);
                let acc = counters.as_ref().and_then(|(_, lp_int)| {
                    let consumed = &fb.cg.consumed[g.index()];
                    let plan = acc_loop::acc_param(g, gf, &fixed, &hot, consumed)?;
                    let block = fb.b.create_block();
                    for p in fb.b.block_params(*lp_int).to_vec() {
                        let t = fb.b.func.dfg.value_type(p);
                        fb.b.append_block_param(block, t);
                    }
                    // And the accumulator's vector.
                    fb.b.append_block_param(block, types::I64);
                    Some((plan, block))
                });
                let int_mode = match &counters {
                    Some((plan, lp_int)) => {
                        let (plan, lp_int) = (plan.clone(), *lp_int);
                        Some(fb.enter_counters(&plan, &pre_params, &fixed, lp, lp_int, acc)?)
                    }
                    None => {
                        fb.b.ins().jump(lp, &block_args(&moving));
                        None
                    }
                };
                let mark = fb.known.mark();
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
                fb.hot = hot;
                fb.deferred.clear();
                fb.block(&gf.body)?;
                // The loop again, its counters integers (`induction`),
                // and again if it has an accumulator version, its entry's
                // facts only (the integer version's are in its own blocks).
                let versions = int_mode.map(|mode| {
                    let acc = mode
                        .acc_entry
                        .map(|(plan, block)| crate::induction::IntMode {
                            plan: mode.plan.clone(),
                            ints: mode.ints.clone(),
                            late: HashMap::new(),
                            tied_d: mode.tied_d.clone(),
                            tied_cmps: mode.tied_cmps.clone(),
                            lens: mode.lens.clone(),
                            lp_int: block,
                            lp: mode.lp,
                            acc: Some(acc_loop::AccMode {
                                param: plan.param,
                                // Its last parameter (`enter_acc_if_one`).
                                base: *fb.b.block_params(block).last().expect("the vector"),
                            }),
                            acc_entry: None,
                        });
                    [Some(mode), acc]
                });
                for mode in versions.into_iter().flatten().flatten() {
                    fb.known.undo(mark);
                    fb.b.switch_to_block(mode.lp_int);
                    let lp_params = fb.b.block_params(mode.lp_int).to_vec();
                    let mut next = lp_params.iter();
                    let mut vals = vec![None; gf.types.len()];
                    let mut counters = Vec::new();
                    for (i, fx) in fixed.iter().enumerate() {
                        if *fx {
                            vals[i] = Some(pre_params[i]);
                            continue;
                        }
                        if !mode.plan.passed(i) {
                            continue;
                        }
                        let x = *next.next().expect("loop parameter");
                        if mode.plan.is_counter(i) {
                            counters.push((Val::new(i), x));
                        } else {
                            vals[i] = Some(x);
                        }
                    }
                    fb.vals = vals;
                    fb.int_mode = Some(mode);
                    for (v, q) in counters {
                        fb.def_int(v, q);
                    }
                    fb.deferred.clear();
                    let r = fb.block(&gf.body);
                    fb.int_mode = None;
                    r?;
                }
            }
            fb.b.seal_all_blocks();
            let config = fb.cg.module.target_config();
            fb.b.finalize(config);
        }
        let id = self.func_id(fid)?;
        self.finish_function(id, ctx, &f.name)
    }
}
