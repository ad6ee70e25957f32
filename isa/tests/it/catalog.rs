//! The opcode rows of the spec against an independent literal transcription of the digest's
//! catalog tables (isa-facts §5.1 real opcodes, §5.2 pseudo band), cell by cell as printed there.

use tpbsim_isa::spec::{self, EngineClass, OpKind};
use tpbsim_isa::{decode, Bundle, DecodeError, Gen, Inst};

/// (opcode, name, Eng column, Struct column, SU/CA/MA/MV column) exactly as printed in §5.1.
const REAL: &[(u8, &str, &str, &str, &str)] = &[
    (0x01, "LDWEIGHTS", "PE", "S3_LW", "YYYY"),
    (0x02, "MATMUL", "PE", "S3D3_MM", "YYYY"),
    (0x03, "PE_REG_WRITE", "PE", "—", "YYYY"),
    (0x04, "WEIGHT_MASK", "PE", "—", "nnnn"),
    (0x05, "WEIGHT_SHIFT", "PE", "—", "nnnn"),
    (0x06, "LDTAGS", "PE", "S3_LT", "-YYY"),
    (0x07, "MATMUL_SPARSE", "PE", "S4D3_MM", "-YYY"),
    (0x08, "PE_MANAGE_SEED", "PE", "S2S1D2_PE_SEED", "--YY"),
    (0x09, "LDWEIGHTS_MX", "PE", "SMX1_LW", "--YY"),
    (0x0A, "MATMUL_MX", "PE", "SMX1D3_MM", "--YY"),
    (0x21, "ACTIVATE", "ACT", "S3D3_AC", "YYYY"),
    (0x22, "ACTIVATE_QUANTIZE", "ACT", "S3D3_AQ", "YYYY"),
    (0x23, "ACTIVATION_TABLE_LOAD", "ACT", "CTRL_NO", "YYYY"),
    (0x24, "ACTIVATION_READ_ACCUMULATOR", "ACT", "D1_RD", "YYYY"),
    (0x25, "ACTIVATE2", "ACT", "S2D2_AC", "--YY"),
    (0x26, "ACTIVATE_MULTIPASS", "ACT", "S1S2D2_AM", "---Y"),
    (0x30, "EXPONENTIAL", "DVE (C: ACT)", "S3D3_TS", "...."),
    (
        0x41,
        "TENSOR_TENSOR_ARITH_OP",
        "POOL/DVE",
        "S3S3D3_TT",
        "YYYY",
    ),
    (
        0x42,
        "TENSOR_REDUCE_ARITH_OP",
        "POOL/DVE",
        "S4D4_TR",
        "YYYY",
    ),
    (
        0x43,
        "TENSOR_SCALAR_ARITH_OP",
        "POOL/DVE",
        "S3D3_TS",
        "YYYY",
    ),
    (
        0x44,
        "TENSOR_SCALAR_PTR_ARITH_OP",
        "POOL",
        "S3D3_TS",
        "nnnn",
    ),
    (0x45, "POOL", "POOL", "S4D4_PL", "YYYY"),
    (0x46, "COPY", "POOL/DVE", "S4D4_TR", "YYYY"),
    (0x47, "CAST", "POOL/DVE", "S4D4_TR", "YYYY"),
    (0x48, "RECIPROCAL", "POOL/DVE", "S4D4_TR", "YYYY"),
    (0x49, "MEMSET", "POOL/DVE", "—", "YYYY"),
    (0x4A, "REG_LOAD", "POOL", "—", "nnnn"),
    (0x4B, "REG_STORE", "POOL", "—", "nnnn"),
    (0x4C, "REG_SHUFFLE", "POOL", "—", "nnnn"),
    (0x4D, "RNG", "POOL/DVE", "—", "YYYY"),
    (
        0x4E,
        "TENSOR_CUMULATIVE_ARITH_OP",
        "POOL",
        "S4D4_TR",
        "YYYY",
    ),
    (
        0x4F,
        "TENSOR_SCALAR_PTR_MULTI_ARITH",
        "POOL",
        "S3D3_TS",
        "nnnn",
    ),
    (
        0x51,
        "TENSOR_TENSOR_BITVEC_OP",
        "POOL/DVE",
        "S3S3D3_TT",
        "YYYY",
    ),
    (
        0x52,
        "TENSOR_REDUCE_BITVEC_OP",
        "POOL/DVE",
        "S4D4_TR",
        "YYYY",
    ),
    (
        0x53,
        "TENSOR_SCALAR_BITVEC_OP",
        "POOL/DVE",
        "S3D3_TS",
        "YYYY",
    ),
    (
        0x54,
        "TENSOR_SCALAR_PTR_BITVEC_OP",
        "POOL",
        "S3D3_TS",
        "nnnn",
    ),
    (0x58, "MAX_POOL_SELECT", "POOL", "S4D4_PL", "YYYY"),
    (
        0x5E,
        "TENSOR_CUMULATIVE_BITVEC_OP",
        "POOL",
        "S4D4_TR",
        "YYYY",
    ),
    (
        0x5F,
        "TENSOR_SCALAR_PTR_MULTI_BITVEC",
        "POOL",
        "S3D3_TS",
        "nnnn",
    ),
    (0x60, "BATCH_NORM_STATS", "DVE", "—", "nnnn"),
    (0x61, "BATCH_NORM_STATS2", "DVE", "S4D2_BN", "YYYY"),
    (0x62, "BATCH_NORM_AGGREGATE", "DVE", "—", "YYYY"),
    (
        0x63,
        "BATCH_NORM_GRAD_ACCUMULATE",
        "DVE",
        "S3S3D1_BN (v4 validator)",
        "nnnn",
    ),
    (0x64, "BATCH_NORM_PARAM_LOAD", "DVE", "—", "nnnn"),
    (0x65, "BATCH_NORM_BACK_PROP", "DVE", "S3S3D3_TT", "YYYY"),
    (0x66, "LOAD_PARAMETER_RAM", "DVE", "—", "YYYY"),
    (0x67, "POOL_BUFFER_LOAD", "POOL", "pseudo-like", "YYYY"),
    (0x68, "GATHER", "POOL", "S4D4_GT", "YYYY"),
    (0x69, "LOAD_MASK_SELECT", "POOL", "—", "YYYY"),
    (0x6A, "STREAM_SHUFFLE", "POOL", "S4D4_TR", "YYYY"),
    (0x6B, "STREAM_TRANSPOSE", "POOL", "S4D4_TR", "YYYY"),
    (0x6C, "MAX8", "DVE", "S4D2_BN", "YYYY"),
    (0x6D, "MATCH_VALUE_LOAD", "DVE", "S4D2_BN", "YYYY"),
    (0x6E, "FIND_INDEX8", "DVE", "S4D2_BN", "YYYY"),
    (0x6F, "MATCH_REPLACE8", "DVE", "S4D2_BN", "YYYY"),
    (
        0x70,
        "TENSOR_SCALAR_IMM_LD_ARITH",
        "POOL",
        "S3D3_TS",
        "nnnn",
    ),
    (
        0x71,
        "TENSOR_SCALAR_IMM_LD_BITVEC",
        "POOL",
        "S3D3_TS",
        "nnnn",
    ),
    (0x72, "COPY_PREDICATED", "POOL/DVE", "S3S3D3_TT", "YYYY"),
    (0x73, "ROI_ALIGN", "POOL", "S2S2D3_ROI", "nnnn"),
    (0x74, "TENSOR_SCALAR_ADDR", "POOL/DVE", "S2D2_TS_AS", "YYYY"),
    (0x76, "RAND", "DVE", "—", "nnnn"),
    (0x77, "RAND_GET_STATE", "DVE/POOL", "—", "YYYY"),
    (0x78, "RAND_SET_STATE", "DVE/POOL", "—", "YYYY"),
    (0x79, "EMBEDDING_UPDATE", "POOL", "—", "YYYY"),
    (0x7A, "LOAD_POOL_ARGUMENT", "POOL", "—", "YYYY"),
    (
        0x7B,
        "TENSOR_DEQUANTIZE",
        "POOL",
        "S3D3_TENS_DEQUANT (v3+)",
        "Y Y Y Y (struct absent on v2)",
    ),
    (0x7C, "CROSS_LANE_REDUCE_ARITH", "POOL", "S4D4_CR", "YYYY"),
    (0x7D, "CROSS_LANE_REDUCE_BITVEC", "POOL", "S4D4_CR", "YYYY"),
    (0x7E, "IOTA", "POOL/DVE", "—", "YYYY"),
    (0x7F, "DROPOUT", "POOL/DVE", "—", "YYYY"),
    (0x81, "JPEG_DECODE", "POOL", "S2D2_JPEG", "-nnn"),
    (
        0x82,
        "TRANSPOSE_BATCH_NORM_STATS2",
        "DVE",
        "S4D2_BN",
        "YYYY",
    ),
    (
        0x83,
        "TRANSPOSE_TENSOR_REDUCE_ARITH_OP",
        "POOL",
        "S4D4_TR",
        "YYYY",
    ),
    (
        0x84,
        "TRANSPOSE_TENSOR_REDUCE_BITVEC_OP",
        "POOL",
        "S4D4_TR",
        "YYYY",
    ),
    (
        0x85,
        "CUSTOM_OP_HEADER",
        "POOL",
        "CUSTOM_OP_HEADER (struct v2 only)",
        "YYYY",
    ),
    (
        0x86,
        "CUSTOM_OP_PAYLOAD",
        "POOL",
        "CUSTOM_OP_PAYLOAD (struct v2 only)",
        "YYYY",
    ),
    (
        0x87,
        "TENSOR_SCALAR_PTR_MULTI_DUAL_ARITH",
        "POOL",
        "S3D3_TS",
        "n---",
    ),
    (
        0x88,
        "TENSOR_SCALAR_PTR_MULTI_DUAL_BITVEC",
        "POOL",
        "S3D3_TS",
        "n---",
    ),
    (0x8A, "TENSOR_TENSOR_ADD_BF16", "POOL", "S3S3D3_TT", "Y---"),
    (0x8B, "TENSOR_TENSOR_MULT_BF16", "POOL", "S3S3D3_TT", "Y---"),
    (0x8C, "TENSOR_REDUCE_ADD_BF16", "POOL", "S4D4_TR", "Y---"),
    (0x8D, "TENSOR_REDUCE_MAX_BF16", "POOL", "S4D4_TR", "Y---"),
    (0x8E, "BATCH_NORM_PARAM_LOAD2", "DVE", "—", "YYYY"),
    (0x8F, "TENSOR_TENSOR_SUB_BF16", "POOL", "S3S3D3_TT", "Y---"),
    (
        0x92,
        "TENSOR_SCALAR_AFFINE_SELECT",
        "POOL/DVE",
        // The digest's catalog says S3D3_TS; the header mapping says S2D2_TS_AS (conflict P8).
        "S2D2_TS_AS",
        "YYYY",
    ),
    (
        0x93,
        "TRANSPOSE_TENSOR_SCALAR_ARITH_OP",
        "POOL/DVE",
        "S3D3_TS",
        "YYYY",
    ),
    (
        0x94,
        "BATCH_NORM_GRAD_ACCUMULATE2",
        "DVE",
        "S3S3D1_BN2 (v4 validator)",
        "YYYY",
    ),
    (0x95, "MODIFY_POOL_CONFIG", "POOL", "—", "YYYY"),
    (0x96, "SORT", "POOL", "S1D2_SORT", "YYYY"),
    // The digest's catalog says S3D3_TS; the header mapping says S3D3_TS_SELECT (conflict P8).
    (
        0x98,
        "TENSOR_SCALAR_SELECT",
        "POOL",
        "S3D3_TS_SELECT",
        "YYYY",
    ),
    (0x99, "CAST_PREDICATED", "POOL/DVE", "S3S3D3_TT", "YYYY"),
    (
        0x9A,
        "TENSOR_SCALAR_CACHE_REDUCE",
        "POOL/DVE",
        "S3D3_TS",
        "YYYY",
    ),
    (0x9B, "DVE_READ_ACCUMULATOR", "DVE", "D1_RD", "YYYY"),
    (0x9C, "TENSOR_REDUCE_RANGE_CHECK", "POOL", "—", "nnnn"),
    (
        0x9D,
        "SCALAR_TENSOR_TENSOR_ARITH",
        "POOL/DVE",
        "S2S2D2_STT",
        "YYYY",
    ),
    (
        0x9E,
        "SCALAR_TENSOR_TENSOR_BITVEC",
        "POOL/DVE",
        "S2S2D2_STT",
        "YYYY",
    ),
    (0x9F, "ENGINE_NOP", "NX", "CTRL", "YYYY"),
    (0xA0, "EVENT_SEMAPHORE", "NX", "CTRL_ES", "YYYY"),
    (0xA1, "HALT", "NX", "CTRL", "YYYY"),
    (0xA2, "DRAIN", "NX", "CTRL", "YYYY"),
    (0xA3, "INSTRUCTION_FLUSH", "NX", "CTRL", "YYYY"),
    (0xA4, "NOP", "NX", "CTRL", "YYYY"),
    (0xA5, "WRITE", "NX", "CTRL", "YYYY"),
    (0xA6, "NOTIFY", "NX", "CTRL_NO", "YYYY"),
    (0xA7, "MOVE", "NX", "CTRL", "YYYY"),
    (0xA8, "ALU_OP", "NX", "CTRL_AL", "YYYY"),
    (0xA9, "COMPARE_BRANCH", "NX", "CTRL_BR", "YYYY"),
    (0xAA, "TENSOR_LOAD", "NX", "—", "YYYY"),
    (0xAB, "TENSOR_STORE", "NX", "—", "YYYY"),
    (0xB0, "EVENT_SEMAPHORE_RANGE_CLEAR", "NX", "CTRL", "YYYY"),
    (0xB1, "SET_ORDERING_MODE", "NX", "CTRL", "YYYY"),
    (0xB2, "MOVE_SHAPE", "NX", "CTRL", "YYYY"),
    (0xB3, "POLL_SEM", "NX", "CTRL", "YYYY"),
    (0xB4, "TEST_EVENT_SEM", "NX", "CTRL_TEST_ES", "--YY"),
    (0xB5, "BRANCH_PREFETCH_HINT", "NX", "CTRL", "YYYY"),
    (0xB6, "COMPACT_CONTROL_INST", "NX", "—", "---Y"),
    (0xB8, "DMAMEMCPY", "NX/DMA", "DMA", "YYYY"),
    (0xB9, "DMA_MEMCPY2", "NX/DMA", "DMA", "---Y"),
    (0xBA, "DMA_IMMEDIATE", "NX/DMA", "DMA_IMMEDIATE", "---Y"),
    (0xBB, "DMA_INDIRECT", "NX/DMA", "DMA_INDIRECT1D", "YYYY"),
    (
        0xBC,
        "RANGE_SELECT",
        "DVE (ledger: NX/DMA)",
        "S2D2_RS",
        "-YYY",
    ),
    (
        0xBD,
        "DMA_TRANSPOSE",
        "NX/DMA",
        "DMA_DIRECT2D_XPOSE",
        "-YYY",
    ),
    (
        0xBE,
        "GET_SEQUENCE_BOUNDS",
        "POOL",
        "S3D3_SEQ_BOUNDS",
        "-YYY",
    ),
    (0xBF, "SB2SB_COLLECTIVE", "POOL", "S3D3_COLLECTIVE", "-YYY"),
    (0xE0, "SPARSITY_COMPRESS", "DVE", "S3D3_SC", "--YY"),
    (0xE1, "SPARSITY_COMPRESS_TAG", "DVE", "S2D2D2_SC", "--YY"),
    (
        0xE2,
        "RAND2",
        "DVE",
        "— (XORWOW; rand headers added v4)",
        "--YY",
    ),
    (0xE3, "QUANTIZE_MX", "DVE", "S3DMX1_QUANT", "--YY"),
    (0xE4, "CONV_LUT_LOAD", "POOL", "S2_CONVLUT", "-YYY"),
    (
        0xE5,
        "TENSOR_TENSOR_SCAN_ARITH",
        "POOL/DVE",
        "S2S2D2_STT",
        "YYYY",
    ),
    (
        0xE6,
        "TENSOR_SCALAR_CACHE_CUMULATIVE",
        "POOL/DVE",
        "S3D3_TS",
        "YYYY",
    ),
    (0xE7, "INDIRECT_COPY", "POOL", "S4D4_IC", "YYYY"),
    (
        0xE8,
        "COPY_PREDICATED_SCALAR",
        "POOL/DVE",
        "S3D3_CP_PRED_SCALAR",
        "YYYY",
    ),
    (0xE9, "DVE_READ_INDICES", "DVE", "—", "-YYY"),
    (0xEA, "SELECT_REDUCE", "POOL/DVE", "S2S2D2_STT", "YYYY"),
    (
        0xF0,
        "EXTENDED_INST",
        "POOL",
        "EXTENDED_*",
        "Y Y Y Y (v2 has no bridge use)",
    ),
    (
        0xF1,
        "DMA_GATHER_TRANSPOSE",
        "POOL/DMA",
        "DMA_GATHER_XPOSE",
        "-YYY",
    ),
    (
        0xF2,
        "NONZERO_WITH_COUNT",
        "POOL/DVE",
        "S3D3_NONZERO_WC",
        "-YYY",
    ),
    (
        0xF3,
        "TENSOR_TENSOR_INT_WIDE",
        "DVE/POOL",
        "S2S2D2D2_TT",
        "---Y",
    ),
    (
        0xF4,
        "TENSOR_SCALAR_INT_WIDE",
        "DVE/POOL",
        "S2D2D2_TS_WIDE",
        "---Y",
    ),
    (0xFF, "INVALID", "—", "sentinel", "all"),
];

