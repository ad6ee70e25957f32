//! The machine: one NeuronCore's state driving a [`Kernel`] through the scheduler.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tpbsim_isa::check::BundleCheck;
use tpbsim_isa::{decode, Bundle, Engine, Gen, Inst, RawInst};

use super::budget::{Budget, Exceeded};
use super::collective::Received;
use super::collective::{Meeting, Member};
use super::control::NUM_REGS;
use super::dma::{self, DmaDesc};
use super::fault::{Fault, Site};
use super::kernel::Kernel;
use super::memory::{Dram, OnChip};
use super::ops::EngineState;
use super::race::{Agent, Checker, Outstanding};
use super::sched::{self, Flow, Order, SchedStats, Streams};
use super::sync::{Events, SyncState};
use super::waitfor::{PendingUpdate, SyncRef};

mod charge;
mod races;
mod setup;

/// Default step budget of a run.
pub const DEFAULT_MAX_STEPS: u64 = 100_000_000;

/// Options of a run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Step budget.
    pub max_steps: u64,
    /// Issue order of the scheduler.
    pub order: Order,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            max_steps: DEFAULT_MAX_STEPS,
            order: Order::RoundRobin,
        }
    }
}

/// Counters of a finished run.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RunStats {
    /// Scheduler counters (steps, per-engine bundles).
    pub sched: SchedStats,
    /// Bytes written by DMA transfers.
    pub dma_bytes: u64,
    /// DMA transfers executed.
    pub dma_transfers: u64,
    /// Wall time of the run.
    #[serde(serialize_with = "ser_secs", deserialize_with = "de_secs")]
    pub wall: Duration,
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn de_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let secs = <f64 as serde::Deserialize>::deserialize(d)?;
    Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
}

/// Why a machine cannot be set up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// Initial data of the wrong size.
    #[error("variable `{name}`: {got} bytes of data for a {want}-byte variable")]
    Size {
        /// Variable.
        name: String,
        /// Bytes given.
        got: u64,
        /// Bytes declared.
        want: u64,
    },
    /// No such variable.
    #[error("no variable `{0}`")]
    Unknown(String),
    /// The on-chip memories could not be allocated.
    #[error("cannot allocate SBUF/PSUM: {0}")]
    Memory(String),
    /// A variable does not fit the memory budget (refused before it is allocated).
    #[error("set-up: {0}")]
    Budget(Exceeded),
    /// A combination of options the machine does not simulate.
    #[error("not simulated: {0}")]
    Unsupported(String),
    /// The world of a run of several ranks is inconsistent.
    #[error("world: {0}")]
    World(String),
}

/// One NeuronCore running one kernel.
pub struct Machine<'k> {
    kernel: &'k Kernel,
    /// Generation.
    pub gen: Gen,
    /// SBUF and PSUM.
    pub chip: OnChip,
    /// DRAM variables.
    pub dram: Dram,
    /// Semaphores and events.
    pub sync: SyncState,
    /// Per-engine registers, by wire id.
    pub regs: [[u32; NUM_REGS]; Engine::COUNT],
    /// PE stationary operand, ACT/DVE accumulators, ACT table selection.
    pub engines: EngineState,
    validator: Option<Arc<dyn BundleCheck>>,
    /// Per engine, per bundle position: 1 + the index in `entries` of what the bundle decoded
    /// to the first time it was reached (0: not reached yet).
    slots: [Vec<u32>; Engine::COUNT],
    /// The distinct bundles decoded and validated so far.
    entries: Vec<Entry>,
    /// `entries` by bundle bytes and engine (a direct-mapped table).
    seen: Vec<Option<Seen>>,
    dma_bytes: u64,
    dma_transfers: u64,
    buf: Vec<u8>,
    /// Operand buffers reused between bundles (`ops::Machine::take_buf`).
    pub(crate) bufs: Vec<Vec<f32>>,
    /// Execution plans of bundles whose operands depend only on their bytes (see
    /// [`super::plan`]); a slot names its plan by index.
    pub(crate) plans: Vec<super::plan::Plan>,
    pub(crate) race: Option<Box<Checker>>,
    /// The agent DMA accesses are attributed to.
    dma_agent: Agent,
    /// Memory and DMA charged so far.
    budget: Budget,
    /// Step budget of the current run, bundles executed and steps charged for work.
    max_steps: u64,
    bundles: u64,
    /// Steps charged for work: DMA bytes moved and engine operand bytes (a `Cell`: operands
    /// are charged where the machine is only read).
    pub(super) work: std::cell::Cell<u64>,
    /// Timeline entries and race-check records charged to the memory budget.
    timeline_charged: u64,
    records_charged: u64,
    /// Segments of the race check's shadow memory charged to the memory budget.
    shadow_charged: u64,
    /// Ranges of the shared-DRAM access record charged to the memory budget.
    logged_charged: u64,
    /// The world this core is a member of (runs of several ranks).
    pub(crate) comm: Option<(Arc<dyn Meeting>, Member)>,
    /// Collectives posted and not yet complete.
    pub(crate) pending: Vec<PendingCollective>,
    /// The bundle just executed posted a collective: its `_COMPLETE` updates wait for it.
    pub(crate) defer_complete: bool,
    /// Per engine, the positions of its collective bundles (each issues on its own agent).
    collective_sites: [Vec<usize>; Engine::COUNT],
    /// What the world delivered in a race-checked run of a world, for its replay.
    pub(crate) deliveries: Option<Deliveries>,
    /// Set by the caller to stop the run ([`Machine::set_stop`]).
    stop: Option<Arc<AtomicBool>>,
}

