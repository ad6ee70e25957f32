//! `sim run`: execute a kernel NEFF on the machine model, write its outputs, compare them with
//! references. The model and the conventions are documented in `docs/machine.md`.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use tpbsim_isa::check::BundleCheck;
use tpbsim_isa::{Engine, Gen};
use tpbsim_neff::{self as neff, Neff};
use tpbsim_sim::api::{self, RunConfig, RunError};
use tpbsim_sim::machine::compare::{compare, Tolerance};
use tpbsim_sim::machine::core::SetupError;
use tpbsim_sim::machine::load::{self, dtype_of};
use tpbsim_sim::machine::remote::Placement;
use tpbsim_sim::machine::sched::Order;
use tpbsim_sim::machine::timeline::{Profile, Timeline};
use tpbsim_sim::machine::{CoreFault, Fault, Limits, Program, RunStats, SharedBytes, VarSpec};
use tpbsim_sim::machine::{SchedStats, VarKind};
use tpbsim_validate::l2::L2Check;

use crate::cmd::kernel_args::{KernelArgs, ScheduleArgs};
use crate::exit::{CliError, Outcome};

pub(crate) mod corpus;
mod inputs;
mod outputs;
mod progress;
mod report;
mod schedules;

use inputs::*;
pub(crate) use outputs::write_and_compare;
use outputs::*;
use progress::*;
use report::*;
pub(crate) use report::{render_report, Part, Printed};
#[cfg(feature = "mpi")]
pub(crate) use schedules::Share;
use schedules::*;
pub(crate) use schedules::{prepare, run_schedules, stop_report, Prepared};

/// A rendering of the cores' timelines (`sim profile --format neuron-profile-json`).
pub type TimelineRender = fn(&[Timeline], &Program, Gen) -> Value;

/// Arguments of `sim run`.
#[derive(clap::Args, Clone)]
#[command(mut_arg("out_dir", |a| a.help(
    "Directory for the output `.npy` files; OUT/<kernel stem>/ for each of several kernels \
     [default: KERNEL.out in the current directory]"
)))]
pub struct Args {
    /// Kernel, data, references and run limits (shared with `sim check` and `sim profile`).
    #[command(flatten)]
    pub common: KernelArgs,
    /// More kernel NEFFs: each runs as it would alone, in turn (or sharded over the processes
    /// with --mpi), and one report covers them all, in argument order; outputs go to
    /// OUT/<kernel stem>/, references come from REFDIR/<kernel stem>/ (see below).
    #[arg(value_name = "KERNEL")]
    pub more_kernels: Vec<PathBuf>,
    /// Print the summary and comparisons as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Check for cross-engine races, uninitialised reads and PSUM accumulation onto unzeroed
    /// banks (happens-before over semaphores, events and DMA completions; docs/races.md).
    #[arg(long)]
    pub check_races: bool,
    /// Interleavings to run (shared with `sim check`).
    #[command(flatten)]
    pub sched: ScheduleArgs,
    /// Write a Chrome/Perfetto trace-event JSON of the round-robin run (one track per engine and
    /// DMA queue; cost model in docs/trace.md).
    #[arg(long, value_name = "OUT.json")]
    pub trace: Option<PathBuf>,
    /// Print the timeline profile (set by `sim profile`).
    #[arg(skip)]
    pub profile: bool,
    /// Print this rendering of the timeline instead of the run's report (set by
    /// `sim profile --format neuron-profile-json`).
    #[arg(skip)]
    pub timeline_json: Option<TimelineRender>,
    /// Run the ranks over the processes of an MPI job (`mpirun -np P sim run --mpi ...`;
    /// a `sim` built with the `mpi` feature): each process runs its share of the ranks and
    /// writes their outputs, their collectives meet over MPI and fold as in one process;
    /// process 0 prints the report (docs/mpi.md).
    #[arg(long)]
    pub mpi: bool,
    /// How `--mpi` spreads the ranks over the processes: `blocks` (process p runs ranks
    /// p*N/P up to (p+1)*N/P) or `round-robin` (rank r on process r mod P).
    #[arg(long, value_enum, default_value_t = MpiPlacement::Blocks, requires = "mpi")]
    pub mpi_placement: MpiPlacement,
}

