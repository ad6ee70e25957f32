//! The race check's and the timeline's plumbing: agents, recorded accesses, the replay that
//! makes findings independent of the interleaving.

use tpbsim_isa::Engine;

use super::{Machine, RunOptions, Snapshot, COLLECTIVE_AGENTS};
use crate::machine::budget::{self, Exceeded};
use crate::machine::dma::{self, DmaDesc};
use crate::machine::fault::{Fault, Site};
use crate::machine::kernel::Kernel;
use crate::machine::memory::OnChip;
use crate::machine::race::{AccessKind, Agent, Checker, Finding, Mem};
use crate::machine::sched;

/// Agent ids: the five engines, then each sidecar DMA queue in engine and queue order, then one
/// direct-DMA agent per engine, then the collective agents of each engine in engine order (one
/// per collective bundle, `pool:collective#3`, up to [`COLLECTIVE_AGENTS`]; beyond, each
/// shared by several bundles, `pool:collectives5`).
fn agent_labels(kernel: &Kernel, sites: &[Vec<usize>; Engine::COUNT]) -> Vec<String> {
    let mut v: Vec<String> = Engine::ALL.iter().map(|e| e.short().to_string()).collect();
    for e in Engine::ALL {
        for q in &kernel.queues[e as usize] {
            v.push(format!("{}:{}", e.short(), q.name));
        }
    }
    v.extend(Engine::ALL.iter().map(|e| format!("{}:direct", e.short())));
    for e in Engine::ALL {
        let s = &sites[e as usize];
        if s.len() <= COLLECTIVE_AGENTS {
            v.extend(s.iter().map(|pc| format!("{}:collective#{pc}", e.short())));
        } else {
            v.extend((0..COLLECTIVE_AGENTS).map(|k| format!("{}:collectives{k}", e.short())));
        }
    }
    v
}

impl<'k> Machine<'k> {
    /// Check the run for races, uninitialised reads and PSUM accumulation onto unzeroed
    /// banks (see [`crate::machine::race`]). Call before [`Machine::run`].
    pub fn enable_race_check(&mut self) {
        let names = self
            .dram
            .iter()
            .map(|(id, v)| (id, v.name.clone()))
            .collect();
        let mut c = Checker::new(
            self.chip.geom,
            agent_labels(self.kernel, &self.collective_sites),
            names,
        );
        // Outputs, and variables the NEFF gives no data, hold nothing defined at the start.
        c.set_undefined_dram(self.kernel.vars.iter().filter_map(|v| {
            let undefined = v.kind == crate::machine::memory::VarKind::Output
                || (v.kind == crate::machine::memory::VarKind::Other && v.init.is_none());
            undefined.then_some(v.id)
        }));
        self.race = Some(Box::new(c));
        self.chip.log = Some(Default::default());
    }

    /// Build a timeline of the run (cost model in `docs/trace.md`). Call before
    /// [`Machine::run`]; with [`Machine::enable_race_check`] both run together.
    pub fn enable_timeline(&mut self) {
        if self.race.is_none() {
            self.enable_race_check();
            if let Some(c) = self.race.as_mut() {
                c.set_track_memory(false);
            }
        }
        if let Some(c) = self.race.as_mut() {
            c.timeline = Some(crate::machine::timeline::Timeline::new(agent_labels(
                self.kernel,
                &self.collective_sites,
            )));
        }
    }

    /// The timeline, when [`Machine::enable_timeline`] was called.
    pub fn timeline(&self) -> Option<&crate::machine::timeline::Timeline> {
        self.race.as_ref().and_then(|c| c.timeline.as_ref())
    }

    /// The race checker's findings (empty when the check is off).
    pub fn race_findings(&self) -> Vec<Finding> {
        self.race
            .as_ref()
            .filter(|c| c.tracks_memory())
            .map_or_else(Vec::new, |c| c.findings())
    }

