//! TensorDequantize (0x7B) value model: sub-byte micro-format codes packed in UINT32 transport
//! words, expanded to FP8.
//!
//! Public (G `firmware/kernels/tensor-dequantize.md`, `mx-dequant.md`): the four `DEQUANT_FMT`
//! values and their input / output formats, the element ratios (dst words per src word 2:1 for
//! 4-bit codes, 4:3 for 6-bit codes, 8:5 for 4-bit codes with `group_size` 8), one shared scale
//! per block of 8 codes applied as a multiply, FP4 / FP6 as sign–exponent–mantissa fields of
//! bias 1, INT4 as two's complement, NF4 as an index into a 16-entry codebook, and a saturating
//! narrowing to FP8.
//!
//! Project-defined (not public; listed in `docs/numerics.md`): the order of the codes inside a
//! word (least-significant bits first), the 6-bit stream, the place of the scale word in a
//! block, the scale's encoding (E8M0), the NF4 codebook values, the rounding (RNE through the
//! cast engine), and that a block never straddles two partitions.

use super::cast::{self, CastPolicy};
use tpbsim_isa::NumFormat;

/// The `DEQUANT_FMT` selector (header values; 0 is INVALID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DequantFmt {
    /// FP4 E2M1 → FP8 E5M2 (1).
    E2m1ToE5m2,
    /// INT4 → FP8 E5M2 (2).
    Int4ToE5m2,
    /// NF4 → FP8 E4M3 (3).
    Nf4ToE4m3,
    /// FP6 E2M3 → FP8 E4M3 (4).
    E2m3ToE4m3,
}

/// Why a dequantization cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DequantError {
    /// A `dequant_fmt` byte outside 1..=4.
    #[error("dequant_fmt {0} is not a DEQUANT_FMT value (1..=4)")]
    BadFormat(u8),
    /// A `group_size` other than 0 or 8, or 8 with the 6-bit format.
    #[error("group_size {size} is not valid for {fmt:?} (0, or 8 with a 4-bit format)")]
    BadGroup {
        /// Format.
        fmt: DequantFmt,
        /// Group size byte.
        size: u8,
    },
    /// Source and destination word counts do not follow the format's ratio.
    #[error("{src} source words per partition need {want} destination words ({ratio}), the destination has {dst}")]
    Ratio {
        /// Source words per partition.
        src: usize,
        /// Destination words per partition.
        dst: usize,
        /// Destination words the source expands to.
        want: usize,
        /// The ratio, as text.
        ratio: &'static str,
    },
    /// The source words per partition are not whole blocks.
    #[error("{src} source words per partition are not a multiple of {block}")]
    Blocks {
        /// Source words per partition.
        src: usize,
        /// Block size in words.
        block: usize,
    },
}

/// The NF4 codebook (code → value), indexed by the 4-bit code. Project-defined: the public page
/// establishes a 16-entry lookup and gives the published QLoRA NormalFloat-4 table as its
/// inferred reference; the device's table bytes are not public.
pub const NF4_CODEBOOK: [f32; 16] = [
    -1.0,
    -0.696_192_8,
    -0.525_073_05,
    -0.394_917_5,
    -0.284_441_38,
    -0.184_773_43,
    -0.091_050_036,
    0.0,
    0.079_580_3,
    0.160_930_2,
    0.246_112_3,
    0.337_915_24,
    0.440_709_83,
    0.562_617,
    0.722_956_84,
    1.0,
];

impl DequantFmt {
    /// From the wire byte.
    pub fn from_wire(b: u8) -> Result<Self, DequantError> {
        Ok(match b {
            1 => DequantFmt::E2m1ToE5m2,
            2 => DequantFmt::Int4ToE5m2,
            3 => DequantFmt::Nf4ToE4m3,
            4 => DequantFmt::E2m3ToE4m3,
            _ => return Err(DequantError::BadFormat(b)),
        })
    }

    /// Bits per code.
    pub const fn code_bits(self) -> u32 {
        match self {
            DequantFmt::E2m3ToE4m3 => 6,
            _ => 4,
        }
    }

