use super::super::alu::TileShape;
use super::*;

fn testdata(name: &str) -> String {
    format!(
        "{}/../testdata/numerics/compute/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(testdata(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Distance in units in the last place (ordered-integer distance; ±0 coincide).
fn ulps(a: f32, b: f32) -> u64 {
    let key = |v: f32| {
        let b = v.to_bits();
        if b & 0x8000_0000 != 0 {
            -((b & 0x7FFF_FFFF) as i64)
        } else {
            b as i64
        }
    };
    key(a).abs_diff(key(b))
}

#[test]
fn function_codes() {
    for (i, f) in ActFunction::all().enumerate() {
        assert_eq!(f as usize, i, "table order");
        assert_eq!(ActFunction::from_name(f.name()), Some(f));
        if let Some(w) = f.wire() {
            assert_eq!(ActFunction::from_wire(w), Ok(f));
        }
        if let Some(b) = f.bir() {
            assert_eq!(ActFunction::from_bir(b), Ok(f));
        }
    }
    assert_eq!(ActFunction::all().count(), 34);
    assert_eq!(ActFunction::all().filter(|f| f.bir().is_some()).count(), 30);
    assert_eq!(
        ActFunction::all().filter(|f| f.wire().is_some()).count(),
        31
    );
    assert_eq!(ActFunction::all().filter(|f| f.is_hardwired()).count(), 13);
    assert_eq!(ActFunction::from_wire(130), Ok(ActFunction::MemsetZero));
    assert_eq!(ActFunction::from_wire(36), Ok(ActFunction::Silu));
    assert_eq!(ActFunction::from_bir(9), Ok(ActFunction::Sqrt));
    assert_eq!(ActFunction::Sqrt.wire(), Some(8));
    assert_eq!(
        ActFunction::from_bir(30),
        Err(ActError::UnknownBirFunction(30))
    );
    assert_eq!(ActFunction::from_wire(0), Err(ActError::UnknownFunction(0)));
    assert_eq!(
        ActFunction::from_wire(11),
        Err(ActError::UnknownFunction(11))
    );
}

#[test]
fn closed_forms_are_within_one_ulp_of_the_correctly_rounded_reference() {
    let index: serde_json::Value =
        serde_json::from_slice(&read("act_reference.json")).expect("reference index");
    let pairs = read("act_reference.bin");
    let word = |i: usize| u32::from_le_bytes(pairs[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let funcs = index["functions"].as_object().expect("functions");
    let mut seen = 0;
    let (mut total, mut exact) = (0usize, 0usize);
    for (name, entry) in funcs {
        let func = ActFunction::from_name(name).unwrap_or_else(|| panic!("unknown {name}"));
        let offset = entry["offset"].as_u64().expect("offset") as usize;
        let count = entry["count"].as_u64().expect("count") as usize;
        let alpha = entry.get("alpha").and_then(|a| a.as_f64()).unwrap_or(0.0) as f32;
        assert!(count >= 1000, "{name}: {count} samples");
        for i in offset..offset + count {
            let x = f32::from_bits(word(2 * i));
            let want = f32::from_bits(word(2 * i + 1));
            let got = ClosedForm::value(func, x, alpha);
            if want.is_nan() {
                assert!(got.is_nan(), "{name}({x:e}) = {got:e}, want NaN");
                continue;
            }
            let d = ulps(got, want);
            assert!(
                d <= 1,
                "{name}({x:e} / {:#010x}) = {got:e}, want {want:e}: {d} ulp",
                x.to_bits()
            );
            total += 1;
            exact += (d == 0) as usize;
        }
        seen += 1;
    }
    assert_eq!(seen, 34, "every function has references");
    // One rounding of an f64 value: nearly always the correctly rounded result.
    assert!(
        exact as f64 >= 0.999 * total as f64,
        "{exact} of {total} exact"
    );
}

#[test]
fn closed_form_special_values() {
    use ActFunction::*;
    let v = |f, x| ClosedForm::value(f, x, 0.0);
    assert_eq!(v(Relu, -0.0).to_bits(), 0, "relu(-0) = +0");
    assert_eq!(v(Relu, f32::NAN), 0.0);
    assert_eq!(v(Sign, f32::NAN), 0.0);
    assert_eq!(v(Sign, -0.0), 0.0);
    assert!(v(Sqrt, -1.0).is_nan());
    assert!(v(Ln, -1.0).is_nan());
    assert_eq!(v(Ln, 0.0), f32::NEG_INFINITY);
    assert_eq!(v(Rsqrt, 0.0), f32::INFINITY);
    assert_eq!(v(Exp, 89.0), f32::INFINITY);
    assert_eq!(v(Sigmoid, f32::NEG_INFINITY), 0.0);
    assert_eq!(v(Sigmoid, f32::INFINITY), 1.0);
    for f in [Gelu, Mish, GeluApprxTanh, GeluApprxSigmoid, Silu] {
        assert_eq!(v(f, f32::NEG_INFINITY).to_bits(), 0x8000_0000, "{f}(-inf)");
        assert_eq!(v(f, f32::INFINITY), f32::INFINITY, "{f}(inf)");
    }
    for f in [DerivativeGelu, DerivativeGeluApprxSigmoid, DerivativeSilu] {
        assert_eq!(
            (v(f, f32::NEG_INFINITY), v(f, f32::INFINITY)),
            (0.0, 1.0),
            "{f}"
        );
    }
    assert_eq!(v(DerivativeErf, f32::INFINITY), 0.0);
    assert_eq!(v(Softplus, f32::INFINITY), f32::INFINITY);
    assert_eq!(v(IsFinite, f32::NAN), 0.0);
    assert_eq!(v(DerivativeSilu, 0.0), 0.5);
    assert_eq!(v(DerivativeGelu, 0.0), 0.5);
    assert_eq!(ClosedForm::value(Prelu, -2.0, 0.25), -0.5);
    assert_eq!(
        ClosedForm::value(Lrelu, -2.0, 0.25),
        -0.02,
        "slope 0.01 whatever alpha"
    );
    assert_eq!(v(DerivativeLeakyRelu, -3.0), 0.01);
}

#[test]
fn leaky_relu_rounds_once_and_prelu_is_an_fp32_product() {
    use ActFunction::*;
    // -5 × 0.01: the f64 product rounded once to fp32 is 0xBD4CCCCD; -5 × fl32(0.01) in fp32
    // is 0xBD4CCCCC.
    assert_eq!(ClosedForm::value(Lrelu, -5.0, 0.0).to_bits(), 0xBD4C_CCCD);
    assert_eq!(ClosedForm::value(Prelu, -5.0, 0.01).to_bits(), 0xBD4C_CCCC);
}

#[test]
fn gelu_and_silu_round_the_f64_tie_of_odd_subnormals_to_even() {
    use ActFunction::*;
    // For a subnormal x, erfc(−x/√2) and σ(x) are 1 and ½ in f64, so the f64 value is x/2
    // exactly: a tie for an odd multiple k of 2^−149, which goes to even. The true value is
    // x/2 + O(x²) > x/2, so the correctly rounded result is ⌈k/2⌉ for k ≡ 1 (mod 4) and for
    // k ≡ 3 (mod 4) with x < 0: 1 ulp away (docs/numerics.md, §9).
    // (k, the result's magnitude in units of 2^−149, the correctly rounded magnitude); the
    // results carry the sign of x.
    for f in [Gelu, Silu] {
        for (k, closed, correctly_rounded) in [
            (1i32, 0u32, 1u32),
            (3, 2, 2),
            (5, 2, 3),
            (-1, 0, 0),
            (-3, 2, 1),
            (-5, 2, 2),
        ] {
            let sign = if k < 0 { 0x8000_0000 } else { 0 };
            let x = f32::from_bits(sign | k.unsigned_abs());
            let got = ClosedForm::value(f, x, 0.0);
            assert_eq!(got.to_bits(), sign | closed, "{f} at {k}·2^-149");
            let want = f32::from_bits(sign | correctly_rounded);
            assert_eq!(
                ulps(got, want),
                u64::from(closed != correctly_rounded),
                "{f} at {k}·2^-149"
            );
        }
    }
}

fn sigmoid_table() -> PwpTable {
    PwpTable::from_json(&String::from_utf8(read("pwp_sigmoid.json")).expect("utf8"))
        .expect("sigmoid table")
}

fn tanh_table() -> PwpTable {
    PwpTable::from_json(&String::from_utf8(read("pwp_tanh.json")).expect("utf8"))
        .expect("tanh table")
}

/// Dense inputs over ±`hi` (linear) plus log-spaced magnitudes down to 2^-30.
fn dense(hi: f32) -> Vec<f32> {
    let mut xs: Vec<f32> = (0..=20000)
        .map(|i| -hi + 2.0 * hi * i as f32 / 20000.0)
        .collect();
    let mut m = 2f32.powi(-30);
    while m < hi {
        xs.push(m);
        xs.push(-m);
        m *= 1.013;
    }
    xs
}

#[test]
fn pwp_sigmoid_within_stated_tolerance() {
    let t = sigmoid_table();
    assert_eq!(t.function(), ActFunction::Sigmoid);
    let mut worst = 0.0f64;
    for x in dense(140.0) {
        let (got, want) = (
            t.eval(x).expect("eval"),
            ClosedForm::value(ActFunction::Sigmoid, x, 0.0),
        );
        let err = (got as f64 - want as f64).abs();
        worst = worst.max(err);
        assert!(
            err <= 2f64.powi(-22),
            "sigmoid({x:e}) = {got:e}, closed {want:e}"
        );
    }
    assert!(
        worst > 0.0,
        "the table is an approximation, not the closed form"
    );
    assert_eq!(t.eval(0.0).expect("eval"), 0.5);
    assert_eq!(t.eval(-0.0).expect("eval"), 0.5);
    assert_eq!(t.eval(f32::INFINITY).expect("eval"), 1.0);
    assert_eq!(t.eval(f32::NEG_INFINITY).expect("eval"), 0.0);
    assert_eq!(t.eval(1.0e30).expect("eval"), 1.0, "high clamp");
    assert_eq!(t.eval(-1.0e30).expect("eval"), 0.0, "negative high clamp");
    assert!(
        t.eval(f32::NAN).expect("eval").is_nan(),
        "NaN falls through the polynomial"
    );
}

#[test]
fn pwp_tanh_symmetry_fold_within_stated_tolerance() {
    let t = tanh_table();
    assert!(t.symmetry().enabled && t.symmetry().invert_sign);
    for x in dense(30.0) {
        let (got, want) = (
            t.eval(x).expect("eval"),
            ClosedForm::value(ActFunction::Tanh, x, 0.0),
        );
        assert!(
            ulps(got, want) <= 2,
            "tanh({x:e}) = {got:e}, closed {want:e}"
        );
        if x != 0.0 {
            assert_eq!(
                t.eval(-x).expect("eval").to_bits(),
                (-got).to_bits(),
                "odd reconstruction"
            );
        }
    }
    assert_eq!(t.eval(f32::NEG_INFINITY).expect("eval"), -1.0);
}

const MINIMAL: &str = r#"{"format":"tpbsim-pwp/1","function":"exp",
 "symmetry":{"enabled":false,"invert_sign":false,"use_neg_region":false,"point":0},
 "results":{"zero":1,"nan":"nan","pos_inf":"inf","neg_inf":0},
 "saturation":{
  "pos_high":{"exponent":128,"mantissa":0,"section":[0,"0x7f800000",0,0,0]},
  "pos_low":{"exponent":126,"mantissa":0,"section":[0,1,1,0,0]},
  "neg_high":{"exponent":128,"mantissa":0,"section":[0,0,0,0,0]},
  "neg_low":{"exponent":0,"mantissa":0,"section":[0,1,0,0,0]}},
 "pos_regions":[{"exponent":0,"extract_size":1,"sections":[[1,2,3,0,0],[1.5,4,0,0,0]]}],
 "neg_regions":[]}"#;

#[test]
fn pwp_json_format_and_errors() {
    let t = PwpTable::from_json(MINIMAL).expect("minimal table");
    assert_eq!(
        t.eval(1.25).expect("eval"),
        2.0 + 3.0 * 0.25,
        "bucket 0 of octave 0"
    );
    assert_eq!(t.eval(1.75).expect("eval"), 4.0, "bucket 1 of octave 0");
    assert_eq!(
        t.eval(2.5).expect("eval"),
        f32::INFINITY,
        "high clamp from hex bits"
    );
    assert_eq!(t.eval(0.25).expect("eval"), 1.25, "low clamp");
    assert!(matches!(
        t.eval(-0.5),
        Err(PwpError::UnhandledSection { .. })
    ));
    let bad = |from: &str, to: &str| PwpTable::from_json(&MINIMAL.replace(from, to));
    assert!(matches!(
        bad("tpbsim-pwp/1", "tpbsim-pwp/9"),
        Err(PwpError::Invalid(_))
    ));
    assert!(matches!(
        bad("\"exp\"", "\"nope\""),
        Err(PwpError::Invalid(_))
    ));
    assert!(matches!(
        bad("\"extract_size\":1", "\"extract_size\":2"),
        Err(PwpError::Invalid(_))
    ));
    assert!(
        matches!(
            bad("[1.5,4,0,0,0]", "[1.5,4,0,0,0.1]"),
            Err(PwpError::Invalid(_))
        ),
        "0.1 is no f32"
    );
    assert!(matches!(
        bad("\"0x7f800000\"", "\"huge\""),
        Err(PwpError::Invalid(_))
    ));
    assert!(matches!(
        bad("\"mantissa\":0,", "\"mantissa\":-1,"),
        Err(PwpError::Invalid(_))
    ));
    assert!(matches!(
        bad("\"neg_regions\":[]", "\"neg_regions\":5"),
        Err(PwpError::Json(_))
    ));
    let dup = MINIMAL.replace(
        "\"neg_regions\":[]",
        "\"neg_regions\":[{\"exponent\":3,\"extract_size\":0,\"sections\":[[0,0,0,0,0]]},{\"exponent\":3,\"extract_size\":0,\"sections\":[[0,0,0,0,0]]}]",
    );
    assert!(matches!(
        PwpTable::from_json(&dup),
        Err(PwpError::Invalid(_))
    ));
}

#[test]
fn pwp_evaluator_needs_tables_for_table_functions() {
    let mut e = PwpEvaluator::new();
    assert_eq!(
        e.eval(ActFunction::Sigmoid, 1.0, 0.0),
        Err(ActError::TableNotLoaded(ActFunction::Sigmoid))
    );
    assert_eq!(e.eval(ActFunction::Relu, -1.0, 0.0), Ok(0.0));
    assert_eq!(e.eval(ActFunction::Prelu, -1.0, 0.5), Ok(-0.5));
    e.insert(sigmoid_table());
    let via_table = e.eval(ActFunction::Sigmoid, 0.3, 0.0).expect("table");
    assert_eq!(via_table, sigmoid_table().eval(0.3).expect("eval"));
    assert!(e.table(ActFunction::Sigmoid).is_some());
    assert!(e.eval(ActFunction::Exp, 1.0, 0.0).is_err());
}

#[test]
fn activate_applies_scale_bias_and_accumulates() {
    let shape = TileShape::new(2, &[3]).expect("shape");
    let src = [1.0, 2.0, 3.0, 0.1, 0.2, 0.3];
    let mut out = [0.0; 6];
    let mut regs = Accumulators::new();
    activate(
        &ClosedForm,
        ActFunction::Identity,
        shape,
        &src,
        Scalar::PerPartition(&[2.0, 3.0]),
        Scalar::Imm(1.0),
        0.0,
        &mut out,
        Some(AccumulateInto {
            regs: &mut regs,
            cmd: AccumCmd::ZeroAccumulate,
            seed: None,
        }),
    )
    .expect("activate");
    let expect: Vec<f32> = [
        (1.0f32, 2.0f32),
        (2.0, 2.0),
        (3.0, 2.0),
        (0.1, 3.0),
        (0.2, 3.0),
        (0.3, 3.0),
    ]
    .iter()
    .map(|&(x, k)| x * k + 1.0)
    .collect();
    assert_eq!(out.to_vec(), expect, "two fp32 roundings, no FMA");
    assert_eq!(regs.get(0), Some(3.0 + 5.0 + 7.0));
    assert_eq!(
        regs.get(1),
        Some(((0.1f32 * 3.0 + 1.0) + (0.2f32 * 3.0 + 1.0)) + (0.3f32 * 3.0 + 1.0))
    );
    activate(
        &ClosedForm,
        ActFunction::Square,
        shape,
        &src,
        Scalar::Imm(1.0),
        Scalar::Imm(0.0),
        0.0,
        &mut out,
        Some(AccumulateInto {
            regs: &mut regs,
            cmd: AccumCmd::Accumulate,
            seed: None,
        }),
    )
    .expect("activate");
    assert_eq!(regs.get(0), Some(15.0 + 1.0 + 4.0 + 9.0));
    let e = activate(
        &PwpEvaluator::new(),
        ActFunction::Exp,
        shape,
        &src,
        Scalar::Imm(1.0),
        Scalar::Imm(0.0),
        0.0,
        &mut out,
        None,
    );
    assert_eq!(e, Err(ActError::TableNotLoaded(ActFunction::Exp)));
    let e = activate(
        &ClosedForm,
        ActFunction::Exp,
        shape,
        &src[..5],
        Scalar::Imm(1.0),
        Scalar::Imm(0.0),
        0.0,
        &mut out,
        None,
    );
    assert!(matches!(e, Err(ActError::Alu(AluError::Shape { .. }))));
}

#[test]
fn scale_and_bias_round_twice_not_fused() {
    // x·k = 1 + 2⁻¹¹ + 2⁻²⁴ exactly; rounded to fp32 it is 1 + 2⁻¹¹ (a tie, to even), and
    // adding b = −(1 + 2⁻¹¹) gives 0. A fused multiply-add keeps the 2⁻²⁴.
    let x = 1.0 + 2f32.powi(-12);
    let b = -(1.0 + 2f32.powi(-11));
    assert_ne!(
        x.mul_add(x, b),
        0.0,
        "the inputs separate FMA from two roundings"
    );
    let shape = TileShape::new(1, &[1]).expect("shape");
    let mut out = [f32::NAN; 1];
    activate(
        &ClosedForm,
        ActFunction::Identity,
        shape,
        &[x],
        Scalar::Imm(x),
        Scalar::Imm(b),
        0.0,
        &mut out,
        None,
    )
    .expect("activate");
    assert_eq!(out[0].to_bits(), 0.0f32.to_bits());
}

/// Bits `x` ± 1..=3 ulps (both signs), for boundary inputs.
fn around(xs: &[f32]) -> Vec<f32> {
    let mut out = Vec::new();
    for &x in xs {
        for s in [x, -x] {
            for d in -3i32..=3 {
                out.push(f32::from_bits(s.to_bits().wrapping_add_signed(d)));
            }
        }
    }
    out
}

/// xorshift64* words (fixed seed).
fn random_bits(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
        })
        .collect()
}

const FAST: [ActFunction; 3] = [ActFunction::Exp, ActFunction::Tanh, ActFunction::Sigmoid];

/// The inputs of every class the activation tests use: special values, subnormals, the
/// fast ranges' and the results' boundaries, the committed reference inputs, the dense grids,
/// every 4096th bit pattern and random bit patterns.
fn input_classes() -> Vec<f32> {
    let mut xs = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7F80_0001),
        f32::from_bits(0xFFC1_2345),
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        f32::EPSILON,
        1.0,
        0.5,
    ];
    xs.extend(around(&[
        f32::from_bits(1),
        f32::from_bits(0x007F_FFFF),
        f32::MIN_POSITIVE,
        87.5,
        87.0,
        20.0,
        88.72284,
        103.97208,
        87.33655,
        9.010913,
        2f32.powi(-12),
        2f32.powi(-25),
        0.5 * std::f32::consts::LN_2 / 64.0,
        std::f32::consts::LN_2 / 128.0,
    ]));
    let pairs = read("act_reference.bin");
    xs.extend(
        pairs
            .chunks_exact(8)
            .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])),
    );
    xs.extend(dense(140.0));
    xs.extend(dense(30.0));
    xs.extend((0..1u32 << 20).map(|i| f32::from_bits(i << 12 | (i & 0xFFF))));
    xs.extend(random_bits(1 << 20, 0x5EED).into_iter().map(f32::from_bits));
    // Random values of the fast ranges (random bits are mostly outside them).
    xs.extend(
        random_bits(1 << 18, 77)
            .into_iter()
            .map(|b| (b as f32 / u32::MAX as f32 - 0.5) * 180.0),
    );
    xs
}