/// A collective this core posted and has not received yet.
#[derive(Clone, Debug)]
pub(crate) struct PendingCollective {
    /// The ticket the world gave it.
    pub ticket: u64,
    /// The issuing bundle.
    pub site: Site,
    /// Output variable and byte offset of the output window.
    pub out_var: u32,
    pub out_offset: u64,
    /// Bytes the output window holds.
    pub out_len: u64,
    /// The bundle's synchronisation, whose `_COMPLETE` updates are made on completion.
    pub events: Option<Events>,
    /// With the race check: the collective's agent and its own clock.
    pub race: Option<(Agent, Outstanding)>,
}

/// What the world delivered to a core in a race-checked run: the ticket of each collective it
/// posted and what each of its waits received, in run order. The replay of the race check
/// (`Machine::resolve_races`) takes them from here instead of meeting the other ranks again,
/// so it repeats the run's interleaving exactly, whatever the threads' timing was.
#[derive(Debug, Default)]
pub(crate) struct Deliveries {
    tickets: Vec<u64>,
    waits: Vec<Vec<(u64, Received)>>,
    /// Replaying: the next ticket and wait to hand out.
    replay: Option<(usize, usize)>,
}

impl Deliveries {
    /// The next ticket of a replay (`None` when recording, or when the replay posts more than
    /// the run did).
    pub(crate) fn replayed_ticket(&mut self) -> Option<Option<u64>> {
        let (t, _) = self.replay.as_mut()?;
        let r = self.tickets.get(*t).copied();
        *t += 1;
        Some(r)
    }

    /// What the next wait of a replay receives (`None` when recording; `Some(None)` when the
    /// replay waits more often than the run did).
    pub(crate) fn replayed_wait(&mut self) -> Option<Option<Vec<(u64, Received)>>> {
        let (_, w) = self.replay.as_mut()?;
        let r = self.waits.get(*w).cloned();
        *w += 1;
        Some(r)
    }

    /// Record a ticket of the run.
    pub(crate) fn record_ticket(&mut self, t: u64) {
        self.tickets.push(t);
    }

    /// Record what a wait of the run received.
    pub(crate) fn record_wait(&mut self, done: &[(u64, Received)]) {
        self.waits.push(done.to_vec());
    }
}

/// A distinct bundle (its bytes, on one engine), decoded and validated once and reused at
/// every position that holds it and every time such a position issues again (a loop body).
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The validated, decoded instruction.
    inst: Inst,
    /// Its synchronisation, once read.
    events: Option<Events>,
    /// Its execution plan ([`super::plan`]), by index into `Machine::plans`.
    plan: Option<u32>,
}

/// A slot of the table of bundles already decoded: bytes, engine, index into `entries`.
#[derive(Clone, Copy, Debug)]
struct Seen {
    engine: Engine,
    bytes: [u8; 64],
    entry: u32,
}

/// Entries of the direct-mapped table of bundles already decoded and validated.
const SEEN_ENTRIES: usize = 1024;

