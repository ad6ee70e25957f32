//! `validate` (L2 + lint), `verify` (L1), `decode`, `disasm`, `asm`, `convert` and the ISA
//! spec tables, each a call into the library.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use serde_json::{json, Value};
use tpbsim_isa::stream::EngineStream;
use tpbsim_isa::text::{bundle_json, disasm_line_as, parse_text, render_error, Syntax};
use tpbsim_isa::NumFormat;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_neff::{Neff, Subgraph};
use tpbsim_sim::machine::load;
use tpbsim_sim::numerics::{cast_slice, CastPolicy};
use tpbsim_validate::bir;
use tpbsim_validate::diag::{Diagnostic, Mode};
use tpbsim_validate::l2::{self, StreamSpec};
use tpbsim_validate::lift::{self, StreamInput};
use tpbsim_validate::lint;
use tpbsim_validate::registry::{PropertySet, Registry};

use crate::{json_to_py, load_error, neff_error, parse_engine, parse_gen, read_neff};

/// The diagnostics as a list of dicts with the JSONL keys of `sim validate --json`.
fn diag_list<'py>(py: Python<'py>, diags: &[Diagnostic]) -> PyResult<Bound<'py, PyAny>> {
    let v: Vec<Value> = diags.iter().map(Diagnostic::to_json).collect();
    json_to_py(py, &v)
}

/// The generation of a NEFF: `arch`, else its target.
fn neff_gen(py: Python<'_>, n: &Neff, source: &str, arch: Option<&str>) -> PyResult<Gen> {
    if let Some(a) = arch {
        return parse_gen(a);
    }
    load::target_gen(n)
        .map_err(|e| load_error(py, source, &e))?
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "{source}: the NEFF names {}; pass arch=\"v2\"|\"v3\"|\"v4\"|\"v5\"",
                load::target_source(n)
            ))
        })
}

/// Every subgraph of a NEFF, refusing one where nothing is reachable or a stream is left aside.
fn subgraphs(py: Python<'_>, n: &Neff, source: &str) -> PyResult<Vec<Subgraph>> {
    let sgs = n.subgraphs().map_err(|e| neff_error(py, source, &e))?;
    n.check_reachable(&sgs)
        .map_err(|e| neff_error(py, source, &e))?;
    Ok(sgs)
}

/// An engine stream from bytes or a `.bin` path; `None` when `data` is a NEFF (a path not
/// ending in `.bin`, or bytes without `engine`).
fn stream_input(data: &Bound<'_, PyAny>, engine: Option<&str>) -> PyResult<Option<EngineStream>> {
    let engine = engine.map(parse_engine).transpose()?;
    if let Ok(b) = data.downcast::<PyBytes>() {
        let Some(e) = engine else { return Ok(None) };
        return EngineStream::from_bytes("<bytes>", b.as_bytes(), Some(e))
            .map(Some)
            .map_err(|e| PyValueError::new_err(e.to_string()));
    }
    let path: std::path::PathBuf = data
        .extract()
        .map_err(|_| PyTypeError::new_err("expected a path (str or os.PathLike) or bytes"))?;
    let is_bin = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("bin"));
    if !is_bin {
        return Ok(None);
    }
    // Read, not mapped (see `read_file`).
    let bytes = crate::read_file(&path, tpbsim_isa::stream::MAX_UNMAPPED_STREAM_BYTES)
        .map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))?;
    EngineStream::from_bytes(path.display().to_string(), &bytes, engine)
        .map(Some)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// L2 wire validation (and the lint) of an engine stream (bytes with `engine`, or a `.bin`