fn assert_same_bits(lp: Loop, func: ActFunction, xs: &[f32]) {
    let mut fast = xs.to_vec();
    ClosedForm::values_up_to(lp, func, &mut fast, 0.0);
    for (&x, &got) in xs.iter().zip(&fast) {
        let want = ClosedForm::value(func, x, 0.0);
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "{func}({x:e} / {:#010x}) on the {lp:?} loop: fast {got:e}, closed form {want:e}",
            x.to_bits()
        );
    }
}

#[test]
fn fast_evaluator_matches_the_closed_form_on_every_input_class() {
    let xs = input_classes();
    for lp in Loop::available() {
        for func in FAST {
            assert_same_bits(lp, func, &xs);
            // Every length of tail after the blocks of eight, and odd offsets.
            for len in 0..24 {
                assert_same_bits(lp, func, &xs[3..3 + len]);
            }
        }
    }
}

#[test]
fn wider_loops_compute_the_fused_approximation_bit_for_bit() {
    // The margin argument (fast.rs) holds for the fused approximation; the wider loops must
    // compute exactly it, the portable loop the split one.
    let mut xs = input_classes();
    xs.truncate(xs.len() / 8 * 8);
    for lp in Loop::available() {
        for func in FAST {
            let got = fast::test_approximations(func, lp, &xs);
            assert_eq!(got.len(), xs.len(), "{func} on {lp:?}");
            type Form = fn(f64) -> f64;
            let (fused, split): (Form, Form) = match func {
                ActFunction::Exp => (fast::exp64::<fast::Fused>, fast::exp64::<fast::Split>),
                ActFunction::Tanh => (fast::tanh64::<fast::Fused>, fast::tanh64::<fast::Split>),
                _ => (
                    fast::sigmoid64::<fast::Fused>,
                    fast::sigmoid64::<fast::Split>,
                ),
            };
            let want = if lp == Loop::Portable { split } else { fused };
            let mut compared = 0;
            for (&x, &y) in xs.iter().zip(&got) {
                // Outside the ranges the values are not used (and NaN payloads may differ).
                let inside = f64::from(x).abs() <= 87.5;
                if !inside {
                    continue;
                }
                let w = want(f64::from(x));
                assert_eq!(
                    y.to_bits(),
                    w.to_bits(),
                    "{func}({x:e}) on {lp:?}: {y:e}, scalar {w:e}"
                );
                compared += 1;
            }
            assert!(compared > 100_000, "{func} on {lp:?}: {compared}");
        }
    }
}

