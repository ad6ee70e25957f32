//! Happens-before race detection, uninitialised reads and PSUM accumulation onto unzeroed banks.
//!
//! The checker is off unless a run asks for it ([`super::Machine::enable_race_check`]); when
//! off, the machine pays one branch per bundle and per gather/scatter.
//!
//! # Model (see `docs/races.md`)
//!
//! * **Agents.** The five engines, each DMA queue of each engine's sidecar (`sp:in`), and one
//!   direct-DMA agent per engine for DMA_DIRECT2D (`sp:direct`), and in a world of several
//!   ranks one agent per collective bundle (`pool:collective#3`), whose collectives each run
//!   on their own clock ([`Outstanding`]). Each agent has a vector clock.
//!   An engine's bundles are ordered among themselves (program order); so are the transfers of
//!   one DMA queue.
//! * **Epochs.** An access is stamped with its agent's own clock component (its epoch). After
//!   every release the agent's epoch advances, so accesses after a `_READ` update are not
//!   covered by it while the accesses of a `_COMPLETE` update's bundle are.
//! * **Release / acquire.** Semaphore and event updates release the updating agent's clock;
//!   a satisfied wait acquires it. A DMA trigger hands the triggering engine's clock to the
//!   queue (the transfer starts after everything the engine did before it); the queue's
//!   completion updates (descriptor semaphore, event, queue semaphore) release the queue's clock.
//! * **Semaphores are counters.** Each semaphore keeps the history of its updates since the
//!   last reset, each with the join of the clocks of all updates up to it. A satisfied wait
//!   acquires the join up to the update that last made its condition true (the updates that
//!   contributed to the value it observed); later updates that merely kept it true are not
//!   acquired. A wait for `sem >= 1` with two producers therefore acquires only the first
//!   increment. A `SEM_WRITE` restarts the history from the writer's clock. A semaphore
//!   changed behind the history's back (range clear) restarts it with an empty clock.
//! * **Schedule independence.** Which updates a wait observed depends on the interleaving;
//!   after the run, [`super::skeleton`] resolves the clock every interleaving guarantees each
//!   wait, and the machine replays the run with those clocks when they differ.
//! * **Shadow memory.** Per SBUF/PSUM partition and per DRAM variable, an interval map of byte
//!   ranges, each with its last write and the last read of each agent. Two accesses from
//!   different agents to overlapping bytes, at least one a write, where the earlier one's
//!   epoch is not covered by the later agent's clock, are a race.
//! * **Uninitialised reads.** A read of SBUF/PSUM bytes no write has reached (DMA, compute or
//!   PSUM zeroing) is reported, as is a read of DRAM bytes of an output, or of a variable the
//!   NEFF gives no data, that no transfer or collective has written.
//! * **PSUM accumulation.** A matmul that adds into PSUM (no START) checks that each destination
//!   byte is inside an open accumulation group: written since, and not closed by a matmul
//!   with END. With BEGIN_ACCUM the bytes only need to have been written.
//!
//! Reports are aggregated per pair of accesses (engine, bundle, operand) and memory; the two
//! sides are listed in a fixed order, so a report does not depend on which one executed first.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use tpbsim_isa::Engine;

use super::fault::Site;
use super::geometry::{Geometry, Space};
use super::pattern::Resolved;
use super::skeleton::Skeleton;
use super::sync::{SyncState, Update, UpdateOp, Wait, When};
use super::timeline::Stamp;
use crate::numerics::pe::PsumFlags;

mod clocks;
mod histories;
mod report;
mod shadow;

pub use clocks::*;
use histories::*;
pub use report::*;
pub use shadow::*;