/// path) or of every stream of a NEFF (path or bytes). Returns the diagnostics as dicts.
#[pyfunction]
#[pyo3(signature = (data, arch=None, engine=None, fail_fast=false))]
fn validate<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    arch: Option<&str>,
    engine: Option<&str>,
    fail_fast: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let mode = if fail_fast {
        Mode::FailFast
    } else {
        Mode::CollectAll
    };
    let mut streams: Vec<(String, EngineStream)> = Vec::new();
    let mut diags = Vec::new();
    let gen;
    if let Some(s) = stream_input(data, engine)? {
        gen = parse_gen(
            arch.ok_or_else(|| PyValueError::new_err("arch is required for an engine stream"))?,
        )?;
        diags.extend(lint::lint(
            &[lint::LintStream {
                file: s.source_name().to_string(),
                engine: Some(s.engine()),
                bundles: s.bundles(),
            }],
            gen,
            None,
        ));
        streams.push((s.source_name().to_string(), s));
    } else {
        let (n, source) = read_neff(py, data)?;
        gen = neff_gen(py, &n, &source, arch)?;
        for sg in subgraphs(py, &n, &source)? {
            let ls: Vec<lint::LintStream<'_>> = sg
                .streams
                .iter()
                .map(|(e, sm)| lint::LintStream {
                    file: format!("{source}:{}", sm.member),
                    engine: Some(*e),
                    bundles: sm.stream.bundles(),
                })
                .collect();
            diags.extend(lint::lint(&ls, gen, Some(&sg)));
            for (_, sm) in sg.streams {
                streams.push((format!("{source}:{}", sm.member), sm.stream));
            }
        }
    }
    if !l2::GENS.contains(&gen) {
        return Err(PyValueError::new_err(format!(
            "{gen}: the L2 validator exists for v2, v3 and v4"
        )));
    }
    let mut wire = Vec::new();
    for (name, s) in &streams {
        let spec = StreamSpec {
            file: Some(name.clone()),
            gen,
            engine: s.engine(),
        };
        let report = py.allow_threads(|| l2::validate_stream(s.bundles(), &spec, mode));
        let stop = fail_fast && report.has_errors();
        wire.extend(report.diagnostics);
        if stop {
            break;
        }
    }
    wire.extend(diags);
    diag_list(py, &wire)
}

/// L1 verification of a BIR module (JSON text, or a path ending in `.json`) or of a NEFF's
/// lifted streams (path or bytes), with the rules of `rules` (names or groups as `sim verify
/// --rules` takes them; default: the default L1 set). Returns the diagnostics as dicts.
#[pyfunction]
#[pyo3(signature = (data, arch=None, rules=None))]
fn verify<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    arch: Option<&str>,
    rules: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let registry = Registry::l1();
    let props = match rules {
        Some(list) => PropertySet::parse_list(list, &registry)
            .map_err(|e| PyValueError::new_err(e.to_string()))?,
        None => PropertySet::default_l1(),
    };
    let level = arch
        .map(|a| {
            bir::ArchLevel::parse(a)
                .ok_or_else(|| PyValueError::new_err(format!("unknown arch `{a}`")))
        })
        .transpose()?;
    let bir_text = if let Ok(s) = data.downcast::<PyString>() {
        let s = s.to_cow()?;
        if s.trim_start().starts_with('{') {
            Some(s.into_owned())
        } else if s.to_ascii_lowercase().ends_with(".json") {
            Some(
                std::fs::read_to_string(s.as_ref())
                    .map_err(|e| PyValueError::new_err(format!("{s}: {e}")))?,
            )
        } else {
            None
        }
    } else {
        None
    };
    let (module, mut diags, file) = if let Some(text) = bir_text {
        let module = bir::from_json_str(&text).map_err(|e| PyValueError::new_err(e.to_string()))?;
        (module, Vec::new(), None)
    } else {
        let (n, source) = read_neff(py, data)?;
        let gen = match level {
            Some(l) => l.gen().ok_or_else(|| {
                PyValueError::new_err(format!("{l}: tpbsim decodes streams of v2..v5 only"))
            })?,
            None => neff_gen(py, &n, &source, None)?,
        };
        let sgs = subgraphs(py, &n, &source)?;
        let mut inputs = Vec::new();
        for sg in &sgs {
            for (e, sm) in &sg.streams {
                inputs.push(StreamInput {
                    function: if sg.dir.is_empty() {
                        e.short().to_string()
                    } else {
                        format!("{}.{}", sg.dir, e.short())
                    },
                    file: Some(format!("{source}:{}", sm.member)),
                    engine: *e,
                    bundles: sm.stream.bundles(),
                });
            }
        }
        let lifted = lift::lift_streams(&inputs, gen, Some(source.clone()));
        (lifted.module, lifted.diagnostics, Some(source))
    };
    let mut module = module;
    if let Some(l) = level {
        module.arch = l;
    }
    let found = py.allow_threads(|| registry.verify(props, &module, Mode::CollectAll));
    diags.extend(found);
    for d in &mut diags {
        lift::locate(&module, d);
        if let Some(f) = &file {
            d.location.file.get_or_insert_with(|| f.clone());
        }
    }
    diag_list(py, &diags)
}