#[test]
fn wider_loops_keep_exactly_the_approximations_the_portable_test_keeps() {
    // Approximations at the edges of the guard: low 29 bits around the rounding midpoint
    // ± MARGIN, magnitudes around the smallest normal f32 and 2^128, specials; both signs.
    let (half, margin) = (1u64 << 28, fast::MARGIN);
    let mut ys = Vec::new();
    for exp in [0u64, 1, 896, 897, 898, 1023, 1150, 1151, 1152, 2046, 2047] {
        for low in [
            0,
            1,
            half - margin - 1,
            half - margin,
            half - margin + 1,
            half - 1,
            half,
            half + 1,
            half + margin - 1,
            half + margin,
            half + margin + 1,
            (1 << 29) - 1,
        ] {
            for high in [0u64, 1 << 29, ((1 << 23) - 1) << 29] {
                let b = exp << 52 | high | low;
                ys.extend([f64::from_bits(b), f64::from_bits(b | 1 << 63)]);
            }
        }
    }
    ys.extend(
        random_bits(1 << 14, 11)
            .chunks(2)
            .map(|w| f64::from_bits(u64::from(w[0]) << 32 | u64::from(w[1]))),
    );
    ys.truncate(ys.len() / 8 * 8);
    // Inputs at the range's edges (and NaN), repeating.
    let range = 20.0;
    let edge = around(&[20.0, 0.5]);
    let mut xs: Vec<f32> = edge
        .iter()
        .copied()
        .chain([f32::NAN, -f32::NAN, f32::INFINITY])
        .cycle()
        .take(ys.len())
        .collect();
    xs[0] = 20.0;
    let want = fast::test_kept(Loop::Portable, &ys, &xs, range);
    assert!(want.iter().any(|&k| k) && want.iter().any(|&k| !k));
    for lp in Loop::available() {
        let got = fast::test_kept(lp, &ys, &xs, range);
        assert_eq!(got.len(), ys.len(), "{lp:?}");
        for ((&y, &x), (&g, &w)) in ys.iter().zip(&xs).zip(got.iter().zip(&want)) {
            assert_eq!(g, w, "{lp:?}: y {y:e} ({:#018x}), x {x:e}", y.to_bits());
        }
    }
}

