//! The ALU of the elementwise engines (ACT, DVE, POOL) as pure functions, and the tile kernels
//! built on it: TensorTensor, TensorScalar, Iota, Memset, Select / CopyPredicated /
//! CastPredicated and Copy. Reductions and scans live in [`super::reduce`].
//!
//! Two datapaths:
//!
//! * **fp32** ([`FpOp`]): ACT and DVE always, POOL for float data. Operands arrive as fp32 (the
//!   machine converts the source dtype first); compare and logical ops yield 1.0 / 0.0; MAX/MIN
//!   follow SSE `maxss`/`minss`: `max(a, b) = a > b ? a : b`, so a NaN on either side or a tie
//!   yields `b` (the second operand). Reductions and scans call the op as `op(element, running)`
//!   so the running value is the one kept.
//! * **32-bit integer** ([`IntOp`]): POOL (and the SP sequencer) on int32/uint32 data; the DVE
//!   on v5 for its 15-op integer subset. Values are raw 32-bit patterns (`u32`; reinterpret
//!   `i32` slices with `bytemuck`), add/sub/mult wrap modulo 2^32 with no saturation, MULT keeps
//!   the low 32 bits. Signedness of the base ops and of the shared integer-band ops comes from
//!   the operand dtype; the `_INT` / `_UINT` ops fix it.
//!
//! An op that the datapath cannot run is an [`AluError`] when the handle is built
//! ([`AluContext::fp_op`], [`AluContext::int_op`]); kernels over validated handles only fail on
//! shape mismatches.

use std::fmt;

use tpbsim_isa::{Engine, Gen};

mod op;
pub use op::AluOp;

use super::cast::{CastError, CastPolicy};
use tpbsim_isa::NumFormat;

/// Errors of the ALU value model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AluError {
    /// The byte is not an `ALU_OP` code on any generation.
    #[error("unknown ALU op byte {0:#04x}")]
    UnknownOp(u8),
    /// The op exists, but not on this generation.
    #[error("ALU op {op} is not present on {gen} (introduced on {since})")]
    NotInGen {
        /// The op.
        op: AluOp,
        /// The generation asked for.
        gen: Gen,
        /// The first generation that has it.
        since: Gen,
    },
    /// The engine has no ALU datapath of this kind.
    #[error("engine {engine} has no {datapath} ALU datapath on {gen}")]
    NoDatapath {
        /// The engine.
        engine: Engine,
        /// `"fp32"` or `"integer"`.
        datapath: &'static str,
        /// The generation.
        gen: Gen,
    },
    /// The op is not legal on this datapath / engine.
    #[error("ALU op {op} is not legal on the {datapath} datapath of {engine}: {why}")]
    IllegalOp {
        /// The op.
        op: AluOp,
        /// The engine.
        engine: Engine,
        /// `"fp32"` or `"integer"`.
        datapath: &'static str,
        /// The reason.
        why: &'static str,
    },
    /// The op's signedness does not match the operand dtype's.
    #[error("ALU op {op} needs {need} operands, the operands are {got}")]
    Signedness {
        /// The op.
        op: AluOp,
        /// The signedness the op requires.
        need: Signedness,
        /// The signedness of the operands.
        got: Signedness,
    },
    /// The op's value semantics are not public; tpbsim does not invent them.
    #[error("ALU op {0} is not modelled: its value semantics are not public")]
    Unmodelled(AluOp),
    /// The op only exists as a reduction (the arg-max/arg-min ops).
    #[error("ALU op {0} has no elementwise form; it is a reduction (index output)")]
    ReductionOnly(AluOp),
    /// The op has no defined reduction (no initial value).
    #[error("ALU op {0} cannot be used as a reduction or scan op")]
    NotReducible(AluOp),
    /// Slice lengths do not match the shapes.
    #[error("shape mismatch: {what} has {got} elements, expected {expected}")]
    Shape {
        /// Which operand.
        what: &'static str,
        /// Expected element count.
        expected: usize,
        /// Actual element count.
        got: usize,
    },
    /// A tile shape is malformed.
    #[error("bad tile shape: {0}")]
    BadShape(&'static str),
    /// A reduction axis code is not a free-axis reduction.
    #[error("reduce axis code {code} is not a free-axis reduction: {why}")]
    BadAxes {
        /// The wire/BIR code.
        code: u8,
        /// The reason.
        why: &'static str,
    },
}

/// Signedness of integer operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signedness {
    /// int8/16/32.
    Signed,
    /// uint8/16/32.
    Unsigned,
}

impl fmt::Display for Signedness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signedness::Signed => "signed",
            Signedness::Unsigned => "unsigned",
        })
    }
}

/// The engine and generation an ALU op runs on; builds validated op handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AluContext {
    /// Generation.
    pub gen: Gen,
    /// Engine executing the instruction.
    pub engine: Engine,
}

