//! `run`: a kernel NEFF (path, bytes or a built kernel's bytes) with numpy inputs, through
//! `tpbsim_sim::api`; and the profile of its timeline.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyKeyboardInterrupt, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::json;
use tpbsim_sim::api::{self, RunConfig, RunError};
use tpbsim_sim::machine::collective::Order;
use tpbsim_sim::machine::load::dtype_of;
use tpbsim_sim::machine::memory::VarBytes;
use tpbsim_sim::machine::race::Finding;
use tpbsim_sim::machine::timeline::Timeline;
use tpbsim_sim::machine::{CoreFault, Fault, Program, VarKind, VarSpec};
use tpbsim_validate::l2::L2Check;

use crate::{json_to_py, load_error, parse_gen, raise, read_neff};

/// The numpy dtype name of a variable (ml_dtypes names for the narrow floats).
pub(crate) fn numpy_dtype(v: &VarSpec) -> &'static str {
    match dtype_of(v.format).map(|d| d.name()) {
        Some("float32r") => "float32",
        Some(n) => n,
        None => "uint8",
    }
}

fn fault_error(py: Python<'_>, cf: &CoreFault, schedule: u32, rank: Option<usize>) -> PyErr {
    let f = &cf.fault;
    let class = match f {
        Fault::Deadlock(_) => "Deadlock",
        Fault::OutOfBounds { .. } => "OutOfBounds",
        Fault::InvalidBundle { .. } => "InvalidBundle",
        Fault::NotSimulated { .. } => "NotSimulated",
        Fault::StepBudget { .. } => "StepBudgetExhausted",
        Fault::Budget { .. } => "BudgetExceeded",
        Fault::Exec { .. } => "ExecutionError",
        Fault::Interrupted { .. } => return PyKeyboardInterrupt::new_err(cf.to_string()),
    };
    let site = match f {
        Fault::OutOfBounds { site, .. }
        | Fault::InvalidBundle { site, .. }
        | Fault::NotSimulated { site, .. }
        | Fault::Exec { site, .. } => Some(*site),
        _ => None,
    };
    let engine = site.map(|s| s.engine.short().to_string());
    let index = site.map(|s| s.index);
    let offset = site.map(|s| s.index * 64);
    raise(
        py,
        class,
        (
            match rank {
                Some(r) => format!("rank {r}: {cf}"),
                None => cf.to_string(),
            },
            f.kind(),
            engine,
            index,
            offset,
            schedule,
        ),
    )
}

fn run_error(py: Python<'_>, source: &str, e: RunError) -> PyErr {
    match e {
        RunError::Load(e) => load_error(py, source, &e),
        RunError::Usage(m) => PyValueError::new_err(m),
        RunError::Setup(e) => PyValueError::new_err(e.to_string()),
        RunError::Fault {
            fault,
            schedule,
            rank,
            ..
        } => fault_error(py, &fault, schedule, rank),
        RunError::Interrupted => PyKeyboardInterrupt::new_err(e.to_string()),
    }
}

