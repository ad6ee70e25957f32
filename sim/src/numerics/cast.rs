//! The cast engine.
//!
//! Every conversion goes source → fp32 → destination with round-to-nearest-even; a cast between
//! identical formats is a bit-exact copy. The fp32 hub is a precision floor: integers above 2^24
//! in magnitude lose low bits on any cast that changes format. The policy knobs the hardware and
//! the compiler expose live in [`CastPolicy`]; `docs/numerics.md` gives every rule with its source.
//!
//! Per-format rules (fp32 → destination):
//! - `bfloat16`: RNE on the 16 dropped bits, overflow → ±Inf, any NaN → `0x7FC0` (sign dropped).
//! - `float16`: RNE, overflow → ±Inf, NaN → `0x7E00` with the input's sign.
//! - `float32r`: mantissa RNE to 11 explicit bits (low 12 bits cleared), NaN → `0x7FC00000` with
//!   the input's sign; read back as plain fp32.
//! - FP8: RNE with subnormals; overflow (including ±Inf) → ±max finite when
//!   [`CastPolicy::saturate_fp8`], otherwise ±Inf (`e3m4`, `e4m3`, `e5m2`) or, for `e4m3fn`,
//!   `0x7F` (or a signed zero when [`CastPolicy::fp8_nan_selector`] is set). NaN → `e4m3fn`
//!   `0x7F | sign`; the Inf-capable formats give their canonical quiet NaN, unsigned unless the
//!   selector is set.
//! - `float4_e2m1fn`: RNE on the grid {0, 0.5, 1, 1.5, 2, 3, 4, 6}, always saturating to ±6,
//!   NaN → ±0.
//! - `float8_e8m0fnu`: the generic cast treats the byte as a `uint8` (the MX scale reading
//!   2^(e−127) is [`crate::numerics::mx::scale_value`]).
//! - Integers: [`FloatToInt`] rounding, then saturation; NaN → MAX (MIN if the sign bit is set;
//!   unsigned: 0 if set).
//!
//! fp32 → source decoding is exact; FP8 NaNs decode to the quiet NaN `0x7FC00000` with their sign,
//! fp16 and bf16 NaNs keep their payload.

use tpbsim_isa::NumFormat;

/// How a float becomes an integer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FloatToInt {
    /// Round toward zero, then saturate: the device ALU evaluator (`alu_op.cpp`, every engine's
    /// scalar path and the POOL/DVE vector path) and the POOL cast kernel.
    #[default]
    DeviceTruncate,
    /// Round to nearest even, then saturate: the compiler's reference cast engine.
    ReferenceRne,
}

/// The configurable part of a cast.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CastPolicy {
    /// FP8 conversion config byte 0: an overflowing FP8 result clamps to ±max finite instead of
    /// becoming Inf/NaN. Also applies to ±Inf inputs.
    pub saturate_fp8: bool,
    /// FP8 conversion config byte 1 (non-zero = set): with saturation off, an overflowing
    /// `float8_e4m3fn` result becomes a signed zero instead of `0x7F`; an Inf-capable FP8 format
    /// keeps the sign of a NaN input.
    pub fp8_nan_selector: bool,
    /// Float → integer rounding.
    pub float_to_int: FloatToInt,
}

impl CastPolicy {
    /// The device ALU path: FP8 saturation on (config word `0x0001`), float → int truncates.
    pub const DEVICE: CastPolicy = CastPolicy {
        saturate_fp8: true,
        fp8_nan_selector: false,
        float_to_int: FloatToInt::DeviceTruncate,
    };

    /// The compiler's reference cast engine: FP8 saturation on, float → int rounds to nearest
    /// even. Also the rounding used for cast-unit outputs (copy/cast on DVE/ACT, activation
    /// output), where no device source documents anything else.
    pub const REFERENCE: CastPolicy = CastPolicy {
        saturate_fp8: true,
        fp8_nan_selector: false,
        float_to_int: FloatToInt::ReferenceRne,
    };

    /// A policy from the 2-byte FP8 conversion config word (byte 0 = saturate, byte 1 = NaN/Inf
    /// selector; each set when non-zero).
    pub const fn from_fp8_config(word: u16, float_to_int: FloatToInt) -> CastPolicy {
        CastPolicy {
            saturate_fp8: word & 0xFF != 0,
            fp8_nan_selector: word >> 8 != 0,
            float_to_int,
        }
    }

