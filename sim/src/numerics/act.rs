//! The activation engine's value model: `out = f(in × scale + bias)` in fp32 for every
//! activation function, the per-partition accumulators it feeds, and two evaluators behind one
//! trait ([`ActEvaluator`]):
//!
//! * [`ClosedForm`]: the reference math, computed in f64 and rounded once to f32 (within one
//!   ulp of the correctly rounded value on the functions' valid ranges; `tests` check this
//!   against committed multi-precision references).
//! * [`PwpEvaluator`]: the piecewise-polynomial (PWP) table evaluator of the activation
//!   hardware, over tables loaded from the JSON format of [`pwp`]; functions without a table
//!   loaded are an error, hardwired functions use their exact forms.
//!
//! The affine pre-scale is two fp32 roundings, `(in × scale) + bias`, with no fused
//! multiply-add.

mod fast;
pub mod pwp;

use std::collections::HashMap;
use std::fmt;

use super::alu::{check_len, AluError, FpOp, Scalar, TileShape};
use super::reduce::{AccumCmd, AccumError, Accumulators};

/// The vector loops [`ClosedForm::values_up_to`] chooses from.
pub use super::simd::Loop;
pub use pwp::{PwpError, PwpTable};

/// √2.
pub const SQRT_2: f64 = std::f64::consts::SQRT_2;
/// √(2/π), the tanh-gelu scale.
pub const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The tanh-gelu cubic coefficient.
pub const GELU_TANH_CUBIC: f64 = 0.044715;
/// The sigmoid-gelu slope.
pub const GELU_SIGMOID_SLOPE: f64 = 1.702;
/// 1/√(2π), the normal density's scale.
pub const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
/// 2/√π, the erf derivative's scale.
pub const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
/// The leaky-relu slope (hard-wired; the instruction parameter is ignored).
pub const LEAKY_RELU_SLOPE: f64 = 0.01;

/// An activation function. The 30 BIR functions carry their wire codes (the
/// `activation_func` byte); the always-resident extras `derivative_relu`,
/// `derivative_leaky_relu` and `derivative_identity` have no public wire code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ActFunction {
    /// `x`.
    Identity,
    /// `x²`.
    Square,
    /// `max(x, 0)`.
    Relu,
    /// `x ≤ 0 ? 0.01·x : x`.
    Lrelu,
    /// `x ≤ 0 ? α·x : x` (α = the instruction immediate).
    Prelu,
    /// `1 / (1 + e^−x)`.
    Sigmoid,
    /// `tanh x`.
    Tanh,
    /// `e^x`.
    Exp,
    /// `ln(1 + e^x)`.
    Softplus,
    /// `√x`.
    Sqrt,
    /// `1/√x`.
    Rsqrt,
    /// `ln x`.
    Ln,
    /// `erf x`.
    Erf,
    /// `sin x`.
    Sin,
    /// `atan x`.
    Arctan,
    /// `(x > 0) − (x < 0)`.
    Sign,
    /// `x·Φ(x) = ½x(1 + erf(x/√2))`.
    Gelu,
    /// `x·tanh(softplus x)`.
    Mish,
    /// `½x(1 + tanh(√(2/π)(x + 0.044715x³)))`.
    GeluApprxTanh,
    /// `x·σ(1.702x)`.
    GeluApprxSigmoid,
    /// d/dx of [`ActFunction::GeluApprxSigmoid`].
    DerivativeGeluApprxSigmoid,
    /// d/dx of [`ActFunction::Gelu`]: `Φ(x) + x·φ(x)`.
    DerivativeGelu,
    /// `2/√π · e^−x²`.
    DerivativeErf,
    /// `x` (copy).
    Copy,
    /// `|x|`.
    Abs,
    /// `1/x`.
    Reciprocal,
    /// `1/√|x|`.
    AbsReciprocalSqrt,
    /// `x·σ(x)`.
    Silu,
    /// d/dx of [`ActFunction::Silu`]: `σ(x)(1 + x(1 − σ(x)))`.
    DerivativeSilu,
    /// `1` if finite, else `0`.
    IsFinite,
    /// `x > 0 ? 1 : 0`.
    DerivativeRelu,
    /// `x > 0 ? 1 : 0.01`.
    DerivativeLeakyRelu,
    /// `1`.
    DerivativeIdentity,
    /// `0`.
    MemsetZero,
}

