// The opcode catalog: every real opcode, the pseudo band 0xC1..0xDF, the compiler-only names
// and the INVALID sentinel. One row per opcode byte.

const LEDGER: &str = "G firmware/kernels/opcode-catalog-ledger.md";
const PSEUDO_SRC: &str = "R isa/pseudo-instruction-lowering.md";
const OPM: &str = "C walrus/opcode-master.md";

const E_PE: EngineClass = EngineClass::PE;
const E_ACT: EngineClass = EngineClass::ACT;
const E_POOL: EngineClass = EngineClass::POOL;
const E_DVE: EngineClass = EngineClass::DVE;
const E_PD: EngineClass = EngineClass::POOL.or(EngineClass::DVE);
const E_NX: EngineClass = EngineClass::NX;
const E_NXDMA: EngineClass = EngineClass::NX.or(EngineClass::DMA);
const E_POOLDMA: EngineClass = EngineClass::POOL.or(EngineClass::DMA);

const fn r(code: u8, name: &'static str, eng: EngineClass, hs: &'static str, fmt: &'static str, p: PresenceStr) -> OpcodeRow {
    OpcodeRow::new(code, name, OpKind::Real, eng, hs, fmt, p, LEDGER)
}

const fn ps(code: u8, name: &'static str, fmt: &'static str) -> OpcodeRow {
    OpcodeRow::new(code, name, OpKind::Pseudo, EngineClass::NX, "", fmt, "....", PSEUDO_SRC)
        .note("pseudo: engine class NX is project-defined (any engine's stream may carry it until the runtime rewrites it)")
}

