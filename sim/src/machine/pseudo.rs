//! The pseudo band (0xC1..0xDF) the runtime rewrites before the engines run
//! (R `isa/pseudo-instruction-lowering.md`). Opcodes with a typed format (DMATRIGGER 0xC1,
//! DMA_DIRECT2D 0xD4, PSEUDO_INST 0xDF) run in `dispatch`; this file takes the raw ones:
//!
//! - 0xCC BRANCH_LABEL: deleted by the lowering, so a no-op;
//! - 0xC2 DMAREARM and 0xCF DMASWAP_QUEUE_SET: re-arm / re-point a queue; blocks run
//!   synchronously when triggered here, so there is nothing to re-arm (a no-op);
//! - 0xC8 TRIGGER_COLLECTIVE: the record G `neff/concrete-carve.md` §5.1 decodes, read by the
//!   locators of the spec's `COLLECTIVE_RECORD_FIELDS` (op +0x0C, dtype +0x0D, group +0x0E,
//!   input var +0x10, output var +0x14, element count u64 +0x18, collective type u32 +0x20). On one rank every collective type the page names is a copy of the
//!   input to the output (an all-reduce over one rank is its input); more ranks are refused.
//! - everything else is refused naming the page that leaves it open.
//!
//! Which of these an opcode is comes from the spec's `sem` column (`PseudoSem`).

use tpbsim_isa::spec::FieldLoc;
use tpbsim_isa::{Bundle, Dtype, Gen, PseudoSem};

use super::core::Machine;
use super::dma::{DmaDesc, DmaMem, DmaSide};
use super::fault::{Fault, Site};
use super::sched::Flow;
use super::sync::SyncState;

/// The collective type code of an all-reduce (G `neff/concrete-carve.md` §5.1: `ctype=ALL_REDUCE`
/// is 0x01).
pub const CTYPE_ALL_REDUCE: u32 = 0x01;

/// A field of the collective record (`spec::COLLECTIVE_RECORD_FIELDS`, at the same offsets on
/// every generation).
fn record(b: &Bundle, l: FieldLoc, gen: Gen) -> u64 {
    l.read_uint(&b.0, gen).unwrap_or(0)
}

impl Machine<'_> {
    /// Run a pseudo-band bundle that has no typed format.
    pub(crate) fn pseudo(
        &mut self,
        site: Site,
        b: &Bundle,
        sync: &mut SyncState,
    ) -> Result<Flow, Fault> {
        let refuse = |name: &str, why: &str| Fault::NotSimulated {
            site,
            name: format!("{name} (opcode 0x{:02x}; {why})", site.opcode),
            engine: site.engine,
        };
        match PseudoSem::of(site.opcode) {
            Some(PseudoSem::NoEffect) => Ok(Flow::Next),
            Some(PseudoSem::Collective) => self.collective(site, b, sync),
            Some(PseudoSem::FunctionReturn) => Err(refuse(
                "FUNCTION_RETURN",
                "R isa/pseudo-instruction-lowering.md builds the call frame in FUNCTION sections whose NEFF members no page names",
            )),
            Some(PseudoSem::Extension) => Err(refuse(
                "EXTENSION",
                "C isa/dma-encoding.md gives the DGE forms 0x20/0x28 of ADDR8 but not the DGE queue they use",
            )),
            Some(PseudoSem::CollectivePlan) => Err(refuse(
                "collective",
                "R isa/pseudo-instruction-lowering.md §3 gives the encoded plan only as enc_op_list, not its fields",
            )),
            Some(PseudoSem::NotSimulated) | None => Err(refuse(
                "pseudo instruction",
                "R isa/pseudo-instruction-lowering.md does not give its expansion",
            )),
        }
    }

    /// 0xC8 on one rank: copy the input variable to the output variable.
    fn collective(&mut self, site: Site, b: &Bundle, sync: &mut SyncState) -> Result<Flow, Fault> {
        let world = self.world();
        if world > 1 {
            return Err(Fault::NotSimulated {
                site,
                name: format!(
                    "TRIGGER_COLLECTIVE over {world} ranks (replica_groups); only one rank is modelled"
                ),
                engine: site.engine,
            });
        }
        use tpbsim_isa::formats::loc::trigger_collective as c;
        let gen = self.gen;
        let ctype = record(b, c::CTYPE, gen) as u32;
        if ctype != CTYPE_ALL_REDUCE {
            return Err(Fault::NotSimulated {
                site,
                name: format!(
                    "TRIGGER_COLLECTIVE type {ctype:#04x} (G neff/concrete-carve.md §5.1 names only 0x01 ALL_REDUCE)"
                ),
                engine: site.engine,
            });
        }
        let format = self.format(site, "dtype", Dtype(record(b, c::DTYPE, gen) as u8))?;
        let (input, output) = (
            record(b, c::INPUT_TENSOR_ID, gen) as u32,
            record(b, c::OUTPUT_TENSOR_ID, gen) as u32,
        );
        let n = record(b, c::NUM_ELEMENTS, gen);
        let n = u32::try_from(n).map_err(|_| {
            Fault::exec(
                site,
                format!("collective of {n} elements does not fit one transfer"),
            )
        })?;
        let eb = format.container_bytes() as i64;
        let side = |var: u32| DmaSide {
            mem: DmaMem::Dram(var),
            addr: 0,
            format,
            dims: vec![(eb, n)],
        };
        let d = DmaDesc {
            from: side(input),
            to: side(output),
        };
        self.dma_direct(site, &d, 0, 0, sync)?;
        Ok(Flow::Next)
    }
}