    /// The 2-byte FP8 conversion config word of this policy.
    pub const fn fp8_config(&self) -> u16 {
        (self.saturate_fp8 as u16) | ((self.fp8_nan_selector as u16) << 8)
    }
}

impl Default for CastPolicy {
    /// [`CastPolicy::DEVICE`].
    fn default() -> Self {
        CastPolicy::DEVICE
    }
}

/// A slice that does not hold whole elements of its format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CastError {
    /// The source is not a whole number of containers.
    #[error("source of {len} bytes is not a whole number of {format} containers ({container} bytes each)")]
    SourceLength {
        /// Source length in bytes.
        len: usize,
        /// Source format.
        format: NumFormat,
        /// Container size in bytes.
        container: usize,
    },
    /// The element count does not fill whole destination containers.
    #[error("{elements} elements do not fill whole {format} containers of {lanes}")]
    Lanes {
        /// Logical element count.
        elements: usize,
        /// Destination format.
        format: NumFormat,
        /// Elements per destination container.
        lanes: usize,
    },
    /// The destination (or the fp32 buffer) has the wrong size.
    #[error("destination of {got} bytes does not fit {elements} {format} elements ({want} bytes)")]
    DestinationLength {
        /// Destination length in bytes.
        got: usize,
        /// Required length in bytes.
        want: usize,
        /// Logical element count.
        elements: usize,
        /// Destination format.
        format: NumFormat,
    },
}

// ---------------------------------------------------------------------------------------------
// Minifloat parameters.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Specials {
    /// The top exponent is reserved: mantissa 0 = Inf, otherwise NaN.
    Ieee,
    /// No Inf; only the all-ones magnitude is NaN (OCP `fn`).
    Fn,
    /// Every code is finite (FP4).
    Finite,
}

trait Mini {
    const E: u32;
    const M: u32;
    const BIAS: i32;
    const SPECIALS: Specials;
    /// Governed by the FP8 conversion config (saturate, selector).
    const FP8: bool;

    const MAG_BITS: u32 = Self::E + Self::M;
    const EXP_ALL: u32 = (1 << Self::E) - 1;
    const INF: u32 = Self::EXP_ALL << Self::M;
    const QNAN: u32 = Self::INF | (1 << (Self::M - 1));
    const MAX_FINITE: u32 = match Self::SPECIALS {
        Specials::Ieee => Self::INF - 1,
        Specials::Fn => (1 << Self::MAG_BITS) - 2,
        Specials::Finite => (1 << Self::MAG_BITS) - 1,
    };
    /// Unbiased exponent of the smallest normal.
    const EMIN: i32 = 1 - Self::BIAS;
}

struct E3m4;
struct E4m3;
struct E4m3fn;
struct E5m2;
struct E2m1;
struct F16;

impl Mini for E3m4 {
    const E: u32 = 3;
    const M: u32 = 4;
    const BIAS: i32 = 3;
    const SPECIALS: Specials = Specials::Ieee;
    const FP8: bool = true;
}
impl Mini for E4m3 {
    const E: u32 = 4;
    const M: u32 = 3;
    const BIAS: i32 = 7;
    const SPECIALS: Specials = Specials::Ieee;
    const FP8: bool = true;
}
impl Mini for E4m3fn {
    const E: u32 = 4;
    const M: u32 = 3;
    const BIAS: i32 = 7;
    const SPECIALS: Specials = Specials::Fn;
    const FP8: bool = true;
}
impl Mini for E5m2 {
    const E: u32 = 5;
    const M: u32 = 2;
    const BIAS: i32 = 15;
    const SPECIALS: Specials = Specials::Ieee;
    const FP8: bool = true;
}
impl Mini for E2m1 {
    const E: u32 = 2;
    const M: u32 = 1;
    const BIAS: i32 = 1;
    const SPECIALS: Specials = Specials::Finite;
    const FP8: bool = false;
}
impl Mini for F16 {
    const E: u32 = 5;
    const M: u32 = 10;
    const BIAS: i32 = 15;
    const SPECIALS: Specials = Specials::Ieee;
    const FP8: bool = false;
}