/// The table entry of `bytes` on `e`.
fn seen_index(bytes: &[u8; 64], e: Engine) -> usize {
    let mut h = e as u64;
    for w in bytes.chunks_exact(8) {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        h = (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
    (h >> 32) as usize % SEEN_ENTRIES
}

/// The state a run starts from, kept for a replay.
struct Snapshot {
    dram: Dram,
    sync: SyncState,
    regs: [[u32; NUM_REGS]; Engine::COUNT],
    engines: EngineState,
}

/// `n` zero bytes, or `None` when they cannot be allocated. The pages are zeroed lazily by
/// the allocator (a large variable costs nothing until it is touched).
pub(crate) fn zeroed(n: u64) -> Option<Vec<u8>> {
    let n = usize::try_from(n).ok()?;
    if n == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n).ok()?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return None;
    }
    crate::process::advise_huge_pages(p, n);
    // SAFETY: `p` was allocated by the global allocator with the layout of `n` bytes (align
    // 1), all of them initialised to zero; the Vec takes ownership with capacity `n`.
    Some(unsafe { Vec::from_raw_parts(p, n, n) })
}

/// The NUL-terminated queue name of a DMA trigger.
pub(crate) fn queue_name(raw: &[u8]) -> String {
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

/// Collective agents of one engine at most: an engine's collective bundles beyond this many
/// share them (the k-th on agent k mod this).
const COLLECTIVE_AGENTS: usize = 64;

impl<'k> Machine<'k> {
    /// DMA_DIRECT2D: the engine's direct DMA performs `d`, then adds `inc` to semaphore `sem`.
    pub(crate) fn dma_direct(
        &mut self,
        site: Site,
        d: &DmaDesc,
        sem: u8,
        inc: u32,
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
        let agent = self.direct_agent(site.engine);
        if let Some(c) = self.race.as_mut() {
            c.handoff(site.engine as Agent, agent);
        }
        self.dma_agent = agent;
        let before = self.dma_bytes;
        self.dma(site, "dma", d)?;
        let end = self.time_dma(agent, site.engine, "direct".into(), self.dma_bytes - before);
        if inc != 0 {
            let s = &mut sync.sems[sem as usize];
            let before = *s;
            *s = s.wrapping_add(inc);
            let after = *s;
            if let Some(c) = self.race.as_mut() {
                let at = format!("{} bundle #{}", site.engine, site.index);
                c.sem_release(agent, sem, before, after, false, end, &at);
            }
        }
        Ok(())
    }

    /// Run to completion or fault. `progress` receives the counters so far (bundles issued,
    /// per engine) periodically.
    pub fn run(
        &mut self,
        opts: &RunOptions,
        progress: &mut dyn FnMut(&SchedStats),
    ) -> Result<RunStats, Fault> {
        let start = Instant::now();
        self.max_steps = opts.max_steps;
        self.bundles = 0;
        self.work.set(0);
        if self.race.as_ref().is_some_and(|c| c.tracks_memory()) {
            let dram: u64 = self.dram.iter().map(|(_, v)| v.bytes.len() as u64).sum();
            self.budget
                .charge_memory(|| "the race check's copy of DRAM".into(), dram)
                .map_err(|exceeded| Fault::Budget {
                    at: "race check".into(),
                    exceeded,
                })?;
        }
        // With the race check on, the starting state is kept for a replay (see
        // `resolve_races`).
        let snapshot = self
            .race
            .as_ref()
            .filter(|c| c.tracks_memory())
            .map(|_| Snapshot {
                dram: self.dram.clone(),
                sync: self.sync.clone(),
                regs: self.regs,
                engines: self.engines.clone(),
            });
        // A core of a world records what the world delivers, for the replay.
        self.deliveries = (snapshot.is_some() && self.comm.is_some()).then(Deliveries::default);
        let mut sync = std::mem::take(&mut self.sync);
        let r = sched::run_ordered(self, &mut sync, opts.max_steps, opts.order, progress);
        self.sync = sync;
        if let Some((w, me)) = &self.comm {
            if let Err(f @ Fault::Interrupted { .. }) = &r {
                w.abort(f.to_string());
            }
            w.leave(*me, r.is_err());
        }
        let sched = r?;
        if let Some(s) = snapshot {
            self.resolve_races(s, opts);
        }
        self.deliveries = None;
        Ok(RunStats {
            sched,
            dma_bytes: self.dma_bytes,
            dma_transfers: self.dma_transfers,
            wall: start.elapsed(),
        })
    }

    fn bundle(&self, e: Engine, pc: usize) -> &'k Bundle {
        &self.kernel.streams[e as usize][pc]
    }

    fn site(&self, e: Engine, pc: usize) -> Site {
        Site {
            engine: e,
            index: pc,
            opcode: self.bundle(e, pc).opcode(),
        }
    }

    pub(crate) fn dma(&mut self, site: Site, operand: &str, d: &DmaDesc) -> Result<(), Fault> {
        let side_bytes =
            |s: &dma::DmaSide| s.elems().saturating_mul(s.format.container_bytes() as u64);
        let bytes = side_bytes(&d.from).max(side_bytes(&d.to));
        self.charge_transfer(site, &format!("`{operand}`"), bytes)?;
        let n =
            dma::transfer(d, &mut self.dram, &mut self.chip, &mut self.buf).map_err(
                |err| match err {
                    dma::DmaError::Access { side, err } => {
                        Fault::oob(site, format!("{operand}.{side}"), err)
                    }
                    other => Fault::exec(site, format!("{operand}: {other}")),
                },
            )?;
        self.dma_bytes += n;
        self.dma_transfers += 1;
        self.charge_copied(site, &format!("`{operand}`"))?;
        if self.dram.tracks() {
            self.note_shared(site, d)?;
        }
        if self.race.is_some() {
            self.record_dma(site, operand, d)?;
        }
        Ok(())
    }

    /// Decoded bundle `pc` of `e`, decoding (and, with a validator, validating) it the first
    /// time it is reached; its index in `entries`.
    #[inline]
    fn decoded(&mut self, e: Engine, pc: usize) -> Result<usize, Fault> {
        match self.slots[e as usize][pc] {
            0 => self.decode_slot(e, pc),
            i => Ok(i as usize - 1),
        }
    }

    /// [`Machine::decoded`] of a position not reached before.
    #[cold]
    fn decode_slot(&mut self, e: Engine, pc: usize) -> Result<usize, Fault> {
        if let Some(i) = self.recall(e, pc) {
            return Ok(i);
        }
        let b = self.bundle(e, pc);
        let site = self.site(e, pc);
        if let Some(v) = &self.validator {
            v.check(self.gen, e, b).map_err(|r| Fault::InvalidBundle {
                site,
                reason: r.to_string(),
            })?;
        }
        let inst = decode(b, self.gen).map_err(|err| Fault::InvalidBundle {
            site,
            reason: err.to_string(),
        })?;
        let (Ok(entry), Ok(plans)) = (
            u32::try_from(self.entries.len()),
            u32::try_from(self.plans.len()),
        ) else {
            return Err(Fault::exec(site, "more than 2^32 distinct bundles"));
        };
        let mut plan = None;
        if self.race.is_none() && super::dispatch::executes_on(site.opcode, e) {
            if let Some(p) = self.plan_of(site, &inst) {
                self.plans.push(p);
                plan = Some(plans);
            }
        }
        self.entries.push(Entry {
            inst,
            events: None,
            plan,
        });
        self.slots[e as usize][pc] = entry + 1;
        if self.seen.is_empty() {
            self.seen.resize(SEEN_ENTRIES, None);
        }
        self.seen[seen_index(&b.0, e)] = Some(Seen {
            engine: e,
            bytes: b.0,
            entry,
        });
        Ok(entry as usize)
    }

    /// Fill position `pc` of `e` from the table of bundles already decoded and validated
    /// when the same bytes were, on the same engine, at another position; the entry index.
    fn recall(&mut self, e: Engine, pc: usize) -> Option<usize> {
        let b = &self.kernel.streams[e as usize][pc].0;
        let s = self.seen.get(seen_index(b, e))?.as_ref()?;
        if s.engine != e || s.bytes != *b {
            return None;
        }
        self.slots[e as usize][pc] = s.entry + 1;
        Some(s.entry as usize)
    }

    /// The kernel this core runs.
    pub(crate) fn kernel(&self) -> &'k Kernel {
        self.kernel
    }

    pub(crate) fn stream_len_of(&self, e: Engine) -> usize {
        self.kernel.streams[e as usize].len()
    }

    /// The 64 bytes of the bundle at `site`.
    pub(crate) fn bundle_at(&self, site: Site) -> &'k [u8; 64] {
        &self.bundle(site.engine, site.index).0
    }

    /// Ranks the kernel's collectives span (at least 1).
    pub(crate) fn world(&self) -> usize {
        self.kernel.world.max(1)
    }

    pub(crate) fn trigger(
        &mut self,
        site: Site,
        e: Engine,
        queue: &str,
        block: u32,
        sync: &mut SyncState,
    ) -> Result<(), Fault> {
        let kernel = self.kernel;
        let q = kernel.queues[e as usize]
            .iter()
            .find(|q| q.name == queue)
            .ok_or_else(|| {
                Fault::exec(
                    site,
                    format!(
                        "DMA trigger names queue `{queue}`, which the {e} sidecar does not define"
                    ),
                )
            })?;
        let blk = q
            .blocks
            .iter()
            .find(|b| b.id == block as u64)
            .ok_or_else(|| {
                let ids: Vec<String> = q.blocks.iter().map(|b| b.id.to_string()).collect();
                Fault::exec(
                    site,
                    format!(
                        "DMA trigger names block {block} of queue `{queue}`, whose blocks are [{}]",
                        ids.join(", ")
                    ),
                )
            })?;
        let agent = self.queue_agent(e, queue);
        if let Some(c) = self.race.as_mut() {
            c.handoff(e as Agent, agent);
        }
        self.dma_agent = agent;
        for (i, entry) in blk.entries.iter().enumerate() {
            let operand = format!("{queue}[{block}].desc[{i}]");
            let d = entry
                .desc
                .as_ref()
                .map_err(|why| Fault::exec(site, format!("{operand}: {why}")))?;
            let before = self.dma_bytes;
            self.dma(site, &operand, d)?;
            let end = self.time_dma(agent, e, operand.clone(), self.dma_bytes - before);
            let regs = &self.regs[e as usize];
            match self.race.as_mut() {
                None => {
                    if let Some(u) = &entry.sem {
                        u.apply(sync, regs);
                    }
                    if let Some(ev) = entry.event {
                        sync.set_event(ev, true);
                    }
                }
                Some(c) => {
                    if let Some(u) = &entry.sem {
                        c.update(agent, u, sync, regs, end, &operand);
                    }
                    if let Some(ev) = entry.event {
                        sync.set_event(ev, true);
                        c.event_release(agent, ev, true, end, &operand);
                    }
                }
            }
        }
        if let Some(s) = q.semaphore {
            let before = sync.sems[s as usize];
            sync.sems[s as usize] = before.wrapping_add(1);
            if let Some(c) = self.race.as_mut() {
                let at = format!("{queue}[{block}]");
                let end = c.timeline.as_ref().map_or(0.0, |t| t.now[agent as usize]);
                c.sem_release(agent, s, before, before.wrapping_add(1), false, end, &at);
            }
        }
        Ok(())
    }
}

