//! Sequencer bundles of every engine: the control forms (Nop, Halt, ...), the semaphore range
//! clear, CompareBranch, the register ALU (ALU_OP 0xA8), PSEUDO_INST and the cross-core barrier.
//! Branch and range-clear semantics live in [`crate::machine::control`].

use tpbsim_isa::{
    AluOpInst, CompareBranch, ControlSem, CoreBarrier, Engine, EventSemaphoreRangeClear,
    OrderingMode, PseudoInst,
};

use super::not_simulated;
use crate::machine::control;
use crate::machine::core::Machine;
use crate::machine::fault::{Fault, Site};
use crate::machine::sched::Flow;
use crate::machine::sync::SyncState;
use crate::numerics::alu::{AluContext, AluOp, ElementOp, Signedness};
use tpbsim_isa::dtype::Kind;

/// The control form (no operands): HALT finishes the engine; ENGINE_NOP, INSTRUCTION_FLUSH,
/// and NOP act through their events only (the spec's `Control` families).
pub(crate) fn control_form(site: Site) -> Result<Flow, Fault> {
    match ControlSem::of(site.opcode) {
        Some(ControlSem::Halt) => Ok(Flow::Finish),
        Some(ControlSem::EventsOnly) => Ok(Flow::Next),
        None => Err(not_simulated(site)),
    }
}

/// SET_ORDERING_MODE: mode 0, the default ordering, changes nothing in a machine that
/// completes every bundle before the next issues; what the other modes relax is not public.
pub(crate) fn ordering_mode(site: Site, x: &OrderingMode) -> Result<Flow, Fault> {
    match x.ordering_mode {
        0 => Ok(Flow::Next),
        m => Err(Fault::NotSimulated {
            site,
            name: format!("SET_ORDERING_MODE mode {m} (C arch/execution-sync-model.md names the byte, not the orderings)"),
            engine: site.engine,
        }),
    }
}

/// PSEUDO_INST: sub-op 1 (EXIT) finishes the engine.
pub(crate) fn pseudo_inst(site: Site, x: &PseudoInst) -> Result<Flow, Fault> {
    match x.sub_op.0 {
        1 => Ok(Flow::Finish),
        s => Err(Fault::NotSimulated {
            site,
            name: format!("PSEUDO_INST sub-op {s}"),
            engine: site.engine,
        }),
    }
}

/// The model has one NeuronCore: the other cores a cross-core barrier waits for are not
/// modelled.
pub(crate) fn core_barrier(site: Site, x: &CoreBarrier) -> Fault {
    Fault::NotSimulated {
        site,
        name: format!(
            "cross-core barrier (CORE_BARRIER id {}, index {})",
            x.id, x.index
        ),
        engine: site.engine,
    }
}

/// EVENT_SEMAPHORE_RANGE_CLEAR.
pub(crate) fn range_clear(
    site: Site,
    x: &EventSemaphoreRangeClear,
    sync: &mut SyncState,
) -> Result<Flow, Fault> {
    control::range_clear(sync, x.mode.0, x.first, x.last, &x.mask)
        .map_err(|m| Fault::exec(site, m))?;
    Ok(Flow::Next)
}

impl Machine<'_> {
    /// CompareBranch: a taken branch jumps, else the next bundle.
    pub(crate) fn compare_branch(&mut self, site: Site, x: &CompareBranch) -> Result<Flow, Fault> {
        let e = site.engine;
        let fmt = self.format(site, "dtype", x.dtype)?;
        let regs = &self.regs[e as usize];
        let reg = |what: &str, i: u8| {
            regs.get(i as usize).copied().ok_or_else(|| {
                Fault::exec(
                    site,
                    format!(
                        "{what} register {i} does not exist (registers 0..{})",
                        regs.len()
                    ),
                )
            })
        };
        let taken = control::branch_taken(
            x.cmp_op.0,
            fmt,
            reg("cmp_reg0", x.cmp_reg0)?,
            x.cmp_imm,
            reg("cmp_reg1", x.cmp_reg1)?,
        )
        .map_err(|m| Fault::exec(site, m))?;
        if !taken {
            return Ok(Flow::Next);
        }
        let len = self.stream_len_of(e);
        let t = control::branch_target(
            site.index,
            len,
            x.target_mode.0,
            x.br_immediate,
            reg("target_reg_lo", x.target_reg_lo)?,
        )
        .map_err(|m| Fault::exec(site, m))?;
        Ok(Flow::Jump(t))
    }

    /// ALU_OP (0xA8): the sequencer's scalar ALU on the issuing engine's registers.
    pub(crate) fn alu_op_inst(&mut self, site: Site, x: &AluOpInst) -> Result<Flow, Fault> {
        let e = site.engine;
        let fmt = self.format(site, "dtype", x.dtype)?;
        if fmt.kind() == Kind::Float || fmt.container_bytes() != 4 {
            return Err(Fault::NotSimulated {
                site,
                name: format!("register ALU in {}", fmt.name()),
                engine: e,
            });
        }
        let sign = if fmt.kind() == Kind::Signed {
            Signedness::Signed
        } else {
            Signedness::Unsigned
        };
        let op = AluOp::from_wire(x.op.0).map_err(|err| Fault::exec(site, err.to_string()))?;
        // The sequencer's scalar ALU is the integer datapath of the SP.
        let iop = AluContext::new(self.gen, Engine::Sp)
            .int_op(op, sign)
            .map_err(|err| Fault::exec(site, err.to_string()))?;
        let regs = &self.regs[e as usize];
        let get = |i: u8| {
            regs.get(i as usize)
                .copied()
                .ok_or_else(|| Fault::exec(site, format!("register {i} does not exist")))
        };
        let a = get(x.src0_reg_lo)?;
        let b = if x.src1_datasrc.0 == 1 {
            x.imm as u32
        } else {
            get(x.src1_reg_lo)?
        };
        let v = iop.apply(a, b);
        let slot = self.regs[e as usize]
            .get_mut(x.dst_reg_lo as usize)
            .ok_or_else(|| {
                Fault::exec(site, format!("register {} does not exist", x.dst_reg_lo))
            })?;
        *slot = v;
        Ok(Flow::Next)
    }
}

/// PSEUDO_FUNCTION_BEGIN / PSEUDO_FUNCTION_CALL: function bodies are not simulated.
pub(crate) fn function_section(site: Site) -> Result<Flow, Fault> {
    Err(Fault::NotSimulated {
        site,
        name: format!(
            "{} (R isa/pseudo-instruction-lowering.md puts function bodies in FUNCTION sections; no page names their NEFF members)",
            super::mnemonic(site)
        ),
        engine: site.engine,
    })
}
