//! Happens-before race detection, uninitialised reads and PSUM accumulation onto unzeroed banks.
//!
//! The checker is off unless a run asks for it ([`super::Machine::enable_race_check`]); when
//! off, the machine pays one branch per bundle and per gather/scatter.
//!
//! # Model (see `docs/races.md`)
//!
//! * **Agents.** The five engines, each DMA queue of each engine's sidecar (`sp:in`), and one
//!   direct-DMA agent per engine for DMA_DIRECT2D (`sp:direct`). Each agent has a vector clock.
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
//!   PSUM zeroing) is reported. DRAM variables are initialised by the kernel's data.
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

/// Index of an agent (engine, DMA queue).
pub type Agent = u16;

/// The wait a flow ends in, as text.
pub(crate) struct SyncRefText;

impl SyncRefText {
    pub(crate) fn of(w: &Wait) -> String {
        match *w {
            Wait::Sem { idx, .. } => format!("semaphore {idx}"),
            Wait::Event { idx, .. } => format!("event {idx}"),
        }
    }
}

/// A vector clock over all agents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VClock(Vec<u32>);

impl VClock {
    pub(crate) fn zero(n: usize) -> VClock {
        VClock(vec![0; n])
    }
    /// The initial clock of agent `a` of `n`: its own component 1.
    pub(crate) fn unit(n: usize, a: Agent) -> VClock {
        let mut c = VClock::zero(n);
        c.raise(a, 1);
        c
    }
    #[cfg(test)]
    pub(crate) fn from_vec(v: Vec<u32>) -> VClock {
        VClock(v)
    }
    #[inline]
    pub(crate) fn get(&self, a: Agent) -> u32 {
        self.0.get(a as usize).copied().unwrap_or(0)
    }
    pub(crate) fn join(&mut self, o: &VClock) {
        for (x, y) in self.0.iter_mut().zip(&o.0) {
            *x = (*x).max(*y);
        }
    }
    /// Raise component `a` to at least `v`.
    pub(crate) fn raise(&mut self, a: Agent, v: u32) {
        if let Some(x) = self.0.get_mut(a as usize) {
            *x = (*x).max(v);
        }
    }
    /// Advance component `a`.
    pub(crate) fn tick(&mut self, a: Agent) {
        if let Some(x) = self.0.get_mut(a as usize) {
            *x = x.saturating_add(1);
        }
    }
}

/// An access recorded by a compute bundle on the on-chip memories, logged by [`OnChipLog`]
/// and attributed to the bundle when it finishes.
#[derive(Clone, Debug)]
pub enum ChipAccess {
    /// An operand resolved under a name (the names later reads and writes are reported with).
    Operand(String, Resolved),
    /// Bytes gathered.
    Read(Resolved),
    /// Bytes scattered.
    Write(Resolved),
    /// Bytes `lo..hi` of partitions `first..first + count` cleared (PSUM START).
    Zero {
        /// Memory.
        space: Space,
        /// First partition.
        first: u32,
        /// Partition count.
        count: u32,
        /// First byte.
        lo: u32,
        /// One past the last byte.
        hi: u32,
    },
    /// A matmul writes its product into the PSUM bytes of the pattern under `flags`.
    Accumulate(Resolved, PsumFlags),
    /// The operation's reads of the pattern (its destination) use the bytes' values: a
    /// read-modify-write, checked for uninitialised bytes like a source.
    ReadModifyWrite(Resolved),
    /// The shape of the operand just named (for the timeline's cost model).
    Shape {
        /// Elements per partition.
        elems: u64,
        /// Bytes per element.
        elem_bytes: u32,
    },
}

/// The access log the on-chip memories keep while a race check runs.
pub type OnChipLog = RefCell<Vec<ChipAccess>>;

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    /// A read.
    Read,
    /// A write.
    Write,
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        })
    }
}

/// Who made an access: the agent, the bundle (for a DMA: the trigger), and the operand.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Origin {
    /// Engine of the bundle.
    pub engine: Engine,
    /// Bundle index in that engine's stream.
    pub index: usize,
    /// Agent that made the access: the engine (`dve`) or a DMA queue (`sp:in`).
    pub agent: String,
    /// Mnemonic of the bundle.
    pub mnemonic: String,
    /// Operand (`src0`, `dst`; for a DMA `QUEUE[BLOCK].desc[I].from|to`).
    pub operand: String,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.agent == self.engine.short() {
            write!(
                f,
                "{} bundle #{} {} operand `{}`",
                self.engine, self.index, self.mnemonic, self.operand
            )
        } else {
            write!(
                f,
                "DMA queue {} `{}` (triggered by {} bundle #{} {})",
                self.agent, self.operand, self.engine, self.index, self.mnemonic
            )
        }
    }
}

/// The memory a finding is in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(tag = "space", content = "var")]
pub enum Memory {
    /// SBUF.
    #[serde(rename = "SBUF")]
    Sbuf,
    /// PSUM.
    #[serde(rename = "PSUM")]
    Psum,
    /// A DRAM variable, by name.
    #[serde(rename = "DRAM")]
    Dram(String),
}

/// The bytes a finding covers.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Extent {
    /// Memory.
    pub memory: Memory,
    /// Partition range `[first, end)` (on-chip memories).
    pub partitions: Option<(u32, u32)>,
    /// Byte range `[lo, hi)` inside each partition (on-chip) or inside the variable (DRAM).
    pub bytes: (u32, u32),
    /// Partition-folded address of the first byte (on-chip).
    pub address: Option<u32>,
    /// Overlapping bytes counted over all occurrences.
    pub count: u64,
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.memory, self.partitions) {
            (Memory::Dram(v), _) => write!(
                f,
                "DRAM `{v}` bytes 0x{:x}..0x{:x}",
                self.bytes.0, self.bytes.1
            )?,
            (m, Some((p0, p1))) => {
                let name = if *m == Memory::Sbuf { "SBUF" } else { "PSUM" };
                write!(
                    f,
                    "{name} partitions {p0}..{p1}, bytes 0x{:x}..0x{:x} of each",
                    self.bytes.0, self.bytes.1
                )?;
                if let Some(a) = self.address {
                    write!(f, " (address 0x{a:08x})")?;
                }
            }
            (_, None) => write!(f, "bytes 0x{:x}..0x{:x}", self.bytes.0, self.bytes.1)?,
        }
        write!(f, ", {} bytes", self.count)
    }
}