/// fp32 bits of a minifloat code (exact; NaN → quiet NaN with the code's sign).
const fn mini_decode<F: Mini>(code: u32) -> u32 {
    let sign = ((code >> F::MAG_BITS) & 1) << 31;
    let mag = code & ((1 << F::MAG_BITS) - 1);
    let e = mag >> F::M;
    let m = mag & ((1 << F::M) - 1);
    let is_nan = match F::SPECIALS {
        Specials::Ieee => e == F::EXP_ALL && m != 0,
        Specials::Fn => mag == (1 << F::MAG_BITS) - 1,
        Specials::Finite => false,
    };
    if is_nan {
        return sign | 0x7FC0_0000;
    }
    if matches!(F::SPECIALS, Specials::Ieee) && e == F::EXP_ALL {
        return sign | 0x7F80_0000;
    }
    if e == 0 {
        if m == 0 {
            return sign;
        }
        // Subnormal m · 2^(EMIN − M): normalise around its leading one.
        let p = 31 - m.leading_zeros();
        let exp = F::EMIN - F::M as i32 + p as i32;
        let mant = (m << (23 - p)) & 0x007F_FFFF;
        return sign | (((exp + 127) as u32) << 23) | mant;
    }
    sign | (((e as i32 - F::BIAS + 127) as u32) << 23) | (m << (23 - F::M))
}

const fn mini_table<F: Mini>() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = mini_decode::<F>(c as u32 & ((1 << (F::MAG_BITS + 1)) - 1));
        c += 1;
    }
    t
}

static DEC_E3M4: [u32; 256] = mini_table::<E3m4>();
static DEC_E4M3: [u32; 256] = mini_table::<E4m3>();
static DEC_E4M3FN: [u32; 256] = mini_table::<E4m3fn>();
static DEC_E5M2: [u32; 256] = mini_table::<E5m2>();
/// FP4 codes by their low nibble (the high nibble of the byte is ignored).
static DEC_E2M1: [u32; 256] = mini_table::<E2m1>();

/// fp32 → minifloat code, round to nearest even, with the overflow and NaN rules of the policy.
#[inline(always)]
fn mini_encode<F: Mini>(x: f32, saturate: bool, selector: bool) -> u32 {
    let bits = x.to_bits();
    let sign = (bits >> 31) << F::MAG_BITS;
    let a = bits & 0x7FFF_FFFF;
    // Normal range of the destination: RNE on the dropped mantissa bits, then rebias.
    let shift = 23 - F::M;
    let rounded = (a + ((1 << (shift - 1)) - 1) + ((a >> shift) & 1)) >> shift;
    let normal = rounded.wrapping_sub(((127 - F::BIAS) as u32) << F::M);
    // Below the smallest normal: add a power of two whose ulp is the subnormal step, so the
    // fp32 adder performs the RNE; the low bits are the code (up to the smallest normal).
    let magic = f32::from_bits(((F::EMIN - F::M as i32 + 23 + 127) as u32) << 23);
    let sub = (f32::from_bits(a) + magic)
        .to_bits()
        .wrapping_sub(magic.to_bits());
    let min_normal = ((F::EMIN + 127) as u32) << 23;
    let mag = if a < min_normal { sub } else { normal };
    let saturate = saturate && F::FP8;
    let nan_code = match F::SPECIALS {
        Specials::Ieee if F::FP8 && !selector => F::QNAN,
        Specials::Ieee => sign | F::QNAN,
        Specials::Fn => sign | ((1 << F::MAG_BITS) - 1),
        Specials::Finite => sign,
    };
    let over_code = match F::SPECIALS {
        _ if saturate => sign | F::MAX_FINITE,
        Specials::Finite => sign | F::MAX_FINITE,
        Specials::Ieee => sign | F::INF,
        Specials::Fn if selector => sign,
        Specials::Fn => (1 << F::MAG_BITS) - 1,
    };
    // Selects rather than branches, so that slice loops vectorise.
    let code = if mag > F::MAX_FINITE {
        over_code
    } else {
        sign | mag
    };
    if a > 0x7F80_0000 {
        nan_code
    } else {
        code
    }
}

// ---------------------------------------------------------------------------------------------
// 16- and 32-bit float legs.

/// bf16 → fp32 bits.
#[inline(always)]
fn bf16_decode(h: u16) -> u32 {
    u32::from(h) << 16
}

