//! Execution plans: for a bundle whose operands depend only on its own bytes (immediate
//! addresses, formats, counts, op), everything its op decides before touching memory —
//! formats, bounds-checked operands, datapath and ALU op — is worked out the first time the
//! bundle executes and kept with its decoded form. Each later execution of the same bundle
//! position (a loop body) runs the plan: the memory budget check of each operand (the one
//! part of operand checking that can change during a run), then the values.
//!
//! Plans are made and used only without the race check and timeline (which record each
//! operand access as it is checked); a bundle whose checks fail gets no plan, so its fault is
//! reported by the ordinary path, as before.

use tpbsim_isa::{Addr4Kind, Inst, TensorTensorSem};

use super::core::Machine;
use super::fault::{Fault, Site};
use super::ops::pool_dve::{TensorScalarPlan, TensorTensorPlan};
use super::pattern::Resolved;

/// A bundle's execution plan.
#[derive(Clone, Debug)]
pub(crate) enum Plan {
    /// TensorTensor (0x41 / 0x51) on immediate addresses.
    TensorTensor(TensorTensorPlan),
    /// TensorScalar (0x43 / 0x53) on immediate addresses (its scalars may be pointers:
    /// they are read, and bounds-checked, when it runs).
    TensorScalar(TensorScalarPlan),
}

/// Operand names of a TensorTensor, in the order they are checked.
const TENSOR_TENSOR_OPERANDS: [&str; 3] = ["src0", "src1", "dst"];
/// Operand names of a TensorScalar's tensors, in the order they are checked.
const TENSOR_SCALAR_OPERANDS: [&str; 2] = ["src", "dst"];

impl Machine<'_> {
    /// The plan of `inst` at `site` (an opcode the engine executes), when it has one: its
    /// operands name no register and every static check passes.
    pub(crate) fn plan_of(&self, site: Site, inst: &Inst) -> Option<Plan> {
        // Planning checks the operands as an execution would, but it is not one: the work
        // that check charges is given back, and the execution that follows (the plan's run)
        // charges it once.
        let work = self.work.get();
        let plan = self.make_plan(site, inst);
        self.work.set(work);
        plan
    }

    fn make_plan(&self, site: Site, inst: &Inst) -> Option<Plan> {
        match inst {
            Inst::TensorTensor(x)
                if TensorTensorSem::of(site.opcode) == Some(TensorTensorSem::Elementwise)
                    && [x.src0.addr, x.src1.addr, x.dst.addr]
                        .iter()
                        .all(|a| a.kind() == Addr4Kind::Imm) =>
            {
                self.tensor_tensor_plan(site, x)
                    .ok()
                    .map(Plan::TensorTensor)
            }
            Inst::TensorScalar(x)
                if [x.src.addr, x.dst.addr]
                    .iter()
                    .all(|a| a.kind() == Addr4Kind::Imm) =>
            {
                self.tensor_scalar_plan(site, x)
                    .ok()
                    .map(Plan::TensorScalar)
            }
            _ => None,
        }
    }

    /// Execute plan `index` for the bundle at `site`.
    pub(crate) fn run_plan(&mut self, site: Site, index: usize) -> Result<(), Fault> {
        let plans = std::mem::take(&mut self.plans);
        let r = match &plans[index] {
            Plan::TensorTensor(p) => self
                .check_operands(site, &p.operands, TENSOR_TENSOR_OPERANDS)
                .and_then(|()| self.tensor_tensor_run(site, p)),
            Plan::TensorScalar(p) => self
                .check_operands(site, &p.operands, TENSOR_SCALAR_OPERANDS)
                .and_then(|()| self.tensor_scalar_run(site, p)),
        };
        self.plans = plans;
        r
    }

    /// The memory budget check of each planned operand, in order (the part of
    /// [`Machine::operand`] that can change during a run).
    fn check_operands<const N: usize>(
        &self,
        site: Site,
        operands: &[Resolved; N],
        names: [&str; N],
    ) -> Result<(), Fault> {
        operands
            .iter()
            .zip(names)
            .try_for_each(|(r, name)| self.check_operand(site, name, r.total_bytes()))
    }
}