/// How long the calling thread waits for a run before it runs Python's signal handlers.
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// `f` run with `cfg` (and a stop flag of its own) on another thread, the GIL released, while
/// this thread waits in slices of [`SIGNAL_SLICE`] and runs Python's signal handlers between
/// them. A handler's error (`KeyboardInterrupt` for Ctrl-C) stops the run; once it has
/// stopped, that error is returned.
fn interruptible<T: Send>(
    py: Python<'_>,
    cfg: &RunConfig,
    f: impl FnOnce(&RunConfig) -> T + Send,
) -> PyResult<T> {
    /// Tells the waiting thread that the run is over, also when it panicked.
    struct Done<'a>(&'a AtomicBool, &'a std::thread::Thread);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
            self.1.unpark();
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = RunConfig {
        stop: Some(stop.clone()),
        ..cfg.clone()
    };
    let done = AtomicBool::new(false);
    let waiter = std::thread::current();
    std::thread::scope(|s| {
        let run = s.spawn(|| {
            let _done = Done(&done, &waiter);
            f(&cfg)
        });
        let mut signal = Ok(());
        while !done.load(Ordering::Acquire) {
            py.allow_threads(|| {
                if !done.load(Ordering::Acquire) {
                    std::thread::park_timeout(SIGNAL_SLICE);
                }
            });
            if let Err(e) = py.check_signals() {
                stop.store(true, Ordering::SeqCst);
                signal = Err(e);
                break;
            }
        }
        let r = py.allow_threads(|| run.join());
        signal?;
        Ok(r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })
}

/// The profile of a run's timelines: for one core, the per-engine profile (`sim profile
/// --json`'s `profile` object) with its slices for plotting: `{"makespan_ns", "tracks",
/// "critical_path", "slices"}`; for several, `{"makespan_ns", "cores": [...]}` with that
/// object (and its `subgraph`) per core.
fn profiles_json(ts: &[Timeline], program: &Program) -> serde_json::Value {
    if let [t] = ts {
        return profile_json(t);
    }
    let cores: Vec<serde_json::Value> = ts
        .iter()
        .enumerate()
        .map(|(c, t)| {
            let mut v = profile_json(t);
            v["subgraph"] = json!(program.core_name(c));
            v
        })
        .collect();
    let makespan = cores
        .iter()
        .filter_map(|c| c["makespan_ns"].as_f64())
        .fold(0.0f64, f64::max);
    json!({"makespan_ns": makespan, "cores": cores})
}

/// The per-engine profile of one timeline with its slices.
fn profile_json(t: &Timeline) -> serde_json::Value {
    let mut v = json!(t.profile());
    v["slices"] = t
        .slices
        .iter()
        .map(|s| {
            json!({
                "track": t.labels.get(s.agent as usize).cloned().unwrap_or_default(),
                "name": s.name,
                "start_ns": s.start,
                "dur_ns": s.dur,
                "wait_ns": s.waited,
                "bundle": s.bundle,
            })
        })
        .collect();
    v
}

/// What a `Result` needs to build its profile later: the kernel, its inputs and the run's
/// configuration (the round-robin run is deterministic, so a rerun with the timeline on has
/// the same outputs).
#[pyclass(module = "tpbsim._native", frozen)]
pub struct Run {
    program: Arc<Program>,
    /// The input arrays as flat `uint8` views (kept alive, borrowed again for the rerun).
    inputs: Vec<(String, Py<PyArray1<u8>>)>,
    cfg: RunConfig,
    source: String,
    profile: Option<serde_json::Value>,
}

#[pymethods]
impl Run {
    /// The profile of the round-robin run's timeline (recorded by the run itself with
    /// `profile=True`, else by one more round-robin run with the timeline on).
    fn profile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(p) = &self.profile {
            return json_to_py(py, p);
        }
        let cfg = RunConfig {
            timeline: true,
            schedules: 1,
            ..self.cfg.clone()
        };
        let program = self.program.clone();
        let views: Vec<_> = self
            .inputs
            .iter()
            .map(|(n, a)| (n.clone(), a.bind(py).readonly()))
            .collect();
        let given = borrowed(&views)?;
        let out = interruptible(py, &cfg, |cfg| {
            let gen = api::generation(&program, cfg.arch)?;
            let shared = api::share_inputs(&given);
            api::run_schedule(&program, gen, &shared, cfg, 0, &|_, _| {})
        })?
        .map_err(|e| run_error(py, &self.source, e))?;
        if out.timelines.is_empty() {
            return Err(PyValueError::new_err("the run recorded no timeline"));
        }
        json_to_py(py, &profiles_json(&out.timelines, &program))
    }
}

/// The bytes of a C-contiguous array as a flat `uint8` array (no copy).
fn byte_view<'py>(arr: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let flat = arr.call_method1("reshape", (-1,))?;
    let bytes = flat.call_method1("view", ("uint8",))?;
    Ok(bytes.downcast_into::<PyArray1<u8>>()?)
}

