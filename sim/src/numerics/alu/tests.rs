use super::*;

fn pool(gen: Gen) -> AluContext {
    AluContext::new(gen, Engine::Pool)
}

fn fp(op: AluOp) -> FpOp {
    pool(Gen::V5).fp_op(op).expect("legal fp op")
}

fn int(op: AluOp, sign: Signedness) -> IntOp {
    pool(Gen::V5).int_op(op, sign).expect("legal int op")
}

#[test]
fn enum_membership_per_generation() {
    let count = |g| AluOp::all().filter(|o| o.exists_in(g)).count();
    assert_eq!(
        [
            count(Gen::V2),
            count(Gen::V3),
            count(Gen::V4),
            count(Gen::V5)
        ],
        [33, 60, 64, 65]
    );
    for b in [0x1Eu8, 0x1F, 0x25, 0x80, 0xC3, 0xE2, 0xFF] {
        assert_eq!(AluOp::from_wire(b), Err(AluError::UnknownOp(b)));
    }
    for op in AluOp::all() {
        assert_eq!(AluOp::from_wire(op.wire()), Ok(op));
        assert_eq!(AluOp::all().filter(|o| o.name() == op.name()).count(), 1);
    }
    assert_eq!(AluOp::SYMMETRIC_CLAMP.since(), Gen::V5);
    assert_eq!(AluOp::SQUARE.since(), Gen::V4);
    assert_eq!(AluOp::DIVIDE_INT.since(), Gen::V3);
    assert_eq!(AluOp::MULT_INT.since(), Gen::V2);
}

#[test]
fn predicate_set_sizes_match_the_header() {
    let n = |f: &dyn Fn(AluOp) -> bool| AluOp::all().filter(|&o| f(o)).count();
    assert_eq!(n(&|o| o.is_bitvec()), 10);
    assert_eq!(n(&|o| o.is_general_bitvec()), 9);
    assert_eq!(n(&|o| o.is_arith(Gen::V3)), 26);
    assert_eq!(n(&|o| o.is_arith(Gen::V4)), 30);
    assert_eq!(n(&|o| o.is_general_arith(Gen::V3)), 17);
    assert_eq!(n(&|o| o.is_general_arith(Gen::V4)), 21);
    assert_eq!(n(&|o| o.is_valid_int_aluop()), 26);
    assert_eq!(n(&|o| o.is_dve_int()), 15);
    assert_eq!(n(&|o| o.is_signed_legal()), 17);
    assert_eq!(n(&|o| o.is_unsigned_legal()), 17);
    assert_eq!(n(&|o| o.is_arg()), 4);
}

