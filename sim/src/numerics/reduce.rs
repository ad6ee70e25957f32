//! Reductions, scans and the per-partition accumulator registers, over validated ALU ops
//! ([`FpOp`](super::alu::FpOp) / [`IntOp`]).
//!
//! Every running value is updated as `running = op(element, running)` — the order the
//! cumulative instructions document, and for MAX/MIN the SSE `maxss`/`minss` order in which the
//! running value is kept when a NaN shows up. A reduction starts from the op's identity
//! (add/sub 0, mult 1, max −inf, min +inf, …); ops without one are
//! [`AluError::NotReducible`]. Sums run sequentially from element 0 in dense order (x fastest).

use super::alu::{
    apply_rev, check_len, AluError, AluOp, ElementOp, IntOp, Reverse, Scalar, TileShape,
};

/// How many innermost free dims a reduction folds (1 = X … 4 = XYZW).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReduceAxes(u8);

impl ReduceAxes {
    /// Reduce X only.
    pub const X: ReduceAxes = ReduceAxes(1);
    /// Reduce X and Y.
    pub const XY: ReduceAxes = ReduceAxes(2);
    /// Reduce X, Y and Z.
    pub const XYZ: ReduceAxes = ReduceAxes(3);
    /// Reduce every free dim.
    pub const XYZW: ReduceAxes = ReduceAxes(4);

    /// From the header `op_dim` byte (`TENSOR_SUBDIM`: UNUSED 0, X 1, XY 2, XYZ 3, XYZW 4).
    pub fn from_subdim(code: u8) -> Result<Self, AluError> {
        match code {
            1..=4 => Ok(ReduceAxes(code)),
            0 => Err(AluError::BadAxes {
                code,
                why: "TENSOR_SUBDIM UNUSED names no axis",
            }),
            _ => Err(AluError::BadAxes {
                code,
                why: "not a TENSOR_SUBDIM value",
            }),
        }
    }

    /// From the BIR `AxisList` (X 0, XY 1, XYZ 2, XYZW 3, XYZWC 4, C 5). The two lists that
    /// include the partition axis C are cross-partition reductions (CrossLaneReduce), not
    /// free-axis ones.
    pub fn from_axis_list(code: u8) -> Result<Self, AluError> {
        match code {
            0..=3 => Ok(ReduceAxes(code + 1)),
            4 | 5 => Err(AluError::BadAxes {
                code,
                why: "includes the partition axis C",
            }),
            _ => Err(AluError::BadAxes {
                code,
                why: "not an AxisList value",
            }),
        }
    }

    /// Number of innermost free dims folded.
    pub fn count(self) -> usize {
        self.0 as usize
    }

    /// (elements folded per output, outputs per partition) for `shape`.
    pub fn split(self, shape: TileShape) -> (usize, usize) {
        let dims = shape.free_dims();
        let inner: usize = dims[..self.count()].iter().product();
        (inner, shape.free_len() / inner)
    }
}

/// The number of outputs of a reduction of `shape` over `axes`.
pub fn reduced_len(shape: TileShape, axes: ReduceAxes) -> usize {
    shape.partitions() * axes.split(shape).1
}

fn identity<O: ElementOp>(op: O) -> Result<O::V, AluError> {
    if op.op().is_arg() {
        return Err(AluError::ReductionOnly(op.op()));
    }
    op.identity().ok_or(AluError::NotReducible(op.op()))
}

/// TensorReduce (0x42 / 0x52): fold the innermost `axes` free dims of every partition with
/// `op`, optionally negating the result. `out` has [`reduced_len`] elements (partition-major,
/// remaining outer dims in dense order).
pub fn tensor_reduce<O: ElementOp>(
    op: O,
    negate: bool,
    shape: TileShape,
    axes: ReduceAxes,
    src: &[O::V],
    out: &mut [O::V],
) -> Result<(), AluError> {
    let init = identity(op)?;
    check_len("src", shape.len(), src.len())?;
    check_len("dst", reduced_len(shape, axes), out.len())?;
    let (inner, _) = axes.split(shape);
    for (o, group) in out.iter_mut().zip(src.chunks_exact(inner)) {
        let acc = group.iter().fold(init, |acc, &x| op.apply(x, acc));
        *o = if negate { O::negate(acc) } else { acc };
    }
    Ok(())
}