/// The bytes of each input view.
fn borrowed<'a>(
    views: &'a [(String, PyReadonlyArray1<'_, u8>)],
) -> PyResult<BTreeMap<String, &'a [u8]>> {
    views
        .iter()
        .map(|(n, v)| Ok((n.clone(), v.as_slice()?)))
        .collect::<Result<_, numpy::NotContiguousError>>()
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Each input of `d` checked against its variable (name, dtype, shape; another byte order
/// converted, values kept) and viewed as bytes; the library copies it once into the machine.
#[allow(clippy::type_complexity)]
fn input_arrays<'py>(
    program: &Program,
    np: &Bound<'py, PyModule>,
    inputs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Vec<(String, Bound<'py, PyArray1<u8>>)>> {
    let mut arrays = Vec::new();
    if let Some(d) = inputs {
        for (k, arr) in d.iter() {
            let name: String = k.extract()?;
            let var = program
                .var(&name)
                .filter(|v| v.kind == VarKind::Input)
                .ok_or_else(|| {
                    PyValueError::new_err(format!("the kernel has no input variable `{name}`"))
                })?;
            let want = numpy_dtype(var);
            let mut arr = np.getattr("ascontiguousarray")?.call1((arr,))?;
            // The machine reads little-endian bytes: an array of the other byte order is
            // converted (values kept), never reinterpreted.
            let dtype = arr.getattr("dtype")?;
            if !dtype.getattr("isnative")?.extract::<bool>()? || cfg!(target_endian = "big") {
                let le = dtype.call_method1("newbyteorder", ("<",))?;
                arr = arr.call_method1("astype", (le,))?;
            }
            let got: String = arr.getattr("dtype")?.getattr("name")?.extract()?;
            if got != want {
                return Err(PyValueError::new_err(format!(
                    "input `{name}`: dtype {got}, the variable is {want}"
                )));
            }
            let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
            if shape != var.shape {
                return Err(PyValueError::new_err(format!(
                    "input `{name}`: shape {shape:?}, the variable has shape {:?}",
                    var.shape
                )));
            }
            arrays.push((name, byte_view(&arr)?));
        }
    }
    Ok(arrays)
}

/// The outputs of a run as numpy arrays: each output's buffer becomes its array's (no copy;
/// a buffer shared between ranks is copied, so that each rank's array is its own), viewed
/// with the variable's dtype and shape.
fn outputs_dict<'py>(
    py: Python<'py>,
    np: &Bound<'py, PyModule>,
    program: &Program,
    mut bytes_by_name: BTreeMap<String, VarBytes>,
) -> PyResult<Bound<'py, PyDict>> {
    let outputs = PyDict::new(py);
    for v in program.outputs() {
        let Some(bytes) = bytes_by_name.remove(&v.name) else {
            continue;
        };
        let a = PyArray1::from_vec(py, bytes.into_vec())
            .into_any()
            .call_method1("view", (np.getattr("dtype")?.call1((numpy_dtype(v),))?,))?
            .call_method1("reshape", (v.shape.clone(),))?;
        outputs.set_item(&v.name, a)?;
    }
    Ok(outputs)
}

/// The options of a run of several ranks.
struct WorldArgs<'py, 'a> {
    /// The same inputs for every rank.
    dict: Option<Bound<'py, PyDict>>,
    /// Inputs per rank.
    per_rank: Option<Vec<Bound<'py, PyDict>>>,
    ranks: Option<u32>,
    arch: Option<&'a str>,
    check_races: bool,
    schedules: u32,
    max_steps: Option<u64>,
    profile: bool,
    collective_order: &'a str,
}

