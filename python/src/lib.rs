//! The `tpbsim._native` extension module: the Rust library for Python. Every entry point here
//! calls the library (`tpbsim_sim::api`, the ISA text/encoder, the validators, the cast
//! engine); `tpbsim/__init__.py` holds the exception classes and thin result wrappers.
//!
//! Arrays cross through numpy's buffer: an input is copied once into the machine, an output
//! is handed to numpy without a copy (see `docs/python.md`, "Copies").

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tpbsim_isa::{Engine, Gen};
use tpbsim_neff::{Neff, NeffError, ReadOptions};
use tpbsim_sim::machine::load::LoadError;

mod builder;
mod run;
mod tools;

/// Raise the `tpbsim` exception class `class` with `args`.
pub(crate) fn raise<'py>(
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

/// The member and JSON path a NEFF error names, where it names them.
fn neff_site(e: &NeffError) -> (Option<String>, Option<String>) {
    match e {
        NeffError::Json { member, path, .. } | NeffError::Invalid { member, path, .. } => {
            (Some(member.clone()), Some(path.clone()))
        }
        NeffError::UnsafePath { member, .. }
        | NeffError::UnsupportedEntry { member, .. }
        | NeffError::DuplicateMember { member }
        | NeffError::MemberTooLarge { member, .. }
        | NeffError::MissingMember { member, .. }
        | NeffError::Npy { member, .. } => (Some(member.clone()), None),
        _ => (None, None),
    }
}

/// `tpbsim.NeffError(message, member, path)` for a NEFF that cannot be read (`source` names
/// the file or `<bytes>`).
pub(crate) fn neff_error(py: Python<'_>, source: &str, e: &NeffError) -> PyErr {
    let (member, path) = neff_site(e);
    // A file-system error names its path already: the file is named once.
    let message = match e {
        NeffError::Io { .. } => e.to_string(),
        _ => format!("{source}: {e}"),
    };
    raise(py, "NeffError", (message, member, path))
}

/// `tpbsim.NeffError` for a NEFF that reads but does not load as a kernel.
pub(crate) fn load_error(py: Python<'_>, source: &str, e: &LoadError) -> PyErr {
    match e {
        LoadError::Neff(e) => neff_error(py, source, e),
        LoadError::Invalid { member, .. } => raise(
            py,
            "NeffError",
            (
                format!("{source}: {e}"),
                Some(member.clone()),
                None::<String>,
            ),
        ),
    }
}

/// A NEFF from a path (str or os.PathLike) or bytes, with the name errors use.
pub(crate) fn read_neff(py: Python<'_>, neff: &Bound<'_, PyAny>) -> PyResult<(Neff, String)> {
    let opts = ReadOptions::default();
    if let Ok(b) = neff.downcast::<PyBytes>() {
        let name = "<bytes>".to_string();
        return Neff::from_bytes(b.as_bytes(), &opts)
            .map(|n| (n, name.clone()))
            .map_err(|e| neff_error(py, &name, &e));
    }
    let path: std::path::PathBuf = neff
        .extract()
        .map_err(|_| PyTypeError::new_err("expected a path (str or os.PathLike) or bytes"))?;
    let name = path.display().to_string();
    let bytes = read_file(&path, MAX_NEFF_FILE_BYTES).map_err(|source| {
        neff_error(
            py,
            &name,
            &tpbsim_neff::NeffError::Io {
                path: path.clone(),
                source,
            },
        )
    })?;
    Neff::from_bytes(&bytes, &opts)
        .map(|n| (n, name.clone()))
        .map_err(|e| neff_error(py, &name, &e))
}

/// The largest NEFF file the package reads.
const MAX_NEFF_FILE_BYTES: u64 = 2 << 30;

/// The bytes of the file at `path`, at most `limit`. Files are read, never mapped: a file
/// truncated by another process under a map raises SIGBUS, which would end the interpreter;
/// a read sees the shorter file and the readers name what is missing.
pub(crate) fn read_file(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is a directory",
        ));
    }
    tpbsim_isa::fsio::read_to_limit(file, limit)
}

/// A generation from its name (`v2`..`v5` or a codename).
pub(crate) fn parse_gen(s: &str) -> PyResult<Gen> {
    s.parse::<Gen>()
        .map_err(|e| PyValueError::new_err(format!("arch `{s}`: {e}")))
}

/// An engine from its name (`pe`, `act`, `pool`, `dve`, `sp` or a stream file name's).
pub(crate) fn parse_engine(s: &str) -> PyResult<Engine> {
    s.parse::<Engine>()
        .map_err(|e| PyValueError::new_err(format!("engine `{s}`: {e}")))
}

/// A JSON value as the Python object `json.loads` makes of it.
pub(crate) fn json_to_py<'py>(
    py: Python<'py>,
    v: &impl serde::Serialize,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?.getattr("loads")?.call1((text,))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    tpbsim_sim::numerics::simd::cap_from_env().map_err(pyo3::exceptions::PyValueError::new_err)?;
    run::register(m)?;
    tools::register(m)?;
    builder::register(m)?;
    Ok(())
}