#[test]
fn datapath_legality() {
    let dve = AluContext::new(Gen::V4, Engine::Dve);
    assert!(matches!(
        dve.fp_op(AluOp::POW),
        Err(AluError::IllegalOp { .. })
    ));
    assert!(matches!(
        dve.fp_op(AluOp::RSQRT),
        Err(AluError::IllegalOp { .. })
    ));
    assert!(pool(Gen::V2).fp_op(AluOp::POW).is_ok());
    assert!(matches!(
        dve.fp_op(AluOp::MOD),
        Err(AluError::IllegalOp { .. })
    ));
    assert!(matches!(
        dve.fp_op(AluOp::ADD_INT),
        Err(AluError::IllegalOp { .. })
    ));
    assert!(matches!(
        dve.fp_op(AluOp::BITWISE_AND),
        Err(AluError::IllegalOp { .. })
    ));
    assert!(matches!(
        dve.fp_op(AluOp::LOGICAL_SHIFT_LEFT),
        Err(AluError::IllegalOp { .. })
    ));
    assert!(dve.fp_op(AluOp::BYPASS).is_ok());
    assert!(dve.fp_op(AluOp::DIVIDE).is_ok());
    assert!(matches!(
        AluContext::new(Gen::V3, Engine::Dve).fp_op(AluOp::ABS_MAX),
        Err(AluError::NotInGen { since: Gen::V4, .. })
    ));
    assert!(matches!(
        dve.fp_op(AluOp::SYMMETRIC_CLAMP),
        Err(AluError::NotInGen { .. })
    ));
    assert!(AluContext::new(Gen::V5, Engine::Act)
        .fp_op(AluOp::SYMMETRIC_CLAMP)
        .is_ok());
    assert!(matches!(
        AluContext::new(Gen::V4, Engine::Pe).fp_op(AluOp::ADD),
        Err(AluError::NoDatapath { .. })
    ));

    let s = Signedness::Signed;
    let u = Signedness::Unsigned;
    assert!(matches!(
        pool(Gen::V4).int_op(AluOp::DIVIDE, s),
        Err(AluError::IllegalOp { .. })
    ));
    assert!(matches!(
        pool(Gen::V4).int_op(AluOp::POW, s),
        Err(AluError::IllegalOp { .. })
    ));
    assert_eq!(
        pool(Gen::V4).int_op(AluOp::CRC32, u),
        Err(AluError::Unmodelled(AluOp::CRC32))
    );
    assert!(matches!(
        pool(Gen::V4).int_op(AluOp::MAX_INT, u),
        Err(AluError::Signedness { .. })
    ));
    assert!(matches!(
        pool(Gen::V4).int_op(AluOp::MAX_UINT, s),
        Err(AluError::Signedness { .. })
    ));
    assert!(
        pool(Gen::V4).int_op(AluOp::DIVIDE_INT, u).is_ok(),
        "shared op"
    );
    assert!(pool(Gen::V4).int_op(AluOp::AMAX_UINT, u).is_ok());
    assert!(matches!(
        pool(Gen::V2).int_op(AluOp::MOD_INT, s),
        Err(AluError::NotInGen { .. })
    ));
    assert!(pool(Gen::V2).int_op(AluOp::MULT_INT, s).is_ok());
    assert!(matches!(
        AluContext::new(Gen::V4, Engine::Dve).int_op(AluOp::ADD_INT, s),
        Err(AluError::NoDatapath { .. })
    ));
    let dve5 = AluContext::new(Gen::V5, Engine::Dve);
    assert!(dve5.int_op(AluOp::ADD_INT, s).is_ok());
    assert!(matches!(
        dve5.int_op(AluOp::DIVIDE_INT, s),
        Err(AluError::IllegalOp { .. })
    ));
    assert!(matches!(
        AluContext::new(Gen::V5, Engine::Act).int_op(AluOp::ADD, s),
        Err(AluError::NoDatapath { .. })
    ));
}

/// Edge operands for the fp32 datapath.
fn fp_values() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.0,
        7.25,
        -7.25,
        1e-45,
        -1e-45,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0e20,
        -3.0e-20,
        16777217.0,
    ];
    let mut s = 0x1234_5678u32;
    for _ in 0..12 {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        let x = f32::from_bits(s & 0xBFFF_FFFF);
        if x.is_finite() {
            v.push(x);
        }
    }
    v
}