impl AluContext {
    /// A context for `engine` on `gen`.
    pub fn new(gen: Gen, engine: Engine) -> Self {
        AluContext { gen, engine }
    }

    fn check_gen(&self, op: AluOp) -> Result<(), AluError> {
        if op.exists_in(self.gen) {
            Ok(())
        } else {
            Err(AluError::NotInGen {
                op,
                gen: self.gen,
                since: op.since(),
            })
        }
    }

    /// Validate `op` for the fp32 datapath of this engine.
    pub fn fp_op(&self, op: AluOp) -> Result<FpOp, AluError> {
        self.check_gen(op)?;
        let illegal = |why| AluError::IllegalOp {
            op,
            engine: self.engine,
            datapath: "fp32",
            why,
        };
        match self.engine {
            Engine::Act | Engine::Dve | Engine::Pool => {}
            engine => {
                return Err(AluError::NoDatapath {
                    engine,
                    datapath: "fp32",
                    gen: self.gen,
                })
            }
        }
        if op.is_int_band() {
            return Err(illegal("integer-band ops select the integer engine"));
        }
        if op == AluOp::CRC32 || (op.is_bitvec() && op != AluOp::BYPASS) {
            return Err(illegal("bit-vector ops are integer-only"));
        }
        if op == AluOp::MOD {
            return Err(illegal("MOD is an integer op"));
        }
        if matches!(op, AluOp::POW | AluOp::RSQRT) && self.engine != Engine::Pool {
            return Err(illegal("POW and RSQRT run on POOL only"));
        }
        Ok(FpOp(op))
    }

    /// Validate `op` for the 32-bit integer datapath with operands of `sign`.
    pub fn int_op(&self, op: AluOp, sign: Signedness) -> Result<IntOp, AluError> {
        self.check_gen(op)?;
        let illegal = |why| AluError::IllegalOp {
            op,
            engine: self.engine,
            datapath: "integer",
            why,
        };
        match self.engine {
            Engine::Pool | Engine::Sp => {}
            Engine::Dve if self.gen >= Gen::V5 => {
                if !op.is_dve_int() {
                    return Err(illegal("not in the v5 DVE integer subset"));
                }
            }
            engine => {
                return Err(AluError::NoDatapath {
                    engine,
                    datapath: "integer",
                    gen: self.gen,
                })
            }
        }
        if matches!(op, AluOp::DIVIDE | AluOp::POW | AluOp::RSQRT) {
            return Err(illegal("floating-point only"));
        }
        if op == AluOp::CRC32 {
            return Err(AluError::Unmodelled(op));
        }
        if let Some(need) = op.fixed_signedness() {
            if need != sign {
                return Err(AluError::Signedness {
                    op,
                    need,
                    got: sign,
                });
            }
        }
        Ok(IntOp { op, sign })
    }
}

/// An op validated for the fp32 datapath.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FpOp(AluOp);

/// An op validated for the 32-bit integer datapath, with the operand signedness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntOp {
    op: AluOp,
    sign: Signedness,
}

impl IntOp {
    /// Operand signedness.
    pub fn signedness(self) -> Signedness {
        self.sign
    }
}

