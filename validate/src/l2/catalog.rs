//! The opcode catalog rows the L2 header and engine gates are computed from: opcode, header
//! name, executing-engine class and per-generation enum presence (isa-facts §5.1/§5.2).
//!
//! These rows restate the public opcode catalog for the validator until the declarative ISA
//! spec exposes the same rows; every table the validator uses ([`super::engine_gate`], the
//! opcode enum of [`super::header`]) is computed from them, never written by hand.

use tpbsim_isa::Gen;

use super::enums::ByteSet;

/// Bit of a wire engine in an engine-class mask (PE 0, ACT 1, POOL 2, DVE 3, SP 4).
pub const PE: u8 = 1 << 0;
/// ACT engine bit.
pub const ACT: u8 = 1 << 1;
/// POOL engine bit.
pub const POOL: u8 = 1 << 2;
/// DVE engine bit.
pub const DVE: u8 = 1 << 3;
/// SP engine bit.
pub const SP: u8 = 1 << 4;
/// Every engine: the NX sequencer control opcodes and DMA triggers run in every engine's
/// stream (project-defined reading of the "NX" class).
pub const ALL: u8 = PE | ACT | POOL | DVE | SP;
/// No engine (never legal).
pub const NONE: u8 = 0;

/// One opcode of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpcodeRow {
    /// Wire opcode byte.
    pub opcode: u8,
    /// Header enum name.
    pub name: &'static str,
    /// Engines that may execute it (bit mask of wire engine ids).
    pub engines: u8,
    /// Presence per generation v2..v5: `Y` maintained, `n` dormant, `.` present unflagged,
    /// `-` absent.
    pub presence: [u8; 4],
}

impl OpcodeRow {
    /// True when the opcode is a member of `gen`'s opcode enum.
    pub const fn present(&self, gen: Gen) -> bool {
        self.presence[gen.index()] != b'-'
    }
}

const fn row(opcode: u8, name: &'static str, engines: u8, presence: [u8; 4]) -> OpcodeRow {
    OpcodeRow {
        opcode,
        name,
        engines,
        presence,
    }
}

