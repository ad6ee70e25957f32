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

/// A rendering of the cores' timelines (`sim profile --format neuron-profile-json`).
pub type TimelineRender = fn(&[Timeline], &Program, Gen) -> Value;

/// Arguments of `sim run`.
#[derive(clap::Args)]
#[command(mut_arg("out_dir", |a| a.help(
    "Directory for the output `.npy` files [default: KERNEL.out in the current directory]"
)))]
pub struct Args {
    /// Kernel, data, references and run limits (shared with `sim check` and `sim profile`).
    #[command(flatten)]
    pub common: KernelArgs,
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

/// The stem of the kernel file (`softmax` for `dir/softmax.neff`).
fn stem(p: &Path) -> String {
    p.file_stem().map_or_else(
        || "kernel".to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// Read an `.npy` file of at most `max_data` data bytes (any file type: a pipe or device is read
/// up to the limit). The data is read once, straight into the buffer the run shares with every
/// core, so a large input costs its own size in memory once. It is read rather than mapped: a
/// mapped file truncated by another process while the run reads it would kill the process
/// (SIGBUS) instead of giving an error.
fn read_npy(path: &Path, max_data: u64) -> Result<neff::NpyArray, CliError> {
    let named = |e: &dyn std::fmt::Display| usage(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| named(&e))?;
    if file.metadata().map_err(|e| named(&e))?.is_dir() {
        return Err(named(&"is a directory"));
    }
    neff::npy::read_npy_from(file, max_data).map_err(|e| match e {
        neff::npy::NpyError::Io { source, .. } => named(&source),
        e => named(&e),
    })
}

/// An `--input` array for `var`: mapped in place when its bytes are the variable's as they lie
/// (a regular little-endian C-order file), else read once ([`read_npy`]); checked against the
/// variable's dtype and shape either way.
fn input_data(var: &VarSpec, path: &Path) -> Result<SharedBytes, CliError> {
    let what = path.display().to_string();
    match neff::npy::map_npy_file(path, var.size) {
        Ok(Some(m)) => {
            check_meta(var, &m.meta, &what)?;
            Ok(Arc::new(m))
        }
        Ok(None) => Ok(Arc::new(checked_data(
            var,
            read_npy(path, var.size)?,
            &what,
        )?)),
        Err(neff::npy::NpyError::Io { source, .. }) => Err(usage(format!("{what}: {source}"))),
        Err(e) => Err(usage(format!("{what}: {e}"))),
    }
}

/// Check that an output variable's name is a plain file-name component, so that its `.npy`
/// file lands inside the output directory.
fn check_output_name(name: &str) -> Result<(), CliError> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." {
        Some("it is `.` or `..`")
    } else if name.contains('/') || name.contains('\\') {
        Some("it holds a path separator")
    } else if name.contains('\0') {
        Some("it holds a NUL byte")
    } else if name.len() > 250 {
        Some("it is longer than 250 bytes")
    } else {
        None
    };
    match why {
        Some(why) => Err(usage(format!(
            "output variable `{}`: its name cannot be an output file name ({why}); outputs are written as NAME.npy inside the output directory",
            name.escape_debug()
        ))),
        None => Ok(()),
    }
}

/// Check every file the run will write before the simulation starts: each output directory
/// (a directory, or absent) and each target (absent or a regular file), and the trace; none of
/// them may be a file the run reads (`read`: the kernel, inputs, references, tolerances).
fn check_targets(
    a: &Args,
    program: &Program,
    out_dirs: Option<&[PathBuf]>,
    read: &[PathBuf],
) -> Result<(), CliError> {
    let io = |p: &Path, e: std::io::Error| CliError::Io(format!("{}: {e}", p.display()));
    let not_read = |target: &Path, what: &str| -> Result<(), CliError> {
        match read.iter().find(|r| same_file(target, r)) {
            Some(r) => Err(usage(format!(
                "{}: the {what} would overwrite {}, which this run reads; choose another path",
                target.display(),
                r.display()
            ))),
            None => Ok(()),
        }
    };
    for dir in out_dirs.unwrap_or_default() {
        match std::fs::metadata(dir) {
            Ok(m) if !m.is_dir() => {
                return Err(CliError::Io(format!(
                    "{}: the output directory is not a directory",
                    dir.display()
                )))
            }
            _ => {}
        }
        for v in program.outputs() {
            let p = dir.join(format!("{}.npy", v.name));
            tpbsim_isa::fsio::check_target(&p).map_err(|e| io(&p, e))?;
            not_read(&p, &format!("output `{}`", v.name))?;
        }
    }
    if let Some(t) = &a.trace {
        tpbsim_isa::fsio::check_target(t).map_err(|e| io(t, e))?;
        not_read(t, "trace")?;
        for dir in out_dirs.unwrap_or_default() {
            for v in program.outputs() {
                let p = dir.join(format!("{}.npy", v.name));
                if same_path(t, &p) {
                    return Err(usage(format!(
                        "--trace {}: the trace would overwrite output `{}`; choose another path",
                        t.display(),
                        v.name
                    )));
                }
            }
        }
        if let Some(parent) = t.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(CliError::Io(format!(
                    "{}: the trace's directory {} does not exist",
                    t.display(),
                    parent.display()
                )));
            }
        }
    }
    Ok(())
}

/// Whether two paths name the same existing file (same device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Whether two paths name the same file, existing or not: the same file, or the same name in
/// the same (existing) directory.
fn same_path(a: &Path, b: &Path) -> bool {
    if same_file(a, b) {
        return true;
    }
    let parent = |p: &Path| -> PathBuf {
        match p.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        }
    };
    a.file_name().is_some()
        && a.file_name() == b.file_name()
        && (parent(a) == parent(b) || same_file(&parent(a), &parent(b)))
}

/// Write the Chrome/Perfetto trace of the cores' timelines to `path` (one process per core).
fn write_trace(path: &Path, cores: &[(String, &Timeline)]) -> Result<(), CliError> {
    let text = serde_json::to_vec(&Timeline::cores_to_chrome(cores))
        .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
    neff::write_atomic(path, &text).map_err(|e| CliError::Io(format!("{}: {e}", path.display())))
}