/// The fp32 semantics written a second way: in f64 (exact for +, −, ×, ÷ before the single
/// rounding), with the SSE NaN/tie rule spelled out.
fn fp_reference(op: AluOp, a: f32, b: f32) -> f32 {
    let (x, y) = (a as f64, b as f64);
    let t = |c: bool| if c { 1.0f32 } else { 0.0 };
    let sse_max = |p: f64, q: f64| {
        if p.is_nan() || q.is_nan() || p <= q {
            q
        } else {
            p
        }
    };
    let sse_min = |p: f64, q: f64| {
        if p.is_nan() || q.is_nan() || p >= q {
            q
        } else {
            p
        }
    };
    match op {
        AluOp::BYPASS => a,
        AluOp::ADD => (x + y) as f32,
        AluOp::SUBTRACT => (x - y) as f32,
        AluOp::MULT => (x * y) as f32,
        AluOp::DIVIDE => (x / y) as f32,
        AluOp::MAX => sse_max(x, y) as f32,
        AluOp::MIN => sse_min(x, y) as f32,
        AluOp::LOGICAL_AND => t(x != 0.0 && y != 0.0),
        AluOp::LOGICAL_OR => t(x != 0.0 || y != 0.0),
        AluOp::LOGICAL_XOR => t((x != 0.0) != (y != 0.0)),
        AluOp::IS_EQ => t(x == y),
        AluOp::IS_GT => t(x > y),
        AluOp::IS_GE => t(x >= y),
        AluOp::IS_LE => t(x <= y),
        AluOp::IS_LT => t(x < y),
        AluOp::IS_NE => t(!(x == y)),
        AluOp::ABSOLUTE_DIFF => ((x - y) as f32).abs(),
        AluOp::ABSOLUTE_VALUE => a.abs(),
        AluOp::POW => x.powf(y) as f32,
        AluOp::RSQRT => (1.0 / x.sqrt()) as f32,
        AluOp::ABS_MAX => sse_max(x.abs(), y.abs()) as f32,
        AluOp::ABS_MIN => sse_min(x.abs(), y.abs()) as f32,
        AluOp::RE_LU => sse_max(x, 0.0) as f32,
        AluOp::SQUARE => (x * x) as f32,
        AluOp::SYMMETRIC_CLAMP => {
            if x.is_nan() {
                f32::NAN
            } else if x == 0.0 {
                a
            } else {
                (x.signum() * sse_max(x.abs(), y.abs())) as f32
            }
        }
        other => panic!("{other} is not an fp op"),
    }
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn every_fp_op_matches_the_f64_reference() {
    let vals = fp_values();
    let mut checked = 0;
    for op in AluOp::all() {
        let Ok(h) = pool(Gen::V5).fp_op(op) else {
            continue;
        };
        checked += 1;
        for &a in &vals {
            for &b in &vals {
                let (got, want) = (h.eval(a, b), fp_reference(op, a, b));
                assert!(
                    same(got, want),
                    "{op}({a:e}, {b:e}) = {got:e}, want {want:e}"
                );
            }
        }
    }
    assert_eq!(checked, 25, "fp ops on POOL v5");
}

#[test]
fn fp_nan_and_signed_zero_rules() {
    let max = fp(AluOp::MAX);
    assert_eq!(
        max.eval(f32::NAN, 2.0),
        2.0,
        "NaN first: the second operand"
    );
    assert!(max.eval(2.0, f32::NAN).is_nan(), "NaN second: kept");
    assert!(
        max.eval(0.0, -0.0).is_sign_negative(),
        "tie: the second operand"
    );
    assert!(fp(AluOp::MIN).eval(-0.0, 0.0).is_sign_positive());
    // Two NaNs: MAX and MIN keep the second operand's, sign and payload included.
    let (p, q) = (f32::from_bits(0x7FC0_0001), f32::from_bits(0xFFC0_0002));
    for op in [AluOp::MAX, AluOp::MIN] {
        assert_eq!(fp(op).eval(p, q).to_bits(), 0xFFC0_0002, "{op}");
        assert_eq!(fp(op).eval(q, p).to_bits(), 0x7FC0_0001, "{op}");
        let mut out = [0.0f32; 3];
        tensor_tensor(fp(op), &[p; 3], &[q; 3], &mut out).unwrap();
        assert!(out.iter().all(|o| o.to_bits() == 0xFFC0_0002), "{op} tile");
    }
    assert_eq!(fp(AluOp::RE_LU).eval(f32::NAN, 0.0), 0.0);
    assert_eq!(fp(AluOp::IS_NE).eval(f32::NAN, f32::NAN), 1.0);
    assert_eq!(fp(AluOp::IS_EQ).eval(f32::NAN, f32::NAN), 0.0);
    assert_eq!(
        fp(AluOp::LOGICAL_AND).eval(f32::NAN, 1.0),
        1.0,
        "NaN is truthy"
    );
    assert_eq!(fp(AluOp::LOGICAL_OR).eval(-0.0, 0.0), 0.0);
    assert!(fp(AluOp::DIVIDE).eval(1.0, -0.0).is_infinite());
    assert_eq!(fp(AluOp::SYMMETRIC_CLAMP).eval(-0.5, 2.0), -2.0);
    assert_eq!(fp(AluOp::SYMMETRIC_CLAMP).eval(3.0, -2.0), 3.0);
    assert!(fp(AluOp::SYMMETRIC_CLAMP)
        .eval(-0.0, 5.0)
        .is_sign_negative());
}

fn int_values() -> Vec<u32> {
    let mut v = vec![
        0,
        1,
        2,
        3,
        7,
        31,
        32,
        33,
        0x7FFF_FFFF,
        0x8000_0000,
        0x8000_0001,
        0xFFFF_FFFF,
        0xFFFF_FFFE,
        0xFFFF_FFF9,
        0x0001_0000,
        0x00FF_00FF,
    ];
    let mut s = 0x9E37_79B9u32;
    for _ in 0..10 {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        v.push(s);
    }
    v
}

/// The integer semantics written a second way: in i64 with explicit wrapping to 32 bits.
fn int_reference(op: AluOp, sign: Signedness, a: u32, b: u32) -> u32 {
    let signed = sign == Signedness::Signed;
    let w = |v: i64| (v as u64 & 0xFFFF_FFFF) as u32;
    let sv = |v: u32, s: bool| if s { v as i32 as i64 } else { v as i64 };
    let (x, y) = (sv(a, signed), sv(b, signed));
    let (xs, ys) = (sv(a, true), sv(b, true));
    let (xu, yu) = (a as i64, b as i64);
    let t = |c: bool| c as u32;
    let div = |p: i64, q: i64| if q == 0 { 0 } else { w(p / q) };
    let rem = |p: i64, q: i64| if q == 0 { 0 } else { w(p % q) };
    let sh = (b % 32) as i64;
    match op {
        AluOp::BYPASS => a,
        AluOp::BITWISE_NOT => w(-xu - 1),
        AluOp::ARITH_SHIFT_LEFT | AluOp::LOGICAL_SHIFT_LEFT => w(xu * (1i64 << sh)),
        AluOp::ARITH_SHIFT_RIGHT => w(xs.div_euclid(1i64 << sh)),
        AluOp::LOGICAL_SHIFT_RIGHT => w(xu / (1i64 << sh)),
        AluOp::ADD | AluOp::ADD_INT => w(x + y),
        AluOp::SUBTRACT | AluOp::SUBTRACT_INT => w(x - y),
        AluOp::MULT | AluOp::MULT_INT | AluOp::MULT_UINT => w(x.wrapping_mul(y)),
        AluOp::MAX => w(x.max(y)),
        AluOp::MIN => w(x.min(y)),
        AluOp::BITWISE_AND => a & b,
        AluOp::BITWISE_OR => a | b,
        AluOp::BITWISE_XOR => a ^ b,
        AluOp::LOGICAL_AND => t(x != 0 && y != 0),
        AluOp::LOGICAL_OR => t(x != 0 || y != 0),
        AluOp::LOGICAL_XOR => t((x != 0) != (y != 0)),
        AluOp::IS_EQ | AluOp::IS_EQUAL_INT => t(a == b),
        AluOp::IS_NE | AluOp::IS_NE_INT => t(a != b),
        AluOp::IS_GT => t(x > y),
        AluOp::IS_GE => t(x >= y),
        AluOp::IS_LE => t(x <= y),
        AluOp::IS_LT => t(x < y),
        AluOp::ABSOLUTE_DIFF => w((x - y).abs()),
        AluOp::ABSOLUTE_VALUE => w(x.abs()),
        AluOp::MOD | AluOp::MOD_INT => rem(x, y),
        AluOp::ABS_MAX => w(x.abs().max(y.abs())),
        AluOp::ABS_MIN => w(x.abs().min(y.abs())),
        AluOp::RE_LU => w(x.max(0)),
        AluOp::SQUARE => w(x.wrapping_mul(x)),
        AluOp::SYMMETRIC_CLAMP => w(x.signum() * x.abs().max(y.abs())),
        AluOp::DIVIDE_INT => div(x, y),
        AluOp::ABS_MAX_INT => w(xs.abs().max(ys.abs())),
        AluOp::ABS_MIN_INT => w(xs.abs().min(ys.abs())),
        AluOp::ABS_DIFF_INT => w((xs - ys).abs()),
        AluOp::ABS_VALUE_INT => w(xs.abs()),
        AluOp::MAX_INT => w(xs.max(ys)),
        AluOp::MIN_INT => w(xs.min(ys)),
        AluOp::IS_GT_INT => t(xs > ys),
        AluOp::IS_GE_INT => t(xs >= ys),
        AluOp::IS_LE_INT => t(xs <= ys),
        AluOp::IS_LT_INT => t(xs < ys),
        AluOp::MAX_UINT => w(xu.max(yu)),
        AluOp::MIN_UINT => w(xu.min(yu)),
        AluOp::IS_GT_UINT => t(xu > yu),
        AluOp::IS_GE_UINT => t(xu >= yu),
        AluOp::IS_LE_UINT => t(xu <= yu),
        AluOp::IS_LT_UINT => t(xu < yu),
        AluOp::DIVIDE_UINT => div(xu, yu),
        AluOp::MOD_UINT => rem(xu, yu),
        other => panic!("{other} is not an elementwise int op"),
    }
}

#[test]
fn every_int_op_matches_the_i64_reference() {
    let vals = int_values();
    let mut checked = 0;
    for sign in [Signedness::Signed, Signedness::Unsigned] {
        for op in AluOp::all() {
            let Ok(h) = pool(Gen::V5).int_op(op, sign) else {
                continue;
            };
            if op.is_arg() {
                assert_eq!(h.eval(1, 2), Err(AluError::ReductionOnly(op)));
                continue;
            }
            checked += 1;
            for &a in &vals {
                for &b in &vals {
                    let want = int_reference(op, sign, a, b);
                    assert_eq!(h.eval(a, b), Ok(want), "{op} {sign} ({a:#x}, {b:#x})");
                }
            }
        }
    }
    // base + band ops legal per signedness (arg ops excluded).
    assert_eq!(checked, 95);
}

#[test]
fn int_edges() {
    let s = Signedness::Signed;
    let add = int(AluOp::ADD_INT, s);
    assert_eq!(
        add.eval(i32::MAX as u32, 1),
        Ok(i32::MIN as u32),
        "wrap, no saturation"
    );
    assert_eq!(
        int(AluOp::MULT, s).eval(0x1_0000, 0x1_0000),
        Ok(0),
        "low 32 bits"
    );
    assert_eq!(
        int(AluOp::MULT_UINT, Signedness::Unsigned).eval(0xFFFF_FFFF, 2),
        Ok(0xFFFF_FFFE)
    );
    assert_eq!(int(AluOp::DIVIDE_INT, s).eval(7, 0), Ok(0), "zero divisor");
    assert_eq!(int(AluOp::MOD_INT, s).eval(7, 0), Ok(0));
    assert_eq!(
        int(AluOp::DIVIDE_INT, s).eval(i32::MIN as u32, u32::MAX),
        Ok(i32::MIN as u32)
    );
    assert_eq!(
        int(AluOp::MOD_INT, s).eval(-7i32 as u32, 3),
        Ok(-1i32 as u32),
        "sign of dividend"
    );
    assert_eq!(
        int(AluOp::DIVIDE_INT, s).eval(-7i32 as u32, 2),
        Ok(-3i32 as u32),
        "truncating"
    );
    assert_eq!(
        int(AluOp::ARITH_SHIFT_RIGHT, s).eval(-8i32 as u32, 1),
        Ok(-4i32 as u32)
    );
    assert_eq!(
        int(AluOp::ARITH_SHIFT_RIGHT, Signedness::Unsigned).eval(0x8000_0000, 4),
        Ok(0xF800_0000),
        "arithmetic shift replicates bit 31 whatever the dtype"
    );
    assert_eq!(
        int(AluOp::LOGICAL_SHIFT_RIGHT, s).eval(0x8000_0000, 4),
        Ok(0x0800_0000)
    );
    assert_eq!(
        int(AluOp::LOGICAL_SHIFT_LEFT, s).eval(3, 32),
        Ok(3),
        "amount taken mod 32"
    );
    assert_eq!(int(AluOp::LOGICAL_SHIFT_LEFT, s).eval(3, 33), Ok(6));
    assert_eq!(
        int(AluOp::ABS_VALUE_INT, s).eval(i32::MIN as u32, 0),
        Ok(0x8000_0000),
        "wraps"
    );
    assert_eq!(
        int(AluOp::MAX, Signedness::Unsigned).eval(0xFFFF_FFFF, 1),
        Ok(0xFFFF_FFFF)
    );
    assert_eq!(int(AluOp::MAX, s).eval(0xFFFF_FFFF, 1), Ok(1));
    assert_eq!(
        int(AluOp::IS_LT, Signedness::Unsigned).eval(1, 0xFFFF_FFFF),
        Ok(1)
    );
    assert_eq!(int(AluOp::IS_LT, s).eval(1, 0xFFFF_FFFF), Ok(0));
}

fn shape(p: usize, free: &[usize]) -> TileShape {
    TileShape::new(p, free).expect("shape")
}

#[test]
fn tile_shapes() {
    assert!(TileShape::new(0, &[4]).is_err());
    assert!(TileShape::new(129, &[4]).is_err());
    assert!(TileShape::new(4, &[]).is_err());
    assert!(TileShape::new(4, &[1, 2, 3, 4, 5]).is_err());
    assert!(TileShape::new(4, &[2, 0]).is_err());
    let s = shape(3, &[4, 5]);
    assert_eq!(
        (s.free_len(), s.len(), s.free_dims()),
        (20, 60, [4, 5, 1, 1])
    );
}

#[test]
fn tensor_tensor_fast_paths_equal_the_scalar_op() {
    let vals = fp_values();
    let a: Vec<f32> = vals.iter().cycle().take(1000).copied().collect();
    let b: Vec<f32> = vals.iter().rev().cycle().take(1000).copied().collect();
    for op in [
        AluOp::ADD,
        AluOp::SUBTRACT,
        AluOp::MULT,
        AluOp::MAX,
        AluOp::MIN,
        AluOp::BYPASS,
        AluOp::IS_GE,
    ] {
        let h = fp(op);
        let mut out = vec![0.0; 1000];
        tensor_tensor(h, &a, &b, &mut out).expect("tt");
        for i in 0..1000 {
            assert!(same(out[i], fp_reference(op, a[i], b[i])), "{op} at {i}");
        }
    }
    let ia: Vec<u32> = int_values().iter().cycle().take(300).copied().collect();
    let ib: Vec<u32> = int_values()
        .iter()
        .rev()
        .cycle()
        .take(300)
        .copied()
        .collect();
    for op in [AluOp::ADD_INT, AluOp::SUBTRACT, AluOp::MULT_INT, AluOp::MIN] {
        let h = int(op, Signedness::Signed);
        let mut out = vec![0; 300];
        tensor_tensor(h, &ia, &ib, &mut out).expect("tt");
        for i in 0..300 {
            assert_eq!(
                out[i],
                int_reference(op, Signedness::Signed, ia[i], ib[i]),
                "{op}"
            );
        }
    }
}

#[test]
fn tensor_tensor_errors() {
    let mut out = vec![0.0; 3];
    assert!(matches!(
        tensor_tensor(fp(AluOp::ADD), &[1.0, 2.0, 3.0], &[1.0, 2.0], &mut out),
        Err(AluError::Shape { what: "src1", .. })
    ));
    let mut iout = vec![0u32; 2];
    assert_eq!(
        tensor_tensor(
            int(AluOp::AMAX_INT, Signedness::Signed),
            &[1, 2],
            &[3, 4],
            &mut iout
        ),
        Err(AluError::ReductionOnly(AluOp::AMAX_INT))
    );
}

#[test]
fn tensor_scalar_order_reverse_and_per_partition_scalars() {
    let sh = shape(2, &[3]);
    let src = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0];
    let mut out = [0.0; 6];
    let sub = fp(AluOp::SUBTRACT);
    let mult = fp(AluOp::MULT);
    // (x - s0) * s1
    tensor_scalar(
        sub,
        Scalar::Imm(1.0),
        mult,
        Scalar::PerPartition(&[2.0, 3.0]),
        Reverse::default(),
        sh,
        &src,
        &mut out,
    )
    .expect("ts");
    assert_eq!(out, [0.0, 2.0, 4.0, 27.0, 57.0, 87.0]);
    // (s0 - x) then BYPASS
    let rev = Reverse::from_wire(1).expect("rev");
    tensor_scalar(
        sub,
        Scalar::PerPartition(&[0.0, 100.0]),
        fp(AluOp::BYPASS),
        Scalar::Imm(9.0),
        rev,
        sh,
        &src,
        &mut out,
    )
    .expect("ts");
    assert_eq!(out, [-1.0, -2.0, -3.0, 90.0, 80.0, 70.0]);
    // s1 - (x - s0)
    let rev = Reverse::from_wire(2).expect("rev");
    tensor_scalar(
        sub,
        Scalar::Imm(1.0),
        sub,
        Scalar::Imm(0.0),
        rev,
        sh,
        &src,
        &mut out,
    )
    .expect("ts");
    assert_eq!(out, [0.0, -1.0, -2.0, -9.0, -19.0, -29.0]);
    assert!(Reverse::from_wire(4).is_err());
    assert!(matches!(
        tensor_scalar(
            sub,
            Scalar::PerPartition(&[1.0]),
            sub,
            Scalar::Imm(0.0),
            rev,
            sh,
            &src,
            &mut out
        ),
        Err(AluError::Shape {
            what: "scalar0",
            ..
        })
    ));
}