/// Real opcodes (isa-facts §5.1). Engine class "NX" and "NX/DMA" map to every engine;
/// "POOL/DMA" to POOL; 0x30 (DVE, compiler: ACT) to DVE and ACT; 0xBC (DVE, ledger: NX/DMA)
/// to DVE; 0xE4 CONV_LUT_LOAD to POOL and PE (the PE firmware also dispatches it).
pub const REAL: &[OpcodeRow] = &[
    row(0x01, "LDWEIGHTS", PE, *b"YYYY"),
    row(0x02, "MATMUL", PE, *b"YYYY"),
    row(0x03, "PE_REG_WRITE", PE, *b"YYYY"),
    row(0x04, "WEIGHT_MASK", PE, *b"nnnn"),
    row(0x05, "WEIGHT_SHIFT", PE, *b"nnnn"),
    row(0x06, "LDTAGS", PE, *b"-YYY"),
    row(0x07, "MATMUL_SPARSE", PE, *b"-YYY"),
    row(0x08, "PE_MANAGE_SEED", PE, *b"--YY"),
    row(0x09, "LDWEIGHTS_MX", PE, *b"--YY"),
    row(0x0A, "MATMUL_MX", PE, *b"--YY"),
    row(0x21, "ACTIVATE", ACT, *b"YYYY"),
    row(0x22, "ACTIVATE_QUANTIZE", ACT, *b"YYYY"),
    row(0x23, "ACTIVATION_TABLE_LOAD", ACT, *b"YYYY"),
    row(0x24, "ACTIVATION_READ_ACCUMULATOR", ACT, *b"YYYY"),
    row(0x25, "ACTIVATE2", ACT, *b"--YY"),
    row(0x26, "ACTIVATE_MULTIPASS", ACT, *b"---Y"),
    row(0x30, "EXPONENTIAL", DVE | ACT, *b"...."),
    row(0x41, "TENSOR_TENSOR_ARITH_OP", POOL | DVE, *b"YYYY"),
    row(0x42, "TENSOR_REDUCE_ARITH_OP", POOL | DVE, *b"YYYY"),
    row(0x43, "TENSOR_SCALAR_ARITH_OP", POOL | DVE, *b"YYYY"),
    row(0x44, "TENSOR_SCALAR_PTR_ARITH_OP", POOL, *b"nnnn"),
    row(0x45, "POOL", POOL, *b"YYYY"),
    row(0x46, "COPY", POOL | DVE, *b"YYYY"),
    row(0x47, "CAST", POOL | DVE, *b"YYYY"),
    row(0x48, "RECIPROCAL", POOL | DVE, *b"YYYY"),
    row(0x49, "MEMSET", POOL | DVE, *b"YYYY"),
    row(0x4A, "REG_LOAD", POOL, *b"nnnn"),
    row(0x4B, "REG_STORE", POOL, *b"nnnn"),
    row(0x4C, "REG_SHUFFLE", POOL, *b"nnnn"),
    row(0x4D, "RNG", POOL | DVE, *b"YYYY"),
    row(0x4E, "TENSOR_CUMULATIVE_ARITH_OP", POOL, *b"YYYY"),
    row(0x4F, "TENSOR_SCALAR_PTR_MULTI_ARITH", POOL, *b"nnnn"),
    row(0x51, "TENSOR_TENSOR_BITVEC_OP", POOL | DVE, *b"YYYY"),
    row(0x52, "TENSOR_REDUCE_BITVEC_OP", POOL | DVE, *b"YYYY"),
    row(0x53, "TENSOR_SCALAR_BITVEC_OP", POOL | DVE, *b"YYYY"),
    row(0x54, "TENSOR_SCALAR_PTR_BITVEC_OP", POOL, *b"nnnn"),
    row(0x58, "MAX_POOL_SELECT", POOL, *b"YYYY"),
    row(0x5E, "TENSOR_CUMULATIVE_BITVEC_OP", POOL, *b"YYYY"),
    row(0x5F, "TENSOR_SCALAR_PTR_MULTI_BITVEC", POOL, *b"nnnn"),
    row(0x60, "BATCH_NORM_STATS", DVE, *b"nnnn"),
    row(0x61, "BATCH_NORM_STATS2", DVE, *b"YYYY"),
    row(0x62, "BATCH_NORM_AGGREGATE", DVE, *b"YYYY"),
    row(0x63, "BATCH_NORM_GRAD_ACCUMULATE", DVE, *b"nnnn"),
    row(0x64, "BATCH_NORM_PARAM_LOAD", DVE, *b"nnnn"),
    row(0x65, "BATCH_NORM_BACK_PROP", DVE, *b"YYYY"),
    row(0x66, "LOAD_PARAMETER_RAM", DVE, *b"YYYY"),
    row(0x67, "POOL_BUFFER_LOAD", POOL, *b"YYYY"),
    row(0x68, "GATHER", POOL, *b"YYYY"),
    row(0x69, "LOAD_MASK_SELECT", POOL, *b"YYYY"),
    row(0x6A, "STREAM_SHUFFLE", POOL, *b"YYYY"),
    row(0x6B, "STREAM_TRANSPOSE", POOL, *b"YYYY"),
    row(0x6C, "MAX8", DVE, *b"YYYY"),
    row(0x6D, "MATCH_VALUE_LOAD", DVE, *b"YYYY"),
    row(0x6E, "FIND_INDEX8", DVE, *b"YYYY"),
    row(0x6F, "MATCH_REPLACE8", DVE, *b"YYYY"),
    row(0x70, "TENSOR_SCALAR_IMM_LD_ARITH", POOL, *b"nnnn"),
    row(0x71, "TENSOR_SCALAR_IMM_LD_BITVEC", POOL, *b"nnnn"),
    row(0x72, "COPY_PREDICATED", POOL | DVE, *b"YYYY"),
    row(0x73, "ROI_ALIGN", POOL, *b"nnnn"),
    row(0x74, "TENSOR_SCALAR_ADDR", POOL | DVE, *b"YYYY"),
    row(0x76, "RAND", DVE, *b"nnnn"),
    row(0x77, "RAND_GET_STATE", POOL | DVE, *b"YYYY"),
    row(0x78, "RAND_SET_STATE", POOL | DVE, *b"YYYY"),
    row(0x79, "EMBEDDING_UPDATE", POOL, *b"YYYY"),
    row(0x7A, "LOAD_POOL_ARGUMENT", POOL, *b"YYYY"),
    row(0x7B, "TENSOR_DEQUANTIZE", POOL, *b"YYYY"),
    row(0x7C, "CROSS_LANE_REDUCE_ARITH", POOL, *b"YYYY"),
    row(0x7D, "CROSS_LANE_REDUCE_BITVEC", POOL, *b"YYYY"),
    row(0x7E, "IOTA", POOL | DVE, *b"YYYY"),
    row(0x7F, "DROPOUT", POOL | DVE, *b"YYYY"),
    row(0x81, "JPEG_DECODE", POOL, *b"-nnn"),
    row(0x82, "TRANSPOSE_BATCH_NORM_STATS2", DVE, *b"YYYY"),
    row(0x83, "TRANSPOSE_TENSOR_REDUCE_ARITH_OP", POOL, *b"YYYY"),
    row(0x84, "TRANSPOSE_TENSOR_REDUCE_BITVEC_OP", POOL, *b"YYYY"),
    row(0x85, "CUSTOM_OP_HEADER", POOL, *b"YYYY"),
    row(0x86, "CUSTOM_OP_PAYLOAD", POOL, *b"YYYY"),
    row(0x87, "TENSOR_SCALAR_PTR_MULTI_DUAL_ARITH", POOL, *b"n---"),
    row(0x88, "TENSOR_SCALAR_PTR_MULTI_DUAL_BITVEC", POOL, *b"n---"),
    row(0x8A, "TENSOR_TENSOR_ADD_BF16", POOL, *b"Y---"),
    row(0x8B, "TENSOR_TENSOR_MULT_BF16", POOL, *b"Y---"),
    row(0x8C, "TENSOR_REDUCE_ADD_BF16", POOL, *b"Y---"),
    row(0x8D, "TENSOR_REDUCE_MAX_BF16", POOL, *b"Y---"),
    row(0x8E, "BATCH_NORM_PARAM_LOAD2", DVE, *b"YYYY"),
    row(0x8F, "TENSOR_TENSOR_SUB_BF16", POOL, *b"Y---"),
    row(0x92, "TENSOR_SCALAR_AFFINE_SELECT", POOL | DVE, *b"YYYY"),
    row(
        0x93,
        "TRANSPOSE_TENSOR_SCALAR_ARITH_OP",
        POOL | DVE,
        *b"YYYY",
    ),
    row(0x94, "BATCH_NORM_GRAD_ACCUMULATE2", DVE, *b"YYYY"),
    row(0x95, "MODIFY_POOL_CONFIG", POOL, *b"YYYY"),
    row(0x96, "SORT", POOL, *b"YYYY"),
    row(0x98, "TENSOR_SCALAR_SELECT", POOL, *b"YYYY"),
    row(0x99, "CAST_PREDICATED", POOL | DVE, *b"YYYY"),
    row(0x9A, "TENSOR_SCALAR_CACHE_REDUCE", POOL | DVE, *b"YYYY"),
    row(0x9B, "DVE_READ_ACCUMULATOR", DVE, *b"YYYY"),
    row(0x9C, "TENSOR_REDUCE_RANGE_CHECK", POOL, *b"nnnn"),
    row(0x9D, "SCALAR_TENSOR_TENSOR_ARITH", POOL | DVE, *b"YYYY"),
    row(0x9E, "SCALAR_TENSOR_TENSOR_BITVEC", POOL | DVE, *b"YYYY"),
    row(0x9F, "ENGINE_NOP", ALL, *b"YYYY"),
    row(0xA0, "EVENT_SEMAPHORE", ALL, *b"YYYY"),
    row(0xA1, "HALT", ALL, *b"YYYY"),
    row(0xA2, "DRAIN", ALL, *b"YYYY"),
    row(0xA3, "INSTRUCTION_FLUSH", ALL, *b"YYYY"),
    row(0xA4, "NOP", ALL, *b"YYYY"),
    row(0xA5, "WRITE", ALL, *b"YYYY"),
    row(0xA6, "NOTIFY", ALL, *b"YYYY"),
    row(0xA7, "MOVE", ALL, *b"YYYY"),
    row(0xA8, "ALU_OP", ALL, *b"YYYY"),
    row(0xA9, "COMPARE_BRANCH", ALL, *b"YYYY"),
    row(0xAA, "TENSOR_LOAD", ALL, *b"YYYY"),
    row(0xAB, "TENSOR_STORE", ALL, *b"YYYY"),
    row(0xB0, "EVENT_SEMAPHORE_RANGE_CLEAR", ALL, *b"YYYY"),
    row(0xB1, "SET_ORDERING_MODE", ALL, *b"YYYY"),
    row(0xB2, "MOVE_SHAPE", ALL, *b"YYYY"),
    row(0xB3, "POLL_SEM", ALL, *b"YYYY"),
    row(0xB4, "TEST_EVENT_SEM", ALL, *b"--YY"),
    row(0xB5, "BRANCH_PREFETCH_HINT", ALL, *b"YYYY"),
    row(0xB6, "COMPACT_CONTROL_INST", ALL, *b"---Y"),
    row(0xB8, "DMAMEMCPY", ALL, *b"YYYY"),
    row(0xB9, "DMA_MEMCPY2", ALL, *b"---Y"),
    row(0xBA, "DMA_IMMEDIATE", ALL, *b"---Y"),
    row(0xBB, "DMA_INDIRECT", ALL, *b"YYYY"),
    row(0xBC, "RANGE_SELECT", DVE, *b"-YYY"),
    row(0xBD, "DMA_TRANSPOSE", ALL, *b"-YYY"),
    row(0xBE, "GET_SEQUENCE_BOUNDS", POOL, *b"-YYY"),
    row(0xBF, "SB2SB_COLLECTIVE", POOL, *b"-YYY"),
    row(0xE0, "SPARSITY_COMPRESS", DVE, *b"--YY"),
    row(0xE1, "SPARSITY_COMPRESS_TAG", DVE, *b"--YY"),
    row(0xE2, "RAND2", DVE, *b"--YY"),
    row(0xE3, "QUANTIZE_MX", DVE, *b"--YY"),
    row(0xE4, "CONV_LUT_LOAD", POOL | PE, *b"-YYY"),
    row(0xE5, "TENSOR_TENSOR_SCAN_ARITH", POOL | DVE, *b"YYYY"),
    row(0xE6, "TENSOR_SCALAR_CACHE_CUMULATIVE", POOL | DVE, *b"YYYY"),
    row(0xE7, "INDIRECT_COPY", POOL, *b"YYYY"),
    row(0xE8, "COPY_PREDICATED_SCALAR", POOL | DVE, *b"YYYY"),
    row(0xE9, "DVE_READ_INDICES", DVE, *b"-YYY"),
    row(0xEA, "SELECT_REDUCE", POOL | DVE, *b"YYYY"),
    row(0xF0, "EXTENDED_INST", POOL, *b"YYYY"),
    row(0xF1, "DMA_GATHER_TRANSPOSE", POOL, *b"-YYY"),
    row(0xF2, "NONZERO_WITH_COUNT", POOL | DVE, *b"-YYY"),
    row(0xF3, "TENSOR_TENSOR_INT_WIDE", POOL | DVE, *b"---Y"),
    row(0xF4, "TENSOR_SCALAR_INT_WIDE", POOL | DVE, *b"---Y"),
];