/// `maxss`-style max: `a > b ? a : b` (NaN or tie → `b`).
#[inline(always)]
pub(crate) fn sse_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// `minss`-style min: `a < b ? a : b` (NaN or tie → `b`).
#[inline(always)]
pub(crate) fn sse_min(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

#[inline(always)]
fn b2f(v: bool) -> f32 {
    if v {
        1.0
    } else {
        0.0
    }
}

/// The fp32 datapath on one pair of operands. `code` must be validated by
/// [`AluContext::fp_op`]; codes outside the fp set return NaN.
#[inline(always)]
pub(crate) fn fp_eval(op: AluOp, a: f32, b: f32) -> f32 {
    match op {
        AluOp::BYPASS => a,
        AluOp::ADD => a + b,
        AluOp::SUBTRACT => a - b,
        AluOp::MULT => a * b,
        AluOp::DIVIDE => a / b,
        AluOp::MAX => sse_max(a, b),
        AluOp::MIN => sse_min(a, b),
        AluOp::LOGICAL_AND => b2f(a != 0.0 && b != 0.0),
        AluOp::LOGICAL_OR => b2f(a != 0.0 || b != 0.0),
        AluOp::LOGICAL_XOR => b2f((a != 0.0) ^ (b != 0.0)),
        AluOp::IS_EQ => b2f(a == b),
        AluOp::IS_GT => b2f(a > b),
        AluOp::IS_GE => b2f(a >= b),
        AluOp::IS_LE => b2f(a <= b),
        AluOp::IS_LT => b2f(a < b),
        AluOp::ABSOLUTE_DIFF => (a - b).abs(),
        AluOp::IS_NE => b2f(a != b),
        AluOp::ABSOLUTE_VALUE => a.abs(),
        AluOp::POW => (a as f64).powf(b as f64) as f32,
        AluOp::RSQRT => (1.0 / (a as f64).sqrt()) as f32,
        AluOp::ABS_MAX => sse_max(a.abs(), b.abs()),
        AluOp::ABS_MIN => sse_min(a.abs(), b.abs()),
        AluOp::RE_LU => sse_max(a, 0.0),
        AluOp::SQUARE => a * a,
        AluOp::SYMMETRIC_CLAMP => {
            if a.is_nan() || a == 0.0 {
                a
            } else {
                sse_max(a.abs(), b.abs()).copysign(a)
            }
        }
        _ => f32::NAN,
    }
}

#[inline(always)]
fn b2u(v: bool) -> u32 {
    v as u32
}

#[inline(always)]
fn ilt(a: u32, b: u32, s: Signedness) -> bool {
    match s {
        Signedness::Signed => (a as i32) < (b as i32),
        Signedness::Unsigned => a < b,
    }
}

#[inline(always)]
fn imag(a: u32, s: Signedness) -> u32 {
    match s {
        Signedness::Signed => (a as i32).unsigned_abs(),
        Signedness::Unsigned => a,
    }
}

#[inline(always)]
fn idiv(a: u32, b: u32, s: Signedness) -> u32 {
    if b == 0 {
        return 0;
    }
    match s {
        Signedness::Signed => (a as i32).wrapping_div(b as i32) as u32,
        Signedness::Unsigned => a / b,
    }
}

#[inline(always)]
fn irem(a: u32, b: u32, s: Signedness) -> u32 {
    if b == 0 {
        return 0;
    }
    match s {
        Signedness::Signed => (a as i32).wrapping_rem(b as i32) as u32,
        Signedness::Unsigned => a % b,
    }
}

/// The 32-bit integer datapath on one pair of operands (raw bit patterns). `code` must be
/// validated by [`AluContext::int_op`] and must not be an arg op; other codes return 0.
#[inline(always)]
fn int_eval(op: AluOp, s: Signedness, a: u32, b: u32) -> u32 {
    use Signedness::{Signed, Unsigned};
    let sh = b & 31;
    match op {
        AluOp::BYPASS => a,
        AluOp::BITWISE_NOT => !a,
        AluOp::ARITH_SHIFT_LEFT | AluOp::LOGICAL_SHIFT_LEFT => a << sh,
        AluOp::ARITH_SHIFT_RIGHT => ((a as i32) >> sh) as u32,
        AluOp::LOGICAL_SHIFT_RIGHT => a >> sh,
        AluOp::ADD | AluOp::ADD_INT => a.wrapping_add(b),
        AluOp::SUBTRACT | AluOp::SUBTRACT_INT => a.wrapping_sub(b),
        AluOp::MULT | AluOp::MULT_INT | AluOp::MULT_UINT => a.wrapping_mul(b),
        AluOp::MAX => {
            if ilt(b, a, s) {
                a
            } else {
                b
            }
        }
        AluOp::MIN => {
            if ilt(a, b, s) {
                a
            } else {
                b
            }
        }
        AluOp::BITWISE_AND => a & b,
        AluOp::BITWISE_OR => a | b,
        AluOp::BITWISE_XOR => a ^ b,
        AluOp::LOGICAL_AND => b2u(a != 0 && b != 0),
        AluOp::LOGICAL_OR => b2u(a != 0 || b != 0),
        AluOp::LOGICAL_XOR => b2u((a != 0) ^ (b != 0)),
        AluOp::IS_EQ | AluOp::IS_EQUAL_INT => b2u(a == b),
        AluOp::IS_NE | AluOp::IS_NE_INT => b2u(a != b),
        AluOp::IS_GT => b2u(ilt(b, a, s)),
        AluOp::IS_GE => b2u(!ilt(a, b, s)),
        AluOp::IS_LE => b2u(!ilt(b, a, s)),
        AluOp::IS_LT => b2u(ilt(a, b, s)),
        AluOp::ABSOLUTE_DIFF => match s {
            Signed => ((a as i32 as i64) - (b as i32 as i64)).unsigned_abs() as u32,
            Unsigned => a.abs_diff(b),
        },
        AluOp::ABSOLUTE_VALUE => imag(a, s),
        AluOp::MOD | AluOp::MOD_INT => irem(a, b, s),
        AluOp::ABS_MAX => imag(a, s).max(imag(b, s)),
        AluOp::ABS_MIN => imag(a, s).min(imag(b, s)),
        AluOp::RE_LU => match s {
            Signed => (a as i32).max(0) as u32,
            Unsigned => a,
        },
        AluOp::SQUARE => a.wrapping_mul(a),
        AluOp::SYMMETRIC_CLAMP => {
            let m = imag(a, s).max(imag(b, s));
            match s {
                Signed => (m as i32).wrapping_mul((a as i32).signum()) as u32,
                Unsigned => {
                    if a == 0 {
                        0
                    } else {
                        m
                    }
                }
            }
        }
        AluOp::DIVIDE_INT => idiv(a, b, s),
        AluOp::ABS_MAX_INT => imag(a, Signed).max(imag(b, Signed)),
        AluOp::ABS_MIN_INT => imag(a, Signed).min(imag(b, Signed)),
        AluOp::ABS_DIFF_INT => ((a as i32 as i64) - (b as i32 as i64)).unsigned_abs() as u32,
        AluOp::ABS_VALUE_INT => (a as i32).unsigned_abs(),
        AluOp::MAX_INT => (a as i32).max(b as i32) as u32,
        AluOp::MIN_INT => (a as i32).min(b as i32) as u32,
        AluOp::IS_GT_INT => b2u((a as i32) > (b as i32)),
        AluOp::IS_GE_INT => b2u((a as i32) >= (b as i32)),
        AluOp::IS_LE_INT => b2u((a as i32) <= (b as i32)),
        AluOp::IS_LT_INT => b2u((a as i32) < (b as i32)),
        AluOp::MAX_UINT => a.max(b),
        AluOp::MIN_UINT => a.min(b),
        AluOp::IS_GT_UINT => b2u(a > b),
        AluOp::IS_GE_UINT => b2u(a >= b),
        AluOp::IS_LE_UINT => b2u(a <= b),
        AluOp::IS_LT_UINT => b2u(a < b),
        AluOp::DIVIDE_UINT => idiv(a, b, Unsigned),
        AluOp::MOD_UINT => irem(a, b, Unsigned),
        _ => 0,
    }
}

/// A validated op on one datapath: the value type and the per-element function. Implemented
/// by [`FpOp`] (`f32`) and [`IntOp`] (`u32` bit patterns); every kernel is generic over it.
pub trait ElementOp: Copy {
    /// Element value type.
    type V: Copy + PartialEq + fmt::Debug + Default;

    /// The wire op.
    fn op(self) -> AluOp;

    /// `op(a, b)`.
    fn apply(self, a: Self::V, b: Self::V) -> Self::V;

    /// Negation of a value (fp sign flip, integer two's-complement wrap).
    fn negate(v: Self::V) -> Self::V;

    /// The initial value of a reduction / scan with this op (the op's identity), if defined.
    fn identity(self) -> Option<Self::V>;

    /// `out[i] = op(a[i], b[i])` over equal-length slices (no length checks).
    fn map2(self, a: &[Self::V], b: &[Self::V], out: &mut [Self::V]);

    /// `out[i] = op(x[i], s)`, or `op(s, x[i])` when `rev` (no length checks).
    #[inline]
    fn map_scalar(self, rev: bool, x: &[Self::V], s: Self::V, out: &mut [Self::V]) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = apply_rev(self, rev, v, s);
        }
    }

    /// [`ElementOp::map_scalar`] in place.
    #[inline]
    fn map_scalar_in_place(self, rev: bool, xs: &mut [Self::V], s: Self::V) {
        for v in xs {
            *v = apply_rev(self, rev, *v, s);
        }
    }
}

