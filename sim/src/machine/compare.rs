//! Output comparison against reference arrays: element counts, mismatches within tolerance,
//! max absolute / relative error, max ulp distance, an ulp histogram and the first mismatch.
//!
//! Values are compared in f64; the ulp distance is the distance between the two values'
//! positions in their format's ordered encoding (adjacent representable values are 1 apart;
//! +0 and −0 coincide). Two NaNs match; a NaN against a number does not, at any tolerance.
//! An element matches when `|got − want| ≤ atol + rtol·|want|` or its ulp distance ≤ `ulp`.

use serde::Serialize;

use tpbsim_isa::NumFormat;

/// (value, ordinal) of one element code of `f` (a scalar format; `bits` holds the code in its
/// low bits). The ordinal is monotonic in the value; NaN has none.
fn decode(f: NumFormat, bits: u64) -> (f64, Option<i128>) {
    // (exponent bits, mantissa bits, IEEE inf/NaN at max exponent, NaN only at all-ones)
    let float = |ebits: u32, mbits: u32, ieee_special: bool, nan_all_ones: bool| {
        let width = 1 + ebits + mbits;
        let sign = bits >> (width - 1) & 1 == 1;
        let mag = bits & ((1u64 << (width - 1)) - 1);
        let e = (mag >> mbits) as i64;
        let m = mag & ((1u64 << mbits) - 1);
        let emax = (1i64 << ebits) - 1;
        let bias = (1i64 << (ebits - 1)) - 1;
        let v = if ieee_special && e == emax {
            if m == 0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else if nan_all_ones && e == emax && m == (1u64 << mbits) - 1 {
            f64::NAN
        } else if e == 0 {
            m as f64 * 2f64.powi((1 - bias - mbits as i64) as i32)
        } else {
            (1.0 + m as f64 / (1u64 << mbits) as f64) * 2f64.powi((e - bias) as i32)
        };
        let v = if sign { -v } else { v };
        let ord = if v.is_nan() {
            None
        } else if sign {
            Some(-(mag as i128))
        } else {
            Some(mag as i128)
        };
        (v, ord)
    };
    match f {
        NumFormat::Float32 | NumFormat::Float32r => float(8, 23, true, false),
        NumFormat::Float16 => float(5, 10, true, false),
        NumFormat::Bfloat16 => float(8, 7, true, false),
        NumFormat::Float8E4m3fn => float(4, 3, false, true),
        NumFormat::Float8E4m3 => float(4, 3, true, false),
        NumFormat::Float8E5m2 => float(5, 2, true, false),
        NumFormat::Float8E3m4 => float(3, 4, true, false),
        NumFormat::Float4E2m1fn => float(2, 1, false, false),
        NumFormat::Float8E8m0fnu => match bits as u8 {
            0xFF => (f64::NAN, None),
            e => (2f64.powi(e as i32 - 127), Some(e as i128)),
        },
        NumFormat::Int8 => int(bits as u8 as i8 as i128),
        NumFormat::Uint8 => int(bits as u8 as i128),
        NumFormat::Int16 => int(bits as u16 as i16 as i128),
        NumFormat::Uint16 => int(bits as u16 as i128),
        NumFormat::Int32 => int(bits as u32 as i32 as i128),
        NumFormat::Uint32 => int(bits as u32 as i128),
        NumFormat::Int64 => int(bits as i64 as i128),
        NumFormat::Uint64 => int(bits as i128),
        NumFormat::Bool => int(i128::from(bits as u8 != 0)),
        NumFormat::Float64 => float(11, 52, true, false),
        // Packed forms are split into lanes before decoding.
        NumFormat::Float4E2m1fnX4 | NumFormat::Float8E4m3fnX4 | NumFormat::Float8E5m2X4 => {
            decode(f.element(), bits)
        }
    }
}

fn int(v: i128) -> (f64, Option<i128>) {
    (v as f64, Some(v))
}

/// Match tolerance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    /// Absolute tolerance.
    #[serde(default)]
    pub atol: f64,
    /// Relative tolerance (of the reference value).
    #[serde(default)]
    pub rtol: f64,
    /// Ulp tolerance.
    #[serde(default)]
    pub ulp: u64,
}

/// Upper bounds (inclusive) of the ulp histogram buckets; a last bucket holds larger
/// distances and NaN mismatches.
pub const ULP_BUCKETS: [u64; 10] = [0, 1, 2, 4, 8, 16, 32, 64, 128, 1024];

/// The first mismatching element.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FirstMismatch {
    /// Flat element index.
    pub flat: usize,
    /// Multi-dimensional index.
    pub index: Vec<usize>,
    /// Simulated value.
    pub got: f64,
    /// Reference value.
    pub want: f64,
}