/// fp32 → bf16: RNE on the dropped 16 bits; every NaN → `0x7FC0`.
#[inline(always)]
fn bf16_encode(x: f32) -> u16 {
    let bits = x.to_bits();
    let nan = bits & 0x7FFF_FFFF > 0x7F80_0000;
    let r = (bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) >> 16) as u16;
    if nan {
        0x7FC0
    } else {
        r
    }
}

/// fp16 → fp32 bits (exact; NaN payloads kept).
#[inline(always)]
fn f16_decode(h: u16) -> u32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let m = (h << 13) & 0x0FFF_E000;
    let e = m & 0x0F80_0000;
    let sub = (f32::from_bits(m + 0x3880_0000) - f32::from_bits(0x3880_0000)).to_bits();
    let mag = if e == 0x0F80_0000 {
        m + 0x7000_0000
    } else if e != 0 {
        m + 0x3800_0000
    } else {
        sub
    };
    sign | mag
}

/// fp16 codes → fp32 ([`f16_decode`] per element): eight at a time with the F16C conversion
/// where the host has it (exact for every non-NaN code, subnormals included); a group holding a
/// NaN takes the scalar path, which keeps the payload bits as they are.
fn decode_f16(src: &[u8], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        static F16C: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if *F16C.get_or_init(|| {
            std::is_x86_feature_detected!("f16c") && crate::numerics::simd::Loop::Avx2.host_has()
        }) {
            // SAFETY: the CPU has F16C and AVX2 (checked above).
            return unsafe { decode_f16_f16c(src, out) };
        }
    }
    decode_f16_scalar(src, out)
}

fn decode_f16_scalar(src: &[u8], out: &mut [f32]) {
    decode_codes::<u16>(src, out, |c| f32::from_bits(f16_decode(c)))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
fn decode_f16_f16c(src: &[u8], out: &mut [f32]) {
    use std::arch::x86_64::{
        __m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_and_si128, _mm_cmpgt_epi16,
        _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi16,
    };
    let n = out.len().min(src.len() / 2);
    let body = n / 8 * 8;
    let mut i = 0;
    while i < body {
        // SAFETY: 16 source bytes and 8 destination floats from `i` are in bounds (i + 8 ≤ n).
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(2 * i) as *const __m128i);
            let mag = _mm_and_si128(h, _mm_set1_epi16(0x7FFF));
            let nan = _mm_cmpgt_epi16(mag, _mm_set1_epi16(0x7C00));
            if _mm_movemask_epi8(nan) == 0 {
                _mm256_storeu_ps(out.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            } else {
                decode_f16_scalar(&src[2 * i..2 * i + 16], &mut out[i..i + 8]);
            }
        }
        i += 8;
    }
    decode_f16_scalar(&src[2 * body..2 * n], &mut out[body..n]);
}

/// fp32 → fp32r: mantissa RNE to 11 explicit bits; NaN → quiet NaN with the sign.
#[inline(always)]
fn f32r_encode(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits & 0x7FFF_FFFF > 0x7F80_0000 {
        (bits & 0x8000_0000) | 0x7FC0_0000
    } else {
        (bits + 0x7FF + ((bits >> 12) & 1)) & !0xFFF
    }
}

// ---------------------------------------------------------------------------------------------
// Integer legs.

#[inline(always)]
fn int_round(x: f32, mode: FloatToInt) -> f32 {
    match mode {
        FloatToInt::DeviceTruncate => x.trunc(),
        FloatToInt::ReferenceRne => x.round_ties_even(),
    }
}

/// fp32 → signed integer in [min, max] (as i64).
#[inline(always)]
fn to_signed(x: f32, mode: FloatToInt, min: i64, max: i64) -> i64 {
    if x.is_nan() {
        return if x.is_sign_negative() { min } else { max };
    }
    // `as` saturates at the i64 range, which contains every narrower range.
    (int_round(x, mode) as i64).clamp(min, max)
}

/// fp32 → unsigned integer in [0, max] (as u64).
#[inline(always)]
fn to_unsigned(x: f32, mode: FloatToInt, max: u64) -> u64 {
    if x.is_nan() {
        return if x.is_sign_negative() { 0 } else { max };
    }
    // `as` saturates: negative → 0, beyond u64 → u64::MAX.
    (int_round(x, mode) as u64).min(max)
}

// ---------------------------------------------------------------------------------------------
// Scalar API.