#[test]
fn fast_approximations_stay_far_inside_the_rounding_margin() {
    // The fast results are kept only when every f64 within 2^-37 (relative) rounds the same;
    // the approximations must differ from the closed form's f64 values by far less.
    let mut xs: Vec<f64> = (0..=200_000)
        .map(|i| -87.0 + 174.0 * f64::from(i) / 200_000.0)
        .collect();
    xs.extend(random_bits(1 << 18, 3).into_iter().map(|b| {
        let x = f32::from_bits(b & 0x7FFF_FFFF);
        f64::from(if x.is_finite() && x <= 87.0 {
            x
        } else {
            1.0 / x.max(1.0)
        })
    }));
    fn worst<M: fast::MulAdd>(xs: &[f64]) -> [f64; 3] {
        let rel = |a: f64, b: f64| ((a - b) / b).abs();
        let mut worst = [0f64; 3];
        for &d in xs {
            for s in [d, -d] {
                worst[0] = worst[0].max(rel(fast::exp64::<M>(s), s.exp()));
                if s.abs() <= 20.0 && s != 0.0 {
                    worst[1] = worst[1].max(rel(fast::tanh64::<M>(s), s.tanh()));
                }
                worst[2] = worst[2].max(rel(fast::sigmoid64::<M>(s), sigmoid64(s)));
            }
        }
        worst
    }
    for (form, w) in [
        ("fused", worst::<fast::Fused>(&xs)),
        ("split", worst::<fast::Split>(&xs)),
    ] {
        for (func, w) in FAST.iter().zip(w) {
            assert!(
                w < 2f64.powi(-43),
                "{func} ({form}): approximation differs by {w:e} relative"
            );
        }
    }
    assert_eq!(fast::MARGIN, 1 << 16, "2^-37 of the value, see fast.rs");
}

