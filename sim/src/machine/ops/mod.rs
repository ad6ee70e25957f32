//! Execution of decoded instructions on the numerics value models, grouped by engine family:
//! [`pe`] (LdWeights, Matmul and their MX forms), [`act`] (Activate, Activate2, the
//! accumulator read and the table load), [`pool_dve`] (the POOL/DVE tensor ops), [`select`]
//! (the select family and TensorDequantize), [`dma`] (DMA transfers and triggers) and
//! [`control`] (sequencer, branch and register ALU). Each op reads its fields — dtypes, ALU
//! ops, activation functions, operand descriptors — from the decoded format struct that
//! [`super::dispatch`] hands it, resolves them into formats and access patterns, bounds-checks
//! every pattern, gathers the operand values, calls the value model, and scatters the result.
//! The executing engine chooses the datapath:
//!
//! * POOL with every operand an integer format runs the 32-bit integer datapath (two's-complement
//!   wrap, narrower results truncated to their width); everything else runs in fp32, operands
//!   widened exactly and results written through the cast engine with the device policy
//!   (float → int truncates toward zero and saturates).
//! * POOL cannot address PSUM: a POOL operand in PSUM is a fault.
//! * ALU ops that the engine's datapath does not have are faults (from the ALU model).
//!
//! Operand readings that the public layouts leave open are documented in `docs/machine.md`
//! ("Project-defined operand readings").

pub mod act;
pub mod control;
pub mod dma;
pub mod pe;
pub mod pool_dve;
pub mod select;
#[cfg(test)]
mod tests;

use tpbsim_isa::{Addr4Kind, Dtype, Engine, Gen, ImmSrc, MxMemPattern1d, Tensor};

use super::core::Machine;
use super::fault::{Fault, Site};
use super::geometry::Space;
use super::pattern::{Dim, Resolved, TensorPattern};
use crate::numerics::alu::{AluContext, Scalar, Signedness, TileShape};
use crate::numerics::cast::{from_f32_slice, to_f32_slice, CastPolicy};
use crate::numerics::mx::{self, BLOCK_PARTITIONS};
use crate::numerics::reduce::Accumulators;
use tpbsim_isa::dtype::Kind;
use tpbsim_isa::NumFormat;

/// Operand buffers a machine keeps for reuse between bundles.
const OPERAND_BUFFERS: usize = 8;

/// The PE's stationary operand as the last LdWeights / LdWeightsMx left it, in PE column order:
/// the `j`-th of the `n` elements (or ×4 containers) read on a partition sits in column
/// `n − 1 − j` (`numerics::pe::stationary_column`).
#[derive(Clone, Debug, PartialEq)]
pub enum Stationary {
    /// Dense weights `[k, n]` widened to fp32, with the input format (for the fp32 passes).
    Dense {
        /// Values, row-major `[k][n]`, column order.
        values: Vec<f32>,
        /// Contraction rows (partitions).
        k: usize,
        /// Columns.
        n: usize,
        /// Input format.
        format: NumFormat,
    },
    /// Weights loaded with `transpose_mode = 1`: the element bytes as read, for the transpose
    /// pass-through of a Matmul with `transpose_mode = 1`.
    Transpose {
        /// Element bytes, row-major `[k][n]`, column order.
        bits: Vec<u8>,
        /// Rows (partitions).
        k: usize,
        /// Columns.
        n: usize,
        /// Element format (the width the pass-through writes).
        format: NumFormat,
    },
    /// An MX operand: packed data and its interleaved scale buffer.
    Mx {
        /// Packed ×4 format.
        format: NumFormat,
        /// Partitions.
        partitions: usize,
        /// Containers per partition (columns).
        lanes: usize,
        /// Data bytes, containers in column order.
        data: Vec<u8>,
        /// Scale buffer bytes, one per container in column order in each scale row.
        scales: Vec<u8>,
    },
}