/// TensorReduce with an arg op (AMAX/AMIN, signed or unsigned): the u32 index (within the
/// folded group, dense order) of the first maximum / minimum.
pub fn tensor_reduce_arg(
    op: IntOp,
    shape: TileShape,
    axes: ReduceAxes,
    src: &[u32],
    out: &mut [u32],
) -> Result<(), AluError> {
    let signed = match op.op() {
        AluOp::AMAX_INT | AluOp::AMIN_INT => true,
        AluOp::AMAX_UINT | AluOp::AMIN_UINT => false,
        other => return Err(AluError::NotReducible(other)),
    };
    let want_max = matches!(op.op(), AluOp::AMAX_INT | AluOp::AMAX_UINT);
    check_len("src", shape.len(), src.len())?;
    check_len("dst", reduced_len(shape, axes), out.len())?;
    let key = |v: u32| {
        if signed {
            (v ^ 0x8000_0000) as u64
        } else {
            v as u64
        }
    };
    let (inner, _) = axes.split(shape);
    for (o, group) in out.iter_mut().zip(src.chunks_exact(inner)) {
        let mut best = 0usize;
        for (i, &v) in group.iter().enumerate().skip(1) {
            let better = if want_max {
                key(v) > key(group[best])
            } else {
                key(v) < key(group[best])
            };
            if better {
                best = i;
            }
        }
        *o = best as u32;
    }
    Ok(())
}

/// TensorCumulative (0x4E / 0x5E): an inclusive scan over the innermost `axes` free dims of
/// every partition, restarting for every outer index: `out[i] = op(src[i], out[i-1])` from the
/// op's identity; `negate` flips the sign of every output (not of the running value).
pub fn tensor_cumulative<O: ElementOp>(
    op: O,
    negate: bool,
    shape: TileShape,
    axes: ReduceAxes,
    src: &[O::V],
    out: &mut [O::V],
) -> Result<(), AluError> {
    let init = identity(op)?;
    check_len("src", shape.len(), src.len())?;
    check_len("dst", shape.len(), out.len())?;
    let (inner, _) = axes.split(shape);
    for (o, s) in out.chunks_exact_mut(inner).zip(src.chunks_exact(inner)) {
        let mut acc = init;
        for (o, &x) in o.iter_mut().zip(s) {
            acc = op.apply(x, acc);
            *o = if negate { O::negate(acc) } else { acc };
        }
    }
    Ok(())
}

/// TENSOR_TENSOR_SCAN (0xE5): per partition, over the whole free region,
/// `r = op1(op0(data0[i], r), data1[i])` starting from `initial`, each op reversible;
/// `out[i] = r`.
#[allow(clippy::too_many_arguments)]
pub fn tensor_tensor_scan<O: ElementOp>(
    op0: O,
    op1: O,
    reverse: Reverse,
    initial: Scalar<'_, O::V>,
    shape: TileShape,
    data0: &[O::V],
    data1: &[O::V],
    out: &mut [O::V],
) -> Result<(), AluError> {
    let f =
        crate::numerics::alu::check_two_tensor([op0, op1], initial, shape, [data0, data1], out)?;
    let rows = out
        .chunks_exact_mut(f)
        .zip(data0.chunks_exact(f))
        .zip(data1.chunks_exact(f));
    for (p, ((o, d0), d1)) in rows.enumerate() {
        let mut r = initial.at(p);
        for ((o, &a), &b) in o.iter_mut().zip(d0).zip(d1) {
            let t = apply_rev(op0, reverse.op0, a, r);
            r = apply_rev(op1, reverse.op1, t, b);
            *o = r;
        }
    }
    Ok(())
}