/// Check an array against a variable's dtype and shape; returns its bytes.
fn checked_data(var: &VarSpec, arr: neff::NpyArray, what: &str) -> Result<Vec<u8>, CliError> {
    check_meta(var, &arr, what)?;
    Ok(arr.data)
}

/// Check an array's dtype and shape against a variable's.
fn check_meta(var: &VarSpec, arr: &neff::NpyArray, what: &str) -> Result<(), CliError> {
    let dtype = dtype_of(var.format)
        .ok_or_else(|| usage(format!("variable `{}` has no npy dtype", var.name)))?;
    arr.resolve(dtype).map_err(|e| {
        usage(format!(
            "{what}: {e} (variable `{}` is {})",
            var.name,
            var.format.name()
        ))
    })?;
    let shape: Vec<usize> = arr.shape.iter().map(|&d| d as usize).collect();
    if shape != var.shape {
        return Err(usage(format!(
            "{what}: shape {shape:?}, variable `{}` has shape {:?}",
            var.name, var.shape
        )));
    }
    Ok(())
}

/// Tolerances from `tolerance.json`: `{"default": {...}, "outputs": {"NAME": {...}}}`;
/// unknown keys are refused.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ToleranceFile {
    #[serde(default)]
    default: Option<Tolerance>,
    #[serde(default)]
    outputs: BTreeMap<String, Tolerance>,
}

#[derive(Default)]
struct Refs {
    files: BTreeMap<String, PathBuf>,
    tolerances: ToleranceFile,
    /// The `tolerance.json` read, if any.
    tolerance_file: Option<PathBuf>,
}

/// The references of each of `ranks` ranks: `--ref NAME=FILE` (FILE may name `{rank}`), else
/// the reference directory (`--ref-dir`, or `KERNEL.ref` beside the NEFF), whose `rank{r}/`
/// subdirectory holds rank r's in a run of several ranks. Only the ranks `here` (run by
/// this process) get theirs.
fn find_refs(
    a: &KernelArgs,
    program: &Program,
    ranks: usize,
    here: &[usize],
) -> Result<Vec<Refs>, CliError> {
    if !a.refs.is_empty() {
        let mut per: Vec<Refs> = (0..ranks).map(|_| Refs::default()).collect();
        for r in &a.refs {
            let (name, file) = split_kv("ref", r)?;
            if !program.outputs().iter().any(|v| v.name == name) {
                return Err(usage(format!(
                    "--ref {name}: the kernel has no output `{name}`"
                )));
            }
            for (k, refs) in per.iter_mut().enumerate().filter(|(k, _)| here.contains(k)) {
                refs.files.insert(
                    name.to_string(),
                    PathBuf::from(file.replace("{rank}", &k.to_string())),
                );
            }
        }
        return Ok(per);
    }
    let dir = if let Some(d) = &a.ref_dir {
        if !d.is_dir() {
            return Err(usage(format!("--ref-dir {}: not a directory", d.display())));
        }
        Some(d.clone())
    } else {
        let d = a.kernel.with_file_name(format!("{}.ref", stem(&a.kernel)));
        d.is_dir().then_some(d)
    };
    let Some(dir) = dir else {
        return Ok((0..ranks).map(|_| Refs::default()).collect());
    };
    per_rank_dirs(&dir, ranks)
        .iter()
        .enumerate()
        .map(|(r, d)| {
            if !here.contains(&r) {
                return Ok(Refs::default());
            }
            if !d.is_dir() {
                return Err(usage(format!(
                    "{}: no reference directory for this rank; a run of {ranks} ranks reads rank r's references from {}/rank{{r}}/",
                    d.display(),
                    dir.display()
                )));
            }
            refs_in(d, &dir, program)
        })
        .collect()
}

/// The references in `d` (one per output) and the tolerances of `d/tolerance.json`, else of
/// `top/tolerance.json`.
fn refs_in(d: &Path, top: &Path, program: &Program) -> Result<Refs, CliError> {
    let mut refs = Refs::default();
    // A reference directory covers every output: one without the file is an error, not an
    // output silently left unchecked.
    for v in program.outputs() {
        let p = d.join(format!("{}.npy", v.name));
        if !p.exists() {
            return Err(usage(format!(
                "{}: no reference for output `{}` in the reference directory; give each output a NAME.npy there, or pass --ref NAME=FILE.npy for the outputs to compare",
                p.display(),
                v.name
            )));
        }
        refs.files.insert(v.name.clone(), p);
    }
    let t = [d.join("tolerance.json"), top.join("tolerance.json")]
        .into_iter()
        .find(|t| t.exists());
    if let Some(t) = t {
        let text = crate::cmd::read_text(&t, 1 << 20)?;
        let tf: ToleranceFile =
            serde_json::from_str(&text).map_err(|e| usage(format!("{}: {e}", t.display())))?;
        if let Some(name) = tf
            .outputs
            .keys()
            .find(|n| !program.outputs().iter().any(|v| &v.name == *n))
        {
            return Err(usage(format!(
                "{}: `outputs` names `{name}`, which is not an output of the kernel",
                t.display()
            )));
        }
        refs.tolerances = tf;
        refs.tolerance_file = Some(t);
    }
    Ok(refs)
}

fn tolerance_for(a: &KernelArgs, refs: &Refs, name: &str) -> Tolerance {
    let mut t = refs
        .tolerances
        .outputs
        .get(name)
        .copied()
        .or(refs.tolerances.default)
        .unwrap_or_default();
    if let Some(x) = a.atol {
        t.atol = x;
    }
    if let Some(x) = a.rtol {
        t.rtol = x;
    }
    if let Some(x) = a.ulp {
        t.ulp = x;
    }
    t
}