/// `$go` with `$f(v, s)` the element function of fp op `$code` between a tensor value `v`
/// and a scalar `s` (`s op v` when `$rev`): one closure per hot op, so each use compiles to a
/// loop of its own that vectorises; the other ops share one loop over [`fp_eval`].
macro_rules! fp_rev_op {
    ($code:expr, $rev:expr, |$f:ident| $go:expr) => {{
        match ($code, $rev) {
            ($crate::numerics::alu::AluOp::BYPASS, false) => {
                let $f = |v: f32, _: f32| v;
                $go
            }
            ($crate::numerics::alu::AluOp::BYPASS, true) => {
                let $f = |_: f32, s: f32| s;
                $go
            }
            ($crate::numerics::alu::AluOp::ADD, false) => {
                let $f = |v: f32, s: f32| v + s;
                $go
            }
            ($crate::numerics::alu::AluOp::ADD, true) => {
                let $f = |v: f32, s: f32| s + v;
                $go
            }
            ($crate::numerics::alu::AluOp::SUBTRACT, false) => {
                let $f = |v: f32, s: f32| v - s;
                $go
            }
            ($crate::numerics::alu::AluOp::SUBTRACT, true) => {
                let $f = |v: f32, s: f32| s - v;
                $go
            }
            ($crate::numerics::alu::AluOp::MULT, false) => {
                let $f = |v: f32, s: f32| v * s;
                $go
            }
            ($crate::numerics::alu::AluOp::MULT, true) => {
                let $f = |v: f32, s: f32| s * v;
                $go
            }
            ($crate::numerics::alu::AluOp::DIVIDE, false) => {
                let $f = |v: f32, s: f32| v / s;
                $go
            }
            ($crate::numerics::alu::AluOp::DIVIDE, true) => {
                let $f = |v: f32, s: f32| s / v;
                $go
            }
            ($crate::numerics::alu::AluOp::MAX, false) => {
                let $f = |v: f32, s: f32| $crate::numerics::alu::sse_max(v, s);
                $go
            }
            ($crate::numerics::alu::AluOp::MAX, true) => {
                let $f = |v: f32, s: f32| $crate::numerics::alu::sse_max(s, v);
                $go
            }
            ($crate::numerics::alu::AluOp::MIN, false) => {
                let $f = |v: f32, s: f32| $crate::numerics::alu::sse_min(v, s);
                $go
            }
            ($crate::numerics::alu::AluOp::MIN, true) => {
                let $f = |v: f32, s: f32| $crate::numerics::alu::sse_min(s, v);
                $go
            }
            (c, false) => {
                let $f = move |v: f32, s: f32| $crate::numerics::alu::fp_eval(c, v, s);
                $go
            }
            (c, true) => {
                let $f = move |v: f32, s: f32| $crate::numerics::alu::fp_eval(c, s, v);
                $go
            }
        }
    }};
}
pub(crate) use fp_rev_op;

