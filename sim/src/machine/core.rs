//! The machine: one NeuronCore's state driving a [`Kernel`] through the scheduler.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tpbsim_isa::check::BundleCheck;
use tpbsim_isa::{decode, Bundle, Engine, Gen, Inst, RawInst};

use super::budget::{self, Budget, Exceeded, Limits};
use super::collective::Received;
use super::collective::{Meeting, Member};
use super::control::NUM_REGS;
use super::dma::{self, DmaDesc};
use super::fault::{Fault, Site};
use super::geometry::Geometry;
use super::kernel::{Kernel, VarSpec};
use super::memory::{Dram, DramVar, OnChip, VarBytes};
use super::ops::EngineState;
use super::race::{AccessKind, Agent, Checker, Finding, Mem, Outstanding, ShadowFull};
use super::sched::{self, Flow, Order, SchedStats, Streams};
use super::sync::{Events, SyncState};
use super::waitfor::{PendingUpdate, SyncRef};

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
    work: std::cell::Cell<u64>,
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

/// The bytes of a variable a core owns: its shipped data or zeros, charged to `budget` first.
fn private_bytes(budget: &mut Budget, v: &VarSpec) -> Result<Vec<u8>, SetupError> {
    budget
        .charge_memory(|| format!("variable `{}`", v.name), v.size)
        .map_err(SetupError::Budget)?;
    match &v.init {
        Some(d) if d.len() as u64 != v.size => Err(SetupError::Size {
            name: v.name.clone(),
            got: d.len() as u64,
            want: v.size,
        }),
        Some(d) => Ok(d.clone()),
        None => zeroed(v.size).ok_or_else(|| {
            SetupError::Memory(format!(
                "variable `{}`: cannot allocate {} bytes",
                v.name, v.size
            ))
        }),
    }
}