/// (opcode, name) of §5.2.
const PSEUDO: &[(u8, &str)] = &[
    (0xC1, "DMATRIGGER"),
    (0xC2, "DMAREARM"),
    (0xC3, "DMABARRIER"),
    (0xC4, "DMAMEMCPY_FULL_IND"),
    (0xC5, "SEMAPHORE_SET"),
    (0xC6, "LOAD_ACT_FUNC_SET"),
    (0xC7, "TRIGGER_ALL_REDUCE"),
    (0xC8, "TRIGGER_COLLECTIVE"),
    (0xC9, "READ_VAR_ADDR"),
    (0xCA, "EMBEDDING_UPDATE"),
    (0xCB, "SEND_RECV"),
    (0xCC, "BRANCH_LABEL"),
    (0xCD, "TENSOR_STORE"),
    (0xCE, "TENSOR_LOAD"),
    (0xCF, "DMASWAP_QUEUE_SET"),
    (0xD0, "SET_RNG_SEED"),
    (0xD1, "FUNCTION_BEGIN"),
    (0xD2, "FUNCTION_RETURN"),
    (0xD3, "FUNCTION_CALL"),
    (0xD4, "DMA_DIRECT2D"),
    (0xD5, "SYNC_BARRIER"),
    (0xD6, "RANGE_CHECK"),
    (0xD7, "JPEG_DECODE"),
    (0xD8, "CORE_BARRIER"),
    (0xD9, "TRIGGER_COLLECTIVE2"),
    (0xDA, "EXTENSION"),
    (0xDB, "CUR_PROCESSING_RANK_ID"),
    (0xDC, "GID_LOAD"),
    (0xDD, "BRANCH_PREFETCH_HINT"),
    (0xDE, "TENSOR_COMPLETION"),
    (0xDF, "INST"),
];