#[inline(always)]
fn map1_with(x: &[f32], out: &mut [f32], f: impl Fn(f32) -> f32) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = f(v);
    }
}

#[inline(always)]
fn map1_in_place(xs: &mut [f32], f: impl Fn(f32) -> f32) {
    for v in xs {
        *v = f(*v);
    }
}

impl FpOp {
    /// ADD, legal on the fp32 datapath of every engine and generation (the accumulators'
    /// fold op).
    pub const ADD: FpOp = FpOp(AluOp::ADD);

    /// The wire op.
    pub fn op(self) -> AluOp {
        self.0
    }

    /// Evaluate the op on one pair of fp32 operands.
    #[inline]
    pub fn eval(self, a: f32, b: f32) -> f32 {
        fp_eval(self.0, a, b)
    }
}

#[inline(always)]
fn map2_with<T: Copy, F: Fn(T, T) -> T>(a: &[T], b: &[T], out: &mut [T], f: F) {
    let n = out.len().min(a.len()).min(b.len());
    let (a, b, out) = (&a[..n], &b[..n], &mut out[..n]);
    for i in 0..n {
        out[i] = f(a[i], b[i]);
    }
}

impl ElementOp for FpOp {
    type V = f32;

    fn op(self) -> AluOp {
        self.0
    }

    #[inline(always)]
    fn apply(self, a: f32, b: f32) -> f32 {
        fp_eval(self.0, a, b)
    }

    #[inline(always)]
    fn negate(v: f32) -> f32 {
        -v
    }

    fn identity(self) -> Option<f32> {
        match self.0 {
            AluOp::ADD
            | AluOp::SUBTRACT
            | AluOp::LOGICAL_OR
            | AluOp::LOGICAL_XOR
            | AluOp::ABS_MAX => Some(0.0),
            AluOp::MULT | AluOp::LOGICAL_AND => Some(1.0),
            AluOp::MAX => Some(f32::NEG_INFINITY),
            AluOp::MIN | AluOp::ABS_MIN => Some(f32::INFINITY),
            _ => None,
        }
    }

    /// Specialised loops for the hot ops so they vectorise; the rest share one loop.
    fn map2(self, a: &[f32], b: &[f32], out: &mut [f32]) {
        fp_rev_op!(self.0, false, |f| map2_with(a, b, out, f))
    }

    fn map_scalar(self, rev: bool, x: &[f32], s: f32, out: &mut [f32]) {
        fp_rev_op!(self.0, rev, |f| map1_with(x, out, |v| f(v, s)))
    }

    fn map_scalar_in_place(self, rev: bool, xs: &mut [f32], s: f32) {
        if (self.0, rev) == (AluOp::BYPASS, false) {
            return; // BYPASS passes the value through.
        }
        fp_rev_op!(self.0, rev, |f| map1_in_place(xs, |v| f(v, s)))
    }
}

impl IntOp {
    /// The wire op.
    pub fn op(self) -> AluOp {
        self.op
    }

    /// Evaluate the op on one pair of 32-bit operands (bit patterns). Arg ops have no
    /// elementwise form and are an error.
    pub fn eval(self, a: u32, b: u32) -> Result<u32, AluError> {
        if self.op.is_arg() {
            return Err(AluError::ReductionOnly(self.op));
        }
        Ok(int_eval(self.op, self.sign, a, b))
    }
}

impl ElementOp for IntOp {
    type V = u32;

    fn op(self) -> AluOp {
        self.op
    }

    #[inline(always)]
    fn apply(self, a: u32, b: u32) -> u32 {
        int_eval(self.op, self.sign, a, b)
    }

    #[inline(always)]
    fn negate(v: u32) -> u32 {
        v.wrapping_neg()
    }