/// The race checker's state.
#[derive(Debug)]
pub struct Checker {
    geom: Geometry,
    labels: Vec<String>,
    clocks: Vec<VClock>,
    /// Per agent: (epoch at release, description) of each release.
    releases: Vec<Vec<(u32, String)>>,
    origins: Vec<Origin>,
    origin_ids: HashMap<Origin, u32>,
    sems: Vec<SemHist>,
    events: Vec<EvHist>,
    sbuf: Vec<IMap>,
    psum: Vec<IMap>,
    dram: BTreeMap<u32, IMap>,
    dram_names: BTreeMap<u32, String>,
    findings: BTreeMap<(Key, MemKey), Agg>,
    // The bundle being attributed.
    cur_agent: Agent,
    cur_site: Option<Site>,
    cur_mnemonic: &'static str,
    operands: Vec<(String, Resolved)>,
    accumulate: Option<(Resolved, PsumFlags)>,
    /// Destinations the current bundle reads for their values (read-modify-write).
    rmw: Vec<Resolved>,
    /// Record memory accesses (off when only the timeline is wanted).
    track_memory: bool,
    /// The timeline, when one is being built.
    pub(crate) timeline: Option<super::timeline::Timeline>,
    /// Operand shapes of the current bundle: (elements per partition, bytes per element).
    pub(crate) shapes: Vec<(u64, u32)>,
    /// The origin of the last DMA access (agent, operand, id).
    last_dma_origin: Option<(Agent, String, u32)>,
    /// The run's synchronisation, for the schedule-independent resolution.
    skeleton: Skeleton,
    /// Acquired clocks imposed on the waits (a replay of the run with resolved clocks).
    forced: Option<Vec<VClock>>,
    /// Per engine agent: the direct-DMA agent its current bundle handed a transfer to, whose
    /// clock the bundle's `_COMPLETE` updates include (the update follows the transfer).
    direct_done: Vec<Option<Agent>>,
    /// Live segments of all the shadow interval maps.
    segments: u64,
    /// Live segments a shadow update may grow them to ([`ShadowFull`] beyond).
    segment_cap: u64,
    /// DRAM variables whose bytes hold nothing defined when the run starts (outputs, and
    /// variables with no data in the NEFF): reads of bytes no write reached are reported.
    undefined: std::collections::BTreeSet<u32>,
}

/// Epochs of its agent one collective uses: its accesses and its at most two completion
/// updates.
const COLLECTIVE_EPOCHS: u32 = 4;

/// A collective's own clock while it is outstanding: kept when it issues
/// ([`Checker::fork_collective`]), in place of its agent's while it completes
/// ([`Checker::resume_collective`]). Collectives of one agent (one bundle issuing again) keep
/// apart: the completion of one is not ordered after what its agent's later issues acquired.
#[derive(Clone, Debug)]
pub struct Outstanding {
    slot: u32,
    clock: VClock,
    site: Option<Site>,
    mnemonic: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum MemKey {
    Sbuf,
    Psum,
    Dram(u32),
}

impl Checker {
    /// A checker for `labels.len()` agents (the five engines first, in wire order).
    pub fn new(geom: Geometry, labels: Vec<String>, dram_names: BTreeMap<u32, String>) -> Checker {
        let n = labels.len();
        let clocks = (0..n).map(|i| VClock::unit(n, i as Agent)).collect();
        Checker {
            direct_done: vec![None; n],
            geom,
            clocks,
            releases: vec![Vec::new(); n],
            labels,
            origins: Vec::new(),
            origin_ids: HashMap::new(),
            sems: (0..super::sync::NUM_SEMAPHORES)
                .map(|_| SemHist {
                    base_value: 0,
                    base: VClock::zero(n),
                    base_time: Stamp::default(),
                    base_agent: None,
                    entries: Vec::new(),
                })
                .collect(),
            events: (0..super::sync::NUM_EVENTS)
                .map(|_| EvHist {
                    state: false,
                    clock: VClock::zero(n),
                    time: Stamp::default(),
                    agent: None,
                })
                .collect(),
            sbuf: vec![IMap::default(); super::geometry::PARTITIONS as usize],
            psum: vec![IMap::default(); super::geometry::PARTITIONS as usize],
            dram: BTreeMap::new(),
            dram_names,
            findings: BTreeMap::new(),
            cur_agent: 0,
            cur_site: None,
            cur_mnemonic: "",
            operands: Vec::new(),
            accumulate: None,
            rmw: Vec::new(),
            track_memory: true,
            timeline: None,
            shapes: Vec::new(),
            last_dma_origin: None,
            skeleton: Skeleton::new(n),
            forced: None,
            segments: 0,
            segment_cap: u64::MAX,
            undefined: Default::default(),
        }
    }

    /// Report reads of the bytes of DRAM variables `vars` that no write has reached (their
    /// contents are not defined when the run starts: outputs, variables with no data).
    pub fn set_undefined_dram(&mut self, vars: impl IntoIterator<Item = u32>) {
        self.undefined = vars.into_iter().collect();
    }

