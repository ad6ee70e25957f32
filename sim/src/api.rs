//! Library entry point for running a kernel: inputs by name in, outputs by name out, with the
//! run's counters and race findings. It composes the same steps as `sim run` (load the kernel
//! from a NEFF, set the inputs, run the machine under one or more schedules) for callers that
//! hold their data in memory rather than in `.npy` files.

use std::collections::BTreeMap;

use tpbsim_isa::neff::Neff;
use tpbsim_isa::Gen;

use crate::machine::core::SetupError;
use crate::machine::load::{self, LoadError};
use crate::machine::race::Finding;
use crate::machine::sched::{Order, SchedStats};
use crate::machine::timeline::Timeline;
use crate::machine::{
    Fault, Kernel, Limits, Machine, RunOptions, RunStats, VarKind, DEFAULT_MAX_STEPS,
};

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
    /// Validate each bundle with L2 before it executes.
    pub validate: bool,
    /// Record the timeline of the round-robin run (cost model in `docs/trace.md`), for
    /// [`RunOutput::timeline`] and its profile.
    pub timeline: bool,
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
            validate: true,
            timeline: false,
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
pub fn diff_outputs(
    a: &BTreeMap<String, Vec<u8>>,
    b: &BTreeMap<String, Vec<u8>>,
) -> Vec<OutputDiff> {
    let mut v = Vec::new();
    for (name, x) in a {
        let Some(y) = b.get(name) else {
            continue;
        };
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

/// The result of a run.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The generation the kernel ran on.
    pub gen: Gen,
    /// Each output variable's bytes, by name.
    pub outputs: BTreeMap<String, Vec<u8>>,
    /// Counters of the round-robin run.
    pub stats: RunStats,
    /// Race and uninitialised-read findings of the round-robin run (empty unless checked).
    pub findings: Vec<Finding>,
    /// Outputs that differ between schedules.
    pub schedule_diffs: Vec<ScheduleDiff>,
    /// The timeline of the round-robin run (with [`RunConfig::timeline`]).
    pub timeline: Option<Timeline>,
    /// Project-defined details the executed ops relied on (not backed by public facts).
    pub project_defined: Vec<&'static str>,
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
    #[error("{fault}")]
    Fault {
        /// The fault.
        fault: Fault,
        /// Which schedule faulted.
        schedule: u32,
        /// The timeline up to the fault (with [`RunConfig::timeline`]).
        timeline: Option<Box<Timeline>>,
    },
}

/// Load the kernel of `neff`.
pub fn load_kernel(neff: &Neff) -> Result<Kernel, RunError> {
    Ok(load::kernel_from_neff(neff)?)
}

/// The generation to run `kernel` on: `arch`, else the NEFF's target.
pub fn generation(kernel: &Kernel, arch: Option<Gen>) -> Result<Gen, RunError> {
    arch.or(kernel.gen).ok_or_else(|| {
        RunError::Usage("the NEFF names no known target generation; pass an arch".into())
    })
}

/// Check `inputs` against the kernel's input variables: each names an input of the right size,
/// and every input without data in the NEFF is given.
pub fn check_inputs<D: AsRef<[u8]>>(
    kernel: &Kernel,
    inputs: &BTreeMap<String, D>,
) -> Result<(), RunError> {
    for (name, data) in inputs {
        let data = data.as_ref();
        let var = kernel
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
    for v in kernel.vars.iter().filter(|v| v.kind == VarKind::Input) {
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

/// Run `kernel` with `inputs` (raw little-endian bytes by input name, copied once into the
/// machine; inputs not given take the NEFF's own data) under `cfg.schedules` interleavings.
pub fn run_kernel<D: AsRef<[u8]>>(
    kernel: &Kernel,
    inputs: &BTreeMap<String, D>,
    cfg: &RunConfig,
) -> Result<RunOutput, RunError> {
    let gen = generation(kernel, cfg.arch)?;
    check_inputs(kernel, inputs)?;
    let base = run_schedule(kernel, gen, inputs, cfg, 0, &mut |_| {})?;
    let mut schedule_diffs = Vec::new();
    for i in 1..cfg.schedules.max(1) {
        let other = run_schedule(kernel, gen, inputs, cfg, i, &mut |_| {})?;
        let seed = cfg.seed.wrapping_add(i as u64 - 1);
        schedule_diffs.extend(
            diff_outputs(&base.outputs, &other.outputs)
                .into_iter()
                .map(|d| ScheduleDiff {
                    output: d.output,
                    schedule: i,
                    seed,
                    first_byte: d.first_byte,
                    bytes_differing: d.bytes_differing,
                }),
        );
    }
    Ok(RunOutput {
        schedule_diffs,
        ..base
    })
}

/// One run of `kernel` on `gen` under schedule `schedule` of `cfg` (see [`order_of`]), the
/// inputs already checked ([`check_inputs`]); `progress` is told the bundles issued so far
/// (in all, per engine). The
/// timeline is recorded for schedule 0 with [`RunConfig::timeline`]; the copies of the outputs
/// are charged to the memory budget.
pub fn run_schedule<D: AsRef<[u8]>>(
    kernel: &Kernel,
    gen: Gen,
    inputs: &BTreeMap<String, D>,
    cfg: &RunConfig,
    schedule: u32,
    progress: &mut dyn FnMut(&SchedStats),
) -> Result<RunOutput, RunError> {
    let order = order_of(cfg.seed, schedule);
    let mut m = Machine::with_limits(kernel, gen, cfg.limits)?;
    for (name, data) in inputs {
        m.set_var(name, data.as_ref())?;
    }
    if cfg.validate {
        m.validate_with_l2();
    }
    if cfg.check_races {
        m.enable_race_check();
    }
    if cfg.timeline && schedule == 0 {
        m.enable_timeline();
    }
    let opts = RunOptions {
        max_steps: cfg.max_steps,
        order,
    };
    let fault = |m: &Machine, fault: Fault| RunError::Fault {
        fault,
        schedule,
        timeline: m.timeline().cloned().map(Box::new),
    };
    let stats = match m.run(&opts, progress) {
        Ok(s) => s,
        Err(f) => return Err(fault(&m, f)),
    };
    // The copies of the outputs (and their encodings) are charged like the run's own memory.
    let out_bytes: u64 = kernel
        .vars
        .iter()
        .filter(|v| v.kind == VarKind::Output)
        .map(|v| v.size)
        .sum();
    if let Err(exceeded) = m.charge_memory("the copies of the outputs", out_bytes.saturating_mul(2))
    {
        return Err(RunError::Fault {
            fault: Fault::Budget {
                at: "after the run".into(),
                exceeded,
            },
            schedule,
            timeline: None,
        });
    }
    let outputs = kernel
        .vars
        .iter()
        .filter(|v| v.kind == VarKind::Output)
        .map(|v| (v.name.clone(), m.var(&v.name).unwrap_or_default().to_vec()))
        .collect();
    Ok(RunOutput {
        gen,
        outputs,
        stats,
        findings: m.race_findings(),
        schedule_diffs: Vec::new(),
        timeline: m.timeline().cloned(),
        project_defined: m.project_defined_notes(),
    })
}