    /// Time a DMA of `bytes` by queue `q`, triggered by engine `e`; returns its end (0 without
    /// a timeline).
    pub(super) fn time_dma(&mut self, q: Agent, e: Engine, name: String, bytes: u64) -> f64 {
        match self.race.as_mut().and_then(|c| c.timeline.as_mut()) {
            Some(t) => {
                let nb = t.cur_start[e as usize];
                t.dma(q, e as Agent, name, bytes, nb)
            }
            None => 0.0,
        }
    }

    /// Agent id of DMA queue `queue` of `e`'s sidecar.
    pub(super) fn queue_agent(&self, e: Engine, queue: &str) -> Agent {
        let mut id = Engine::COUNT;
        for x in Engine::ALL {
            for q in &self.kernel.queues[x as usize] {
                if x == e && q.name == queue {
                    return id as Agent;
                }
                id += 1;
            }
        }
        id as Agent
    }

    /// Agent id of `e`'s direct DMA.
    pub(super) fn direct_agent(&self, e: Engine) -> Agent {
        let queues: usize = self.kernel.queues.iter().map(Vec::len).sum();
        (Engine::COUNT + queues + e as usize) as Agent
    }

    /// Agent id of the collective bundle at `site` (`None` for another bundle).
    pub(crate) fn collective_agent(&self, site: Site) -> Option<Agent> {
        let e = site.engine as usize;
        let k = self.collective_sites[e].binary_search(&site.index).ok()?;
        let before: usize = self.collective_sites[..e]
            .iter()
            .map(|s| s.len().min(COLLECTIVE_AGENTS))
            .sum();
        let id = self.direct_agent(Engine::Sp) as usize + 1 + before + k % COLLECTIVE_AGENTS;
        Agent::try_from(id).ok()
    }

    /// Record for the race check the access (`operand`, `kind`) of `agent` to bytes
    /// `off..off + len` of DRAM variable `var`: a collective's window. Bytes past 4 GiB into
    /// a variable are not recorded (as for a transfer).
    pub(crate) fn record_window(
        &mut self,
        site: Site,
        agent: Agent,
        operand: &str,
        window: (u32, u64, u64),
        kind: AccessKind,
    ) -> Result<(), Fault> {
        let (var, off, len) = window;
        let Some(room) = self.shadow_room() else {
            return Ok(());
        };
        let (Ok(lo), Ok(hi)) = (u32::try_from(off), u32::try_from(off.saturating_add(len))) else {
            return Ok(());
        };
        let Some(c) = self.race.as_mut() else {
            return Ok(());
        };
        c.set_segment_cap(self.shadow_charged + room / budget::SHADOW_SEGMENT_BYTES);
        let r = c.dma_access(agent, operand, Mem::Dram(var), lo, hi, kind);
        self.charge_shadow(site, r, 0)
    }

    /// Attribute the logged on-chip accesses to the current bundle (at `site`), charging the
    /// shadow memory they create.
    pub(super) fn flush_chip_log(&mut self, site: Site) -> Result<(), Fault> {
        let room = self.shadow_room().unwrap_or(0);
        let r = match (self.race.as_mut(), self.chip.log.as_ref()) {
            (Some(c), Some(log)) => {
                c.set_segment_cap(self.shadow_charged + room / budget::SHADOW_SEGMENT_BYTES);
                c.flush(&mut log.borrow_mut())
            }
            _ => Ok(()),
        };
        self.charge_shadow(site, r, 0)
    }

