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
use tpbsim_sim::machine::compare::{compare, Comparison, Tolerance};
use tpbsim_sim::machine::core::SetupError;
use tpbsim_sim::machine::load::{self, dtype_of};
use tpbsim_sim::machine::race::Finding;
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
            collective_order: Default::default(),
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
#[derive(serde::Serialize)]
struct ScheduleDiff {
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

/// Check every file the run will write before the simulation starts: the output directory
/// (a directory, or absent) and each target (absent or a regular file), and the trace.
fn check_targets(a: &Args, program: &Program, out_dir: Option<&Path>) -> Result<(), CliError> {
    let io = |p: &Path, e: std::io::Error| CliError::Io(format!("{}: {e}", p.display()));
    if let Some(dir) = out_dir {
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
        }
    }
    if let Some(t) = &a.trace {
        tpbsim_isa::fsio::check_target(t).map_err(|e| io(t, e))?;
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

/// Write the Chrome/Perfetto trace of the cores' timelines to `path` (one process per core).
fn write_trace(path: &Path, program: &Program, ts: &[Timeline]) -> Result<(), CliError> {
    let cores: Vec<(String, &Timeline)> = ts
        .iter()
        .enumerate()
        .map(|(c, t)| (program.core_name(c).to_string(), t))
        .collect();
    let text = serde_json::to_vec(&Timeline::cores_to_chrome(&cores))
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

struct Refs {
    files: BTreeMap<String, PathBuf>,
    tolerances: ToleranceFile,
}

fn find_refs(a: &KernelArgs, program: &Program) -> Result<Refs, CliError> {
    let mut files = BTreeMap::new();
    let dir = if !a.refs.is_empty() {
        for r in &a.refs {
            let (name, file) = split_kv("ref", r)?;
            let v = program.outputs().into_iter().find(|v| v.name == name);
            if v.is_none() {
                return Err(usage(format!(
                    "--ref {name}: the kernel has no output `{name}`"
                )));
            }
            files.insert(name.to_string(), PathBuf::from(file));
        }
        None
    } else if let Some(d) = &a.ref_dir {
        if !d.is_dir() {
            return Err(usage(format!("--ref-dir {}: not a directory", d.display())));
        }
        Some(d.clone())
    } else {
        let d = a.kernel.with_file_name(format!("{}.ref", stem(&a.kernel)));
        d.is_dir().then_some(d)
    };
    let mut tolerances = ToleranceFile::default();
    if let Some(d) = dir {
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
            files.insert(v.name.clone(), p);
        }
        let t = d.join("tolerance.json");
        if t.exists() {
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
            tolerances = tf;
        }
    }
    Ok(Refs { files, tolerances })
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

/// Run a kernel; write the outputs (`write_outputs`, or when `--out-dir` is given).
pub fn execute(a: Args, write_outputs: bool) -> Result<Outcome, CliError> {
    let c = &a.common;
    let write_outputs = write_outputs || c.out_dir.is_some();
    let n = Neff::read(&c.kernel, &c.read.options())
        .map_err(|e| usage(format!("{}: {e}", c.kernel.display())))?;
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
    for v in program.outputs() {
        check_output_name(&v.name)?;
    }
    let out_dir = c
        .out_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.out", stem(&c.kernel))));
    check_targets(&a, &program, write_outputs.then_some(out_dir.as_path()))?;

    // Inputs: --input first, else the NEFF's own data. Each is read once and shared by every
    // core and every schedule.
    let mut given: BTreeMap<String, SharedBytes> = BTreeMap::new();
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
        given.insert(name.to_string(), input_data(var, Path::new(file))?);
    }
    let refs = find_refs(c, &program)?;
    for v in program.inputs() {
        if !given.contains_key(&v.name) && v.init.is_none() {
            return Err(usage(format!(
                "input `{}` has no data in the NEFF: pass --input {}=FILE.npy",
                v.name, v.name
            )));
        }
    }

    let cfg = a.config(gen);
    let progress = Progress::new(
        shows_progress(
            a.json,
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        ),
        program.cores.len(),
    );
    let first = api::run_schedule(&program, gen, &given, &cfg, 0, &|core, st| {
        progress.update(core, st)
    });
    progress.finish();
    let base = match first {
        Ok(r) => r,
        Err(RunError::Fault {
            fault: f,
            timelines,
            ..
        }) => {
            let err = fault(&a, gen, &f);
            // The trace up to the fault.
            if let (Some(path), false) = (&a.trace, timelines.is_empty()) {
                if let Err(e) = write_trace(path, &program, &timelines) {
                    return Err(CliError::Fault(format!(
                        "{err}; the trace was not written: {e}"
                    )));
                }
                eprintln!("trace up to the fault -> {}", path.display());
            }
            return Err(err);
        }
        Err(e) => return Err(run_error(c, e)),
    };
    let stats = base.stats;
    let mut diffs: Vec<ScheduleDiff> = Vec::new();
    let mut finding_changes: Vec<(u32, String)> = Vec::new();
    for i in 1..a.sched.schedules {
        let order = api::order_of(a.sched.seed, i);
        let r = match api::run_schedule(&program, gen, &given, &cfg, i, &|_, _| {}) {
            Ok(r) => r,
            Err(RunError::Fault { fault: f, .. }) => {
                return Err(fault(
                    &a,
                    gen,
                    &annotate(*f, &format!("schedule {i} ({})", describe_order(order))),
                ))
            }
            Err(e) => return Err(run_error(c, e)),
        };
        diffs.extend(
            api::diff_outputs(&base.outputs, &r.outputs)
                .into_iter()
                .map(|d| ScheduleDiff {
                    output: d.output,
                    schedule: i,
                    order: describe_order(order),
                    first_byte: d.first_byte,
                    bytes_differing: d.bytes_differing,
                }),
        );
        if r.findings != base.findings {
            finding_changes.push((i, describe_order(order)));
        }
    }

    // Outputs: every output is encoded and every reference checked first, so that a bad
    // reference or output leaves the directory untouched; then each file is written through a
    // temporary file and renamed, and a failed write removes the outputs this run already wrote.
    let mut pending: Vec<(String, PathBuf, Vec<u8>)> = Vec::new();
    let mut comparisons: Vec<Comparison> = Vec::new();
    for v in program.outputs() {
        let data = base.outputs.get(&v.name).map_or(&[][..], |d| d.as_slice());
        let dtype = dtype_of(v.format)
            .ok_or_else(|| usage(format!("output `{}` has no npy dtype", v.name)))?;
        let shape: Vec<u64> = v.shape.iter().map(|&d| d as u64).collect();
        let bytes = neff::npy::encode_npy(dtype, &shape, data)
            .map_err(|e| CliError::Io(format!("output `{}`: {e}", v.name)))?;
        let path = out_dir.join(format!("{}.npy", v.name));
        pending.push((v.name.clone(), path, bytes));
        if let Some(rp) = refs.files.get(&v.name) {
            let r = read_npy(rp, c.max_memory)?;
            let rdata = checked_reference(v, &r, rp)?;
            let rshape: Vec<usize> = r.shape.iter().map(|&d| d as usize).collect();
            let c = compare(
                &v.name,
                v.format,
                &v.shape,
                data,
                &rshape,
                rdata,
                tolerance_for(c, &refs, &v.name),
            )
            .map_err(|e| usage(format!("{}: {e}", rp.display())))?;
            comparisons.push(c);
        }
    }
    if write_outputs {
        std::fs::create_dir_all(&out_dir)
            .map_err(|e| CliError::Io(format!("{}: {e}", out_dir.display())))?;
    } else {
        pending.clear();
    }
    let mut written = Vec::new();
    for (name, path, bytes) in pending {
        if let Err(e) = neff::write_atomic(&path, &bytes) {
            for (_, p) in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err(CliError::Io(format!("{}: {e}", path.display())));
        }
        written.push((name, path));
    }
    if let (Some(path), false) = (&a.trace, base.timelines.is_empty()) {
        if let Err(e) = write_trace(path, &program, &base.timelines) {
            for (_, p) in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    }
    let profiles: Vec<Profile> = if a.profile {
        base.timelines.iter().map(Timeline::profile).collect()
    } else {
        Vec::new()
    };
    let several = program.cores.len() > 1;
    // Races between cores are always checked; the others with --check-races.
    let core_races = base
        .findings
        .iter()
        .filter(|f| f.kind_name() == "core-race")
        .count();
    let matched = comparisons.iter().all(Comparison::passed);
    let clean = base.findings.is_empty() && diffs.is_empty() && finding_changes.is_empty();
    let ok = matched && clean;
    if let Some(render) = a.timeline_json {
        if !base.timelines.is_empty() {
            println!("{}", render(&base.timelines, &program, gen));
            return Ok(if ok { Outcome::Ok } else { Outcome::Invalid });
        }
    }
    if a.json {
        let mut obj = json!({
            "kernel": a.common.kernel.display().to_string(),
            "arch": gen.short(),
            "status": if !matched { "mismatch" } else if !clean { "findings" } else { "ok" },
            "summary": summary_json(&stats),
            "project_defined": base.project_defined,
            "outputs": written.iter().map(|(n, p)| json!({"name": n, "path": p.display().to_string()})).collect::<Vec<_>>(),
            "comparisons": comparisons,
        });
        if several {
            obj["cores"] = json!(base
                .cores
                .iter()
                .map(|cr| json!({"subgraph": cr.subgraph, "summary": summary_json(&cr.stats)}))
                .collect::<Vec<_>>());
            obj["threads"] = json!(base.threads);
        }
        if a.check_races || core_races > 0 {
            obj["findings"] = json!(base.findings);
        }
        match profiles.as_slice() {
            [] => {}
            [p] if !several => obj["profile"] = json!(p),
            ps => {
                obj["profile"] = json!(ps
                    .iter()
                    .enumerate()
                    .map(
                        |(i, p)| json!({"core": i, "subgraph": program.core_name(i), "profile": p})
                    )
                    .collect::<Vec<_>>())
            }
        }
        if a.sched.schedules > 1 {
            obj["schedules"] = json!({
                "count": a.sched.schedules,
                "seed": a.sched.seed,
                "output_differences": diffs,
                "findings_differ": finding_changes.iter().map(|(i, o)| json!({"schedule": i, "order": o})).collect::<Vec<_>>(),
            });
        }
        println!("{obj}");
    } else {
        for c in &comparisons {
            print!("{}", c.render());
        }
        for (n, p) in &written {
            println!("wrote {n} -> {}", p.display());
        }
        print_summary(&stats);
        if several {
            for (i, cr) in base.cores.iter().enumerate() {
                print!("  core {i} ({}): ", cr.subgraph);
                print_summary(&cr.stats);
            }
            println!(
                "  {} cores on {} worker thread{}",
                program.cores.len(),
                base.threads,
                if base.threads == 1 { "" } else { "s" }
            );
        }
        for n in &base.project_defined {
            println!("note: {n}");
        }
        for (i, p) in profiles.iter().enumerate() {
            if several {
                println!("core {i} ({}):", program.core_name(i));
            }
            print_profile(p);
        }
        if let Some(path) = &a.trace {
            println!("trace -> {}", path.display());
        }
        print_findings(&a, &base.findings, &diffs, &finding_changes);
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Invalid })
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

fn print_findings(
    a: &Args,
    findings: &[Finding],
    diffs: &[ScheduleDiff],
    changes: &[(u32, String)],
) {
    if a.check_races {
        for f in findings {
            println!("{f}");
        }
        println!(
            "race check: {} finding{}",
            findings.len(),
            if findings.len() == 1 { "" } else { "s" }
        );
    } else {
        // Races between cores are found by every run of several cores.
        for f in findings.iter().filter(|f| f.kind_name() == "core-race") {
            println!("{f}");
        }
    }
    if a.sched.schedules > 1 {
        for d in diffs {
            println!(
                "schedule {} ({}): output `{}` differs from the round-robin run in {} bytes, first at byte {}",
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

fn checked_reference<'r>(
    v: &VarSpec,
    r: &'r neff::NpyArray,
    path: &Path,
) -> Result<&'r [u8], CliError> {
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
    Ok(&r.data)
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

fn fault(a: &Args, gen: Gen, cf: &CoreFault) -> CliError {
    let f = &cf.fault;
    if a.json {
        let mut obj = json!({
            "kernel": a.common.kernel.display().to_string(),
            "arch": gen.short(),
            "status": "fault",
            "fault": { "kind": f.kind(), "message": cf.to_string() },
        });
        if cf.cores > 1 {
            obj["fault"]["core"] = json!(cf.core);
            obj["fault"]["subgraph"] = json!(cf.subgraph);
        }
        if let Fault::Deadlock(r) = f {
            obj["fault"]["deadlock"] = json!(r);
        }
        println!("{obj}");
    }
    CliError::Fault(format!(
        "{}: {} fault: {cf}",
        a.common.kernel.display(),
        f.kind()
    ))
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