/// The exact fp32 value of one element code of `format` (the low bits of `code` are used; for
/// a ×4 form, `code` is one lane's code). `float8_e8m0fnu` decodes as the integer value of the
/// byte, as the generic cast does.
pub fn to_f32(format: NumFormat, code: u64) -> f32 {
    let c8 = code as u8;
    let c16 = code as u16;
    match format.element() {
        NumFormat::Uint8 | NumFormat::Float8E8m0fnu => f32::from(c8),
        NumFormat::Int8 => f32::from(c8 as i8),
        NumFormat::Uint16 => f32::from(c16),
        NumFormat::Int16 => f32::from(c16 as i16),
        NumFormat::Uint32 => code as u32 as f32,
        NumFormat::Int32 => code as u32 as i32 as f32,
        NumFormat::Uint64 => code as f32,
        NumFormat::Int64 => code as i64 as f32,
        NumFormat::Float32 | NumFormat::Float32r => f32::from_bits(code as u32),
        NumFormat::Bfloat16 => f32::from_bits(bf16_decode(c16)),
        NumFormat::Float16 => f32::from_bits(f16_decode(c16)),
        NumFormat::Float8E3m4 => f32::from_bits(DEC_E3M4[usize::from(c8)]),
        NumFormat::Float8E4m3 => f32::from_bits(DEC_E4M3[usize::from(c8)]),
        NumFormat::Float8E4m3fn => f32::from_bits(DEC_E4M3FN[usize::from(c8)]),
        NumFormat::Float8E5m2 => f32::from_bits(DEC_E5M2[usize::from(c8)]),
        NumFormat::Float4E2m1fn => f32::from_bits(DEC_E2M1[usize::from(c8 & 0xF)]),
        // Host-side formats, numpy's reading: a non-zero byte is true; float64 rounds to fp32.
        NumFormat::Bool => f32::from(u8::from(c8 != 0)),
        NumFormat::Float64 => f64::from_bits(code) as f32,
        NumFormat::Float4E2m1fnX4 | NumFormat::Float8E4m3fnX4 | NumFormat::Float8E5m2X4 => {
            unreachable!("element() is never a packed form")
        }
    }
}

/// The code of `x` in `format` under `policy` (one lane's code for a ×4 form), in the low
/// bits of the result.
pub fn from_f32(format: NumFormat, x: f32, policy: &CastPolicy) -> u64 {
    let (sat, sel, mode) = (
        policy.saturate_fp8,
        policy.fp8_nan_selector,
        policy.float_to_int,
    );
    match format.element() {
        NumFormat::Uint8 | NumFormat::Float8E8m0fnu => to_unsigned(x, mode, u8::MAX.into()),
        NumFormat::Uint16 => to_unsigned(x, mode, u16::MAX.into()),
        NumFormat::Uint32 => to_unsigned(x, mode, u32::MAX.into()),
        NumFormat::Uint64 => to_unsigned(x, mode, u64::MAX),
        NumFormat::Int8 => to_signed(x, mode, i8::MIN.into(), i8::MAX.into()) as u8 as u64,
        NumFormat::Int16 => to_signed(x, mode, i16::MIN.into(), i16::MAX.into()) as u16 as u64,
        NumFormat::Int32 => to_signed(x, mode, i32::MIN.into(), i32::MAX.into()) as u32 as u64,
        NumFormat::Int64 => to_signed(x, mode, i64::MIN, i64::MAX) as u64,
        NumFormat::Float32 => x.to_bits().into(),
        NumFormat::Float32r => f32r_encode(x).into(),
        NumFormat::Bfloat16 => bf16_encode(x).into(),
        NumFormat::Float16 => mini_encode::<F16>(x, false, false).into(),
        NumFormat::Float8E3m4 => mini_encode::<E3m4>(x, sat, sel).into(),
        NumFormat::Float8E4m3 => mini_encode::<E4m3>(x, sat, sel).into(),
        NumFormat::Float8E4m3fn => mini_encode::<E4m3fn>(x, sat, sel).into(),
        NumFormat::Float8E5m2 => mini_encode::<E5m2>(x, sat, sel).into(),
        NumFormat::Float4E2m1fn => mini_encode::<E2m1>(x, sat, sel).into(),
        NumFormat::Bool => u64::from(x != 0.0),
        NumFormat::Float64 => f64::from(x).to_bits(),
        NumFormat::Float4E2m1fnX4 | NumFormat::Float8E4m3fnX4 | NumFormat::Float8E5m2X4 => {
            unreachable!("element() is never a packed form")
        }
    }
}