    fn identity(self) -> Option<u32> {
        let signed = self.sign == Signedness::Signed;
        match self.op {
            AluOp::ADD
            | AluOp::ADD_INT
            | AluOp::SUBTRACT
            | AluOp::SUBTRACT_INT
            | AluOp::BITWISE_OR
            | AluOp::BITWISE_XOR
            | AluOp::LOGICAL_OR
            | AluOp::LOGICAL_XOR
            | AluOp::ABS_MAX
            | AluOp::ABS_MAX_INT => Some(0),
            AluOp::MULT | AluOp::MULT_INT | AluOp::MULT_UINT | AluOp::LOGICAL_AND => Some(1),
            AluOp::BITWISE_AND => Some(u32::MAX),
            AluOp::MAX if signed => Some(i32::MIN as u32),
            AluOp::MAX | AluOp::MAX_UINT => Some(0),
            AluOp::MAX_INT => Some(i32::MIN as u32),
            AluOp::MIN if signed => Some(i32::MAX as u32),
            AluOp::MIN | AluOp::MIN_UINT => Some(u32::MAX),
            AluOp::MIN_INT => Some(i32::MAX as u32),
            AluOp::ABS_MIN if signed => Some(i32::MIN as u32),
            AluOp::ABS_MIN => Some(u32::MAX),
            AluOp::ABS_MIN_INT => Some(i32::MIN as u32),
            _ => None,
        }
    }

    fn map2(self, a: &[u32], b: &[u32], out: &mut [u32]) {
        match self.op {
            AluOp::ADD | AluOp::ADD_INT => map2_with(a, b, out, u32::wrapping_add),
            AluOp::SUBTRACT | AluOp::SUBTRACT_INT => map2_with(a, b, out, u32::wrapping_sub),
            AluOp::MULT | AluOp::MULT_INT | AluOp::MULT_UINT => {
                map2_with(a, b, out, u32::wrapping_mul)
            }
            c => {
                let s = self.sign;
                map2_with(a, b, out, |x, y| int_eval(c, s, x, y))
            }
        }
    }
}

/// The shape of a tile: partitions × up to four free dims. Free dims are given innermost
/// first (`[x, y, z, w]`, as in the access patterns' `num_elem`); the element at
/// `(p, x, y, z, w)` sits at `p * free_len + ((w * Z + z) * Y + y) * X + x` in a dense slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileShape {
    partitions: usize,
    free: [usize; 4],
}

impl TileShape {
    /// A shape of `partitions` (1..=128) by `free` (1..=4 dims, innermost first, each ≥ 1).
    pub fn new(partitions: usize, free: &[usize]) -> Result<Self, AluError> {
        if partitions == 0 || partitions > 128 {
            return Err(AluError::BadShape("partitions must be 1..=128"));
        }
        if free.is_empty() || free.len() > 4 {
            return Err(AluError::BadShape("a tile has 1 to 4 free dims"));
        }
        if free.contains(&0) {
            return Err(AluError::BadShape("free dims must be non-zero"));
        }
        let mut dims = [1usize; 4];
        dims[..free.len()].copy_from_slice(free);
        dims.iter()
            .try_fold(partitions, |acc, &d| acc.checked_mul(d))
            .ok_or(AluError::BadShape("tile size overflows"))?;
        Ok(TileShape {
            partitions,
            free: dims,
        })
    }

    /// Number of partitions.
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    /// Free dims, innermost first (unused dims are 1).
    pub fn free_dims(&self) -> [usize; 4] {
        self.free
    }

    /// Elements per partition.
    pub fn free_len(&self) -> usize {
        self.free.iter().product()
    }

    /// Total elements.
    pub fn len(&self) -> usize {
        self.partitions * self.free_len()
    }

    /// Whether the tile is empty (never, by construction).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), AluError> {
    if expected == got {
        Ok(())
    } else {
        Err(AluError::Shape {
            what,
            expected,
            got,
        })
    }
}

/// TensorTensor (0x41 / 0x51 and the predicated bodies): `out[i] = op(src0[i], src1[i])`.
pub fn tensor_tensor<O: ElementOp>(
    op: O,
    src0: &[O::V],
    src1: &[O::V],
    out: &mut [O::V],
) -> Result<(), AluError> {
    if op.op().is_arg() {
        return Err(AluError::ReductionOnly(op.op()));
    }
    check_len("src1", src0.len(), src1.len())?;
    check_len("dst", src0.len(), out.len())?;
    op.map2(src0, src1, out);
    Ok(())
}

/// A scalar operand: an instruction immediate (broadcast to every partition) or one value
/// per partition (pointer / register source, already read by the machine).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar<'a, V> {
    /// One value for the whole tile.
    Imm(V),
    /// One value per partition.
    PerPartition(&'a [V]),
}

impl<V: Copy> Scalar<'_, V> {
    pub(crate) fn check(&self, what: &'static str, partitions: usize) -> Result<(), AluError> {
        match self {
            Scalar::Imm(_) => Ok(()),
            Scalar::PerPartition(v) => check_len(what, partitions, v.len()),
        }
    }

    #[inline]
    pub(crate) fn at(&self, p: usize) -> V {
        match self {
            Scalar::Imm(v) => *v,
            Scalar::PerPartition(v) => v[p],
        }
    }
}

