//! From a decoded instruction to its effect. [`Machine::dispatch`] asks the engine legality
//! once ([`executes_on`]: the spec's engine column plus the machine's documented extensions),
//! then hands the decoded format struct to its op through the generated
//! [`InstVisitor`] — one method per spec format, no catch-all, so a format added to the spec
//! does not build until the machine handles it (even if only as `not simulated`). The ops
//! live in [`super::ops`], grouped by engine family.

use tpbsim_isa::{
    ActTableLoad, Activate, Activate2, ActivateQuantize, AffineSelect, AluOpInst, CompareBranch,
    Control, CopyPredScalar, CoreBarrier, DmaDirect2d, DmaTrigger, Drain, Engine, EventSemaphore,
    EventSemaphoreRangeClear, Extended, ExtendedTta, FunctionBegin, FunctionCall, Inst,
    InstVisitor, Iota, LdTags, LdWeights, LdWeightsMx, LoadActFuncSet, Matmul, MatmulMx,
    MatmulSparse, Memset, Notify, Opcode, OrderingMode, PeManageSeed, Pool, PseudoInst, QuantizeMx,
    RangeSelect, RawInst, RdmaDescGen, ReadAccumulator, ScalarTensorTensor, SelectReduce,
    TensorDequantize, TensorReduce, TensorScalar, TensorScalarIntWide, TensorScalarSelect,
    TensorTensor, TensorTensorIntWide, TriggerCollective, Write,
};
use tpbsim_isa::{CurProcessingRankId, GidLoad, SendRecv};

use tpbsim_isa::spec::OpKind;

use super::core::Machine;
use super::fault::{Fault, Site};
use super::ops::{control, not_simulated};
use super::sched::Flow;
use super::sync::SyncState;

/// Whether the machine executes `opcode` on engine `e`: the spec's engine column
/// (`OpcodeRow::runs_on`: NX on every engine, DMA on SP) plus its "runs on" rows, read from
/// the generated table.
#[inline]
pub fn executes_on(opcode: u8, e: Engine) -> bool {
    tpbsim_isa::spec::sim_runs_on(opcode, e)
}

impl Machine<'_> {
    /// Execute one decoded instruction. An opcode outside its engine column is `not simulated`
    /// before any field is read.
    pub(crate) fn dispatch(
        &mut self,
        site: Site,
        inst: &Inst,
        sync: &mut SyncState,
    ) -> Result<Flow, Fault> {
        if !executes_on(site.opcode, site.engine) {
            return Err(not_simulated(site));
        }
        inst.accept(&mut Exec {
            m: self,
            site,
            sync,
        })
    }
}

/// One bundle's execution: the machine, the bundle's site and the shared semaphores.
struct Exec<'a, 'k> {
    m: &'a mut Machine<'k>,
    site: Site,
    sync: &'a mut SyncState,
}

impl Exec<'_, '_> {
    /// The result of an op that falls through to the next bundle.
    #[inline]
    fn next(r: Result<(), Fault>) -> Result<Flow, Fault> {
        r.map(|()| Flow::Next)
    }

    /// A format the machine does not simulate.
    #[inline]
    fn unsupported(&self) -> Result<Flow, Fault> {
        Err(not_simulated(self.site))
    }
}

impl InstVisitor for Exec<'_, '_> {
    type Output = Result<Flow, Fault>;

    // ---------------------------------------------------------------- PE
    fn ld_weights(&mut self, x: &LdWeights) -> Self::Output {
        Self::next(self.m.ld_weights(self.site, x))
    }
    fn matmul(&mut self, x: &Matmul) -> Self::Output {
        Self::next(self.m.matmul(self.site, x))
    }
    fn matmul_sparse(&mut self, _: &MatmulSparse) -> Self::Output {
        self.unsupported()
    }
    fn ld_tags(&mut self, _: &LdTags) -> Self::Output {
        self.unsupported()
    }
    fn pe_manage_seed(&mut self, _: &PeManageSeed) -> Self::Output {
        self.unsupported()
    }
    fn ld_weights_mx(&mut self, x: &LdWeightsMx) -> Self::Output {
        Self::next(self.m.ld_weights_mx(self.site, x))
    }
    fn matmul_mx(&mut self, x: &MatmulMx) -> Self::Output {
        Self::next(self.m.matmul_mx(self.site, x))
    }

    // ---------------------------------------------------------------- ACT
    fn activate(&mut self, x: &Activate) -> Self::Output {
        Self::next(self.m.activate(self.site, x))
    }
    fn activate_quantize(&mut self, _: &ActivateQuantize) -> Self::Output {
        self.unsupported()
    }
    fn act_table_load(&mut self, x: &ActTableLoad) -> Self::Output {
        Self::next(self.m.act_table_load(self.site, x))
    }
    fn read_accumulator(&mut self, x: &ReadAccumulator) -> Self::Output {
        Self::next(self.m.read_accumulator(self.site, x))
    }
    fn activate2(&mut self, x: &Activate2) -> Self::Output {
        Self::next(self.m.activate2(self.site, x))
    }