#[test]
fn fast_evaluator_falls_back_rarely_and_only_where_it_must() {
    let xs: Vec<f32> = (0..1 << 16)
        .map(|i| -80.0 + 160.0 * i as f32 / 65536.0)
        .collect();
    let runs = [
        fast::exp as fn(&mut [f32], Loop) -> usize,
        fast::tanh,
        fast::sigmoid,
    ];
    for lp in Loop::available() {
        for (func, run) in FAST.iter().zip(runs) {
            let slow = run(&mut xs.clone(), lp);
            // About 2^17 of the 2^29 low-bit patterns are near a midpoint (plus tanh's ±1
            // tails, outside its range).
            let tails = if *func == ActFunction::Tanh {
                xs.len() * 3 / 4
            } else {
                0
            };
            let limit = tails + xs.len() / 500;
            assert!(
                slow <= limit,
                "{func} on {lp:?}: {slow} closed-form evaluations"
            );
        }
        // Outside the ranges, specials and subnormal results go to the closed form (in a
        // block of eight and in a tail).
        let v = [f32::NAN, 100.0, -100.0, 0.0, f32::INFINITY, 1.0, 1.0, 1.0];
        let (mut block, mut tail) = (v, v);
        assert_eq!(fast::exp(&mut block, lp), 4, "exp(0) = 1 is fast ({lp:?})");
        assert_eq!(fast::exp(&mut tail[..5], lp), 4, "{lp:?}");
        let v = [0.0, 1e-40, 25.0, -1.0, 0.5, 0.5, 0.5, 0.5];
        let (mut block, mut tail) = (v, v);
        assert_eq!(fast::tanh(&mut block, lp), 3, "{lp:?}");
        assert_eq!(fast::tanh(&mut tail[..4], lp), 3, "{lp:?}");
    }
}