    /// Record the accesses of a finished transfer.
    pub(super) fn record_dma(
        &mut self,
        site: Site,
        operand: &str,
        d: &DmaDesc,
    ) -> Result<(), Fault> {
        // The runs of one side are working memory: at most what the memory budget has left.
        let Some(room) = self.shadow_room() else {
            return Ok(());
        };
        let max_runs = (room / 16) as usize;
        let Some(c) = self.race.as_mut() else {
            return Ok(());
        };
        let agent = self.dma_agent;
        let geom = self.chip.geom;
        for (side, kind, name) in [
            (&d.from, AccessKind::Read, "from"),
            (&d.to, AccessKind::Write, "to"),
        ] {
            let op = format!("{operand}.{name}");
            // The runs covering one side's bytes (dimensions folded by step, so a transposing
            // transfer gives a few long runs, not one per element), sorted and merged: one
            // shadow update per contiguous range. Packed key: space (2 bits) | partition or variable id (30 bits) | byte offset;
            // runs contiguous with the previous one are merged on the fly, and the side is
            // sorted only when its runs are out of order.
            let mut runs: Vec<(u64, u32)> = Vec::new();
            let mut over = false;
            side.for_each_covered_run(|mut at, mut len| {
                while len > 0 && !over {
                    let Ok(a) = u32::try_from(at) else {
                        return;
                    };
                    // On chip, a run is cut at its partition's end.
                    let (space, id, lo, chunk) = match side.mem {
                        dma::DmaMem::Dram(v) => (0u64, v, a, len),
                        dma::DmaMem::OnChip => {
                            let l = geom.locate(a);
                            let (space, stride) =
                                if l.space == crate::machine::geometry::Space::Sbuf {
                                    (1, geom.sbuf_partition_stride())
                                } else {
                                    (2, crate::machine::geometry::PSUM_PARTITION_STRIDE)
                                };
                            let chunk = len.min(stride.saturating_sub(l.offset).max(1) as usize);
                            (space, l.partition, l.offset, chunk)
                        }
                    };
                    let Ok(n) = u32::try_from(chunk) else {
                        return;
                    };
                    let key = space << 62 | (u64::from(id) & 0x3FFF_FFFF) << 32 | u64::from(lo);
                    match runs.last_mut() {
                        Some(r) if r.0 + u64::from(r.1) == key && lo.checked_add(n).is_some() => {
                            r.1 += n
                        }
                        _ => {
                            if runs.len() >= max_runs {
                                over = true;
                                return;
                            }
                            runs.push((key, n))
                        }
                    }
                    at += chunk as i128;
                    len -= chunk;
                }
            });
            if over {
                self.charge_shadow(site, Ok(()), 0)?;
                return Err(Fault::budget(
                    site,
                    Exceeded {
                        resource: budget::Resource::Memory,
                        what: format!(
                            "the race check's record of `{op}` (more than {max_runs} runs)"
                        ),
                        needed: (max_runs as u64 + 1) * 16,
                        used: self.budget.memory(),
                        limit: self.budget.limits.max_memory,
                    },
                ));
            }
            if runs.windows(2).any(|w| w[0].0 > w[1].0) {
                runs.sort_unstable_by_key(|r| r.0);
            }
            let mut merged: Vec<(u8, u32, u32, u32)> = Vec::with_capacity(runs.len().min(1024));
            for (key, len) in runs {
                let (space, id, lo) = (
                    (key >> 62) as u8,
                    (key >> 32) as u32 & 0x3FFF_FFFF,
                    key as u32,
                );
                let hi = lo.saturating_add(len);
                match merged.last_mut() {
                    Some(m) if m.0 == space && m.1 == id && lo <= m.3 => m.3 = m.3.max(hi),
                    _ => merged.push((space, id, lo, hi)),
                }
            }
            // The shadow segments the ranges create share the room with the ranges.
            let working = (merged.capacity() as u64).saturating_mul(16);
            let cap = room.saturating_sub(working) / budget::SHADOW_SEGMENT_BYTES;
            c.set_segment_cap(self.shadow_charged.saturating_add(cap));
            let mut r = Ok(());
            for (space, id, lo, hi) in merged {
                let mem = match space {
                    0 => Mem::Dram(id),
                    1 => Mem::Chip(crate::machine::geometry::Space::Sbuf, id),
                    _ => Mem::Chip(crate::machine::geometry::Space::Psum, id),
                };
                r = c.dma_access(agent, &op, mem, lo, hi, kind);
                if r.is_err() {
                    break;
                }
            }
            if r.is_err() {
                return self.charge_shadow(site, r, working);
            }
        }
        self.charge_shadow(site, Ok(()), 0)
    }