/// The NUL-terminated queue name of a DMA trigger.
pub(crate) fn queue_name(raw: &[u8]) -> String {
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

/// Collective agents of one engine at most: an engine's collective bundles beyond this many
/// share them (the k-th on agent k mod this).
const COLLECTIVE_AGENTS: usize = 64;

/// Per engine, the positions of its collective bundles (TRIGGER_COLLECTIVE, SEND_RECV).
fn collective_sites(kernel: &Kernel) -> [Vec<usize>; Engine::COUNT] {
    use tpbsim_isa::opcode_byte::{PSEUDO_SEND_RECV, PSEUDO_TRIGGER_COLLECTIVE};
    std::array::from_fn(|e| {
        kernel.streams[e]
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b.opcode(), PSEUDO_TRIGGER_COLLECTIVE | PSEUDO_SEND_RECV))
            .map(|(i, _)| i)
            .collect()
    })
}

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
    /// A machine for `kernel` on `gen`, DRAM variables holding their initial data (or zeros),
    /// with the default [`Limits`].
    pub fn new(kernel: &'k Kernel, gen: Gen) -> Result<Machine<'k>, SetupError> {
        Machine::with_limits(kernel, gen, Limits::default())
    }

    /// [`Machine::new`] under `limits`: the on-chip memories and every variable are charged
    /// to the memory budget before they are allocated.
    pub fn with_limits(
        kernel: &'k Kernel,
        gen: Gen,
        limits: Limits,
    ) -> Result<Machine<'k>, SetupError> {
        Machine::with_budget(kernel, gen, Budget::new(limits), &|_| None)
    }

    /// A machine charging `budget`; the variables for which `shared` gives bytes take them
    /// (shared with other cores, charged by the caller), the others are allocated here.
    pub(crate) fn with_budget(
        kernel: &'k Kernel,
        gen: Gen,
        mut budget: Budget,
        shared: &dyn Fn(&VarSpec) -> Option<VarBytes>,
    ) -> Result<Machine<'k>, SetupError> {
        let geom = Geometry::of(gen);
        let chip_bytes = super::geometry::PARTITIONS as u64
            * (u64::from(geom.sbuf_bytes_per_partition)
                + u64::from(super::geometry::PSUM_BYTES_PER_PARTITION));
        budget
            .charge_memory(|| "SBUF and PSUM".into(), chip_bytes)
            .map_err(SetupError::Budget)?;
        let mut dram = Dram::default();
        for v in &kernel.vars {
            let bytes = match shared(v) {
                Some(b) => b,
                None => private_bytes(&mut budget, v)?.into(),
            };
            dram.insert(
                v.id,
                DramVar {
                    name: v.name.clone(),
                    kind: v.kind,
                    bytes,
                },
            );
        }
        Ok(Machine {
            kernel,
            gen,
            chip: OnChip::new(geom).map_err(|e| SetupError::Memory(e.to_string()))?,
            dram,
            sync: SyncState::default(),
            regs: [[0; NUM_REGS]; Engine::COUNT],
            engines: EngineState::default(),
            validator: None,
            slots: std::array::from_fn(|i| vec![0; kernel.streams[i].len()]),
            entries: Vec::new(),
            seen: Vec::new(),
            dma_bytes: 0,
            dma_transfers: 0,
            buf: Vec::new(),
            bufs: Vec::new(),
            plans: Vec::new(),
            race: None,
            dma_agent: 0,
            budget,
            max_steps: DEFAULT_MAX_STEPS,
            bundles: 0,
            work: std::cell::Cell::new(0),
            timeline_charged: 0,
            records_charged: 0,
            shadow_charged: 0,
            logged_charged: 0,
            comm: None,
            pending: Vec::new(),
            defer_complete: false,
            collective_sites: collective_sites(kernel),
            deliveries: None,
            stop: None,
        })
    }

    /// The budget: what the run has charged against its limits.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Charge `bytes` of memory the caller holds for this run (copies of outputs, ...).
    pub fn charge_memory(&mut self, what: &str, bytes: u64) -> Result<(), Exceeded> {
        self.budget.charge_memory(|| what.to_string(), bytes)
    }

    /// Charge the timeline entries and the race check's growing records made since the last
    /// charge (at `site`).
    fn charge_timeline(&mut self, site: Site) -> Result<(), Fault> {
        let Some(c) = self.race.as_ref() else {
            return Ok(());
        };
        let records = c.growing_records();
        let entries = c
            .timeline
            .as_ref()
            .map_or(0, |t| (t.slices.len() + t.flows.len()) as u64);
        self.budget
            .charge_growth(
                || format!("the race check's records ({records} releases and origins)"),
                records,
                &mut self.records_charged,
                budget::RACE_RECORD_BYTES,
            )
            .and_then(|()| {
                self.budget.charge_growth(
                    || format!("the timeline ({entries} slices and flows)"),
                    entries,
                    &mut self.timeline_charged,
                    budget::TIMELINE_ENTRY_BYTES,
                )
            })
            .map_err(|e| Fault::budget(site, e))
    }

    /// Check that an operand of `bytes` bytes fits the memory budget as working memory, and
    /// charge its bytes as work to the step budget (one step per 64 bytes, as a DMA's), so
    /// that the budget bounds the time a bundle takes, not only the bundles issued.
    pub(crate) fn check_operand(&self, site: Site, name: &str, bytes: u64) -> Result<(), Fault> {
        self.budget
            .check_memory(
                || format!("operand `{name}` ({bytes} bytes, working memory)"),
                bytes.saturating_mul(budget::OPERAND_EXPANSION),
            )
            .map_err(|e| Fault::budget(site, e))?;
        let work = self.work.get().saturating_add(budget::dma_steps(bytes));
        if self.bundles.saturating_add(work) > self.max_steps {
            return Err(Fault::StepBudget {
                budget: self.max_steps,
                bundles: self.bundles,
                dma_steps: work,
                positions: format!("{site}, operand `{name}` spanning {bytes} bytes"),
            });
        }
        self.work.set(work);
        Ok(())
    }

    /// Check the run for races, uninitialised reads and PSUM accumulation onto unzeroed
    /// banks (see [`super::race`]). Call before [`Machine::run`].
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
            let undefined = v.kind == super::memory::VarKind::Output
                || (v.kind == super::memory::VarKind::Other && v.init.is_none());
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
            c.timeline = Some(super::timeline::Timeline::new(agent_labels(
                self.kernel,
                &self.collective_sites,
            )));
        }
    }

    /// The timeline, when [`Machine::enable_timeline`] was called.
    pub fn timeline(&self) -> Option<&super::timeline::Timeline> {
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
    fn time_dma(&mut self, q: Agent, e: Engine, name: String, bytes: u64) -> f64 {
        match self.race.as_mut().and_then(|c| c.timeline.as_mut()) {
            Some(t) => {
                let nb = t.cur_start[e as usize];
                t.dma(q, e as Agent, name, bytes, nb)
            }
            None => 0.0,
        }
    }

    /// Agent id of DMA queue `queue` of `e`'s sidecar.
    fn queue_agent(&self, e: Engine, queue: &str) -> Agent {
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
    fn direct_agent(&self, e: Engine) -> Agent {
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
    fn flush_chip_log(&mut self, site: Site) -> Result<(), Fault> {
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

    /// The memory budget's room for the race check's shadow memory, when it tracks memory.
    fn shadow_room(&self) -> Option<u64> {
        self.race.as_ref().filter(|c| c.tracks_memory())?;
        Some(
            self.budget
                .limits
                .max_memory
                .saturating_sub(self.budget.memory()),
        )
    }

    /// Charge the shadow segments created since the last charge and credit those merged away;
    /// an update `r` that had no room for its segments (beside `working` bytes of working
    /// memory) is a budget fault at `site`.
    fn charge_shadow(
        &mut self,
        site: Site,
        r: Result<(), ShadowFull>,
        working: u64,
    ) -> Result<(), Fault> {
        let Some(c) = self.race.as_ref() else {
            return Ok(());
        };
        let live = c.shadow_segments();
        let per = budget::SHADOW_SEGMENT_BYTES;
        let what = |n: u64| format!("the race check's shadow memory ({n} segments of {per} bytes)");
        if live >= self.shadow_charged {
            let grown = (live - self.shadow_charged).saturating_mul(per);
            self.budget
                .charge_memory(|| what(live), grown)
                .map_err(|e| Fault::budget(site, e))?;
        } else {
            self.budget
                .release_memory((self.shadow_charged - live).saturating_mul(per));
        }
        self.shadow_charged = live;
        r.map_err(|full| {
            Fault::budget(
                site,
                Exceeded {
                    resource: budget::Resource::Memory,
                    what: what(full.segments),
                    needed: full
                        .segments
                        .saturating_sub(live)
                        .saturating_mul(per)
                        .saturating_add(working),
                    used: self.budget.memory(),
                    limit: self.budget.limits.max_memory,
                },
            )
        })
    }

    /// Record the accesses of a finished transfer.
    fn record_dma(&mut self, site: Site, operand: &str, d: &DmaDesc) -> Result<(), Fault> {
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
                            let (space, stride) = if l.space == super::geometry::Space::Sbuf {
                                (1, geom.sbuf_partition_stride())
                            } else {
                                (2, super::geometry::PSUM_PARTITION_STRIDE)
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
                    1 => Mem::Chip(super::geometry::Space::Sbuf, id),
                    _ => Mem::Chip(super::geometry::Space::Psum, id),
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

    /// Charge `bytes` a transfer named `what` moves at `site`, before anything moves: the
    /// bytes against the DMA budget, their steps against the step budget.
    fn charge_transfer(&mut self, site: Site, what: &str, bytes: u64) -> Result<(), Fault> {
        let steps = budget::dma_steps(bytes);
        if self
            .bundles
            .saturating_add(self.work.get())
            .saturating_add(steps)
            > self.max_steps
        {
            return Err(Fault::StepBudget {
                budget: self.max_steps,
                bundles: self.bundles,
                dma_steps: self.work.get().saturating_add(steps),
                positions: format!("{site}, {what} moving {bytes} bytes"),
            });
        }
        self.budget
            .charge_dma(|| what.to_string(), bytes)
            .map_err(|e| Fault::budget(site, e))?;
        self.work.set(self.work.get() + steps);
        Ok(())
    }

    /// Charge the copy of a shared variable that the last write at `site` (by `what`) made.
    pub(crate) fn charge_copied(&mut self, site: Site, what: &str) -> Result<(), Fault> {
        let copied = self.dram.take_copied();
        if copied > 0 {
            self.budget
                .charge_memory(
                    || format!("{what}: this core's copy of a shared variable it writes"),
                    copied,
                )
                .map_err(|e| Fault::budget(site, e))?;
        }
        Ok(())
    }

    /// Charge `bytes` moved by a collective at `site` ([`Machine::charge_transfer`]) and count
    /// them with the DMA counters.
    pub(crate) fn charge_collective(&mut self, site: Site, bytes: u64) -> Result<(), Fault> {
        self.charge_transfer(site, "collective", bytes)?;
        self.dma_bytes += bytes;
        self.dma_transfers += 1;
        Ok(())
    }

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

    /// Stop the run once `stop` is set: the scheduler checks it before each bundle and the
    /// run faults with [`Fault::Interrupted`]; a core of a world stops the world's meeting
    /// point too, so that no member waits at a collective for it.
    pub fn set_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = Some(stop);
    }

    /// Make this core member `me` of world `w` (a run of several ranks): its collectives meet
    /// the other members' there. With the race check on, the run records what the world
    /// delivers and the check's replay takes it from that record ([`Deliveries`]).
    pub fn join_world(&mut self, w: Arc<dyn Meeting>, me: Member) -> Result<(), SetupError> {
        self.comm = Some((w, me));
        Ok(())
    }

    /// Check every bundle with `v` the first time it executes; a rejected bundle faults
    /// ([`Fault::InvalidBundle`]) before it runs.
    pub fn set_validator(&mut self, v: Arc<dyn BundleCheck>) {
        self.validator = Some(v);
        // What was validated before was validated by another validator (or none).
        self.seen.clear();
        self.entries.clear();
        for s in self.slots.iter_mut().flatten() {
            *s = 0;
        }
    }

    /// Replace the contents of variable `name`.
    pub fn set_var(&mut self, name: &str, data: &[u8]) -> Result<(), SetupError> {
        let id = self
            .dram
            .id_of(name)
            .ok_or_else(|| SetupError::Unknown(name.to_string()))?;
        let var = self
            .dram
            .get_mut(id)
            .ok_or_else(|| SetupError::Unknown(name.to_string()))?;
        if var.bytes.len() != data.len() {
            return Err(SetupError::Size {
                name: name.into(),
                got: data.len() as u64,
                want: var.bytes.len() as u64,
            });
        }
        var.bytes.make_mut().0.copy_from_slice(data);
        Ok(())
    }

    /// Contents of variable `name`.
    pub fn var(&self, name: &str) -> Option<&[u8]> {
        self.dram
            .id_of(name)
            .and_then(|id| self.dram.get(id))
            .map(|v| &v.bytes[..])
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

    /// Make the race findings independent of the interleaving: when the schedule-independent
    /// acquisition rule (`super::skeleton`) gives some wait a smaller clock than the run did,
    /// replay the same interleaving from `start` with the resolved clocks imposed and take the
    /// replay's findings. The machine's final state is the first run's. A replay whose
    /// synchronisation differs from the run's (a kernel whose control flow depends on on-chip
    /// data present before the run) is discarded and the run's findings stand.
    fn resolve_races(&mut self, start: Snapshot, opts: &RunOptions) {
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

    /// Note the bytes a transfer read and wrote in the DRAM variables this core shares with
    /// others (the cluster checks them for accesses no synchronisation orders).
    fn note_shared(&mut self, site: Site, d: &DmaDesc) -> Result<(), Fault> {
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
