//! The pseudo band (0xC1..0xDF) the runtime rewrites before the engines run
//! (R `isa/pseudo-instruction-lowering.md`). Opcodes with a typed format run in `dispatch`
//! (DMATRIGGER 0xC1, DMA_DIRECT2D 0xD4, PSEUDO_INST 0xDF, and TRIGGER_COLLECTIVE 0xC8, whose
//! `TriggerCollective` record runs here in [`Machine::collective`]); this file takes the raw
//! ones too:
//!
//! - 0xCC BRANCH_LABEL: deleted by the lowering, so a no-op;
//! - 0xC2 DMAREARM and 0xCF DMASWAP_QUEUE_SET: re-arm / re-point a queue; blocks run
//!   synchronously when triggered here, so there is nothing to re-arm (a no-op);
//! - everything else is refused naming the page that leaves it open.
//!
//! Which of these a raw opcode is comes from the spec's `sem` column (`PseudoSem`).
//!
//! 0xC8 TRIGGER_COLLECTIVE posts the rank's input window to its replica group
//! ([`super::collective`]); without a world (a run of one rank) it completes at once over a
//! group of one, where every collective type the model takes is a copy of the input to the
//! output (an all-reduce over one rank is its input).

use tpbsim_isa::{
    Bundle, CurProcessingRankId, GidLoad, GidTargetType, NumFormat, PseudoSem, SendRecv,
    TriggerCollective,
};

use std::sync::Arc;

use super::collective::{Comm, Kind, Meeting, Member, Post, Reduce, Window};
use super::core::{Machine, PendingCollective};
use super::dma::{DmaDesc, DmaMem, DmaSide};
use super::fault::{Fault, Site};
use super::race::{AccessKind, Agent, Outstanding};
use super::sched::Flow;
use super::sync::SyncState;