/// The TensorScalar reverse byte: bit0 reverses op0 (`scalar0 op0 x`), bit1 reverses op1
/// (`scalar1 op1 t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Reverse {
    /// `scalar0 op0 x` instead of `x op0 scalar0`.
    pub op0: bool,
    /// `scalar1 op1 t` instead of `t op1 scalar1`.
    pub op1: bool,
}

impl Reverse {
    /// Decode the wire byte (bits above 1 must be zero).
    pub fn from_wire(byte: u8) -> Result<Self, AluError> {
        if byte > 3 {
            return Err(AluError::BadShape("reverse byte must be 0..=3"));
        }
        Ok(Reverse {
            op0: byte & 1 != 0,
            op1: byte & 2 != 0,
        })
    }
}

#[inline(always)]
pub(crate) fn apply_rev<O: ElementOp>(op: O, rev: bool, t: O::V, s: O::V) -> O::V {
    if rev {
        op.apply(s, t)
    } else {
        op.apply(t, s)
    }
}

/// TensorScalar (0x43 / 0x53): `out = (x op0 s0) op1 s1`, each step reversible. A single-op
/// instruction encodes op1 = BYPASS (which passes `x op0 s0` through).
#[allow(clippy::too_many_arguments)]
pub fn tensor_scalar<O: ElementOp>(
    op0: O,
    s0: Scalar<'_, O::V>,
    op1: O,
    s1: Scalar<'_, O::V>,
    reverse: Reverse,
    shape: TileShape,
    src: &[O::V],
    out: &mut [O::V],
) -> Result<(), AluError> {
    for o in [op0.op(), op1.op()] {
        if o.is_arg() {
            return Err(AluError::ReductionOnly(o));
        }
    }
    check_len("src", shape.len(), src.len())?;
    check_len("dst", shape.len(), out.len())?;
    s0.check("scalar0", shape.partitions())?;
    s1.check("scalar1", shape.partitions())?;
    let f = shape.free_len();
    for (p, (row_in, row_out)) in src.chunks_exact(f).zip(out.chunks_exact_mut(f)).enumerate() {
        tensor_scalar_row(op0, s0.at(p), op1, s1.at(p), reverse, row_in, row_out);
    }
    Ok(())
}

/// One partition of a TensorScalar: `out = (x op0 s0) op1 s1` (each op a pass over the row;
/// every intermediate is the fp32 / u32 value a fused loop would hold).
#[inline]
pub(crate) fn tensor_scalar_row<O: ElementOp>(
    op0: O,
    s0: O::V,
    op1: O,
    s1: O::V,
    reverse: Reverse,
    x: &[O::V],
    out: &mut [O::V],
) {
    op0.map_scalar(reverse.op0, x, s0, out);
    op1.map_scalar_in_place(reverse.op1, out, s1);
}

/// The checks of a two-op, two-tensor, one-scalar kernel (ScalarTensorTensor and
/// TensorTensorScan): elementwise ops, every operand `shape.len()` long, a per-partition scalar
/// one value per partition. Returns the elements per partition.
pub(crate) fn check_two_tensor<O: ElementOp>(
    ops: [O; 2],
    scalar: Scalar<'_, O::V>,
    shape: TileShape,
    srcs: [&[O::V]; 2],
    out: &[O::V],
) -> Result<usize, AluError> {
    for o in ops {
        if o.op().is_arg() {
            return Err(AluError::ReductionOnly(o.op()));
        }
    }
    check_len("src0", shape.len(), srcs[0].len())?;
    check_len("src1", shape.len(), srcs[1].len())?;
    check_len("dst", shape.len(), out.len())?;
    scalar.check("scalar", shape.partitions())?;
    Ok(shape.free_len())
}

/// ScalarTensorTensor (0x9D arith / 0x9E bitvec): `out = (src0 op0 s) op1 src1`, the scalar
/// broadcast per partition. `reverse.op0` computes `s op0 src0`, `reverse.op1` computes
/// `src1 op1 t` (the TENS_SCALAR_REV_OPS template with the second tensor in the second scalar's
/// place).
#[allow(clippy::too_many_arguments)]
pub fn scalar_tensor_tensor<O: ElementOp>(
    op0: O,
    scalar: Scalar<'_, O::V>,
    op1: O,
    reverse: Reverse,
    shape: TileShape,
    src0: &[O::V],
    src1: &[O::V],
    out: &mut [O::V],
) -> Result<(), AluError> {
    let f = check_two_tensor([op0, op1], scalar, shape, [src0, src1], out)?;
    let rows = out
        .chunks_exact_mut(f)
        .zip(src0.chunks_exact(f))
        .zip(src1.chunks_exact(f));
    for (p, ((o, a), b)) in rows.enumerate() {
        let s = scalar.at(p);
        for ((o, &x), &y) in o.iter_mut().zip(a).zip(b) {
            let t = apply_rev(op0, reverse.op0, x, s);
            *o = apply_rev(op1, reverse.op1, t, y);
        }
    }
    Ok(())
}

