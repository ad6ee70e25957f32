//! The ops driven by decoded format structs, as the dispatcher hands them over.

use tpbsim_isa::{
    AccumCmd as WireAccumCmd, ActFunc, Activate, Addr4, AluOp as WireAluOp, Dtype, DtypePair,
    Engine, F32Bits, Gen, ImmSrc, ImmSrcN, LdWeights, LdWeightsV3, Matmul, MatmulV3, PeFp32Mode,
    PsumAccumulateFlags, ReadAccumulator, Tensor, TensorReduce, TensorReduceV2, TensorSubdim,
    TensorTensor,
};

use crate::machine::core::Machine;
use crate::machine::fault::Site;
use crate::machine::geometry::Geometry;
use crate::machine::kernel::Kernel;
use crate::machine::pattern::TensorPattern;

fn site(engine: Engine, opcode: u8) -> Site {
    Site {
        engine,
        index: 0,
        opcode,
    }
}

/// A TENSORnD descriptor of `elems` contiguous elements per partition at `addr`.
fn tensor<const N: usize>(addr: u32, elems: u16) -> Tensor<N> {
    let (mut step, mut num) = ([0i16; N], [1u16; N]);
    step[0] = 1;
    num[0] = elems;
    Tensor {
        addr: Addr4::imm(addr),
        step,
        num,
    }
}

fn put_f32(m: &mut Machine<'_>, p: &TensorPattern, v: &[f32]) {
    let r = m.chip.resolve(p).unwrap();
    let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    m.chip.scatter(&r, &b);
}

