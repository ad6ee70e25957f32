//! `tpbsim.Kernel`: a kernel built from Python calls. Engine instructions are written as
//! `k.<engine>.<mnemonic>(field=value, ...)`: the mnemonic and the field names are the ISA
//! spec's, each call is encoded at once from its typed fields by the library's encoder (the
//! stage the assembler reads a line into; unknown fields and enumeration names are refused
//! where they are written, and no value passes through text), and `k.neff()` packs the
//! streams, `def.json`, the DMA queues of `SP.json` and the input data with the library's NEFF
//! writer.

use std::collections::BTreeMap;

use pyo3::exceptions::{PyAttributeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PySlice, PyTuple};
use serde_json::{json, Value};
use tpbsim_isa::text::{disasm_bundle, encode_fields, FieldArg};
use tpbsim_isa::{spec, Bundle, Engine, Gen, Geometry, NumFormat};
use tpbsim_neff::{self as neff, Neff};
use tpbsim_sim::machine::ops::pe::compiler_weights_source;

use crate::{neff_error, parse_engine, parse_gen};

/// Where a tensor lives.
#[derive(Clone, Debug, PartialEq)]
enum Place {
    /// A DRAM variable, by name.
    Dram(String),
    /// On chip (SBUF or PSUM): the partition-folded start address.
    Chip,
}

/// A tensor view: a DRAM variable (or a slice of one), or an SBUF/PSUM tile.
#[pyclass(module = "tpbsim._native", frozen)]
#[derive(Clone, Debug)]
pub struct Tensor {
    place: Place,
    /// numpy dtype name.
    #[pyo3(get)]
    dtype: String,
    /// Element size in bytes.
    itemsize: u64,
    /// Sizes per dimension, outermost first.
    #[pyo3(get)]
    shape: Vec<u64>,
    /// Steps per dimension in elements.
    steps: Vec<i64>,
    /// Byte offset into the variable (DRAM) or the start address (on chip).
    #[pyo3(get)]
    offset: u64,
    /// First partition and partition count (tiles).
    #[pyo3(get)]
    partitions: Option<(u32, u32)>,
    /// Bytes from one partition to the next (tiles).
    partition_stride: u64,
}

#[pymethods]
impl Tensor {
    /// A slice with numpy basic indexing (integers and `start:stop` slices, step 1) of a DRAM
    /// tensor.
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<Tensor> {
        if self.place == Place::Chip {
            return Err(PyValueError::new_err(
                "tiles are addressed by partition range and free offset, not sliced",
            ));
        }
        let keys: Vec<Bound<'_, PyAny>> = match key.downcast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => vec![key.clone()],
        };
        if keys.len() > self.shape.len() {
            return Err(PyValueError::new_err(format!(
                "{} indices for a tensor of {} dimensions",
                keys.len(),
                self.shape.len()
            )));
        }
        let mut t = self.clone();
        let mut shape = Vec::new();
        let mut steps = Vec::new();
        for (d, (&n, &st)) in self.shape.iter().zip(&self.steps).enumerate() {
            let (start, len, keep) = match keys.get(d) {
                None => (0, n, true),
                Some(k) => {
                    if let Ok(s) = k.downcast::<PySlice>() {
                        let i = s.indices(n as isize)?;
                        if i.step != 1 {
                            return Err(PyValueError::new_err("only step-1 slices"));
                        }
                        (i.start as u64, i.slicelength as u64, true)
                    } else {
                        let i: i64 = k.extract()?;
                        let i = if i < 0 { i + n as i64 } else { i };
                        if i < 0 || i as u64 >= n {
                            return Err(PyValueError::new_err(format!(
                                "index {i} out of range for dimension {d} of size {n}"
                            )));
                        }
                        (i as u64, 1, false)
                    }
                }
            };
            t.offset += start * st as u64 * self.itemsize;
            if keep {
                shape.push(len);
                steps.push(st);
            }
        }
        t.shape = shape;
        t.steps = steps;
        Ok(t)
    }

    /// The tile read from its last element to its first, in the form the compiler writes an
    /// LdWeights source (`[last step=-1,0,-32 num=32,1,n/32]` for a multiple of 32 elements):
    /// LdWeights puts the `j`-th element it reads in PE column `n − 1 − j`, so with this operand
    /// column `c` holds element `c` (`docs/numerics.md` §10). A tile of one free dimension only.
    fn reversed(&self) -> PyResult<Tensor> {
        let n = match (&self.place, self.shape.as_slice()) {
            (Place::Chip, &[n]) => u16::try_from(n).ok().filter(|&n| n > 0),
            _ => None,
        }
        .ok_or_else(|| {
            PyValueError::new_err(
                "reversed() takes an SBUF/PSUM tile of one free dimension of 1..=65535 elements",
            )
        })?;
        let t = compiler_weights_source(self.offset as u32, n, self.itemsize as u32);
        Ok(Tensor {
            offset: u64::from(t.addr.address()),
            shape: t.num.iter().rev().map(|&v| u64::from(v)).collect(),
            steps: t.step.iter().rev().map(|&v| i64::from(v)).collect(),
            ..self.clone()
        })
    }

    /// The operand text of the tile (`[ADDR step=... num=...]`, `docs/asm.md`).
    fn __str__(&self) -> String {
        self.pattern(3)
    }

    fn __repr__(&self) -> String {
        format!(
            "Tensor({:?}, dtype={}, shape={:?}, offset={:#x}, partitions={:?})",
            self.place, self.dtype, self.shape, self.offset, self.partitions
        )
    }
}