/// (function, BIR ordinal, wire code, profile name, hardwired).
type FuncEntry = (ActFunction, Option<u8>, Option<u8>, &'static str, bool);

const FUNCS: [FuncEntry; 34] = {
    use tpbsim_isa::ActFunc as AF;
    use ActFunction::*;
    [
        (Identity, Some(0), Some(AF::IDENTITY.0), "identity", true),
        (Square, Some(1), Some(AF::SQUARE.0), "square", true),
        (Relu, Some(2), Some(AF::RELU.0), "relu", true),
        (Lrelu, Some(3), Some(AF::LRELU.0), "leaky_relu", true),
        (Prelu, Some(4), Some(AF::PRELU.0), "parametric_relu", true),
        (Sigmoid, Some(5), Some(AF::SIGMOID.0), "sigmoid", false),
        (Tanh, Some(6), Some(AF::TANH.0), "tanh", false),
        (Exp, Some(7), Some(AF::EXP.0), "exp", false),
        (Softplus, Some(8), Some(AF::SOFTPLUS.0), "softplus", false),
        (Sqrt, Some(9), Some(AF::SQRT.0), "sqrt", false),
        (Rsqrt, Some(10), Some(AF::RSQRT.0), "reciprocal_sqrt", false),
        (Ln, Some(11), Some(AF::LN.0), "ln", false),
        (Erf, Some(12), Some(AF::ERF.0), "erf", false),
        (Sin, Some(13), Some(AF::SIN.0), "sin", false),
        (Arctan, Some(14), Some(AF::ARCTAN.0), "arctan", false),
        (Sign, Some(15), Some(AF::SIGN.0), "sign", true),
        (Gelu, Some(16), Some(AF::GELU.0), "gelu", false),
        (Mish, Some(17), Some(AF::MISH.0), "mish", false),
        (
            GeluApprxTanh,
            Some(18),
            Some(AF::GELU_APPRX_TANH.0),
            "gelu_apprx_tanh",
            false,
        ),
        (
            GeluApprxSigmoid,
            Some(19),
            Some(AF::GELU_APPRX_SIGMOID.0),
            "gelu_apprx_sigmoid",
            false,
        ),
        (
            DerivativeGeluApprxSigmoid,
            Some(20),
            Some(AF::DERIVATIVE_GELU_APPRX_SIGMOID.0),
            "derivative_gelu_apprx_sigmoid",
            false,
        ),
        (
            DerivativeGelu,
            Some(21),
            Some(AF::DERIVATIVE_GELU.0),
            "derivative_gelu",
            false,
        ),
        (
            DerivativeErf,
            Some(22),
            Some(AF::DERIVATIVE_ERF.0),
            "derivative_erf",
            false,
        ),
        (Copy, Some(23), Some(AF::COPY.0), "copy", true),
        (Abs, Some(24), Some(AF::ABS.0), "abs", true),
        (
            Reciprocal,
            Some(25),
            Some(AF::RECIPROCAL.0),
            "reciprocal",
            false,
        ),
        (
            AbsReciprocalSqrt,
            Some(26),
            Some(AF::ABS_RECIPROCAL_SQRT.0),
            "abs_reciprocal_sqrt",
            false,
        ),
        (Silu, Some(27), Some(AF::SILU.0), "silu", false),
        (
            DerivativeSilu,
            Some(28),
            Some(AF::DERIVATIVE_SILU.0),
            "derivative_silu",
            false,
        ),
        (IsFinite, Some(29), Some(AF::IS_FINITE.0), "is_finite", true),
        (DerivativeRelu, None, None, "derivative_relu", true),
        (
            DerivativeLeakyRelu,
            None,
            None,
            "derivative_leaky_relu",
            true,
        ),
        (DerivativeIdentity, None, None, "derivative_identity", true),
        (
            MemsetZero,
            None,
            Some(AF::MEMSET_ZERO.0),
            "memset_zero",
            true,
        ),
    ]
};

impl ActFunction {
    /// Every function.
    pub fn all() -> impl Iterator<Item = ActFunction> {
        FUNCS.iter().map(|e| e.0)
    }

    fn entry(self) -> &'static FuncEntry {
        // FUNCS lists every variant, in declaration order.
        &FUNCS[self as usize]
    }

    /// The function for an `activation_func` wire byte.
    pub fn from_wire(code: u8) -> Result<Self, ActError> {
        FUNCS
            .iter()
            .find(|e| e.2 == Some(code))
            .map(|e| e.0)
            .ok_or(ActError::UnknownFunction(code))
    }

    /// The function for a BIR `ActivationFunctionType` ordinal (0..=29; 30 is `Unknown`).
    pub fn from_bir(ordinal: u8) -> Result<Self, ActError> {
        FUNCS
            .iter()
            .find(|e| e.1 == Some(ordinal))
            .map(|e| e.0)
            .ok_or(ActError::UnknownBirFunction(ordinal))
    }

    /// The function for its profile name (`"sigmoid"`, `"leaky_relu"`, …).
    pub fn from_name(name: &str) -> Option<Self> {
        FUNCS.iter().find(|e| e.3 == name).map(|e| e.0)
    }

    /// The wire code, if public.
    pub fn wire(self) -> Option<u8> {
        self.entry().2
    }

    /// The BIR ordinal, if the function has one.
    pub fn bir(self) -> Option<u8> {
        self.entry().1
    }

    /// The profile name.
    pub fn name(self) -> &'static str {
        self.entry().3
    }

    /// Hardwired (no coefficient table; always resident).
    pub fn is_hardwired(self) -> bool {
        self.entry().4
    }
}