/// Per-engine execution state beyond memory and registers.
#[derive(Clone, Debug, Default)]
pub struct EngineState {
    /// PE: the loaded stationary operand.
    pub stationary: Option<Stationary>,
    /// ACT accumulation registers.
    pub act_acc: Accumulators,
    /// DVE accumulation registers.
    pub dve_acc: Accumulators,
    /// ACT: the activation table set last selected by ActivationTableLoad.
    pub act_table_set: Option<u8>,
    /// Notes of the project-defined details the executed ops relied on
    /// ([`select::notes`]).
    pub project_defined: std::collections::BTreeSet<&'static str>,
}

/// A scalar operand: an immediate (its 32-bit encoding) or a pointer to one value per partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarSrc {
    /// The immediate's bits (fp32 on the fp datapath, the integer on the integer datapath).
    Imm(u32),
    /// ADDR4 of a column of one value per active partition, in `format`.
    Pointer {
        /// Partition-folded start address (partition = first active partition).
        addr: u32,
        /// Element format.
        format: NumFormat,
    },
}

pub(crate) fn is_int(f: NumFormat) -> bool {
    f.kind() != Kind::Float
}

pub(crate) fn signedness(formats: &[NumFormat]) -> Signedness {
    if formats.iter().all(|f| f.kind() == Kind::Unsigned) {
        Signedness::Unsigned
    } else {
        Signedness::Signed
    }
}

/// The element shape of a pattern as the numerics models see it.
pub(crate) fn tile(site: Site, p: &TensorPattern) -> Result<TileShape, Fault> {
    // A pattern has at most MAX_DIMS free dims: the shape is built on the stack.
    let dims = p.free_dims();
    let mut free = [1usize; super::pattern::MAX_DIMS];
    let n = dims.len().max(1);
    for (f, d) in free.iter_mut().zip(dims) {
        *f = d.num as usize;
    }
    TileShape::new(p.partitions as usize, &free[..n]).map_err(|e| Fault::exec(site, e.to_string()))
}

pub(crate) fn same_count(
    site: Site,
    a: (&str, &TensorPattern),
    b: (&str, &TensorPattern),
) -> Result<(), Fault> {
    if a.1.partitions != b.1.partitions || a.1.elems_per_partition() != b.1.elems_per_partition() {
        return Err(Fault::exec(
            site,
            format!(
                "`{}` has {} partitions × {} elements but `{}` has {} × {}",
                a.0,
                a.1.partitions,
                a.1.elems_per_partition(),
                b.0,
                b.1.partitions,
                b.1.elems_per_partition()
            ),
        ));
    }
    Ok(())
}

pub(crate) fn widen(bytes: &[u8], f: NumFormat) -> Vec<u32> {
    let n = f.container_bytes();
    bytes
        .chunks_exact(n)
        .map(|c| match (f.kind(), n) {
            (Kind::Signed, 1) => c[0] as i8 as i32 as u32,
            (Kind::Signed, 2) => i16::from_le_bytes([c[0], c[1]]) as i32 as u32,
            (_, 1) => c[0] as u32,
            (_, 2) => u16::from_le_bytes([c[0], c[1]]) as u32,
            _ => u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
        })
        .collect()
}

pub(crate) fn narrow(vals: &[u32], f: NumFormat) -> Vec<u8> {
    let n = f.container_bytes();
    let mut out = Vec::with_capacity(vals.len() * n);
    for v in vals {
        out.extend_from_slice(&v.to_le_bytes()[..n]);
    }
    out
}