#[test]
fn iota_memset_select_copy() {
    let sh = shape(2, &[3, 2]);
    let mut out = vec![0i32; 12];
    iota(
        Iota {
            base: 5,
            channel_multiplier: 100,
            steps: [1, 10, 0, 0],
        },
        sh,
        &mut out,
    )
    .expect("iota");
    assert_eq!(out, [5, 6, 7, 15, 16, 17, 105, 106, 107, 115, 116, 117]);
    iota(
        Iota {
            base: i32::MAX,
            channel_multiplier: 0,
            steps: [1, 0, 0, 0],
        },
        shape(1, &[2]),
        &mut out[..2],
    )
    .expect("iota");
    assert_eq!(&out[..2], &[i32::MAX, i32::MIN], "wraps");

    let mut m = [1.5f32; 4];
    memset(&mut m, -0.0);
    assert!(m.iter().all(|v| v.to_bits() == 0x8000_0000));

    let mut sel = [0.0f32; 3];
    select(
        &[1u8, 0, 255],
        &[1.0, 2.0, 3.0],
        &[-1.0, -2.0, -3.0],
        &mut sel,
    )
    .expect("select");
    assert_eq!(sel, [1.0, -2.0, 3.0]);

    let mut dst = [7u32, 7, 7, 7];
    copy_predicated(&[0i32, 1, 0, -1], &[1u32, 2, 3, 4], &mut dst).expect("cp");
    assert_eq!(dst, [7, 2, 7, 4], "unselected lanes keep the old value");

    let mut cast = [0.5f32; 3];
    cast_predicated(&[1u16, 0, 1], &[3i32, 4, -5], &mut cast, |v| v as f32).expect("cast");
    assert_eq!(cast, [3.0, 0.5, -5.0]);

    let nan = f32::from_bits(0x7FA0_0001);
    let mut c = [0.0f32; 2];
    copy(&[nan, -0.0], &mut c).expect("copy");
    assert_eq!(c.map(f32::to_bits), [0x7FA0_0001, 0x8000_0000], "bit-exact");
    assert!(copy(&[1.0f32], &mut c).is_err());
}