/// The placement of ranks on MPI processes (`--mpi-placement`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpiPlacement {
    /// Consecutive ranks on each process.
    Blocks,
    /// Rank r on process r mod P.
    RoundRobin,
}

impl From<MpiPlacement> for Placement {
    fn from(p: MpiPlacement) -> Self {
        match p {
            MpiPlacement::Blocks => Placement::Blocks,
            MpiPlacement::RoundRobin => Placement::RoundRobin,
        }
    }
}

/// A byte count with an optional K, M, G or T suffix (powers of 1024).
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(format!("`{s}`: unknown suffix `{c}` (K, M, G, T)")),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}`: expected a byte count such as 4096, 512M or 3G"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("`{s}`: more than 2^64 bytes"))
}

impl Args {
    /// `sim run` over `common` with `--json` as given and every other option at its default.
    pub fn with_common(common: KernelArgs, json: bool) -> Args {
        Args {
            common,
            more_kernels: Vec::new(),
            json,
            check_races: false,
            sched: ScheduleArgs::default(),
            trace: None,
            profile: false,
            timeline_json: None,
            mpi: false,
            mpi_placement: MpiPlacement::Blocks,
        }
    }

    /// The library's run configuration of these options.
    fn config(&self, gen: Gen) -> RunConfig {
        let c = &self.common;
        RunConfig {
            arch: Some(gen),
            check_races: self.check_races,
            schedules: self.sched.schedules,
            seed: self.sched.seed,
            max_steps: c.max_steps,
            limits: Limits {
                max_memory: c.max_memory,
                max_dma_bytes: c.max_dma_bytes,
            },
            validator: (!c.no_validate).then(|| Arc::new(L2Check) as Arc<dyn BundleCheck>),
            timeline: self.trace.is_some() || self.profile,
            threads: c.threads,
            collective_order: c.collective_order.into(),
            // Ctrl-C ends the process.
            stop: None,
        }
    }
}

fn describe_order(o: Order) -> String {
    match o {
        Order::RoundRobin => "round-robin".to_string(),
        Order::Seeded(s) => format!("seed {s}"),
    }
}

/// A difference between the outputs of two schedules.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct ScheduleDiff {
    /// The rank, in a run of several ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<usize>,
    output: String,
    schedule: u32,
    order: String,
    first_byte: usize,
    bytes_differing: usize,
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

fn split_kv<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str), CliError> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| usage(format!("--{flag} `{s}`: expected NAME=FILE.npy")))
}

/// Run `sim run`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    execute(a, true)
}

/// Run a kernel, or each of several in turn (`corpus`); write the outputs (`write_outputs`,
/// or when `--out-dir` is given). With `--mpi`, the ranks of one kernel, or the kernels of
/// several, run over the processes of an MPI job (docs/mpi.md).
pub fn execute(a: Args, write_outputs: bool) -> Result<Outcome, CliError> {
    if a.mpi {
        return execute_mpi(&a, write_outputs);
    }
    if !a.more_kernels.is_empty() {
        return corpus::run(&a, write_outputs);
    }
    let progress = shows_progress(
        a.json,
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    match run_kernel(&a, write_outputs, progress) {
        Ok((outcome, printed)) => {
            printed.print();
            Ok(outcome)
        }
        Err((e, obj)) => {
            if let Some(obj) = obj {
                println!("{obj}");
            }
            Err(e)
        }
    }
}

/// Run one kernel in this process (with a progress bar when `progress`): the verdict and the
/// report, or the error and, with `--json`, the object that reports it.
pub(crate) fn run_kernel(
    a: &Args,
    write_outputs: bool,
    progress: bool,
) -> Result<(Outcome, Printed), (CliError, Option<Value>)> {
    let prep = prepare(a, write_outputs, None).map_err(|e| (e, None))?;
    let runner = |schedule: u32, progress: &(dyn Fn(usize, usize, &SchedStats) + Sync)| {
        api::run_world_schedule(
            &prep.program,
            prep.gen,
            &prep.given,
            &prep.cfg,
            schedule,
            progress,
        )
    };
    let ran = run_schedules(a, &prep, &runner, progress).map_err(|s| stop_report(a, &prep, s))?;
    let (part, written) = write_and_compare(a, &prep, &ran).map_err(|e| (e, None))?;
    let all_timelines: Vec<(String, &Timeline)> = ran
        .base
        .iter()
        .zip(&prep.here)
        .flat_map(|(o, r)| core_names(&prep.program, prep.rank_label(*r), &o.timelines))
        .collect();
    if let (Some(path), false) = (&a.trace, all_timelines.is_empty()) {
        if let Err(e) = write_trace(path, &all_timelines) {
            for p in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err((e, None));
        }
    }
    if let Some(render) = a.timeline_json {
        let ts: Vec<Timeline> = all_timelines.iter().map(|(_, t)| (*t).clone()).collect();
        if !ts.is_empty() {
            let obj = render(&ts, &prep.program, prep.gen);
            return Ok((part.outcome(), Printed::Json(obj)));
        }
    }
    let profiles: Vec<(String, Profile)> = if a.profile {
        all_timelines
            .iter()
            .map(|(n, t)| (n.clone(), t.profile()))
            .collect()
    } else {
        Vec::new()
    };
    Ok(render_report(a, &prep, &part, &profiles, None))
}

#[cfg(not(feature = "mpi"))]
fn execute_mpi(_: &Args, _: bool) -> Result<Outcome, CliError> {
    Err(usage(
        "--mpi: this sim was built without MPI; build it with `cargo build --release --features mpi` (docs/mpi.md)",
    ))
}

#[cfg(feature = "mpi")]
fn execute_mpi(a: &Args, write_outputs: bool) -> Result<Outcome, CliError> {
    if a.more_kernels.is_empty() {
        crate::mpi::run(a, write_outputs)
    } else {
        crate::mpi::run_corpus(a, write_outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_only_on_a_terminal_without_json() {
        assert!(shows_progress(false, true, true));
        assert!(!shows_progress(true, true, true));
        assert!(!shows_progress(false, false, true));
        assert!(!shows_progress(false, true, false));
    }

    #[test]
    fn progress_names_the_engines_that_issued() {
        let st = tpbsim_sim::machine::SchedStats {
            steps: 7,
            per_engine: [2, 0, 0, 5, 0],
            rounds: 5,
        };
        assert_eq!(progress_message(&st), "pe 2, dve 5");
    }

    #[test]
    fn parts_of_processes_merge_in_rank_and_schedule_order() {
        let report = |rank: usize| RankReport {
            rank,
            stats: RunStats::default(),
            cores: Vec::new(),
            threads: 1,
            compared: Vec::new(),
            written: Vec::new(),
            findings: Vec::new(),
            notes: Vec::new(),
        };
        let diff = |rank: usize, schedule: u32| ScheduleDiff {
            rank: Some(rank),
            output: "y".into(),
            schedule,
            order: String::new(),
            first_byte: 0,
            bytes_differing: 1,
        };
        // Round-robin placement: process 0 runs ranks 0 and 2, process 1 ranks 1 and 3.
        let p0 = Part {
            reports: vec![report(0), report(2)],
            diffs: vec![diff(0, 2), diff(2, 1)],
            changed: vec![2],
        };
        let p1 = Part {
            reports: vec![report(1), report(3)],
            diffs: vec![diff(1, 1)],
            changed: vec![1, 2],
        };
        let all = Part::merge(vec![p0, p1]);
        let ranks: Vec<usize> = all.reports.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, [0, 1, 2, 3]);
        let diffs: Vec<(u32, Option<usize>)> =
            all.diffs.iter().map(|d| (d.schedule, d.rank)).collect();
        assert_eq!(diffs, [(1, Some(1)), (1, Some(2)), (2, Some(0))]);
        assert_eq!(all.changed, [1, 2]);
        assert_eq!(all.outcome(), Outcome::Invalid);
        assert_eq!(Part::merge(vec![Part::default()]).outcome(), Outcome::Ok);
    }

    #[test]
    fn byte_counts_with_suffixes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("3g"), Ok(3 << 30));
        assert!(parse_bytes("16777216T").unwrap_err().contains("2^64"));
        assert!(parse_bytes("3X").unwrap_err().contains("unknown suffix"));
        assert!(parse_bytes("M").is_err());
    }

    #[test]
    fn output_names_are_plain_file_names() {
        for ok in ["out", "a.b", "x-1", "..a", "a..b"] {
            assert!(check_output_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "../x", "/abs/x", "a/b", "a\\b", "a\0b"] {
            assert!(check_output_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_output_name(&"x".repeat(251)).is_err());
    }
}