/// The comparison of one output with its reference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Output name.
    pub name: String,
    /// Element format.
    #[serde(serialize_with = "ser_format")]
    pub dtype: NumFormat,
    /// Elements compared (lanes, for the packed ×4 formats).
    pub elements: usize,
    /// Elements outside tolerance.
    pub mismatches: usize,
    /// Largest |got − want| over non-NaN pairs.
    pub max_abs: f64,
    /// Largest |got − want| / |want| over non-NaN pairs with want ≠ 0.
    pub max_rel: f64,
    /// Largest ulp distance (`u64::MAX` when a NaN met a number).
    pub max_ulp: u64,
    /// Counts per bucket of [`ULP_BUCKETS`] plus one overflow bucket.
    pub ulp_histogram: Vec<u64>,
    /// First element outside tolerance.
    pub first_mismatch: Option<FirstMismatch>,
    /// Tolerance applied.
    pub tolerance: Tolerance,
}

impl Comparison {
    /// True when no element is outside tolerance.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }

    /// Human-readable report lines.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let verdict = if self.passed() { "ok" } else { "MISMATCH" };
        let _ = writeln!(
            s,
            "{}: {verdict}: {} elements ({}), {} mismatches; max abs err {:.3e}, max rel err {:.3e}, max ulp {}",
            self.name,
            self.elements,
            self.dtype.name(),
            self.mismatches,
            self.max_abs,
            self.max_rel,
            if self.max_ulp == u64::MAX { "nan".to_string() } else { self.max_ulp.to_string() }
        );
        let mut parts = Vec::new();
        let mut lo = 0u64;
        for (i, &hi) in ULP_BUCKETS.iter().enumerate() {
            let c = self.ulp_histogram[i];
            if c > 0 {
                parts.push(if lo == hi {
                    format!("{hi}:{c}")
                } else {
                    format!("{lo}-{hi}:{c}")
                });
            }
            lo = hi + 1;
        }
        if let Some(&c) = self.ulp_histogram.last().filter(|&&c| c > 0) {
            parts.push(format!(">{}:{c}", ULP_BUCKETS[ULP_BUCKETS.len() - 1]));
        }
        let _ = writeln!(s, "  ulp histogram: {}", parts.join(" "));
        if let Some(m) = &self.first_mismatch {
            let _ = writeln!(
                s,
                "  first mismatch at {:?} (flat {}): got {} want {}",
                m.index, m.flat, m.got, m.want
            );
        }
        s
    }
}

/// Why two arrays cannot be compared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// Element counts or shapes differ.
    #[error("`{name}`: shape {got:?} differs from the reference shape {want:?}")]
    Shape {
        /// Output name.
        name: String,
        /// Output shape.
        got: Vec<usize>,
        /// Reference shape.
        want: Vec<usize>,
    },
    /// Byte length is not `elements × size`.
    #[error("`{name}`: {len} bytes is not {elements} elements of {size} bytes")]
    Length {
        /// Output name.
        name: String,
        /// Byte length.
        len: usize,
        /// Elements expected.
        elements: usize,
        /// Element size.
        size: usize,
    },
}

fn ser_format<S: serde::Serializer>(f: &NumFormat, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(f.name())
}

/// Compare `got` with `want` (raw little-endian containers of `dtype`, of the given shapes).
/// Packed ×4 formats are compared lane by lane; the shape then counts containers.
pub fn compare(
    name: &str,
    dtype: NumFormat,
    shape: &[usize],
    got: &[u8],
    want_shape: &[usize],
    want: &[u8],
    tol: Tolerance,
) -> Result<Comparison, CompareError> {
    let containers: usize = shape.iter().product();
    if shape != want_shape {
        return Err(CompareError::Shape {
            name: name.into(),
            got: shape.to_vec(),
            want: want_shape.to_vec(),
        });
    }
    let size = dtype.container_bytes();
    for len in [got.len(), want.len()] {
        if len != containers * size {
            return Err(CompareError::Length {
                name: name.into(),
                len,
                elements: containers,
                size,
            });
        }
    }
    let lanes = dtype.lanes();
    let lane_bits = dtype.element_bits();
    let lane_mask = if lane_bits == 64 {
        u64::MAX
    } else {
        (1u64 << lane_bits) - 1
    };
    let mut c = Comparison {
        name: name.into(),
        dtype,
        elements: containers * lanes,
        mismatches: 0,
        max_abs: 0.0,
        max_rel: 0.0,
        max_ulp: 0,
        ulp_histogram: vec![0; ULP_BUCKETS.len() + 1],
        first_mismatch: None,
        tolerance: tol,
    };
    let word = |b: &[u8]| b.iter().rev().fold(0u64, |acc, &x| acc << 8 | x as u64);
    // Identical blocks (the common case of a matching output) are counted with one memcmp.
    const BLOCK: usize = 1024;
    for (bi, (gblk, wblk)) in got
        .chunks(size * BLOCK)
        .zip(want.chunks(size * BLOCK))
        .enumerate()
    {
        if gblk == wblk {
            c.ulp_histogram[0] += (gblk.len() / size * lanes) as u64;
            continue;
        }
        for (j, (g, w)) in gblk
            .chunks_exact(size)
            .zip(wblk.chunks_exact(size))
            .enumerate()
        {
            let (gw, ww) = (word(g), word(w));
            if gw == ww {
                c.ulp_histogram[0] += lanes as u64;
                continue;
            }
            let i = bi * BLOCK + j;
            for lane in 0..lanes {
                let shift = lane as u32 * lane_bits;
                let (gb, wb) = (gw >> shift & lane_mask, ww >> shift & lane_mask);
                if gb == wb {
                    c.ulp_histogram[0] += 1;
                    continue;
                }
                let flat = i * lanes + lane;
                c.add_pair(dtype, gb, wb, flat, shape, lanes);
            }
        }
    }
    Ok(c)
}

