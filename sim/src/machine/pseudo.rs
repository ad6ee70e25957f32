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
use tpbsim_isa::{AluOp, Bundle, Dtype, Gen, PseudoSem};

use super::collective::{Comm, Kind, Member, Post, Reduce};
use super::core::{Machine, PendingCollective};
use super::dma::{DmaDesc, DmaMem, DmaSide};
use super::fault::{Fault, Site};
use super::sched::Flow;
use super::sync::SyncState;

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

    /// 0xC8: post this rank's input window to its replica group. Without a world (a run of
    /// one rank) the collective completes at once over a group of one.
    fn collective(&mut self, site: Site, b: &Bundle, sync: &mut SyncState) -> Result<Flow, Fault> {
        use tpbsim_isa::formats::loc::trigger_collective as c;
        let gen = self.gen;
        let ctype = record(b, c::CTYPE, gen) as u8;
        let kind = Kind::of(ctype).map_err(|why| Fault::NotSimulated {
            site,
            name: format!("TRIGGER_COLLECTIVE: {why}"),
            engine: site.engine,
        })?;
        let op = record(b, c::OP, gen) as u8;
        let format = self.format(site, "dtype", Dtype(record(b, c::DTYPE, gen) as u8))?;
        let group_id = record(b, c::GROUP_ID, gen) as usize;
        let (input, output) = (
            record(b, c::INPUT_TENSOR_ID, gen) as u32,
            record(b, c::OUTPUT_TENSOR_ID, gen) as u32,
        );
        let n = record(b, c::NUM_ELEMENTS, gen);
        let (src_off, dst_off) = (
            record(b, c::SRC_OFFSET_ELEMS, gen),
            record(b, c::DST_OFFSET_ELEMS, gen),
        );
        let (rank, core, world) = match &self.comm {
            Some((w, m)) => (m.rank, m.core, Some(w.clone())),
            None => (0, 0, None),
        };
        let group = self.group_of(site, group_id, rank, world.is_some())?;
        let g = group.len() as u64;
        let eb = format.container_bytes() as u64;
        let bytes = |elems: u64, what: &str| {
            elems.checked_mul(eb).ok_or_else(|| {
                Fault::exec(
                    site,
                    format!("collective {what} of {elems} elements overflows"),
                )
            })
        };
        let in_len = bytes(n, "input")?;
        let out_elems = kind.out_elements(n, g);
        let out_len = bytes(out_elems, "output")?;
        let (in_off, out_off) = (
            bytes(src_off, "input offset")?,
            bytes(dst_off, "output offset")?,
        );
        let site_err = |e| Fault::oob(site, "collective", e);
        // Both windows lie inside their variables before anything moves.
        for (what, var, off, len) in [
            ("input", input, in_off, in_len),
            ("output", output, out_off, out_len),
        ] {
            let size = self.dram.get(var).map(|v| v.bytes.len() as u64);
            if off
                .checked_add(len)
                .is_none_or(|hi| size.is_none_or(|s| hi > s))
            {
                return Err(Fault::exec(
                    site,
                    format!(
                        "collective of {n} elements: the {what} window {off}..{} leaves variable {var} ({})",
                        off.saturating_add(len),
                        size.map_or("no such variable".to_string(), |s| format!("{s} bytes"))
                    ),
                ));
            }
        }
        let len = in_len as usize;
        self.charge_memory(
            &format!("{site}: collective contribution"),
            in_len.saturating_mul(2),
        )
        .map_err(|e| Fault::budget(site, e))?;
        self.charge_collective(site, in_len)?;
        let data = self
            .dram
            .read(input, in_off, len)
            .map_err(site_err)?
            .to_vec();
        self.dram.note(input, in_off, in_off + in_len, false);
        let reduce = Reduce::of(AluOp(op));
        let pairs: Vec<(u32, u32)> = self
            .kernel()
            .src_target_pairs
            .iter()
            .copied()
            .filter(|(s, t)| group.contains(s) && group.contains(t))
            .collect();
        let post = Post {
            kind,
            reduce,
            op,
            format,
            elements: n,
            group,
            pairs,
            data,
            site,
        };
        let pending = PendingCollective {
            ticket: 0,
            site,
            out_var: output,
            out_offset: out_off,
            out_len,
            events: None,
        };
        match world {
            Some(w) => {
                let ticket = w
                    .post(Member { rank, core }, post)
                    .map_err(|e| Fault::exec(site, e))?;
                self.pending.push(PendingCollective { ticket, ..pending });
                self.defer_complete = true;
            }
            None => {
                // A group of one: complete now, with the same value model.
                let world = Comm::new([Member { rank: 0, core: 0 }], Default::default());
                let ticket = world.post(Member { rank: 0, core: 0 }, post);
                let done = world
                    .wait(Member { rank: 0, core: 0 }, &[ticket], site.to_string())
                    .map_err(|e| Fault::exec(site, e))?;
                for (_, r) in done {
                    let bytes = r.map_err(|e| Fault::exec(site, e))?;
                    let side = |var: u32, addr: u64, len: u64| DmaSide {
                        mem: DmaMem::Dram(var),
                        addr,
                        format,
                        dims: vec![(eb as i64, (len / eb) as u32)],
                    };
                    let d = DmaDesc {
                        from: side(input, in_off, in_len),
                        to: side(output, out_off, bytes.len() as u64),
                    };
                    self.record_collective(site, &d)?;
                    self.receive(&pending, &bytes, sync)?;
                }
            }
        }
        Ok(Flow::Next)
    }

    /// The ranks of replica group `group_id` (the def.json `replica_groups`; every rank of the
    /// world when the NEFF lists none), which must hold `rank`.
    fn group_of(
        &self,
        site: Site,
        group_id: usize,
        rank: u32,
        in_world: bool,
    ) -> Result<Vec<u32>, Fault> {
        let groups = &self.kernel().replica_groups;
        let group: Vec<u32> = if groups.iter().all(|g| g.is_empty()) {
            if in_world {
                (0..self.world() as u32).collect()
            } else {
                vec![0]
            }
        } else {
            groups.get(group_id).cloned().ok_or_else(|| {
                Fault::exec(
                    site,
                    format!(
                        "collective group_id {group_id}: the NEFF lists {} replica groups",
                        groups.len()
                    ),
                )
            })?
        };
        let span = if in_world {
            group.len()
        } else {
            group.len().max(self.world())
        };
        if !in_world && span > 1 {
            return Err(Fault::NotSimulated {
                site,
                name: format!(
                    "TRIGGER_COLLECTIVE over {span} ranks (replica group {group_id}) in a run of one rank; run the NEFF's world (`--ranks`)"
                ),
                engine: site.engine,
            });
        }
        if !group.contains(&rank) && in_world {
            return Err(Fault::exec(
                site,
                format!("rank {rank} is not in replica group {group_id} {group:?}"),
            ));
        }
        Ok(if in_world { group } else { vec![0] })
    }

    /// Write a completed collective's output window and make its bundle's `_COMPLETE` updates.
    fn receive(
        &mut self,
        p: &PendingCollective,
        bytes: &[u8],
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
        let len = bytes.len().min(p.out_len as usize);
        if len > 0 {
            let dst = self
                .dram
                .write(p.out_var, p.out_offset, len)
                .map_err(|e| Fault::oob(p.site, "collective", e))?;
            dst.copy_from_slice(&bytes[..len]);
            self.dram
                .note(p.out_var, p.out_offset, p.out_offset + len as u64, true);
            self.charge_copied(p.site, "collective")?;
        }
        if let Some(ev) = &p.events {
            ev.complete(sync, &self.regs[p.site.engine as usize]);
        }
        Ok(())
    }

    /// The scheduler can go no further: wait for an outstanding collective of this core and
    /// receive every one that is complete.
    pub(crate) fn await_collectives(&mut self, sync: &mut SyncState) -> Result<bool, Fault> {
        if self.pending.is_empty() {
            return Ok(false);
        }
        let Some((world, me)) = self.comm.clone() else {
            return Ok(false);
        };
        let tickets: Vec<u64> = self.pending.iter().map(|p| p.ticket).collect();
        let first = self.pending[0].site;
        let stand = format!(
            "{} waiting for {} collective(s) from {first}",
            me,
            tickets.len()
        );
        let done = world.wait(me, &tickets, stand).map_err(|e| Fault::Exec {
            site: first,
            message: e,
        })?;
        for (t, r) in done {
            let Some(i) = self.pending.iter().position(|p| p.ticket == t) else {
                continue;
            };
            let p = self.pending.remove(i);
            let bytes = r.map_err(|e| Fault::exec(p.site, e))?;
            self.receive(&p, &bytes, sync)?;
        }
        Ok(true)
    }
}
