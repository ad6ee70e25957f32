use super::super::alu::{AluContext, FpOp, Signedness};
use super::*;
use tpbsim_isa::{Engine, Gen};

fn fp(op: AluOp) -> FpOp {
    AluContext::new(Gen::V4, Engine::Dve)
        .fp_op(op)
        .expect("fp op")
}

fn int(op: AluOp, s: Signedness) -> IntOp {
    AluContext::new(Gen::V4, Engine::Pool)
        .int_op(op, s)
        .expect("int op")
}

fn shape(p: usize, free: &[usize]) -> TileShape {
    TileShape::new(p, free).expect("shape")
}

#[test]
fn axes_codes() {
    for (code, axes) in [
        (1, ReduceAxes::X),
        (2, ReduceAxes::XY),
        (3, ReduceAxes::XYZ),
        (4, ReduceAxes::XYZW),
    ] {
        assert_eq!(ReduceAxes::from_subdim(code), Ok(axes));
    }
    // UNUSED (0) is a TENSOR_SUBDIM value that names no axis; 5 and up are not values.
    let why = |code| match ReduceAxes::from_subdim(code) {
        Err(AluError::BadAxes { code: c, why }) if c == code => why,
        r => panic!("{code}: {r:?}"),
    };
    assert!(why(0).contains("UNUSED"), "{}", why(0));
    for code in [5, 0xFF] {
        assert!(
            why(code).contains("not a TENSOR_SUBDIM value"),
            "{}",
            why(code)
        );
    }
    assert_eq!(ReduceAxes::from_axis_list(0), Ok(ReduceAxes::X));
    assert_eq!(ReduceAxes::from_axis_list(3), Ok(ReduceAxes::XYZW));
    assert!(matches!(
        ReduceAxes::from_axis_list(4),
        Err(AluError::BadAxes { .. })
    ));
    assert!(matches!(
        ReduceAxes::from_axis_list(5),
        Err(AluError::BadAxes { .. })
    ));
    let s = shape(2, &[3, 4, 5]);
    assert_eq!(ReduceAxes::X.split(s), (3, 20));
    assert_eq!(ReduceAxes::XY.split(s), (12, 5));
    assert_eq!(ReduceAxes::XYZW.split(s), (60, 1));
    assert_eq!(reduced_len(s, ReduceAxes::XY), 10);
}

/// Pseudo-random fp32 values spanning magnitudes, so summation order shows in the result.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let m = (s >> 8) as f32 / (1 << 24) as f32 - 0.5;
            m * [1.0, 1e-3, 1e4, 3.0][(s & 3) as usize]
        })
        .collect()
}

#[test]
fn reduce_add_is_sequential_from_element_zero() {
    let s = shape(3, &[7, 5]);
    let src = values(s.len(), 11);
    let mut out = vec![0.0; reduced_len(s, ReduceAxes::XY)];
    tensor_reduce(fp(AluOp::ADD), false, s, ReduceAxes::XY, &src, &mut out).expect("reduce");
    for p in 0..3 {
        let mut acc = 0.0f32;
        for &v in &src[p * 35..(p + 1) * 35] {
            acc += v;
        }
        assert_eq!(out[p].to_bits(), acc.to_bits());
        let pairwise: f32 = src[p * 35..(p + 1) * 35]
            .chunks(2)
            .map(|c| c.iter().sum::<f32>())
            .sum();
        let f64sum: f64 = src[p * 35..(p + 1) * 35].iter().map(|&v| v as f64).sum();
        assert!(
            ((out[p] as f64) - f64sum).abs() <= 1e-3 * f64sum.abs().max(1.0),
            "{} vs {}",
            out[p],
            pairwise
        );
    }
    let mut neg = vec![0.0; 3 * 5];
    tensor_reduce(fp(AluOp::ADD), true, s, ReduceAxes::X, &src, &mut neg).expect("reduce");
    let mut acc = 0.0f32;
    for &v in &src[7..14] {
        acc += v;
    }
    assert_eq!(neg[1], -acc, "negated, second outer index of partition 0");
}

#[test]
fn reduce_max_keeps_the_running_value_on_nan() {
    let s = shape(2, &[4]);
    let src = [1.0, f32::NAN, 3.0, 2.0, f32::NAN, 5.0, -1.0, 0.0];
    let mut out = [0.0; 2];
    tensor_reduce(fp(AluOp::MAX), false, s, ReduceAxes::X, &src, &mut out).expect("max");
    assert_eq!(
        out,
        [3.0, 5.0],
        "a NaN element never replaces the running value"
    );
    tensor_reduce(fp(AluOp::MIN), true, s, ReduceAxes::X, &src, &mut out).expect("min");
    assert_eq!(out, [-1.0, 1.0]);
    let empty_max = [f32::NAN; 2];
    let mut o1 = [0.0];
    tensor_reduce(
        fp(AluOp::MAX),
        false,
        shape(1, &[2]),
        ReduceAxes::X,
        &empty_max,
        &mut o1,
    )
    .expect("max");
    assert_eq!(
        o1[0],
        f32::NEG_INFINITY,
        "all-NaN input leaves the initial value"
    );
}