/// Cast one element code: identical formats (or the same element of a ×4 form) keep the code,
/// anything else goes through fp32.
pub fn cast(src_format: NumFormat, code: u64, dst_format: NumFormat, policy: &CastPolicy) -> u64 {
    if src_format.element() == dst_format.element() {
        let bits = src_format.element_bits();
        return if bits == 64 {
            code
        } else {
            code & ((1u64 << bits) - 1)
        };
    }
    from_f32(dst_format, to_f32(src_format, code), policy)
}

// ---------------------------------------------------------------------------------------------
// Slice API.

/// Logical elements in `bytes` bytes of `format`.
fn elements_in(bytes: usize, format: NumFormat) -> Result<usize, CastError> {
    let container = format.container_bytes();
    if !bytes.is_multiple_of(container) {
        return Err(CastError::SourceLength {
            len: bytes,
            format,
            container,
        });
    }
    Ok(bytes / container * format.lanes())
}

/// Bytes that `elements` elements of `format` take.
fn bytes_for(elements: usize, format: NumFormat) -> Result<usize, CastError> {
    let lanes = format.lanes();
    if !elements.is_multiple_of(lanes) {
        return Err(CastError::Lanes {
            elements,
            format,
            lanes,
        });
    }
    Ok(elements / lanes * format.container_bytes())
}

fn check_dst(got: usize, elements: usize, format: NumFormat) -> Result<(), CastError> {
    let want = bytes_for(elements, format)?;
    if got != want {
        return Err(CastError::DestinationLength {
            got,
            want,
            elements,
            format,
        });
    }
    Ok(())
}

/// A storage code type: its little-endian bytes in and out.
trait Code: bytemuck::Pod {
    const N: usize;
    fn read(c: &[u8]) -> Self;
    fn write(self, c: &mut [u8]);
}

macro_rules! code {
    ($t:ty, $n:expr) => {
        impl Code for $t {
            const N: usize = $n;
            #[inline(always)]
            fn read(c: &[u8]) -> Self {
                let mut b = [0u8; $n];
                b.copy_from_slice(&c[..$n]);
                <$t>::from_le_bytes(b)
            }
            #[inline(always)]
            fn write(self, c: &mut [u8]) {
                c[..$n].copy_from_slice(&self.to_le_bytes());
            }
        }
    };
}
code!(u8, 1);
code!(u16, 2);
code!(u32, 4);
code!(u64, 8);

/// Decode codes of type `T` from `src` into `out` with `f`. On a little-endian host an aligned
/// `src` is read as a `[T]` directly, which keeps the loop vectorisable.
#[inline(always)]
fn decode_codes<T: Code>(src: &[u8], out: &mut [f32], f: impl Fn(T) -> f32) {
    #[cfg(target_endian = "little")]
    if let Ok(codes) = bytemuck::try_cast_slice::<u8, T>(src) {
        for (o, &c) in out.iter_mut().zip(codes) {
            *o = f(c);
        }
        return;
    }
    for (o, c) in out.iter_mut().zip(src.chunks_exact(T::N)) {
        *o = f(T::read(c));
    }
}

/// Encode `src` into codes of type `T` in `dst` with `f` (aligned fast path as in
/// [`decode_codes`]).
#[inline(always)]
fn encode_codes<T: Code>(src: &[f32], dst: &mut [u8], f: impl Fn(f32) -> T) {
    #[cfg(target_endian = "little")]
    if let Ok(codes) = bytemuck::try_cast_slice_mut::<u8, T>(dst) {
        for (o, &x) in codes.iter_mut().zip(src) {
            *o = f(x);
        }
        return;
    }
    for (c, &x) in dst.chunks_exact_mut(T::N).zip(src) {
        f(x).write(c);
    }
}

#[inline(always)]
fn lut(src: &[u8], out: &mut [f32], table: &[u32; 256]) {
    decode_codes::<u8>(src, out, |c| f32::from_bits(table[usize::from(c)]));
}