/// The engine streams of a NEFF: one dict per stream with `member`, `subgraph`, `engine` and
/// `data` (its bytes).
#[pyfunction]
fn streams<'py>(py: Python<'py>, neff: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let (n, source) = read_neff(py, neff)?;
    let mut out = Vec::new();
    for sg in subgraphs(py, &n, &source)? {
        for (e, sm) in &sg.streams {
            let d = PyDict::new(py);
            d.set_item("member", &sm.member)?;
            d.set_item("subgraph", &sg.dir)?;
            d.set_item("engine", e.short())?;
            d.set_item("data", PyBytes::new(py, sm.stream.as_bytes()))?;
            out.push(d);
        }
    }
    Ok(out)
}

/// The bundles of `data` (a whole number of 64-byte bundles).
fn bundles_of(data: &[u8]) -> PyResult<Vec<Bundle>> {
    if !data.len().is_multiple_of(64) {
        return Err(PyValueError::new_err(format!(
            "{} bytes: not a whole number of 64-byte bundles",
            data.len()
        )));
    }
    Ok(data
        .chunks_exact(64)
        .map(|c| {
            let mut b = [0u8; 64];
            b.copy_from_slice(c);
            Bundle(b)
        })
        .collect())
}

/// Decode a stream's bytes: one dict per bundle (the keys of `sim decode --json`).
#[pyfunction]
#[pyo3(signature = (data, arch, engine=None))]
fn decode<'py>(
    py: Python<'py>,
    data: &[u8],
    arch: &str,
    engine: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let gen = parse_gen(arch)?;
    let engine = engine.map(parse_engine).transpose()?;
    let v: Vec<Value> = bundles_of(data)?
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut v = bundle_json(i, b, gen);
            if let (Some(e), Some(o)) = (engine, v.as_object_mut()) {
                o.insert("engine".into(), json!(e.short()));
            }
            v
        })
        .collect();
    json_to_py(py, &v)
}

/// The text form of a stream's bytes, one line per bundle (`sim disasm`, without its header).
#[pyfunction]
#[pyo3(signature = (data, arch, engine=None, syntax="tpbsim"))]
fn disasm(data: &[u8], arch: &str, engine: Option<&str>, syntax: &str) -> PyResult<String> {
    let gen = parse_gen(arch)?;
    let engine = engine.map(parse_engine).transpose()?;
    let syntax: Syntax = syntax
        .parse()
        .map_err(|e| PyValueError::new_err(format!("syntax `{syntax}`: {e}")))?;
    let mut out = String::new();
    for (i, b) in bundles_of(data)?.iter().enumerate() {
        out.push_str(&disasm_line_as(i, b, gen, engine, syntax));
        out.push('\n');
    }
    Ok(out)
}

/// Assemble the text form (either syntax) into a stream's bytes.
#[pyfunction]
pub(crate) fn asm<'py>(py: Python<'py>, text: &str, arch: &str) -> PyResult<Bound<'py, PyBytes>> {
    let gen = parse_gen(arch)?;
    let bundles = parse_text(text, gen)
        .map_err(|(line, e)| PyValueError::new_err(render_error("<text>", text, line, &e)))?;
    let mut bytes = Vec::with_capacity(bundles.len() * 64);
    for b in &bundles {
        bytes.extend_from_slice(&b.0);
    }
    Ok(PyBytes::new(py, &bytes))
}