    /// The FP8 output format (`FP8_EXP4` reads as `float8_e4m3fn`, as everywhere in tpbsim).
    pub const fn out_format(self) -> NumFormat {
        match self {
            DequantFmt::E2m1ToE5m2 | DequantFmt::Int4ToE5m2 => NumFormat::Float8E5m2,
            DequantFmt::Nf4ToE4m3 | DequantFmt::E2m3ToE4m3 => NumFormat::Float8E4m3fn,
        }
    }

    /// The exact value of one code (the low `code_bits` bits of `code`).
    pub fn value(self, code: u32) -> f32 {
        match self {
            DequantFmt::E2m1ToE5m2 => minifloat(code & 0xF, 2, 1),
            DequantFmt::Int4ToE5m2 => (((code & 0xF) << 28) as i32 >> 28) as f32,
            DequantFmt::Nf4ToE4m3 => NF4_CODEBOOK[(code & 0xF) as usize],
            DequantFmt::E2m3ToE4m3 => minifloat(code & 0x3F, 2, 3),
        }
    }
}

/// A sign–exponent–mantissa code of `e` exponent bits (bias 1) and `m` mantissa bits, no
/// Inf/NaN (FP4 E2M1, FP6 E2M3).
fn minifloat(code: u32, e: u32, m: u32) -> f32 {
    let sign = if code >> (e + m) & 1 == 1 { -1.0 } else { 1.0 };
    let exp = (code >> m) & ((1 << e) - 1);
    let man = (code & ((1 << m) - 1)) as f32 / (1u32 << m) as f32;
    let mag = if exp == 0 {
        man // subnormal: 0.m × 2^(1 − bias), bias 1
    } else {
        (1.0 + man) * 2f32.powi(exp as i32 - 1)
    };
    sign * mag
}

/// Source words per block and destination words per block for a format and group size.
pub fn ratio(
    fmt: DequantFmt,
    group_size: u8,
) -> Result<(usize, usize, &'static str), DequantError> {
    match (fmt, group_size) {
        (DequantFmt::E2m3ToE4m3, 0) => Ok((3, 4, "4:3")),
        (_, 0) => Ok((1, 2, "2:1")),
        (DequantFmt::E2m3ToE4m3, s) | (_, s @ 1..=7) | (_, s @ 9..) => {
            Err(DequantError::BadGroup { fmt, size: s })
        }
        (_, 8) => Ok((5, 8, "8:5")),
    }
}

/// Words of 4-bit codes per MX block and the word holding its four scale bytes.
const MX_DATA_WORDS: usize = 4;