impl Machine<'_> {
    /// Run a pseudo-band bundle that has no typed format.
    pub(crate) fn pseudo(
        &mut self,
        site: Site,
        _: &Bundle,
        _: &mut SyncState,
    ) -> Result<Flow, Fault> {
        let refuse = |name: &str, why: &str| Fault::NotSimulated {
            site,
            name: format!("{name} (opcode 0x{:02x}; {why})", site.opcode),
            engine: site.engine,
        };
        match PseudoSem::of(site.opcode) {
            Some(PseudoSem::NoEffect) => Ok(Flow::Next),
            Some(PseudoSem::FunctionReturn) => Err(refuse(
                "FUNCTION_RETURN",
                "R isa/pseudo-instruction-lowering.md builds the call frame in FUNCTION sections whose NEFF members no page names",
            )),
            Some(PseudoSem::Extension) => Err(refuse(
                "EXTENSION",
                "C isa/dma-encoding.md gives the DGE forms 0x20/0x28 of ADDR8 but not the DGE queue they use",
            )),
            Some(PseudoSem::CollectivePlan) => Err(refuse(
                "TRIGGER_COLLECTIVE2",
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
    pub(crate) fn collective(
        &mut self,
        site: Site,
        x: &TriggerCollective,
        sync: &mut SyncState,
    ) -> Result<Flow, Fault> {
        let kind = Kind::of(x.ctype).map_err(|why| Fault::NotSimulated {
            site,
            name: format!("TRIGGER_COLLECTIVE: {why}"),
            engine: site.engine,
        })?;
        let op = x.op.0;
        let format = self.format(site, "dtype", x.dtype)?;
        let group_id = x.group_id as usize;
        let (input, output) = (x.input_tensor_id, x.output_tensor_id);
        let n = x.num_elements;
        let (src_off, dst_off) = (x.src_offset_elems, x.dst_offset_elems);
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
        // Both windows lie inside their variables before anything moves.
        let what = format!("collective of {n} elements");
        self.window(site, &what, "input", input, in_off, in_len)?;
        self.window(site, &what, "output", output, out_off, out_len)?;
        let len = in_len as usize;
        self.charge_memory(
            &format!("{site}: collective contribution"),
            in_len.saturating_mul(2),
        )
        .map_err(|e| Fault::budget(site, e))?;
        self.charge_collective(site, in_len)?;
        let data = self.snapshot(site, input, in_off, len)?;
        self.dram.note(input, in_off, in_off + in_len, false);
        let reduce = Reduce::of(x.op);
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
        let mut pending = PendingCollective {
            ticket: 0,
            site,
            out_var: output,
            out_offset: out_off,
            out_len,
            events: None,
            race: None,
        };
        match world {
            Some(w) => {
                let race = self.issue_collective(site, Some((input, in_off, in_len)), "input")?;
                let ticket = self.post_collective(&w, Member { rank, core }, post, site)?;
                self.pending.push(PendingCollective {
                    ticket,
                    race,
                    ..pending
                });
                self.defer_complete = true;
            }
            None => {
                // A group of one: complete now, with the same value model.
                let world = Comm::new([Member { rank: 0, core: 0 }], Default::default());
                let ticket = world.post(Member { rank: 0, core: 0 }, post);
                let done = world
                    .wait(Member { rank: 0, core: 0 }, &[ticket], site.to_string())
                    .map_err(|e| Fault::exec(site, e.report))?;
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
                    self.receive(&mut pending, &bytes, sync)?;
                }
            }
        }
        Ok(Flow::Next)
    }

    /// Fault unless bytes `off..off + len` of variable `var` exist: `prefix: the {what}
    /// window ... leaves variable ...`.
    fn window(
        &self,
        site: Site,
        prefix: &str,
        what: &str,
        var: u32,
        off: u64,
        len: u64,
    ) -> Result<(), Fault> {
        let size = self.dram.get(var).map(|v| v.bytes.len() as u64);
        if off
            .checked_add(len)
            .is_none_or(|hi| size.is_none_or(|s| hi > s))
        {
            return Err(Fault::exec(
                site,
                format!(
                    "{prefix}: the {what} window {off}..{} leaves variable {var} ({})",
                    off.saturating_add(len),
                    size.map_or("no such variable".to_string(), |s| format!("{s} bytes"))
                ),
            ));
        }
        Ok(())
    }

    /// 0xCB: one leg of a point-to-point copy. A send posts the bytes of its window of
    /// `tensor_id` (read when the bundle issues) for its peer; a receive posts nothing and,
    /// when the send it meets is posted, receives those bytes into its window. The k-th send
    /// from rank s to rank t meets the k-th receive of rank t from rank s (a pair of ranks
    /// meeting at the world, like a permute of one pair); the two must move the same number of
    /// bytes. Completion is signalled as for 0xC8, when the pair has met.
    pub(crate) fn send_recv(&mut self, site: Site, x: &SendRecv) -> Result<Flow, Fault> {
        let send = x.is_send != 0;
        let leg = if send { "send to" } else { "receive from" };
        let Some((world, me)) = self.comm.clone() else {
            return Err(Fault::NotSimulated {
                site,
                name: format!(
                    "SEND_RECV ({leg} rank {}) in a run of one rank; run the NEFF's world (`--ranks`)",
                    x.peer_id
                ),
                engine: site.engine,
            });
        };
        let peer = match u32::try_from(x.peer_id) {
            Ok(p) if p != me.rank && world.has_rank(p) => p,
            _ => {
                return Err(Fault::exec(
                    site,
                    format!(
                        "SEND_RECV: rank {} cannot {leg} rank {} (not another rank of the world)",
                        me.rank, x.peer_id
                    ),
                ))
            }
        };
        let (var, off, len) = (x.tensor_id, x.offset_bytes, x.size_bytes);
        let prefix = format!("SEND_RECV of {len} bytes");
        self.window(
            site,
            &prefix,
            if send { "source" } else { "destination" },
            var,
            off,
            len,
        )?;
        let data = if send {
            self.charge_memory(&format!("{site}: send contribution"), len.saturating_mul(2))
                .map_err(|e| Fault::budget(site, e))?;
            self.charge_collective(site, len)?;
            let d = self.snapshot(site, var, off, len as usize)?;
            self.dram.note(var, off, off + len, false);
            d
        } else {
            Vec::new().into()
        };
        let group = if send {
            vec![me.rank, peer]
        } else {
            vec![peer, me.rank]
        };
        let post = Post {
            kind: Kind::SendRecv,
            reduce: None,
            op: 0,
            format: NumFormat::Uint8,
            elements: len,
            pairs: vec![(group[0], group[1])],
            group,
            data,
            site,
        };
        let race = if send {
            self.issue_collective(site, Some((var, off, len)), "source")?
        } else {
            self.issue_collective(site, None, "")?
        };
        let ticket = self.post_collective(&world, me, post, site)?;
        self.pending.push(PendingCollective {
            ticket,
            site,
            out_var: var,
            out_offset: off,
            out_len: if send { 0 } else { len },
            events: None,
            race,
        });
        self.defer_complete = true;
        Ok(Flow::Next)
    }

    /// 0xDC GID_LOAD: the runtime writes this rank's global id into the register the record
    /// names. The id is the rank's index in the world (0 in a run of one rank; the mapping of
    /// the runtime's global device id onto the world's ranks is project-defined). The address
    /// form is refused: what a PSEUDO_ADDR8 destination names at load time is not public.
    pub(crate) fn gid_load(&mut self, site: Site, x: &GidLoad) -> Result<Flow, Fault> {
        if x.dst_target != GidTargetType::REGISTER {
            return Err(Fault::NotSimulated {
                site,
                name: format!(
                    "GID_LOAD to an address (dst_target {:#04x}): what its PSEUDO_ADDR8 names at load time is not public",
                    x.dst_target.0
                ),
                engine: site.engine,
            });
        }
        let low = x.dst.0 & 0x00FF_FFFF_FFFF_FFFF;
        if low != 0 {
            return Err(Fault::exec(
                site,
                format!("GID_LOAD to a register: bytes +16..+22 must be zero, not {low:#x}"),
            ));
        }
        let reg = (x.dst.0 >> 56) as usize;
        let rank = self.comm.as_ref().map_or(0, |(_, m)| m.rank);
        let slot = self.regs[site.engine as usize]
            .get_mut(reg)
            .ok_or_else(|| Fault::exec(site, format!("GID_LOAD: register {reg} does not exist")))?;
        *slot = rank;
        Ok(Flow::Next)
    }

    /// 0xDB CUR_PROCESSING_RANK_ID: refused. The record is public, but the value the runtime
    /// writes (the peer rank of one step of a fine-grained collective, from the rank, the
    /// iteration and the ring) comes from a stepping function no public page gives.
    pub(crate) fn cur_processing_rank_id(site: Site, x: &CurProcessingRankId) -> Fault {
        Fault::NotSimulated {
            site,
            name: format!(
                "CUR_PROCESSING_RANK_ID (opcode {:#04x}; G collectives/ops/rank-id.md gives the record but not the stepping function that turns the rank, iteration {} and ring {} of group {} into the peer rank written to register {})",
                site.opcode, x.iteration_id, x.channel_id, x.group_id, x.dst_reg
            ),
            engine: site.engine,
        }
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

    /// The bytes `off..off + len` of variable `var` as they are now, without a copy (the
    /// variable becomes copy on write; the caller checked the window with [`Self::window`]).
    fn snapshot(&mut self, site: Site, var: u32, off: u64, len: usize) -> Result<Window, Fault> {
        let lo = off as usize;
        self.dram
            .share(var)
            .and_then(|buf| Window::new(buf, lo..lo + len))
            .ok_or_else(|| Fault::exec(site, format!("variable {var}: no window {lo}..+{len}")))
    }

    /// With the race check, a collective of a world issued at `site` starts on its own agent
    /// (`Machine::collective_agent`), ordered after what the issuing engine did so far, and
    /// reads `read` (variable, byte offset, bytes; `operand` names it) now: its agent and its
    /// own clock, kept until it completes.
    fn issue_collective(
        &mut self,
        site: Site,
        read: Option<(u32, u64, u64)>,
        operand: &str,
    ) -> Result<Option<(Agent, Outstanding)>, Fault> {
        let Some(agent) = self.race.as_ref().and(self.collective_agent(site)) else {
            return Ok(None);
        };
        if let Some(c) = self.race.as_mut() {
            c.handoff(site.engine as Agent, agent);
        }
        if let Some(w) = read {
            self.record_window(site, agent, operand, w, AccessKind::Read)?;
        }
        Ok(self
            .race
            .as_mut()
            .map(|c| (agent, c.fork_collective(agent))))
    }

    /// Post `post` for `me` at `world`: its ticket. In the race check's replay the ticket is
    /// the run's, and nothing is posted (`super::core::Deliveries`).
    fn post_collective(
        &mut self,
        world: &Arc<dyn Meeting>,
        me: Member,
        post: Post,
        site: Site,
    ) -> Result<u64, Fault> {
        if let Some(t) = self.deliveries.as_mut().and_then(|d| d.replayed_ticket()) {
            return t.ok_or_else(|| {
                Fault::exec(
                    site,
                    "the race check's replay posts a collective the run did not",
                )
            });
        }
        let t = world.post(me, post).map_err(|e| Fault::exec(site, e))?;
        if let Some(d) = self.deliveries.as_mut() {
            d.record_ticket(t);
        }
        Ok(t)
    }

    /// Write a completed collective's output window and make its bundle's `_COMPLETE` updates;
    /// with the race check, both on the collective's own agent and clock (the write is the
    /// collective's, and the updates release what it did). A result that fills the whole
    /// output variable becomes the variable's buffer, shared with the other members that
    /// receive it (copied only if this core writes it later).
    fn receive(
        &mut self,
        p: &mut PendingCollective,
        bytes: &Arc<Vec<u8>>,
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
        let agent = match (self.race.as_mut(), p.race.as_mut()) {
            (Some(c), Some((a, o))) => {
                c.resume_collective(*a, o);
                Some(*a)
            }
            _ => None,
        };
        let r = self.deliver(p, agent, bytes, sync);
        if let (Some(c), Some((a, o))) = (self.race.as_mut(), p.race.as_mut()) {
            c.suspend_collective(*a, o);
        }
        r
    }

    /// [`Self::receive`] once the collective's agent (with the race check) is in place.
    fn deliver(
        &mut self,
        p: &PendingCollective,
        agent: Option<Agent>,
        bytes: &Arc<Vec<u8>>,
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
        let len = bytes.len().min(p.out_len as usize);
        if len > 0 {
            let whole = p.out_offset == 0
                && len == bytes.len()
                && self.dram.replace_shared(p.out_var, bytes.clone());
            if !whole {
                let dst = self
                    .dram
                    .write(p.out_var, p.out_offset, len)
                    .map_err(|e| Fault::oob(p.site, "collective", e))?;
                dst.copy_from_slice(&bytes[..len]);
            }
            self.dram
                .note(p.out_var, p.out_offset, p.out_offset + len as u64, true);
            self.charge_copied(p.site, "collective")?;
            if let Some(a) = agent {
                let operand = if p.site.opcode == tpbsim_isa::opcode_byte::PSEUDO_SEND_RECV {
                    "destination"
                } else {
                    "output"
                };
                let w = (p.out_var, p.out_offset, len as u64);
                self.record_window(p.site, a, operand, w, AccessKind::Write)?;
            }
        }
        if let Some(ev) = &p.events {
            let regs = &self.regs[p.site.engine as usize];
            match (self.race.as_mut(), agent) {
                (Some(c), Some(a)) => {
                    let end = c.timeline.as_ref().map_or(0.0, |t| t.now[a as usize]);
                    c.complete(a, ev, sync, regs, end);
                }
                _ => ev.complete(sync, regs),
            }
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
        let done = match self.deliveries.as_mut().and_then(|d| d.replayed_wait()) {
            Some(Some(d)) => d,
            Some(None) => {
                return Err(Fault::exec(
                    first,
                    "the race check's replay waits for collectives more often than the run did",
                ))
            }
            None => {
                let d = world.wait(me, &tickets, stand).map_err(|e| Fault::Exec {
                    site: first,
                    message: e,
                })?;
                if let Some(rec) = self.deliveries.as_mut() {
                    rec.record_wait(&d);
                    let held: u64 = d
                        .iter()
                        .filter_map(|(_, r)| r.as_ref().ok())
                        .map(|b| b.len() as u64)
                        .sum();
                    self.charge_memory(
                        "the race check's record of what collectives delivered",
                        held,
                    )
                    .map_err(|e| Fault::budget(first, e))?;
                }
                d
            }
        };
        for (t, r) in done {
            let Some(i) = self.pending.iter().position(|p| p.ticket == t) else {
                continue;
            };
            let mut p = self.pending.remove(i);
            let bytes = r.map_err(|e| Fault::exec(p.site, e))?;
            self.receive(&mut p, &bytes, sync)?;
        }
        Ok(true)
    }
}