fn summary_json(stats: &RunStats) -> Value {
    let per: serde_json::Map<String, Value> = Engine::ALL
        .iter()
        .map(|e| {
            (
                e.short().to_string(),
                stats.sched.per_engine[*e as usize].into(),
            )
        })
        .collect();
    let secs = stats.wall.as_secs_f64();
    json!({
        "bundles": per,
        "steps": stats.sched.steps,
        "dma_bytes": stats.dma_bytes,
        "dma_transfers": stats.dma_transfers,
        "wall_seconds": secs,
        "bundles_per_second": if secs > 0.0 { stats.sched.steps as f64 / secs } else { 0.0 },
    })
}

fn print_summary(stats: &RunStats) {
    let per: Vec<String> = Engine::ALL
        .iter()
        .map(|e| format!("{} {}", e.short(), stats.sched.per_engine[*e as usize]))
        .collect();
    let secs = stats.wall.as_secs_f64();
    let rate = if secs > 0.0 {
        stats.sched.steps as f64 / secs
    } else {
        0.0
    };
    println!(
        "ran {} bundles ({}), DMA {} bytes in {} transfers, {:.3} ms, {:.0} bundles/s",
        stats.sched.steps,
        per.join(", "),
        stats.dma_bytes,
        stats.dma_transfers,
        secs * 1e3,
        rate
    );
}

/// Run `sim run`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    execute(a, true)
}

/// Run a kernel; write the outputs (`write_outputs`, or when `--out-dir` is given). With
/// `--mpi`, the ranks run over the processes of an MPI job (docs/mpi.md).
pub fn execute(a: Args, write_outputs: bool) -> Result<Outcome, CliError> {
    if a.mpi {
        return execute_mpi(&a, write_outputs);
    }
    let prep = prepare(&a, write_outputs, None)?;
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
    let progress = shows_progress(
        a.json,
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    let ran = match run_schedules(&a, &prep, &runner, progress) {
        Ok(r) => r,
        Err(s) => {
            let (err, obj) = stop_report(&a, &prep, s);
            if let Some(obj) = obj {
                println!("{obj}");
            }
            return Err(err);
        }
    };
    let (part, written) = write_and_compare(&a, &prep, &ran)?;
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
            return Err(e);
        }
    }
    if let Some(render) = a.timeline_json {
        let ts: Vec<Timeline> = all_timelines.iter().map(|(_, t)| (*t).clone()).collect();
        if !ts.is_empty() {
            println!("{}", render(&ts, &prep.program, prep.gen));
            return Ok(part.outcome());
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
    Ok(print_report(&a, &prep, &part, &profiles, None))
}

#[cfg(not(feature = "mpi"))]
fn execute_mpi(_: &Args, _: bool) -> Result<Outcome, CliError> {
    Err(usage(
        "--mpi: this sim was built without MPI; build it with `cargo build --release --features mpi` (docs/mpi.md)",
    ))
}

#[cfg(feature = "mpi")]
fn execute_mpi(a: &Args, write_outputs: bool) -> Result<Outcome, CliError> {
    crate::mpi::run(a, write_outputs)
}

/// The part of a world one process runs (a run over MPI; docs/mpi.md).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Share {
    /// This process.
    pub process: usize,
    /// Processes of the job.
    pub processes: usize,
    /// How the ranks are spread over them.
    pub placement: Placement,
}

/// A kernel ready to run: loaded, with the inputs and references of the ranks this process
/// runs, its output targets checked.
pub(crate) struct Prepared {
    pub program: Program,
    pub gen: Gen,
    /// Ranks of the world.
    pub ranks: usize,
    /// The ranks this process runs, in rank order.
    pub here: Vec<usize>,
    /// The output directory of each rank of the world.
    out_dirs: Vec<PathBuf>,
    /// The inputs given for each rank of the world (none for the ranks run elsewhere).
    pub given: Vec<BTreeMap<String, SharedBytes>>,
    /// The references of each rank of the world (none for the ranks run elsewhere).
    refs: Vec<Refs>,
    pub cfg: RunConfig,
    write_outputs: bool,
}

impl Prepared {
    /// The inputs of the ranks this process runs, with their ranks.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn inputs_here(&self) -> Vec<(usize, &BTreeMap<String, SharedBytes>)> {
        self.here.iter().map(|&r| (r, &self.given[r])).collect()
    }

    /// `Some(rank)` in a world of several ranks (to label what belongs to one).
    fn rank_label(&self, r: usize) -> Option<usize> {
        (self.ranks > 1).then_some(r)
    }
}