#[test]
fn cast_goes_through_the_cast_engine() {
    let src: Vec<u8> = [1.5f32, -2.75, 1e10]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let mut dst = vec![0u8; 6];
    let n = cast_tile(
        &src,
        NumFormat::Float32,
        &mut dst,
        NumFormat::Bfloat16,
        &CastPolicy::DEVICE,
    )
    .expect("cast");
    assert_eq!(n, 3);
    assert_eq!(dst, [0xC0, 0x3F, 0x30, 0xC0, 0x15, 0x50]);
    let mut ints = vec![0u8; 12];
    cast_tile(
        &src,
        NumFormat::Float32,
        &mut ints,
        NumFormat::Int32,
        &CastPolicy::DEVICE,
    )
    .expect("cast");
    let ints: Vec<i32> = ints
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().expect("4")))
        .collect();
    assert_eq!(
        ints,
        [1, -2, i32::MAX],
        "device path truncates and saturates"
    );
    assert!(cast_tile(
        &src[..5],
        NumFormat::Float32,
        &mut dst,
        NumFormat::Bfloat16,
        &CastPolicy::DEVICE
    )
    .is_err());
}

#[test]
fn scalar_tensor_tensor_order_and_reverse() {
    let s = TileShape::new(2, &[3]).expect("shape");
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let b = [10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0];
    let col = [2.0f32, -1.0];
    let (sub, mult) = (fp(AluOp::SUBTRACT), fp(AluOp::MULT));
    let mut out = [0.0f32; 6];
    // (a − s) × b, s per partition.
    scalar_tensor_tensor(
        sub,
        Scalar::PerPartition(&col),
        mult,
        Reverse::default(),
        s,
        &a,
        &b,
        &mut out,
    )
    .expect("stt");
    for i in 0..6 {
        assert_eq!(out[i], (a[i] - col[i / 3]) * b[i]);
    }
    // b − (s − a), both stages reversed.
    let rev = Reverse::from_wire(3).expect("rev");
    scalar_tensor_tensor(sub, Scalar::Imm(0.5), sub, rev, s, &a, &b, &mut out).expect("stt");
    for i in 0..6 {
        assert_eq!(out[i], b[i] - (0.5 - a[i]));
    }
    // Integer bit-vector form: (x ^ s) & y.
    let (xor, and) = (
        int(AluOp::BITWISE_XOR, Signedness::Unsigned),
        int(AluOp::BITWISE_AND, Signedness::Unsigned),
    );
    let x = [0xF0u32, 0x0F, 0xFF];
    let y = [0x3Cu32, 0xFF, 0x0F];
    let mut o = [0u32; 3];
    let one = TileShape::new(1, &[3]).expect("shape");
    scalar_tensor_tensor(
        xor,
        Scalar::Imm(0xAA),
        and,
        Reverse::default(),
        one,
        &x,
        &y,
        &mut o,
    )
    .expect("stt");
    assert_eq!(
        o,
        [
            (0xF0 ^ 0xAA) & 0x3C,
            (0x0F ^ 0xAA) & 0xFF,
            (0xFF ^ 0xAA) & 0x0F
        ]
    );
    assert!(matches!(
        scalar_tensor_tensor(
            xor,
            Scalar::Imm(0),
            and,
            Reverse::default(),
            s,
            &x,
            &y,
            &mut o
        ),
        Err(AluError::Shape { .. })
    ));
}

