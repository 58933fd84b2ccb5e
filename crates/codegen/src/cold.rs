//! Calls of the runtime from cold blocks: through a trampoline that keeps
//! every register.
//!
//! A loop's slow paths call the runtime: the allocator when the bump
//! region is used up, `rt_vec_dense` for a sum's elements, `rt_vec_plus_hot`
//! when a sum's log is full. A call of the C convention clobbers every
//! float register (the convention saves none), so register allocation
//! kept each real a loop carries in a stack slot across the whole loop,
//! a store and a load per step on the hot path, for a call that runs once
//! in thousands of steps. The trampoline `vlad_cold_NAME` uses Cranelift's
//! `preserve_all` convention: it saves what the runtime function may
//! clobber, so its call site clobbers nothing and the loop keeps its
//! reals in registers. `preserve_all` returns no values: the trampoline
//! writes the runtime function's result into `vlad_cold_result`, which
//! the caller reads right after the call (single-threaded, as the runtime
//! is). Registers it saves are on the stack while the runtime runs, where
//! the collector's conservative scan of the stack sees the pointers among
//! them.

use super::*;

impl Codegen<'_> {
    /// The trampoline of runtime function `name` (defined on first use),
    /// and whether the function returns a result.
    pub(crate) fn cold(&mut self, name: &'static str) -> Result<(ClFuncId, bool), String> {
        if let Some(cold) = self.colds.get(name) {
            return Ok(*cold);
        }
        let target = self.import(name)?;
        let target_sig = self
            .module
            .declarations()
            .get_function_decl(target)
            .signature
            .clone();
        let mut sig = Signature::new(CallConv::PreserveAll);
        sig.params.extend(target_sig.params.iter().cloned());
        let tramp = format!("vlad_cold_{name}");
        let id = self
            .module
            .declare_function(&tramp, Linkage::Local, &sig)
            .map_err(|e| format!("declaring `{tramp}`: {e}"))?;
        let returns = !target_sig.returns.is_empty();
        self.colds.insert(name, (id, returns));
        let result = self.cold_result()?;
        let mut ctx = self.module.make_context();
        ctx.func.signature = sig;
        // Named apart from the FIR's functions (namespace 0) in `--emit=clif`.
        ctx.func.name = UserFuncName::user(1, self.colds.len() as u32);
        let mut fctx = FunctionBuilderContext::new();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let args = b.block_params(entry).to_vec();
            let callee = self.module.declare_func_in_func(target, b.func);
            let call = b.ins().call(callee, &args);
            if let Some(&r) = b.inst_results(call).first() {
                let g = self.module.declare_data_in_func(result, b.func);
                let at = b.ins().symbol_value(types::I64, g);
                b.ins().store(MemFlagsData::trusted(), r, at, 0);
            }
            b.ins().return_(&[]);
            b.seal_all_blocks();
            b.finalize(self.module.target_config());
        }
        self.finish_function(id, ctx, &tramp)?;
        Ok((id, returns))
    }

    /// The word a trampoline leaves its function's result in.
    fn cold_result(&mut self) -> Result<DataId, String> {
        if let Some(id) = self.cold_result {
            return Ok(id);
        }
        let id = self
            .module
            .declare_data("vlad_cold_result", Linkage::Local, true, false)
            .map_err(|e| e.to_string())?;
        let mut data = DataDescription::new();
        data.define_zeroinit(8);
        self.module
            .define_data(id, &data)
            .map_err(|e| e.to_string())?;
        self.cold_result = Some(id);
        Ok(id)
    }
}

impl FnBuilder<'_, '_> {
    /// Marks the block being built cold.
    pub(crate) fn cold_here(&mut self) {
        if let Some(b) = self.b.current_block() {
            self.b.set_cold_block(b);
        }
    }

    /// `fast` when `ok`, else what `slow` gives in a cold block (a call of
    /// the runtime through [`FnBuilder::call_cold`]): the shape of every
    /// slow path a loop keeps out of its way.
    pub(crate) fn unless_cold(
        &mut self,
        ok: ClValue,
        fast: ClValue,
        slow: impl FnOnce(&mut Self) -> Result<ClValue, String>,
    ) -> Result<ClValue, String> {
        let cold = self.b.create_block();
        let done = self.b.create_block();
        self.b.append_block_param(done, types::I64);
        self.b.ins().brif(ok, done, &block_args(&[fast]), cold, &[]);
        self.b.set_cold_block(cold);
        self.b.switch_to_block(cold);
        let v = slow(self)?;
        self.b.ins().jump(done, &block_args(&[v]));
        self.b.switch_to_block(done);
        Ok(self.b.block_params(done)[0])
    }

    /// [`FnBuilder::call_import`] from a cold block, through the
    /// function's trampoline: the call clobbers no register.
    pub(crate) fn call_cold(
        &mut self,
        name: &'static str,
        args: &[ClValue],
    ) -> Result<Option<ClValue>, String> {
        let (id, returns) = self.cg.cold(name)?;
        let r = self.func_ref(id);
        self.b.ins().call(r, args);
        if !returns {
            return Ok(None);
        }
        let result = self.cg.cold_result()?;
        let g = self.global(result);
        let at = self.b.ins().symbol_value(types::I64, g);
        Ok(Some(self.b.ins().load(
            types::I64,
            MemFlagsData::trusted(),
            at,
            0,
        )))
    }
}