/// Load the kernel, read the inputs and find the references of the ranks this process runs
/// (every rank, or those `share` gives it), check every file the run will write.
pub(crate) fn prepare(
    a: &Args,
    write_outputs: bool,
    share: Option<&Share>,
) -> Result<Prepared, CliError> {
    let c = &a.common;
    let write_outputs = write_outputs || c.out_dir.is_some();
    let n = Neff::read(&c.kernel, &c.read.options())
        .map_err(|e| usage(crate::cmd::neff::error_text(&c.kernel, &e)))?;
    let program =
        api::load_program(&n).map_err(|e| usage(format!("{}: {e}", c.kernel.display())))?;
    let gen = c.arch.or(program.gen).ok_or_else(|| {
        usage(format!(
            "{}: the NEFF names {}; pass --arch v2|v3|v4|v5",
            c.kernel.display(),
            load::target_source(&n)
        ))
    })?;
    // The program holds what the run needs: the archive's members are not kept through it.
    drop(n);
    let world = program.world();
    let ranks = c.ranks.map_or(world, |r| r as usize);
    if ranks < world {
        return Err(usage(format!(
            "{}: --ranks {ranks}: the NEFF's collectives span {world} ranks (its replica groups, src_target_pairs or #rank_world_size); pass --ranks {world} or more",
            c.kernel.display()
        )));
    }
    let here: Vec<usize> = match share {
        Some(s) => s.placement.ranks_of(s.process, s.processes, ranks),
        None => (0..ranks).collect(),
    };
    for v in program.outputs() {
        check_output_name(&v.name)?;
    }
    let out_dir = c
        .out_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.out", stem(&c.kernel))));
    let out_dirs = per_rank_dirs(&out_dir, ranks);

    // Inputs: --input first, else the NEFF's own data. Each is read once and shared by every
    // core and every schedule (and by every rank, when one file serves them all).
    let mut read_files: Vec<PathBuf> = vec![c.kernel.clone()];
    let mut given: Vec<BTreeMap<String, SharedBytes>> = vec![BTreeMap::new(); ranks];
    for s in &c.inputs {
        let (name, file) = split_kv("input", s)?;
        let var = program.var(name).ok_or_else(|| {
            usage(format!(
                "--input {name}: the kernel has no variable `{name}`"
            ))
        })?;
        if var.kind != VarKind::Input {
            return Err(usage(format!(
                "--input {name}: `{name}` is not an input variable"
            )));
        }
        let (data, files) = rank_input_data(var, file, ranks, &here)?;
        read_files.extend(files);
        for (r, d) in data {
            given[r].insert(name.to_string(), d);
        }
    }
    let refs = find_refs(c, &program, ranks, &here)?;
    for r in &refs {
        read_files.extend(r.files.values().cloned());
        read_files.extend(r.tolerance_file.clone());
    }
    if let Some(&first) = here.first() {
        for v in program.inputs() {
            if !given[first].contains_key(&v.name) && v.init.is_none() {
                return Err(usage(format!(
                    "input `{}` has no data in the NEFF: pass --input {}=FILE.npy",
                    v.name, v.name
                )));
            }
        }
    }
    // Every output is written as .npy: a shape numpy cannot hold is refused before the run.
    for v in program.outputs() {
        if v.shape.len() > neff::npy::MAX_NPY_DIMS {
            return Err(usage(format!(
                "output `{}` has a shape of {} dimensions: an .npy array has at most {} (numpy's limit)",
                v.name,
                v.shape.len(),
                neff::npy::MAX_NPY_DIMS
            )));
        }
    }
    let dirs_here: Vec<PathBuf> = here.iter().map(|&r| out_dirs[r].clone()).collect();
    check_targets(
        a,
        &program,
        write_outputs.then_some(dirs_here.as_slice()),
        &read_files,
    )?;
    let cfg = a.config(gen);
    Ok(Prepared {
        program,
        gen,
        ranks,
        here,
        out_dirs,
        given,
        refs,
        cfg,
        write_outputs,
    })
}

/// Runs schedule `schedule` of the ranks a process runs (their outputs in rank order),
/// telling `progress` each core's counters.
pub(crate) type Runner<'r> = dyn Fn(u32, &(dyn Fn(usize, usize, &SchedStats) + Sync)) -> Result<Vec<api::RunOutput>, RunError>
    + 'r;

/// Every schedule's run of the ranks a process runs.
pub(crate) struct Ran {
    /// The round-robin run's outputs, one per rank run here, in rank order.
    base: Vec<api::RunOutput>,
    /// The outputs of those ranks that differ in another schedule.
    diffs: Vec<ScheduleDiff>,
    /// The schedules whose race findings differ from the round-robin run's on those ranks.
    changed: Vec<u32>,
}

/// Why a run stopped short.
pub(crate) enum Stopped {
    /// A fault of schedule `schedule` on `rank`, with the timelines up to it.
    Fault {
        fault: Box<CoreFault>,
        rank: Option<usize>,
        schedule: u32,
        timelines: Vec<Timeline>,
    },
    /// Another error.
    Error(CliError),
}

impl Stopped {
    /// The rank a fault stopped, if any.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn rank(&self) -> Option<usize> {
        match self {
            Stopped::Fault { rank, .. } => *rank,
            Stopped::Error(_) => None,
        }
    }
}

/// Run every schedule of `a` with `runner`; the first run with a progress bar when
/// `progress`.
pub(crate) fn run_schedules(
    a: &Args,
    prep: &Prepared,
    runner: &Runner<'_>,
    progress: bool,
) -> Result<Ran, Stopped> {
    let cores = prep.program.cores.len();
    let stop = |schedule: u32, e: RunError| match e {
        RunError::Fault {
            fault,
            rank,
            timelines,
            ..
        } => Stopped::Fault {
            fault,
            rank,
            schedule,
            timelines,
        },
        e => Stopped::Error(run_error(&a.common, e)),
    };
    let bar = Progress::new(progress, cores * prep.ranks);
    let first = runner(0, &|r, core, st| bar.update(r * cores + core, st));
    bar.finish();
    let base = first.map_err(|e| stop(0, e))?;
    let mut diffs: Vec<ScheduleDiff> = Vec::new();
    let mut changed: Vec<u32> = Vec::new();
    for i in 1..a.sched.schedules {
        let order = api::order_of(a.sched.seed, i);
        let other = runner(i, &|_, _, _| {}).map_err(|e| stop(i, e))?;
        for ((r, b), o) in prep.here.iter().zip(&base).zip(&other) {
            diffs.extend(
                api::diff_outputs(&b.outputs, &o.outputs)
                    .into_iter()
                    .map(|d| ScheduleDiff {
                        rank: prep.rank_label(*r),
                        output: d.output,
                        schedule: i,
                        order: describe_order(order),
                        first_byte: d.first_byte,
                        bytes_differing: d.bytes_differing,
                    }),
            );
            if o.findings != b.findings && !changed.contains(&i) {
                changed.push(i);
            }
        }
    }
    Ok(Ran {
        base,
        diffs,
        changed,
    })
}

/// The error of a run that stopped short and, with `--json`, the object to print; the
/// trace up to a fault of the round-robin run is written first (with `--trace`).
pub(crate) fn stop_report(a: &Args, prep: &Prepared, s: Stopped) -> (CliError, Option<Value>) {
    let (cf, rank, schedule, timelines) = match s {
        Stopped::Error(e) => return (e, None),
        Stopped::Fault {
            fault,
            rank,
            schedule,
            timelines,
        } => (fault, rank, schedule, timelines),
    };
    let f = if schedule == 0 {
        *cf
    } else {
        let order = api::order_of(a.sched.seed, schedule);
        annotate(
            *cf,
            &format!("schedule {schedule} ({})", describe_order(order)),
        )
    };
    let (err, obj) = fault(a, prep.gen, &f, rank);
    // The trace up to the fault.
    if let (Some(path), false, 0) = (&a.trace, timelines.is_empty(), schedule) {
        let named = core_names(&prep.program, rank, &timelines);
        if let Err(e) = write_trace(path, &named) {
            return (
                CliError::Fault(format!("{err}; the trace was not written: {e}")),
                obj,
            );
        }
        eprintln!("trace up to the fault -> {}", path.display());
    }
    (err, obj)
}

