//! MX microscaling: QuantizeMx (fp32 → FP4/FP8 elements plus one E8M0 scale per block) and
//! dequantize.
//!
//! Geometry. A tile is `partitions × free` logical elements, partition-major. A block is 8
//! partitions × 4 free elements = 32 elements; the scale tensor has one byte per block, shape
//! `[partitions / 8, free / 4]`. Scale row `i` (the blocks of partitions `8i .. 8i + 8`) is stored
//! at row [`scale_slot`]`(i) = (i & 3) + 32 · (i >> 2)` of the scale buffer: groups of four rows
//! stay together, each group in its own 32-partition quadrant. Rows the tile does not address
//! are left untouched.
//!
//! Data layout. Element `(p, f)` is element `p · free + f` of the packed data, in the lane order
//! of [`cast::to_f32_slice`](super::cast::to_f32_slice): FP8 ×4 lane `k` is byte `k` of its 4-byte
//! container; FP4 ×4 lane `k` is nibble `k` of its little-endian 2-byte container.
//!
//! Quantize. With `maxExp` the largest biased fp32 exponent field over the block (sign
//! ignored; a subnormal or zero reads 0; NaN and Inf read 255) and `EMAX` = 2 (FP4 E2M1),
//! 8 (FP8 E4M3FN), 15 (FP8 E5M2), one less in the alternative-emax mode:
//! `scale = max(1, max(0, maxExp − EMAX))`. This is the OCP rule
//! `2^(floor(log2 amax) − emax_elem)` written on biased exponents (`maxExp − 127 =
//! floor(log2 amax)` for a normal `amax`), with two floors: a scale that would be negative
//! becomes 0, and 0 becomes 1, so an all-zero or all-subnormal block gets scale byte 1 (2^−126),
//! never 2^−127. Every element is multiplied (fp32, RNE) by `2^(127 − scale)` and narrowed with
//! RNE and saturation on. A block holding a NaN or Inf gets scale `255 − EMAX`; its NaNs narrow
//! to the format's NaN (FP4: a signed zero), its infinities saturate to ±max, and its finite
//! elements, scaled by 2^(EMAX − 128), flush to (signed) zero.
//!
//! Dequantize. `value = ldexp(element, scale − 127)`, rounded once to fp32. Scale byte `0xFF` is
//! the E8M0 NaN and by default poisons its whole block (every value NaN).

use super::cast::{self, CastError, CastPolicy, FloatToInt};
use tpbsim_isa::NumFormat;

/// Partitions per MX block.
pub const BLOCK_PARTITIONS: usize = 8;
/// Free-dimension elements per MX block.
pub const BLOCK_FREE: usize = 4;

/// MX options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MxConfig {
    /// Alternative-emax mode: `EMAX − 1` (e4m3 7, e5m2 14, fp4 1).
    pub alt_emax: bool,
    /// FP8 NaN/Inf selector used by the narrowing (saturation is always on in QuantizeMx).
    pub fp8_nan_selector: bool,
    /// A NaN scale (`0xFF`) makes its whole block NaN on dequantize (OCP); when false, the plain
    /// `ldexp(x, 128)` of the reference model applies (±Inf, 0 for zeros, NaN for NaNs).
    pub nan_scale_poisons: bool,
}

impl Default for MxConfig {
    fn default() -> Self {
        MxConfig {
            alt_emax: false,
            fp8_nan_selector: false,
            nan_scale_poisons: true,
        }
    }
}

/// An MX tile shape in logical elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MxShape {
    /// Partitions (a positive multiple of 8).
    pub partitions: usize,
    /// Free-dimension elements per partition (a positive multiple of 4).
    pub free: usize,
}

impl MxShape {
    /// Logical elements.
    pub const fn elements(&self) -> usize {
        self.partitions * self.free
    }

    /// Scale rows (`partitions / 8`).
    pub const fn scale_rows(&self) -> usize {
        self.partitions / BLOCK_PARTITIONS
    }