    /// A collective issued by the current bundle on agent `q` (after [`Checker::handoff`]
    /// and the record of what it reads when it issues): it keeps `q`'s clock as its own, and
    /// `q`'s own component moves past the epochs the collective uses.
    pub fn fork_collective(&mut self, q: Agent) -> Outstanding {
        let clock = self.clocks[q as usize].clone();
        let slot = self.skeleton.fork(q, COLLECTIVE_EPOCHS);
        let own = clock.get(q);
        self.clocks[q as usize].raise(q, own.saturating_add(COLLECTIVE_EPOCHS));
        Outstanding {
            slot,
            clock,
            site: self.cur_site,
            mnemonic: self.cur_mnemonic,
        }
    }

    /// Collective `o` of agent `q` completes: the following accesses and releases are its
    /// (attributed to the bundle that issued it), on its own clock, until
    /// [`Checker::suspend_collective`].
    pub fn resume_collective(&mut self, q: Agent, o: &mut Outstanding) {
        if let Some(site) = o.site {
            self.begin(q, site, o.mnemonic);
        }
        std::mem::swap(&mut self.clocks[q as usize], &mut o.clock);
        self.skeleton.swap(q, o.slot);
    }

    /// The end of [`Checker::resume_collective`]: agent `q` takes its own clock back.
    pub fn suspend_collective(&mut self, q: Agent, o: &mut Outstanding) {
        std::mem::swap(&mut self.clocks[q as usize], &mut o.clock);
        self.skeleton.swap(q, o.slot);
    }

    /// Live segments of the shadow memory (the interval maps of all partitions and DRAM
    /// variables), which the machine charges to the memory budget.
    pub fn shadow_segments(&self) -> u64 {
        self.segments
    }

    /// Let the following shadow updates grow the shadow memory to at most `cap` live segments:
    /// an update that would need more stops with [`ShadowFull`] as it creates them.
    pub fn set_segment_cap(&mut self, cap: u64) {
        self.segment_cap = cap;
    }

    /// The schedule-independent acquired clock of every wait of the run so far, or `None`
    /// when each equals the clock it acquired in the run (see [`super::skeleton`]).
    pub fn resolve(&self) -> Option<Vec<VClock>> {
        self.skeleton.resolve()
    }

    /// Make the waits acquire `clocks` (in the order they are passed) instead of what the
    /// run offers: a replay of the same interleaving with [`Checker::resolve`]'s clocks.
    pub fn force(&mut self, clocks: Vec<VClock>) {
        self.forced = Some(clocks);
    }

    /// Whether `other` recorded the same synchronisation as this checker (a faithful replay).
    pub fn same_sync(&self, other: &Checker) -> bool {
        self.skeleton.same_shape(&other.skeleton)
    }

    /// Record memory accesses (race, uninitialised-read and PSUM checks) or not.
    pub fn set_track_memory(&mut self, on: bool) {
        self.track_memory = on;
    }

    /// Whether memory accesses are recorded.
    pub fn tracks_memory(&self) -> bool {
        self.track_memory
    }

    /// Label of an agent.
    pub fn label(&self, a: Agent) -> &str {
        self.labels.get(a as usize).map_or("?", |s| s.as_str())
    }

    /// Attribute the following accesses to bundle `site` (mnemonic `mnemonic`) of agent `agent`.
    pub fn begin(&mut self, agent: Agent, site: Site, mnemonic: &'static str) {
        self.cur_agent = agent;
        self.cur_site = Some(site);
        self.direct_done[agent as usize] = None;
        self.cur_mnemonic = mnemonic;
        self.operands.clear();
        self.accumulate = None;
        self.rmw.clear();
        self.shapes.clear();
        self.last_dma_origin = None;
    }

    /// The queue agent `q` starts a transfer triggered by agent `by`: it acquires `by`'s clock,
    /// and `by`'s epoch advances (its later accesses are not covered by the transfer's clock).
    pub fn handoff(&mut self, by: Agent, q: Agent) {
        if by == q {
            return;
        }
        self.skeleton.handoff(by, q);
        if self.labels[q as usize].ends_with(":direct") {
            self.direct_done[by as usize] = Some(q);
        }
        let c = self.clocks[by as usize].clone();
        self.clocks[q as usize].join(&c);
        // The transfer is ordered after what `by` did so far, not after what it does next.
        self.tick(by);
    }