/// One comparison of an output with its reference, as printed.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Compared {
    json: Value,
    text: String,
    passed: bool,
}

/// One race finding, as printed.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Noted {
    json: Value,
    text: String,
    core_race: bool,
}

/// What one rank's run gives the report.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct RankReport {
    rank: usize,
    stats: RunStats,
    /// Per core: its subgraph and counters.
    cores: Vec<(String, RunStats)>,
    threads: usize,
    compared: Vec<Compared>,
    /// The outputs written: name and path.
    written: Vec<(String, String)>,
    findings: Vec<Noted>,
    notes: Vec<String>,
}

/// What the report says of the ranks of one process, or of the world's merged.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Part {
    reports: Vec<RankReport>,
    diffs: Vec<ScheduleDiff>,
    changed: Vec<u32>,
}

impl Part {
    /// The parts of every process as one, in rank (and schedule) order.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn merge(parts: Vec<Part>) -> Part {
        let mut all = Part::default();
        for p in parts {
            all.reports.extend(p.reports);
            all.diffs.extend(p.diffs);
            for i in p.changed {
                if !all.changed.contains(&i) {
                    all.changed.push(i);
                }
            }
        }
        all.reports.sort_by_key(|r| r.rank);
        all.diffs.sort_by_key(|d| (d.schedule, d.rank));
        all.changed.sort_unstable();
        all
    }

    fn matched(&self) -> bool {
        self.reports
            .iter()
            .all(|r| r.compared.iter().all(|c| c.passed))
    }

    fn clean(&self) -> bool {
        self.reports.iter().all(|r| r.findings.is_empty())
            && self.diffs.is_empty()
            && self.changed.is_empty()
    }

    /// Ok when every output matched and nothing was found.
    pub fn outcome(&self) -> Outcome {
        if self.matched() && self.clean() {
            Outcome::Ok
        } else {
            Outcome::Invalid
        }
    }
}

/// Write the outputs of the ranks run here and compare them with their references: every
/// output is encoded and every reference checked first, so that a bad reference or output
/// leaves the directory untouched; then each file is written through a temporary file and
/// renamed, and a failed write removes the outputs this run already wrote. The report's part
/// of these ranks and the files written.
pub(crate) fn write_and_compare(
    a: &Args,
    prep: &Prepared,
    ran: &Ran,
) -> Result<(Part, Vec<PathBuf>), CliError> {
    let c = &a.common;
    let program = &prep.program;
    let mut pending: Vec<(usize, String, PathBuf, Vec<u8>)> = Vec::new();
    let mut compared: Vec<Vec<Compared>> = vec![Vec::new(); ran.base.len()];
    for (i, (&r, out)) in prep.here.iter().zip(&ran.base).enumerate() {
        for v in program.outputs() {
            let data = out.outputs.get(&v.name).map_or(&[][..], |d| &d[..]);
            let dtype = dtype_of(v.format)
                .ok_or_else(|| usage(format!("output `{}` has no npy dtype", v.name)))?;
            let shape: Vec<u64> = v.shape.iter().map(|&d| d as u64).collect();
            let bytes = neff::npy::encode_npy(dtype, &shape, data)
                .map_err(|e| CliError::Io(format!("output `{}`: {e}", v.name)))?;
            let path = prep.out_dirs[r].join(format!("{}.npy", v.name));
            pending.push((i, v.name.clone(), path, bytes));
            if let Some(rp) = prep.refs[r].files.get(&v.name) {
                let rarr = read_npy(rp, c.max_memory)?;
                let (rdata, rshape) = checked_reference(v, &rarr, rp, r, prep.ranks)?;
                let cmp = compare(
                    &v.name,
                    v.format,
                    &v.shape,
                    data,
                    &rshape,
                    rdata,
                    tolerance_for(c, &prep.refs[r], &v.name),
                )
                .map_err(|e| usage(format!("{}: {e}", rp.display())))?;
                compared[i].push(Compared {
                    json: json!(cmp),
                    text: cmp.render(),
                    passed: cmp.passed(),
                });
            }
        }
    }
    if prep.write_outputs {
        for &r in &prep.here {
            let d = &prep.out_dirs[r];
            std::fs::create_dir_all(d)
                .map_err(|e| CliError::Io(format!("{}: {e}", d.display())))?;
        }
    } else {
        pending.clear();
    }
    let mut written: Vec<PathBuf> = Vec::new();
    let mut names: Vec<Vec<(String, String)>> = vec![Vec::new(); ran.base.len()];
    for (i, name, path, bytes) in pending {
        if let Err(e) = neff::write_atomic(&path, &bytes) {
            for p in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err(CliError::Io(format!("{}: {e}", path.display())));
        }
        names[i].push((name, path.display().to_string()));
        written.push(path);
    }
    let reports = prep
        .here
        .iter()
        .zip(&ran.base)
        .zip(compared.into_iter().zip(names))
        .map(|((&rank, o), (compared, written))| RankReport {
            rank,
            stats: o.stats,
            cores: o
                .cores
                .iter()
                .map(|cr| (cr.subgraph.clone(), cr.stats))
                .collect(),
            threads: o.threads,
            compared,
            written,
            findings: o
                .findings
                .iter()
                .map(|f| Noted {
                    json: json!(f),
                    text: f.to_string(),
                    core_race: f.kind_name() == "core-race",
                })
                .collect(),
            notes: o.project_defined.iter().map(|n| n.to_string()).collect(),
        })
        .collect();
    Ok((
        Part {
            reports,
            diffs: ran.diffs.clone(),
            changed: ran.changed.clone(),
        },
        written,
    ))
}