/// Expand one partition: `src` words (little-endian `u32`) into FP8 bytes `out`
/// (`4 × dst words`). The cast engine narrows each value with `policy` (RNE, saturation).
pub fn dequantize_partition(
    fmt: DequantFmt,
    group_size: u8,
    src: &[u32],
    out: &mut [u8],
    policy: &CastPolicy,
) -> Result<(), DequantError> {
    let (sw, dw, text) = ratio(fmt, group_size)?;
    if !src.len().is_multiple_of(sw) {
        return Err(DequantError::Blocks {
            src: src.len(),
            block: sw,
        });
    }
    let want = src.len() / sw * dw;
    if out.len() != want * 4 {
        return Err(DequantError::Ratio {
            src: src.len(),
            dst: out.len() / 4,
            want,
            ratio: text,
        });
    }
    let of = fmt.out_format();
    let enc = |v: f32| cast::from_f32(of, v, policy) as u8;
    if group_size == 8 {
        for (block, o) in src.chunks_exact(5).zip(out.chunks_exact_mut(32)) {
            let scales = block[MX_DATA_WORDS].to_le_bytes();
            for (i, slot) in o.iter_mut().enumerate() {
                let code = block[i / 8] >> (4 * (i % 8));
                let scale = super::mx::scale_value(scales[i / 8]);
                *slot = enc(fmt.value(code) * scale);
            }
        }
    } else {
        let bits = fmt.code_bits() as usize;
        for (i, slot) in out.iter_mut().enumerate() {
            let at = i * bits;
            let (w, b) = (at / 32, at % 32);
            let mut code = u64::from(src[w]) >> b;
            if b + bits > 32 {
                code |= u64::from(src[w + 1]) << (32 - b);
            }
            *slot = enc(fmt.value(code as u32 & ((1 << bits) - 1)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAT: CastPolicy = CastPolicy::DEVICE;

    #[test]
    fn code_values() {
        let f = DequantFmt::E2m1ToE5m2;
        let grid: Vec<f32> = (0..8).map(|c| f.value(c)).collect();
        assert_eq!(grid, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        assert_eq!(f.value(0xF), -6.0);
        let i = DequantFmt::Int4ToE5m2;
        assert_eq!(
            (i.value(0x7), i.value(0x8), i.value(0xF)),
            (7.0, -8.0, -1.0)
        );
        let s = DequantFmt::E2m3ToE4m3;
        // 0b0_00_001 = 1/8 (subnormal), 0b0_11_111 = 2^2 × 1.875 = 7.5, sign bit 5.
        assert_eq!(
            (s.value(1), s.value(0x1F), s.value(0x3F)),
            (0.125, 7.5, -7.5)
        );
        assert_eq!(s.value(0b00_1100), 1.5);
        assert_eq!(DequantFmt::Nf4ToE4m3.value(7), 0.0);
        assert!(DequantFmt::from_wire(0).is_err() && DequantFmt::from_wire(5).is_err());
    }

    #[test]
    fn nibbles_low_first_and_ratio() {
        // Codes 1..8 in one word: 0x87654321 → 0.5, 1, 1.5, 2, 3, 4, 6, -0.
        let mut out = [0u8; 8];
        dequantize_partition(DequantFmt::E2m1ToE5m2, 0, &[0x8765_4321], &mut out, &SAT).unwrap();
        let want: Vec<u8> = [0.5f32, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0]
            .iter()
            .map(|&v| cast::from_f32(NumFormat::Float8E5m2, v, &SAT) as u8)
            .collect();
        assert_eq!(out.to_vec(), want);
        let e = dequantize_partition(DequantFmt::E2m1ToE5m2, 0, &[0], &mut [0u8; 4], &SAT);
        assert!(
            matches!(e, Err(DequantError::Ratio { want: 2, .. })),
            "{e:?}"
        );
    }

    #[test]
    fn six_bit_stream_crosses_words() {
        // 16 codes of value index i (code = i) packed LSB first into 3 words.
        let mut bits: u128 = 0;
        for i in 0..16u128 {
            bits |= i << (6 * i);
        }
        let src = [bits as u32, (bits >> 32) as u32, (bits >> 64) as u32];
        let mut out = [0u8; 16];
        dequantize_partition(DequantFmt::E2m3ToE4m3, 0, &src, &mut out, &SAT).unwrap();
        for (i, &b) in out.iter().enumerate() {
            let v = DequantFmt::E2m3ToE4m3.value(i as u32);
            assert_eq!(
                cast::to_f32(NumFormat::Float8E4m3fn, u64::from(b)),
                v,
                "code {i}"
            );
        }
        assert!(matches!(
            dequantize_partition(DequantFmt::E2m3ToE4m3, 8, &src, &mut out, &SAT),
            Err(DequantError::BadGroup { size: 8, .. })
        ));
    }

    #[test]
    fn mx_block_scales_and_saturates() {
        // 32 INT4 codes of 7, scales 2^0, 2^1, 2^-1, 2^20 (E8M0 127, 128, 126, 147).
        let data = [0x7777_7777u32; 4];
        let scale = u32::from_le_bytes([127, 128, 126, 147]);
        let src = [data[0], data[1], data[2], data[3], scale];
        let mut out = [0u8; 32];
        dequantize_partition(DequantFmt::Int4ToE5m2, 8, &src, &mut out, &SAT).unwrap();
        let v: Vec<f32> = out
            .iter()
            .map(|&b| cast::to_f32(NumFormat::Float8E5m2, u64::from(b)))
            .collect();
        assert!(v[..8].iter().all(|&x| x == 7.0));
        assert!(v[8..16].iter().all(|&x| x == 14.0));
        assert!(v[16..24].iter().all(|&x| x == 3.5));
        // 7 × 2^20 overflows E5M2 and saturates to the largest finite value.
        assert!(v[24..].iter().all(|&x| x == 57344.0));
        assert!(matches!(
            dequantize_partition(DequantFmt::Int4ToE5m2, 8, &src[..4], &mut out, &SAT),
            Err(DequantError::Blocks { block: 5, .. })
        ));
    }
}