fn presence_of(cell: &str) -> String {
    if cell == "all" {
        return "YYYY".into();
    }
    let p: String = cell
        .chars()
        .filter(|c| matches!(c, 'Y' | 'n' | '.' | '-'))
        .take(4)
        .collect();
    assert_eq!(p.len(), 4, "cell {cell:?}");
    p
}

fn engines_of(cell: &str) -> EngineClass {
    let head = cell.split(" (").next().unwrap_or("");
    let mut c = EngineClass::NONE;
    for t in head.split('/') {
        c = c.or(match t.trim() {
            "PE" => EngineClass::PE,
            "ACT" => EngineClass::ACT,
            "POOL" => EngineClass::POOL,
            "DVE" => EngineClass::DVE,
            "NX" => EngineClass::NX,
            "DMA" => EngineClass::DMA,
            "—" => EngineClass::NONE,
            other => panic!("unknown engine token {other:?} in {cell:?}"),
        });
    }
    c
}

fn struct_of(cell: &str) -> &str {
    let head = cell.split(" (").next().unwrap_or("").trim();
    match head {
        "—" | "sentinel" | "pseudo-like" => "",
        "EXTENDED_*" => "EXTENDED",
        h => h,
    }
}

#[test]
fn every_real_opcode_matches_the_catalog() {
    assert_eq!(REAL.len(), 141, "140 real opcodes + INVALID");
    for &(code, name, eng, st, pres) in REAL {
        let row =
            spec::opcode(code).unwrap_or_else(|| panic!("no spec row for {code:#04x} {name}"));
        assert_eq!(row.name, name, "{code:#04x}");
        assert_eq!(
            row.presence,
            presence_of(pres),
            "{code:#04x} {name} presence"
        );
        assert_eq!(
            row.engines,
            engines_of(eng),
            "{code:#04x} {name} engines ({eng})"
        );
        assert_eq!(
            row.header_struct,
            struct_of(st),
            "{code:#04x} {name} struct"
        );
        let kind = if code == 0xFF {
            OpKind::Invalid
        } else {
            OpKind::Real
        };
        assert_eq!(row.kind, kind, "{code:#04x}");
    }
}