/// Print the report of `part` (every rank of the world) and give the verdict. `mpi` names
/// the processes and the placement of a run over MPI.
pub(crate) fn print_report(
    a: &Args,
    prep: &Prepared,
    part: &Part,
    profiles: &[(String, Profile)],
    mpi: Option<(usize, Placement)>,
) -> Outcome {
    let c = &a.common;
    let ranks = prep.ranks;
    let cores = prep.program.cores.len();
    let several_ranks = ranks > 1;
    let several = cores > 1;
    let reports = &part.reports;
    let core_races: usize = reports
        .iter()
        .map(|r| r.findings.iter().filter(|f| f.core_race).count())
        .sum();
    let matched = part.matched();
    let clean = part.clean();
    let stats = world_stats(reports.iter().map(|r| &r.stats));
    let mut notes: Vec<&str> = Vec::new();
    for n in reports.iter().flat_map(|r| r.notes.iter()) {
        if !notes.contains(&n.as_str()) {
            notes.push(n);
        }
    }
    let changes: Vec<(u32, String)> = part
        .changed
        .iter()
        .map(|&i| (i, describe_order(api::order_of(a.sched.seed, i))))
        .collect();
    let order_name = match c.collective_order {
        crate::cmd::kernel_args::CollectiveOrder::Replica => "replica",
        crate::cmd::kernel_args::CollectiveOrder::Ring => "ring",
    };
    let placement_name = |p: Placement| match p {
        Placement::Blocks => "blocks",
        Placement::RoundRobin => "round-robin",
    };
    if a.json {
        let outputs_json = |r: &RankReport| {
            r.written
                .iter()
                .map(|(n, p)| json!({"name": n, "path": p}))
                .collect::<Vec<_>>()
        };
        let comparisons_json = |r: &RankReport| {
            r.compared
                .iter()
                .map(|c| c.json.clone())
                .collect::<Vec<_>>()
        };
        let findings_json = |r: &RankReport| {
            json!(r
                .findings
                .iter()
                .map(|f| f.json.clone())
                .collect::<Vec<_>>())
        };
        let cores_json = |r: &RankReport| {
            json!(r
                .cores
                .iter()
                .map(|(sg, st)| json!({"subgraph": sg, "summary": summary_json(st)}))
                .collect::<Vec<_>>())
        };
        let mut obj = json!({
            "kernel": c.kernel.display().to_string(),
            "arch": prep.gen.short(),
            "status": if !matched { "mismatch" } else if !clean { "findings" } else { "ok" },
            "summary": summary_json(&stats),
            "project_defined": notes,
        });
        if several_ranks {
            obj["ranks"] = json!(reports
                .iter()
                .map(|r| {
                    let mut e = json!({
                        "rank": r.rank,
                        "summary": summary_json(&r.stats),
                        "outputs": outputs_json(r),
                        "comparisons": comparisons_json(r),
                    });
                    if several {
                        e["cores"] = cores_json(r);
                    }
                    if a.check_races || core_races > 0 {
                        e["findings"] = findings_json(r);
                    }
                    e
                })
                .collect::<Vec<_>>());
            obj["collective_order"] = json!(order_name);
        } else if let Some(r) = reports.first() {
            obj["outputs"] = json!(outputs_json(r));
            obj["comparisons"] = json!(comparisons_json(r));
            if several {
                obj["cores"] = cores_json(r);
                obj["threads"] = json!(r.threads);
            }
            if a.check_races || core_races > 0 {
                obj["findings"] = findings_json(r);
            }
        }
        if let Some((processes, placement)) = mpi {
            obj["mpi"] = json!({"processes": processes, "placement": placement_name(placement)});
        }
        match profiles {
            [] => {}
            [(_, p)] if !several && !several_ranks => obj["profile"] = json!(p),
            ps => {
                obj["profile"] = json!(ps
                    .iter()
                    .enumerate()
                    .map(|(i, (n, p))| json!({"core": i, "subgraph": n, "profile": p}))
                    .collect::<Vec<_>>())
            }
        }
        if a.sched.schedules > 1 {
            obj["schedules"] = json!({
                "count": a.sched.schedules,
                "seed": a.sched.seed,
                "output_differences": part.diffs,
                "findings_differ": changes.iter().map(|(i, o)| json!({"schedule": i, "order": o})).collect::<Vec<_>>(),
            });
        }
        println!("{obj}");
    } else {
        let label = |r: usize| {
            if several_ranks {
                format!("rank {r}: ")
            } else {
                String::new()
            }
        };
        for r in reports {
            for cmp in &r.compared {
                print!("{}{}", label(r.rank), cmp.text);
            }
            for (n, p) in &r.written {
                println!("{}wrote {n} -> {p}", label(r.rank));
            }
        }
        print_summary(&stats);
        for r in reports {
            if several_ranks {
                print!("  rank {}: ", r.rank);
                print_summary(&r.stats);
            }
            if several {
                for (i, (sg, st)) in r.cores.iter().enumerate() {
                    print!(
                        "  {}core {i} ({sg}): ",
                        if several_ranks { "  " } else { "" }
                    );
                    print_summary(st);
                }
            }
        }
        if several_ranks {
            println!(
                "  {ranks} ranks of {cores} core{} each, one thread per core; collectives folded in {order_name} order",
                if cores == 1 { "" } else { "s" },
            );
        } else if let (true, Some(r)) = (several, reports.first()) {
            println!(
                "  {} cores on {} worker thread{}",
                cores,
                r.threads,
                if r.threads == 1 { "" } else { "s" }
            );
        }
        if let Some((processes, placement)) = mpi {
            println!(
                "  ranks spread over {processes} MPI process{} ({})",
                if processes == 1 { "" } else { "es" },
                placement_name(placement)
            );
        }
        for n in &notes {
            println!("note: {n}");
        }
        for (n, p) in profiles {
            if several || several_ranks {
                println!("{n}:");
            }
            print_profile(p);
        }
        if let Some(path) = &a.trace {
            println!("trace -> {}", path.display());
        }
        for r in reports {
            print_findings(a, &label(r.rank), &r.findings);
        }
        print_schedules(a, &part.diffs, &changes);
    }
    part.outcome()
}

