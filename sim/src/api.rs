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
use crate::machine::sched::Order;
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
    },
}

/// Load the kernel of `neff`.
pub fn load_kernel(neff: &Neff) -> Result<Kernel, RunError> {
    Ok(load::kernel_from_neff(neff)?)
}

/// Run `kernel` with `inputs` (raw little-endian bytes by input name; inputs not given take the
/// NEFF's own data).
pub fn run_kernel(
    kernel: &Kernel,
    inputs: &BTreeMap<String, Vec<u8>>,
    cfg: &RunConfig,
) -> Result<RunOutput, RunError> {
    let gen = cfg.arch.or(kernel.gen).ok_or_else(|| {
        RunError::Usage("the NEFF names no known target generation; pass an arch".into())
    })?;
    for (name, data) in inputs {
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
    let schedules = cfg.schedules.max(1);
    let base =
        run_once(kernel, gen, inputs, cfg, Order::RoundRobin).map_err(|e| with_schedule(e, 0))?;
    let mut schedule_diffs = Vec::new();
    for i in 1..schedules {
        let seed = cfg.seed.wrapping_add(i as u64 - 1);
        let other = run_once(kernel, gen, inputs, cfg, Order::Seeded(seed))
            .map_err(|e| with_schedule(e, i))?;
        for (name, x) in &base.outputs {
            let Some(y) = other.outputs.get(name) else {
                continue;
            };
            let n = x.iter().zip(y).filter(|(p, q)| p != q).count();
            if n > 0 {
                schedule_diffs.push(ScheduleDiff {
                    output: name.clone(),
                    schedule: i,
                    seed,
                    first_byte: x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(0),
                    bytes_differing: n,
                });
            }
        }
    }
    Ok(RunOutput {
        schedule_diffs,
        ..base
    })
}

fn with_schedule(e: RunError, schedule: u32) -> RunError {
    match e {
        RunError::Fault { fault, .. } => RunError::Fault { fault, schedule },
        e => e,
    }
}

fn run_once(
    kernel: &Kernel,
    gen: Gen,
    inputs: &BTreeMap<String, Vec<u8>>,
    cfg: &RunConfig,
    order: Order,
) -> Result<RunOutput, RunError> {
    let mut m = Machine::with_limits(kernel, gen, cfg.limits)?;
    for (name, data) in inputs {
        m.set_var(name, data)?;
    }
    if cfg.validate {
        m.validate_with_l2();
    }
    if cfg.check_races {
        m.enable_race_check();
    }
    let stats = m
        .run(
            &RunOptions {
                max_steps: cfg.max_steps,
                order,
            },
            &mut |_| {},
        )
        .map_err(|fault| RunError::Fault { fault, schedule: 0 })?;
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
    })
}
