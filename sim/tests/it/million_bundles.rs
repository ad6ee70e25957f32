//! A loop executing more than 10^6 bundles, end to end through a NEFF: DVE adds 1.0 to an
//! accumulator 400 000 times in a three-bundle loop (TensorTensor add, ALU_OP counter
//! increment, CompareBranch back), with L2 validation on, then SP stores the accumulator.
//! Slow in a debug build, so ignored by default:
//!
//! ```sh
//! cargo nextest run -p tpbsim-sim --run-ignored only -E 'test(million)'
//! ```
//!
//! `sim run` on the same kernel: `cargo run -p tpbsim-sim --example build_big_kernels --
//! loop-adds 400000 L.neff && sim run L.neff` (docs/perf.md, "Kernels at scale").

use tpbsim_isa::{
    Addr4, AluOp, AluOpInst, BrTargetMode, Bundle, CmpOp, CompareBranch, DataSrc, DmaTrigger,
    Dtype, DtypePair, Engine, Events, Gen, Header, NumFormat, Opcode, Tensor, TensorScalar,
    TensorTensor, UpdateMode, WaitMode, Wire,
};
use tpbsim_neff::{DmaEntry, VarKind, VarRef};
use tpbsim_sim::machine::load::kernel_from_neff;
use tpbsim_sim::machine::pack::Package;
use tpbsim_sim::machine::{Machine, RunOptions};

const ITERATIONS: u32 = 400_000;

fn one(offset: u32) -> Tensor<3> {
    Tensor::new(Addr4::imm(offset), [1; 3], [1; 3])
}

#[test]
#[ignore]
fn a_loop_of_a_million_bundles_counts_exactly() {
    let tag = |f: NumFormat| Dtype(f.wire_tag(Gen::V3).unwrap());
    let (f32t, u32t) = (tag(NumFormat::Float32), tag(NumFormat::Uint32));
    // DVE: `one` = 0 + 1.0, then the loop from bundle 1: acc += one; r1 += 1; while r1 < N.
    let set_one = TensorScalar {
        header: Header::new(Opcode(0x43)),
        src: one(0),
        in_dtype: f32t,
        out_dtype: f32t,
        num_active_partitions: 1,
        op0: AluOp(0x04),
        imm0: 1f32.to_bits(),
        dst: one(4),
        ..Default::default()
    }
    .to_bundle();
    let add = TensorTensor {
        in_dtypes: DtypePair::new(f32t, f32t),
        out_dtype: f32t,
        op: AluOp(0x04),
        num_active_partitions: 1,
        src0: one(0),
        src1: one(4),
        dst: one(0),
        ..Default::default()
    }
    .to_bundle();
    let count = AluOpInst {
        op: AluOp(0x04),
        dtype: u32t,
        src1_datasrc: DataSrc(1),
        dst_dtype: u32t,
        src0_reg_lo: 1,
        dst_reg_lo: 1,
        imm: 1,
        ..Default::default()
    }
    .to_bundle();
    let back = CompareBranch {
        cmp_op: CmpOp::LT_IMM,
        dtype: u32t,
        target_mode: BrTargetMode(3),
        cmp_imm: ITERATIONS,
        cmp_reg0: 1,
        br_immediate: (-128i64) as u64, // two bundles back, in bytes
        ..Default::default()
    }
    .to_bundle();
    // A NOP incrementing semaphore 1 on completion; SP's store waits for semaphore 1 >= 1.
    let mut done = Bundle::ZERO;
    done.0[..2].copy_from_slice(&[0xA4, tpbsim_isa::INST_WORD_LEN]);
    Events {
        update_mode: UpdateMode(0x13),
        update_idx: 1,
        ..Default::default()
    }
    .write(&mut done.0, 4);
    let mut queue = [0u8; 36];
    queue[..3].copy_from_slice(b"out");
    let store = DmaTrigger {
        events: Events {
            wait_mode: WaitMode(0x05),
            wait_idx: 1,
            semaphore_value: 1,
            ..Default::default()
        },
        queue_name: queue,
        ..Default::default()
    }
    .to_bundle();

    let mut p = Package::new("million", Gen::V3);
    p.onchip();
    p.queue("out", None);
    p.var("out", VarKind::Output, NumFormat::Float32, &[1], None)
        .unwrap();
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![DmaEntry::copy(
            VarRef::Name("state_buffer".into()),
            VarRef::Name("out".into()),
            vec![1, 1],
        )],
    );
    p.streams[Engine::Dve as usize] = vec![set_one, add, count, back, done];
    p.streams[Engine::Sp as usize] = vec![store];
    let neff = p.to_neff().unwrap();
    let k = kernel_from_neff(&neff).unwrap();
    let mut m = Machine::new(&k, Gen::V3).unwrap();
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    let st = m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    let executed = 1 + 3 * u64::from(ITERATIONS) + 1;
    assert_eq!(st.sched.per_engine[Engine::Dve as usize], executed);
    assert!(st.sched.steps >= 1_000_000, "{} bundles", st.sched.steps);
    // Every partial sum up to 400 000 is an integer below 2^24: exact in fp32.
    let out = m.var("out").unwrap();
    assert_eq!(out, (ITERATIONS as f32).to_le_bytes());
}