/// `dir` for a run of one rank, `dir/rank{r}` for each rank of several.
fn per_rank_dirs(dir: &Path, ranks: usize) -> Vec<PathBuf> {
    if ranks <= 1 {
        vec![dir.to_path_buf()]
    } else {
        (0..ranks).map(|r| dir.join(format!("rank{r}"))).collect()
    }
}

/// The data of an input for some ranks, each with its rank, and the files read.
type RankInputs = (Vec<(usize, SharedBytes)>, Vec<PathBuf>);

/// The data of `--input NAME=FILE` for each rank of `here` (of a world of `ranks`), with its
/// rank, and the files read. `FILE` may name `{rank}` (one file per rank), hold the
/// variable's shape (the same data for every rank) or, for several ranks, one array per rank
/// along a leading axis of length `ranks` (mapped or read once; each rank sees its slice).
fn rank_input_data(
    var: &VarSpec,
    file: &str,
    ranks: usize,
    here: &[usize],
) -> Result<RankInputs, CliError> {
    if file.contains("{rank}") {
        let mut data = Vec::with_capacity(here.len());
        let mut files = Vec::with_capacity(here.len());
        for &r in here {
            let p = PathBuf::from(file.replace("{rank}", &r.to_string()));
            data.push((r, input_data(var, &p)?));
            files.push(p);
        }
        return Ok((data, files));
    }
    let path = PathBuf::from(file);
    let one = input_data(var, &path);
    if ranks <= 1 || one.is_ok() {
        return one.map(|d| (here.iter().map(|&r| (r, d.clone())).collect(), vec![path]));
    }
    let stacked = VarSpec {
        shape: std::iter::once(ranks)
            .chain(var.shape.iter().copied())
            .collect(),
        size: var.size.saturating_mul(ranks as u64),
        id: var.id,
        name: var.name.clone(),
        kind: var.kind,
        format: var.format,
        init: None,
    };
    match input_data(&stacked, &path) {
        Ok(all) => {
            let size = var.size as usize;
            let data = here
                .iter()
                .map(|&r| {
                    let slice = Arc::new(Slice {
                        whole: all.clone(),
                        start: r * size,
                        len: size,
                    }) as SharedBytes;
                    (r, slice)
                })
                .collect();
            Ok((data, vec![path]))
        }
        Err(_) => Err(match one {
            Err(CliError::Usage(m)) => usage(format!(
                "{m} (or [{ranks}, ...] for one array per rank, or a file name with {{rank}})"
            )),
            Err(e) => e,
            Ok(_) => unreachable!("handled above"),
        }),
    }
}

/// One rank's part of an input array that holds every rank's along its leading axis.
struct Slice {
    whole: SharedBytes,
    start: usize,
    len: usize,
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        let all = (*self.whole).as_ref();
        all.get(self.start..self.start + self.len).unwrap_or(&[])
    }
}

/// The counters of every rank together (the wall time is the longest rank's).
fn world_stats<'s>(all: impl Iterator<Item = &'s RunStats>) -> RunStats {
    let mut t = RunStats::default();
    for s in all {
        t.sched.steps += s.sched.steps;
        for (a, b) in t.sched.per_engine.iter_mut().zip(s.sched.per_engine) {
            *a += b;
        }
        t.sched.rounds = t.sched.rounds.max(s.sched.rounds);
        t.dma_bytes += s.dma_bytes;
        t.dma_transfers += s.dma_transfers;
        t.wall = t.wall.max(s.wall);
    }
    t
}

/// Each timeline with its core's name (`sg00`, or `rank1 sg00` in a run of several ranks).
fn core_names<'t>(
    program: &Program,
    rank: Option<usize>,
    ts: &'t [Timeline],
) -> Vec<(String, &'t Timeline)> {
    ts.iter()
        .enumerate()
        .map(|(c, t)| {
            let core = program.core_name(c);
            let name = match rank {
                Some(r) => format!("rank{r} {core}"),
                None => core.to_string(),
            };
            (name, t)
        })
        .collect()
}

fn print_profile(p: &Profile) {
    println!(
        "timeline: {:.3} µs (cost model: docs/trace.md)",
        p.makespan_ns / 1e3
    );
    println!(
        "  {:<12} {:>7} {:>12} {:>12} {:>12}",
        "track", "slices", "busy µs", "wait µs", "idle µs"
    );
    for t in &p.tracks {
        println!(
            "  {:<12} {:>7} {:>12.3} {:>12.3} {:>12.3}",
            t.track,
            t.slices,
            t.busy_ns / 1e3,
            t.wait_ns / 1e3,
            t.idle_ns / 1e3
        );
    }
    println!("critical path ({} slices):", p.critical_path.len());
    for c in &p.critical_path {
        println!(
            "  {:>10.3} µs +{:>9.3} µs  {:<12} {}",
            c.start_ns / 1e3,
            c.dur_ns / 1e3,
            c.track,
            c.name
        );
    }
}

/// The race findings of one rank (`label` names it in a run of several ranks).
fn print_findings(a: &Args, label: &str, findings: &[Noted]) {
    if a.check_races {
        for f in findings {
            println!("{label}{}", f.text);
        }
        println!(
            "{label}race check: {} finding{}",
            findings.len(),
            if findings.len() == 1 { "" } else { "s" }
        );
    } else {
        // Races between cores are found by every run of several cores.
        for f in findings.iter().filter(|f| f.core_race) {
            println!("{label}{}", f.text);
        }
    }
}