/// Element containers of `bytes` (`n` bytes each, little-endian) as integers.
pub(crate) fn containers(bytes: &[u8], n: usize) -> Vec<u64> {
    bytes
        .chunks_exact(n)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// The inverse of [`containers`].
pub(crate) fn to_bytes(vals: &[u64], n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(vals.len() * n);
    for v in vals {
        out.extend_from_slice(&v.to_le_bytes()[..n]);
    }
    out
}

pub(crate) fn unpacked(site: Site, what: &str, f: NumFormat) -> Result<(), Fault> {
    if f.lanes() != 1 {
        return Err(Fault::exec(
            site,
            format!(
                "`{what}` in the packed format {} is not simulated here",
                f.name()
            ),
        ));
    }
    Ok(())
}

/// The packed ×4 form an MX instruction's element dtype tag stands for (the tag names the
/// element: FP8_EXP4 0x0E, FP8_EXP5 0x0F; FP4_EXP2 0x10 already reads as the packed form).
pub(crate) fn mx_packed(f: NumFormat) -> NumFormat {
    match f {
        NumFormat::Float8E4m3fn | NumFormat::Float8E4m3 => NumFormat::Float8E4m3fnX4,
        NumFormat::Float8E5m2 => NumFormat::Float8E5m2X4,
        NumFormat::Float4E2m1fn => NumFormat::Float4E2m1fnX4,
        other => other,
    }
}

/// The data and scale patterns of an MXMEM_PATTERN1D operand of `partitions` partitions and
/// `lanes` ×4 containers per partition (project-defined reading, see `docs/machine.md`).
pub struct MxPatterns {
    /// Packed data: `partitions` × `lanes` containers.
    pub data: TensorPattern,
    /// Interleaved scale buffer: one byte per container lane in each scale-row partition.
    pub scale: TensorPattern,
}

impl Machine<'_> {
    /// Bounds-check an operand and apply the engine's memory rules.
    pub(crate) fn operand(
        &self,
        site: Site,
        name: &str,
        p: &TensorPattern,
    ) -> Result<Resolved, Fault> {
        let r = self
            .chip
            .resolve(p)
            .map_err(|e| Fault::oob(site, name, e))?;
        self.check_operand(site, name, r.total_bytes())?;
        self.chip.note_operand(name, &r);
        self.chip.note_shape(p);
        if site.engine == Engine::Pool && r.space == Space::Psum {
            return Err(Fault::exec(
                site,
                format!(
                    "operand `{name}` is in PSUM (0x{:08x}), which POOL cannot address",
                    p.addr
                ),
            ));
        }
        Ok(r)
    }

    pub(crate) fn load_f32(
        &self,
        site: Site,
        r: &Resolved,
        f: NumFormat,
    ) -> Result<Vec<f32>, Fault> {
        let mut out = Vec::new();
        self.load_f32_into(site, r, f, &mut out)?;
        Ok(out)
    }

    /// [`Machine::load_f32`] into `out` (cleared first; a reused buffer).
    pub(crate) fn load_f32_into(
        &self,
        site: Site,
        r: &Resolved,
        f: NumFormat,
        out: &mut Vec<f32>,
    ) -> Result<(), Fault> {
        out.clear();
        // fp32 storage is the value's bits: no conversion pass.
        if matches!(f, NumFormat::Float32 | NumFormat::Float32r)
            && self.chip.gather_f32_into(r, out)
        {
            return Ok(());
        }
        let width = f.container_bytes();
        if width > 0 && (r.run_bytes as usize).is_multiple_of(width) {
            // Whole elements per run: decode each run where it lies, no byte gather.
            let n = r.total_bytes() as usize / width * f.lanes();
            out.resize(n, 0.0);
            let mut at = 0;
            let mut err = None;
            self.chip.for_each_run(r, |run| {
                let k = run.len() / width * f.lanes();
                if err.is_none() {
                    if let Err(e) = to_f32_slice(run, f, &mut out[at..at + k]) {
                        err = Some(e);
                    }
                }
                at += k;
            });
            return match err {
                Some(e) => Err(Fault::exec(site, e.to_string())),
                None => Ok(()),
            };
        }
        let bytes = self.chip.gather(r);
        let n = bytes.len() / width * f.lanes();
        out.resize(n, 0.0);
        to_f32_slice(&bytes, f, out).map_err(|e| Fault::exec(site, e.to_string()))?;
        Ok(())
    }

    /// A cleared buffer from the machine's pool of operand buffers.
    pub(crate) fn take_buf(&mut self) -> Vec<f32> {
        let mut v = self.bufs.pop().unwrap_or_default();
        v.clear();
        v
    }

    /// Return a buffer taken with [`Machine::take_buf`] to the pool.
    pub(crate) fn give_buf(&mut self, v: Vec<f32>) {
        if self.bufs.len() < OPERAND_BUFFERS {
            self.bufs.push(v);
        }
    }

    pub(crate) fn store_f32(
        &mut self,
        site: Site,
        r: &Resolved,
        f: NumFormat,
        vals: &[f32],
        policy: &CastPolicy,
    ) -> Result<(), Fault> {
        #[cfg(target_endian = "little")]
        if f == NumFormat::Float32 {
            // fp32 storage is the value's bits: no conversion pass.
            self.chip.scatter(r, bytemuck::cast_slice(vals));
            return Ok(());
        }
        let mut bytes = vec![0u8; vals.len() / f.lanes() * f.container_bytes()];
        from_f32_slice(vals, &mut bytes, f, policy)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.chip.scatter(r, &bytes);
        Ok(())
    }

    pub(crate) fn check_int(site: Site, f: NumFormat) -> Result<(), Fault> {
        if f.container_bytes() > 4 {
            return Err(Fault::exec(
                site,
                format!(
                    "{} operands on the 32-bit integer datapath are not simulated",
                    f.name()
                ),
            ));
        }
        Ok(())
    }

    /// One scalar per active partition (or an immediate), in fp32.
    pub(crate) fn scalar_f32(
        &self,
        site: Site,
        name: &str,
        s: ScalarSrc,
        first: &TensorPattern,
    ) -> Result<ScalarVals<f32>, Fault> {
        match s {
            ScalarSrc::Imm(bits) => Ok(ScalarVals::Imm(f32::from_bits(bits))),
            ScalarSrc::Pointer { addr, format } => {
                let p = column(addr, first.partitions, format);
                let r = self.operand(site, name, &p)?;
                Ok(ScalarVals::Column(self.load_f32(site, &r, format)?))
            }
        }
    }

    pub(crate) fn scalar_u32(
        &self,
        site: Site,
        name: &str,
        s: ScalarSrc,
        first: &TensorPattern,
    ) -> Result<ScalarVals<u32>, Fault> {
        match s {
            ScalarSrc::Imm(bits) => Ok(ScalarVals::Imm(bits)),
            ScalarSrc::Pointer { addr, format } => {
                Self::check_int(site, format)?;
                let p = column(addr, first.partitions, format);
                let r = self.operand(site, name, &p)?;
                Ok(ScalarVals::Column(widen(&self.chip.gather(&r), format)))
            }
        }
    }

    pub(crate) fn ctx(&self, e: Engine) -> AluContext {
        AluContext::new(self.gen, e)
    }

    /// True when `e` runs these operand formats on its integer datapath.
    pub(crate) fn int_datapath(&self, e: Engine, formats: &[NumFormat]) -> bool {
        let all_int = formats.iter().all(|&f| is_int(f));
        all_int && (e == Engine::Pool || e == Engine::Dve && self.gen >= Gen::V5)
    }

    /// Read an MXMEM_PATTERN1D: `k` must be the contraction length `4 × partitions`, the step
    /// sign ascending, both addresses immediates, and `scale_partition` the partition of the scale
    /// address.
    pub(crate) fn mx_patterns(
        &self,
        site: Site,
        name: &str,
        mx: &MxMemPattern1d,
        partitions: u8,
        lanes: u32,
        format: NumFormat,
    ) -> Result<MxPatterns, Fault> {
        let fail = |m: String| Err(Fault::exec(site, format!("operand `{name}`: {m}")));
        if mx::emax(format).is_none() {
            return fail(format!("{} is not an MX element format", format.name()));
        }
        for (what, a) in [("data", mx.data), ("scale", mx.scale)] {
            if a.kind() != Addr4Kind::Imm {
                return Err(Fault::NotSimulated {
                    site,
                    name: format!("operand `{name}.{what}` with ADDR4 form {:?}", a.kind()),
                    engine: site.engine,
                });
            }
        }
        let p = u32::from(partitions);
        if p == 0 || p % BLOCK_PARTITIONS as u32 != 0 {
            return fail(format!(
                "{p} partitions are not whole 8-partition MX blocks"
            ));
        }
        if u32::from(mx.k) != 4 * p {
            return fail(format!(
                "K = {} elements, but {p} partitions of ×4 containers hold K = {}",
                mx.k,
                4 * p
            ));
        }
        if mx.step_sign != 1 {
            return Err(Fault::NotSimulated {
                site,
                name: format!("operand `{name}` with step sign 0x{:02x}", mx.step_sign),
                engine: site.engine,
            });
        }
        let scale_addr = mx.scale.address();
        let located = self.chip.geom.locate(scale_addr);
        if located.space != Space::Sbuf {
            return fail(format!("scale address 0x{scale_addr:08x} is not in SBUF"));
        }
        if u32::from(mx.scale_partition) != located.partition {
            return fail(format!(
                "scale_partition {} differs from the scale address's partition {}",
                mx.scale_partition, located.partition
            ));
        }
        if lanes == 0 {
            return fail("0 containers per partition".into());
        }
        let rows = (p as usize) / BLOCK_PARTITIONS;
        let slots = mx::scale_slot(rows - 1) + 1;
        Ok(MxPatterns {
            data: TensorPattern::new(
                mx.data.address(),
                p,
                format.container_bytes() as u32,
                &[Dim::new(1, lanes)],
            ),
            scale: TensorPattern::new(scale_addr, slots as u32, 1, &[Dim::new(1, lanes)]),
        })
    }

    /// The format a dtype field names on this generation.
    pub(crate) fn format(&self, site: Site, field: &str, d: Dtype) -> Result<NumFormat, Fault> {
        let f = NumFormat::from_wire_tag(d.0, self.gen).ok_or_else(|| {
            Fault::exec(
                site,
                format!(
                    "`{field}` dtype tag 0x{:02x} is not a number format on {}",
                    d.0, self.gen
                ),
            )
        })?;
        if f.class() == tpbsim_isa::spec::NumClass::Fp8 {
            if let Some(why) = &self.kernel().fp8_refusal {
                return Err(Fault::NotSimulated {
                    site,
                    name: format!("`{field}` in {} under {why}", f.name()),
                    engine: site.engine,
                });
            }
        }
        Ok(f)
    }

    /// The access pattern of a TENSORnD operand over `partitions` partitions of `f` elements.
    pub(crate) fn pattern<const N: usize>(
        &self,
        site: Site,
        name: &str,
        t: &Tensor<N>,
        partitions: u8,
        f: NumFormat,
    ) -> Result<TensorPattern, Fault> {
        let addr = match t.addr.kind() {
            Addr4Kind::Imm => t.addr.address(),
            Addr4Kind::AddrReg => {
                let r = t.addr.0 as u8 as usize;
                self.regs[site.engine as usize]
                    .get(r)
                    .copied()
                    .ok_or_else(|| {
                        Fault::exec(
                            site,
                            format!("operand `{name}`: register {r} does not exist"),
                        )
                    })?
            }
            k => {
                return Err(Fault::NotSimulated {
                    site,
                    name: format!("operand `{name}` with ADDR4 form {k:?}"),
                    engine: site.engine,
                })
            }
        };
        if partitions == 0 {
            return Err(Fault::exec(
                site,
                format!("operand `{name}`: the active partition count is 0"),
            ));
        }
        // One Dim per descriptor dimension, on the stack.
        let dims: [Dim; N] = std::array::from_fn(|i| Dim::new(t.step[i] as i32, t.num[i] as u32));
        Ok(TensorPattern::new(
            addr,
            partitions as u32,
            f.container_bytes() as u32,
            &dims,
        ))
    }

    /// A one-source op's operands: the `in` / `out` formats of `dtypes`, then the `src` / `dst`
    /// patterns over `n` partitions.
    pub(crate) fn in_out<const N: usize>(
        &self,
        site: Site,
        dtypes: (Dtype, Dtype),
        src: &Tensor<N>,
        dst: &Tensor<N>,
        n: u8,
    ) -> Result<(NumFormat, NumFormat, TensorPattern, TensorPattern), Fault> {
        let input = self.format(site, "in", dtypes.0)?;
        let out = self.format(site, "out", dtypes.1)?;
        let src = self.pattern(site, "src", src, n, input)?;
        let dst = self.pattern(site, "dst", dst, n, out)?;
        Ok((input, out, src, dst))
    }

    /// A one-source elementwise op's regions: `src` and `dst` hold the same element count, each
    /// is bounds-checked in that order, and the tile shape is `src`'s.
    pub(crate) fn elementwise(
        &self,
        site: Site,
        src: &TensorPattern,
        dst: &TensorPattern,
    ) -> Result<(Resolved, Resolved, TileShape), Fault> {
        same_count(site, ("src", src), ("dst", dst))?;
        let rs = self.operand(site, "src", src)?;
        let rd = self.operand(site, "dst", dst)?;
        Ok((rs, rd, tile(site, src)?))
    }

    pub(crate) fn scalar(
        &self,
        site: Site,
        src: ImmSrc,
        value: u32,
        format: NumFormat,
    ) -> Result<ScalarSrc, Fault> {
        match src.0 {
            0 => Ok(ScalarSrc::Imm(value)),
            1 => Ok(ScalarSrc::Pointer {
                addr: value & tpbsim_isa::Addr4::ADDR_MASK,
                format,
            }),
            s => Err(Fault::NotSimulated {
                site,
                name: format!("scalar source mode {s} (register pointer)"),
                engine: site.engine,
            }),
        }
    }

    pub(crate) fn note_project_defined(&mut self, note: &'static str) {
        self.engines.project_defined.insert(note);
    }

    /// The project-defined details the ops executed so far rely on (one note per op kind).
    pub fn project_defined_notes(&self) -> Vec<&'static str> {
        self.engines.project_defined.iter().copied().collect()
    }
}

