//! The cast engine and MX quantize/dequantize against the tables that
//! `testdata/numerics/gen_tables.py` generates with numpy + ml_dtypes.
//!
//! Where the policy intentionally differs from ml_dtypes, each test applies the documented delta
//! (docs/numerics.md, "Deltas from ml_dtypes") explicitly and checks it.

use std::io::Read;
use std::path::PathBuf;

use tpbsim_isa::NumFormat;
use tpbsim_sim::numerics::{
    cast_slice, from_f32, from_f32_slice, mx, to_f32, to_f32_slice, CastPolicy, FloatToInt,
};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/numerics")
}

fn load(name: &str) -> Vec<u8> {
    let path = data_dir().join(name);
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    out
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn codes(b: &[u8], bits: u32) -> Vec<u64> {
    if bits == 16 {
        b.chunks_exact(2)
            .map(|c| u64::from(u16::from_le_bytes([c[0], c[1]])))
            .collect()
    } else {
        b.iter().map(|&c| u64::from(c)).collect()
    }
}

/// Decode table: stored as wrapping differences.
fn decode_table(name: &str) -> Vec<u32> {
    let mut acc = 0u32;
    u32s(&load(&format!("decode.{name}.bin.gz")))
        .into_iter()
        .map(|d| {
            acc = acc.wrapping_add(d);
            acc
        })
        .collect()
}

/// (code, ml_dtypes re-encoding) for every code that does not round-trip to itself.
fn roundtrip_diffs(name: &str, bits: u32) -> Vec<(u64, u64)> {
    let b = load(&format!("roundtrip.{name}.bin.gz"));
    let n = u32s(&b[..4])[0] as usize;
    let c = codes(&b[4..], bits);
    assert_eq!(c.len(), 2 * n);
    c.chunks_exact(2).map(|p| (p[0], p[1])).collect()
}

/// (inputs, code arrays).
fn narrow_table(name: &str, bits: u32, arrays: usize) -> (Vec<u32>, Vec<Vec<u64>>) {
    let b = load(&format!("narrow.{name}.bin.gz"));
    let n = u32s(&b[..4])[0] as usize;
    let inputs = u32s(&b[4..4 + 4 * n]);
    let cb = n * if bits == 16 { 2 } else { 1 };
    let rest = &b[4 + 4 * n..];
    assert_eq!(rest.len(), arrays * cb, "{name}");
    let arrs = (0..arrays)
        .map(|k| codes(&rest[k * cb..(k + 1) * cb], bits))
        .collect();
    (inputs, arrs)
}

const FLOATS: [(NumFormat, u32); 7] = [
    (NumFormat::Bfloat16, 16),
    (NumFormat::Float16, 16),
    (NumFormat::Float8E3m4, 8),
    (NumFormat::Float8E4m3, 8),
    (NumFormat::Float8E4m3fn, 8),
    (NumFormat::Float8E5m2, 8),
    (NumFormat::Float4E2m1fn, 4),
];
const INTS: [(NumFormat, u32); 4] = [
    (NumFormat::Uint8, 8),
    (NumFormat::Int8, 8),
    (NumFormat::Uint16, 16),
    (NumFormat::Int16, 16),
];

const SAT: CastPolicy = CastPolicy::DEVICE;
const NOSAT: CastPolicy = CastPolicy {
    saturate_fp8: false,
    fp8_nan_selector: false,
    float_to_int: FloatToInt::DeviceTruncate,
};

fn is_fp8(f: NumFormat) -> bool {
    matches!(
        f,
        NumFormat::Float8E3m4
            | NumFormat::Float8E4m3
            | NumFormat::Float8E4m3fn
            | NumFormat::Float8E5m2
    )
}

/// The code our policy gives a NaN input with sign `neg` (selector off).
fn our_nan(f: NumFormat, neg: bool) -> u64 {
    let s = u64::from(neg);
    match f {
        NumFormat::Bfloat16 => 0x7FC0,
        NumFormat::Float16 => 0x7E00 | s << 15,
        NumFormat::Float8E4m3fn => 0x7F | s << 7,
        NumFormat::Float8E3m4 => 0x78,
        NumFormat::Float8E4m3 => 0x7C,
        NumFormat::Float8E5m2 => 0x7E,
        NumFormat::Float4E2m1fn => s << 3,
        _ => unreachable!(),
    }
}

fn decodes_nan(f: NumFormat, code: u64) -> bool {
    to_f32(f, code).is_nan()
}

/// The largest finite code of `f` with sign `neg`.
fn max_code(f: NumFormat, neg: bool) -> u64 {
    let (m, s) = match f {
        NumFormat::Float8E3m4 => (0x6F, 7),
        NumFormat::Float8E4m3 => (0x77, 7),
        NumFormat::Float8E4m3fn => (0x7E, 7),
        NumFormat::Float8E5m2 => (0x7B, 7),
        _ => unreachable!(),
    };
    m | u64::from(neg) << s
}

/// The documented delta from ml_dtypes for one fp32 input `x` whose ml_dtypes code is `ml`.
fn expected(f: NumFormat, x: f32, ml: u64, policy: &CastPolicy) -> u64 {
    let neg = x.is_sign_negative();
    if x.is_nan() {
        return our_nan(f, neg);
    }
    if is_fp8(f) {
        let ml_value = to_f32(f, ml);
        // ml_dtypes never saturates: an overflow is Inf (or NaN for e4m3fn).
        let overflow = ml_value.is_infinite() || ml_value.is_nan();
        if overflow {
            return if policy.saturate_fp8 {
                max_code(f, neg)
            } else if f == NumFormat::Float8E4m3fn {
                0x7F // sign dropped
            } else {
                ml
            };
        }
    }
    ml
}

#[test]
fn decode_every_code_of_every_narrow_format() {
    for (f, bits) in FLOATS.iter().chain(INTS.iter()).copied() {
        let table = decode_table(f.name());
        assert_eq!(table.len(), 1 << bits, "{f}");
        for (code, &want) in table.iter().enumerate() {
            let got = to_f32(f, code as u64).to_bits();
            assert_eq!(
                got, want,
                "{f} code {code:#x}: {got:#010x} vs ml_dtypes {want:#010x}"
            );
        }
        // The slice path decodes the same.
        let bytes: Vec<u8> = if bits == 16 {
            (0..=u16::MAX).flat_map(u16::to_le_bytes).collect()
        } else {
            (0..1u32 << bits).map(|c| c as u8).collect()
        };
        let mut out = vec![0f32; table.len()];
        to_f32_slice(&bytes, f, &mut out).unwrap();
        assert!(
            out.iter().zip(&table).all(|(a, &b)| a.to_bits() == b),
            "{f} slice decode"
        );
    }
}

#[test]
fn e8m0_scale_reading_and_generic_uint8_reading() {
    let table = decode_table("float8_e8m0fnu");
    for (code, &want) in table.iter().enumerate() {
        let c = code as u8;
        assert_eq!(mx::scale_value(c).to_bits(), want, "scale {code:#x}");
        // Delta: the generic cast reads the byte as an integer.
        assert_eq!(to_f32(NumFormat::Float8E8m0fnu, code as u64), f32::from(c));
    }
}

#[test]
fn every_code_round_trips_through_its_exact_value() {
    for (f, bits) in FLOATS.iter().chain(INTS.iter()).copied() {
        let diffs = roundtrip_diffs(f.name(), bits);
        let table = decode_table(f.name());
        for (code, &v) in table.iter().enumerate() {
            let code = code as u64;
            let ml = diffs.iter().find(|d| d.0 == code).map_or(code, |d| d.1);
            let x = f32::from_bits(v);
            for policy in [SAT, NOSAT, CastPolicy::REFERENCE] {
                let got = from_f32(f, x, &policy);
                let want = expected(f, x, ml, &policy);
                assert_eq!(
                    got, want,
                    "{f} code {code:#x} ({x:e}) policy {policy:?}: ml_dtypes {ml:#x}"
                );
            }
            if x.is_nan() {
                assert!(
                    decodes_nan(f, ml),
                    "{f}: ml_dtypes keeps NaN {code:#x} a NaN"
                );
            }
        }
        // Saturation is the only reason a finite code does not come back.
        if is_fp8(f) {
            for (code, &v) in table.iter().enumerate() {
                let x = f32::from_bits(v);
                if x.is_finite() {
                    assert_eq!(from_f32(f, x, &SAT), code as u64, "{f} {code:#x}");
                }
            }
        }
    }
}

#[test]
fn narrowing_boundary_and_random_inputs() {
    for (f, bits) in FLOATS {
        let (inputs, arrs) = narrow_table(f.name(), bits, 1);
        let ml = &arrs[0];
        assert!(inputs.len() > 1000, "{f}: {} inputs", inputs.len());
        let xs: Vec<f32> = inputs.iter().map(|&b| f32::from_bits(b)).collect();
        for policy in [SAT, NOSAT] {
            let want: Vec<u64> = xs
                .iter()
                .zip(ml)
                .map(|(&x, &m)| expected(f, x, m, &policy))
                .collect();
            for ((&x, &w), &m) in xs.iter().zip(&want).zip(ml) {
                let got = from_f32(f, x, &policy);
                assert_eq!(
                    got,
                    w,
                    "{f} input {:#010x} ({x:e}) sat={}: ml_dtypes {m:#x}",
                    x.to_bits(),
                    policy.saturate_fp8
                );
            }
            // The slice path agrees.
            let mut dst = vec![0u8; xs.len() * f.container_bytes()];
            from_f32_slice(&xs, &mut dst, f, &policy).unwrap();
            assert_eq!(codes(&dst, bits.max(8)), want, "{f} slice");
        }
    }
}

#[test]
fn narrowing_to_integers_device_and_reference() {
    for (f, bits) in INTS {
        let (inputs, arrs) = narrow_table(f.name(), bits, 2);
        let (rne, trunc) = (&arrs[0], &arrs[1]);
        for (i, &b) in inputs.iter().enumerate() {
            let x = f32::from_bits(b);
            assert_eq!(
                from_f32(f, x, &CastPolicy::REFERENCE),
                rne[i],
                "{f} RNE {b:#010x} ({x:e})"
            );
            assert_eq!(
                from_f32(f, x, &CastPolicy::DEVICE),
                trunc[i],
                "{f} trunc {b:#010x} ({x:e})"
            );
        }
        // Through the slice API from fp32 bytes.
        let src: Vec<u8> = inputs.iter().flat_map(|b| b.to_le_bytes()).collect();
        let mut dst = vec![0u8; inputs.len() * f.container_bytes()];
        cast_slice(&src, NumFormat::Float32, &mut dst, f, &CastPolicy::DEVICE).unwrap();
        assert_eq!(&codes(&dst, bits), trunc, "{f} slice");
    }
}

// ---------------------------------------------------------------------------------------------
// MX against the numpy reference.

#[derive(serde::Deserialize)]
struct MxCases {
    cases: Vec<MxCase>,
}

#[derive(serde::Deserialize)]
struct MxCase {
    data_format: String,
    source_format: String,
    partitions: usize,
    free: usize,
    alt_emax: bool,
    source: [usize; 2],
    data: [usize; 2],
    scale: [usize; 2],
    scale_rows: usize,
    dequant_scale: [usize; 2],
    dequant: [usize; 2],
}

#[test]
fn mx_quantize_and_dequantize_match_the_numpy_reference() {
    let text = std::fs::read_to_string(data_dir().join("mx.json")).unwrap();
    let cases: MxCases = serde_json::from_str(&text).unwrap();
    let blob = load("mx.bin.gz");
    let part = |r: [usize; 2]| &blob[r[0]..r[0] + r[1]];
    assert!(cases.cases.len() >= 20);
    let mut nan_blocks = 0;
    let mut zero_blocks = 0;
    for (k, c) in cases.cases.iter().enumerate() {
        let data_format: NumFormat = c.data_format.parse().unwrap();
        let src_format: NumFormat = c.source_format.parse().unwrap();
        let shape = mx::MxShape {
            partitions: c.partitions,
            free: c.free,
        };
        let config = mx::MxConfig {
            alt_emax: c.alt_emax,
            ..Default::default()
        };
        let mut data = vec![0u8; part(c.data).len()];
        let mut scale = vec![0u8; part(c.scale).len()];
        assert_eq!(scale.len(), c.scale_rows * shape.scale_row_bytes());
        mx::quantize(
            part(c.source),
            src_format,
            shape,
            data_format,
            &mut data,
            &mut scale,
            &config,
        )
        .unwrap();
        let what = format!(
            "case {k}: {} from {} {}×{} alt={}",
            c.data_format, c.source_format, c.partitions, c.free, c.alt_emax
        );
        assert_eq!(scale, part(c.scale), "{what}: scales");
        assert_eq!(data, part(c.data), "{what}: data");
        nan_blocks += scale.iter().filter(|&&s| s > 200).count();
        zero_blocks += scale.iter().filter(|&&s| s == 1).count();

        let mut out = vec![0f32; shape.elements()];
        mx::dequantize(
            &data,
            data_format,
            part(c.dequant_scale),
            shape,
            &mut out,
            &config,
        )
        .unwrap();
        let want = u32s(part(c.dequant));
        for (i, (g, &w)) in out.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w, "{what}: dequant element {i}");
        }
    }
    assert!(
        nan_blocks > 0 && zero_blocks > 0,
        "the cases cover NaN/Inf and zero blocks"
    );
}