/// A world of ranks (docs/collectives.md): `outputs`, `stats` and `cores` are lists with one
/// entry per rank.
fn run_ranks<'py>(
    py: Python<'py>,
    program: &Program,
    source: &str,
    np: &Bound<'py, PyModule>,
    a: WorldArgs<'py, '_>,
) -> PyResult<Bound<'py, PyDict>> {
    let world = program.world();
    let ranks = match (a.ranks, &a.per_rank) {
        (Some(0), _) => return Err(PyValueError::new_err("ranks: at least 1")),
        (Some(n), Some(l)) if l.len() != n as usize => {
            return Err(PyValueError::new_err(format!(
                "ranks={n}, but inputs are given for {} ranks",
                l.len()
            )))
        }
        (Some(n), _) => n as usize,
        (None, Some(l)) => l.len(),
        (None, None) => world,
    };
    if ranks < world {
        return Err(PyValueError::new_err(format!(
            "the kernel's collectives span {world} ranks; a world of {ranks} cannot run them"
        )));
    }
    if a.profile {
        return Err(PyValueError::new_err(
            "profile is not available for a run of several ranks",
        ));
    }
    let order = match a.collective_order {
        "replica" => Order::Replica,
        "ring" => Order::Ring,
        o => {
            return Err(PyValueError::new_err(format!(
                "collective_order `{o}`: `replica` or `ring`"
            )))
        }
    };
    let arrays: Vec<_> = match &a.per_rank {
        Some(l) => l
            .iter()
            .map(|d| input_arrays(program, np, Some(d)))
            .collect::<PyResult<_>>()?,
        None => {
            let one = input_arrays(program, np, a.dict.as_ref())?;
            vec![one; ranks]
        }
    };
    let views: Vec<Vec<_>> = arrays
        .iter()
        .map(|r| r.iter().map(|(n, a)| (n.clone(), a.readonly())).collect())
        .collect();
    let given: Vec<BTreeMap<String, &[u8]>> =
        views.iter().map(|v| borrowed(v)).collect::<PyResult<_>>()?;
    let mut cfg = RunConfig {
        validator: Some(Arc::new(L2Check)),
        collective_order: order,
        check_races: a.check_races,
        schedules: a.schedules.max(1),
        ..RunConfig::default()
    };
    if let Some(g) = a.arch {
        cfg.arch = Some(parse_gen(g)?);
    }
    if let Some(s) = a.max_steps {
        cfg.max_steps = s;
    }
    let outs = interruptible(py, &cfg, |cfg| api::run_world(program, &given, cfg))?
        .map_err(|e| run_error(py, source, e))?;
    drop(given);
    drop(views);
    let r = PyDict::new(py);
    let (outputs, stats, cores) = (PyList::empty(py), PyList::empty(py), PyList::empty(py));
    let (findings, diffs) = (PyList::empty(py), PyList::empty(py));
    let mut gen = None;
    for o in outs {
        gen = Some(o.gen);
        stats.append(json_to_py(py, &o.stats)?)?;
        cores.append(json_to_py(py, &o.cores)?)?;
        findings.append(findings_list(py, &o.findings)?)?;
        diffs.append(json_to_py(py, &o.schedule_diffs)?)?;
        outputs.append(outputs_dict(py, np, program, o.outputs)?)?;
    }
    r.set_item("outputs", outputs)?;
    r.set_item("stats", stats)?;
    r.set_item("cores", cores)?;
    r.set_item("findings", findings)?;
    r.set_item("schedule_diffs", diffs)?;
    r.set_item("arch", gen.map(|g| g.short()))?;
    r.set_item("ranks", ranks)?;
    r.set_item("collective_order", a.collective_order)?;
    r.set_item("run", py.None())?;
    Ok(r)
}

/// Race findings as a list of dicts, each with its `kind`.
fn findings_list<'py>(py: Python<'py>, fs: &[Finding]) -> PyResult<Bound<'py, PyList>> {
    let findings = PyList::empty(py);
    for f in fs {
        let d = json_to_py(py, f)?;
        d.set_item("kind", f.kind_name())?;
        findings.append(d)?;
    }
    Ok(findings)
}