/// Decode whole elements; `out.len()` is the element count of `src`.
fn decode_into(src: &[u8], format: NumFormat, out: &mut [f32]) {
    match format {
        NumFormat::Uint8 | NumFormat::Float8E8m0fnu => decode_codes::<u8>(src, out, f32::from),
        NumFormat::Int8 => decode_codes::<u8>(src, out, |c| f32::from(c as i8)),
        NumFormat::Uint16 => decode_codes::<u16>(src, out, f32::from),
        NumFormat::Int16 => decode_codes::<u16>(src, out, |c| f32::from(c as i16)),
        NumFormat::Uint32 => decode_codes::<u32>(src, out, |c| c as f32),
        NumFormat::Int32 => decode_codes::<u32>(src, out, |c| c as i32 as f32),
        NumFormat::Uint64 => decode_codes::<u64>(src, out, |c| c as f32),
        NumFormat::Int64 => decode_codes::<u64>(src, out, |c| c as i64 as f32),
        NumFormat::Float32 | NumFormat::Float32r => decode_codes::<u32>(src, out, f32::from_bits),
        NumFormat::Bfloat16 => decode_codes::<u16>(src, out, |c| f32::from_bits(bf16_decode(c))),
        NumFormat::Float16 => decode_f16(src, out),
        NumFormat::Float8E3m4 => lut(src, out, &DEC_E3M4),
        NumFormat::Float8E4m3 => lut(src, out, &DEC_E4M3),
        NumFormat::Float8E4m3fn | NumFormat::Float8E4m3fnX4 => lut(src, out, &DEC_E4M3FN),
        NumFormat::Float8E5m2 | NumFormat::Float8E5m2X4 => lut(src, out, &DEC_E5M2),
        NumFormat::Float4E2m1fn => lut(src, out, &DEC_E2M1),
        NumFormat::Bool => decode_codes::<u8>(src, out, |c| f32::from(u8::from(c != 0))),
        NumFormat::Float64 => decode_codes::<u64>(src, out, |c| f64::from_bits(c) as f32),
        NumFormat::Float4E2m1fnX4 => {
            for (o, &b) in out.chunks_exact_mut(2).zip(src) {
                o[0] = f32::from_bits(DEC_E2M1[usize::from(b & 0xF)]);
                o[1] = f32::from_bits(DEC_E2M1[usize::from(b >> 4)]);
            }
        }
    }
}

/// Encode whole elements; `dst` holds exactly `src.len()` elements.
fn encode_into(src: &[f32], format: NumFormat, dst: &mut [u8], policy: &CastPolicy) {
    let (sat, sel, mode) = (
        policy.saturate_fp8,
        policy.fp8_nan_selector,
        policy.float_to_int,
    );
    match format {
        NumFormat::Uint8 | NumFormat::Float8E8m0fnu => {
            encode_codes(src, dst, |x| to_unsigned(x, mode, 0xFF) as u8)
        }
        NumFormat::Int8 => encode_codes(src, dst, |x| to_signed(x, mode, -0x80, 0x7F) as u8),
        NumFormat::Uint16 => encode_codes(src, dst, |x| to_unsigned(x, mode, 0xFFFF) as u16),
        NumFormat::Int16 => encode_codes(src, dst, |x| to_signed(x, mode, -0x8000, 0x7FFF) as u16),
        NumFormat::Uint32 => {
            encode_codes(src, dst, |x| to_unsigned(x, mode, u32::MAX.into()) as u32)
        }
        NumFormat::Int32 => encode_codes(src, dst, |x| {
            to_signed(x, mode, i32::MIN.into(), i32::MAX.into()) as u32
        }),
        NumFormat::Uint64 => encode_codes(src, dst, |x| to_unsigned(x, mode, u64::MAX)),
        NumFormat::Int64 => {
            encode_codes(src, dst, |x| to_signed(x, mode, i64::MIN, i64::MAX) as u64)
        }
        NumFormat::Float32 => encode_codes(src, dst, f32::to_bits),
        NumFormat::Float32r => encode_codes(src, dst, f32r_encode),
        NumFormat::Bfloat16 => encode_codes(src, dst, bf16_encode),
        NumFormat::Float16 => {
            encode_codes(src, dst, |x| mini_encode::<F16>(x, false, false) as u16)
        }
        NumFormat::Float8E3m4 => encode_codes(src, dst, |x| mini_encode::<E3m4>(x, sat, sel) as u8),
        NumFormat::Float8E4m3 => encode_codes(src, dst, |x| mini_encode::<E4m3>(x, sat, sel) as u8),
        NumFormat::Float8E4m3fn | NumFormat::Float8E4m3fnX4 => {
            encode_codes(src, dst, |x| mini_encode::<E4m3fn>(x, sat, sel) as u8)
        }
        NumFormat::Float8E5m2 | NumFormat::Float8E5m2X4 => {
            encode_codes(src, dst, |x| mini_encode::<E5m2>(x, sat, sel) as u8)
        }
        NumFormat::Float4E2m1fn => {
            encode_codes(src, dst, |x| mini_encode::<E2m1>(x, sat, sel) as u8)
        }
        NumFormat::Bool => encode_codes(src, dst, |x| u8::from(x != 0.0)),
        NumFormat::Float64 => encode_codes(src, dst, |x| f64::from(x).to_bits()),
        NumFormat::Float4E2m1fnX4 => {
            for (b, x) in dst.iter_mut().zip(src.chunks_exact(2)) {
                let lo = mini_encode::<E2m1>(x[0], sat, sel);
                let hi = mini_encode::<E2m1>(x[1], sat, sel);
                *b = (lo | (hi << 4)) as u8;
            }
        }
    }
}