#[test]
fn an_integer_ops_identity_leaves_every_value_as_it_is() {
    // The ops whose identity is a true one: op(identity, x) = x for every x.
    let ops = [
        AluOp::ADD,
        AluOp::ADD_INT,
        AluOp::MULT,
        AluOp::MULT_INT,
        AluOp::MULT_UINT,
        AluOp::BITWISE_AND,
        AluOp::BITWISE_OR,
        AluOp::BITWISE_XOR,
        AluOp::MAX,
        AluOp::MAX_INT,
        AluOp::MAX_UINT,
        AluOp::MIN,
        AluOp::MIN_INT,
        AluOp::MIN_UINT,
    ];
    let values = [0u32, 1, 5, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, u32::MAX];
    let mut tried = 0;
    for op in ops {
        for sign in [Signedness::Signed, Signedness::Unsigned] {
            let Ok(o) = pool(Gen::V5).int_op(op, sign) else {
                continue;
            };
            let id = o.identity().unwrap_or_else(|| panic!("{op:?} {sign:?}"));
            for x in values {
                assert_eq!(
                    o.apply(id, x),
                    x,
                    "{op:?} {sign:?} identity {id:#x}, x {x:#x}"
                );
                assert_eq!(
                    o.apply(x, id),
                    x,
                    "{op:?} {sign:?} identity {id:#x}, x {x:#x}"
                );
            }
            tried += 1;
        }
    }
    assert!(tried >= 20, "{tried}");
}