/// Pseudo opcodes 0xC1..=0xDF (compiler-emitted, rewritten by the runtime before loading);
/// present on every generation and emitted into every engine's stream.
pub const PSEUDO: ByteSet = ByteSet::range(0xC1, 0xDF);

/// The INVALID sentinel (never a legal instruction).
pub const INVALID_OPCODE: u8 = 0xFF;

/// Name of an opcode (real or pseudo).
pub fn name(opcode: u8) -> &'static str {
    if let Some(r) = REAL.iter().find(|r| r.opcode == opcode) {
        return r.name;
    }
    match opcode {
        0xC1..=0xDF => "PSEUDO",
        0xFF => "INVALID",
        _ => "unknown",
    }
}

/// The row of a real opcode.
pub fn row_of(opcode: u8) -> Option<&'static OpcodeRow> {
    REAL.iter().find(|r| r.opcode == opcode)
}

/// `NEURON_ISA_TPB_OPCODE` members on `gen`: real opcodes present on `gen` plus the pseudo
/// band (INVALID excluded).
pub fn opcode_enum(gen: Gen) -> ByteSet {
    REAL.iter()
        .filter(|r| r.present(gen))
        .fold(PSEUDO, |s, r| s.with(r.opcode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_enum_size_matches_header() {
        // Header enum sizes are 145 / 150 / 159 / 165 (INVALID not counted). The public
        // catalog reproduces v2 exactly and is one member short from v3 on (the missing
        // member is not named by the public sources).
        assert_eq!(opcode_enum(Gen::V2).len(), 145);
        assert_eq!(opcode_enum(Gen::V3).len(), 149);
        assert_eq!(opcode_enum(Gen::V4).len(), 158);
        assert_eq!(opcode_enum(Gen::V5).len(), 164);
        assert!(!opcode_enum(Gen::V4).has(0x00) && !opcode_enum(Gen::V4).has(INVALID_OPCODE));
    }

    #[test]
    fn rows_unique() {
        let mut seen = ByteSet::EMPTY;
        for r in REAL {
            assert!(!seen.has(r.opcode), "duplicate {:#x}", r.opcode);
            assert!(!PSEUDO.has(r.opcode));
            seen = seen.with(r.opcode);
        }
    }
}