/// Every fp32 input of exp, tanh and sigmoid (2^32 each), fast against the closed form,
/// bit for bit, on every loop of the fast evaluator the host has (the closed form computed
/// once per input). `TPBSIM_ALL_2_32` may name some of the functions (`exp,tanh`), and
/// `TPBSIM_ALL_2_32_LOOPS` some of the loops (`Avx2,Avx512`); all of them without. Slow:
/// `cargo test --release -p tpbsim-sim --lib -- --ignored all_2_32`.
#[test]
#[ignore]
fn fast_evaluator_matches_the_closed_form_on_all_2_32_inputs() {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let only_loops = std::env::var("TPBSIM_ALL_2_32_LOOPS").unwrap_or_default();
    let loops: Vec<Loop> = Loop::available()
        .into_iter()
        .filter(|l| only_loops.is_empty() || only_loops.split(',').any(|n| n == format!("{l:?}")))
        .collect();
    assert!(
        !loops.is_empty(),
        "TPBSIM_ALL_2_32_LOOPS={only_loops}: no loop this CPU has"
    );
    let only = std::env::var("TPBSIM_ALL_2_32").unwrap_or_default();
    let funcs: Vec<ActFunction> = FAST
        .into_iter()
        .filter(|f| only.is_empty() || only.split(',').any(|n| n == f.name()))
        .collect();
    assert!(!funcs.is_empty(), "TPBSIM_ALL_2_32={only}: no function");
    for func in funcs {
        let start = std::time::Instant::now();
        let loops = &loops;
        let mismatches: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        let mut bad = vec![0u64; loops.len()];
                        let mut want = vec![0f32; 1 << 16];
                        let mut buf = vec![0f32; 1 << 16];
                        let blocks = (1u64 << 16) / threads + 1;
                        for blk in t * blocks..((t + 1) * blocks).min(1 << 16) {
                            let base = (blk as u32) << 16;
                            for (i, w) in want.iter_mut().enumerate() {
                                *w = ClosedForm::value(func, f32::from_bits(base | i as u32), 0.0);
                            }
                            for (&lp, bad) in loops.iter().zip(&mut bad) {
                                for (i, x) in buf.iter_mut().enumerate() {
                                    *x = f32::from_bits(base | i as u32);
                                }
                                ClosedForm::values_up_to(lp, func, &mut buf, 0.0);
                                for (i, (got, w)) in buf.iter().zip(&want).enumerate() {
                                    if got.to_bits() != w.to_bits() {
                                        *bad += 1;
                                        eprintln!(
                                            "{func}({:#010x}) on {lp:?} differs",
                                            base | i as u32
                                        );
                                    }
                                }
                            }
                        }
                        bad
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .fold(vec![0; loops.len()], |a, b| {
                    a.iter().zip(&b).map(|(x, y)| x + y).collect()
                })
        });
        eprintln!(
            "{func} (loops {loops:?}): 2^32 inputs in {:.1?}",
            start.elapsed()
        );
        for (lp, bad) in loops.iter().zip(mismatches) {
            assert_eq!(bad, 0, "{func} ({lp:?} loop)");
        }
    }
}

/// The wire codes are the spec's `ACT_FUNC` members, one function each, under the spec's name.
#[test]
fn wire_codes_are_the_spec_act_func_members() {
    let members = tpbsim_isa::spec::ByteSet::union_of(&tpbsim_isa::formats::members::ACT_FUNC);
    let wires: Vec<u8> = ActFunction::all().filter_map(|f| f.wire()).collect();
    assert_eq!(wires.len(), members.iter().count());
    for w in members.iter() {
        let f = ActFunction::from_wire(w).unwrap_or_else(|e| panic!("{w:#x}: {e}"));
        assert_eq!(f.wire(), Some(w));
        assert!(tpbsim_isa::ActFunc(w).name().is_some());
    }
}