#[test]
fn reduce_int_and_errors() {
    let s = shape(1, &[4]);
    let src = [i32::MAX as u32, 1, 2, 0xFFFF_FFFF];
    let mut out = [0u32];
    tensor_reduce(
        int(AluOp::ADD_INT, Signedness::Signed),
        false,
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("add");
    assert_eq!(out[0], (i32::MAX as u32).wrapping_add(2), "wraps");
    tensor_reduce(
        int(AluOp::MAX, Signedness::Signed),
        true,
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("max");
    assert_eq!(out[0], (-i32::MAX) as u32);
    tensor_reduce(
        int(AluOp::MIN_UINT, Signedness::Unsigned),
        false,
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("min");
    assert_eq!(out[0], 1);
    tensor_reduce(
        int(AluOp::ABS_MIN, Signedness::Signed),
        false,
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("absmin");
    assert_eq!(out[0], 1);
    tensor_reduce(
        int(AluOp::BITWISE_AND, Signedness::Unsigned),
        false,
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("and");
    assert_eq!(out[0], 0);
    assert_eq!(
        tensor_reduce(
            fp(AluOp::IS_EQ),
            false,
            s,
            ReduceAxes::X,
            &[0.0; 4],
            &mut [0.0]
        ),
        Err(AluError::NotReducible(AluOp::IS_EQ))
    );
    assert!(matches!(
        tensor_reduce(
            fp(AluOp::ADD),
            false,
            s,
            ReduceAxes::X,
            &[0.0; 4],
            &mut [0.0; 2]
        ),
        Err(AluError::Shape { what: "dst", .. })
    ));
}

#[test]
fn arg_reduce_first_extreme_index() {
    let s = shape(2, &[5]);
    let src = [3u32, 9, 9, 0xFFFF_FFFF, 1, 4, 4, 2, 8, 8];
    let mut out = [0u32; 2];
    tensor_reduce_arg(
        int(AluOp::AMAX_INT, Signedness::Signed),
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("amax");
    assert_eq!(out, [1, 3]);
    tensor_reduce_arg(
        int(AluOp::AMAX_UINT, Signedness::Unsigned),
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("amax");
    assert_eq!(out, [3, 3]);
    tensor_reduce_arg(
        int(AluOp::AMIN_INT, Signedness::Signed),
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("amin");
    assert_eq!(out, [3, 2]);
    tensor_reduce_arg(
        int(AluOp::AMIN_UINT, Signedness::Unsigned),
        s,
        ReduceAxes::X,
        &src,
        &mut out,
    )
    .expect("amin");
    assert_eq!(out, [4, 2]);
    assert!(tensor_reduce_arg(
        int(AluOp::ADD, Signedness::Signed),
        s,
        ReduceAxes::X,
        &src,
        &mut out
    )
    .is_err());
}

#[test]
fn cumulative_scan_restarts_per_outer_index() {
    let s = shape(1, &[3, 2]);
    let src = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0];
    let mut out = [0.0; 6];
    tensor_cumulative(fp(AluOp::ADD), false, s, ReduceAxes::X, &src, &mut out).expect("cum");
    assert_eq!(out, [1.0, 3.0, 6.0, 10.0, 30.0, 60.0]);
    tensor_cumulative(fp(AluOp::MULT), true, s, ReduceAxes::XY, &src, &mut out).expect("cum");
    assert_eq!(out, [-1.0, -2.0, -6.0, -60.0, -1200.0, -36000.0]);
    tensor_cumulative(
        fp(AluOp::SUBTRACT),
        false,
        shape(1, &[3]),
        ReduceAxes::X,
        &src[..3],
        &mut out[..3],
    )
    .expect("cum");
    assert_eq!(&out[..3], &[1.0, 1.0, 2.0], "running = element − running");
}

#[test]
fn tensor_tensor_scan_matches_its_recurrence() {
    let s = shape(2, &[4]);
    let d0: Vec<f32> = values(8, 3);
    let d1: Vec<f32> = values(8, 5);
    let (mult, add) = (fp(AluOp::MULT), fp(AluOp::ADD));
    let init = [0.5, -2.0];
    let mut out = [0.0; 8];
    tensor_tensor_scan(
        mult,
        add,
        Reverse::default(),
        Scalar::PerPartition(&init),
        s,
        &d0,
        &d1,
        &mut out,
    )
    .expect("scan");
    for p in 0..2 {
        let mut r = init[p];
        for i in 0..4 {
            r = d0[p * 4 + i] * r + d1[p * 4 + i];
            assert_eq!(out[p * 4 + i].to_bits(), r.to_bits());
        }
    }
    let sub = fp(AluOp::SUBTRACT);
    let rev = Reverse {
        op0: true,
        op1: true,
    };
    tensor_tensor_scan(
        sub,
        sub,
        rev,
        Scalar::Imm(1.0),
        shape(1, &[2]),
        &[5.0, 7.0],
        &[2.0, 3.0],
        &mut out[..2],
    )
    .expect("scan");
    // r0 = 2 − (1 − 5) = 6 ; r1 = 3 − (6 − 7) = 4
    assert_eq!(&out[..2], &[6.0, 4.0]);
}

#[test]
fn accumulator_commands() {
    assert_eq!(AccumCmd::from_wire(3), Ok(AccumCmd::ZeroAccumulate));
    assert_eq!(AccumCmd::from_wire(5), Err(AccumError::BadCmd(5)));
    for b in 0..=4 {
        assert_eq!(AccumCmd::from_wire(b).map(AccumCmd::wire), Ok(b));
    }
    let add = FpOp::ADD;
    let mut acc = Accumulators::new();
    acc.fold(AccumCmd::ZeroAccumulate, add, 0, None, &[1.0, 2.0])
        .expect("fold");
    acc.fold(AccumCmd::Accumulate, add, 0, None, &[4.0])
        .expect("fold");
    assert_eq!(acc.get(0), Some(7.0));
    acc.fold(AccumCmd::Idle, add, 0, None, &[100.0])
        .expect("fold");
    assert_eq!(acc.get(0), Some(7.0));
    acc.fold(AccumCmd::LoadAccumulate, add, 1, Some(10.0), &[0.5])
        .expect("fold");
    assert_eq!(acc.get(1), Some(10.5));
    assert_eq!(
        acc.fold(AccumCmd::LoadAccumulate, add, 1, None, &[0.5]),
        Err(AccumError::MissingSeed)
    );
    acc.fold(AccumCmd::Zero, add, 0, None, &[100.0])
        .expect("fold");
    assert_eq!(acc.get(0), Some(0.0));
    let mut out = [0.0; 2];
    acc.read(true, &mut out).expect("read");
    assert_eq!(out, [-0.0, -10.5]);
    assert!(acc
        .fold(AccumCmd::Accumulate, add, 128, None, &[1.0])
        .is_err());
    assert!(acc.read(false, &mut [0.0; 129]).is_err());
}

#[test]
fn tensor_scalar_cumulative_carries_the_register() {
    let s = shape(2, &[3]);
    let src = [1.0, 2.0, 3.0, -1.0, -2.0, -3.0];
    let mut out = [0.0; 6];
    let mut acc = Accumulators::new();
    let (mult, add, max) = (fp(AluOp::MULT), fp(AluOp::ADD), fp(AluOp::MAX));
    tensor_scalar_cumulative(
        mult,
        Scalar::Imm(2.0),
        false,
        add,
        AccumCmd::ZeroAccumulate,
        None,
        &mut acc,
        s,
        &src,
        &mut out,
    )
    .expect("cum");
    assert_eq!(out, [2.0, 6.0, 12.0, -2.0, -6.0, -12.0]);
    tensor_scalar_cumulative(
        mult,
        Scalar::Imm(1.0),
        false,
        add,
        AccumCmd::Accumulate,
        None,
        &mut acc,
        s,
        &src,
        &mut out,
    )
    .expect("cum");
    assert_eq!(
        out,
        [13.0, 15.0, 18.0, -13.0, -15.0, -18.0],
        "continues from the registers"
    );
    let seed = [100.0, -100.0];
    tensor_scalar_cumulative(
        add,
        Scalar::PerPartition(&[0.0, 10.0]),
        true,
        max,
        AccumCmd::LoadAccumulate,
        Some(Scalar::PerPartition(&seed)),
        &mut acc,
        s,
        &src,
        &mut out,
    )
    .expect("cum");
    assert_eq!(out, [100.0, 100.0, 100.0, 9.0, 9.0, 9.0]);
    assert_eq!(acc.get(1), Some(9.0));
}

/// The accumulator commands are the spec's `ACCUM_CMD` members, each decoded and encoded back,
/// and nothing else decodes.
#[test]
fn accum_cmds_are_the_spec_members() {
    let members = tpbsim_isa::spec::ByteSet::union_of(&tpbsim_isa::formats::members::ACCUM_CMD);
    for byte in 0..=u8::MAX {
        match AccumCmd::from_wire(byte) {
            Ok(c) => {
                assert!(
                    members.has(byte),
                    "{byte} decodes but is not an ACCUM_CMD member"
                );
                assert_eq!(c.wire(), byte);
            }
            Err(_) => assert!(
                !members.has(byte),
                "ACCUM_CMD member {byte} does not decode"
            ),
        }
    }
}