/// A scalar operand's values: one immediate or a column of one value per partition.
pub(crate) enum ScalarVals<V> {
    Imm(V),
    Column(Vec<V>),
}

impl<V: Copy + Default> ScalarVals<V> {
    pub(crate) fn as_scalar(&self) -> Scalar<'_, V> {
        match self {
            ScalarVals::Imm(v) => Scalar::Imm(*v),
            ScalarVals::Column(v) => Scalar::PerPartition(v),
        }
    }

    /// The value of partition `p` (the column is one value per active partition).
    pub(crate) fn at(&self, p: usize) -> V {
        match self {
            ScalarVals::Imm(v) => *v,
            ScalarVals::Column(v) => v.get(p).copied().unwrap_or_default(),
        }
    }
}

/// One element per partition at `addr` (a scalar operand's column).
pub(crate) fn column(addr: u32, partitions: u32, format: NumFormat) -> TensorPattern {
    TensorPattern::new(
        addr,
        partitions,
        format.container_bytes() as u32,
        &[Dim::new(1, 1)],
    )
}

/// A predicate / mask operand must be an integer format the 32-bit datapath reads.
pub(crate) fn integer_operand(site: Site, what: &str, f: NumFormat) -> Result<(), Fault> {
    if !is_int(f) {
        return Err(Fault::exec(
            site,
            format!("{what} format {} is not an integer format", f.name()),
        ));
    }
    Machine::check_int(site, f)
}

/// The mnemonic of the bundle at `site` (its opcode byte).
pub(crate) fn mnemonic(site: Site) -> &'static str {
    tpbsim_isa::Opcode(site.opcode)
        .mnemonic()
        .unwrap_or("UNKNOWN")
}

/// The `not simulated` fault of the bundle at `site`, naming its mnemonic and opcode.
pub(crate) fn not_simulated(site: Site) -> Fault {
    Fault::NotSimulated {
        site,
        name: format!("{} (opcode 0x{:02x})", mnemonic(site), site.opcode),
        engine: site.engine,
    }
}