/// Iota parameters: `base + partition × channel_multiplier + Σ steps[d] × index[d]` over the
/// free dims (innermost first), in wrapping 32-bit arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Iota {
    /// Value at partition 0, index 0.
    pub base: i32,
    /// Added per partition.
    pub channel_multiplier: i32,
    /// Added per step of each free dim (innermost first).
    pub steps: [i32; 4],
}

/// Iota (0x7E): fill an int32 tile with the affine sequence of `iota`.
pub fn iota(iota: Iota, shape: TileShape, out: &mut [i32]) -> Result<(), AluError> {
    check_len("dst", shape.len(), out.len())?;
    let [x, y, z, w] = shape.free_dims();
    let mut i = 0;
    for p in 0..shape.partitions() {
        let vp = iota
            .base
            .wrapping_add((p as i32).wrapping_mul(iota.channel_multiplier));
        for iw in 0..w {
            let vw = vp.wrapping_add((iw as i32).wrapping_mul(iota.steps[3]));
            for iz in 0..z {
                let vz = vw.wrapping_add((iz as i32).wrapping_mul(iota.steps[2]));
                for iy in 0..y {
                    let vy = vz.wrapping_add((iy as i32).wrapping_mul(iota.steps[1]));
                    for ix in 0..x {
                        out[i] = vy.wrapping_add((ix as i32).wrapping_mul(iota.steps[0]));
                        i += 1;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Memset (0x49): every element gets `value` (the machine decodes the fill word to the dst
/// dtype).
pub fn memset<T: Copy>(out: &mut [T], value: T) {
    out.fill(value);
}

/// A predicate element: integer dtypes only (int8/16/32, uint8/16/32); a lane is selected
/// when its predicate is non-zero.
pub trait Predicate: Copy {
    /// Whether the lane is selected.
    fn is_set(self) -> bool;
}

macro_rules! impl_predicate {
    ($($t:ty),*) => { $(impl Predicate for $t {
        #[inline(always)]
        fn is_set(self) -> bool { self != 0 }
    })* };
}
impl_predicate!(u8, u16, u32, i8, i16, i32);

/// Select: `out[i] = pred[i] != 0 ? on_true[i] : on_false[i]`.
pub fn select<T: Copy, P: Predicate>(
    pred: &[P],
    on_true: &[T],
    on_false: &[T],
    out: &mut [T],
) -> Result<(), AluError> {
    check_len("on_true", pred.len(), on_true.len())?;
    check_len("on_false", pred.len(), on_false.len())?;
    check_len("dst", pred.len(), out.len())?;
    for (((o, &p), &t), &f) in out.iter_mut().zip(pred).zip(on_true).zip(on_false) {
        *o = if p.is_set() { t } else { f };
    }
    Ok(())
}

/// CopyPredicated (0x72): lanes whose predicate is non-zero take `data`; the others keep the
/// old dst value. Bit-exact (no conversion).
pub fn copy_predicated<T: Copy, P: Predicate>(
    pred: &[P],
    data: &[T],
    dst: &mut [T],
) -> Result<(), AluError> {
    cast_predicated(pred, data, dst, |v| v)
}

/// CastPredicated (0x99): like [`copy_predicated`], converting selected lanes with `cast`
/// (the cast engine's conversion for the dtype pair).
pub fn cast_predicated<S: Copy, D, P: Predicate>(
    pred: &[P],
    data: &[S],
    dst: &mut [D],
    cast: impl Fn(S) -> D,
) -> Result<(), AluError> {
    check_len("data", pred.len(), data.len())?;
    check_len("dst", pred.len(), dst.len())?;
    for ((o, &p), &v) in dst.iter_mut().zip(pred).zip(data) {
        if p.is_set() {
            *o = cast(v);
        }
    }
    Ok(())
}

/// Copy (0x46) when source and destination formats match: a bit-exact move.
pub fn copy<T: Copy>(src: &[T], dst: &mut [T]) -> Result<(), AluError> {
    check_len("dst", src.len(), dst.len())?;
    dst.copy_from_slice(src);
    Ok(())
}

/// Cast (0x47): every element of `src` (format `src_format`) through fp32 into `dst_format`
/// with the cast engine under `policy` (the device ALU path is [`CastPolicy::DEVICE`]);
/// identical formats copy bit for bit. Returns the element count.
pub fn cast_tile(
    src: &[u8],
    src_format: NumFormat,
    dst: &mut [u8],
    dst_format: NumFormat,
    policy: &CastPolicy,
) -> Result<usize, CastError> {
    super::cast::cast_slice(src, src_format, dst, dst_format, policy)
}

#[cfg(test)]
mod tests;