/// Every opcode row, ascending by byte.
pub const OPCODES: &[OpcodeRow] = &[
    r(0x01, "LDWEIGHTS", E_PE, "S3_LW", "LdWeights", "YYYY"),
    r(0x02, "MATMUL", E_PE, "S3D3_MM", "Matmul", "YYYY"),
    r(0x03, "PE_REG_WRITE", E_PE, "", "", "YYYY").note("compiler label \"Write\" is a truncation of PeRegWrite"),
    r(0x04, "WEIGHT_MASK", E_PE, "", "", "nnnn"),
    r(0x05, "WEIGHT_SHIFT", E_PE, "", "", "nnnn"),
    r(0x06, "LDTAGS", E_PE, "S3_LT", "LdTags", "-YYY"),
    r(0x07, "MATMUL_SPARSE", E_PE, "S4D3_MM", "MatmulSparse", "-YYY"),
    r(0x08, "PE_MANAGE_SEED", E_PE, "S2S1D2_PE_SEED", "PeManageSeed", "--YY"),
    r(0x09, "LDWEIGHTS_MX", E_PE, "SMX1_LW", "LdWeightsMx", "--YY"),
    r(0x0A, "MATMUL_MX", E_PE, "SMX1D3_MM", "MatmulMx", "--YY"),
    r(0x21, "ACTIVATE", E_ACT, "S3D3_AC", "Activate", "YYYY"),
    r(0x22, "ACTIVATE_QUANTIZE", E_ACT, "S3D3_AQ", "ActivateQuantize", "YYYY"),
    r(0x23, "ACTIVATION_TABLE_LOAD", E_ACT, "CTRL_NO", "ActTableLoad", "YYYY"),
    r(0x24, "ACTIVATION_READ_ACCUMULATOR", E_ACT, "D1_RD", "ReadAccumulator", "YYYY"),
    r(0x25, "ACTIVATE2", E_ACT, "S2D2_AC", "Activate2", "--YY"),
    r(0x26, "ACTIVATE_MULTIPASS", E_ACT, "S1S2D2_AM", "", "---Y"),
    r(0x30, "EXPONENTIAL", E_DVE, "S3D3_TS", "TensorScalar", "....").note("engine: G ledger DVE, C opcode-master ACT (conflict D28)").sem("NotSimulated"),
    r(0x41, "TENSOR_TENSOR_ARITH_OP", E_PD, "S3S3D3_TT", "TensorTensor", "YYYY").sem("Elementwise"),
    r(0x42, "TENSOR_REDUCE_ARITH_OP", E_PD, "S4D4_TR", "TensorReduce", "YYYY").sem("Reduce"),
    r(0x43, "TENSOR_SCALAR_ARITH_OP", E_PD, "S3D3_TS", "TensorScalar", "YYYY").sem("Scalar"),
    r(0x44, "TENSOR_SCALAR_PTR_ARITH_OP", E_POOL, "S3D3_TS", "TensorScalar", "nnnn").sem("NotSimulated"),
    r(0x45, "POOL", E_POOL, "S4D4_PL", "Pool", "YYYY"),
    r(0x46, "COPY", E_PD, "S4D4_TR", "TensorReduce", "YYYY").sem("Copy"),
    r(0x47, "CAST", E_PD, "S4D4_TR", "TensorReduce", "YYYY").sem("Copy"),
    r(0x48, "RECIPROCAL", E_PD, "S4D4_TR", "TensorReduce", "YYYY").sem("Reciprocal"),
    r(0x49, "MEMSET", E_PD, "", "Memset", "YYYY"),
    r(0x4A, "REG_LOAD", E_POOL, "", "", "nnnn"),
    r(0x4B, "REG_STORE", E_POOL, "", "", "nnnn"),
    r(0x4C, "REG_SHUFFLE", E_POOL, "", "", "nnnn"),
    r(0x4D, "RNG", E_PD, "", "", "YYYY").note("also Memset(random); shares the byte with RNG"),
    r(0x4E, "TENSOR_CUMULATIVE_ARITH_OP", E_POOL, "S4D4_TR", "TensorReduce", "YYYY").sem("NotSimulated"),
    r(0x4F, "TENSOR_SCALAR_PTR_MULTI_ARITH", E_POOL, "S3D3_TS", "TensorScalar", "nnnn").sem("NotSimulated"),
    r(0x51, "TENSOR_TENSOR_BITVEC_OP", E_PD, "S3S3D3_TT", "TensorTensor", "YYYY").sem("Elementwise"),
    r(0x52, "TENSOR_REDUCE_BITVEC_OP", E_PD, "S4D4_TR", "TensorReduce", "YYYY").sem("Reduce"),
    r(0x53, "TENSOR_SCALAR_BITVEC_OP", E_PD, "S3D3_TS", "TensorScalar", "YYYY").sem("Scalar"),
    r(0x54, "TENSOR_SCALAR_PTR_BITVEC_OP", E_POOL, "S3D3_TS", "TensorScalar", "nnnn").sem("NotSimulated"),
    r(0x58, "MAX_POOL_SELECT", E_POOL, "S4D4_PL", "Pool", "YYYY"),
    r(0x5E, "TENSOR_CUMULATIVE_BITVEC_OP", E_POOL, "S4D4_TR", "TensorReduce", "YYYY").sem("NotSimulated"),
    r(0x5F, "TENSOR_SCALAR_PTR_MULTI_BITVEC", E_POOL, "S3D3_TS", "TensorScalar", "nnnn").sem("NotSimulated"),
    r(0x60, "BATCH_NORM_STATS", E_DVE, "", "", "nnnn"),
    r(0x61, "BATCH_NORM_STATS2", E_DVE, "S4D2_BN", "", "YYYY"),
    r(0x62, "BATCH_NORM_AGGREGATE", E_DVE, "", "", "YYYY"),
    r(0x63, "BATCH_NORM_GRAD_ACCUMULATE", E_DVE, "S3S3D1_BN", "", "nnnn").note("struct named by the v4 validator"),
    r(0x64, "BATCH_NORM_PARAM_LOAD", E_DVE, "", "", "nnnn").note("header name; C opcode-master swaps 0x64/0x65 (conflict D27)"),
    r(0x65, "BATCH_NORM_BACK_PROP", E_DVE, "S3S3D3_TT", "TensorTensor", "YYYY").sem("NotSimulated"),
    r(0x66, "LOAD_PARAMETER_RAM", E_DVE, "", "", "YYYY"),
    r(0x67, "POOL_BUFFER_LOAD", E_POOL, "", "", "YYYY").note("struct: pseudo-like"),
    r(0x68, "GATHER", E_POOL, "S4D4_GT", "", "YYYY"),
    r(0x69, "LOAD_MASK_SELECT", E_POOL, "", "", "YYYY"),
    r(0x6A, "STREAM_SHUFFLE", E_POOL, "S4D4_TR", "TensorReduce", "YYYY").sem("NotSimulated"),
    r(0x6B, "STREAM_TRANSPOSE", E_POOL, "S4D4_TR", "TensorReduce", "YYYY").sem("NotSimulated"),
    r(0x6C, "MAX8", E_DVE, "S4D2_BN", "", "YYYY"),
    r(0x6D, "MATCH_VALUE_LOAD", E_DVE, "S4D2_BN", "", "YYYY"),
    r(0x6E, "FIND_INDEX8", E_DVE, "S4D2_BN", "", "YYYY"),
    r(0x6F, "MATCH_REPLACE8", E_DVE, "S4D2_BN", "", "YYYY"),
    r(0x70, "TENSOR_SCALAR_IMM_LD_ARITH", E_POOL, "S3D3_TS", "TensorScalar", "nnnn").sem("NotSimulated"),
    r(0x71, "TENSOR_SCALAR_IMM_LD_BITVEC", E_POOL, "S3D3_TS", "TensorScalar", "nnnn").sem("NotSimulated"),
    r(0x72, "COPY_PREDICATED", E_PD, "S3S3D3_TT", "TensorTensor", "YYYY").note("header view: predicate = src0, data = src1 (conflict D26)").sem("Predicated"),
    r(0x73, "ROI_ALIGN", E_POOL, "S2S2D3_ROI", "", "nnnn"),
    r(0x74, "TENSOR_SCALAR_ADDR", E_PD, "S2D2_TS_AS", "", "YYYY"),
    r(0x76, "RAND", E_DVE, "", "", "nnnn"),
    r(0x77, "RAND_GET_STATE", E_PD, "", "", "YYYY"),
    r(0x78, "RAND_SET_STATE", E_PD, "", "", "YYYY"),
    r(0x79, "EMBEDDING_UPDATE", E_POOL, "", "", "YYYY"),
    r(0x7A, "LOAD_POOL_ARGUMENT", E_POOL, "", "", "YYYY"),
    r(0x7B, "TENSOR_DEQUANTIZE", E_POOL, "S3D3_TENS_DEQUANT", "TensorDequantize", "YYYY").note("enum value on all gens; struct absent on v2 (conflict D30)"),
    r(0x7C, "CROSS_LANE_REDUCE_ARITH", E_POOL, "S4D4_CR", "", "YYYY"),
    r(0x7D, "CROSS_LANE_REDUCE_BITVEC", E_POOL, "S4D4_CR", "", "YYYY"),
    r(0x7E, "IOTA", E_PD, "", "Iota", "YYYY"),
    r(0x7F, "DROPOUT", E_PD, "", "", "YYYY"),
    r(0x81, "JPEG_DECODE", E_POOL, "S2D2_JPEG", "", "-nnn"),
    r(0x82, "TRANSPOSE_BATCH_NORM_STATS2", E_DVE, "S4D2_BN", "", "YYYY"),
    r(0x83, "TRANSPOSE_TENSOR_REDUCE_ARITH_OP", E_POOL, "S4D4_TR", "TensorReduce", "YYYY").sem("TransposeReduce"),
    r(0x84, "TRANSPOSE_TENSOR_REDUCE_BITVEC_OP", E_POOL, "S4D4_TR", "TensorReduce", "YYYY").sem("TransposeReduce"),
    r(0x85, "CUSTOM_OP_HEADER", E_POOL, "CUSTOM_OP_HEADER", "", "YYYY").note("struct in the v2 header only"),
    r(0x86, "CUSTOM_OP_PAYLOAD", E_POOL, "CUSTOM_OP_PAYLOAD", "", "YYYY").note("struct in the v2 header only"),
    r(0x87, "TENSOR_SCALAR_PTR_MULTI_DUAL_ARITH", E_POOL, "S3D3_TS", "TensorScalar", "n---").sem("NotSimulated"),
    r(0x88, "TENSOR_SCALAR_PTR_MULTI_DUAL_BITVEC", E_POOL, "S3D3_TS", "TensorScalar", "n---").sem("NotSimulated"),
    r(0x8A, "TENSOR_TENSOR_ADD_BF16", E_POOL, "S3S3D3_TT", "TensorTensor", "Y---").sem("NotSimulated"),
    r(0x8B, "TENSOR_TENSOR_MULT_BF16", E_POOL, "S3S3D3_TT", "TensorTensor", "Y---").sem("NotSimulated"),
    r(0x8C, "TENSOR_REDUCE_ADD_BF16", E_POOL, "S4D4_TR", "TensorReduce", "Y---").sem("NotSimulated"),
    r(0x8D, "TENSOR_REDUCE_MAX_BF16", E_POOL, "S4D4_TR", "TensorReduce", "Y---").sem("NotSimulated"),
    r(0x8E, "BATCH_NORM_PARAM_LOAD2", E_DVE, "", "", "YYYY"),
    r(0x8F, "TENSOR_TENSOR_SUB_BF16", E_POOL, "S3S3D3_TT", "TensorTensor", "Y---").sem("NotSimulated"),
    r(0x92, "TENSOR_SCALAR_AFFINE_SELECT", E_PD, "S2D2_TS_AS", "AffineSelect", "YYYY").note("header struct S2D2_TS_AS (conflict P8)"),
    r(0x93, "TRANSPOSE_TENSOR_SCALAR_ARITH_OP", E_PD, "S3D3_TS", "TensorScalar", "YYYY").sem("NotSimulated"),
    r(0x94, "BATCH_NORM_GRAD_ACCUMULATE2", E_DVE, "S3S3D1_BN2", "", "YYYY").note("struct named by the v4 validator"),
    r(0x95, "MODIFY_POOL_CONFIG", E_POOL, "", "", "YYYY"),
    r(0x96, "SORT", E_POOL, "S1D2_SORT", "", "YYYY"),
    r(0x98, "TENSOR_SCALAR_SELECT", E_POOL, "S3D3_TS_SELECT", "TensorScalarSelect", "YYYY").note("header struct S3D3_TS_SELECT (conflict P8); G ts-select.md names DVE as its engine"),
    r(0x99, "CAST_PREDICATED", E_PD, "S3S3D3_TT", "TensorTensor", "YYYY").note("header view: predicate = src0, data = src1 (conflict D26)").sem("Predicated"),
    r(0x9A, "TENSOR_SCALAR_CACHE_REDUCE", E_PD, "S3D3_TS", "TensorScalar", "YYYY").sem("NotSimulated"),
    r(0x9B, "DVE_READ_ACCUMULATOR", E_DVE, "D1_RD", "ReadAccumulator", "YYYY"),
    r(0x9C, "TENSOR_REDUCE_RANGE_CHECK", E_POOL, "", "", "nnnn"),
    r(0x9D, "SCALAR_TENSOR_TENSOR_ARITH", E_PD, "S2S2D2_STT", "ScalarTensorTensor", "YYYY").note("C opcode-master names 0x9C (conflict D12)").sem("Arith"),
    r(0x9E, "SCALAR_TENSOR_TENSOR_BITVEC", E_PD, "S2S2D2_STT", "ScalarTensorTensor", "YYYY").sem("Bitvec"),
    r(0x9F, "ENGINE_NOP", E_NX, "CTRL", "Control", "YYYY").sem("EventsOnly"),
    r(0xA0, "EVENT_SEMAPHORE", E_NX, "CTRL_ES", "EventSemaphore", "YYYY"),
    r(0xA1, "HALT", E_NX, "CTRL", "Control", "YYYY").sem("Halt"),
    r(0xA2, "DRAIN", E_NX, "CTRL", "Drain", "YYYY"),
    r(0xA3, "INSTRUCTION_FLUSH", E_NX, "CTRL", "Control", "YYYY").sem("EventsOnly"),
    r(0xA4, "NOP", E_NX, "CTRL", "Control", "YYYY").sem("EventsOnly"),
    r(0xA5, "WRITE", E_NX, "CTRL", "Write", "YYYY"),
    r(0xA6, "NOTIFY", E_NX, "CTRL_NO", "Notify", "YYYY"),
    r(0xA7, "MOVE", E_NX, "CTRL", "", "YYYY").note("compiler label \"Move\" is a truncation of RegisterMove"),
    r(0xA8, "ALU_OP", E_NX, "CTRL_AL", "AluOpInst", "YYYY"),
    r(0xA9, "COMPARE_BRANCH", E_NX, "CTRL_BR", "CompareBranch", "YYYY"),
    r(0xAA, "TENSOR_LOAD", E_NX, "", "", "YYYY"),
    r(0xAB, "TENSOR_STORE", E_NX, "", "", "YYYY"),
    r(0xB0, "EVENT_SEMAPHORE_RANGE_CLEAR", E_NX, "CTRL", "EventSemaphoreRangeClear", "YYYY"),
    r(0xB1, "SET_ORDERING_MODE", E_NX, "CTRL", "OrderingMode", "YYYY"),
    r(0xB2, "MOVE_SHAPE", E_NX, "CTRL", "", "YYYY"),
    r(0xB3, "POLL_SEM", E_NX, "CTRL", "", "YYYY"),
    r(0xB4, "TEST_EVENT_SEM", E_NX, "CTRL_TEST_ES", "", "--YY"),
    r(0xB5, "BRANCH_PREFETCH_HINT", E_NX, "CTRL", "", "YYYY"),
    r(0xB6, "COMPACT_CONTROL_INST", E_NX, "", "", "---Y"),
    OpcodeRow::new(0xB7, "UCODE_CONFIG", OpKind::CompilerOnly, EngineClass::NX, "", "", "----", OPM)
        .note("named only by the compiler's core_v4 decoder; not in the shipped header union"),
    r(0xB8, "DMAMEMCPY", E_NXDMA, "DMA", "", "YYYY"),
    r(0xB9, "DMA_MEMCPY2", E_NXDMA, "DMA", "", "---Y"),
    r(0xBA, "DMA_IMMEDIATE", E_NXDMA, "DMA_IMMEDIATE", "", "---Y"),
    r(0xBB, "DMA_INDIRECT", E_NXDMA, "DMA_INDIRECT1D", "", "YYYY"),
    r(0xBC, "RANGE_SELECT", E_DVE, "S2D2_RS", "RangeSelect", "-YYY").note("engine: C opcode-master DVE, G ledger NX/DMA (conflict D29)"),
    r(0xBD, "DMA_TRANSPOSE", E_NXDMA, "DMA_DIRECT2D_XPOSE", "", "-YYY"),
    r(0xBE, "GET_SEQUENCE_BOUNDS", E_POOL, "S3D3_SEQ_BOUNDS", "", "-YYY"),
    r(0xBF, "SB2SB_COLLECTIVE", E_POOL, "S3D3_COLLECTIVE", "", "-YYY"),
    ps(0xC1, "DMATRIGGER", "DmaTrigger"),
    ps(0xC2, "DMAREARM", "").sem("NoEffect"),
    ps(0xC3, "DMABARRIER", "").sem("NotSimulated"),
    ps(0xC4, "DMAMEMCPY_FULL_IND", "").sem("NotSimulated"),
    ps(0xC5, "SEMAPHORE_SET", "").sem("NotSimulated"),
    ps(0xC6, "LOAD_ACT_FUNC_SET", "LoadActFuncSet"),
    ps(0xC7, "TRIGGER_ALL_REDUCE", "").sem("NotSimulated"),
    ps(0xC8, "TRIGGER_COLLECTIVE", "TriggerCollective"),
    ps(0xC9, "READ_VAR_ADDR", "").sem("NotSimulated"),
    ps(0xCA, "EMBEDDING_UPDATE", "").sem("NotSimulated"),
    ps(0xCB, "SEND_RECV", "SendRecv"),
    ps(0xCC, "BRANCH_LABEL", "").sem("NoEffect"),
    ps(0xCD, "TENSOR_STORE", "").sem("NotSimulated"),
    ps(0xCE, "TENSOR_LOAD", "").sem("NotSimulated"),
    ps(0xCF, "DMASWAP_QUEUE_SET", "").sem("NoEffect"),
    ps(0xD0, "SET_RNG_SEED", "").sem("NotSimulated"),
    ps(0xD1, "FUNCTION_BEGIN", "FunctionBegin"),
    ps(0xD2, "FUNCTION_RETURN", "").sem("FunctionReturn"),
    ps(0xD3, "FUNCTION_CALL", "FunctionCall"),
    ps(0xD4, "DMA_DIRECT2D", "DmaDirect2d"),
    ps(0xD5, "SYNC_BARRIER", "").sem("NotSimulated"),
    ps(0xD6, "RANGE_CHECK", "").sem("NotSimulated"),
    ps(0xD7, "JPEG_DECODE", "").sem("NotSimulated"),
    ps(0xD8, "CORE_BARRIER", "CoreBarrier"),
    ps(0xD9, "TRIGGER_COLLECTIVE2", "").sem("CollectivePlan"),
    ps(0xDA, "EXTENSION", "").sem("Extension"),
    ps(0xDB, "CUR_PROCESSING_RANK_ID", "CurProcessingRankId"),
    ps(0xDC, "GID_LOAD", "GidLoad"),
    ps(0xDD, "BRANCH_PREFETCH_HINT", "").sem("NotSimulated"),
    ps(0xDE, "TENSOR_COMPLETION", "").sem("NotSimulated"),
    ps(0xDF, "INST", "PseudoInst"),
    r(0xE0, "SPARSITY_COMPRESS", E_DVE, "S3D3_SC", "", "--YY"),
    r(0xE1, "SPARSITY_COMPRESS_TAG", E_DVE, "S2D2D2_SC", "", "--YY"),
    r(0xE2, "RAND2", E_DVE, "", "", "--YY"),
    r(0xE3, "QUANTIZE_MX", E_DVE, "S3DMX1_QUANT", "QuantizeMx", "--YY"),
    r(0xE4, "CONV_LUT_LOAD", E_POOL, "S2_CONVLUT", "", "-YYY"),
    r(0xE5, "TENSOR_TENSOR_SCAN_ARITH", E_PD, "S2S2D2_STT", "ScalarTensorTensor", "YYYY").sem("Scan"),
    r(0xE6, "TENSOR_SCALAR_CACHE_CUMULATIVE", E_PD, "S3D3_TS", "TensorScalar", "YYYY").sem("NotSimulated"),
    r(0xE7, "INDIRECT_COPY", E_POOL, "S4D4_IC", "", "YYYY").note("compiler treats it as v2-only (conflict D23)"),
    r(0xE8, "COPY_PREDICATED_SCALAR", E_PD, "S3D3_CP_PRED_SCALAR", "CopyPredScalar", "YYYY"),
    r(0xE9, "DVE_READ_INDICES", E_DVE, "", "", "-YYY"),
    r(0xEA, "SELECT_REDUCE", E_PD, "S2S2D2_STT", "SelectReduce", "YYYY"),
    OpcodeRow::new(0xEB, "HINT", OpKind::CompilerOnly, EngineClass::NX, "", "", "----", OPM)
        .note("named only by the compiler's core_v4 decoder; not in the shipped header union"),
    r(0xF0, "EXTENDED_INST", E_POOL, "EXTENDED", "Extended", "YYYY").note("v2 enum value without the sequencer bridge (conflict D30)"),
    r(0xF1, "DMA_GATHER_TRANSPOSE", E_POOLDMA, "DMA_GATHER_XPOSE", "", "-YYY"),
    r(0xF2, "NONZERO_WITH_COUNT", E_PD, "S3D3_NONZERO_WC", "", "-YYY"),
    r(0xF3, "TENSOR_TENSOR_INT_WIDE", E_PD, "S2S2D2D2_TT", "TensorTensorIntWide", "---Y").note("engine: validator channel constant suggests POOL (INFERRED)"),
    r(0xF4, "TENSOR_SCALAR_INT_WIDE", E_PD, "S2D2D2_TS_WIDE", "TensorScalarIntWide", "---Y").note("engine: validator channel constant suggests DVE (INFERRED)"),
    OpcodeRow::new(0xFF, "INVALID", OpKind::Invalid, EngineClass::NONE, "", "", "YYYY", LEDGER)
        .note("sentinel: member of the enum on every generation, never a valid instruction"),
];