    /// Record a collective of one rank, moving `d`'s bytes, as the issuing engine's direct DMA
    /// for the race check and the timeline (the bytes themselves are moved by the caller).
    pub(crate) fn record_collective(&mut self, site: Site, d: &DmaDesc) -> Result<(), Fault> {
        let agent = self.direct_agent(site.engine);
        if let Some(c) = self.race.as_mut() {
            c.handoff(site.engine as Agent, agent);
        }
        self.dma_agent = agent;
        if self.race.is_some() {
            self.record_dma(site, "collective", d)?;
        }
        let bytes =
            d.to.elems()
                .saturating_mul(d.to.format.container_bytes() as u64);
        self.time_dma(agent, site.engine, "direct".into(), bytes);
        Ok(())
    }

    /// Make the race findings independent of the interleaving: when the schedule-independent
    /// acquisition rule (`crate::machine::skeleton`) gives some wait a smaller clock than the run did,
    /// replay the same interleaving from `start` with the resolved clocks imposed and take the
    /// replay's findings. The machine's final state is the first run's. A replay whose
    /// synchronisation differs from the run's (a kernel whose control flow depends on on-chip
    /// data present before the run) is discarded and the run's findings stand.
    pub(super) fn resolve_races(&mut self, start: Snapshot, opts: &RunOptions) {
        let Some(clocks) = self.race.as_ref().and_then(|c| c.resolve()) else {
            return;
        };
        let Ok(chip) = OnChip::new(self.chip.geom) else {
            return;
        };
        let end = Snapshot {
            dram: std::mem::replace(&mut self.dram, start.dram),
            sync: std::mem::replace(&mut self.sync, start.sync),
            regs: std::mem::replace(&mut self.regs, start.regs),
            engines: std::mem::replace(&mut self.engines, start.engines),
        };
        let mut chip = std::mem::replace(&mut self.chip, chip);
        let counters = (self.dma_bytes, self.dma_transfers);
        let charged = (
            self.budget.clone(),
            self.bundles,
            self.work.get(),
            self.timeline_charged,
            self.records_charged,
        );
        self.records_charged = 0;
        self.bundles = 0;
        self.work.set(0);
        let mut first = self.race.take();
        self.enable_race_check();
        if let Some(c) = self.race.as_mut() {
            c.force(clocks);
        }
        // A core of a world replays what the world delivered in the run.
        if let Some(d) = self.deliveries.as_mut() {
            d.replay = Some((0, 0));
        }
        self.pending.clear();
        self.defer_complete = false;
        let mut sync = std::mem::take(&mut self.sync);
        let r = sched::run_ordered(self, &mut sync, opts.max_steps, opts.order, &mut |_| {});
        self.pending.clear();
        self.defer_complete = false;
        self.sync = end.sync;
        self.dram = end.dram;
        self.regs = end.regs;
        self.engines = end.engines;
        (self.dma_bytes, self.dma_transfers) = counters;
        let work;
        (
            self.budget,
            self.bundles,
            work,
            self.timeline_charged,
            self.records_charged,
        ) = charged;
        self.work.set(work);
        chip.log = self.chip.log.take();
        self.chip = chip;
        let replay = self.race.take();
        self.race = match (r, replay, first.as_mut()) {
            (Ok(_), Some(mut replay), Some(f)) if f.same_sync(&replay) => {
                replay.timeline = f.timeline.take();
                Some(replay)
            }
            _ => first,
        };
    }

    /// Note the bytes a transfer read and wrote in the DRAM variables this core shares with
    /// others (the cluster checks them for accesses no synchronisation orders).
    pub(super) fn note_shared(&mut self, site: Site, d: &DmaDesc) -> Result<(), Fault> {
        for (side, write) in [(&d.from, false), (&d.to, true)] {
            if let dma::DmaMem::Dram(var) = side.mem {
                let dram = &mut self.dram;
                side.for_each_covered_run(|at, len| {
                    if let Ok(lo) = u64::try_from(at) {
                        dram.note(var, lo, lo.saturating_add(len as u64), write);
                    }
                });
            }
        }
        let ranges = self.dram.logged_ranges();
        self.budget
            .charge_growth(
                || format!("the record of shared DRAM accesses ({ranges} ranges)"),
                ranges,
                &mut self.logged_charged,
                16,
            )
            .map_err(|e| Fault::budget(site, e))
    }
}