impl Tensor {
    /// The steps and counts of the access pattern with `n` (step, count) pairs, innermost
    /// first (dimensions beyond the tile's: step 1, count 1).
    fn dims(&self, n: usize) -> (Vec<i64>, Vec<u64>) {
        let mut step: Vec<i64> = self.steps.iter().rev().copied().collect();
        let mut num: Vec<u64> = self.shape.iter().rev().copied().collect();
        step.resize(n.max(step.len()), 1);
        num.resize(n.max(num.len()), 1);
        (step, num)
    }

    /// The access-pattern text with `n` (step, count) pairs, innermost first.
    fn pattern(&self, n: usize) -> String {
        let (step, num) = self.dims(n);
        let j = |v: Vec<String>| v.join(",");
        format!(
            "[{:#x} step={} num={}]",
            self.offset,
            j(step.iter().map(i64::to_string).collect()),
            j(num.iter().map(u64::to_string).collect())
        )
    }

    /// The access pattern as an operand's typed value.
    fn pattern_arg(&self, n: usize) -> FieldArg {
        let (step, num) = self.dims(n);
        FieldArg::Pattern {
            addr: self.offset.into(),
            step: step.into_iter().map(i128::from).collect(),
            num: num.into_iter().map(i128::from).collect(),
        }
    }

    /// The DMA descriptor side of this tensor: name, offset, sizes, steps (elements).
    fn dma_side(&self) -> (String, u64, Vec<u64>, Vec<i64>) {
        let (name, mut sizes, mut steps) = match &self.place {
            Place::Dram(n) => (n.clone(), self.shape.clone(), self.steps.clone()),
            Place::Chip => {
                let (_, count) = self.partitions.unwrap_or((0, 1));
                let mut sizes = vec![count as u64];
                sizes.extend(&self.shape);
                let mut steps = vec![(self.partition_stride / self.itemsize.max(1)) as i64];
                steps.extend(&self.steps);
                ("state_buffer".to_string(), sizes, steps)
            }
        };
        if sizes.is_empty() {
            sizes.push(1);
            steps.push(1);
        }
        (name, self.offset, sizes, steps)
    }
}

/// A DRAM variable of the kernel.
#[derive(Clone, Debug)]
struct Var {
    name: String,
    kind: &'static str,
    dtype: String,
    shape: Vec<u64>,
    itemsize: u64,
    /// `.npy` bytes of an input's data.
    npy: Option<Vec<u8>>,
}

/// A queued DMA block: its descriptors (SP.json form).
#[derive(Clone, Debug, Default)]
struct Queue {
    blocks: Vec<Vec<Value>>,
}

/// The kernel being built.
#[pyclass(module = "tpbsim._native")]
pub struct Kernel {
    gen: Gen,
    vars: Vec<Var>,
    /// The bundles of each engine's stream.
    streams: BTreeMap<Engine, Vec<Bundle>>,
    queues: BTreeMap<String, Queue>,
    semaphores: Vec<String>,
}

/// The engine stream `k.<engine>` of a [`Kernel`].
#[pyclass(module = "tpbsim._native")]
pub struct Stream {
    kernel: Py<Kernel>,
    engine: Engine,
}

/// One instruction of a stream's spec, ready to be called with its fields.
#[pyclass(module = "tpbsim._native")]
pub struct Instr {
    kernel: Py<Kernel>,
    engine: Engine,
    mnemonic: &'static str,
}

fn dtype_info(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<(String, u64)> {
    py.import("ml_dtypes")?;
    let d = py.import("numpy")?.getattr("dtype")?.call1((dtype,))?;
    Ok((
        d.getattr("name")?.extract()?,
        d.getattr("itemsize")?.extract()?,
    ))
}

fn row_major(shape: &[u64]) -> Vec<i64> {
    let mut steps = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        steps[d] = steps[d + 1] * shape[d + 1] as i64;
    }
    steps
}