/// An engine an opcode is legal on, on the generations `gens` marks, beyond its row's engine
/// column. The engine column stays the published catalog's (`isa/tests/it/catalog.rs`); these rows
/// carry what later evidence adds per generation. The L2 engine gate, the disassembler's engine
/// annotation and the L1 engine sets read the column plus these rows
/// ([`legal_engine_classes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineLegalRow {
    /// Opcode byte.
    pub code: u8,
    /// The engine classes added (PE, ACT, POOL, DVE; DMA stands for SP as in the engine column).
    pub engines: EngineClass,
    /// Generations v2..v5 the classes are added on (`Y` added, `-` not).
    pub gens: PresenceStr,
    /// Source.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
}

const COPY_ON_ACT: &str = "emitted by neuronx-cc 2.23 on ACT (Trn2 NEFFs, shared/real/nkipy/matmul_small.neff sg00/sg01 Activation.bin); NKI nki.isa.tensor_copy: \"Supported engines: NeuronCore v2: Vector, GpSimd; NeuronCore v3+: Vector, Scalar, GpSimd\"";

/// The per-generation engine legality rows, ascending by byte.
pub const ENGINE_LEGAL: &[EngineLegalRow] = &[
    EngineLegalRow { code: 0x46, engines: EngineClass::ACT, gens: "-YYY", prov: COPY_ON_ACT, note: "Copy: Scalar (ACT) engine from v3; not on v2" },
    EngineLegalRow { code: 0x47, engines: EngineClass::ACT, gens: "-YYY", prov: COPY_ON_ACT, note: "Cast (tensor_copy with differing dtypes): Scalar (ACT) engine from v3; not on v2" },
];