/// Cast an array to the format `to` (an ml_dtypes name) through the cast engine; returns a new
/// array of the same shape.
#[pyfunction]
#[pyo3(signature = (array, to, *, saturate=true, nan_selector=false))]
fn convert<'py>(
    py: Python<'py>,
    array: &Bound<'py, PyAny>,
    to: &Bound<'py, PyAny>,
    saturate: bool,
    nan_selector: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    py.import("ml_dtypes")?;
    // The shape of the array as given (a 0-d array keeps its shape; `ascontiguousarray`
    // returns at least one dimension).
    let arr = np.getattr("asarray")?.call1((array,))?;
    let shape = arr.getattr("shape")?;
    let mut arr = np.getattr("ascontiguousarray")?.call1((arr,))?;
    // The cast engine reads little-endian bytes: an array of the other byte order is
    // converted (values kept), never reinterpreted.
    let dtype = arr.getattr("dtype")?;
    if !dtype.getattr("isnative")?.extract::<bool>()? || cfg!(target_endian = "big") {
        let le = dtype.call_method1("newbyteorder", ("<",))?;
        arr = arr.call_method1("astype", (le,))?;
    }
    let from_name: String = arr.getattr("dtype")?.getattr("name")?.extract()?;
    let to_dtype = np.getattr("dtype")?.call1((to,))?;
    let to_name: String = to_dtype.getattr("name")?.extract()?;
    let format = |name: &str| {
        NumFormat::from_name(name)
            .filter(|f| f.lanes() == 1)
            .ok_or_else(|| {
                PyValueError::new_err(format!("dtype {name}: the cast engine has no such format"))
            })
    };
    let (from, dst_format) = (format(&from_name)?, format(&to_name)?);
    let src = arr
        .call_method1("reshape", (-1,))?
        .call_method1("view", ("uint8",))?
        .downcast_into::<PyArray1<u8>>()?;
    let src = src.readonly();
    let src = src
        .as_slice()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let n = src.len() / from.container_bytes();
    let mut dst = vec![0u8; n * dst_format.container_bytes()];
    let policy = CastPolicy {
        saturate_fp8: saturate,
        fp8_nan_selector: nan_selector,
        ..CastPolicy::DEVICE
    };
    cast_slice(src, from, &mut dst, dst_format, &policy)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyArray1::from_vec(py, dst)
        .into_any()
        .call_method1("view", (to_dtype,))?
        .call_method1("reshape", (shape,))
}

/// The ISA spec for `arch`: `{"opcodes": [...], "formats": {...}, "enums": {...}}` — each
/// opcode's mnemonic, byte, engines and format; each format's fields (name, type, byte offset,
/// float); each enumeration's value names on that generation.
#[pyfunction]
fn spec<'py>(py: Python<'py>, arch: &str) -> PyResult<Bound<'py, PyAny>> {
    let gen = parse_gen(arch)?;
    json_to_py(py, &spec_json(gen))
}

pub(crate) fn spec_json(gen: Gen) -> Value {
    use tpbsim_isa::spec;
    let gi = spec_index(gen);
    let opcodes: Vec<Value> = spec::opcodes()
        .iter()
        .filter(|o| o.is_present(gen))
        .map(|o| {
            let engines: Vec<&str> = Engine::ALL
                .iter()
                .filter(|e| o.runs_on(**e))
                .map(|e| e.short())
                .collect();
            json!({"mnemonic": o.mnemonic(), "code": o.code, "engines": engines, "format": o.format})
        })
        .collect();
    let formats: serde_json::Map<String, Value> = spec::formats()
        .iter()
        .filter(|f| f.gens.as_bytes().get(gi).is_some_and(|c| *c != b'-'))
        .map(|f| {
            let fields: Vec<Value> = f
                .fields
                .iter()
                .filter(|r| r.at[gi] != u8::MAX)
                .map(|r| {
                    json!({"name": r.name, "type": format!("{:?}", r.ty), "offset": r.at[gi], "float": r.float})
                })
                .collect();
            (f.name.to_string(), json!(fields))
        })
        .collect();
    let enums: serde_json::Map<String, Value> = spec::enums()
        .iter()
        .map(|e| {
            let names: Vec<&str> = e.values_in(gen).map(|v| v.name).collect();
            (e.name.to_string(), json!(names))
        })
        .collect();
    json!({"arch": gen.short(), "opcodes": opcodes, "formats": formats, "enums": enums})
}

/// Column of `gen` in the spec's per-generation tables (v2..v5).
fn spec_index(gen: Gen) -> usize {
    gen.index()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(disasm, m)?)?;
    m.add_function(wrap_pyfunction!(asm, m)?)?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_function(wrap_pyfunction!(spec, m)?)?;
    m.add_function(wrap_pyfunction!(streams, m)?)?;
    Ok(())
}