impl Kernel {
    fn add_var(
        &mut self,
        py: Python<'_>,
        name: &str,
        kind: &'static str,
        shape: Vec<u64>,
        dtype: &Bound<'_, PyAny>,
    ) -> PyResult<Tensor> {
        if name.is_empty() || name.contains(['/', '\\', '\0']) || name == "state_buffer" {
            return Err(PyValueError::new_err(format!(
                "`{name}`: a variable name is a plain file name other than state_buffer"
            )));
        }
        if self.vars.iter().any(|v| v.name == name) {
            return Err(PyValueError::new_err(format!("variable `{name}` exists")));
        }
        let (dtype, itemsize) = dtype_info(py, dtype)?;
        self.vars.push(Var {
            name: name.to_string(),
            kind,
            dtype: dtype.clone(),
            shape: shape.clone(),
            itemsize,
            npy: None,
        });
        Ok(Tensor {
            place: Place::Dram(name.to_string()),
            dtype,
            itemsize,
            steps: row_major(&shape),
            shape,
            offset: 0,
            partitions: None,
            partition_stride: 0,
        })
    }

    /// The index of semaphore `name` (allocated on first use, from 1).
    fn semaphore(&mut self, name: &str) -> usize {
        match self.semaphores.iter().position(|s| s == name) {
            Some(i) => i + 1,
            None => {
                self.semaphores.push(name.to_string());
                self.semaphores.len()
            }
        }
    }

    fn tile(
        &self,
        py: Python<'_>,
        psum: bool,
        partitions: &Bound<'_, PyAny>,
        offset: u64,
        shape: Vec<u64>,
        dtype: &Bound<'_, PyAny>,
    ) -> PyResult<Tensor> {
        let (start, stop): (u32, u32) = match partitions.extract::<u32>() {
            Ok(n) => (0, n),
            Err(_) => partitions.extract()?,
        };
        let geom = Geometry::of(self.gen);
        let parts = geom.sbuf_partitions;
        if stop <= start || stop > parts {
            return Err(PyValueError::new_err(format!(
                "partitions {start}..{stop}: a range inside 0..{parts}"
            )));
        }
        if shape.is_empty() || shape.len() > 3 {
            return Err(PyValueError::new_err(
                "a tile's free shape has 1 to 3 dimensions",
            ));
        }
        let (dtype, itemsize) = dtype_info(py, dtype)?;
        // Partition-folded addresses (docs/machine.md, "Memories"), from the spec's geometry.
        let stride = u64::from(if psum {
            geom.psum_partition_stride
        } else {
            geom.sbuf_partition_stride
        });
        if offset >= stride {
            return Err(PyValueError::new_err(format!(
                "offset {offset:#x}: beyond a partition ({stride:#x} bytes)"
            )));
        }
        let base = if psum { u64::from(geom.psum_base) } else { 0 };
        let addr = base + start as u64 * stride + offset;
        Ok(Tensor {
            place: Place::Chip,
            dtype,
            itemsize,
            steps: row_major(&shape),
            shape,
            offset: addr,
            partitions: Some((start, stop - start)),
            partition_stride: stride,
        })
    }

