//! Library entry point for running a kernel: inputs by name in, outputs by name out, with the
//! run's counters and race findings. It composes the same steps as `sim run` (load the kernel
//! from a NEFF, set the inputs, run the machine under one or more schedules) for callers that
//! hold their data in memory rather than in `.npy` files.

use std::collections::BTreeMap;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tpbsim_isa::check::BundleCheck;
use tpbsim_isa::Gen;
use tpbsim_neff::Neff;

use crate::machine::cluster::{Cluster, ClusterStats, CoreFault, SharedBytes};
use crate::machine::collective::{Comm, Meeting, Member};
use crate::machine::core::SetupError;
use crate::machine::load::{self, LoadError};
use crate::machine::memory::VarBytes;
use crate::machine::program::Program;
use crate::machine::race::Finding;
use crate::machine::sched::{Order, SchedStats};
use crate::machine::timeline::Timeline;
use crate::machine::{Fault, Kernel, Limits, RunOptions, RunStats, VarKind, DEFAULT_MAX_STEPS};

/// How to run a kernel.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Generation to run on; `None` takes the NEFF's target.
    pub arch: Option<Gen>,
    /// Check for races and uninitialised reads (docs/races.md).
    pub check_races: bool,
    /// Interleavings to run: the first round-robin, the others seeded (at least one).
    pub schedules: u32,
    /// Seed of the first seeded interleaving.
    pub seed: u64,
    /// Step budget of each run.
    pub max_steps: u64,
    /// Memory and DMA budgets.
    pub limits: Limits,
    /// The check each bundle passes before it first executes (the tools install
    /// `tpbsim_validate::l2::L2Check`); `None` runs unchecked.
    pub validator: Option<Arc<dyn BundleCheck>>,
    /// Record the timeline of the round-robin run (cost model in `docs/trace.md`), for
    /// [`RunOutput::timelines`] and their profiles.
    pub timeline: bool,
    /// Worker threads for the cores of a multi-core program (0 = one per available hardware
    /// thread); the result does not depend on it. A run of several ranks runs every core of
    /// every rank on its own thread (a rank waiting for a collective holds no CPU).
    pub threads: usize,
    /// The order reductions of collectives fold in (docs/collectives.md).
    pub collective_order: crate::machine::collective::Order,
    /// Set (from any thread) to stop the run: every core of every rank stops before its next
    /// bundle, a rank waiting at a collective is released, and the run returns
    /// [`RunError::Interrupted`].
    pub stop: Option<Arc<AtomicBool>>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            arch: None,
            check_races: false,
            schedules: 1,
            seed: 1,
            max_steps: DEFAULT_MAX_STEPS,
            limits: Limits::default(),
            validator: None,
            timeline: false,
            threads: 0,
            collective_order: Default::default(),
            stop: None,
        }
    }
}

/// An output that differs between the round-robin run and another schedule.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ScheduleDiff {
    /// The output variable.
    pub output: String,
    /// Index of the schedule (1 = the first seeded one).
    pub schedule: u32,
    /// Seed of that schedule.
    pub seed: u64,
    /// First byte that differs.
    pub first_byte: usize,
    /// Bytes that differ.
    pub bytes_differing: usize,
}

/// An output whose bytes differ between two runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputDiff {
    /// The output variable.
    pub output: String,
    /// First byte that differs.
    pub first_byte: usize,
    /// Bytes that differ.
    pub bytes_differing: usize,
}

/// The outputs of `a` whose bytes differ in `b` (outputs missing from `b` are skipped).
pub fn diff_outputs<A: AsRef<[u8]>, B: AsRef<[u8]>>(
    a: &BTreeMap<String, A>,
    b: &BTreeMap<String, B>,
) -> Vec<OutputDiff> {
    let mut v = Vec::new();
    for (name, x) in a {
        let Some(y) = b.get(name) else {
            continue;
        };
        let (x, y) = (x.as_ref(), y.as_ref());
        let n = x.iter().zip(y).filter(|(p, q)| p != q).count();
        if n > 0 {
            v.push(OutputDiff {
                output: name.clone(),
                first_byte: x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(0),
                bytes_differing: n,
            });
        }
    }
    v
}