/// The differences between the interleavings.
fn print_schedules(a: &Args, diffs: &[ScheduleDiff], changes: &[(u32, String)]) {
    if a.sched.schedules > 1 {
        for d in diffs {
            let rank = d.rank.map(|r| format!("rank {r} ")).unwrap_or_default();
            println!(
                "schedule {} ({}): {rank}output `{}` differs from the round-robin run in {} bytes, first at byte {}",
                d.schedule, d.order, d.output, d.bytes_differing, d.first_byte
            );
        }
        for (i, o) in changes {
            println!("schedule {i} ({o}): the race findings differ from the round-robin run");
        }
        println!(
            "schedules: {} interleavings, {} output difference{}",
            a.sched.schedules,
            diffs.len(),
            if diffs.len() == 1 { "" } else { "s" }
        );
    }
}

/// `f` with `what` prepended to its message (for faults of later schedules).
fn annotate(mut f: CoreFault, what: &str) -> CoreFault {
    if let Fault::Exec { site, message } = f.fault {
        f.fault = Fault::Exec {
            site,
            message: format!("{what}: {message}"),
        };
    }
    f
}

/// A reference's data and shape for rank `rank` of `ranks`: the whole array, or, when it holds
/// one array per rank along a leading axis of length `ranks`, rank `rank`'s.
fn checked_reference<'r>(
    v: &VarSpec,
    r: &'r neff::NpyArray,
    path: &Path,
    rank: usize,
    ranks: usize,
) -> Result<(&'r [u8], Vec<usize>), CliError> {
    let dtype =
        dtype_of(v.format).ok_or_else(|| usage(format!("output `{}` has no npy dtype", v.name)))?;
    r.resolve(dtype).map_err(|e| {
        usage(format!(
            "{}: {e} (output `{}` is {})",
            path.display(),
            v.name,
            v.format.name()
        ))
    })?;
    let shape: Vec<usize> = r.shape.iter().map(|&d| d as usize).collect();
    let stacked = ranks > 1
        && shape.len() == v.shape.len() + 1
        && shape[0] == ranks
        && shape[1..] == v.shape[..];
    if stacked {
        let per = r.data.len() / ranks;
        let data = r.data.get(rank * per..(rank + 1) * per).unwrap_or(&[]);
        return Ok((data, v.shape.clone()));
    }
    Ok((&r.data, shape))
}

/// A set-up error is a usage error, a refused budget charge a fault.
fn run_error(c: &KernelArgs, e: RunError) -> CliError {
    match e {
        RunError::Setup(e @ SetupError::Budget(_)) => {
            CliError::Fault(format!("{}: budget fault: {e}", c.kernel.display()))
        }
        RunError::Fault { fault, .. } => CliError::Fault(format!(
            "{}: {} fault: {fault}",
            c.kernel.display(),
            fault.fault.kind()
        )),
        e => usage(format!("{}: {e}", c.kernel.display())),
    }
}

/// The error of fault `cf` on `rank` and, with `--json`, the object that reports it.
fn fault(a: &Args, gen: Gen, cf: &CoreFault, rank: Option<usize>) -> (CliError, Option<Value>) {
    let f = &cf.fault;
    let at = rank.map(|r| format!("rank {r}: ")).unwrap_or_default();
    let obj = a.json.then(|| {
        let mut obj = json!({
            "kernel": a.common.kernel.display().to_string(),
            "arch": gen.short(),
            "status": "fault",
            "fault": { "kind": f.kind(), "message": format!("{at}{cf}") },
        });
        if let Some(r) = rank {
            obj["fault"]["rank"] = json!(r);
        }
        if cf.cores > 1 {
            obj["fault"]["core"] = json!(cf.core);
            obj["fault"]["subgraph"] = json!(cf.subgraph);
        }
        if let Fault::Deadlock(r) = f {
            obj["fault"]["deadlock"] = json!(r);
        }
        obj
    });
    let err = CliError::Fault(format!(
        "{}: {at}{} fault: {cf}",
        a.common.kernel.display(),
        f.kind()
    ));
    (err, obj)
}

/// Whether `sim run` shows a progress bar: only on a terminal (stdout and stderr) and
/// without `--json`.
fn shows_progress(json: bool, stdout_tty: bool, stderr_tty: bool) -> bool {
    !json && stdout_tty && stderr_tty
}

/// How long a run goes before its progress bar appears.
const PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The progress bar of a long run on stderr: bundles issued by every core, in all and per
/// engine; it appears once the run has taken [`PROGRESS_AFTER`] and is cleared at its end.
/// The cores report from their own threads.
struct Progress {
    enabled: bool,
    start: std::time::Instant,
    state: std::sync::Mutex<(Vec<SchedStats>, Option<indicatif::ProgressBar>)>,
}

impl Progress {
    fn new(enabled: bool, cores: usize) -> Progress {
        Progress {
            enabled,
            start: std::time::Instant::now(),
            state: std::sync::Mutex::new((vec![SchedStats::default(); cores.max(1)], None)),
        }
    }

    fn update(&self, core: usize, st: &SchedStats) {
        if !self.enabled || self.start.elapsed() < PROGRESS_AFTER {
            return;
        }
        let Ok(mut guard) = self.state.lock() else {
            return;
        };
        let (per_core, bar) = &mut *guard;
        if let Some(slot) = per_core.get_mut(core) {
            *slot = *st;
        }
        let mut all = SchedStats::default();
        for c in per_core.iter() {
            all.steps += c.steps;
            for (a, b) in all.per_engine.iter_mut().zip(c.per_engine) {
                *a += b;
            }
        }
        let bar = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {pos} bundles ({msg}) [{elapsed}] {per_sec}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b
        });
        bar.set_position(all.steps);
        bar.set_message(progress_message(&all));
    }

    fn finish(self) {
        if let Ok((_, Some(b))) = self.state.into_inner() {
            b.finish_and_clear();
        }
    }
}

/// The per-engine part of the progress line: `pe N, act N, ...` for the engines that issued.
fn progress_message(st: &SchedStats) -> String {
    Engine::ALL
        .iter()
        .filter(|e| st.per_engine[**e as usize] > 0)
        .map(|e| format!("{} {}", e.short(), st.per_engine[*e as usize]))
        .collect::<Vec<_>>()
        .join(", ")
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