impl Streams for Machine<'_> {
    fn stream_len(&self, e: Engine) -> usize {
        self.kernel.streams[e as usize].len()
    }

    fn opcode(&self, e: Engine, pc: usize) -> u8 {
        self.bundle(e, pc).opcode()
    }

    #[inline]
    fn events(&mut self, e: Engine, pc: usize) -> Result<Events, Fault> {
        let entry = match self.slots[e as usize][pc] {
            0 => self.recall(e, pc),
            i => Some(i as usize - 1),
        };
        if let Some(ev) = entry.and_then(|i| self.entries[i].events) {
            return Ok(ev);
        }
        let b = self.bundle(e, pc);
        // The decoded bundle's events (decoded here without validation when the bundle has
        // not been reached yet; a bundle that does not decode has its plain events block).
        let ev = match entry {
            Some(i) => Events::of_inst(&self.entries[i].inst),
            None => match decode(b, self.gen) {
                Ok(inst) => Events::of_inst(&inst),
                Err(_) => Events::of_inst(&Inst::Raw(RawInst(*b))),
            },
        };
        let ev = ev.map_err(|err| Fault::InvalidBundle {
            site: self.site(e, pc),
            reason: err.to_string(),
        })?;
        if let Some(i) = entry {
            self.entries[i].events = Some(ev);
        }
        Ok(ev)
    }

    fn regs(&self, e: Engine) -> &[u32] {
        &self.regs[e as usize]
    }

    fn work(&self) -> u64 {
        self.work.get()
    }

    fn stop_requested(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    fn execute(&mut self, e: Engine, pc: usize, sync: &mut SyncState) -> Result<Flow, Fault> {
        self.bundles += 1;
        let i = self.decoded(e, pc)?;
        let entry = self.entries[i];
        if let (Some(i), None) = (entry.plan, &self.race) {
            let site = self.site(e, pc);
            return self.run_plan(site, i as usize).map(|()| Flow::Next);
        }
        let inst = entry.inst;
        let site = self.site(e, pc);
        if let Some(c) = self.race.as_mut() {
            c.begin(e as Agent, site, inst.mnemonic());
        }
        let r = self.dispatch(site, &inst, sync);
        let flushed = self.flush_chip_log(site);
        if let Some(c) = self.race.as_mut() {
            c.finish_bundle(e, site.index, site.opcode, inst.mnemonic());
        }
        let flow = r?;
        flushed?;
        self.charge_timeline(site)?;
        Ok(flow)
    }

    fn pending_updates(&mut self, e: Engine, from: usize) -> Vec<PendingUpdate> {
        let stream = &self.kernel.streams[e as usize];
        // A stream that can branch may run any of its bundles again.
        let from = if stream
            .iter()
            .any(|b| b.opcode() == tpbsim_isa::opcode_byte::COMPARE_BRANCH)
        {
            0
        } else {
            from
        };
        let mut v = Vec::new();
        for (pc, b) in stream.iter().enumerate().skip(from) {
            let inst = decode(b, self.gen);
            let ev = match &inst {
                Ok(inst) => Events::of_inst(inst),
                Err(_) => Events::of_inst(&Inst::Raw(RawInst(*b))),
            };
            if let Ok(ev) = ev {
                v.extend(ev.pending_updates(pc));
            }
            match inst {
                Ok(Inst::DmaTrigger(x)) => {
                    let name = queue_name(&x.queue_name);
                    let Some(q) = self.kernel.queues[e as usize]
                        .iter()
                        .find(|q| q.name == name)
                    else {
                        continue;
                    };
                    let Some(blk) = q.blocks.iter().find(|k| k.id == x.block_id as u64) else {
                        continue;
                    };
                    for (i, entry) in blk.entries.iter().enumerate() {
                        let at = format!("DMA {name}[{}].desc[{i}]", x.block_id);
                        if let Some(u) = &entry.sem {
                            v.push(PendingUpdate {
                                target: SyncRef::of_update(u.idx, u.op),
                                index: pc,
                                via: format!("{at}: {}", u.describe()),
                            });
                        }
                        if let Some(ev) = entry.event {
                            v.push(PendingUpdate {
                                target: SyncRef::Event {
                                    index: ev,
                                    set: true,
                                },
                                index: pc,
                                via: format!("{at}: event {ev} set at completion"),
                            });
                        }
                    }
                    if let Some(sem) = q.semaphore {
                        v.push(PendingUpdate {
                            target: SyncRef::Semaphore { index: sem },
                            index: pc,
                            via: format!(
                                "DMA {name}[{}] completion: semaphore {sem} += 1",
                                x.block_id
                            ),
                        });
                    }
                }
                Ok(Inst::DmaDirect2d(x)) if x.sem_increment != 0 => v.push(PendingUpdate {
                    target: SyncRef::Semaphore { index: x.semaphore },
                    index: pc,
                    via: format!(
                        "direct DMA completion: semaphore {} += {}",
                        x.semaphore, x.sem_increment
                    ),
                }),
                _ => {}
            }
        }
        v
    }

    fn issue(&mut self, e: Engine, ev: &Events, sync: &mut SyncState) {
        let regs = &self.regs[e as usize];
        match self.race.as_mut() {
            Some(c) => {
                let free = c.timeline.as_ref().map_or(0.0, |t| t.now[e as usize]);
                let ready = c.issue(e as Agent, ev, sync, regs, free);
                if let Some(t) = c.timeline.as_mut() {
                    t.start(e, ready);
                }
            }
            None => ev.issue(sync, regs),
        }
    }

    fn stalled(&mut self, sync: &mut SyncState) -> Result<bool, Fault> {
        self.await_collectives(sync)
    }

    fn complete(&mut self, e: Engine, ev: &Events, sync: &mut SyncState) {
        if std::mem::take(&mut self.defer_complete) {
            if let Some(p) = self.pending.last_mut() {
                p.events = Some(*ev);
            }
            return;
        }
        let regs = &self.regs[e as usize];
        match self.race.as_mut() {
            Some(c) => {
                let end = c.timeline.as_ref().map_or(0.0, |t| t.now[e as usize]);
                c.complete(e as Agent, ev, sync, regs, end)
            }
            None => ev.complete(sync, regs),
        }
    }
}