fn get_f32(m: &Machine<'_>, p: &TensorPattern) -> Vec<f32> {
    let r = m.chip.resolve(p).unwrap();
    m.chip
        .gather(&r)
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn get_i32(m: &Machine<'_>, p: &TensorPattern) -> Vec<i32> {
    m.chip
        .gather(&m.chip.resolve(p).unwrap())
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn tensor_tensor(
    op: u8,
    d: Dtype,
    src0: u32,
    src1: u32,
    dst: u32,
    parts: u8,
    n: u16,
) -> TensorTensor {
    TensorTensor {
        in_dtypes: DtypePair::new(d, d),
        out_dtype: d,
        op: WireAluOp(op),
        num_active_partitions: parts,
        src0: tensor(src0, n),
        src1: tensor(src1, n),
        dst: tensor(dst, n),
        ..Default::default()
    }
}

#[test]
fn dve_add_and_pool_int_wrap() {
    let k = Kernel::default();
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let g = Geometry::of(Gen::V3);
    let t = |off| TensorPattern::dense(g.sbuf_address(0, off), 2, 4, 3);
    put_f32(&mut m, &t(0), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    put_f32(&mut m, &t(64), &[0.5; 6]);
    let (a0, a1, ad) = (
        g.sbuf_address(0, 0),
        g.sbuf_address(0, 64),
        g.sbuf_address(0, 128),
    );
    let a = tensor_tensor(0x04, Dtype::FP32, a0, a1, ad, 2, 3);
    m.tensor_tensor(site(Engine::Dve, 0x41), &a).unwrap();
    assert_eq!(get_f32(&m, &t(128)), vec![1.5, 2.5, 3.5, 4.5, 5.5, 6.5]);
    // int32 on POOL wraps; the same on DVE (fp32 path) would round.
    let r = m.chip.resolve(&t(0)).unwrap();
    let ints: Vec<u8> = [i32::MAX, 16_777_217, -5, 0, 1, 2]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    m.chip.scatter(&r, &ints);
    let r = m.chip.resolve(&t(64)).unwrap();
    let ones: Vec<u8> = [1i32; 6].iter().flat_map(|x| x.to_le_bytes()).collect();
    m.chip.scatter(&r, &ones);
    let a = tensor_tensor(0x04, Dtype::INT32, a0, a1, ad, 2, 3);
    m.tensor_tensor(site(Engine::Pool, 0x41), &a).unwrap();
    assert_eq!(
        get_i32(&m, &t(128)),
        vec![i32::MIN, 16_777_218, -4, 1, 2, 3]
    );
    m.tensor_tensor(site(Engine::Dve, 0x41), &a).unwrap();
    assert_eq!(
        get_i32(&m, &t(128))[1],
        16_777_216,
        "DVE widens to fp32: 2^24 + 1 becomes 2^24, and 2^24 + 1 again rounds to 2^24"
    );
    // Another opcode of the layout the machine does not simulate.
    let f = m.tensor_tensor(site(Engine::Dve, 0x65), &a).unwrap_err();
    assert!(f.to_string().contains("not simulated"), "{f}");
}

#[test]
fn pool_cannot_touch_psum() {
    let k = Kernel::default();
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let g = Geometry::of(Gen::V3);
    let (s, p) = (g.sbuf_address(0, 0), g.psum_address(0, 0));
    let a = tensor_tensor(0x04, Dtype::FP32, s, s, p, 1, 4);
    let f = m.tensor_tensor(site(Engine::Pool, 0x41), &a).unwrap_err();
    assert!(
        f.to_string()
            .contains("PSUM (0x02000000), which POOL cannot address"),
        "{f}"
    );
    m.tensor_tensor(site(Engine::Dve, 0x41), &a).unwrap();
}

#[test]
fn exp_accumulate_and_read() {
    let k = Kernel::default();
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let g = Geometry::of(Gen::V3);
    let t = |off, n| TensorPattern::dense(g.sbuf_address(0, off), 2, 4, n);
    put_f32(&mut m, &t(0, 3), &[0.0, 1.0, 2.0, 0.0, 0.0, 0.0]);
    put_f32(&mut m, &t(64, 1), &[-1.0, 1.0]);
    let a = Activate {
        activation_func: ActFunc::EXP,
        scale_src: ImmSrc(0),
        scale_value: F32Bits(1.0f32.to_bits()),
        // IMM_SRC_N 0: the bias is a pointer to one value per partition.
        bias_src_n: ImmSrcN(0),
        bias: g.sbuf_address(0, 64),
        in_bias_dtypes: DtypePair::new(Dtype::FP32, Dtype::FP32),
        out_dtype: Dtype::FP32,
        accumulator_cmd: WireAccumCmd(3), // ZERO_ACCUMULATE
        num_active_partitions: 2,
        src: tensor(g.sbuf_address(0, 0), 3),
        dst: tensor(g.sbuf_address(0, 128), 3),
        ..Default::default()
    };
    m.activate(site(Engine::Act, 0x21), &a).unwrap();
    let y = get_f32(&m, &t(128, 3));
    let e = std::f32::consts::E;
    assert_eq!(y, vec![(-1.0f32).exp(), 1.0, e, e, e, e]);
    let r = ReadAccumulator {
        dtype: Dtype::FP32,
        num_active_partitions: 2,
        dst: tensor(g.sbuf_address(0, 256), 1),
        ..Default::default()
    };
    m.read_accumulator(site(Engine::Act, 0x24), &r).unwrap();
    let s = get_f32(&m, &t(256, 1));
    assert_eq!(s, vec![(-1.0f32).exp() + 1.0 + e, e + e + e]);
}

#[test]
fn matmul_accumulates_across_groups() {
    let k = Kernel::default();
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let g = Geometry::of(Gen::V3);
    // Weights [k=2, n=2] identity, moving [2, 3].
    let w = TensorPattern::dense(g.sbuf_address(0, 0), 2, 4, 2);
    put_f32(&mut m, &w, &[1.0, 0.0, 0.0, 1.0]);
    let x = TensorPattern::dense(g.sbuf_address(0, 64), 2, 4, 3);
    put_f32(&mut m, &x, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // Read last to first (step −1 from element 1), as the compiler loads weights: column c
    // holds element c (the LdWeights column rule).
    let lw = LdWeights::V3(LdWeightsV3 {
        src: Tensor {
            addr: Addr4::imm(g.sbuf_address(0, 4)),
            step: [-1, 0, 0],
            num: [2, 1, 1],
        },
        in_dtype: Dtype::FP32,
        num_active_rows: 2,
        num_active_cols: 2,
        row_grp: 0x0F,
        col_grp: 0x0F,
        ..Default::default()
    });
    m.ld_weights(site(Engine::Pe, 0x01), &lw).unwrap();
    let dst = TensorPattern::dense(g.psum_address(0, 0), 2, 4, 3);
    let mm = |flags: u8, dst: u32| {
        Matmul::V3(MatmulV3 {
            src: tensor(g.sbuf_address(0, 64), 3),
            in_dtype: Dtype::FP32,
            fp32_mode: PeFp32Mode(3),
            num_active_rows: 2,
            num_active_cols: 2,
            psum_accumulate_flags: PsumAccumulateFlags::from_bits(flags),
            row_grp: 0x0F,
            col_grp: 0x0F,
            dst: tensor(dst, 3),
            ..Default::default()
        })
    };
    m.matmul(site(Engine::Pe, 0x02), &mm(1, g.psum_address(0, 0)))
        .unwrap();
    // Accumulate, end group.
    m.matmul(site(Engine::Pe, 0x02), &mm(2, g.psum_address(0, 0)))
        .unwrap();
    assert_eq!(get_f32(&m, &dst), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    assert!(m
        .matmul(site(Engine::Pe, 0x02), &mm(2, g.sbuf_address(0, 512)))
        .unwrap_err()
        .to_string()
        .contains("not in PSUM"));
}

#[test]
fn reduce_max_and_reciprocal() {
    let k = Kernel::default();
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    let g = Geometry::of(Gen::V3);
    let src = TensorPattern::dense(g.sbuf_address(0, 0), 2, 4, 4);
    put_f32(&mut m, &src, &[1.0, 9.0, -3.0, 4.0, 0.5, 0.25, 2.0, -8.0]);
    let dst = TensorPattern::dense(g.sbuf_address(0, 64), 2, 4, 1);
    let r = |src: u32, n: u16| {
        TensorReduce::V2(TensorReduceV2 {
            src: tensor(src, n),
            in_dtype: Dtype::FP32,
            out_dtype: Dtype::FP32,
            num_active_channels: 2,
            negated: 1,
            op: WireAluOp::MAX,
            op_dim: TensorSubdim(1),
            dst: tensor(g.sbuf_address(0, 64), 1),
            ..Default::default()
        })
    };
    m.tensor_reduce(site(Engine::Dve, 0x42), &r(g.sbuf_address(0, 0), 4))
        .unwrap();
    assert_eq!(get_f32(&m, &dst), vec![-9.0, -2.0]);
    m.tensor_reduce(site(Engine::Dve, 0x48), &r(g.sbuf_address(0, 64), 1))
        .unwrap();
    assert_eq!(get_f32(&m, &dst), vec![-1.0 / 9.0, -0.5]);
}

#[test]
fn engine_legality_is_the_spec_column_plus_the_documented_extensions() {
    use crate::machine::dispatch::executes_on;
    use tpbsim_isa::RUNS_ON_EXTRA;
    for code in 0..=255u8 {
        for e in Engine::ALL {
            let spec = tpbsim_isa::spec::opcode(code).is_some_and(|r| r.runs_on(e));
            let extra = RUNS_ON_EXTRA.contains(&(code, e));
            assert_eq!(executes_on(code, e), spec || extra, "{code:#04x} on {e}");
        }
    }
    // The extensions are real extensions: the spec's column lacks each of them.
    for (code, e) in RUNS_ON_EXTRA {
        assert!(
            !tpbsim_isa::spec::opcode(code).unwrap().runs_on(e),
            "{code:#04x} {e}"
        );
    }
    assert!(executes_on(0x43, Engine::Act) && !executes_on(0x41, Engine::Act));
    assert!(executes_on(0xA4, Engine::Pe) && !executes_on(0x02, Engine::Act));
}