    /// The typed fields of one instruction from its keyword arguments: nothing is rendered
    /// as text, so a value can only ever be the value of the field it is given for.
    fn fields(
        &mut self,
        mnemonic: &str,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Vec<(String, FieldArg)>> {
        let row = spec::opcode_by_mnemonic(mnemonic)
            .ok_or_else(|| PyValueError::new_err(format!("no instruction `{mnemonic}`")))?;
        let fields = spec::format(row.format)
            .map(|f| f.fields)
            .unwrap_or_default();
        let width = |name: &str| {
            fields
                .iter()
                .find(|f| f.name == name)
                .and_then(|f| match f.ty {
                    spec::FieldType::Tensor(n) | spec::FieldType::MemPattern(n) => Some(n as usize),
                    _ => None,
                })
                .unwrap_or(3)
        };
        let mut out: Vec<(String, FieldArg)> = Vec::new();
        let Some(kw) = kwargs else { return Ok(out) };
        let name = |s: &str| FieldArg::Name(s.to_string());
        for (k, v) in kw.iter() {
            let key: String = k.extract()?;
            // A key is a field name (the encoder refuses names its layout lacks).
            if !is_field_name(&key) {
                return Err(PyValueError::new_err(format!(
                    "{mnemonic}: `{key}` is not a field name (letters, digits, `_`; `reserved@N`)"
                )));
            }
            match key.as_str() {
                // Synchronisation by name.
                "wait" => {
                    let (sem, value): (String, u64) = match v.extract::<String>() {
                        Ok(n) => (n, 1),
                        Err(_) => v.extract()?,
                    };
                    let i = self.semaphore(&sem);
                    out.push(("wait_mode".into(), name("SEM_GE_IMM")));
                    out.push(("wait_idx".into(), FieldArg::Int(i as i128)));
                    out.push(("semaphore_value".into(), FieldArg::Int(value.into())));
                }
                "signal" => {
                    let sem: String = v.extract()?;
                    let i = self.semaphore(&sem);
                    out.push(("update_mode".into(), name("SEM_INC_COMPLETE")));
                    out.push(("update_idx".into(), FieldArg::Int(i as i128)));
                }
                _ => {
                    let arg = field_arg(&v, width(&key))
                        .map_err(|e| PyValueError::new_err(format!("{mnemonic}: {key}: {e}")))?;
                    out.push((key, arg));
                }
            }
        }
        Ok(out)
    }
}

/// The typed value of a keyword argument: a tile its access pattern (`width` dimensions), a
/// bool 0 or 1, an int an integer, a float a float, a str a name (an enumeration value, a
/// dtype pair `LO|HI`, a bitfield `{name=value ...}`, a string field's characters), bytes a
/// string field's bytes, a dict a bitfield's sub-fields or a record's members, a pair with a
/// name a dtype pair, a sequence of ints an array.
fn field_arg(v: &Bound<'_, PyAny>, width: usize) -> Result<FieldArg, String> {
    let scalar = |v: &Bound<'_, PyAny>| -> Option<FieldArg> {
        if let Ok(b) = v.extract::<bool>() {
            Some(FieldArg::Int(i128::from(b)))
        } else if let Ok(i) = v.extract::<i128>() {
            Some(FieldArg::Int(i))
        } else if let Ok(f) = v.extract::<f64>() {
            Some(FieldArg::Float(f))
        } else {
            v.extract::<String>().ok().map(FieldArg::Name)
        }
    };
    if let Ok(t) = v.downcast::<Tensor>() {
        return Ok(t.get().pattern_arg(width));
    }
    if let Ok(b) = v.downcast::<PyBytes>() {
        return Ok(FieldArg::Bytes(b.as_bytes().to_vec()));
    }
    if let Some(a) = scalar(v) {
        return Ok(a);
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        let mut parts = Vec::new();
        for (k, x) in d.iter() {
            let k: String = k
                .extract()
                .map_err(|_| "the keys of a dict value are names".to_string())?;
            let x = scalar(&x).ok_or_else(|| format!("{k}: expected a number or a name"))?;
            parts.push((k, x));
        }
        return Ok(FieldArg::Record(parts));
    }
    if let Ok(items) = v.extract::<Vec<Bound<'_, PyAny>>>() {
        let xs: Vec<FieldArg> = items
            .iter()
            .map(|x| scalar(x).ok_or("expected numbers or names in a sequence"))
            .collect::<Result<_, _>>()?;
        if let [lo, hi] = xs.as_slice() {
            if xs.iter().any(|x| matches!(x, FieldArg::Name(_))) {
                return Ok(FieldArg::DtypePair(
                    Box::new(lo.clone()),
                    Box::new(hi.clone()),
                ));
            }
        }
        return xs
            .into_iter()
            .map(|x| match x {
                FieldArg::Int(i) => Ok(i),
                _ => Err("a sequence is a dtype pair (two names) or an array of ints".to_string()),
            })
            .collect::<Result<_, _>>()
            .map(FieldArg::List);
    }
    Err("expected a tile, a number, a bool, a name, bytes, a dict or a sequence".into())
}

/// The operands a role word of a dtype field's name describes: `in`/`src` the `src*` operands,
/// `out`/`dst` the `dst*` operands, any other word (`bias`, `mask`, `pred`, ...) the operand of
/// that name, and no word (a bare `dtype`) every operand.
fn role_matches(role: &str, operand: &str) -> bool {
    match role {
        "" => true,
        "in" | "src" => operand.starts_with("src"),
        "out" | "dst" => operand.starts_with("dst"),
        _ => operand == role,
    }
}