impl Comparison {
    fn add_pair(
        &mut self,
        dtype: NumFormat,
        gb: u64,
        wb: u64,
        flat: usize,
        shape: &[usize],
        lanes: usize,
    ) {
        let (gv, go) = decode(dtype, gb);
        let (wv, wo) = decode(dtype, wb);
        let ulp = match (go, wo) {
            (Some(a), Some(b)) => (a - b).unsigned_abs().min(u64::MAX as u128 - 1) as u64,
            (None, None) => 0,
            _ => u64::MAX,
        };
        let bucket = ULP_BUCKETS
            .iter()
            .position(|&hi| ulp <= hi)
            .unwrap_or(ULP_BUCKETS.len());
        self.ulp_histogram[bucket] += 1;
        self.max_ulp = self.max_ulp.max(ulp);
        let tol = self.tolerance;
        let ok = if ulp == u64::MAX {
            false
        } else if gv.is_nan() && wv.is_nan() {
            true
        } else {
            let abs = if gv == wv { 0.0 } else { (gv - wv).abs() };
            if abs.is_finite() {
                self.max_abs = self.max_abs.max(abs);
                if wv != 0.0 {
                    self.max_rel = self.max_rel.max(abs / wv.abs());
                }
            } else if !abs.is_nan() {
                self.max_abs = f64::INFINITY;
            }
            ulp <= tol.ulp || abs <= tol.atol + tol.rtol * wv.abs()
        };
        if !ok {
            self.mismatches += 1;
            if self.first_mismatch.is_none() {
                let mut index = unflatten(flat / lanes, shape);
                if lanes > 1 {
                    index.push(flat % lanes);
                }
                self.first_mismatch = Some(FirstMismatch {
                    flat,
                    index,
                    got: gv,
                    want: wv,
                });
            }
        }
    }
}

