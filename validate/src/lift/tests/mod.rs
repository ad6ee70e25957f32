//! Lifter and lowering tests: crafted streams built with the isa crate's typed formats, the
//! multi-bundle fusions, unliftable bundles, and the two round-trip properties.
//!
//! `lifting.rs` holds the crafted streams per family, `errors.rs` what is not lifted or not
//! lowered and how it is reported, `props.rs` the generators and the round-trip properties
//! over every class and every single-bundle binding.

mod errors;
mod lifting;
mod props;

use proptest::prelude::*;
use serde_json::{Map, Value};
use tpbsim_isa::spec::FieldLoc;
use tpbsim_isa::{
    Addr4, AluOp, Bundle, Dtype as W, DtypePair, Engine, Gen, Header, LdWeightsMx, LdWeightsV3,
    MatmulMx, MatmulV3, Opcode, Tensor, TensorReduceV2, TensorScalar, TensorTensor,
};

use super::ap::{PSUM_BUFFER, SBUF_BUFFER};
use super::dtype::{is_canonical, DtypeCtx};
use super::fields::{self, canonical};
use super::lower::{bindings, plan, primary};
use super::*;
use crate::bir::{AccessPattern, Dim, EngineType, InstClass, Instruction, MemoryType};
use crate::diag::Severity;
use tpbsim_isa::NumFormat;

fn sb(p: u32, byte: u32) -> Addr4 {
    Addr4::imm((p << 18) | byte)
}

fn psum(p: u32, byte: u32) -> Addr4 {
    Addr4::imm(0x200_0000 + (p << 15) + byte)
}

fn lift(bundles: &[Bundle], engine: Engine, gen: Gen) -> LiftedStream {
    let s = lift_stream(
        &StreamInput {
            function: "f".into(),
            file: Some("x.bin".into()),
            engine,
            bundles,
        },
        gen,
    );
    // Every lift lowers back to its stream.
    assert_eq!(
        lower_function(&s.function, gen).unwrap(),
        bundles,
        "lower(lift(stream)) != stream"
    );
    s
}

fn insts(s: &LiftedStream) -> &[Instruction] {
    &s.function.blocks[0].instructions
}

fn ap(
    mem: MemoryType,
    dtype: NumFormat,
    start: u64,
    parts: u64,
    pattern: &[(i64, u64)],
    offset: i64,
) -> AccessPattern {
    AccessPattern {
        mem,
        buffer: if mem == MemoryType::Psum {
            PSUM_BUFFER.into()
        } else {
            SBUF_BUFFER.into()
        },
        dtype,
        start_partition: start,
        partitions: parts,
        pattern: pattern
            .iter()
            .map(|&(step, num)| Dim { step, num })
            .collect(),
        offset,
        indirect: false,
    }
}

fn tt_bundle(op: u8, alu: AluOp, dt: (W, W), out: W, parts: u8) -> Bundle {
    let tt = TensorTensor {
        header: Header::new(Opcode(op)),
        in_dtypes: DtypePair::new(dt.0, dt.1),
        out_dtype: out,
        op: alu,
        num_active_partitions: parts,
        src0: Tensor::new(sb(0, 0), [1, 128, 1], [128, 4, 1]),
        src1: Tensor::new(sb(0, 0x1000), [1, 128, 1], [128, 4, 1]),
        dst: Tensor::new(sb(64, 0), [1, 1, 1], [512, 1, 1]),
        ..Default::default()
    };
    tt.to_bundle()
}

fn ldw_v3(rows: u8, cols: u8, tag: W, mode: u8) -> Bundle {
    let mut l = LdWeightsV3::from_bundle(&canonical(0x01));
    l.src = Tensor::new(sb(0, 0x200), [1, 1, 1], [64, 1, 1]);
    l.in_dtype = tag;
    l.fp32_mode = tpbsim_isa::PeFp32Mode(mode);
    l.num_active_rows = rows;
    l.num_active_cols = cols;
    l.row_grp = 0x0F;
    l.col_grp = super::rules::group_code(0, cols as u64);
    l.to_bundle()
}

fn mm_v3(rows: u8, cols: u8, tag: W, mode: u8) -> Bundle {
    let mut m = MatmulV3::from_bundle(&canonical(0x02));
    m.src = Tensor::new(sb(0, 0x400), [1, 1, 1], [256, 1, 1]);
    m.in_dtype = tag;
    m.fp32_mode = tpbsim_isa::PeFp32Mode(mode);
    m.num_active_rows = rows;
    m.num_active_cols = cols;
    m.out_dtype = W::FP32;
    m.row_grp = 0x0F;
    m.col_grp = super::rules::group_code(0, cols as u64);
    m.psum_accumulate_flags = tpbsim_isa::PsumAccumulateFlags::from_bits(0x03);
    m.dst = Tensor::new(psum(0, 2048), [1, 1, 1], [256, 1, 1]);
    m.to_bundle()
}