/// What each dtype field of a layout describes, from the spec's field names: a `DTYPE` field
/// `<role>_dtype` describes every operand of its role; a `DTYPE` pair `<a>_<b>_dtypes` its low
/// nibble role `a` and its high nibble role `b` (`in_bias_dtypes`, `mask_src_dtypes`,
/// `in_out_dtypes`), and a pair of one role (`in_dtypes`, `out_dtypes`) the first and the
/// second operand of that role in the layout's order (`src0`, `src1`; `dst0`, `dst1`). The
/// result: (dtype field, nibble: `None` for a whole byte, 0 low, 1 high, the operand).
fn dtype_roles(meta: &tpbsim_isa::LayoutMeta) -> Vec<(&'static str, Option<u8>, &'static str)> {
    let operands: Vec<&'static str> = meta
        .fields
        .iter()
        .filter(|f| {
            matches!(
                f.ty,
                spec::FieldType::Tensor(_)
                    | spec::FieldType::MemPattern(_)
                    | spec::FieldType::MxMemPattern1d
                    | spec::FieldType::Addr4
                    | spec::FieldType::U32
            )
        })
        .map(|f| f.name)
        .collect();
    let of_role = |role: &str| -> Vec<&'static str> {
        operands
            .iter()
            .copied()
            .filter(|o| role_matches(role, o))
            .collect()
    };
    // The role words of every dtype field with a role.
    let roles: Vec<&str> = meta
        .fields
        .iter()
        .filter(|f| {
            matches!(
                f.ty,
                spec::FieldType::Enum("DTYPE") | spec::FieldType::DtypePair
            )
        })
        .flat_map(|f| {
            let r = f.name.trim_end_matches('s').trim_end_matches("dtype");
            r.trim_end_matches('_').split('_')
        })
        .filter(|r| !r.is_empty())
        .collect();
    let named_elsewhere = |o: &str| roles.iter().any(|r| role_matches(r, o));
    let mut out = Vec::new();
    for f in meta.fields {
        match f.ty {
            spec::FieldType::Enum("DTYPE") => {
                let role = f.name.strip_suffix("dtype").unwrap_or(f.name);
                let role = role.trim_end_matches('_');
                for o in of_role(role) {
                    // A bare `dtype` describes the operands no other dtype field names.
                    if role.is_empty() && named_elsewhere(o) {
                        continue;
                    }
                    out.push((f.name, None, o));
                }
            }
            spec::FieldType::DtypePair => {
                let roles = f.name.strip_suffix("_dtypes").unwrap_or(f.name);
                match roles.split_once('_') {
                    Some((lo, hi)) => {
                        for (nibble, role) in [(0, lo), (1, hi)] {
                            for o in of_role(role) {
                                out.push((f.name, Some(nibble), o));
                            }
                        }
                    }
                    None => {
                        for (nibble, o) in of_role(roles).into_iter().take(2).enumerate() {
                            out.push((f.name, Some(nibble as u8), o));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Refuse a tile that a dtype field of the instruction would read as another format (a
/// float32 tile under `in_dtype=BF16`, a bfloat16 bias under `in_bias_dtypes=FP32|FP32`): the
/// builder knows both. Which field describes which operand is [`dtype_roles`].
fn check_operand_dtypes(
    b: &tpbsim_isa::Bundle,
    gen: Gen,
    fields: &Bound<'_, PyDict>,
    mnemonic: &str,
) -> PyResult<()> {
    let Ok(inst) = tpbsim_isa::inst::decode(b, gen) else {
        return Ok(());
    };
    let meta = inst.meta();
    for (field, nibble, operand) in dtype_roles(meta) {
        let Some(v) = fields.get_item(operand)? else {
            continue;
        };
        let Ok(t) = v.downcast::<Tensor>() else {
            continue;
        };
        let raw = match meta.field(field).map(|m| m.read(b)) {
            Some(tpbsim_isa::inst::FieldValue::Enum { raw, .. }) => raw,
            Some(tpbsim_isa::inst::FieldValue::DtypePair(p)) => match nibble {
                Some(1) => p.hi().0,
                _ => p.lo().0,
            },
            _ => continue,
        };
        let tile = t.get();
        let (Some(wire), Some(own)) = (
            NumFormat::from_wire_tag(raw, gen),
            NumFormat::from_name(&tile.dtype),
        ) else {
            continue;
        };
        if wire != own {
            let reads = match nibble {
                None => field.to_string(),
                Some(0) => format!("{field} (low nibble)"),
                Some(_) => format!("{field} (high nibble)"),
            };
            return Err(PyValueError::new_err(format!(
                "{mnemonic}: `{operand}` is a {} tile, but {reads} reads it as {}; give {field} the tile's dtype, or use a {} tile",
                tile.dtype,
                wire.name(),
                wire.name()
            )));
        }
    }
    Ok(())
}

/// A stream's bytes: its bundles one after another.
fn stream_bytes(bundles: &[Bundle]) -> Vec<u8> {
    bundles.iter().flat_map(|b| b.0).collect()
}

/// A field name: an identifier, or `reserved@N`.
fn is_field_name(k: &str) -> bool {
    let ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match k.strip_prefix("reserved@") {
        Some(n) => !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()),
        None => ident(k),
    }
}

#[pymethods]
impl Kernel {
    #[new]
    #[pyo3(signature = (arch="v3"))]
    fn new(arch: &str) -> PyResult<Self> {
        Ok(Kernel {
            gen: parse_gen(arch)?,
            vars: Vec::new(),
            streams: BTreeMap::new(),
            queues: BTreeMap::new(),
            semaphores: Vec::new(),
        })
    }

    /// The generation (`v3`).
    #[getter]
    fn arch(&self) -> &'static str {
        self.gen.short()
    }

    /// A DRAM input tensor; `data` (an array of that shape and dtype) is packed into the NEFF
    /// as its default value.
    #[pyo3(signature = (name, shape, dtype, data=None))]
    fn input(
        &mut self,
        py: Python<'_>,
        name: &str,
        shape: Vec<u64>,
        dtype: &Bound<'_, PyAny>,
        data: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Tensor> {
        let t = self.add_var(py, name, "input", shape.clone(), dtype)?;
        if let Some(d) = data {
            let np = py.import("numpy")?;
            let arr = np
                .getattr("ascontiguousarray")?
                .call1((d, t.dtype.as_str()))?;
            let got: Vec<u64> = arr.getattr("shape")?.extract()?;
            if got != shape {
                return Err(PyValueError::new_err(format!(
                    "input `{name}`: data of shape {got:?}, the tensor is {shape:?}"
                )));
            }
            let raw: Vec<u8> = arr
                .call_method0("tobytes")?
                .downcast::<PyBytes>()?
                .as_bytes()
                .to_vec();
            let dt = NumFormat::from_neff_name(&t.dtype)
                .map_err(|_| PyValueError::new_err(format!("dtype {}: no .npy form", t.dtype)))?;
            let npy = neff::npy::encode_npy(dt, &shape, &raw)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            if let Some(v) = self.vars.last_mut() {
                v.npy = Some(npy);
            }
        }
        Ok(t)
    }

    /// A DRAM output tensor.
    fn output(
        &mut self,
        py: Python<'_>,
        name: &str,
        shape: Vec<u64>,
        dtype: &Bound<'_, PyAny>,
    ) -> PyResult<Tensor> {
        self.add_var(py, name, "output", shape, dtype)
    }

    /// An SBUF tile: `partitions` (a count from 0, or `(start, stop)`), the byte `offset` in
    /// each partition, the free `shape` (1 to 3 dimensions) and the dtype.
    #[pyo3(signature = (partitions, offset, shape, dtype))]
    fn sbuf(
        &self,
        py: Python<'_>,
        partitions: &Bound<'_, PyAny>,
        offset: u64,
        shape: Vec<u64>,
        dtype: &Bound<'_, PyAny>,
    ) -> PyResult<Tensor> {
        self.tile(py, false, partitions, offset, shape, dtype)
    }

    /// A PSUM tile (as [`Kernel::sbuf`]).
    #[pyo3(signature = (partitions, offset, shape, dtype))]
    fn psum(
        &self,
        py: Python<'_>,
        partitions: &Bound<'_, PyAny>,
        offset: u64,
        shape: Vec<u64>,
        dtype: &Bound<'_, PyAny>,
    ) -> PyResult<Tensor> {
        self.tile(py, true, partitions, offset, shape, dtype)
    }

    /// Add a DMA block to `queue` that copies `src` to `dst` (a DRAM tensor or slice and an
    /// SBUF/PSUM tile, either way; or lists of them, one descriptor per pair) and increments
    /// semaphore `signal` as each descriptor completes. Returns the block id, for
    /// `k.sp.pseudo_dmatrigger(queue_name=..., block_id=...)`.
    #[pyo3(signature = (queue, dst, src, signal=None))]
    fn dma(
        &mut self,
        queue: &str,
        dst: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
        signal: Option<&str>,
    ) -> PyResult<usize> {
        let list = |v: &Bound<'_, PyAny>| -> PyResult<Vec<Tensor>> {
            match v.extract::<Tensor>() {
                Ok(t) => Ok(vec![t]),
                Err(_) => v.extract(),
            }
        };
        let (dsts, srcs) = (list(dst)?, list(src)?);
        if dsts.len() != srcs.len() || dsts.is_empty() {
            return Err(PyValueError::new_err(format!(
                "dma: {} destinations for {} sources",
                dsts.len(),
                srcs.len()
            )));
        }
        let sem = signal.map(|s| self.semaphore(s));
        let mut descs = Vec::new();
        for (dst, src) in dsts.iter().zip(&srcs) {
            let (from, from_offset, from_sizes, from_steps) = src.dma_side();
            let (to, to_offset, to_sizes, to_steps) = dst.dma_side();
            let n_src: u64 = from_sizes.iter().product::<u64>() * src.itemsize;
            let n_dst: u64 = to_sizes.iter().product::<u64>() * dst.itemsize;
            if n_src != n_dst || src.dtype != dst.dtype {
                return Err(PyValueError::new_err(format!(
                    "dma: {n_src} bytes of {} from `{from}`, {n_dst} bytes of {} to `{to}`",
                    src.dtype, dst.dtype
                )));
            }
            let mut d = json!({
                "from": from, "to": to,
                "from_offset": from_offset, "to_offset": to_offset,
                "from_sizes": from_sizes, "to_sizes": to_sizes,
                "from_steps": from_steps, "to_steps": to_steps,
            });
            if let Some(i) = sem {
                d["sem"] = json!(i);
            }
            descs.push(d);
        }
        let q = self.queues.entry(queue.to_string()).or_default();
        q.blocks.push(descs);
        Ok(q.blocks.len() - 1)
    }

    /// The index a semaphore name has (allocated on first use).
    fn semaphore_index(&mut self, name: &str) -> usize {
        self.semaphore(name)
    }

    /// The engine streams: `k.pe`, `k.act`, `k.pool`, `k.dve`, `k.sp`.
    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<Stream> {
        let engine = match name {
            "pe" | "act" | "pool" | "dve" | "sp" => parse_engine(name)?,
            _ => return Err(PyAttributeError::new_err(name.to_string())),
        };
        Ok(Stream {
            kernel: slf.clone().unbind(),
            engine,
        })
    }

    /// The assembly text of each engine's stream, by engine short name: the disassembly of
    /// the bundles built (`tpbsim.asm` of it gives the same bytes).
    fn text(&self) -> BTreeMap<&'static str, String> {
        self.streams
            .iter()
            .map(|(e, bundles)| {
                let lines: Vec<String> =
                    bundles.iter().map(|b| disasm_bundle(b, self.gen)).collect();
                (e.short(), lines.join("\n") + "\n")
            })
            .collect()
    }

    /// The bytes of each engine's stream (64 per bundle), by engine short name.
    fn bundles<'py>(&self, py: Python<'py>) -> BTreeMap<&'static str, Bound<'py, PyBytes>> {
        self.streams
            .iter()
            .map(|(e, bundles)| (e.short(), PyBytes::new(py, &stream_bytes(bundles))))
            .collect()
    }

    /// The NEFF's bytes.
    fn neff<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.pack(py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Write the NEFF to `path`.
    fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        let bytes = self.pack(py)?;
        neff::write_atomic(&path, &bytes)
            .map_err(|e| PyValueError::new_err(format!("{}: {e}", path.display())))
    }
}

impl Kernel {
    /// The NEFF members in a directory, packed by the library in the runtime's layout.
    fn pack(&self, py: Python<'_>) -> PyResult<Vec<u8>> {
        let dir = tempfile::tempdir().map_err(|e| PyValueError::new_err(e.to_string()))?;
        let sg = dir.path().join("sg00");
        let io = |e: std::io::Error| PyValueError::new_err(e.to_string());
        std::fs::create_dir(&sg).map_err(io)?;
        let write = |p: std::path::PathBuf, b: &[u8]| std::fs::write(p, b).map_err(io);
        write(
            dir.path().join("neff.json"),
            json!({"target_arch": self.gen.codename()})
                .to_string()
                .as_bytes(),
        )?;
        let mut definition = serde_json::Map::new();
        for (e, bundles) in &self.streams {
            let file = e.stream_file_name().to_string();
            write(sg.join(&file), &stream_bytes(bundles))?;
            definition.insert(e.short().to_string(), json!({"_instr": file}));
        }
        let mut vars = vec![json!({"var_id": 1, "name": "state_buffer", "type": "state-buffer"})];
        for (i, v) in self.vars.iter().enumerate() {
            let size: u64 = v.shape.iter().product::<u64>() * v.itemsize;
            let mut o = json!({
                "var_id": i + 2, "name": v.name, "type": v.kind, "size": size,
                "dtype": v.dtype, "shape": v.shape,
            });
            if let Some(npy) = &v.npy {
                let file = format!("{}.npy", v.name);
                write(sg.join(&file), npy)?;
                o["file_name"] = json!(file);
            }
            vars.push(o);
        }
        let queues: Vec<Value> = self.queues.keys().map(|q| json!({"name": q})).collect();
        write(
            sg.join("def.json"),
            json!({"definition": definition, "var": vars, "dma_queue": queues})
                .to_string()
                .as_bytes(),
        )?;
        if !self.queues.is_empty() {
            let dma: Vec<Value> = self
                .queues
                .iter()
                .flat_map(|(q, b)| {
                    b.blocks
                        .iter()
                        .enumerate()
                        .map(move |(id, desc)| json!({"queue": q, "id": id, "desc": desc}))
                })
                .collect();
            write(
                sg.join("SP.json"),
                json!({ "dma": dma }).to_string().as_bytes(),
            )?;
        }
        let name = "kernel";
        let n = Neff::from_dir(dir.path(), name, &neff::Limits::default())
            .map_err(|e| neff_error(py, name, &e))?;
        let n = neff::to_runtime_layout(&n)
            .map_err(|e| neff_error(py, name, &e))?
            .neff;
        n.to_bytes().map_err(|e| neff_error(py, name, &e))
    }
}

#[pymethods]
impl Stream {
    /// `k.<engine>.<mnemonic>`: the instruction of that mnemonic (any case). A prefix that
    /// ends before a `_` of the engine's mnemonics names the one mnemonic it starts, or among
    /// several their `_ARITH_OP` form: `tensor_tensor` is TENSOR_TENSOR_ARITH_OP.
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Instr> {
        let gen = self.kernel.borrow(py).gen;
        let up = name.to_ascii_uppercase();
        let ops: Vec<&'static str> = spec::opcodes()
            .iter()
            .filter(|o| o.is_present(gen) && o.runs_on(self.engine))
            .map(|o| o.mnemonic())
            .collect();
        let mnemonic = match ops.iter().find(|m| **m == up) {
            Some(m) => *m,
            None => {
                let pre = format!("{up}_");
                let arith = format!("{up}_ARITH_OP");
                let mut c: Vec<&&str> = ops.iter().filter(|m| m.starts_with(&pre)).collect();
                // An ambiguous prefix names its arithmetic form when there is one
                // (`tensor_tensor` is TENSOR_TENSOR_ARITH_OP; the BITVEC form is spelled out).
                if c.len() > 1 && c.iter().any(|m| ***m == arith) {
                    c.retain(|m| ***m == arith);
                }
                match c.as_slice() {
                    [one] => **one,
                    [] => {
                        return Err(PyAttributeError::new_err(format!(
                            "{}: no instruction `{name}` on {gen}",
                            self.engine.short()
                        )))
                    }
                    many => {
                        return Err(PyAttributeError::new_err(format!(
                            "{}: `{name}` names {}",
                            self.engine.short(),
                            many.iter()
                                .map(|m| m.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )))
                    }
                }
            }
        };
        Ok(Instr {
            kernel: self.kernel.clone_ref(py),
            engine: self.engine,
            mnemonic,
        })
    }
}

#[pymethods]
impl Instr {
    /// Append the instruction with these fields (spec names; enumeration values by name;
    /// tiles as operands; `wait=NAME` or `(NAME, VALUE)`, `signal=NAME` for semaphores).
    /// Returns its bundle index.
    /// Positional arguments are the instruction's tensor operands, destinations first, then
    /// sources in the spec's field order (`k.dve.tensor_tensor(dst, a, b, op="add")`); see
    /// `operands`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<usize> {
        let gen = self.kernel.borrow(py).gen;
        let fields = PyDict::new(py);
        if !args.is_empty() {
            let names = operand_names(self.mnemonic, gen);
            if args.len() > names.len() {
                return Err(PyValueError::new_err(format!(
                    "{}: {} positional operands given, the instruction has {} ({})",
                    self.mnemonic,
                    args.len(),
                    names.len(),
                    names.join(", ")
                )));
            }
            for (name, v) in names.iter().zip(args.iter()) {
                if kwargs.is_some_and(|kw| kw.contains(*name).unwrap_or(false)) {
                    return Err(PyValueError::new_err(format!(
                        "{}: operand `{name}` given by position and by keyword",
                        self.mnemonic
                    )));
                }
                fields.set_item(*name, v)?;
            }
        }
        if let Some(kw) = kwargs {
            fields.update(kw.as_mapping())?;
        }
        let mut k = self.kernel.borrow_mut(py);
        let typed = k.fields(self.mnemonic, Some(&fields))?;
        let b = encode_fields(self.mnemonic, &typed, k.gen)
            .map_err(|e| PyValueError::new_err(format!("{}: {e}", self.mnemonic)))?;
        check_operand_dtypes(&b, k.gen, &fields, self.mnemonic)?;
        let s = k.streams.entry(self.engine).or_default();
        s.push(b);
        Ok(s.len() - 1)
    }

    /// The names positional arguments bind to: the tensor operands of the instruction's
    /// format on this generation, destinations first, then sources in spec order.
    #[getter]
    fn operands(&self, py: Python<'_>) -> Vec<&'static str> {
        operand_names(self.mnemonic, self.kernel.borrow(py).gen)
    }

    /// The instruction's fields in the spec (name, type, byte offset) for this generation.
    #[getter]
    fn fields(&self, py: Python<'_>) -> PyResult<Vec<(String, String, u8)>> {
        let gen = self.kernel.borrow(py).gen;
        let row = spec::opcode_by_mnemonic(self.mnemonic)
            .ok_or_else(|| PyValueError::new_err(self.mnemonic))?;
        Ok(spec::format(row.format)
            .map(|f| f.fields)
            .unwrap_or_default()
            .iter()
            .filter(|r| r.at[gen.index()] != spec::NA)
            .map(|r| (r.name.to_string(), format!("{:?}", r.ty), r.at[gen.index()]))
            .collect())
    }
}

/// The tensor operands of a mnemonic's format present on `gen`: names starting with `dst`
/// first, then the others, each in the spec's field order.
fn operand_names(mnemonic: &str, gen: Gen) -> Vec<&'static str> {
    let rows = spec::opcode_by_mnemonic(mnemonic)
        .and_then(|row| spec::format(row.format))
        .map(|f| f.fields)
        .unwrap_or_default();
    let mut names: Vec<&'static str> = Vec::new();
    for r in rows.iter().filter(|r| r.at[gen.index()] != spec::NA) {
        let operand = matches!(
            r.ty,
            spec::FieldType::Tensor(_) | spec::FieldType::MemPattern(_)
        );
        if operand && !names.contains(&r.name) {
            names.push(r.name);
        }
    }
    let (mut dst, src): (Vec<_>, Vec<_>) = names.into_iter().partition(|n| n.starts_with("dst"));
    dst.extend(src);
    dst
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Kernel>()?;
    m.add_class::<Tensor>()?;
    m.add_class::<Stream>()?;
    m.add_class::<Instr>()?;
    Ok(())
}