/// Accumulator command (`ACCUM_CMD`, wire byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccumCmd {
    /// 0: the registers are neither read nor written.
    Idle,
    /// 1: reset the registers to the op's identity; this instruction's values are not added.
    Zero,
    /// 2: continue from the registers and store the new running value.
    Accumulate,
    /// 3: start from the identity and store the new running value.
    ZeroAccumulate,
    /// 4: start from a seed value (read by the machine) and store the new running value.
    LoadAccumulate,
}

impl AccumCmd {
    /// Decode the wire byte (the spec's `ACCUM_CMD` members).
    pub fn from_wire(byte: u8) -> Result<Self, AccumError> {
        use tpbsim_isa::AccumCmd as W;
        Ok(match W(byte) {
            W::IDLE => AccumCmd::Idle,
            W::ZERO => AccumCmd::Zero,
            W::ACCUMULATE => AccumCmd::Accumulate,
            W::ZERO_ACCUMULATE => AccumCmd::ZeroAccumulate,
            W::LOAD_ACCUMULATE => AccumCmd::LoadAccumulate,
            _ => return Err(AccumError::BadCmd(byte)),
        })
    }

    /// The wire byte.
    pub fn wire(self) -> u8 {
        use tpbsim_isa::AccumCmd as W;
        match self {
            AccumCmd::Idle => W::IDLE.0,
            AccumCmd::Zero => W::ZERO.0,
            AccumCmd::Accumulate => W::ACCUMULATE.0,
            AccumCmd::ZeroAccumulate => W::ZERO_ACCUMULATE.0,
            AccumCmd::LoadAccumulate => W::LOAD_ACCUMULATE.0,
        }
    }

    /// Whether the instruction's values fold into the registers.
    pub fn updates(self) -> bool {
        matches!(
            self,
            AccumCmd::Accumulate | AccumCmd::ZeroAccumulate | AccumCmd::LoadAccumulate
        )
    }
}

/// Errors of the accumulator registers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccumError {
    /// Not an `ACCUM_CMD` value.
    #[error("accumulator command {0} is not an ACCUM_CMD value (0..=4)")]
    BadCmd(u8),
    /// LOAD_ACCUMULATE without its seed values.
    #[error("LOAD_ACCUMULATE needs one seed value per active partition")]
    MissingSeed,
    /// More partitions than registers.
    #[error("{0} partitions exceed the {NUM_ACCUMULATORS} accumulator registers")]
    TooManyPartitions(usize),
    /// The op has no identity to reset to.
    #[error(transparent)]
    Alu(#[from] AluError),
}

/// Number of per-partition accumulator registers of an engine.
pub const NUM_ACCUMULATORS: usize = 128;

/// The per-partition fp32 accumulator registers of the ACT engine (and the DVE's), updated
/// under an [`AccumCmd`] and drained by ReadAccumulator (0x24 / 0x9B).
#[derive(Clone, Debug, PartialEq)]
pub struct Accumulators {
    regs: [f32; NUM_ACCUMULATORS],
}

impl Default for Accumulators {
    fn default() -> Self {
        Accumulators {
            regs: [0.0; NUM_ACCUMULATORS],
        }
    }
}

impl Accumulators {
    /// All registers zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The register of partition `p`.
    pub fn get(&self, p: usize) -> Option<f32> {
        self.regs.get(p).copied()
    }

    /// All registers.
    pub fn registers(&self) -> &[f32; NUM_ACCUMULATORS] {
        &self.regs
    }

