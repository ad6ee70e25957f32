//! The sequencer's pseudo band and bridges: `is_valid_dma_direct2d` (pseudo 0xD4),
//! `is_valid_pseudo` (the named pseudo instructions 0xC1, 0xC6, 0xD1, 0xD3 and PSEUDO_INST
//! 0xDF) and `is_valid_extended` (EXTENDED_INST 0xF0).
//!
//! Layouts: isa-facts §4.4–§4.6 (G dma/descriptor-ring-field-tables.md, R
//! isa/pseudo-instruction-lowering.md, G firmware/kernels/intwide-bf16-extremes.md). The pseudo
//! band is rewritten by the runtime before the device decodes it; its gates check what the
//! compiler-side layout fixes.

use super::super::addr::{self, Operand, Placement};
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{check, check_dtypes, DtypeRule, FieldRule, GateTable};
use super::{spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::ByteSet;

rule!(DGE_OPCODE_ENUM, "is_valid_enum(DGE_OPCODE)", Format,
    public "G dma/descriptor-ring-field-tables.md (DMA_DIRECT2D +15 dge_op: DIRECT2D 0, INDIRECT1D 1, TRANSPOSE 2, GATHER_TRANSPOSE 3); the compiler's sync-command reading (COPY 3, TRANSPOSE 1) stays inside the same range (isa-facts §10 #34)",
    "dge_op is a DGE_OPCODE member (0..=3)");
rule!(DMA_ADDR8, "is_valid_dma_direct2d.addr8", Format,
    project "the ADDR8 marker byte has two published encodings (compiler pseudo form vs runtime header form, isa-facts §10 #32) and the descriptor's dtype/count conditions are not public; reported as not checked",
    "DMA_DIRECT2D ADDR8 operands, counts and dtypes");
rule!(PSEUDO_NAME, "is_valid_pseudo.name", Format,
    project "pseudo-instruction names (queue, function, activation-set) are NUL-padded C strings; tpbsim requires a non-empty printable-ASCII name followed only by NUL bytes",
    "the name field is a non-empty printable-ASCII string padded with NUL bytes");
rule!(PSEUDO_INST_OP_ENUM, "is_valid_enum(PSEUDO_INST_OP)", Format,
    public "isa-facts §4.4 (PSEUDO_INST 0xDF sub-op: EXIT 1, LIBRARY_RELOAD_INDEX 2)",
    "the PSEUDO_INST sub-op is EXIT 1 or LIBRARY_RELOAD_INDEX 2");
rule!(EXT_OPCODE_ENUM, "is_valid_enum(EXT_OPCODE)", Format,
    public "isa-facts §4.6 (EXTENDED_INST sub-opcodes 0..=9, 5 reserved)",
    "the extended sub-opcode is a member (0..=9 except 5)");
rule!(EXT_TTA_OP, "is_valid_extended_tta.op", Format,
    public "isa-facts §4.6 (EXTENDED_TTA op ADD or MULT only)",
    "EXTENDED_TTA op is ADD 0x04 or MULT 0x06");
rule!(EXT_PAYLOAD, "is_valid_extended.payload", Format,
    project "only the EXTENDED_TTA operands are published; other sub-opcodes' payloads and every completion_info byte are reported as not checked",
    "the extended payload of this sub-opcode");

/// DMA_DIRECT2D dge_op / sync-command byte.
pub const DMA_DGE_OP: Field = Field::at(loc::dma_direct2d::DGE_OP);
/// DMA_DIRECT2D source ADDR8.
pub const DMA_SRC: Field = Field::at(loc::dma_direct2d::SRC);

/// DMA_DIRECT2D enum stage.
pub const DMA_ENUMS: &[FieldRule] = &[FieldRule::set(
    &DGE_OPCODE_ENUM,
    DMA_DGE_OP,
    ByteSet::range(0, 3),
    "0..=3",
)];
/// The rule data of `is_valid_dma_direct2d`.
pub const DMA_TABLE: GateTable = GateTable {
    fields: &[DMA_ENUMS],
    dtypes: &[],
    operands: &[],
};

/// `is_valid_dma_direct2d`: DMA_DIRECT2D pseudo 0xD4.
pub fn is_valid_dma_direct2d<S: Sink>(ck: &mut Ck<S>) {
    check(ck, DMA_ENUMS);
    spec_reserved(ck);
    ck.not_checked(
        &DMA_ADDR8,
        DMA_SRC,
        Allowed::Text("no single public reading"),
    );
}

/// The name field of a named pseudo instruction: (offset, length).
pub const fn name_field(opcode: u8) -> Option<Field> {
    match opcode {
        0xC1 => Some(Field::at(loc::dma_trigger::QUEUE_NAME)),
        0xC6 => Some(Field::at(loc::load_act_func_set::ACT_SET_NAME)),
        0xD1 => Some(Field::at(loc::function_begin::NAME)),
        0xD3 => Some(Field::at(loc::function_call::NAME)),
        _ => None,
    }
}

/// True when `bytes` is a non-empty printable-ASCII string followed only by NUL bytes.
pub fn is_padded_name(bytes: &[u8]) -> bool {
    let n = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    n > 0
        && bytes[..n].iter().all(|c| (0x20..0x7F).contains(c))
        && bytes[n..].iter().all(|&c| c == 0)
}

/// PSEUDO_INST sub-op.
pub const PSEUDO_SUB_OP: Field = Field::at(loc::pseudo_inst::SUB_OP);

/// PSEUDO_INST enum stage.
pub const PSEUDO_ENUMS: &[FieldRule] = &[FieldRule::set(
    &PSEUDO_INST_OP_ENUM,
    PSEUDO_SUB_OP,
    ByteSet::range(1, 2),
    "1 or 2",
)
.only(&[0xDF])];
/// The rule data of `is_valid_pseudo`.
pub const PSEUDO_TABLE: GateTable = GateTable {
    fields: &[PSEUDO_ENUMS],
    dtypes: &[],
    operands: &[],
};

/// `is_valid_pseudo`: DmaTrigger 0xC1, LoadActFuncSet 0xC6, FunctionBegin 0xD1, FunctionCall
/// 0xD3 (name strings) and PSEUDO_INST 0xDF (sub-op).
pub fn is_valid_pseudo<S: Sink>(ck: &mut Ck<S>) {
    let op = ck.u8(0);
    check(ck, PSEUDO_ENUMS);
    spec_reserved(ck);
    if let Some(f) = name_field(op) {
        let (s, e) = (f.start as usize, f.start as usize + f.len as usize);
        if !is_padded_name(&ck.b.0[s..e]) {
            // Report the first 8 bytes of the name (the value column holds up to 8 bytes).
            let shown = f.head(8);
            let v = ck.get(shown);
            ck.fail(
                &PSEUDO_NAME,
                shown,
                v,
                Allowed::Text("a non-empty printable-ASCII name, NUL-padded"),
            );
        }
    }
}

/// Extended sub-opcode.
pub const EXT_OP: Field = Field::at(loc::extended::EXT_OPCODE);
/// Extended completion info.
pub const EXT_COMPLETION: Field = Field::at(loc::extended::COMPLETION_INFO);
/// EXTENDED_TTA source dtypes.
pub const TTA_IN0: Field = Field::sub_at(loc::extended_tta::IN_DTYPES, "src0 (low nibble)");
/// EXTENDED_TTA second source dtype.
pub const TTA_IN1: Field = Field::sub_at(loc::extended_tta::IN_DTYPES, "src1 (high nibble)");
/// EXTENDED_TTA output dtype.
pub const TTA_OUT: Field = Field::at(loc::extended_tta::OUT_DTYPE);
/// EXTENDED_TTA op.
pub const TTA_OP: Field = Field::at(loc::extended_tta::OP);
/// EXTENDED_TTA sources and destination.
pub const TTA_SRC0: Operand = Operand::at(loc::extended_tta::SRC0);
/// Second source.
pub const TTA_SRC1: Operand = Operand::at(loc::extended_tta::SRC1);
/// Destination.
pub const TTA_DST: Operand = Operand::at(loc::extended_tta::DST);

/// EXTENDED_INST enum stage.
pub const EXT_ENUMS: &[FieldRule] = &[FieldRule::set(
    &EXT_OPCODE_ENUM,
    EXT_OP,
    ByteSet::range(0, 9).minus(ByteSet::of(&[5])),
    "0..=9 except 5",
)];
/// EXTENDED_TTA dtype stage (sub-opcode 2 only).
pub const TTA_DTYPES: &[DtypeRule] = &[
    DtypeRule::nibble(TTA_IN0, false, DtypeOpts::PLAIN).when(EXT_OP, tensor_tensor_arith),
    DtypeRule::nibble(TTA_IN1, true, DtypeOpts::PLAIN).when(EXT_OP, tensor_tensor_arith),
    DtypeRule::byte(TTA_OUT, DtypeOpts::FP32R).when(EXT_OP, tensor_tensor_arith),
];
/// The rule data of `is_valid_extended` (the TENSOR_TENSOR_ARITH op and operands depend on
/// the sub-opcode and stay procedural).
pub const EXT_TABLE: GateTable = GateTable {
    fields: &[EXT_ENUMS],
    dtypes: &[TTA_DTYPES],
    operands: &[],
};

/// True for the TENSOR_TENSOR_ARITH sub-opcode (2).
const fn tensor_tensor_arith(sub: u8) -> bool {
    sub == 2
}

/// `is_valid_extended`: EXTENDED_INST 0xF0; the TENSOR_TENSOR_ARITH sub-opcode (2) is checked
/// in full, the others for their sub-opcode and reserved bytes.
pub fn is_valid_extended<S: Sink>(ck: &mut Ck<S>) {
    let sub = ck.get(EXT_OP) as u8;
    check(ck, EXT_ENUMS);
    if sub == 2 {
        ck.check(
            matches!(ck.get(TTA_OP), 0x04 | 0x06),
            &EXT_TTA_OP,
            TTA_OP,
            Allowed::Text("ADD 0x04 or MULT 0x06"),
        );
    }
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    ck.not_checked(
        &EXT_PAYLOAD,
        EXT_COMPLETION,
        Allowed::Text("no public condition"),
    );
    if sub != 2 {
        return;
    }
    let pair = ck.get(TTA_IN0) as u8;
    let (a, b, o) = (pair & 0xF, pair >> 4, ck.get(TTA_OUT) as u8);
    check_dtypes(ck, TTA_DTYPES);
    if ck.done() {
        return;
    }
    addr::tensor_valid(ck, TTA_SRC0, 2, a, Placement::READ_ANY);
    addr::tensor_valid(ck, TTA_SRC1, 2, b, Placement::READ_ANY);
    addr::tensor_valid(ck, TTA_DST, 2, o, Placement::WRITE_ANY);
    super::pool_no_psum(ck, &[TTA_SRC0, TTA_SRC1, TTA_DST]);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::l2::dtype;
    use tpbsim_isa::Gen;

    #[test]
    fn dma_direct2d() {
        let mut b = hdr(0xD4);
        b.0[15] = 3;
        assert!(fails(&b, Gen::V3, None, is_valid_dma_direct2d).is_empty());
        assert_eq!(
            unchecked(&b, Gen::V3, None, is_valid_dma_direct2d),
            ["is_valid_dma_direct2d.addr8"]
        );
        b.0[15] = 4;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_dma_direct2d),
            ["is_valid_enum(DGE_OPCODE)"]
        );
    }

    #[test]
    fn pseudo_names_and_sub_op() {
        let mut b = hdr(0xC1);
        b.0[12..14].copy_from_slice(b"q0");
        b.set_u32(48, 3);
        assert!(fails(&b, Gen::V3, None, is_valid_pseudo).is_empty());
        b.0[20] = b'x'; // a byte after the terminating NUL
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_pseudo),
            ["is_valid_pseudo.name"]
        );
        let b = hdr(0xD3);
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_pseudo),
            ["is_valid_pseudo.name"]
        );
        let mut b = hdr(0xDF);
        b.0[12] = 1;
        assert!(fails(&b, Gen::V3, None, is_valid_pseudo).is_empty());
        b.0[12] = 3;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_pseudo),
            ["is_valid_enum(PSEUDO_INST_OP)"]
        );
        b.0[12] = 1;
        b.0[40] = 1;
        assert_eq!(fails(&b, Gen::V3, None, is_valid_pseudo), ["reserved_zero"]);
        assert!(is_padded_name(b"abc\0\0"));
        assert!(!is_padded_name(b"\0abc"));
        assert!(!is_padded_name(b"a\x01"));
    }

    #[test]
    fn extended_tta() {
        let mut b = hdr(0xF0);
        b.0[12] = 2;
        b.0[14] = dtype::BF16 | dtype::BF16 << 4;
        b.0[15] = dtype::FP32;
        b.0[16] = 0x04;
        t2(&mut b, 20, 0x100, [1, 8]);
        t2(&mut b, 32, 0x200, [1, 8]);
        t2(&mut b, 44, 0x400, [1, 8]);
        let f = |b: &tpbsim_isa::Bundle| fails(b, Gen::V3, None, is_valid_extended);
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        b.0[16] = 0x05;
        assert_eq!(f(&b), ["is_valid_extended_tta.op"]);
        b.0[16] = 0x06;
        b.set_u32(44, addr::PSUM_BASE);
        assert!(f(&b).is_empty());
        assert_eq!(
            fails(&b, Gen::V4, Some(2), is_valid_extended),
            ["pool_operand_in_sbuf"]
        );
        let mut b = hdr(0xF0);
        b.0[12] = 5;
        assert_eq!(f(&b), ["is_valid_enum(EXT_OPCODE)"]);
        b.0[12] = 0;
        assert!(f(&b).is_empty());
    }
}