    // ---------------------------------------------------------------- POOL / DVE
    fn quantize_mx(&mut self, x: &QuantizeMx) -> Self::Output {
        Self::next(self.m.quantize_mx(self.site, x))
    }
    fn tensor_tensor(&mut self, x: &TensorTensor) -> Self::Output {
        Self::next(self.m.tensor_tensor(self.site, x))
    }
    fn tensor_tensor_int_wide(&mut self, _: &TensorTensorIntWide) -> Self::Output {
        self.unsupported()
    }
    fn tensor_scalar_int_wide(&mut self, _: &TensorScalarIntWide) -> Self::Output {
        self.unsupported()
    }
    fn tensor_reduce(&mut self, x: &TensorReduce) -> Self::Output {
        Self::next(self.m.tensor_reduce(self.site, x))
    }
    fn pool(&mut self, _: &Pool) -> Self::Output {
        self.unsupported()
    }
    fn memset(&mut self, x: &Memset) -> Self::Output {
        Self::next(self.m.memset(self.site, x))
    }
    fn iota(&mut self, x: &Iota) -> Self::Output {
        Self::next(self.m.iota(self.site, x))
    }
    fn tensor_scalar(&mut self, x: &TensorScalar) -> Self::Output {
        Self::next(self.m.tensor_scalar(self.site, x))
    }
    fn scalar_tensor_tensor(&mut self, x: &ScalarTensorTensor) -> Self::Output {
        Self::next(self.m.scalar_tensor_tensor(self.site, x))
    }
    fn copy_pred_scalar(&mut self, x: &CopyPredScalar) -> Self::Output {
        Self::next(self.m.copy_pred_scalar(self.site, x))
    }
    fn extended_tta(&mut self, _: &ExtendedTta) -> Self::Output {
        self.unsupported()
    }
    fn rdma_desc_gen(&mut self, _: &RdmaDescGen) -> Self::Output {
        self.unsupported()
    }
    fn extended(&mut self, _: &Extended) -> Self::Output {
        self.unsupported()
    }

    // ---------------------------------------------------------------- select family
    fn select_reduce(&mut self, x: &SelectReduce) -> Self::Output {
        Self::next(self.m.select_reduce(self.site, x))
    }
    fn tensor_scalar_select(&mut self, x: &TensorScalarSelect) -> Self::Output {
        Self::next(self.m.ts_select(self.site, x))
    }
    fn affine_select(&mut self, x: &AffineSelect) -> Self::Output {
        Self::next(self.m.affine_select(self.site, x))
    }
    fn tensor_dequantize(&mut self, x: &TensorDequantize) -> Self::Output {
        Self::next(self.m.dequantize(self.site, x))
    }
    fn range_select(&mut self, x: &RangeSelect) -> Self::Output {
        Self::next(self.m.range_select(self.site, x))
    }

    // ---------------------------------------------------------------- sequencer / control
    fn event_semaphore(&mut self, _: &EventSemaphore) -> Self::Output {
        Ok(Flow::Next)
    }
    fn control(&mut self, _: &Control) -> Self::Output {
        control::control_form(self.site)
    }
    fn ordering_mode(&mut self, x: &OrderingMode) -> Self::Output {
        control::ordering_mode(self.site, x)
    }
    fn drain(&mut self, _: &Drain) -> Self::Output {
        Ok(Flow::Next)
    }
    fn notify(&mut self, _: &Notify) -> Self::Output {
        self.unsupported()
    }
    fn write(&mut self, _: &Write) -> Self::Output {
        self.unsupported()
    }
    fn event_semaphore_range_clear(&mut self, x: &EventSemaphoreRangeClear) -> Self::Output {
        control::range_clear(self.site, x, self.sync)
    }
    fn core_barrier(&mut self, x: &CoreBarrier) -> Self::Output {
        Err(control::core_barrier(self.site, x))
    }
    fn alu_op_inst(&mut self, x: &AluOpInst) -> Self::Output {
        self.m.alu_op_inst(self.site, x)
    }
    fn compare_branch(&mut self, x: &CompareBranch) -> Self::Output {
        self.m.compare_branch(self.site, x)
    }
    fn pseudo_inst(&mut self, x: &PseudoInst) -> Self::Output {
        control::pseudo_inst(self.site, x)
    }

    // ---------------------------------------------------------------- DMA
    fn dma_direct2d(&mut self, x: &DmaDirect2d) -> Self::Output {
        Self::next(self.m.dma_direct2d(self.site, x, self.sync))
    }
    fn dma_trigger(&mut self, x: &DmaTrigger) -> Self::Output {
        Self::next(self.m.dma_trigger(self.site, x, self.sync))
    }
    fn trigger_collective(&mut self, x: &TriggerCollective) -> Self::Output {
        self.m.collective(self.site, x, self.sync)
    }
    fn send_recv(&mut self, x: &SendRecv) -> Self::Output {
        self.m.send_recv(self.site, x)
    }
    fn cur_processing_rank_id(&mut self, x: &CurProcessingRankId) -> Self::Output {
        Err(Machine::cur_processing_rank_id(self.site, x))
    }
    fn gid_load(&mut self, x: &GidLoad) -> Self::Output {
        self.m.gid_load(self.site, x)
    }

    // ---------------------------------------------------------------- compiler views
    fn load_act_func_set(&mut self, _: &LoadActFuncSet) -> Self::Output {
        self.unsupported()
    }
    fn function_begin(&mut self, _: &FunctionBegin) -> Self::Output {
        control::function_section(self.site)
    }
    fn function_call(&mut self, _: &FunctionCall) -> Self::Output {
        control::function_section(self.site)
    }

    // ---------------------------------------------------------------- raw
    fn raw(&mut self, x: &RawInst) -> Self::Output {
        if Opcode(self.site.opcode)
            .row()
            .is_some_and(|r| r.kind == OpKind::Pseudo)
        {
            self.m.pseudo(self.site, &x.0, self.sync)
        } else {
            self.unsupported()
        }
    }
}