fn unflatten(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = i % d;
            i /= d;
        }
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn exact_match_and_mismatch() {
        let a = f32s(&[1.0, 2.0, 3.0, 4.0]);
        let c = compare(
            "y",
            NumFormat::Float32,
            &[2, 2],
            &a,
            &[2, 2],
            &a,
            Tolerance::default(),
        )
        .unwrap();
        assert!(c.passed());
        assert_eq!(c.ulp_histogram[0], 4);
        let b = f32s(&[1.0, 2.0, f32::from_bits(3.0f32.to_bits() + 3), 5.0]);
        let c = compare(
            "y",
            NumFormat::Float32,
            &[2, 2],
            &b,
            &[2, 2],
            &a,
            Tolerance::default(),
        )
        .unwrap();
        assert_eq!(c.mismatches, 2);
        assert_eq!(c.max_abs, 1.0);
        assert_eq!(c.max_rel, 0.25);
        let fm = c.first_mismatch.as_ref().unwrap();
        assert_eq!((fm.flat, fm.index.clone()), (2, vec![1, 0]));
        assert_eq!(c.ulp_histogram[3], 1, "3 ulp falls in the 3-4 bucket");
        let text = c.render();
        assert!(
            text.contains("MISMATCH") && text.contains("first mismatch at [1, 0]"),
            "{text}"
        );
        // 3 ulp tolerance admits element 2 but not element 3.
        let tol = Tolerance {
            ulp: 3,
            ..Default::default()
        };
        let c = compare("y", NumFormat::Float32, &[4], &b, &[4], &a, tol).unwrap();
        assert_eq!(c.mismatches, 1);
        let tol = Tolerance {
            atol: 0.0,
            rtol: 0.25,
            ulp: 0,
        };
        assert!(compare("y", NumFormat::Float32, &[4], &b, &[4], &a, tol)
            .unwrap()
            .passed());
    }

    #[test]
    fn mismatch_past_the_first_block_is_located() {
        let v: Vec<f32> = (0..3000).map(|i| i as f32 * 0.5).collect();
        let mut w = v.clone();
        w[2500] = f32::from_bits(w[2500].to_bits() + 2);
        let c = compare(
            "y",
            NumFormat::Float32,
            &[30, 100],
            &f32s(&v),
            &[30, 100],
            &f32s(&w),
            Tolerance::default(),
        )
        .unwrap();
        assert_eq!(c.elements, 3000);
        assert_eq!(c.mismatches, 1);
        assert_eq!(c.ulp_histogram[0], 2999);
        let m = c.first_mismatch.unwrap();
        assert_eq!((m.flat, m.index), (2500, vec![25, 0]));
        assert_eq!(c.max_ulp, 2);
    }

    #[test]
    fn ulp_across_zero_and_nan() {
        let a = f32s(&[f32::from_bits(1), 0.0, f32::NAN, f32::NAN]);
        let b = f32s(&[-f32::from_bits(1), -0.0, f32::NAN, 1.0]);
        let c = compare(
            "z",
            NumFormat::Float32,
            &[4],
            &a,
            &[4],
            &b,
            Tolerance::default(),
        )
        .unwrap();
        // ±min-subnormal are 2 apart; ±0 equal; NaN==NaN; NaN vs 1 mismatch.
        assert_eq!(c.mismatches, 2);
        assert_eq!(c.max_ulp, u64::MAX);
        assert_eq!(*c.ulp_histogram.last().unwrap(), 1);
        assert_eq!(c.ulp_histogram[2], 1);
    }

    #[test]
    fn bf16_and_ints() {
        // bf16 1.0 = 0x3F80, next = 0x3F81.
        let c = compare(
            "b",
            NumFormat::Bfloat16,
            &[1],
            &[0x81, 0x3F],
            &[1],
            &[0x80, 0x3F],
            Tolerance::default(),
        )
        .unwrap();
        assert_eq!((c.max_ulp, c.mismatches), (1, 1));
        assert!((c.max_abs - 2f64.powi(-7)).abs() < 1e-12);
        let g: Vec<u8> = [i32::MIN, 5].iter().flat_map(|x| x.to_le_bytes()).collect();
        let w: Vec<u8> = [i32::MAX, 5].iter().flat_map(|x| x.to_le_bytes()).collect();
        let c = compare(
            "i",
            NumFormat::Int32,
            &[2],
            &g,
            &[2],
            &w,
            Tolerance::default(),
        )
        .unwrap();
        assert_eq!(c.max_ulp, u32::MAX as u64);
        // e4m3: 0x7E = 448, 0x7F = NaN.
        assert_eq!(decode(NumFormat::Float8E4m3fn, 0x7E).0, 448.0);
        assert!(decode(NumFormat::Float8E4m3fn, 0x7F).0.is_nan());
        assert_eq!(decode(NumFormat::Float8E5m2, 0x7B).0, 57344.0);
        assert_eq!(decode(NumFormat::Float8E5m2, 0x7C).0, f64::INFINITY);
        assert_eq!(decode(NumFormat::Float8E4m3, 0x77).0, 240.0);
        assert_eq!(decode(NumFormat::Float8E3m4, 0x6F).0, 15.5);
        assert_eq!(decode(NumFormat::Float4E2m1fn, 0x7).0, 6.0);
        assert_eq!(decode(NumFormat::Float8E8m0fnu, 127).0, 1.0);
    }

    #[test]
    fn packed_lanes() {
        // Two float8_e4m3fn_x4 containers; lane 2 of container 1 differs by one code.
        let want = [0x38u8, 0x40, 0x48, 0x50, 0x38, 0x40, 0x48, 0x50];
        let mut got = want;
        got[6] = 0x49;
        let c = compare(
            "p",
            NumFormat::Float8E4m3fnX4,
            &[2],
            &got,
            &[2],
            &want,
            Tolerance::default(),
        )
        .unwrap();
        assert_eq!((c.elements, c.mismatches, c.max_ulp), (8, 1, 1));
        let m = c.first_mismatch.unwrap();
        assert_eq!((m.flat, m.index), (6, vec![1, 2]));
    }

    #[test]
    fn shape_and_length_errors() {
        let a = f32s(&[1.0, 2.0]);
        assert!(matches!(
            compare(
                "y",
                NumFormat::Float32,
                &[2],
                &a,
                &[1, 2],
                &a,
                Tolerance::default()
            ),
            Err(CompareError::Shape { .. })
        ));
        assert!(matches!(
            compare(
                "y",
                NumFormat::Float32,
                &[3],
                &a,
                &[3],
                &a,
                Tolerance::default()
            ),
            Err(CompareError::Length { .. })
        ));
    }
}