/// One core's part of a run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CoreRun {
    /// The subgraph the core ran (`sg00`, ...).
    pub subgraph: String,
    /// Its counters.
    pub stats: RunStats,
}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The generation the kernel ran on.
    pub gen: Gen,
    /// Each output variable's bytes, by name (a buffer of the run's own, or one shared with
    /// other ranks, as a collective delivered it: no copy either way).
    pub outputs: BTreeMap<String, VarBytes>,
    /// Counters of the round-robin run, all cores together.
    pub stats: RunStats,
    /// Per core, in core order: its subgraph and counters.
    pub cores: Vec<CoreRun>,
    /// Worker threads the cores ran on.
    pub threads: usize,
    /// Race and uninitialised-read findings of the round-robin run (empty unless checked),
    /// and the races between cores (always checked when there are several cores).
    pub findings: Vec<Finding>,
    /// Outputs that differ between schedules.
    pub schedule_diffs: Vec<ScheduleDiff>,
    /// The timeline of each core in the round-robin run (with [`RunConfig::timeline`]; empty
    /// otherwise).
    pub timelines: Vec<Timeline>,
    /// Project-defined details the executed ops relied on (not backed by public facts).
    pub project_defined: Vec<&'static str>,
}

impl RunOutput {
    /// The timeline of the first core (with [`RunConfig::timeline`]).
    pub fn timeline(&self) -> Option<&Timeline> {
        self.timelines.first()
    }
}