    /// The running value partition `p` starts from under `cmd`, for fold op `op`. `seed` is
    /// the LOAD_ACCUMULATE value of that partition.
    pub fn start<O: ElementOp<V = f32>>(
        &self,
        cmd: AccumCmd,
        op: O,
        p: usize,
        seed: Option<f32>,
    ) -> Result<f32, AccumError> {
        let p_ok = self
            .regs
            .get(p)
            .copied()
            .ok_or(AccumError::TooManyPartitions(p + 1))?;
        Ok(match cmd {
            AccumCmd::Accumulate => p_ok,
            AccumCmd::LoadAccumulate => seed.ok_or(AccumError::MissingSeed)?,
            AccumCmd::Idle | AccumCmd::Zero | AccumCmd::ZeroAccumulate => identity(op)?,
        })
    }

    /// Store the final running value of partition `p` as `cmd` says (ZERO stores the
    /// identity; IDLE stores nothing).
    pub fn finish<O: ElementOp<V = f32>>(
        &mut self,
        cmd: AccumCmd,
        op: O,
        p: usize,
        running: f32,
    ) -> Result<(), AccumError> {
        let slot = self
            .regs
            .get_mut(p)
            .ok_or(AccumError::TooManyPartitions(p + 1))?;
        match cmd {
            AccumCmd::Idle => {}
            AccumCmd::Zero => *slot = identity(op)?,
            _ => *slot = running,
        }
        Ok(())
    }

    /// Fold one partition's values (in order) into its register under `cmd`:
    /// `running = op(value, running)`.
    pub fn fold<O: ElementOp<V = f32>>(
        &mut self,
        cmd: AccumCmd,
        op: O,
        p: usize,
        seed: Option<f32>,
        values: &[f32],
    ) -> Result<(), AccumError> {
        if cmd == AccumCmd::Idle {
            return Ok(());
        }
        let mut r = self.start(cmd, op, p, seed)?;
        if cmd.updates() {
            for &v in values {
                r = op.apply(v, r);
            }
        }
        self.finish(cmd, op, p, r)
    }

    /// ReadAccumulator (0x24 ACT / 0x9B DVE): one fp32 per active partition, optionally
    /// negated (DVE only), into `out` (one element per partition).
    pub fn read(&self, negate: bool, out: &mut [f32]) -> Result<(), AccumError> {
        if out.len() > NUM_ACCUMULATORS {
            return Err(AccumError::TooManyPartitions(out.len()));
        }
        for (o, &r) in out.iter_mut().zip(&self.regs) {
            *o = if negate { -r } else { r };
        }
        Ok(())
    }
}

/// TensorScalarCache cumulative (0xE6): per partition `t = x op0 imm0` (reversible), then
/// `reg = op1(t, reg)` and `out[i] = reg`, with the register's start and write-back under
/// `cmd` (ZERO_ACCUMULATE starts from op1's identity, ACCUMULATE from the register,
/// LOAD_ACCUMULATE from `seed`).
#[allow(clippy::too_many_arguments)]
pub fn tensor_scalar_cumulative<O: ElementOp<V = f32>>(
    op0: O,
    imm0: Scalar<'_, f32>,
    reverse0: bool,
    op1: O,
    cmd: AccumCmd,
    seed: Option<Scalar<'_, f32>>,
    acc: &mut Accumulators,
    shape: TileShape,
    src: &[f32],
    out: &mut [f32],
) -> Result<(), AccumError> {
    if op0.op().is_arg() {
        return Err(AluError::ReductionOnly(op0.op()).into());
    }
    check_len("src", shape.len(), src.len())?;
    check_len("dst", shape.len(), out.len())?;
    imm0.check("imm0", shape.partitions())?;
    if let Some(s) = &seed {
        s.check("seed", shape.partitions())?;
    }
    let f = shape.free_len();
    for (p, (o, s)) in out.chunks_exact_mut(f).zip(src.chunks_exact(f)).enumerate() {
        let mut r = acc.start(cmd, op1, p, seed.map(|s| s.at(p)))?;
        let a = imm0.at(p);
        for (o, &x) in o.iter_mut().zip(s) {
            r = op1.apply(apply_rev(op0, reverse0, x, a), r);
            *o = r;
        }
        acc.finish(cmd, op1, p, r)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