/// Run a kernel; returns a dict with `outputs`, `stats`, `findings`, `schedule_diffs`, `arch`
/// and `run` (the [`Run`] that builds the profile). With `inputs` a list of dicts (one per
/// rank), `ranks`, or a kernel whose collectives span several ranks, the kernel runs as a world
/// of ranks ([`run_ranks`]).
#[pyfunction]
#[pyo3(signature = (neff, inputs=None, *, arch=None, check_races=false, schedules=1, max_steps=None, profile=false, ranks=None, collective_order="replica"))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    neff: &Bound<'py, PyAny>,
    inputs: Option<&Bound<'py, PyAny>>,
    arch: Option<&str>,
    check_races: bool,
    schedules: u32,
    max_steps: Option<u64>,
    profile: bool,
    ranks: Option<u32>,
    collective_order: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let (n, source) = read_neff(py, neff)?;
    let program = api::load_program(&n).map_err(|e| run_error(py, &source, e))?;
    let np = py.import("numpy")?;
    py.import("ml_dtypes")?;
    let per_rank = match inputs {
        None => None,
        Some(i) if i.downcast::<PyDict>().is_ok() => None,
        Some(i) => Some(
            i.try_iter()
                .map_err(|_| {
                    PyTypeError::new_err(
                        "inputs: a dict of arrays, or a list of such dicts (one per rank)",
                    )
                })?
                .map(|d| {
                    d.and_then(|d| {
                        d.downcast_into::<PyDict>().map_err(|_| {
                            PyTypeError::new_err("inputs: each rank's inputs are a dict of arrays")
                        })
                    })
                })
                .collect::<PyResult<Vec<_>>>()?,
        ),
    };
    let dict = inputs.and_then(|i| i.downcast::<PyDict>().ok().cloned());
    if per_rank.is_some() || ranks.is_some() || program.world() > 1 {
        return run_ranks(
            py,
            &program,
            &source,
            &np,
            WorldArgs {
                dict,
                per_rank,
                ranks,
                arch,
                check_races,
                schedules,
                max_steps,
                profile,
                collective_order,
            },
        );
    }
    let arrays = input_arrays(&program, &np, dict.as_ref())?;
    let views: Vec<_> = arrays
        .iter()
        .map(|(n, a)| (n.clone(), a.readonly()))
        .collect();
    let given = borrowed(&views)?;
    let mut cfg = RunConfig {
        check_races,
        schedules: schedules.max(1),
        timeline: profile,
        validator: Some(Arc::new(L2Check)),
        ..RunConfig::default()
    };
    if let Some(a) = arch {
        cfg.arch = Some(parse_gen(a)?);
    }
    if let Some(s) = max_steps {
        cfg.max_steps = s;
    }
    let out = interruptible(py, &cfg, |cfg| api::run_program(&program, &given, cfg))?
        .map_err(|e| run_error(py, &source, e))?;
    let profile = (!out.timelines.is_empty()).then(|| profiles_json(&out.timelines, &program));
    drop(given);
    drop(views);
    let outputs = outputs_dict(py, &np, &program, out.outputs)?;
    let r = PyDict::new(py);
    r.set_item("outputs", outputs)?;
    r.set_item("stats", json_to_py(py, &out.stats)?)?;
    r.set_item("cores", json_to_py(py, &out.cores)?)?;
    r.set_item("findings", findings_list(py, &out.findings)?)?;
    r.set_item("schedule_diffs", json_to_py(py, &out.schedule_diffs)?)?;
    r.set_item("arch", out.gen.short())?;
    cfg.arch = Some(out.gen);
    r.set_item(
        "run",
        Run {
            program: Arc::new(program),
            inputs: arrays.into_iter().map(|(n, a)| (n, a.unbind())).collect(),
            cfg,
            source,
            profile,
        },
    )?;
    Ok(r)
}

/// The kernel's DRAM variables: one dict per variable with `name`, `kind` (`input`,
/// `output`, ...), `dtype` (numpy name), `shape` and `size` (bytes).
#[pyfunction]
fn variables<'py>(py: Python<'py>, neff: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let (n, source) = read_neff(py, neff)?;
    let program = api::load_program(&n).map_err(|e| run_error(py, &source, e))?;
    let mut vars: Vec<&VarSpec> = program.io_vars();
    for k in &program.cores {
        for v in &k.vars {
            if !vars.iter().any(|o| o.name == v.name) {
                vars.push(v);
            }
        }
    }
    vars.into_iter()
        .map(|v| {
            let d = PyDict::new(py);
            d.set_item("name", &v.name)?;
            d.set_item("kind", format!("{:?}", v.kind).to_ascii_lowercase())?;
            d.set_item("dtype", numpy_dtype(v))?;
            d.set_item("shape", v.shape.clone())?;
            d.set_item("size", v.size)?;
            Ok(d)
        })
        .collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(variables, m)?)?;
    m.add_class::<Run>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}
