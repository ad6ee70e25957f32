//! The mapping tables between opcodes and BIR classes.
//!
//! A [`Form`] says how one bundle's fields carry a BIR instruction's operands: which
//! descriptor field holds which `args[i]` / `outs[i]`, where its dtype tag and partition count
//! sit, and which remaining fields are the instruction's parameters (kept in `attrs` under the
//! field's spec name). [`alone`] binds every single-bundle opcode the lifter knows to a class
//! and a form; [`default_opcode`] is the inverse fan-in (seed 004): the opcode a class lowers to
//! for its dtypes, engine, ALU op and generation.

use serde_json::Value;
use tpbsim_isa::formats::loc::{
    self, activate as act, activate2 as act2, activate_quantize as actq, affine_select as aff,
    iota, ld_weights as ldw, matmul as mm, matmul_mx as mmx, memset, pool, range_select as rs,
    read_accumulator as rdacc, scalar_tensor_tensor as stt, select_reduce as selred,
    tensor_dequantize as deq, tensor_reduce as tr, tensor_scalar as ts,
    tensor_scalar_int_wide as tsw, tensor_tensor as tt, tensor_tensor_int_wide as ttw,
};
use tpbsim_isa::spec::FieldLoc;
use tpbsim_isa::{spec, AluOp, Gen, Op, Opcode};

use super::dtype::DtypeCtx;
use super::error::{AttrError, PlanError};
use crate::bir::{EngineType, InstClass, Instruction};
use tpbsim_isa::NumFormat;

/// Where an operand's dtype tag sits. Fields are named by their generated locators
/// (`tpbsim_isa::formats::loc::<format>::<FIELD>`), so a field renamed or dropped in the spec
/// fails to build here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dt {
    /// A DTYPE field.
    Field(FieldLoc),
    /// The low nibble of a dtype-pair field.
    Lo(FieldLoc),
    /// The high nibble of a dtype-pair field.
    Hi(FieldLoc),
    /// No tag on the wire: the dtype is fixed.
    Fixed(NumFormat),
    /// The dense matmul's PSUM dtype field: tag 0 (not written) reads as float32, the PSUM
    /// accumulation format of v2/v3 (facts §9.5); lowering writes the tag.
    PsumOut(FieldLoc),
}

/// One operand of a form: its descriptor field, dtype tag and partition-count field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Role {
    /// Descriptor field (TENSORnD / MEM_PATTERNnD).
    pub field: FieldLoc,
    /// Dtype tag.
    pub dt: Dt,
    /// Field holding the partition count (active partitions / channels / rows / cols).
    pub part: FieldLoc,
    /// How the tag is read.
    pub ctx: DtypeCtx,
}

pub(crate) const fn role(field: FieldLoc, dt: Dt, part: FieldLoc) -> Role {
    Role {
        field,
        dt,
        part,
        ctx: DtypeCtx::Plain,
    }
}

/// How one bundle carries an instruction.
#[derive(Debug)]
pub(crate) struct Form {
    /// Spec format name (for the tables in docs/lift.md).
    pub format: &'static str,
    /// Inputs, positional.
    pub args: &'static [Role],
    /// Outputs, positional.
    pub outs: &'static [Role],
    /// Parameter fields (kept in `attrs` by field name).
    pub params: &'static [FieldLoc],
}

impl Form {
    /// The parameter field named `key`.
    pub(crate) fn param(&self, key: &str) -> Option<FieldLoc> {
        self.params.iter().copied().find(|p| p.name == key)
    }
}