    fn origin(&mut self, agent: Agent, operand: &str) -> u32 {
        let site = self.cur_site.unwrap_or(Site {
            engine: Engine::Sp,
            index: 0,
            opcode: 0,
        });
        let o = Origin {
            engine: site.engine,
            index: site.index,
            agent: self.label(agent).to_string(),
            mnemonic: self.cur_mnemonic.to_string(),
            operand: operand.to_string(),
        };
        if let Some(&id) = self.origin_ids.get(&o) {
            return id;
        }
        let id = self.origins.len() as u32;
        self.origins.push(o.clone());
        self.origin_ids.insert(o, id);
        id
    }
}

impl Checker {
    /// The findings so far, in a fixed order (kind, then the origins).
    pub fn findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for ((key, mk), agg) in &self.findings {
            let memory = match mk {
                MemKey::Sbuf => Memory::Sbuf,
                MemKey::Psum => Memory::Psum,
                MemKey::Dram(v) => Memory::Dram(
                    self.dram_names
                        .get(v)
                        .cloned()
                        .unwrap_or_else(|| format!("#{v}")),
                ),
            };
            let address = match (mk, agg.partitions) {
                (MemKey::Sbuf, Some((p, _))) => Some(self.geom.sbuf_address(p, agg.bytes.0)),
                (MemKey::Psum, Some((p, _))) => Some(self.geom.psum_address(p, agg.bytes.0)),
                _ => None,
            };
            let extent = Extent {
                memory,
                partitions: agg.partitions,
                bytes: (u64::from(agg.bytes.0), u64::from(agg.bytes.1)),
                address,
                count: agg.count,
            };
            let org = |i: u32| self.origins[i as usize].clone();
            let kind = match *key {
                Key::Race { a, ak, b, bk } => {
                    let mut sa = RaceSide {
                        origin: org(a),
                        kind: ak,
                        next_release: self.next_release(agg.agents.0, agg.epochs.0),
                    };
                    let mut sb = RaceSide {
                        origin: org(b),
                        kind: bk,
                        next_release: self.next_release(agg.agents.1, agg.epochs.1),
                    };
                    if (&sb.origin, sb.kind) < (&sa.origin, sa.kind) {
                        std::mem::swap(&mut sa, &mut sb);
                    }
                    let missing = missing_sync(&sa, &sb);
                    FindingKind::Race {
                        a: sa,
                        b: sb,
                        missing,
                    }
                }
                Key::Uninit(o) => FindingKind::UninitRead { at: org(o) },
                Key::Psum(o, last) => FindingKind::PsumUnzeroed {
                    at: org(o),
                    last: last.map(org),
                },
            };
            out.push(Finding {
                core: None,
                kind,
                extent,
            });
        }
        // A read that races with a write is reported as the race alone: whether it also found
        // the bytes unwritten depends on which of the two the schedule ran first.
        let racy_reads: Vec<(Origin, Memory)> = out
            .iter()
            .filter_map(|f| match &f.kind {
                FindingKind::Race { a, b, .. } => Some(
                    [a, b]
                        .into_iter()
                        .filter(|s| s.kind == AccessKind::Read)
                        .map(|s| (s.origin.clone(), f.extent.memory.clone()))
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .flatten()
            .collect();
        // A matmul accumulating onto never-written PSUM bytes is reported as the PSUM finding,
        // which names the accumulation group, not also as an uninitialised read.
        let psum_sites: Vec<(Origin, Memory)> = out
            .iter()
            .filter_map(|f| match &f.kind {
                FindingKind::PsumUnzeroed { at, .. } => Some((at.clone(), f.extent.memory.clone())),
                _ => None,
            })
            .collect();
        out.retain(|f| match &f.kind {
            FindingKind::UninitRead { at } => !racy_reads
                .iter()
                .chain(&psum_sites)
                .any(|(o, m)| o == at && *m == f.extent.memory),
            _ => true,
        });
        // Merge races found in both directions (same pair, same kinds) and order.
        out.sort_by_key(order_key);
        out.dedup_by(|later, earlier| {
            if order_key(later) != order_key(earlier) {
                return false;
            }
            let (a, b) = (&mut earlier.extent, &later.extent);
            if let (Some(p), Some(q)) = (&mut a.partitions, b.partitions) {
                *p = (p.0.min(q.0), p.1.max(q.1));
            }
            a.bytes = (a.bytes.0.min(b.bytes.0), a.bytes.1.max(b.bytes.1));
            a.count += b.count;
            true
        });
        out
    }
}

#[cfg(test)]
mod tests;
