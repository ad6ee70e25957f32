//! `sim run`: execute a kernel NEFF on the machine model, write its outputs, compare them with
//! references. The model and the conventions are documented in `docs/machine.md`.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tpbsim_isa::neff::{self, Neff};
use tpbsim_isa::{Engine, Gen};
use tpbsim_sim::machine::compare::{compare, Comparison, Tolerance};
use tpbsim_sim::machine::load::{self, dtype_of};
use tpbsim_sim::machine::{
    Fault, Kernel, Machine, RunOptions, RunStats, VarKind, VarSpec, DEFAULT_MAX_STEPS,
};

use crate::exit::{CliError, Outcome};

/// Arguments of `sim run`.
#[derive(clap::Args)]
pub struct Args {
    /// The kernel NEFF.
    pub kernel: PathBuf,
    /// Input data for a def.json input variable (repeatable).
    #[arg(long = "input", value_name = "NAME=FILE.npy")]
    pub inputs: Vec<String>,
    /// Directory for the output `.npy` files [default: KERNEL.out in the current directory].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Reference for one output (repeatable).
    #[arg(long = "ref", value_name = "NAME=FILE.npy", conflicts_with = "ref_dir")]
    pub refs: Vec<String>,
    /// Directory of references `NAME.npy` (and optionally `tolerance.json`)
    /// [default: KERNEL.ref next to the NEFF, when it exists].
    #[arg(long, value_name = "DIR")]
    pub ref_dir: Option<PathBuf>,
    /// Absolute tolerance (overrides tolerance.json).
    #[arg(long)]
    pub atol: Option<f64>,
    /// Relative tolerance (overrides tolerance.json).
    #[arg(long)]
    pub rtol: Option<f64>,
    /// Ulp tolerance (overrides tolerance.json).
    #[arg(long)]
    pub ulp: Option<u64>,
    /// Generation to run on [default: the NEFF's target].
    #[arg(long, value_name = "v2|v3|v4|v5")]
    pub arch: Option<Gen>,
    /// Print the summary and comparisons as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Step budget: bundles executed before the run is stopped as a runaway loop.
    #[arg(long, default_value_t = DEFAULT_MAX_STEPS)]
    pub max_steps: u64,
    /// Skip the L2 validation of each bundle before it executes.
    #[arg(long)]
    pub no_validate: bool,
    /// NEFF reader options (digest check, archive size limits).
    #[command(flatten)]
    pub read: super::neff::ReadArgs,
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

fn read_npy(path: &Path) -> Result<neff::NpyArray, CliError> {
    neff::npy::read_npy_file(path).map_err(|e| usage(format!("{}: {e}", path.display())))
}

/// Check an array against a variable's dtype and shape; returns its bytes.
fn checked_data(var: &VarSpec, arr: neff::NpyArray, what: &str) -> Result<Vec<u8>, CliError> {
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
    Ok(arr.data)
}

/// Tolerances from `tolerance.json`: `{"default": {...}, "outputs": {"NAME": {...}}}`.
#[derive(serde::Deserialize, Default)]
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

fn find_refs(a: &Args, kernel: &Kernel) -> Result<Refs, CliError> {
    let mut files = BTreeMap::new();
    let dir = if !a.refs.is_empty() {
        for r in &a.refs {
            let (name, file) = split_kv("ref", r)?;
            let v = kernel.var(name).filter(|v| v.kind == VarKind::Output);
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
        for v in kernel.vars.iter().filter(|v| v.kind == VarKind::Output) {
            let p = d.join(format!("{}.npy", v.name));
            if p.is_file() {
                files.insert(v.name.clone(), p);
            }
        }
        let t = d.join("tolerance.json");
        if t.is_file() {
            let text = std::fs::read(&t).map_err(|e| usage(format!("{}: {e}", t.display())))?;
            tolerances = serde_json::from_slice(&text)
                .map_err(|e| usage(format!("{}: {e}", t.display())))?;
        }
    }
    Ok(Refs { files, tolerances })
}

fn tolerance_for(a: &Args, refs: &Refs, name: &str) -> Tolerance {
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
    let n = Neff::read(&a.kernel, &a.read.options())
        .map_err(|e| usage(format!("{}: {e}", a.kernel.display())))?;
    let kernel =
        load::kernel_from_neff(&n).map_err(|e| usage(format!("{}: {e}", a.kernel.display())))?;
    let gen = a.arch.or(kernel.gen).ok_or_else(|| {
        usage(format!(
            "{}: the NEFF names no target generation; pass --arch",
            a.kernel.display()
        ))
    })?;

    // Inputs: --input first, else the NEFF's own data.
    let mut given: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for s in &a.inputs {
        let (name, file) = split_kv("input", s)?;
        let var = kernel.var(name).ok_or_else(|| {
            usage(format!(
                "--input {name}: the kernel has no variable `{name}`"
            ))
        })?;
        if var.kind != VarKind::Input {
            return Err(usage(format!(
                "--input {name}: `{name}` is not an input variable"
            )));
        }
        let data = checked_data(var, read_npy(Path::new(file))?, file)?;
        given.insert(name.to_string(), data);
    }
    let refs = find_refs(&a, &kernel)?;
    for v in kernel.vars.iter().filter(|v| v.kind == VarKind::Input) {
        if !given.contains_key(&v.name) && v.init.is_none() {
            return Err(usage(format!(
                "input `{}` has no data in the NEFF: pass --input {}=FILE.npy",
                v.name, v.name
            )));
        }
    }

    let mut m = Machine::new(&kernel, gen).map_err(|e| usage(e.to_string()))?;
    for (name, data) in &given {
        m.set_var(name, data).map_err(|e| usage(e.to_string()))?;
    }

    if !a.no_validate {
        m.validate_with_l2();
    }
    let bar = progress_bar();
    let result = m.run(
        &RunOptions {
            max_steps: a.max_steps,
        },
        &mut |steps| {
            if let Some(b) = &bar {
                b.set_position(steps);
            }
        },
    );
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let stats = match result {
        Ok(s) => s,
        Err(f) => return Err(fault(&a, gen, &f)),
    };

    // Outputs: every output is encoded and every reference checked first, so that a bad
    // reference or output leaves the directory untouched; then each file is written through a
    // temporary file and renamed, and a failed write removes the outputs this run already wrote.
    let out_dir = a
        .out_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.out", stem(&a.kernel))));
    let mut pending: Vec<(String, PathBuf, Vec<u8>)> = Vec::new();
    let mut comparisons: Vec<Comparison> = Vec::new();
    for v in kernel.vars.iter().filter(|v| v.kind == VarKind::Output) {
        let data = m.var(&v.name).unwrap_or_default();
        let dtype = dtype_of(v.format)
            .ok_or_else(|| usage(format!("output `{}` has no npy dtype", v.name)))?;
        let shape: Vec<u64> = v.shape.iter().map(|&d| d as u64).collect();
        let bytes = neff::npy::encode_npy(dtype, &shape, data)
            .map_err(|e| CliError::Io(format!("output `{}`: {e}", v.name)))?;
        let path = out_dir.join(format!("{}.npy", v.name));
        pending.push((v.name.clone(), path, bytes));
        if let Some(rp) = refs.files.get(&v.name) {
            let r = read_npy(rp)?;
            let rdata = checked_reference(v, &r, rp)?;
            let rshape: Vec<usize> = r.shape.iter().map(|&d| d as usize).collect();
            let c = compare(
                &v.name,
                v.format,
                &v.shape,
                data,
                &rshape,
                rdata,
                tolerance_for(&a, &refs, &v.name),
            )
            .map_err(|e| usage(format!("{}: {e}", rp.display())))?;
            comparisons.push(c);
        }
    }
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| CliError::Io(format!("{}: {e}", out_dir.display())))?;
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
    let ok = comparisons.iter().all(Comparison::passed);
    if a.json {
        let obj = json!({
            "kernel": a.kernel.display().to_string(),
            "arch": gen.short(),
            "status": if ok { "ok" } else { "mismatch" },
            "summary": summary_json(&stats),
            "outputs": written.iter().map(|(n, p)| json!({"name": n, "path": p.display().to_string()})).collect::<Vec<_>>(),
            "comparisons": comparisons,
        });
        println!("{obj}");
    } else {
        for c in &comparisons {
            print!("{}", c.render());
        }
        for (n, p) in &written {
            println!("wrote {n} -> {}", p.display());
        }
        print_summary(&stats);
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Invalid })
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

fn fault(a: &Args, gen: Gen, f: &Fault) -> CliError {
    if a.json {
        let obj = json!({
            "kernel": a.kernel.display().to_string(),
            "arch": gen.short(),
            "status": "fault",
            "fault": { "kind": f.kind(), "message": f.to_string() },
        });
        println!("{obj}");
    }
    CliError::Fault(format!("{}: {} fault: {f}", a.kernel.display(), f.kind()))
}

fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new_spinner();
    b.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {pos} bundles [{elapsed}] {per_sec}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    Some(b)
}