#[test]
fn pseudo_band_matches_the_catalog() {
    assert_eq!(PSEUDO.len(), 31);
    for (i, &(code, name)) in PSEUDO.iter().enumerate() {
        assert_eq!(code as usize, 0xC1 + i, "contiguous band");
        let row = spec::opcode(code).unwrap_or_else(|| panic!("no spec row for {code:#04x}"));
        assert_eq!((row.name, row.kind), (name, OpKind::Pseudo), "{code:#04x}");
        assert_eq!(row.mnemonic(), format!("PSEUDO_{name}"));
        for g in Gen::ALL {
            assert!(row.is_present(g));
        }
    }
}

#[test]
fn no_other_rows_than_catalog_and_compiler_only() {
    let listed = |c: u8| REAL.iter().any(|r| r.0 == c) || PSEUDO.iter().any(|r| r.0 == c);
    for row in spec::opcodes() {
        if !listed(row.code) {
            assert_eq!(
                row.kind,
                OpKind::CompilerOnly,
                "{:#04x} {}",
                row.code,
                row.name
            );
            assert!(matches!(row.code, 0xB7 | 0xEB));
            assert!(Gen::ALL.iter().all(|g| !row.is_present(*g)));
        }
    }
    assert_eq!(spec::opcodes().len(), 141 + 31 + 2);
}