    /// Scale bytes per row (`free / 4`).
    pub const fn scale_row_bytes(&self) -> usize {
        self.free / BLOCK_FREE
    }

    /// Bytes the interleaved scale buffer must hold: up to and including the last row's slot.
    pub const fn scale_buffer_bytes(&self) -> usize {
        if self.scale_rows() == 0 {
            0
        } else {
            (scale_slot(self.scale_rows() - 1) + 1) * self.scale_row_bytes()
        }
    }

    fn check(&self) -> Result<(), MxError> {
        if self.partitions == 0
            || self.free == 0
            || !self.partitions.is_multiple_of(BLOCK_PARTITIONS)
            || !self.free.is_multiple_of(BLOCK_FREE)
        {
            return Err(MxError::Shape(*self));
        }
        Ok(())
    }
}

/// An MX operation that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MxError {
    /// The data format is not an MX element format.
    #[error("{0} is not an MX element format (float4_e2m1fn, float8_e4m3fn, float8_e5m2 or their _x4 forms)")]
    NotMx(NumFormat),
    /// The shape is not whole blocks.
    #[error("MX tile {}×{} is not whole 8×4 blocks", .0.partitions, .0.free)]
    Shape(MxShape),
    /// A buffer has the wrong size.
    #[error("{what} buffer holds {got} bytes, {want} needed")]
    Length {
        /// Which buffer.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The required length.
        want: usize,
    },
    /// The element data does not convert.
    #[error(transparent)]
    Cast(#[from] CastError),
}

/// The E8M0 scale reading of a byte: `2^(code − 127)`; `0xFF` is NaN.
pub fn scale_value(code: u8) -> f32 {
    if code == 0xFF {
        f32::NAN
    } else {
        pow2(i32::from(code) - 127) as f32
    }
}

/// The scale-buffer row of scale row `row`: `(row & 3) + 32 · (row >> 2)`.
pub const fn scale_slot(row: usize) -> usize {
    (row & 3) + 32 * (row >> 2)
}

/// The element's largest normal exponent (`EMAX`): 2 for FP4 E2M1, 8 for FP8 E4M3FN, 15 for
/// FP8 E5M2 (packed or not); `None` for any other format.
pub const fn emax(format: NumFormat) -> Option<u8> {
    match format.element() {
        NumFormat::Float4E2m1fn => Some(2),
        NumFormat::Float8E4m3fn => Some(8),
        NumFormat::Float8E5m2 => Some(15),
        _ => None,
    }
}

/// The scale byte of a block whose largest biased fp32 exponent field is `max_biased_exp`:
/// `max(1, max(0, max_biased_exp − emax))`.
pub const fn scale_byte(max_biased_exp: u8, emax: u8) -> u8 {
    if max_biased_exp > emax {
        max_biased_exp - emax
    } else {
        1
    }
}

/// The position of FP4 element `index` after the compiler's ×4 nibble-pack lane remap with
/// window `2 · stride`: indices are reversed within each window and even indices move back by
/// two (`2·stride·(index / (2·stride) + 1) − index % (2·stride)`, minus 2 for even `index`).
/// `stride` 0 is the identity. The remap is a permutation within each window.
///
/// The compiler derives `stride` (and which nibble parity is the high nibble) from the access
/// pattern; that mapping is not pinned, so [`quantize`] and [`dequantize`] use the linear lane
/// order and this function is offered for callers that know the stride.
pub const fn fp4_lane_remap(index: usize, stride: usize) -> usize {
    if stride == 0 {
        return index;
    }
    let w = 2 * stride;
    let r = w * (index / w + 1) - index % w;
    if index.is_multiple_of(2) {
        r - 2
    } else {
        r
    }
}

/// `2^e` as f64 (exact for −1022 ≤ e ≤ 1023).
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

fn check_len(what: &'static str, got: usize, want: usize) -> Result<(), MxError> {
    if got != want {
        return Err(MxError::Length { what, got, want });
    }
    Ok(())
}