/// The engine classes `r` is legal on at generation index `gi` (0 = v2): its engine column
/// plus the [`ENGINE_LEGAL`] rows that mark the generation.
pub const fn legal_engine_classes(r: &OpcodeRow, gi: usize) -> EngineClass {
    let mut c = r.engines;
    let mut i = 0;
    while i < ENGINE_LEGAL.len() {
        let x = &ENGINE_LEGAL[i];
        if x.code == r.code && presence_at(x.gens, gi).is_present() {
            c = c.or(x.engines);
        }
        i += 1;
    }
    c
}

/// An engine the simulator executes an opcode on beyond the opcode row's engine column. The
/// engine column (and with it the L2 engine gate) stays as the sources give it; these rows only
/// widen where the machine runs the opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunsOnRow {
    /// Opcode byte.
    pub code: u8,
    /// The extra engine classes (PE, ACT, POOL, DVE; DMA stands for SP as in the engine column).
    pub engines: EngineClass,
    /// Source, or `project-defined`.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
}

const RUNS_ON_ACT: &str = "project-defined: the ACT engine runs the POOL/DVE elementwise forms (docs/machine.md execution table)";

/// The simulator's "runs on" column: engines each listed opcode also executes on. Every other
/// opcode runs exactly on its engine column.
pub const RUNS_ON: &[RunsOnRow] = &[
    RunsOnRow { code: 0x42, engines: EngineClass::ACT, prov: RUNS_ON_ACT, note: "TensorReduce (arith)" },
    RunsOnRow { code: 0x43, engines: EngineClass::ACT, prov: RUNS_ON_ACT, note: "TensorScalar (arith)" },
    RunsOnRow { code: 0x46, engines: EngineClass::ACT, prov: RUNS_ON_ACT, note: "Copy" },
    RunsOnRow { code: 0x47, engines: EngineClass::ACT, prov: RUNS_ON_ACT, note: "Cast" },
    RunsOnRow { code: 0x48, engines: EngineClass::ACT, prov: RUNS_ON_ACT, note: "Reciprocal" },
    RunsOnRow { code: 0x49, engines: EngineClass::ACT, prov: RUNS_ON_ACT, note: "Memset" },
    RunsOnRow { code: 0x52, engines: EngineClass::ACT, prov: RUNS_ON_ACT, note: "TensorReduce (bit-vector)" },
    RunsOnRow { code: 0x53, engines: EngineClass::ACT, prov: RUNS_ON_ACT, note: "TensorScalar (bit-vector)" },
    RunsOnRow { code: 0x98, engines: EngineClass::DVE, prov: TSSP_ENGINE, note: "TensorScalarSelect: the header catalog lists POOL" },
];

const TSSP_ENGINE: &str = "G firmware/kernels/ts-select.md";