/// TENSOR_TENSOR: `args = [src0, src1]`, `outs = [dst]`.
pub(crate) static TT: Form = Form {
    format: "TensorTensor",
    args: &[
        role(tt::SRC0, Dt::Lo(tt::IN_DTYPES), tt::NUM_ACTIVE_PARTITIONS),
        role(tt::SRC1, Dt::Hi(tt::IN_DTYPES), tt::NUM_ACTIVE_PARTITIONS),
    ],
    outs: &[role(
        tt::DST,
        Dt::Field(tt::OUT_DTYPE),
        tt::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[tt::OP],
};
/// COPY/CAST_PREDICATED on the TT layout: `args = [data (src1), predicate (src0)]`.
pub(crate) static CP: Form = Form {
    format: "TensorTensor",
    args: &[
        role(tt::SRC1, Dt::Hi(tt::IN_DTYPES), tt::NUM_ACTIVE_PARTITIONS),
        role(tt::SRC0, Dt::Lo(tt::IN_DTYPES), tt::NUM_ACTIVE_PARTITIONS),
    ],
    outs: &[role(
        tt::DST,
        Dt::Field(tt::OUT_DTYPE),
        tt::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[tt::OP],
};
/// TENSOR_TENSOR_INT_WIDE: `outs = [low, high]`.
pub(crate) static TT_WIDE: Form = Form {
    format: "TensorTensorIntWide",
    args: &[
        role(
            ttw::SRC0,
            Dt::Lo(ttw::IN_DTYPES),
            ttw::NUM_ACTIVE_PARTITIONS,
        ),
        role(
            ttw::SRC1,
            Dt::Hi(ttw::IN_DTYPES),
            ttw::NUM_ACTIVE_PARTITIONS,
        ),
    ],
    outs: &[
        role(
            ttw::DST0,
            Dt::Lo(ttw::OUT_DTYPES),
            ttw::NUM_ACTIVE_PARTITIONS,
        ),
        role(
            ttw::DST1,
            Dt::Hi(ttw::OUT_DTYPES),
            ttw::NUM_ACTIVE_PARTITIONS,
        ),
    ],
    params: &[ttw::OP],
};
/// The S3D3_TS family.
pub(crate) static TS: Form = Form {
    format: "TensorScalar",
    args: &[role(
        ts::SRC,
        Dt::Field(ts::IN_DTYPE),
        ts::NUM_ACTIVE_PARTITIONS,
    )],
    outs: &[role(
        ts::DST,
        Dt::Field(ts::OUT_DTYPE),
        ts::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[
        ts::ACCUMULATOR_CMD,
        ts::IMM0_SRC,
        ts::OP0,
        ts::OP1,
        ts::REVERSE,
        ts::IMM1_SRC,
        ts::IMM0,
        ts::IMM1,
    ],
};
/// TENSOR_SCALAR_AFFINE_SELECT (header struct S2D2_TS_AS).
pub(crate) static AS: Form = Form {
    format: "AffineSelect",
    args: &[role(
        aff::SRC,
        Dt::Lo(aff::IN_OUT_DTYPES),
        aff::NUM_ACTIVE_PARTITIONS,
    )],
    outs: &[role(
        aff::DST,
        Dt::Hi(aff::IN_OUT_DTYPES),
        aff::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[
        aff::FILL_MODE,
        aff::FILL_REG,
        aff::MASK_BASE,
        aff::MASK_STEP,
        aff::MASK_NUM,
        aff::CHANNEL_MULTIPLIER,
    ],
};
/// TENSOR_SCALAR_INT_WIDE: `outs = [low, high]`.
pub(crate) static TS_WIDE: Form = Form {
    format: "TensorScalarIntWide",
    args: &[role(
        tsw::SRC,
        Dt::Lo(tsw::IN_IMM_DTYPES),
        tsw::NUM_ACTIVE_PARTITIONS,
    )],
    outs: &[
        role(
            tsw::DST0,
            Dt::Lo(tsw::OUT_DTYPES),
            tsw::NUM_ACTIVE_PARTITIONS,
        ),
        role(
            tsw::DST1,
            Dt::Hi(tsw::OUT_DTYPES),
            tsw::NUM_ACTIVE_PARTITIONS,
        ),
    ],
    params: &[tsw::OP, tsw::IMM_SRC, tsw::IMM],
};
/// The S4D4_TR family (reduce, copy, cast, reciprocal, cumulative, shuffle, transpose).
pub(crate) static TR: Form = Form {
    format: "TensorReduce",
    args: &[role(
        tr::SRC,
        Dt::Field(tr::IN_DTYPE),
        tr::NUM_ACTIVE_CHANNELS,
    )],
    outs: &[role(
        tr::DST,
        Dt::Field(tr::OUT_DTYPE),
        tr::NUM_ACTIVE_CHANNELS,
    )],
    params: &[tr::NEGATED, tr::OP, tr::OP_DIM, tr::MASK_ENABLE],
};
/// POOL / MAX_POOL_SELECT.
pub(crate) static POOL: Form = Form {
    format: "Pool",
    args: &[role(
        pool::SRC,
        Dt::Field(pool::IN_DTYPE),
        pool::NUM_ACTIVE_CHANNELS,
    )],
    outs: &[role(
        pool::DST,
        Dt::Field(pool::OUT_DTYPE),
        pool::NUM_ACTIVE_CHANNELS,
    )],
    params: &[pool::POOL_TYPE, pool::MODE, pool::SCALE],
};
/// MEMSET.
pub(crate) static MEMSET: Form = Form {
    format: "Memset",
    args: &[],
    outs: &[role(
        memset::DST,
        Dt::Field(memset::DTYPE),
        memset::NUM_ACTIVE_CHANNELS,
    )],
    params: &[memset::COUNT, memset::FILL_VALUE],
};
/// IOTA.
pub(crate) static IOTA: Form = Form {
    format: "Iota",
    args: &[],
    outs: &[role(
        iota::DST,
        Dt::Field(iota::OUT_DTYPE),
        iota::NUM_ACTIVE_CHANNELS,
    )],
    params: &[iota::START_VALUE],
};
/// ACTIVATE (the optional bias operand `args[1]` is handled by the Activation recipe).
pub(crate) static ACT: Form = Form {
    format: "Activate",
    args: &[role(
        act::SRC,
        Dt::Lo(act::IN_BIAS_DTYPES),
        act::NUM_ACTIVE_PARTITIONS,
    )],
    outs: &[role(
        act::DST,
        Dt::Field(act::OUT_DTYPE),
        act::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[
        act::IMM_SRC,
        act::SCALE_SRC,
        act::ACCUMULATOR_CMD,
        act::BIAS_SRC_N,
        act::ACTIVATION_FUNC,
        act::SCALE_VALUE,
        act::BIAS,
        act::IMM,
    ],
};
/// ACTIVATE2 (v4+; descriptor slots inferred by the spec).
pub(crate) static ACT2: Form = Form {
    format: "Activate2",
    args: &[role(
        act2::SRC,
        Dt::Field(act2::IN_DTYPE),
        act2::NUM_ACTIVE_PARTITIONS,
    )],
    outs: &[role(
        act2::DST,
        Dt::Field(act2::OUT_DTYPE),
        act2::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[
        act2::RELU_PARAM_SRC,
        act2::IMM0_SRC,
        act2::REDUCE_CMD,
        act2::ARG2,
        act2::IMM_DTYPE,
        act2::OP0,
        act2::OP1,
        act2::REDUCE_OP,
        act2::ACTIVATION_FUNC,
        act2::IMM0,
        act2::IMM1,
        act2::RELU_PARAM,
        act2::REVERSE,
    ],
};
/// ACTIVATE_QUANTIZE.
pub(crate) static ACTQ: Form = Form {
    format: "ActivateQuantize",
    args: &[role(
        actq::SRC,
        Dt::Lo(actq::IN_BIAS_DTYPES),
        actq::NUM_ACTIVE_PARTITIONS,
    )],
    outs: &[role(
        actq::DST,
        Dt::Field(actq::OUT_DTYPE),
        actq::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[
        actq::QUANT_SCALE,
        actq::ACTIVATION_FUNC,
        actq::DEQUANT_SCALE,
        actq::BIAS_ADDR,
        actq::QUANT_ZERO,
    ],
};
/// ACTIVATION_READ_ACCUMULATOR / DVE_READ_ACCUMULATOR.
pub(crate) static RDACC: Form = Form {
    format: "ReadAccumulator",
    args: &[],
    outs: &[role(
        rdacc::DST,
        Dt::Field(rdacc::DTYPE),
        rdacc::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[rdacc::DST_ELEMENT_COUNT, rdacc::NEGATED],
};
/// TENSOR_DEQUANTIZE.
pub(crate) static DEQ: Form = Form {
    format: "TensorDequantize",
    args: &[role(
        deq::SRC,
        Dt::Field(deq::IN_DTYPE),
        deq::NUM_ACTIVE_PARTITIONS,
    )],
    outs: &[role(
        deq::DST,
        Dt::Field(deq::OUT_DTYPE),
        deq::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[deq::DEQUANT_FMT, deq::GROUP_SIZE],
};
/// SCALAR_TENSOR_TENSOR_* / TENSOR_TENSOR_SCAN_ARITH.
pub(crate) static STT: Form = Form {
    format: "ScalarTensorTensor",
    args: &[
        role(
            stt::SRC0,
            Dt::Lo(stt::IN_DTYPES),
            stt::NUM_ACTIVE_PARTITIONS,
        ),
        role(
            stt::SRC1,
            Dt::Hi(stt::IN_DTYPES),
            stt::NUM_ACTIVE_PARTITIONS,
        ),
    ],
    outs: &[role(
        stt::DST,
        Dt::Field(stt::OUT_DTYPE),
        stt::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[
        stt::OP0,
        stt::OP1,
        stt::REVERSE,
        stt::IMM0_SRC,
        stt::IMM0_DTYPE,
        stt::ACCUMULATOR_CMD,
        stt::IMM0,
    ],
};
/// SELECT_REDUCE as the second bundle of Select: `args = [predicate (mask), on_true (src)]`.
pub(crate) static SELRED: Form = Form {
    format: "SelectReduce",
    args: &[
        role(
            selred::MASK,
            Dt::Lo(selred::MASK_SRC_DTYPES),
            selred::NUM_ACTIVE_PARTITIONS,
        ),
        role(
            selred::SRC,
            Dt::Hi(selred::MASK_SRC_DTYPES),
            selred::NUM_ACTIVE_PARTITIONS,
        ),
    ],
    outs: &[role(
        selred::DST,
        Dt::Field(selred::OUT_DTYPE),
        selred::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[
        selred::BYPASS_OP,
        selred::REDUCE_OP,
        selred::REVERSE,
        selred::IMM0_SRC,
        selred::IMM0_DTYPE,
        selred::ACCUMULATOR_CMD,
        selred::IMM0,
    ],
};
/// SELECT_REDUCE as a CopyPredicated form: `args = [data (src), predicate (mask)]`.
pub(crate) static CP_SELRED: Form = Form {
    format: "SelectReduce",
    args: &[
        role(
            selred::SRC,
            Dt::Hi(selred::MASK_SRC_DTYPES),
            selred::NUM_ACTIVE_PARTITIONS,
        ),
        role(
            selred::MASK,
            Dt::Lo(selred::MASK_SRC_DTYPES),
            selred::NUM_ACTIVE_PARTITIONS,
        ),
    ],
    outs: &[role(
        selred::DST,
        Dt::Field(selred::OUT_DTYPE),
        selred::NUM_ACTIVE_PARTITIONS,
    )],
    params: SELRED.params,
};
/// RANGE_SELECT.
pub(crate) static RS: Form = Form {
    format: "RangeSelect",
    args: &[role(
        rs::SRC,
        Dt::Lo(rs::IN_OUT_DTYPES),
        rs::NUM_ACTIVE_PARTITIONS,
    )],
    outs: &[role(
        rs::DST,
        Dt::Hi(rs::IN_OUT_DTYPES),
        rs::NUM_ACTIVE_PARTITIONS,
    )],
    params: &[
        rs::REDUCE_CMD,
        rs::REDUCE_OP,
        rs::BASE,
        rs::FILL_VAL,
        rs::COMP_OP0,
        rs::COMP_OP1,
        rs::BOUND0_SRC,
        rs::BOUND1_SRC,
        rs::BOUND0,
        rs::BOUND1,
    ],
};
/// LDWEIGHTS alone (LoadWeights): `args = [weights]`.
pub(crate) static LDW: Form = Form {
    format: "LdWeights",
    args: &[role(
        ldw::SRC,
        Dt::Field(ldw::IN_DTYPE),
        ldw::NUM_ACTIVE_ROWS,
    )],
    outs: &[],
    params: &[
        ldw::FP32_MODE,
        ldw::TRANSPOSE_MODE,
        ldw::PERF_OPT,
        ldw::QUANT_OFFSET,
        ldw::NUM_ACTIVE_COLS,
        ldw::TILE_SIZE,
        ldw::TILE_SEL,
        ldw::FLAGS,
        ldw::PERF_MODE,
        ldw::BG_XPOSE_MODE,
    ],
};
/// MATMUL parameters (the operands are placed by the matmul recipe).
pub(crate) const MM_PARAMS: &[FieldLoc] = &[
    mm::FP32_MODE,
    mm::TRANSPOSE_MODE,
    mm::PERF_OPT,
    mm::QUANT_OFFSET,
    mm::TILE_SIZE,
    mm::TILE_SEL,
    mm::FLAGS,
    mm::PERF_MODE,
    mm::PSUM_ACCUMULATE_FLAGS,
    mm::PSUM_ZERO_REGION,
];
/// MATMUL_MX parameters.
pub(crate) const MMX_PARAMS: &[FieldLoc] = &[mmx::PSUM_ACCUMULATE_FLAGS, mmx::PSUM_ZERO_REGION];

macro_rules! control_form {
    ($name:ident, $fmt:literal, $m:ident, [$($p:ident),*]) => {
        /// A control form without operands.
        pub(crate) static $name: Form = Form {
            format: $fmt,
            args: &[],
            outs: &[],
            params: &[$(loc::$m::$p),*],
        };
    };
}
control_form!(ES, "EventSemaphore", event_semaphore, [EVENTS_EXT]);
control_form!(CTRL, "Control", control, []);
control_form!(DRAIN, "Drain", drain, [COUNT]);
control_form!(CORE_BARRIER, "CoreBarrier", core_barrier, [ID, INDEX]);
control_form!(
    RANGE_CLEAR,
    "EventSemaphoreRangeClear",
    event_semaphore_range_clear,
    [MODE, FIRST, LAST]
);
control_form!(
    BRANCH,
    "CompareBranch",
    compare_branch,
    [
        CMP_OP,
        DTYPE,
        TARGET_MODE,
        CMP_IMM,
        CMP_REG0,
        CMP_REG1,
        TARGET_REG_LO,
        TARGET_REG_HI,
        BR_IMMEDIATE
    ]
);
control_form!(
    REG_ALU,
    "AluOpInst",
    alu_op_inst,
    [
        OP,
        DTYPE,
        SRC1_DATASRC,
        DST_DTYPE,
        SRC0_REG_LO,
        SRC0_REG_HI,
        SRC1_REG_LO,
        SRC1_REG_HI,
        DST_REG_LO,
        DST_REG_HI,
        IMM
    ]
);
control_form!(
    DMA_TRIGGER,
    "DmaTrigger",
    dma_trigger,
    [QUEUE_NAME, BLOCK_ID]
);
control_form!(
    TRIGGER_COLLECTIVE,
    "TriggerCollective",
    trigger_collective,
    [
        OP,
        DTYPE,
        GROUP_ID,
        INPUT_TENSOR_ID,
        OUTPUT_TENSOR_ID,
        NUM_ELEMENTS,
        CTYPE,
        SRC_OFFSET_ELEMS,
        DST_OFFSET_ELEMS
    ]
);
control_form!(
    SEND_RECV,
    "SendRecv",
    send_recv,
    [TENSOR_ID, PEER_ID, OFFSET_BYTES, SIZE_BYTES]
);
control_form!(
    ACT_SET_PSEUDO,
    "LoadActFuncSet",
    load_act_func_set,
    [ACT_SET_NAME]
);
control_form!(
    ACT_TABLE_LOAD,
    "ActTableLoad",
    act_table_load,
    [ACT_TABLE_SET]
);
control_form!(
    CALL,
    "FunctionCall",
    function_call,
    [NAME, ARGS_TABLE_VAR_ID]
);
control_form!(PSEUDO, "PseudoInst", pseudo_inst, []);
/// Any opcode whose operand layout is not decoded: the body is carried in `wire`.
pub(crate) static OPAQUE: Form = Form {
    format: "",
    args: &[],
    outs: &[],
    params: &[],
};

/// What one bundle of an opcode lifts to on its own.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Alone {
    /// A class and the form its fields are read with.
    One(InstClass, &'static Form),
    /// COMPARE_BRANCH: [`InstClass::UnconditionalBranch`] when its compare op is 0 (always),
    /// else [`InstClass::CompareAndBranch`], both with [`BRANCH`].
    Branch,
    /// PSEUDO_INST: [`InstClass::Exit`] with [`PSEUDO`] when its sub-op is 1 (exit), else
    /// nothing.
    Exit,
    /// SEND_RECV: [`InstClass::CollectiveSend`] when its `is_send` byte is set, else
    /// [`InstClass::CollectiveRecv`], both with [`SEND_RECV`] (isa-facts §5.4: one opcode, two
    /// BIR ops, told apart by the direction field, which lowering derives from the class).
    SendRecv,
    /// No single-bundle binding: a group member ([`super::groups`]), or an opcode without a BIR
    /// class.
    Not,
}

/// The single-bundle binding of every catalog opcode: a match over the generated [`Op`]
/// without a wildcard, so an opcode added to the spec does not build until the lifter says
/// what it lifts to (or that it does not).
pub(crate) const fn alone(op: Op) -> Alone {
    match op {
        // POOL / DVE elementwise.
        Op::TensorTensorArithOp
        | Op::TensorTensorBitvecOp
        | Op::TensorTensorAddBf16
        | Op::TensorTensorMultBf16
        | Op::TensorTensorSubBf16 => Alone::One(InstClass::TensorTensor, &TT),
        Op::TensorTensorIntWide => Alone::One(InstClass::TensorTensor, &TT_WIDE),
        Op::CopyPredicated | Op::CastPredicated => Alone::One(InstClass::CopyPredicated, &CP),
        Op::SelectReduce => Alone::One(InstClass::CopyPredicated, &CP_SELRED),
        Op::TensorScalarArithOp | Op::TensorScalarBitvecOp | Op::TransposeTensorScalarArithOp => {
            Alone::One(InstClass::TensorScalar, &TS)
        }
        Op::TensorScalarIntWide => Alone::One(InstClass::TensorScalar, &TS_WIDE),
        Op::TensorScalarPtrArithOp
        | Op::TensorScalarPtrBitvecOp
        | Op::TensorScalarPtrMultiArith
        | Op::TensorScalarPtrMultiBitvec
        | Op::TensorScalarImmLdArith
        | Op::TensorScalarImmLdBitvec
        | Op::TensorScalarPtrMultiDualArith
        | Op::TensorScalarPtrMultiDualBitvec => Alone::One(InstClass::TensorScalarPtr, &TS),
        Op::TensorScalarCacheReduce | Op::TensorScalarCacheCumulative => {
            Alone::One(InstClass::TensorScalarCache, &TS)
        }
        Op::TensorScalarAffineSelect => Alone::One(InstClass::TensorScalarAffineSelect, &AS),
        Op::Exponential => Alone::One(InstClass::Exponential, &TS),
        Op::TensorReduceArithOp
        | Op::TensorReduceBitvecOp
        | Op::TransposeTensorReduceArithOp
        | Op::TransposeTensorReduceBitvecOp
        | Op::TensorReduceAddBf16
        | Op::TensorReduceMaxBf16 => Alone::One(InstClass::TensorReduce, &TR),
        Op::Copy | Op::Cast => Alone::One(InstClass::TensorCopy, &TR),
        Op::Reciprocal => Alone::One(InstClass::Reciprocal, &TR),
        Op::TensorCumulativeArithOp | Op::TensorCumulativeBitvecOp => {
            Alone::One(InstClass::TensorCumulative, &TR)
        }
        Op::Pool | Op::MaxPoolSelect => Alone::One(InstClass::Pool, &POOL),
        Op::Memset => Alone::One(InstClass::Memset, &MEMSET),
        Op::Iota => Alone::One(InstClass::Iota, &IOTA),
        Op::TensorDequantize => Alone::One(InstClass::TensorDequantize, &DEQ),
        Op::ScalarTensorTensorArith | Op::ScalarTensorTensorBitvec => {
            Alone::One(InstClass::ScalarTensorTensor, &STT)
        }
        Op::TensorTensorScanArith => Alone::One(InstClass::TensorTensorScan, &STT),
        Op::RangeSelect => Alone::One(InstClass::RangeSelect, &RS),
        Op::DveReadAccumulator => Alone::One(InstClass::DveReadAccumulator, &RDACC),
        // ACT.
        Op::Activate => Alone::One(InstClass::Activation, &ACT),
        Op::Activate2 => Alone::One(InstClass::Activation, &ACT2),
        Op::ActivateQuantize => Alone::One(InstClass::ActivationQuantize, &ACTQ),
        Op::ActivationReadAccumulator => Alone::One(InstClass::ReadActivationAccumulator, &RDACC),
        Op::PseudoLoadActFuncSet => Alone::One(InstClass::LoadActFuncSet, &ACT_SET_PSEUDO),
        Op::ActivationTableLoad => Alone::One(InstClass::LoadActFuncSet, &ACT_TABLE_LOAD),
        // PE.
        Op::Ldweights => Alone::One(InstClass::LoadWeights, &LDW),
        // Control and sync.
        Op::EventSemaphore => Alone::One(InstClass::EventSemaphore, &ES),
        Op::Halt => Alone::One(InstClass::Halt, &CTRL),
        Op::Nop | Op::EngineNop => Alone::One(InstClass::NoOp, &CTRL),
        Op::Drain => Alone::One(InstClass::Drain, &DRAIN),
        Op::EventSemaphoreRangeClear => Alone::One(InstClass::GroupResetSemaphores, &RANGE_CLEAR),
        Op::CompareBranch => Alone::Branch,
        Op::AluOp => Alone::One(InstClass::RegisterAlu, &REG_ALU),
        Op::PseudoDmatrigger => Alone::One(InstClass::DmaTrigger, &DMA_TRIGGER),
        Op::PseudoTriggerCollective => Alone::One(InstClass::Collective, &TRIGGER_COLLECTIVE),
        Op::PseudoFunctionCall => Alone::One(InstClass::Call, &CALL),
        Op::PseudoCoreBarrier => Alone::One(InstClass::CoreBarrier, &CORE_BARRIER),
        Op::PseudoInst => Alone::Exit,
        Op::PseudoSendRecv => Alone::SendRecv,
        // Operands not decoded (no published layout): class only, body kept in `wire`.
        Op::Move => Alone::One(InstClass::RegisterMove, &OPAQUE),
        Op::Notify => Alone::One(InstClass::Signal, &OPAQUE),
        Op::PollSem | Op::TestEventSem => Alone::One(InstClass::Wait, &OPAQUE),
        Op::PseudoSyncBarrier => Alone::One(InstClass::AllEngineBarrier, &OPAQUE),
        Op::PseudoFunctionReturn => Alone::One(InstClass::Return, &OPAQUE),
        Op::BranchPrefetchHint | Op::PseudoBranchPrefetchHint => {
            Alone::One(InstClass::BranchHint, &OPAQUE)
        }
        Op::ExtendedInst => Alone::One(InstClass::InlineAsmBytes, &OPAQUE),
        Op::PeRegWrite => Alone::One(InstClass::PeRegWrite, &OPAQUE),
        Op::Max8 => Alone::One(InstClass::Max, &OPAQUE),
        Op::MatchReplace8 => Alone::One(InstClass::MatchReplace, &OPAQUE),
        Op::BatchNormStats2 | Op::TransposeBatchNormStats2 => {
            Alone::One(InstClass::BnStats, &OPAQUE)
        }
        Op::BatchNormAggregate => Alone::One(InstClass::BnStatsAggregate, &OPAQUE),
        Op::BatchNormGradAccumulate | Op::BatchNormGradAccumulate2 => {
            Alone::One(InstClass::BnGradients, &OPAQUE)
        }
        Op::Rng => Alone::One(InstClass::Rng, &OPAQUE),
        Op::Rand => Alone::One(InstClass::Rand, &OPAQUE),
        Op::Rand2 => Alone::One(InstClass::Rand2, &OPAQUE),
        Op::RandGetState => Alone::One(InstClass::GetRandState, &OPAQUE),
        Op::RandSetState => Alone::One(InstClass::SetRandState, &OPAQUE),
        Op::Dropout => Alone::One(InstClass::Dropout, &OPAQUE),
        Op::IndirectCopy => Alone::One(InstClass::IndirectCopy, &OPAQUE),
        Op::Sort => Alone::One(InstClass::Sort, &OPAQUE),
        Op::NonzeroWithCount => Alone::One(InstClass::NonzeroWithCount, &OPAQUE),
        Op::GetSequenceBounds => Alone::One(InstClass::GetSequenceBounds, &OPAQUE),
        Op::Sb2sbCollective => Alone::One(InstClass::GpsimdSb2Sb, &OPAQUE),
        Op::SparsityCompress | Op::SparsityCompressTag => {
            Alone::One(InstClass::SparsityCompress, &OPAQUE)
        }
        Op::CrossLaneReduceArith | Op::CrossLaneReduceBitvec => {
            Alone::One(InstClass::CrossLaneReduce, &OPAQUE)
        }
        Op::ActivateMultipass => Alone::One(InstClass::ActivationMultipass, &OPAQUE),
        Op::DmaTranspose | Op::DmaGatherTranspose => Alone::One(InstClass::DmaTranspose, &OPAQUE),
        // Not lifted on their own: group members (`groups`), the pseudo band the runtime
        // rewrites, opcodes without a BIR class; the lifter keeps their bundle bytes.
        Op::Matmul
        | Op::WeightMask
        | Op::WeightShift
        | Op::Ldtags
        | Op::MatmulSparse
        | Op::PeManageSeed
        | Op::LdweightsMx
        | Op::MatmulMx
        | Op::RegLoad
        | Op::RegStore
        | Op::RegShuffle
        | Op::BatchNormStats
        | Op::BatchNormParamLoad
        | Op::BatchNormBackProp
        | Op::LoadParameterRam
        | Op::PoolBufferLoad
        | Op::Gather
        | Op::LoadMaskSelect
        | Op::StreamShuffle
        | Op::StreamTranspose
        | Op::MatchValueLoad
        | Op::FindIndex8
        | Op::RoiAlign
        | Op::TensorScalarAddr
        | Op::EmbeddingUpdate
        | Op::LoadPoolArgument
        | Op::JpegDecode
        | Op::CustomOpHeader
        | Op::CustomOpPayload
        | Op::BatchNormParamLoad2
        | Op::ModifyPoolConfig
        | Op::TensorScalarSelect
        | Op::TensorReduceRangeCheck
        | Op::InstructionFlush
        | Op::Write
        | Op::TensorLoad
        | Op::TensorStore
        | Op::SetOrderingMode
        | Op::MoveShape
        | Op::CompactControlInst
        | Op::UcodeConfig
        | Op::Dmamemcpy
        | Op::DmaMemcpy2
        | Op::DmaImmediate
        | Op::DmaIndirect
        | Op::PseudoDmarearm
        | Op::PseudoDmabarrier
        | Op::PseudoDmamemcpyFullInd
        | Op::PseudoSemaphoreSet
        | Op::PseudoTriggerAllReduce
        | Op::PseudoReadVarAddr
        | Op::PseudoEmbeddingUpdate
        | Op::PseudoBranchLabel
        | Op::PseudoTensorStore
        | Op::PseudoTensorLoad
        | Op::PseudoDmaswapQueueSet
        | Op::PseudoSetRngSeed
        | Op::PseudoFunctionBegin
        | Op::PseudoDmaDirect2d
        | Op::PseudoRangeCheck
        | Op::PseudoJpegDecode
        | Op::PseudoTriggerCollective2
        | Op::PseudoExtension
        | Op::PseudoCurProcessingRankId
        | Op::PseudoGidLoad
        | Op::PseudoTensorCompletion
        | Op::QuantizeMx
        | Op::ConvLutLoad
        | Op::CopyPredicatedScalar
        | Op::DveReadIndices
        | Op::Hint
        | Op::Invalid => Alone::Not,
    }
}

/// Single-bundle bindings: opcode → (class, form), ascending by opcode (COMPARE_BRANCH once per
/// class), from [`alone`].
pub(crate) fn singles() -> &'static [(u8, InstClass, &'static Form)] {
    static SINGLES: std::sync::OnceLock<Vec<(u8, InstClass, &'static Form)>> =
        std::sync::OnceLock::new();
    SINGLES.get_or_init(|| {
        let mut v = Vec::new();
        for &op in Op::ALL {
            match alone(op) {
                Alone::One(class, form) => v.push((op.code(), class, form)),
                Alone::Branch => {
                    v.push((op.code(), InstClass::CompareAndBranch, &BRANCH));
                    v.push((op.code(), InstClass::UnconditionalBranch, &BRANCH));
                }
                Alone::Exit => v.push((op.code(), InstClass::Exit, &PSEUDO)),
                Alone::SendRecv => {
                    v.push((op.code(), InstClass::CollectiveSend, &SEND_RECV));
                    v.push((op.code(), InstClass::CollectiveRecv, &SEND_RECV));
                }
                Alone::Not => {}
            }
        }
        v
    })
}

/// The class and form a single bundle lifts to in `gen` (the branch and exit rows are chosen
/// by the bundle's compare op / sub-op).
pub(crate) fn single(
    opcode: u8,
    b: &tpbsim_isa::Bundle,
    gen: Gen,
) -> Option<(InstClass, &'static Form)> {
    match alone(Op::of(opcode)?) {
        Alone::One(class, form) => Some((class, form)),
        Alone::Exit => (super::fields::read_loc(b, loc::pseudo_inst::SUB_OP, gen) == Some(1))
            .then_some((InstClass::Exit, &PSEUDO)),
        Alone::SendRecv => Some((
            if super::fields::read_loc(b, loc::send_recv::IS_SEND, gen).is_some_and(|v| v != 0) {
                InstClass::CollectiveSend
            } else {
                InstClass::CollectiveRecv
            },
            &SEND_RECV,
        )),
        Alone::Branch => Some((
            if super::fields::read_loc(b, loc::compare_branch::CMP_OP, gen) == Some(0) {
                InstClass::UnconditionalBranch
            } else {
                InstClass::CompareAndBranch
            },
            &BRANCH,
        )),
        Alone::Not => None,
    }
}

/// The forms a class may be lowered with, by opcode (for the `opcode` attribute).
pub(crate) fn forms_of(class: InstClass) -> impl Iterator<Item = (u8, &'static Form)> {
    static TS_EXTRA: [(u8, &Form); 1] = [(Opcode::TENSOR_SCALAR_CACHE_REDUCE.0, &TS)];
    let extra: &'static [(u8, &'static Form)] = match class {
        // TensorScalar with an accumulate command and one output lowers to 0x9A (seed 004).
        InstClass::TensorScalar => &TS_EXTRA,
        _ => &[],
    };
    singles()
        .iter()
        .filter(move |(_, c, _)| *c == class)
        .map(|&(op, _, f)| (op, f))
        .chain(extra.iter().copied())
}

/// An attribute value as an ALU op byte (by name or number); `None` when absent.
pub(crate) fn alu_attr(inst: &Instruction, key: &'static str) -> Result<Option<u8>, AttrError> {
    enum_attr(inst, key, "ALU_OP")
}

/// An enumeration attribute (by name or number); `None` when absent.
pub(crate) fn enum_attr(
    inst: &Instruction,
    key: &'static str,
    e: &'static str,
) -> Result<Option<u8>, AttrError> {
    match inst.attrs.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => super::fields::parse_enum(e, v)
            .map(Some)
            .map_err(|error| AttrError::Value { key, error }),
    }
}

/// Whether an ALU op is a bit-vector op other than BYPASS (the 0x5x opcodes' set, seed 004
/// `is_bitvec_op`).
pub(crate) fn is_bitvec(op: u8, gen: Gen) -> bool {
    op != 0 && spec::set("general_bitvec").is_some_and(|s| s.contains_in(op, gen))
}

/// `bitvec` when the ALU op in `attrs[key]` is a bit-vector op, else `arith`.
fn by_op(
    inst: &Instruction,
    key: &'static str,
    gen: Gen,
    bitvec: u8,
    arith: u8,
) -> Result<u8, AttrError> {
    Ok(if is_bitvec(alu_attr(inst, key)?.unwrap_or(0), gen) {
        bitvec
    } else {
        arith
    })
}

/// The seed-004 fan-in for a single-bundle class: the opcode for this instruction's dtypes,
/// engine, ALU op and generation, before any `opcode` attribute.
pub(crate) fn default_opcode(inst: &Instruction, gen: Gen) -> Result<u8, PlanError> {
    use InstClass as C;
    let arg_dt = |i: usize| inst.args.get(i).map(|a| a.dtype);
    let out_dt = |i: usize| inst.outs.get(i).map(|a| a.dtype);
    let wide = inst
        .attrs
        .get(super::ATTR_WIDE)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(match inst.class {
        C::TensorTensor => {
            let op = alu_attr(inst, "op")?.unwrap_or(0);
            if wide {
                Opcode::TENSOR_TENSOR_INT_WIDE.0
            } else if gen == Gen::V2
                && inst.engine == EngineType::Pool
                && arg_dt(0) == Some(NumFormat::Bfloat16)
                && arg_dt(1) == Some(NumFormat::Bfloat16)
                && inst.args.iter().all(packed_pairs)
                && matches!(AluOp(op), AluOp::ADD | AluOp::SUBTRACT | AluOp::MULT)
            {
                match AluOp(op) {
                    AluOp::ADD => Opcode::TENSOR_TENSOR_ADD_BF16.0,
                    AluOp::MULT => Opcode::TENSOR_TENSOR_MULT_BF16.0,
                    _ => Opcode::TENSOR_TENSOR_SUB_BF16.0,
                }
            } else if is_bitvec(op, gen) {
                Opcode::TENSOR_TENSOR_BITVEC_OP.0
            } else {
                Opcode::TENSOR_TENSOR_ARITH_OP.0
            }
        }
        C::TensorReduce => {
            let op = alu_attr(inst, "op")?.unwrap_or(0);
            if gen == Gen::V2
                && inst.engine == EngineType::Pool
                && arg_dt(0) == Some(NumFormat::Bfloat16)
                && matches!(AluOp(op), AluOp::ADD | AluOp::MAX)
            {
                if AluOp(op) == AluOp::ADD {
                    Opcode::TENSOR_REDUCE_ADD_BF16.0
                } else {
                    Opcode::TENSOR_REDUCE_MAX_BF16.0
                }
            } else if is_bitvec(op, gen) {
                Opcode::TENSOR_REDUCE_BITVEC_OP.0
            } else {
                Opcode::TENSOR_REDUCE_ARITH_OP.0
            }
        }
        C::TensorScalar => {
            if wide {
                Opcode::TENSOR_SCALAR_INT_WIDE.0
            } else {
                let op0 = alu_attr(inst, "op0")?.unwrap_or(0);
                let op1 = alu_attr(inst, "op1")?.unwrap_or(0);
                let acc = enum_attr(inst, "accumulator_cmd", "ACCUM_CMD")?.unwrap_or(0);
                if is_bitvec(op0, gen) && (op1 == 0 || is_bitvec(op1, gen)) {
                    Opcode::TENSOR_SCALAR_BITVEC_OP.0
                } else if acc != 0 {
                    Opcode::TENSOR_SCALAR_CACHE_REDUCE.0
                } else {
                    Opcode::TENSOR_SCALAR_ARITH_OP.0
                }
            }
        }
        C::TensorScalarPtr => by_op(
            inst,
            "op0",
            gen,
            Opcode::TENSOR_SCALAR_PTR_BITVEC_OP.0,
            Opcode::TENSOR_SCALAR_PTR_ARITH_OP.0,
        )?,
        C::TensorCumulative => by_op(
            inst,
            "op",
            gen,
            Opcode::TENSOR_CUMULATIVE_BITVEC_OP.0,
            Opcode::TENSOR_CUMULATIVE_ARITH_OP.0,
        )?,
        C::ScalarTensorTensor => by_op(
            inst,
            "op0",
            gen,
            Opcode::SCALAR_TENSOR_TENSOR_BITVEC.0,
            Opcode::SCALAR_TENSOR_TENSOR_ARITH.0,
        )?,
        C::TensorScalarCache => {
            match inst.attrs.get(super::ATTR_TSC_MODE).and_then(Value::as_str) {
                None | Some("Reduce") => Opcode::TENSOR_SCALAR_CACHE_REDUCE.0,
                Some("Cumulative") | Some("TensorScan") => Opcode::TENSOR_SCALAR_CACHE_CUMULATIVE.0,
                Some(other) => return Err(PlanError::TscMode(other.to_string())),
            }
        }
        C::TensorCopy => {
            if arg_dt(0).is_some() && arg_dt(0) != out_dt(0) {
                Opcode::CAST.0
            } else {
                Opcode::COPY.0
            }
        }
        C::CopyPredicated => {
            if arg_dt(0).is_some() && arg_dt(0) != out_dt(0) {
                Opcode::CAST_PREDICATED.0
            } else {
                Opcode::COPY_PREDICATED.0
            }
        }
        // Classes of several opcodes whose first one (by byte) is not the default.
        C::NoOp => Opcode::NOP.0,
        C::LoadActFuncSet => Opcode::PSEUDO_LOAD_ACT_FUNC_SET.0,
        other => match forms_of(other).next() {
            Some((op, _)) => op,
            None => return Err(PlanError::NoOpcode(other)),
        },
    })
}

/// The packed-pair pattern of the SUNDA BF16 opcodes: innermost step 1, even innermost count.
fn packed_pairs(ap: &crate::bir::AccessPattern) -> bool {
    match ap.pattern.last() {
        Some(d) => d.step == 1 && d.num % 2 == 0,
        None => false,
    }
}

/// The PE row/column group code of a partition range (facts §4.1): up to 32 partitions pick a
/// quadrant bit, up to 64 a half, more the whole array.
pub(crate) fn group_code(start: u64, size: u64) -> u8 {
    if size <= 32 {
        [1, 2, 4, 8][((start >> 5) & 3) as usize]
    } else if size <= 64 {
        [0x03, 0x0C, 0x20, 0x40][((start >> 6) & 3) as usize]
    } else {
        0x0F
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpbsim_isa::decode;

    #[test]
    fn every_single_form_names_real_fields() {
        for &(op, class, form) in singles() {
            let mut params_seen = vec![false; form.params.len()];
            for gen in Gen::ALL {
                let b = super::super::fields::canonical(op);
                let Ok(inst) = decode(&b, gen) else { continue };
                let meta = inst.meta();
                // Opaque forms, and opcodes without a typed layout in this generation (0x7B on
                // v2), keep their bytes.
                if form.format.is_empty() || meta.format_name() == "Raw" {
                    continue;
                }
                assert_eq!(meta.format_name(), form.format, "{op:#x} {class} {gen}");
                for r in form.args.iter().chain(form.outs) {
                    for l in [r.field, r.part] {
                        assert_eq!(l.format, form.format, "{op:#x} {}", l.name);
                        assert!(meta.field(l.name).is_some(), "{op:#x} {gen} {}", l.name);
                    }
                    if let Dt::Field(l) | Dt::Lo(l) | Dt::Hi(l) | Dt::PsumOut(l) = r.dt {
                        assert_eq!(l.format, form.format, "{op:#x} {}", l.name);
                        assert!(meta.field(l.name).is_some(), "{op:#x} {gen} {}", l.name);
                    }
                }
                for (seen, p) in params_seen.iter_mut().zip(form.params) {
                    assert_eq!(p.format, form.format, "{op:#x} {}", p.name);
                    *seen |= meta.field(p.name).is_some();
                }
            }
            for (seen, p) in params_seen.iter().zip(form.params) {
                assert!(
                    *seen || form.format.is_empty(),
                    "{op:#x} {class}: parameter `{}` is in no layout",
                    p.name
                );
            }
        }
    }

    #[test]
    fn group_codes() {
        assert_eq!(group_code(0, 32), 1);
        assert_eq!(group_code(96, 16), 8);
        assert_eq!(group_code(64, 64), 0x0C);
        assert_eq!(group_code(0, 128), 0x0F);
    }
}
