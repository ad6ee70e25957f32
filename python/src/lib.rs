//! The `tpbsim._native` extension module: the Rust library's run entry point for Python.
//! Arrays cross as contiguous byte buffers (one copy each way, no per-element work); the
//! exception classes and result wrappers live in `tpbsim/__init__.py`.

use std::collections::BTreeMap;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use tpbsim_isa::neff::{Neff, ReadOptions};
use tpbsim_isa::Gen;
use tpbsim_sim::api::{self, RunConfig, RunError};
use tpbsim_sim::machine::load::dtype_of;
use tpbsim_sim::machine::{Fault, VarKind, VarSpec};

/// The numpy dtype name of a variable (ml_dtypes names for the narrow floats).
fn numpy_dtype(v: &VarSpec) -> &'static str {
    match dtype_of(v.format).map(|d| d.name()) {
        Some("float32r") => "float32",
        Some(n) => n,
        None => "uint8",
    }
}

/// Raise the `tpbsim` exception class `class` with `args`.
fn raise<'py>(
    py: Python<'py>,
    class: &str,
    args: impl IntoPyObject<'py, Target = pyo3::types::PyTuple>,
) -> PyErr {
    match py
        .import("tpbsim")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1(args))
    {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

fn fault_error(py: Python<'_>, f: &Fault, schedule: u32) -> PyErr {
    let class = match f {
        Fault::Deadlock(_) => "Deadlock",
        Fault::OutOfBounds { .. } => "OutOfBounds",
        Fault::InvalidBundle { .. } => "InvalidBundle",
        Fault::NotSimulated { .. } => "NotSimulated",
        Fault::StepBudget { .. } => "StepBudgetExhausted",
        Fault::Budget { .. } => "BudgetExceeded",
        Fault::Exec { .. } => "ExecutionError",
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
        (f.to_string(), f.kind(), engine, index, offset, schedule),
    )
}

fn run_error(py: Python<'_>, e: RunError) -> PyErr {
    match e {
        RunError::Load(e) => raise(py, "NeffError", (e.to_string(),)),
        RunError::Usage(m) => PyValueError::new_err(m),
        RunError::Setup(e) => PyValueError::new_err(e.to_string()),
        RunError::Fault { fault, schedule } => fault_error(py, &fault, schedule),
    }
}

/// Read a NEFF from a path (str or os.PathLike) or bytes.
fn read_neff(py: Python<'_>, neff: &Bound<'_, PyAny>) -> PyResult<Neff> {
    let opts = ReadOptions::default();
    let r = if let Ok(b) = neff.downcast::<PyBytes>() {
        Neff::from_bytes(b.as_bytes(), &opts).map_err(|e| format!("<bytes>: {e}"))
    } else {
        let path: std::path::PathBuf = neff.extract().map_err(|_| {
            PyTypeError::new_err("neff: expected a path (str or os.PathLike) or bytes")
        })?;
        Neff::read(&path, &opts).map_err(|e| format!("{}: {e}", path.display()))
    };
    r.map_err(|e| raise(py, "NeffError", (e,)))
}

fn json_to_py<'py>(py: Python<'py>, v: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?.getattr("loads")?.call1((text,))
}

/// Run a kernel; returns a dict with `outputs`, `stats`, `findings`, `schedule_diffs`, `arch`.
#[pyfunction]
#[pyo3(signature = (neff, inputs=None, *, arch=None, check_races=false, schedules=1, max_steps=None))]
fn run<'py>(
    py: Python<'py>,
    neff: &Bound<'py, PyAny>,
    inputs: Option<&Bound<'py, PyDict>>,
    arch: Option<&str>,
    check_races: bool,
    schedules: u32,
    max_steps: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let n = read_neff(py, neff)?;
    let kernel = api::load_kernel(&n).map_err(|e| run_error(py, e))?;
    let np = py.import("numpy")?;
    py.import("ml_dtypes")?;
    let mut given = BTreeMap::new();
    if let Some(d) = inputs {
        for (k, arr) in d.iter() {
            let name: String = k.extract()?;
            let var = kernel
                .var(&name)
                .filter(|v| v.kind == VarKind::Input)
                .ok_or_else(|| {
                    PyValueError::new_err(format!("the kernel has no input variable `{name}`"))
                })?;
            let want = numpy_dtype(var);
            let arr = np.getattr("asarray")?.call1((arr,))?;
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
            let bytes = arr.call_method1("tobytes", ("C",))?;
            let data: Vec<u8> = bytes.downcast::<PyBytes>()?.as_bytes().to_vec();
            given.insert(name, data);
        }
    }
    let mut cfg = RunConfig {
        check_races,
        schedules: schedules.max(1),
        ..RunConfig::default()
    };
    if let Some(a) = arch {
        cfg.arch = Some(
            a.parse::<Gen>()
                .map_err(|e| PyValueError::new_err(format!("arch `{a}`: {e}")))?,
        );
    }
    if let Some(s) = max_steps {
        cfg.max_steps = s;
    }
    let out = py
        .allow_threads(|| api::run_kernel(&kernel, &given, &cfg))
        .map_err(|e| run_error(py, e))?;
    let outputs = PyDict::new(py);
    for v in kernel.vars.iter().filter(|v| v.kind == VarKind::Output) {
        let Some(bytes) = out.outputs.get(&v.name) else {
            continue;
        };
        let b = PyBytes::new(py, bytes);
        let a = np
            .getattr("frombuffer")?
            .call1((b, numpy_dtype(v)))?
            .call_method1("reshape", (v.shape.clone(),))?;
        outputs.set_item(&v.name, a)?;
    }
    let r = PyDict::new(py);
    r.set_item("outputs", outputs)?;
    r.set_item("stats", json_to_py(py, &out.stats)?)?;
    let findings = PyList::empty(py);
    for f in &out.findings {
        let d = json_to_py(py, f)?;
        d.set_item("kind", f.kind_name())?;
        findings.append(d)?;
    }
    r.set_item("findings", findings)?;
    r.set_item("schedule_diffs", json_to_py(py, &out.schedule_diffs)?)?;
    r.set_item("arch", out.gen.short())?;
    Ok(r)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}