impl fmt::Display for ActFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of the activation model.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ActError {
    /// Not an `activation_func` wire code.
    #[error("activation function code {0} is not a known wire code")]
    UnknownFunction(u8),
    /// Not a BIR `ActivationFunctionType` ordinal.
    #[error("BIR activation function ordinal {0} is not a function")]
    UnknownBirFunction(u8),
    /// The function needs a coefficient table that is not loaded.
    #[error("activation function {0} needs a PWP table and none is loaded")]
    TableNotLoaded(ActFunction),
    /// A table evaluation failed.
    #[error(transparent)]
    Pwp(#[from] PwpError),
    /// Shapes or scalar operands do not match.
    #[error(transparent)]
    Alu(#[from] AluError),
    /// Accumulator failure.
    #[error(transparent)]
    Accum(#[from] AccumError),
}

/// One way to evaluate activation functions on fp32 values (already scaled and biased).
pub trait ActEvaluator {
    /// `f(x)`, with `alpha` the instruction parameter (used by Prelu only).
    fn eval(&self, func: ActFunction, x: f32, alpha: f32) -> Result<f32, ActError>;

    /// `xs[i] = f(xs[i])` for every element, in order; on an error the remaining elements are
    /// left as they are.
    fn eval_slice(&self, func: ActFunction, xs: &mut [f32], alpha: f32) -> Result<(), ActError> {
        for x in xs {
            *x = self.eval(func, *x, alpha)?;
        }
        Ok(())
    }
}

/// The closed-form (reference) evaluator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClosedForm;

/// `σ(u)` without overflow for any `u`.
fn sigmoid64(u: f64) -> f64 {
    if u >= 0.0 {
        1.0 / (1.0 + (-u).exp())
    } else {
        let e = u.exp();
        e / (1.0 + e)
    }
}

/// `ln(1 + e^u)` without overflow.
fn softplus64(u: f64) -> f64 {
    (-u.abs()).exp().ln_1p() + u.max(0.0)
}

/// `d/du [u σ(k u)]` expressed with `v = k u`: `σ(v)(1 + v σ(−v))`.
fn dsilu64(v: f64) -> f64 {
    sigmoid64(v) * (1.0 + v * sigmoid64(-v))
}

impl ClosedForm {
    /// The closed form of `func` at `x` (never fails).
    pub fn value(func: ActFunction, x: f32, alpha: f32) -> f32 {
        use ActFunction::*;
        if x.is_infinite() {
            // Limits of the x·g(x) forms and their derivatives (the formulas give inf·0).
            match func {
                Gelu | Mish | GeluApprxTanh | GeluApprxSigmoid | Silu => {
                    return if x > 0.0 { x } else { -0.0 };
                }
                DerivativeGelu | DerivativeGeluApprxSigmoid | DerivativeSilu => {
                    return if x > 0.0 { 1.0 } else { 0.0 };
                }
                _ => {}
            }
        }
        let d = x as f64;
        match func {
            Identity | Copy => x,
            Square => x * x,
            Relu => {
                if x > 0.0 {
                    x
                } else {
                    0.0
                }
            }
            Lrelu => {
                if x <= 0.0 {
                    (d * LEAKY_RELU_SLOPE) as f32
                } else {
                    x
                }
            }
            Prelu => {
                if x <= 0.0 {
                    x * alpha
                } else {
                    x
                }
            }
            Sigmoid => sigmoid64(d) as f32,
            Tanh => d.tanh() as f32,
            Exp => d.exp() as f32,
            Softplus => softplus64(d) as f32,
            Sqrt => x.sqrt(),
            Rsqrt => (1.0 / d.sqrt()) as f32,
            Ln => d.ln() as f32,
            Erf => libm::erf(d) as f32,
            Sin => d.sin() as f32,
            Arctan => d.atan() as f32,
            Sign => ((x > 0.0) as i32 - (x < 0.0) as i32) as f32,
            Gelu => (0.5 * d * libm::erfc(-d / SQRT_2)) as f32,
            Mish => (d * softplus64(d).tanh()) as f32,
            GeluApprxTanh => {
                let u = SQRT_2_OVER_PI * (d + GELU_TANH_CUBIC * d * d * d);
                // ½x(1 + tanh u) = x·σ(2u), without the cancellation for negative u.
                (d * sigmoid64(2.0 * u)) as f32
            }
            GeluApprxSigmoid => (d * sigmoid64(GELU_SIGMOID_SLOPE * d)) as f32,
            DerivativeGeluApprxSigmoid => dsilu64(GELU_SIGMOID_SLOPE * d) as f32,
            DerivativeGelu => {
                (0.5 * libm::erfc(-d / SQRT_2) + d * INV_SQRT_2PI * (-0.5 * d * d).exp()) as f32
            }
            DerivativeErf => (TWO_OVER_SQRT_PI * (-d * d).exp()) as f32,
            Abs => x.abs(),
            Reciprocal => 1.0 / x,
            AbsReciprocalSqrt => (1.0 / d.abs().sqrt()) as f32,
            Silu => (d * sigmoid64(d)) as f32,
            DerivativeSilu => dsilu64(d) as f32,
            IsFinite => {
                if x.is_finite() {
                    1.0
                } else {
                    0.0
                }
            }
            DerivativeRelu => {
                if x > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            DerivativeLeakyRelu => {
                if x > 0.0 {
                    1.0
                } else {
                    LEAKY_RELU_SLOPE as f32
                }
            }
            DerivativeIdentity => 1.0,
            MemsetZero => 0.0,
        }
    }
}

impl ClosedForm {
    /// [`ClosedForm::value`] over a slice, in place, with the same results bit for bit:
    /// `exp`, `tanh` and `sigmoid` through a faster evaluation that falls back to the closed
    /// form wherever the two could round differently (`fast`), on the widest vector loop the
    /// CPU has.
    pub fn values(func: ActFunction, xs: &mut [f32], alpha: f32) {
        Self::values_up_to(Loop::Avx512, func, xs, alpha);
    }

    /// [`ClosedForm::values`] with the fast evaluation on the widest loop the CPU has up to
    /// `widest` (a loop the CPU lacks runs as the next narrower one). The results are the
    /// same on every loop; benchmarks and tests compare the loops with it.
    pub fn values_up_to(widest: Loop, func: ActFunction, xs: &mut [f32], alpha: f32) {
        match func {
            ActFunction::Exp => {
                fast::exp(xs, widest);
            }
            ActFunction::Tanh => {
                fast::tanh(xs, widest);
            }
            ActFunction::Sigmoid => {
                fast::sigmoid(xs, widest);
            }
            _ => {
                for x in xs {
                    *x = Self::value(func, *x, alpha);
                }
            }
        }
    }
}

impl ActEvaluator for ClosedForm {
    fn eval(&self, func: ActFunction, x: f32, alpha: f32) -> Result<f32, ActError> {
        Ok(Self::value(func, x, alpha))
    }

    fn eval_slice(&self, func: ActFunction, xs: &mut [f32], alpha: f32) -> Result<(), ActError> {
        Self::values(func, xs, alpha);
        Ok(())
    }
}

/// The table evaluator: functions with a loaded [`PwpTable`] go through the piecewise
/// polynomial; hardwired functions (and Prelu, which has no table path) use their exact
/// forms; any other function is [`ActError::TableNotLoaded`].
#[derive(Clone, Debug, Default)]
pub struct PwpEvaluator {
    tables: HashMap<ActFunction, PwpTable>,
}

impl PwpEvaluator {
    /// An evaluator with no tables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Load (or replace) the table of its function.
    pub fn insert(&mut self, table: PwpTable) {
        self.tables.insert(table.function(), table);
    }

    /// The table of `func`, if loaded.
    pub fn table(&self, func: ActFunction) -> Option<&PwpTable> {
        self.tables.get(&func)
    }
}

impl ActEvaluator for PwpEvaluator {
    fn eval(&self, func: ActFunction, x: f32, alpha: f32) -> Result<f32, ActError> {
        if let Some(t) = self.tables.get(&func) {
            return Ok(t.eval(x)?);
        }
        if func.is_hardwired() {
            Ok(ClosedForm::value(func, x, alpha))
        } else {
            Err(ActError::TableNotLoaded(func))
        }
    }
}

/// The accumulator side of an Activate: the registers, the command, and the per-partition
/// seed for LOAD_ACCUMULATE.
pub struct AccumulateInto<'a, 'b> {
    /// The engine's registers.
    pub regs: &'a mut Accumulators,
    /// The instruction's `accumulator_cmd`.
    pub cmd: AccumCmd,
    /// LOAD_ACCUMULATE seed (one value per partition), read by the machine.
    pub seed: Option<Scalar<'b, f32>>,
}

/// Activate (0x21): `out[p][i] = f(src[p][i] × scale[p] + bias[p])` in fp32, the outputs of
/// each partition summed in element order into its accumulator when `accumulate` says so.
#[allow(clippy::too_many_arguments)]
pub fn activate<E: ActEvaluator + ?Sized>(
    eval: &E,
    func: ActFunction,
    shape: TileShape,
    src: &[f32],
    scale: Scalar<'_, f32>,
    bias: Scalar<'_, f32>,
    alpha: f32,
    out: &mut [f32],
    mut accumulate: Option<AccumulateInto<'_, '_>>,
) -> Result<(), ActError> {
    check_len("src", shape.len(), src.len())?;
    check_len("dst", shape.len(), out.len())?;
    scale.check("scale", shape.partitions())?;
    bias.check("bias", shape.partitions())?;
    if let Some(AccumulateInto { seed: Some(s), .. }) = &accumulate {
        s.check("seed", shape.partitions())?;
    }
    let f = shape.free_len();
    for (p, (o, s)) in out.chunks_exact_mut(f).zip(src.chunks_exact(f)).enumerate() {
        let (k, b) = (scale.at(p), bias.at(p));
        for (o, &x) in o.iter_mut().zip(s) {
            *o = x * k + b;
        }
        if accumulate.is_some() {
            // Each partition is evaluated before it is folded, as an element-wise loop would.
            eval.eval_slice(func, o, alpha)?;
        }
        if let Some(acc) = accumulate.as_mut() {
            acc.regs
                .fold(acc.cmd, FpOp::ADD, p, acc.seed.map(|s| s.at(p)), o)?;
        }
    }
    if accumulate.is_none() {
        eval.eval_slice(func, out, alpha)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