fn data_bytes(shape: &MxShape, format: NumFormat) -> usize {
    shape.elements() / format.lanes() * format.container_bytes()
}

/// QuantizeMx: quantize the `shape` tile `src` (partition-major elements of `src_format`) into
/// `data` (elements of `data_format`, same order) and the interleaved `scale` buffer (at least
/// [`MxShape::scale_buffer_bytes`] bytes; rows at [`scale_slot`]).
pub fn quantize(
    src: &[u8],
    src_format: NumFormat,
    shape: MxShape,
    data_format: NumFormat,
    data: &mut [u8],
    scale: &mut [u8],
    config: &MxConfig,
) -> Result<(), MxError> {
    let emax = emax(data_format)
        .ok_or(MxError::NotMx(data_format))?
        .saturating_sub(config.alt_emax as u8);
    shape.check()?;
    check_len("data", data.len(), data_bytes(&shape, data_format))?;
    if scale.len() < shape.scale_buffer_bytes() {
        return Err(MxError::Length {
            what: "scale",
            got: scale.len(),
            want: shape.scale_buffer_bytes(),
        });
    }
    check_len("source", src.len(), data_bytes(&shape, src_format))?;
    let mut x = vec![0f32; shape.elements()];
    cast::to_f32_slice(src, src_format, &mut x)?;

    let row_bytes = shape.scale_row_bytes();
    for bi in 0..shape.scale_rows() {
        let rows = bi * BLOCK_PARTITIONS..(bi + 1) * BLOCK_PARTITIONS;
        for bj in 0..row_bytes {
            let cols = bj * BLOCK_FREE..(bj + 1) * BLOCK_FREE;
            let max_exp = rows
                .clone()
                .flat_map(|p| x[p * shape.free + cols.start..p * shape.free + cols.end].iter())
                .map(|v| (v.to_bits() >> 23) as u8)
                .max()
                .unwrap_or(0);
            let s = scale_byte(max_exp, emax);
            scale[scale_slot(bi) * row_bytes + bj] = s;
            let mul = f32::from_bits(u32::from(254 - s) << 23);
            for p in rows.clone() {
                for v in &mut x[p * shape.free + cols.start..p * shape.free + cols.end] {
                    *v *= mul;
                }
            }
        }
    }
    let policy = CastPolicy {
        saturate_fp8: true,
        fp8_nan_selector: config.fp8_nan_selector,
        float_to_int: FloatToInt::ReferenceRne,
    };
    cast::from_f32_slice(&x, data, data_format, &policy)?;
    Ok(())
}