#[test]
fn enum_sizes_per_generation() {
    // Digest: union 172 = 140 real + 31 pseudo + INVALID; header enum sizes 145/150/159/165
    // (v2 is one more in the rows: conflict P1).
    let count = |g: Gen| spec::opcodes().iter().filter(|r| r.is_present(g)).count();
    assert_eq!(
        [
            count(Gen::V2),
            count(Gen::V3),
            count(Gen::V4),
            count(Gen::V5)
        ],
        [146, 150, 159, 165]
    );
    let union = spec::opcodes()
        .iter()
        .filter(|r| Gen::ALL.iter().any(|g| r.is_present(*g)))
        .count();
    assert_eq!(union, 172);
    assert!(spec::conflicts().iter().any(|c| c.id == "P1"));
}

#[test]
fn decode_follows_presence_for_every_byte() {
    for g in Gen::ALL {
        for code in 0..=255u8 {
            let mut b = Bundle::ZERO;
            b.0[0] = code;
            b.0[1] = 0x10;
            let present = spec::opcode(code).is_some_and(|r| r.is_present(g));
            match decode(&b, g) {
                Ok(inst) => {
                    assert!(present, "{code:#04x} decoded on {g} but is absent");
                    assert_eq!(inst.opcode().0, code);
                    assert_eq!(inst.encode(), b);
                    let row = spec::opcode(code).unwrap();
                    let typed =
                        !row.format.is_empty() && spec::format(row.format).unwrap().applies_in(g);
                    assert_eq!(
                        !matches!(inst, Inst::Raw(_)),
                        typed,
                        "{code:#04x} on {g}: {}",
                        inst.format_name()
                    );
                }
                Err(e) => {
                    assert!(!present, "{code:#04x} rejected on {g}: {e}");
                    assert_eq!(
                        e,
                        DecodeError::UnknownOpcode {
                            opcode: code,
                            gen: g
                        }
                    );
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&format!("{code:#04x}")) && msg.contains(g.short()),
                        "{msg}"
                    );
                }
            }
        }
    }
}

#[test]
fn unknown_opcode_message_names_byte_and_generation() {
    let mut b = Bundle::ZERO;
    b.0[0] = 0x25;
    let e = decode(&b, Gen::V2).unwrap_err();
    assert_eq!(
        e.to_string(),
        "opcode 0x25 (ACTIVATE2) is absent on v2 (sunda); present on v4, v5"
    );
    b.0[0] = 0x00;
    assert_eq!(
        decode(&b, Gen::V3).unwrap_err().to_string(),
        "opcode 0x00 is not defined on v3 (cayman)"
    );
}