/// One access of a race.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RaceSide {
    /// Who.
    pub origin: Origin,
    /// Read or write.
    pub kind: AccessKind,
    /// The first semaphore/event update its agent makes after the access, if any.
    pub next_release: Option<String>,
}

/// What a finding is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FindingKind {
    /// Two unordered accesses to overlapping bytes, at least one a write.
    Race {
        /// One access (the sides are in a fixed order: engine, bundle, agent, operand).
        a: RaceSide,
        /// The other.
        b: RaceSide,
        /// The synchronisation that would order them.
        missing: String,
    },
    /// A read of on-chip bytes nothing has written.
    UninitRead {
        /// The read.
        at: Origin,
    },
    /// A matmul adds into PSUM bytes outside an open accumulation group.
    PsumUnzeroed {
        /// The matmul.
        at: Origin,
        /// The last write of those bytes (a matmul with END, or nothing).
        last: Option<Origin>,
    },
}

/// One finding with the bytes it covers.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// What.
    #[serde(flatten)]
    pub kind: FindingKind,
    /// Where.
    pub extent: Extent,
}

impl Finding {
    /// A short kind name (`race`, `uninit-read`, `psum-unzeroed`).
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            FindingKind::Race { .. } => "race",
            FindingKind::UninitRead { .. } => "uninit-read",
            FindingKind::PsumUnzeroed { .. } => "psum-unzeroed",
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FindingKind::Race { a, b, missing } => write!(
                f,
                "race: {} of {}\n  and {} of {}\n  on {}\n  missing synchronisation: {missing}",
                a.kind, a.origin, b.kind, b.origin, self.extent
            ),
            FindingKind::UninitRead { at } => write!(
                f,
                "uninitialised read: {at} reads bytes nothing has written\n  on {}",
                self.extent
            ),
            FindingKind::PsumUnzeroed { at, last } => {
                write!(
                    f,
                    "PSUM accumulation onto an unzeroed bank: {at} adds into bytes outside an open accumulation group"
                )?;
                match last {
                    Some(o) => write!(f, " (last written by {o}, which closed its group)")?,
                    None => write!(f, " (never written: no START zeroed them)")?,
                }
                write!(f, "\n  on {}", self.extent)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Acc {
    agent: Agent,
    epoch: u32,
    origin: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Cell {
    w: Option<Acc>,
    reads: Vec<Acc>,
    /// PSUM: inside an open accumulation group.
    open: bool,
    /// The last write was a matmul that closed its group.
    closed_by_matmul: bool,
}

/// Byte intervals of one partition or variable: start → (end, state).
#[derive(Clone, Debug, Default)]
struct IMap(BTreeMap<u32, (u32, Cell)>);

impl IMap {
    /// Split the segment containing `at` (if any) so that a segment starts at `at`.
    fn split(&mut self, at: u32) {
        let hit = self
            .0
            .range(..at)
            .next_back()
            .filter(|(_, (e, _))| *e > at)
            .map(|(&s, (e, c))| (s, *e, c.clone()));
        if let Some((s, e, c)) = hit {
            if let Some(seg) = self.0.get_mut(&s) {
                seg.0 = at;
            }
            self.0.insert(at, (e, c));
        }
    }

    fn keys_in(&self, lo: u32, hi: u32) -> Vec<u32> {
        self.0.range(lo..hi).map(|(&k, _)| k).collect()
    }

    /// Merge the segment starting at `s` with equal neighbours.
    fn coalesce(&mut self, s: u32) {
        let Some((e, c)) = self.0.get(&s).cloned() else {
            return;
        };
        let mut start = s;
        let mut end = e;
        if let Some((&ls, (le, lc))) = self.0.range(..s).next_back() {
            if *le == s && *lc == c {
                start = ls;
            }
        }
        if let Some((re, rc)) = self.0.get(&e) {
            if *rc == c {
                end = *re;
                self.0.remove(&e);
            }
        }
        if start != s {
            self.0.remove(&s);
        }
        if let Some(seg) = self.0.get_mut(&start) {
            seg.0 = end;
        }
    }
}

/// A finding at bytes `lo..hi` before aggregation: key, lo, hi, epochs, agents.
type Hit = (Key, u32, u32, (u32, u32), (Agent, Agent));

/// A found problem before aggregation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Key {
    Race {
        a: u32,
        ak: AccessKind,
        b: u32,
        bk: AccessKind,
    },
    Uninit(u32),
    Psum(u32, Option<u32>),
}

#[derive(Clone, Debug)]
struct Agg {
    partitions: Option<(u32, u32)>,
    bytes: (u32, u32),
    count: u64,
    /// Epochs of the first occurrence (race: both sides).
    epochs: (u32, u32),
    agents: (Agent, Agent),
}

#[derive(Clone, Debug)]
struct SemEntry {
    value: u32,
    cum: VClock,
    time: Stamp,
    agent: Agent,
}

#[derive(Clone, Debug)]
struct SemHist {
    base_value: u32,
    base: VClock,
    base_time: Stamp,
    base_agent: Option<Agent>,
    entries: Vec<SemEntry>,
}

#[derive(Clone, Debug)]
struct EvHist {
    state: bool,
    clock: VClock,
    time: Stamp,
    agent: Option<Agent>,
}

/// History entries kept per semaphore before the oldest half is folded into the base.
const SEM_HISTORY: usize = 64;

/// Which memory a shadow access goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mem {
    /// An on-chip partition.
    Chip(Space, u32),
    /// A DRAM variable.
    Dram(u32),
}

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
        }
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

    // ---- synchronisation ----

    /// Records kept for the reports that grow with the run (release descriptions, operand
    /// origins); charged to the memory budget by the machine.
    pub(crate) fn growing_records(&self) -> u64 {
        (self.releases.iter().map(Vec::len).sum::<usize>() + self.origins.len()) as u64
    }

    fn release_desc(&mut self, agent: Agent, desc: impl FnOnce() -> String) {
        let epoch = self.clocks[agent as usize].get(agent);
        let rel = &mut self.releases[agent as usize];
        if rel.last().map(|r| r.0) != Some(epoch) {
            rel.push((epoch, desc()));
        }
    }

    fn tick(&mut self, agent: Agent) {
        self.clocks[agent as usize].tick(agent);
    }

    fn where_(&self) -> String {
        match self.cur_site {
            Some(s) => format!("{} bundle #{}", s.engine, s.index),
            None => "start".to_string(),
        }
    }

    /// Apply update `u` by `agent` to `sync` and release its clock into the semaphore or event
    /// at `time` (a bare time: the end of the slice that makes the update).
    pub fn update(
        &mut self,
        agent: Agent,
        u: &Update,
        sync: &mut SyncState,
        regs: &[u32],
        time: impl Into<Stamp>,
        at: &str,
    ) {
        let time = time.into();
        let i = u.idx as usize;
        match u.op {
            UpdateOp::EventSet | UpdateOp::EventClear => {
                u.apply(sync, regs);
                self.event_release(agent, u.idx, sync.event(u.idx), time, at);
            }
            _ => {
                let before = sync.sems[i];
                u.apply(sync, regs);
                let after = sync.sems[i];
                let reset = matches!(u.op, UpdateOp::SemWrite(_));
                self.sem_release(agent, u.idx, before, after, reset, time, at);
            }
        }
    }

    /// Record that `agent` changed semaphore `idx` from `before` to `after` (a write when
    /// `reset`) at `time` (a bare time: the end of its slice).
    #[allow(clippy::too_many_arguments)]
    pub fn sem_release(
        &mut self,
        agent: Agent,
        idx: u8,
        before: u32,
        after: u32,
        reset: bool,
        time: impl Into<Stamp>,
        at: &str,
    ) {
        let time = time.into();
        let i = idx as usize;
        let n = self.labels.len();
        let clock = self.clocks[agent as usize].clone();
        let h = &mut self.sems[i];
        let last = h.entries.last().map_or(h.base_value, |e| e.value);
        self.skeleton.sem(
            agent,
            idx,
            before,
            after,
            reset,
            last != before,
            clock.clone(),
        );
        if reset || last != before {
            // A write, or a change the history did not see: restart.
            h.base_value = if reset { after } else { before };
            h.base = if reset {
                clock.clone()
            } else {
                VClock::zero(n)
            };
            h.base_time = time;
            h.entries.clear();
        }
        if !reset {
            let mut cum = h
                .entries
                .last()
                .map_or_else(|| h.base.clone(), |e| e.cum.clone());
            cum.join(&clock);
            h.entries.push(SemEntry {
                value: after,
                cum,
                time,
                agent,
            });
            if h.entries.len() > SEM_HISTORY {
                let fold = SEM_HISTORY / 2;
                let e = &h.entries[fold - 1];
                h.base_value = e.value;
                h.base = e.cum.clone();
                h.base_time = e.time;
                h.base_agent = Some(e.agent);
                h.entries.drain(..fold);
            }
        }
        let delta = after.wrapping_sub(before) as i32;
        self.release_desc(agent, || {
            if reset {
                format!("semaphore {idx} = {after} ({at})")
            } else if delta >= 0 {
                format!("semaphore {idx} += {delta} ({at})")
            } else {
                format!("semaphore {idx} -= {} ({at})", -(delta as i64))
            }
        });
        self.tick(agent);
    }

    /// Record that `agent` set event `idx` to `state` at `time` (a bare time: the end of its
    /// slice).
    pub fn event_release(
        &mut self,
        agent: Agent,
        idx: u8,
        state: bool,
        time: impl Into<Stamp>,
        at: &str,
    ) {
        let time = time.into();
        let clock = self.clocks[agent as usize].clone();
        self.skeleton.event(agent, idx, state, clock.clone());
        let h = &mut self.events[idx as usize];
        if h.state == state {
            h.clock.join(&clock);
            if time.t >= h.time.t {
                h.time = time;
                h.agent = Some(agent);
            }
        } else {
            h.state = state;
            h.clock = clock;
            h.time = time;
            h.agent = Some(agent);
        }
        self.release_desc(agent, || {
            format!(
                "event {idx} {} ({at})",
                if state { "set" } else { "cleared" }
            )
        });
        self.tick(agent);
    }

    /// The clock a satisfied wait acquires, and the time and agent of the update that made it
    /// true.
    fn wait_source(
        &self,
        w: &Wait,
        sync: &SyncState,
        regs: &[u32],
    ) -> (VClock, Stamp, Option<Agent>) {
        let none = || (VClock::zero(self.labels.len()), Stamp::default(), None);
        match *w {
            Wait::Sem { idx, .. } => {
                let h = &self.sems[idx as usize];
                let cur = sync.sems[idx as usize];
                let last = h.entries.last().map_or(h.base_value, |e| e.value);
                if last != cur {
                    return none();
                }
                let holds = |v: u32| {
                    let mut s = SyncState::default();
                    s.sems[idx as usize] = v;
                    w.holds(&s, regs)
                };
                // The first entry of the final run of entries whose value satisfies the wait.
                let mut k = h.entries.len();
                while k > 0 && holds(h.entries[k - 1].value) {
                    k -= 1;
                }
                if k == h.entries.len() || (k == 0 && holds(h.base_value)) {
                    // Holds since the base: nothing after it contributed.
                    return (h.base.clone(), h.base_time, h.base_agent);
                }
                let e = &h.entries[k];
                (e.cum.clone(), e.time, Some(e.agent))
            }
            Wait::Event { idx, until, .. } => {
                let h = &self.events[idx as usize];
                if h.state == until && sync.event(idx) == until {
                    (h.clock.clone(), h.time, h.agent)
                } else {
                    none()
                }
            }
        }
    }

    /// `agent` passes wait `w` (it holds): acquire the clock that satisfied it; returns the
    /// time the condition became true.
    pub fn acquire(&mut self, agent: Agent, w: &Wait, sync: &SyncState, regs: &[u32]) -> f64 {
        let (c, t, from) = self.wait_source(w, sync, regs);
        let need = match *w {
            Wait::Sem { idx, cmp, rhs } => {
                let h = &self.sems[idx as usize];
                let last = h.entries.last().map_or(h.base_value, |e| e.value);
                (last == sync.sems[idx as usize])
                    .then(|| {
                        self.skeleton
                            .sem_need(idx, cmp, super::sync::operand(rhs, regs))
                    })
                    .flatten()
            }
            Wait::Event { idx, until, .. } => {
                let h = &self.events[idx as usize];
                (h.state == until && sync.event(idx) == until)
                    .then(|| self.skeleton.event_need(idx, until))
                    .flatten()
            }
        };
        let epoch = self.clocks[agent as usize].get(agent);
        let id = self.skeleton.acquire(agent, epoch, need, c.clone());
        let c = match self.forced.as_ref().and_then(|f| f.get(id)) {
            Some(f) => f.clone(),
            None => c,
        };
        self.clocks[agent as usize].join(&c);
        if let (Some(tl), Some(from)) = (self.timeline.as_mut(), from) {
            if from != agent {
                tl.pending_flows.push((from, t, SyncRefText::of(w)));
            }
        }
        t.t
    }

    /// Issue-time synchronisation of a bundle by `agent`: acquire the waits, apply their side
    /// effects (event flips, released by the waiter), then the `_READ` updates. Returns the
    /// time the last wait became true.
    pub fn issue(
        &mut self,
        agent: Agent,
        ev: &super::sync::Events,
        sync: &mut SyncState,
        regs: &[u32],
        time: f64,
    ) -> f64 {
        let mut ready = 0f64;
        for w in ev.waits.iter().flatten() {
            ready = ready.max(self.acquire(agent, w, sync, regs));
        }
        let at = self.where_();
        for w in ev.waits.iter().flatten() {
            if let Wait::Event {
                idx,
                until,
                flip: true,
            } = *w
            {
                w.on_satisfied(sync);
                self.event_release(agent, idx, !until, Stamp::start(time.max(ready)), &at);
            }
        }
        for u in ev.updates.iter().flatten().filter(|u| u.when == When::Read) {
            self.update(agent, u, sync, regs, Stamp::start(time.max(ready)), &at);
        }
        ready
    }

    /// Completion-time synchronisation: the `_COMPLETE` updates, released at `time`.
    pub fn complete(
        &mut self,
        agent: Agent,
        ev: &super::sync::Events,
        sync: &mut SyncState,
        regs: &[u32],
        time: f64,
    ) {
        let at = self.where_();
        for u in ev
            .updates
            .iter()
            .flatten()
            .filter(|u| u.when == When::Complete)
        {
            self.update(agent, u, sync, regs, time, &at);
        }
    }

    // ---- memory ----

    /// Bundle `index` of engine `e` finished: place it on the timeline (when one is built).
    pub fn finish_bundle(&mut self, e: Engine, index: usize, opcode: u8, mnemonic: &str) {
        let Some(t) = self.timeline.as_mut() else {
            return;
        };
        let cycles = super::timeline::bundle_cycles(e, opcode, &self.shapes);
        let args: Vec<String> = self
            .operands
            .iter()
            .zip(&self.shapes)
            .map(|((n, r), (elems, eb))| {
                format!(
                    "{n}: {} partitions {}..{} +0x{:x}, {elems} × {eb} B",
                    r.space,
                    r.first_partition,
                    r.first_partition + r.partitions,
                    r.base
                )
            })
            .collect();
        t.finish(e, mnemonic, args.join("; "), cycles);
        if let Some(s) = t.slices.last_mut() {
            s.bundle = Some(index);
        }
    }

    /// Attribute the logged on-chip accesses to the current bundle.
    pub fn flush(&mut self, log: &mut Vec<ChipAccess>) {
        let agent = self.cur_agent;
        if !self.track_memory {
            for a in log.drain(..) {
                match a {
                    ChipAccess::Shape { elems, elem_bytes } => {
                        self.shapes.push((elems, elem_bytes))
                    }
                    ChipAccess::Operand(name, r) => self.operands.push((name, r)),
                    _ => {}
                }
            }
            return;
        }
        for a in log.drain(..) {
            match a {
                ChipAccess::Shape { elems, elem_bytes } => self.shapes.push((elems, elem_bytes)),
                ChipAccess::Operand(name, r) => self.operands.push((name, r)),
                ChipAccess::Read(r) => {
                    let name = self.operand_name(&r);
                    // A read of a destination is, unless the operation declared it a
                    // read-modify-write (PSUM accumulation, `ReadModifyWrite`), the model's
                    // gather of the bytes an operation leaves unchanged (MX scale slots,
                    // predicated lanes), not a use of their value.
                    let skip_uninit = name.starts_with("dst") && !self.rmw.contains(&r);
                    let o = self.origin(agent, &name);
                    let slots = mx_scale(&name);
                    self.chip_access(agent, o, &r, AccessKind::Read, !skip_uninit, None, slots);
                }
                ChipAccess::Write(r) => {
                    let name = self.operand_name(&r);
                    let o = self.origin(agent, &name);
                    let flags = self
                        .accumulate
                        .as_ref()
                        .filter(|(x, _)| *x == r)
                        .map(|(_, f)| *f);
                    let slots = mx_scale(&name);
                    self.chip_access(agent, o, &r, AccessKind::Write, false, flags, slots);
                }
                ChipAccess::Zero {
                    space,
                    first,
                    count,
                    lo,
                    hi,
                } => {
                    let o = self.origin(agent, "dst (zero region)");
                    let me = self.acc(agent, o);
                    for p in first..first + count {
                        self.range(
                            Mem::Chip(space, p),
                            lo,
                            hi,
                            AccessKind::Write,
                            me,
                            false,
                            None,
                        );
                    }
                }
                ChipAccess::Accumulate(r, flags) => {
                    if !flags.start {
                        let name = self.operand_name(&r);
                        let o = self.origin(agent, &name);
                        self.psum_check(o, &r, flags);
                    }
                    self.rmw.push(r.clone());
                    self.accumulate = Some((r, flags));
                }
                ChipAccess::ReadModifyWrite(r) => self.rmw.push(r),
            }
        }
    }

    fn operand_name(&self, r: &Resolved) -> String {
        self.operands
            .iter()
            .rev()
            .find(|(_, x)| x == r)
            .map_or_else(|| "operand".to_string(), |(n, _)| n.clone())
    }

    fn acc(&self, agent: Agent, origin: u32) -> Acc {
        Acc {
            agent,
            epoch: self.clocks[agent as usize].get(agent),
            origin,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn chip_access(
        &mut self,
        agent: Agent,
        origin: u32,
        r: &Resolved,
        kind: AccessKind,
        check_uninit: bool,
        matmul: Option<PsumFlags>,
        mx_slots: bool,
    ) {
        let me = self.acc(agent, origin);
        let runs = merged_runs(r);
        for p in r.first_partition..r.first_partition + r.partitions {
            if mx_slots && (p - r.first_partition) % 32 >= 4 {
                continue;
            }
            for &(lo, hi) in &runs {
                self.range(
                    Mem::Chip(r.space, p),
                    lo,
                    hi,
                    kind,
                    me,
                    check_uninit,
                    matmul,
                );
            }
        }
    }

    /// A DMA access by `agent` (operand `operand`) of bytes `lo..hi` of `mem`.
    pub fn dma_access(
        &mut self,
        agent: Agent,
        operand: &str,
        mem: Mem,
        lo: u32,
        hi: u32,
        kind: AccessKind,
    ) {
        if !self.track_memory {
            return;
        }
        // A transfer reports one run at a time: look its origin up once.
        let o = match &self.last_dma_origin {
            Some((a, name, id)) if *a == agent && name == operand => *id,
            _ => {
                let id = self.origin(agent, operand);
                self.last_dma_origin = Some((agent, operand.to_string(), id));
                id
            }
        };
        let me = self.acc(agent, o);
        let check = matches!(mem, Mem::Chip(..));
        self.range(
            mem,
            lo,
            hi,
            kind,
            me,
            check && kind == AccessKind::Read,
            None,
        );
    }

    fn map(&mut self, mem: Mem) -> &mut IMap {
        match mem {
            Mem::Chip(Space::Sbuf, p) => &mut self.sbuf[p as usize],
            Mem::Chip(Space::Psum, p) => &mut self.psum[p as usize],
            Mem::Dram(v) => self.dram.entry(v).or_default(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn range(
        &mut self,
        mem: Mem,
        lo: u32,
        hi: u32,
        kind: AccessKind,
        me: Acc,
        check_uninit: bool,
        matmul: Option<PsumFlags>,
    ) {
        if lo >= hi {
            return;
        }
        let clock = std::mem::take(&mut self.clocks[me.agent as usize]);
        let mut found: Vec<Hit> = Vec::new();
        let covered = |a: &Acc| a.agent == me.agent || a.epoch <= clock.get(a.agent);
        let race = |prev: &Acc, pk: AccessKind| {
            (
                Key::Race {
                    a: prev.origin,
                    ak: pk,
                    b: me.origin,
                    bk: kind,
                },
                (prev.epoch, me.epoch),
                (prev.agent, me.agent),
            )
        };
        let map = self.map(mem);
        map.split(lo);
        map.split(hi);
        let keys = map.keys_in(lo, hi);
        let mut gaps: Vec<(u32, u32)> = Vec::new();
        let mut cursor = lo;
        for &k in &keys {
            let Some((e, cell)) = map.0.get_mut(&k) else {
                continue;
            };
            let e = *e;
            if k > cursor {
                gaps.push((cursor, k));
            }
            cursor = e;
            if let Some(w) = &cell.w {
                if !covered(w) {
                    let (key, ep, ag) = race(w, AccessKind::Write);
                    found.push((key, k, e, ep, ag));
                }
            } else if kind == AccessKind::Read && check_uninit {
                found.push((Key::Uninit(me.origin), k, e, (me.epoch, 0), (me.agent, 0)));
            }
            match kind {
                AccessKind::Read => match cell.reads.iter_mut().find(|r| r.agent == me.agent) {
                    Some(r) => *r = me,
                    None => cell.reads.push(me),
                },
                AccessKind::Write => {
                    for r in &cell.reads {
                        if !covered(r) {
                            let (key, ep, ag) = race(r, AccessKind::Read);
                            found.push((key, k, e, ep, ag));
                        }
                    }
                }
            }
        }
        if cursor < hi {
            gaps.push((cursor, hi));
        }
        match kind {
            AccessKind::Read => {
                for &(g0, g1) in &gaps {
                    map.0.insert(
                        g0,
                        (
                            g1,
                            Cell {
                                reads: vec![me],
                                ..Cell::default()
                            },
                        ),
                    );
                    if check_uninit {
                        found.push((Key::Uninit(me.origin), g0, g1, (me.epoch, 0), (me.agent, 0)));
                    }
                }
            }
            AccessKind::Write => {
                for k in keys {
                    map.0.remove(&k);
                }
                let closed = matmul.is_some_and(|f| f.stop);
                map.0.insert(
                    lo,
                    (
                        hi,
                        Cell {
                            w: Some(me),
                            reads: Vec::new(),
                            open: !closed,
                            closed_by_matmul: closed,
                        },
                    ),
                );
                map.coalesce(lo);
            }
        }
        self.clocks[me.agent as usize] = clock;
        for (key, l, h, ep, ag) in found {
            self.note(key, mem, l, h, ep, ag);
        }
    }

    fn psum_check(&mut self, origin: u32, r: &Resolved, flags: PsumFlags) {
        let mut found: Vec<(Key, u32, u32, u32)> = Vec::new();
        let runs = merged_runs(r);
        for p in r.first_partition..r.first_partition + r.partitions {
            let mem = Mem::Chip(r.space, p);
            for &(lo, hi) in &runs {
                let map = self.map(mem);
                let mut cursor = lo;
                let start = map.0.range(..lo).next_back().map(|(&k, _)| k).unwrap_or(lo);
                for (&k, (e, cell)) in map.0.range(start..hi) {
                    if *e <= lo {
                        continue;
                    }
                    let (s, e) = (k.max(lo), (*e).min(hi));
                    if s > cursor {
                        found.push((Key::Psum(origin, None), p, cursor, s));
                    }
                    cursor = e;
                    let ok = cell.w.is_some() && (flags.accumulate || cell.open);
                    if !ok {
                        let last = cell.w.filter(|_| cell.closed_by_matmul).map(|w| w.origin);
                        found.push((Key::Psum(origin, last), p, s, e));
                    }
                }
                if cursor < hi {
                    found.push((Key::Psum(origin, None), p, cursor, hi));
                }
            }
        }
        let agent = self.cur_agent;
        let epoch = self.clocks[agent as usize].get(agent);
        for (key, p, l, h) in found {
            self.note(key, Mem::Chip(r.space, p), l, h, (epoch, 0), (agent, 0));
        }
    }

    fn note(
        &mut self,
        key: Key,
        mem: Mem,
        lo: u32,
        hi: u32,
        epochs: (u32, u32),
        agents: (Agent, Agent),
    ) {
        let (mk, part) = match mem {
            Mem::Chip(Space::Sbuf, p) => (MemKey::Sbuf, Some(p)),
            Mem::Chip(Space::Psum, p) => (MemKey::Psum, Some(p)),
            Mem::Dram(v) => (MemKey::Dram(v), None),
        };
        let agg = self.findings.entry((key, mk)).or_insert(Agg {
            partitions: part.map(|p| (p, p + 1)),
            bytes: (lo, hi),
            count: 0,
            epochs,
            agents,
        });
        if let (Some((a, b)), Some(p)) = (&mut agg.partitions, part) {
            *a = (*a).min(p);
            *b = (*b).max(p + 1);
        }
        agg.bytes = (agg.bytes.0.min(lo), agg.bytes.1.max(hi));
        agg.count += (hi - lo) as u64;
    }

    fn next_release(&self, agent: Agent, epoch: u32) -> Option<String> {
        let rel = &self.releases[agent as usize];
        let i = rel.partition_point(|r| r.0 < epoch);
        rel.get(i).map(|r| r.1.clone())
    }

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
                bytes: agg.bytes,
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
            out.push(Finding { kind, extent });
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

/// The byte ranges `[lo, hi)` one partition of `r` covers: its runs sorted, with contiguous
/// and overlapping runs merged (a reversed, transposed or broadcast pattern visits many runs
/// that cover few ranges). The layout is the same in every partition of the pattern.
fn merged_runs(r: &Resolved) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    r.for_each_run_in_partition(|o, l| {
        let (lo, hi) = (o as u32, (o + l) as u32);
        match runs.last_mut() {
            Some(last) if last.1 == lo => last.1 = hi,
            _ => runs.push((lo, hi)),
        }
    });
    if runs.windows(2).any(|w| w[0].0 > w[1].0) {
        runs.sort_unstable();
    }
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(runs.len());
    for (lo, hi) in runs {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Whether operand `name` is an MX scale buffer (`src.scale`, `dst.scale`). Its pattern is the
/// rectangle from the scale partition to the last scale slot, of which only the slot partitions
/// hold scales: scale row `i` at partition `+ (i & 3) + 32·(i >> 2)` (docs/machine.md,
/// MXMEM_PATTERN1D). Only those partitions are recorded.
fn mx_scale(name: &str) -> bool {
    name.ends_with(".scale")
}

fn order_key(f: &Finding) -> (u8, Vec<(Origin, Option<AccessKind>)>, Memory) {
    let (rank, sides) = match &f.kind {
        FindingKind::Race { a, b, .. } => (
            0,
            vec![
                (a.origin.clone(), Some(a.kind)),
                (b.origin.clone(), Some(b.kind)),
            ],
        ),
        FindingKind::UninitRead { at } => (1, vec![(at.clone(), None)]),
        FindingKind::PsumUnzeroed { at, last } => {
            let mut v = vec![(at.clone(), None)];
            v.extend(last.iter().map(|o| (o.clone(), None)));
            (2, v)
        }
    };
    (rank, sides, f.extent.memory.clone())
}

fn side_text(s: &RaceSide) -> String {
    if s.origin.agent == s.origin.engine.short() {
        format!("{} bundle #{}", s.origin.engine, s.origin.index)
    } else {
        format!("DMA queue {} ({})", s.origin.agent, s.origin.operand)
    }
}

/// Who would have to wait for `s`: the engine, or the trigger of a DMA.
fn waiter_text(s: &RaceSide) -> String {
    if s.origin.agent == s.origin.engine.short() {
        format!("{} bundle #{}", s.origin.engine, s.origin.index)
    } else {
        format!(
            "the trigger of DMA queue {} ({} bundle #{})",
            s.origin.agent, s.origin.engine, s.origin.index
        )
    }
}

fn missing_sync(a: &RaceSide, b: &RaceSide) -> String {
    let dir = |x: &RaceSide, y: &RaceSide| match &x.next_release {
        Some(r) => format!(
            "after its {} {} next updates {r}, which {} does not wait for",
            x.kind,
            side_text(x),
            waiter_text(y)
        ),
        None => format!(
            "after its {} {} makes no semaphore or event update that {} could wait for",
            x.kind,
            side_text(x),
            waiter_text(y)
        ),
    };
    format!(
        "no semaphore or event wait orders the two accesses; {}; {}",
        dir(a, b),
        dir(b, a)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::pattern::{Dim, TensorPattern};
    use crate::machine::sync::{Cmp, Operand};
    use tpbsim_isa::Gen;

    fn checker() -> (Checker, Geometry) {
        let g = Geometry::of(Gen::V3);
        let labels = ["pe", "act", "pool", "dve", "sp", "sp:in"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        (Checker::new(g, labels, BTreeMap::new()), g)
    }

    fn rows(g: &Geometry, offset: u32, bytes: u32) -> Resolved {
        Resolved::new(
            g,
            &TensorPattern::dense(g.sbuf_address(0, offset), 4, 4, bytes / 4),
        )
        .unwrap()
    }

    fn site(e: Engine, index: usize) -> Site {
        Site {
            engine: e,
            index,
            opcode: 0x41,
        }
    }

    /// Run `accesses` as bundle `index` of engine `e`.
    fn bundle(c: &mut Checker, e: Engine, index: usize, accesses: Vec<ChipAccess>) {
        c.begin(e as Agent, site(e, index), "OP");
        let mut log = accesses;
        c.flush(&mut log);
    }

    fn sem_ge(idx: u8, v: u32) -> Wait {
        Wait::Sem {
            idx,
            cmp: Cmp::Ge,
            rhs: Operand::Imm(v),
        }
    }

    #[test]
    fn unordered_write_then_read_is_a_race_ordered_is_not() {
        let (mut c, g) = checker();
        let r = rows(&g, 0x100, 64);
        bundle(
            &mut c,
            Engine::Act,
            0,
            vec![
                ChipAccess::Operand("dst".into(), r.clone()),
                ChipAccess::Write(r.clone()),
            ],
        );
        bundle(
            &mut c,
            Engine::Dve,
            0,
            vec![
                ChipAccess::Operand("src0".into(), r.clone()),
                ChipAccess::Read(r.clone()),
            ],
        );
        let f = c.findings();
        assert_eq!(f.len(), 1, "{f:?}");
        let FindingKind::Race { a, b, missing } = &f[0].kind else {
            panic!("{f:?}")
        };
        assert_eq!(
            (a.origin.agent.as_str(), a.kind, a.origin.operand.as_str()),
            ("act", AccessKind::Write, "dst")
        );
        assert_eq!(
            (b.origin.agent.as_str(), b.kind, b.origin.operand.as_str()),
            ("dve", AccessKind::Read, "src0")
        );
        assert_eq!(f[0].extent.partitions, Some((0, 4)));
        assert_eq!(f[0].extent.bytes, (0x100, 0x140));
        assert_eq!(f[0].extent.count, 256);
        assert!(
            missing.contains("act bundle #0 makes no semaphore or event update"),
            "{missing}"
        );

        // The same with ACT releasing semaphore 3 at completion and DVE waiting for it.
        let (mut c, g) = checker();
        let r = rows(&g, 0x100, 64);
        let mut sync = SyncState::default();
        bundle(&mut c, Engine::Act, 0, vec![ChipAccess::Write(r.clone())]);
        let u = Update {
            idx: 3,
            op: UpdateOp::SemInc,
            when: When::Complete,
        };
        c.update(Engine::Act as Agent, &u, &mut sync, &[], 0.0, "act #0");
        c.acquire(Engine::Dve as Agent, &sem_ge(3, 1), &sync, &[]);
        bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Read(r.clone())]);
        assert!(c.findings().is_empty(), "{:?}", c.findings());
    }

    #[test]
    fn a_release_before_the_access_does_not_cover_it() {
        // A `_READ` update releases before the bundle's accesses: a waiter is not ordered
        // after them.
        let (mut c, g) = checker();
        let r = rows(&g, 0, 16);
        let mut sync = SyncState::default();
        let u = Update {
            idx: 1,
            op: UpdateOp::SemInc,
            when: When::Read,
        };
        c.update(Engine::Act as Agent, &u, &mut sync, &[], 0.0, "act #0");
        bundle(&mut c, Engine::Act, 0, vec![ChipAccess::Write(r.clone())]);
        c.acquire(Engine::Dve as Agent, &sem_ge(1, 1), &sync, &[]);
        bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Read(r)]);
        assert_eq!(c.findings().len(), 1);
    }

    #[test]
    fn a_counter_wait_acquires_only_the_updates_it_needs() {
        // The DMA queue writes two regions, incrementing semaphore 1 after each; a wait for
        // >= 1 is ordered after the first only.
        let (mut c, g) = checker();
        let q: Agent = 5;
        let mut sync = SyncState::default();
        let inc = Update {
            idx: 1,
            op: UpdateOp::SemInc,
            when: When::Complete,
        };
        c.begin(q, site(Engine::Sp, 0), "DMA");
        c.dma_access(
            q,
            "in[0].desc[0].to",
            Mem::Chip(Space::Sbuf, 0),
            0,
            64,
            AccessKind::Write,
        );
        c.update(q, &inc, &mut sync, &[], 0.0, "in[0].desc[0]");
        c.dma_access(
            q,
            "in[0].desc[1].to",
            Mem::Chip(Space::Sbuf, 0),
            64,
            128,
            AccessKind::Write,
        );
        c.update(q, &inc, &mut sync, &[], 0.0, "in[0].desc[1]");
        let one = Resolved::new(&g, &TensorPattern::dense(g.sbuf_address(0, 0), 1, 4, 32)).unwrap();
        c.acquire(Engine::Dve as Agent, &sem_ge(1, 1), &sync, &[]);
        bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Read(one.clone())]);
        let f = c.findings();
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].extent.bytes, (64, 128));
        let FindingKind::Race { b, .. } = &f[0].kind else {
            panic!()
        };
        assert_eq!(b.origin.operand, "in[0].desc[1].to");
        assert_eq!(
            b.next_release.as_deref(),
            Some("semaphore 1 += 1 (in[0].desc[1])")
        );
        // Waiting for >= 2 acquires both.
        c.acquire(Engine::Pool as Agent, &sem_ge(1, 2), &sync, &[]);
        bundle(&mut c, Engine::Pool, 0, vec![ChipAccess::Read(one)]);
        assert_eq!(c.findings().len(), 1, "{:#?}", c.findings());
    }

    #[test]
    fn uninitialised_reads_and_psum_groups() {
        let (mut c, g) = checker();
        let r = rows(&g, 0x40, 32);
        bundle(
            &mut c,
            Engine::Dve,
            0,
            vec![
                ChipAccess::Operand("src".into(), r.clone()),
                ChipAccess::Read(r),
            ],
        );
        let f = c.findings();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind_name(), "uninit-read");
        assert_eq!(f[0].extent.bytes, (0x40, 0x60));

        // PSUM: START zeroes and writes, END closes, a MID after it accumulates onto a closed
        // group.
        let (mut c, g) = checker();
        let p = Resolved::new(&g, &TensorPattern::dense(g.psum_address(0, 0), 2, 4, 8)).unwrap();
        let flags = |b| PsumFlags::from_wire(b).unwrap();
        let mm = |f: PsumFlags, zero: bool| {
            let mut v = vec![
                ChipAccess::Operand("dst".into(), p.clone()),
                ChipAccess::Accumulate(p.clone(), f),
            ];
            if zero {
                v.push(ChipAccess::Zero {
                    space: Space::Psum,
                    first: 0,
                    count: 2,
                    lo: 0,
                    hi: 2048,
                });
            }
            v.push(ChipAccess::Read(p.clone()));
            v.push(ChipAccess::Write(p.clone()));
            v
        };
        bundle(&mut c, Engine::Pe, 0, mm(flags(1), true));
        bundle(&mut c, Engine::Pe, 1, mm(flags(0), false));
        bundle(&mut c, Engine::Pe, 2, mm(flags(2), false));
        assert!(c.findings().is_empty(), "{:?}", c.findings());
        bundle(&mut c, Engine::Pe, 3, mm(flags(0), false));
        let f = c.findings();
        assert_eq!(f.len(), 1, "{f:?}");
        let FindingKind::PsumUnzeroed { at, last } = &f[0].kind else {
            panic!()
        };
        assert_eq!(at.index, 3);
        assert_eq!(last.as_ref().map(|o| o.index), Some(2));
        // BEGIN_ACCUM only needs written bytes; never-written bytes are reported.
        let (mut c, g) = checker();
        let p = Resolved::new(&g, &TensorPattern::dense(g.psum_address(0, 0), 1, 4, 4)).unwrap();
        c.begin(0, site(Engine::Pe, 0), "MATMUL");
        c.flush(&mut vec![
            ChipAccess::Accumulate(p.clone(), flags(4)),
            ChipAccess::Read(p.clone()),
            ChipAccess::Write(p),
        ]);
        let f = c.findings();
        assert_eq!(f.len(), 1);
        assert!(matches!(
            &f[0].kind,
            FindingKind::PsumUnzeroed { last: None, .. }
        ));
    }

    #[test]
    fn a_declared_read_modify_write_of_the_destination_is_checked_for_uninitialised_bytes() {
        let (mut c, g) = checker();
        let r = rows(&g, 0x200, 64);
        let half = rows(&g, 0x200, 32);
        // DVE wrote the first half earlier.
        bundle(&mut c, Engine::Dve, 0, vec![ChipAccess::Write(half)]);
        // A gather of the destination that the operation does not use (predicated lanes):
        // not a use of the bytes.
        let preserve = |c: &mut Checker, i| {
            bundle(
                c,
                Engine::Dve,
                i,
                vec![
                    ChipAccess::Operand("dst".into(), r.clone()),
                    ChipAccess::Read(r.clone()),
                    ChipAccess::Write(r.clone()),
                ],
            )
        };
        preserve(&mut c, 1);
        assert!(c.findings().is_empty(), "{:?}", c.findings());
        // The same bytes read by an operation that accumulates into its destination.
        let (mut c, g) = checker();
        let r = rows(&g, 0x200, 64);
        bundle(
            &mut c,
            Engine::Dve,
            0,
            vec![ChipAccess::Write(rows(&g, 0x200, 32))],
        );
        bundle(
            &mut c,
            Engine::Dve,
            1,
            vec![
                ChipAccess::Operand("dst".into(), r.clone()),
                ChipAccess::ReadModifyWrite(r.clone()),
                ChipAccess::Read(r.clone()),
                ChipAccess::Write(r),
            ],
        );
        let f = c.findings();
        assert_eq!(f.len(), 1, "{f:?}");
        let FindingKind::UninitRead { at } = &f[0].kind else {
            panic!("{f:?}")
        };
        assert_eq!((at.index, at.operand.as_str()), (1, "dst"));
        assert_eq!(f[0].extent.bytes, (0x220, 0x240));
        assert_eq!(f[0].extent.count, 4 * 32);
    }

    #[test]
    fn psum_accumulation_onto_unwritten_bytes_is_one_finding() {
        // The matmul's read of its PSUM destination is a read-modify-write: its uninitialised
        // bytes are reported once, as the PSUM finding.
        let (mut c, g) = checker();
        let p = Resolved::new(&g, &TensorPattern::dense(g.psum_address(0, 0), 2, 4, 8)).unwrap();
        bundle(
            &mut c,
            Engine::Pe,
            0,
            vec![
                ChipAccess::Operand("dst".into(), p.clone()),
                ChipAccess::Accumulate(p.clone(), PsumFlags::from_wire(0).unwrap()),
                ChipAccess::Read(p.clone()),
                ChipAccess::Write(p),
            ],
        );
        let f = c.findings();
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind_name(), "psum-unzeroed");
    }

    #[test]
    fn operand_runs_are_merged_before_the_shadow_update() {
        let g = Geometry::of(Gen::V3);
        let at = |dims: &[Dim]| {
            Resolved::new(
                &g,
                &TensorPattern::new(g.sbuf_address(0, 0x100), 2, 4, dims),
            )
            .unwrap()
        };
        // A 4×4 transpose visits 16 four-byte runs that cover one range.
        let t = at(&[Dim::new(4, 4), Dim::new(1, 4)]);
        let mut n = 0;
        t.for_each_run_in_partition(|_, _| n += 1);
        assert_eq!(n, 16);
        assert_eq!(merged_runs(&t), vec![(0x100, 0x140)]);
        // A broadcast repeats one run; a strided pattern keeps its gaps.
        assert_eq!(merged_runs(&at(&[Dim::new(0, 8)])), vec![(0x100, 0x104)]);
        assert_eq!(
            merged_runs(&at(&[Dim::new(2, 3)])),
            vec![(0x100, 0x104), (0x108, 0x10C), (0x110, 0x114)]
        );
        // One shadow segment per partition after the transposed write, and a later read of a
        // part of it by another engine is one race over exactly the bytes read.
        let (mut c, _) = checker();
        bundle(
            &mut c,
            Engine::Act,
            0,
            vec![
                ChipAccess::Operand("dst".into(), t.clone()),
                ChipAccess::Write(t),
            ],
        );
        assert_eq!((c.sbuf[0].0.len(), c.sbuf[1].0.len()), (1, 1));
        let part = at(&[Dim::new(1, 4)]);
        bundle(
            &mut c,
            Engine::Dve,
            0,
            vec![
                ChipAccess::Operand("src".into(), part.clone()),
                ChipAccess::Read(part),
            ],
        );
        let f = c.findings();
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].extent.bytes, (0x100, 0x110));
        assert_eq!(f[0].extent.count, 2 * 16);
    }

    #[test]
    fn interval_map_splits_and_coalesces() {
        let mut m = IMap::default();
        let cell = |o| Cell {
            w: Some(Acc {
                agent: 0,
                epoch: 1,
                origin: o,
            }),
            ..Cell::default()
        };
        m.0.insert(0, (100, cell(1)));
        m.split(40);
        m.split(60);
        assert_eq!(m.keys_in(0, 100), vec![0, 40, 60]);
        assert_eq!(m.0[&40].0, 60);
        m.coalesce(40);
        assert_eq!(m.keys_in(0, 100), vec![0]);
        assert_eq!(m.0[&0].0, 100);
        m.0.get_mut(&0).unwrap().0 = 40;
        m.0.insert(40, (100, cell(2)));
        m.coalesce(40);
        assert_eq!(m.keys_in(0, 100), vec![0, 40]);
    }
}