/// Dequantize the `shape` tile `data` (elements of `data_format`) with the interleaved `scale`
/// buffer into fp32 `out` (partition-major).
pub fn dequantize(
    data: &[u8],
    data_format: NumFormat,
    scale: &[u8],
    shape: MxShape,
    out: &mut [f32],
    config: &MxConfig,
) -> Result<(), MxError> {
    emax(data_format).ok_or(MxError::NotMx(data_format))?;
    shape.check()?;
    check_len("data", data.len(), data_bytes(&shape, data_format))?;
    if scale.len() < shape.scale_buffer_bytes() {
        return Err(MxError::Length {
            what: "scale",
            got: scale.len(),
            want: shape.scale_buffer_bytes(),
        });
    }
    check_len("output", 4 * out.len(), 4 * shape.elements())?;
    cast::to_f32_slice(data, data_format, out)?;
    let row_bytes = shape.scale_row_bytes();
    for (p, row) in out.chunks_exact_mut(shape.free).enumerate() {
        let srow = &scale[scale_slot(p / BLOCK_PARTITIONS) * row_bytes..][..row_bytes];
        for (v, &s) in row
            .iter_mut()
            .zip(srow.iter().flat_map(|s| std::iter::repeat_n(s, BLOCK_FREE)))
        {
            *v = if s == 0xFF && config.nan_scale_poisons {
                f32::NAN
            } else {
                (f64::from(*v) * pow2(i32::from(s) - 127)) as f32
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_rules() {
        assert_eq!(scale_byte(0, 8), 1, "all-zero block");
        assert_eq!(scale_byte(8, 8), 1, "zero floor");
        assert_eq!(scale_byte(9, 8), 1);
        assert_eq!(scale_byte(10, 8), 2);
        assert_eq!(
            scale_byte(127 + 8, 8),
            127,
            "amax in [256, 512) for e4m3fn: scale 2^0"
        );
        assert_eq!(scale_byte(255, 15), 240);
        assert_eq!(scale_value(127), 1.0);
        assert_eq!(
            scale_value(0).to_bits(),
            0x0040_0000,
            "2^-127 is an fp32 subnormal"
        );
        assert_eq!(scale_value(254), 2f32.powi(127));
        assert!(scale_value(255).is_nan());
        assert_eq!(emax(NumFormat::Float8E4m3fnX4), Some(8));
        assert_eq!(emax(NumFormat::Float4E2m1fnX4), Some(2));
        assert_eq!(emax(NumFormat::Float8E5m2), Some(15));
        assert_eq!(emax(NumFormat::Float8E4m3), None);
    }

    #[test]
    fn scale_slots_interleave_by_quadrant() {
        let slots: Vec<_> = (0..16).map(scale_slot).collect();
        assert_eq!(
            slots,
            [0, 1, 2, 3, 32, 33, 34, 35, 64, 65, 66, 67, 96, 97, 98, 99]
        );
        let shape = MxShape {
            partitions: 128,
            free: 8,
        };
        assert_eq!(shape.scale_buffer_bytes(), 100 * 2);
    }

    #[test]
    fn fp4_lane_remap_is_a_windowed_permutation() {
        assert_eq!(
            (0..4).map(|i| fp4_lane_remap(i, 2)).collect::<Vec<_>>(),
            [2, 3, 0, 1]
        );
        assert_eq!(
            (0..8).map(|i| fp4_lane_remap(i, 4)).collect::<Vec<_>>(),
            [6, 7, 4, 5, 2, 3, 0, 1]
        );
        assert_eq!(
            (0..6).map(|i| fp4_lane_remap(i, 1)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5]
        );
        for stride in 1..9 {
            let w = 2 * stride;
            let mut seen: Vec<_> = (0..4 * w).map(|i| fp4_lane_remap(i, stride)).collect();
            for (i, &j) in seen.iter().enumerate() {
                assert_eq!(i / w, j / w, "stays in its window");
            }
            seen.sort();
            assert_eq!(seen, (0..4 * w).collect::<Vec<_>>());
        }
    }

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn quantize_one_block_by_hand() {
        // Block max 300 (exponent 8): e4m3fn scale = 127 + 8 − 8 = 127 (×1); 1000 would need 2^1.
        let mut x = vec![0f32; 32];
        x[0] = 300.0;
        x[5] = -1.7;
        x[31] = 1e-4;
        let shape = MxShape {
            partitions: 8,
            free: 4,
        };
        let mut data = [0u8; 32];
        let mut scale = [0u8; 1];
        quantize(
            &f32_bytes(&x),
            NumFormat::Float32,
            shape,
            NumFormat::Float8E4m3fnX4,
            &mut data,
            &mut scale,
            &MxConfig::default(),
        )
        .unwrap();
        assert_eq!(scale, [127]);
        assert_eq!(data[0], 0x79, "288 (RNE of 300)");
        assert_eq!(data[5], 0xBE, "-1.75");
        assert_eq!(data[31], 0x00, "1e-4 is below half the smallest subnormal");
        x[0] = 1000.0;
        quantize(
            &f32_bytes(&x),
            NumFormat::Float32,
            shape,
            NumFormat::Float8E4m3fnX4,
            &mut data,
            &mut scale,
            &MxConfig::default(),
        )
        .unwrap();
        assert_eq!(scale, [128]);
        assert_eq!(data[0], 0x7E, "500 rounds beyond 480 and saturates to 448");
        let mut out = [0f32; 32];
        dequantize(
            &data,
            NumFormat::Float8E4m3fnX4,
            &scale,
            shape,
            &mut out,
            &MxConfig::default(),
        )
        .unwrap();
        assert_eq!(out[0], 896.0);
        assert_eq!(out[5], -1.75, "-0.85 → -0.875, times 2");
    }

    #[test]
    fn zero_nan_and_inf_blocks() {
        let shape = MxShape {
            partitions: 8,
            free: 8,
        };
        let mut x = vec![0f32; 64];
        x[0] = -0.0; // block 0: all zero
        x[4] = f32::NAN; // block 1: NaN, an Inf, and finite values
        x[5] = f32::NEG_INFINITY;
        x[6] = 3.0;
        let mut data = [0u8; 64];
        let mut scale = [0u8; 2];
        let cfg = MxConfig::default();
        quantize(
            &f32_bytes(&x),
            NumFormat::Float32,
            shape,
            NumFormat::Float8E5m2X4,
            &mut data,
            &mut scale,
            &cfg,
        )
        .unwrap();
        assert_eq!(scale, [1, 255 - 15]);
        assert_eq!(data[0], 0x80);
        assert_eq!(&data[4..7], &[0x7E, 0xFB, 0x00]);
        let mut fp4 = [0u8; 32];
        quantize(
            &f32_bytes(&x),
            NumFormat::Float32,
            shape,
            NumFormat::Float4E2m1fnX4,
            &mut fp4,
            &mut scale,
            &cfg,
        )
        .unwrap();
        assert_eq!(scale, [1, 253]);
        assert_eq!(
            fp4[2], 0xF0,
            "NaN → +0 (low nibble), -Inf → -6 (high nibble)"
        );

        let mut out = [0f32; 64];
        let nan_scale = [255u8, 127];
        dequantize(
            &data,
            NumFormat::Float8E5m2X4,
            &nan_scale,
            shape,
            &mut out,
            &cfg,
        )
        .unwrap();
        assert!(
            out[..4].iter().all(|v| v.is_nan()),
            "NaN scale poisons the block, zeros included"
        );
        let plain = MxConfig {
            nan_scale_poisons: false,
            ..cfg
        };
        dequantize(
            &data,
            NumFormat::Float8E5m2X4,
            &nan_scale,
            shape,
            &mut out,
            &plain,
        )
        .unwrap();
        assert_eq!(out[0], 0.0);
        assert!(out[0].is_sign_negative());
    }

    #[test]
    fn errors() {
        let shape = MxShape {
            partitions: 8,
            free: 4,
        };
        let mut data = [0u8; 32];
        let mut scale = [0u8; 1];
        let src = [0u8; 64];
        assert_eq!(
            quantize(
                &src,
                NumFormat::Bfloat16,
                shape,
                NumFormat::Float8E4m3,
                &mut data,
                &mut scale,
                &MxConfig::default()
            ),
            Err(MxError::NotMx(NumFormat::Float8E4m3))
        );
        let bad = MxShape {
            partitions: 12,
            free: 4,
        };
        assert!(matches!(
            quantize(
                &src,
                NumFormat::Bfloat16,
                bad,
                NumFormat::Float8E4m3fnX4,
                &mut data,
                &mut scale,
                &MxConfig::default()
            ),
            Err(MxError::Shape(_))
        ));
        assert!(matches!(
            quantize(
                &src[..62],
                NumFormat::Bfloat16,
                shape,
                NumFormat::Float8E4m3fnX4,
                &mut data,
                &mut scale,
                &MxConfig::default()
            ),
            Err(MxError::Length { .. })
        ));
        assert!(matches!(
            quantize(
                &src,
                NumFormat::Bfloat16,
                shape,
                NumFormat::Float8E4m3fnX4,
                &mut data,
                &mut [],
                &MxConfig::default()
            ),
            Err(MxError::Length { what: "scale", .. })
        ));
    }
}