/// Why a run did not complete.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The NEFF does not describe a kernel the machine can load.
    #[error("{0}")]
    Load(#[from] LoadError),
    /// The caller's request does not fit the kernel (unknown input, wrong size, no arch).
    #[error("{0}")]
    Usage(String),
    /// The machine could not be set up (budget, variable sizes).
    #[error("{0}")]
    Setup(#[from] SetupError),
    /// The simulation faulted; `schedule` is 0 for the round-robin run.
    #[error("{}{fault}", rank.map(|r| format!("rank {r}: ")).unwrap_or_default())]
    Fault {
        /// The fault, with the core it happened on.
        fault: Box<CoreFault>,
        /// The rank it happened on, in a run of several ranks.
        rank: Option<usize>,
        /// Which schedule faulted.
        schedule: u32,
        /// The timelines up to the fault (with [`RunConfig::timeline`]), one per core.
        timelines: Vec<Timeline>,
    },
    /// The run was stopped through [`RunConfig::stop`] before it finished: no result.
    #[error("the run was interrupted")]
    Interrupted,
}

/// Load the kernel of a single-subgraph `neff`.
pub fn load_kernel(neff: &Neff) -> Result<Kernel, RunError> {
    Ok(load::kernel_from_neff(neff)?)
}

/// Load the program of `neff`: one kernel per subgraph (NeuronCore).
pub fn load_program(neff: &Neff) -> Result<Program, RunError> {
    Ok(load::program_from_neff(neff)?)
}

/// The generation to run `program` on: `arch`, else the NEFF's target.
pub fn generation(program: &Program, arch: Option<Gen>) -> Result<Gen, RunError> {
    arch.or(program.gen).ok_or_else(|| {
        RunError::Usage("the NEFF names no known target generation; pass an arch".into())
    })
}

/// Check `inputs` against the program's input variables: each names an input of the right
/// size, and every input without data in the NEFF is given.
pub fn check_inputs<D: AsRef<[u8]>>(
    program: &Program,
    inputs: &BTreeMap<String, D>,
) -> Result<(), RunError> {
    for (name, data) in inputs {
        let data = data.as_ref();
        let var = program
            .var(name)
            .ok_or_else(|| RunError::Usage(format!("the kernel has no variable `{name}`")))?;
        if var.kind != VarKind::Input {
            return Err(RunError::Usage(format!(
                "`{name}` is not an input variable"
            )));
        }
        if data.len() as u64 != var.size {
            return Err(RunError::Usage(format!(
                "input `{name}`: {} bytes given, the variable holds {} ({} {:?})",
                data.len(),
                var.size,
                var.format.name(),
                var.shape
            )));
        }
    }
    for v in program.inputs() {
        if !inputs.contains_key(&v.name) && v.init.is_none() {
            return Err(RunError::Usage(format!(
                "input `{}` has no data in the NEFF; pass it",
                v.name
            )));
        }
    }
    Ok(())
}

/// The order of schedule `i` (0 = round-robin, then seeded from `seed`).
pub fn order_of(seed: u64, i: u32) -> Order {
    if i == 0 {
        Order::RoundRobin
    } else {
        Order::Seeded(seed.wrapping_add(i as u64 - 1))
    }
}

/// Inputs shared by every core and every schedule: each given input copied once.
pub fn share_inputs<D: AsRef<[u8]>>(inputs: &BTreeMap<String, D>) -> BTreeMap<String, SharedBytes> {
    inputs
        .iter()
        .map(|(k, v)| (k.clone(), Arc::new(v.as_ref().to_vec()) as SharedBytes))
        .collect()
}

/// Run `program` as a world of `inputs.len()` ranks (one input map per rank; at least one),
/// each a copy of the program with its own DRAM, meeting at the collectives
/// (docs/collectives.md), under `cfg.schedules` interleavings (every rank runs schedule i in
/// the i-th run of the world); one [`RunOutput`] per rank, in rank order, with the outputs
/// of that rank that differ in another schedule. One rank is [`run_program`]'s run.
pub fn run_world<D: AsRef<[u8]>>(
    program: &Program,
    inputs: &[BTreeMap<String, D>],
    cfg: &RunConfig,
) -> Result<Vec<RunOutput>, RunError> {
    let gen = generation(program, cfg.arch)?;
    if inputs.is_empty() {
        return Err(RunError::Usage("a world needs at least one rank".into()));
    }
    for i in inputs {
        check_inputs(program, i)?;
    }
    let shared: Vec<_> = inputs.iter().map(share_inputs).collect();
    let mut base = run_world_schedule(program, gen, &shared, cfg, 0, &|_, _, _| {})?;
    for i in 1..cfg.schedules.max(1) {
        let other = run_world_schedule(program, gen, &shared, cfg, i, &|_, _, _| {})?;
        for (b, o) in base.iter_mut().zip(&other) {
            b.schedule_diffs
                .extend(schedule_diffs(&b.outputs, &o.outputs, cfg.seed, i));
        }
    }
    Ok(base)
}

/// The outputs of `base` (the round-robin run) that differ in `other`, the run of schedule
/// `i` (seeded from `seed`; see [`order_of`]).
fn schedule_diffs(
    base: &BTreeMap<String, VarBytes>,
    other: &BTreeMap<String, VarBytes>,
    seed: u64,
    i: u32,
) -> Vec<ScheduleDiff> {
    let seed = seed.wrapping_add(u64::from(i).saturating_sub(1));
    diff_outputs(base, other)
        .into_iter()
        .map(|d| ScheduleDiff {
            output: d.output,
            schedule: i,
            seed,
            first_byte: d.first_byte,
            bytes_differing: d.bytes_differing,
        })
        .collect()
}

/// Run `kernel` (one core) with `inputs`; see [`run_program`].
pub fn run_kernel<D: AsRef<[u8]>>(
    kernel: &Kernel,
    inputs: &BTreeMap<String, D>,
    cfg: &RunConfig,
) -> Result<RunOutput, RunError> {
    run_program(&Program::single(kernel.clone()), inputs, cfg)
}

/// Run `program` with `inputs` (raw little-endian bytes by input name, copied once; inputs
/// not given take the NEFF's own data) under `cfg.schedules` interleavings.
pub fn run_program<D: AsRef<[u8]>>(
    program: &Program,
    inputs: &BTreeMap<String, D>,
    cfg: &RunConfig,
) -> Result<RunOutput, RunError> {
    let gen = generation(program, cfg.arch)?;
    check_inputs(program, inputs)?;
    let shared = share_inputs(inputs);
    let base = run_schedule(program, gen, &shared, cfg, 0, &|_, _| {})?;
    let mut diffs = Vec::new();
    for i in 1..cfg.schedules.max(1) {
        let other = run_schedule(program, gen, &shared, cfg, i, &|_, _| {})?;
        diffs.extend(schedule_diffs(&base.outputs, &other.outputs, cfg.seed, i));
    }
    Ok(RunOutput {
        schedule_diffs: diffs,
        ..base
    })
}

/// One run of `program` on `gen` under schedule `schedule` of `cfg` (see [`order_of`]), the
/// inputs already checked ([`check_inputs`]) and shared ([`share_inputs`]); `progress` is told
/// each core's bundles issued so far (in all, per engine). The timelines are recorded for
/// schedule 0 with [`RunConfig::timeline`]; the copies of the outputs are charged to the
/// memory budget.
pub fn run_schedule(
    program: &Program,
    gen: Gen,
    inputs: &BTreeMap<String, SharedBytes>,
    cfg: &RunConfig,
    schedule: u32,
    progress: &(dyn Fn(usize, &SchedStats) + Sync),
) -> Result<RunOutput, RunError> {
    let mut cl = Cluster::new(program, gen, cfg.limits, inputs.clone())?;
    configure(&mut cl, cfg, schedule)?;
    let r = run_cluster(&mut cl, cfg, schedule, cfg.threads, progress);
    stopped(cfg)?;
    finish(program, gen, cl, r, schedule, None)
}

/// One run of `program` as `inputs.len()` ranks (a world; docs/collectives.md): rank `r`
/// holds `inputs[r]`, its own DRAM and its own cores, and the ranks' collectives meet. Every
/// core of every rank runs on its own thread; the outputs do not depend on the threads'
/// timing. One output per rank, in rank order; the first fault in rank order is returned.
pub fn run_world_schedule(
    program: &Program,
    gen: Gen,
    inputs: &[BTreeMap<String, SharedBytes>],
    cfg: &RunConfig,
    schedule: u32,
    progress: &(dyn Fn(usize, usize, &SchedStats) + Sync),
) -> Result<Vec<RunOutput>, RunError> {
    let ranks = inputs.len();
    let world = (ranks >= 2).then(|| world_comm(program, ranks, cfg.collective_order));
    let here: Vec<(usize, &BTreeMap<String, SharedBytes>)> = inputs.iter().enumerate().collect();
    run_ranks_schedule(
        program,
        gen,
        ranks,
        &here,
        world.map(|c| c as Arc<dyn Meeting>),
        cfg,
        schedule,
        progress,
    )
}

/// The meeting point of a world of `ranks` ranks of `program` (every core of every rank a
/// member), folding reductions in `order`.
pub fn world_comm(
    program: &Program,
    ranks: usize,
    order: crate::machine::collective::Order,
) -> Arc<Comm> {
    let cores = program.cores.len();
    let members =
        (0..ranks as u32).flat_map(|rank| (0..cores as u32).map(move |core| Member { rank, core }));
    Arc::new(Comm::new(members, order))
}

/// Check that `program` fits a world of `ranks` ranks: its replica groups and
/// `src_target_pairs` name no rank outside it.
pub fn check_world(program: &Program, ranks: usize) -> Result<(), RunError> {
    if ranks < 2 {
        return Ok(());
    }
    for k in &program.cores {
        for (g, group) in k.replica_groups.iter().enumerate() {
            if let Some(r) = group.iter().find(|&&r| r as usize >= ranks) {
                return Err(RunError::Setup(SetupError::World(format!(
                    "replica group {g} names rank {r}; the world has {ranks} ranks"
                ))));
            }
        }
        if let Some((s, t)) = k
            .src_target_pairs
            .iter()
            .find(|(s, t)| *s as usize >= ranks || *t as usize >= ranks)
        {
            return Err(RunError::Setup(SetupError::World(format!(
                "src_target_pairs names ranks {s} → {t}; the world has {ranks} ranks"
            ))));
        }
    }
    Ok(())
}

/// One run of some ranks of a world of `ranks` ranks (the ones `here` lists, each with its
/// inputs), their collectives meeting the other ranks' at `meeting` (`None` for a world of
/// one rank). The ranks not listed run elsewhere (another process: docs/mpi.md) and meet at
/// the same world. Every core of every rank listed runs on its own thread; the memory and DMA
/// budgets are shared evenly by the world's ranks, wherever they run. One output per rank of
/// `here`, in its order; the first fault in that order is returned. `progress` is told the
/// rank, the core and its counters.
#[allow(clippy::too_many_arguments)]
pub fn run_ranks_schedule(
    program: &Program,
    gen: Gen,
    ranks: usize,
    here: &[(usize, &BTreeMap<String, SharedBytes>)],
    meeting: Option<Arc<dyn Meeting>>,
    cfg: &RunConfig,
    schedule: u32,
    progress: &(dyn Fn(usize, usize, &SchedStats) + Sync),
) -> Result<Vec<RunOutput>, RunError> {
    check_world(program, ranks)?;
    let world = match meeting {
        Some(w) if ranks >= 2 => w,
        _ => {
            return here
                .iter()
                .map(|(r, inp)| {
                    run_schedule(program, gen, inp, cfg, schedule, &|c, s| progress(*r, c, s))
                })
                .collect();
        }
    };
    let cores = program.cores.len();
    // The memory and DMA budgets are the world's: each rank gets an even share.
    let share = RunConfig {
        limits: crate::machine::Limits {
            max_memory: cfg.limits.max_memory / ranks as u64,
            max_dma_bytes: cfg.limits.max_dma_bytes / ranks as u64,
        },
        ..cfg.clone()
    };
    let mut clusters = Vec::with_capacity(here.len());
    for (r, inp) in here {
        let mut cl = Cluster::new(program, gen, share.limits, (*inp).clone())?;
        configure(&mut cl, &share, schedule)?;
        for (c, m) in cl.cores.iter_mut().enumerate() {
            m.join_world(
                world.clone(),
                Member {
                    rank: *r as u32,
                    core: c as u32,
                },
            )?;
        }
        clusters.push(cl);
    }
    let results: Vec<Result<ClusterStats, Box<CoreFault>>> = std::thread::scope(|s| {
        let handles: Vec<_> = clusters
            .iter_mut()
            .zip(here)
            .map(|(cl, (r, _))| {
                let share = &share;
                s.spawn(move || {
                    run_cluster(cl, share, schedule, cores, &|c, st| progress(*r, c, st))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    stopped(cfg)?;
    let mut outs = Vec::with_capacity(here.len());
    for ((cl, res), (r, _)) in clusters.into_iter().zip(results).zip(here) {
        outs.push(finish(program, gen, cl, res, schedule, Some(*r))?);
    }
    Ok(outs)
}

/// [`RunError::Interrupted`] once `cfg`'s stop flag is set: a stopped run has no result,
/// whatever its cores had computed.
fn stopped(cfg: &RunConfig) -> Result<(), RunError> {
    match &cfg.stop {
        Some(s) if s.load(Ordering::SeqCst) => Err(RunError::Interrupted),
        _ => Ok(()),
    }
}

/// Install `cfg`'s validator, race check, timeline and stop flag on every core of `cl`.
fn configure(cl: &mut Cluster, cfg: &RunConfig, schedule: u32) -> Result<(), RunError> {
    for m in &mut cl.cores {
        if let Some(s) = &cfg.stop {
            m.set_stop(s.clone());
        }
        if let Some(v) = &cfg.validator {
            m.set_validator(v.clone());
        }
        if cfg.check_races {
            m.enable_race_check();
        }
        if cfg.timeline && schedule == 0 {
            m.enable_timeline();
        }
    }
    Ok(())
}

/// Run every core of `cl` under schedule `schedule` of `cfg` on up to `threads` threads.
fn run_cluster(
    cl: &mut Cluster,
    cfg: &RunConfig,
    schedule: u32,
    threads: usize,
    progress: &(dyn Fn(usize, &SchedStats) + Sync),
) -> Result<ClusterStats, Box<CoreFault>> {
    let opts = RunOptions {
        max_steps: cfg.max_steps,
        order: order_of(cfg.seed, schedule),
    };
    cl.run(&opts, threads, progress)
}

/// The output of a finished (or faulted) run of `cl`.
fn finish(
    program: &Program,
    gen: Gen,
    mut cl: Cluster,
    r: Result<ClusterStats, Box<CoreFault>>,
    schedule: u32,
    rank: Option<usize>,
) -> Result<RunOutput, RunError> {
    let timelines = |cl: &Cluster| -> Vec<Timeline> {
        cl.cores
            .iter()
            .filter_map(|m| m.timeline().cloned())
            .collect()
    };
    let stats = match r {
        Ok(s) => s,
        Err(fault) => {
            return Err(RunError::Fault {
                timelines: timelines(&cl),
                fault,
                rank,
                schedule,
            })
        }
    };
    // The copies of the outputs (and their encodings) are charged like the run's own memory.
    let outs = program.outputs();
    let out_bytes: u64 = outs.iter().map(|v| v.size).sum();
    if let Err(exceeded) =
        cl.cores[0].charge_memory("the copies of the outputs", out_bytes.saturating_mul(2))
    {
        return Err(RunError::Fault {
            fault: Box::new(CoreFault {
                core: 0,
                subgraph: program.core_name(0).to_string(),
                cores: program.cores.len(),
                fault: Fault::Budget {
                    at: "after the run".into(),
                    exceeded,
                },
            }),
            rank,
            schedule,
            timelines: Vec::new(),
        });
    }
    let names: Vec<String> = outs.iter().map(|v| v.name.clone()).collect();
    let outputs = names
        .into_iter()
        .map(|name| {
            let bytes = cl.take_output(&name).unwrap_or_default();
            (name, bytes)
        })
        .collect();
    let several = program.cores.len() > 1;
    let mut findings = Vec::new();
    for (c, m) in cl.cores.iter().enumerate() {
        findings.extend(m.race_findings().into_iter().map(|mut f| {
            if several {
                f.core = Some(c);
            }
            f
        }));
    }
    findings.extend(cl.core_races());
    let mut project_defined: Vec<&'static str> = Vec::new();
    for m in &cl.cores {
        for n in m.project_defined_notes() {
            if !project_defined.contains(&n) {
                project_defined.push(n);
            }
        }
    }
    Ok(RunOutput {
        gen,
        outputs,
        stats: stats.total(),
        cores: stats
            .cores
            .iter()
            .enumerate()
            .map(|(c, s)| CoreRun {
                subgraph: program.core_name(c).to_string(),
                stats: *s,
            })
            .collect(),
        threads: stats.threads,
        findings,
        schedule_diffs: Vec::new(),
        timelines: timelines(&cl),
        project_defined,
    })
}