/// Elements converted per pass through the fp32 hub (a multiple of every lane count).
const CHUNK: usize = 1024;

/// Decode the elements of `src` (in `format`) to fp32; returns the element count, which must be
/// `out.len()`.
///
/// Packed forms are unpacked in lane order: FP8 ×4 lane k is byte k of its container; FP4 ×4
/// lane k is nibble k of its little-endian 2-byte container (element i of the slice is in byte
/// i/2, low nibble first).
pub fn to_f32_slice(src: &[u8], format: NumFormat, out: &mut [f32]) -> Result<usize, CastError> {
    let n = elements_in(src.len(), format)?;
    if out.len() != n {
        return Err(CastError::DestinationLength {
            got: 4 * out.len(),
            want: 4 * n,
            elements: n,
            format: NumFormat::Float32,
        });
    }
    decode_into(src, format, out);
    Ok(n)
}

/// Encode fp32 values into `dst` (in `format`, packed forms in the lane order of
/// [`to_f32_slice`]); returns the element count.
pub fn from_f32_slice(
    src: &[f32],
    dst: &mut [u8],
    format: NumFormat,
    policy: &CastPolicy,
) -> Result<usize, CastError> {
    check_dst(dst.len(), src.len(), format)?;
    encode_into(src, format, dst, policy);
    Ok(src.len())
}

/// Cast `src` (in `src_format`) into `dst` (in `dst_format`) through the fp32 hub; identical
/// formats copy the bytes unchanged. Returns the number of logical elements.
pub fn cast_slice(
    src: &[u8],
    src_format: NumFormat,
    dst: &mut [u8],
    dst_format: NumFormat,
    policy: &CastPolicy,
) -> Result<usize, CastError> {
    let n = elements_in(src.len(), src_format)?;
    check_dst(dst.len(), n, dst_format)?;
    if src_format == dst_format {
        dst.copy_from_slice(src);
        return Ok(n);
    }
    // One leg is fp32 itself: skip the hub buffer when the fp32 side is aligned.
    #[cfg(target_endian = "little")]
    {
        if matches!(src_format, NumFormat::Float32 | NumFormat::Float32r) {
            if let Ok(xs) = bytemuck::try_cast_slice::<u8, f32>(src) {
                encode_into(xs, dst_format, dst, policy);
                return Ok(n);
            }
        }
        if dst_format == NumFormat::Float32 {
            if let Ok(out) = bytemuck::try_cast_slice_mut::<u8, f32>(dst) {
                decode_into(src, src_format, out);
                return Ok(n);
            }
        }
    }
    let (sb, db) = (src_format.container_bytes(), dst_format.container_bytes());
    let (sl, dl) = (src_format.lanes(), dst_format.lanes());
    let mut buf = [0f32; CHUNK];
    let mut done = 0;
    while done < n {
        let k = CHUNK.min(n - done);
        let s = &src[done / sl * sb..(done + k) / sl * sb];
        let d = &mut dst[done / dl * db..(done + k) / dl * db];
        decode_into(s, src_format, &mut buf[..k]);
        encode_into(&buf[..k], dst_format, d, policy);
        done += k;
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
