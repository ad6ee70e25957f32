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
rule!(DMA_ADDR8_MODE, "is_valid_dma_direct2d.addr8_mode", Format,
    public "C isa/dma-encoding.md (assign64bitAddr, every store site disassembled, CERTAIN: mode byte a2[7] = 0x10 physical var-id, 0x20 DGE table entry with an immediate, 0x28 DGE table entry with an offset register, | 0x04 two-register pair (0x28 arm only), | 0x40 move/transpose); G collectives/ops/rdma-gather-pseudo-ops.md (0xD4 is the compiler's interface; PSEUDO_ADDR8 VAR_ID_BIT 0x10, ADDR_TBL_BIT 0x20); neuronx-cc 2.23 Trn2 NEFFs use 0x10 and 0x20",
    "each DMA_DIRECT2D ADDR8 mode byte (byte 7) is a form the compiler writes: 0x10, 0x20, 0x28 or 0x2C, each with or without 0x40");
rule!(DMA_ADDR8_DGE_HIGH, "is_valid_dma_direct2d.addr8_dge_byte6", Format,
    public "C isa/dma-encoding.md (assign64bitAddr: the DGE arms write the table-entry id as 16 bits at +4 and leave +6 at the bundle's zero fill; only the physical var-id arm writes +6, the var id's high byte)",
    "a DGE-form ADDR8 (mode 0x20 / 0x28 / 0x2C, with or without 0x40) has byte 6 zero");
rule!(DMA_ELEMENTS, "is_valid_dma_direct2d.elements", Format,
    public "C isa/dma-encoding.md (generateDynamicDMA pre-assert \"DMA instruction must read and write same number of elements\"; *_elem_size = dtype bytes × last-dim count, 0x10000 stored as 0)",
    "DIRECT2D (dge_op 0): source and destination move the same number of elements (num[0] × num[1] × elem_size / dtype size), each elem_size a whole number of its dtype's elements");
rule!(DMA_ADDR8, "is_valid_dma_direct2d.addr8", Format,
    project "what an ADDR8 names is resolved against the NEFF when the runtime lowers the pseudo instruction (the var id against def.json, the DGE table entry against the dge-table variable's list, the 0x28 offset register), and the dtype pair (cast) and bound-register conditions of the pseudo form are not public; reported as not checked",
    "DMA_DIRECT2D: what the ADDR8 operands name, the dtype pair and the bound registers");
rule!(DMA_ELEMENTS_OTHER, "is_valid_dma_direct2d.elements_dge_op", Format,
    project "dge_op 1..3 (INDIRECT1D, TRANSPOSE, GATHER_TRANSPOSE) lower to other records with a 0xDA extension whose element rules are not public; reported as not checked",
    "the element counts of a DMA_DIRECT2D whose dge_op is not DIRECT2D");
rule!(PSEUDO_NAME, "is_valid_pseudo.name", Format,
    project "pseudo-instruction names (queue, function, activation-set) are NUL-padded C strings; tpbsim requires a non-empty printable-ASCII name followed only by NUL bytes",
    "the name field is a non-empty printable-ASCII string padded with NUL bytes");
rule!(PSEUDO_INST_OP_ENUM, "is_valid_enum(PSEUDO_INST_OP)", Format,
    public "isa-facts §4.4 (PSEUDO_INST 0xDF sub-op: EXIT 1, LIBRARY_RELOAD_INDEX 2)",
    "the PSEUDO_INST sub-op is EXIT 1 or LIBRARY_RELOAD_INDEX 2");
rule!(COLLECTIVE_TYPE_ENUM, "is_valid_enum(COLLECTIVE_TYPE)", Format,
    project "G collectives/ops/trigger-collective.md §3 gives COLLECTIVE_TYPE (0 INVALID, 1..=9 the collectives) and says the shipped header has no validator for PSEUDO_TRIGGER_COLLECTIVE; tpbsim requires a named collective",
    "the PSEUDO_TRIGGER_COLLECTIVE ctype names a collective (1..=9)");
rule!(GID_LOAD_REGISTER, "is_valid_gid_load_dst", Format,
    public "G collectives/ops/rank-id.md §7.2 (is_valid_gid_load_dst, register form: is_valid_register_write(regnum), regnum < NEURON_ISA_TPB_NUM_REGISTERS = 64 on v2..v4 or the DGE table registers 130 / 131, and reserved[0..6] zero)",
    "GID_LOAD to a register: bytes +16..+22 zero and a register below 64 or a DGE table register (130, 131)");
rule!(GID_LOAD_ADDRESS, "is_valid_gid_load_dst.address", Format,
    project "G collectives/ops/rank-id.md §7.2 names the address form's two accepted PSEUDO_ADDR8 forms (a register address with reg_hi 0, a variable id) by their markers without the marker values; reported as not checked",
    "GID_LOAD to an address: the PSEUDO_ADDR8 destination");
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

/// DMA_DIRECT2D destination ADDR8.
pub const DMA_DST: Field = Field::at(loc::dma_direct2d::DST);

/// Byte `k` of an ADDR8 operand, reported as the operand's part `sub` (`src.mode`).
const fn addr8_byte(loc: tpbsim_isa::spec::FieldLoc, k: u8, sub: &'static str) -> Field {
    let f = Field::element(loc, k, 1, loc.name);
    Field { sub, ..f }
}

/// The source ADDR8's mode byte (byte 7).
pub const DMA_SRC_MODE: Field = addr8_byte(loc::dma_direct2d::SRC, 7, "mode");
/// The destination ADDR8's mode byte (byte 7).
pub const DMA_DST_MODE: Field = addr8_byte(loc::dma_direct2d::DST, 7, "mode");
/// The source ADDR8's byte 6 (the var id's high byte in the 0x10 form).
pub const DMA_SRC_B6: Field = addr8_byte(loc::dma_direct2d::SRC, 6, "id_high");
/// The destination ADDR8's byte 6.
pub const DMA_DST_B6: Field = addr8_byte(loc::dma_direct2d::DST, 6, "id_high");

/// The compiler's PSEUDO_ADDR8 mode bytes (`assign64bitAddr`): 0x10 physical var-id, 0x20 DGE
/// table entry + immediate, 0x28 DGE table entry + offset register, 0x2C the same with a
/// two-register pair, each with or without the 0x40 move/transpose bit.
pub const ADDR8_MODES: ByteSet = ByteSet::of(&[0x10, 0x20, 0x28, 0x2C, 0x50, 0x60, 0x68, 0x6C]);
/// The DGE-table forms among [`ADDR8_MODES`] (bytes 4..5 hold a table-entry id; byte 6 unused).
pub const ADDR8_DGE_MODES: ByteSet = ByteSet::of(&[0x20, 0x28, 0x2C, 0x60, 0x68, 0x6C]);
const ADDR8_MODES_TEXT: &str = "0x10, 0x20, 0x28 or 0x2C, each optionally | 0x40";

/// DMA_DIRECT2D enum stage: dge_op, then the two ADDR8 mode bytes.
pub const DMA_ENUMS: &[FieldRule] = &[
    FieldRule::set(&DGE_OPCODE_ENUM, DMA_DGE_OP, ByteSet::range(0, 3), "0..=3"),
    FieldRule::set(&DMA_ADDR8_MODE, DMA_SRC_MODE, ADDR8_MODES, ADDR8_MODES_TEXT),
    FieldRule::set(&DMA_ADDR8_MODE, DMA_DST_MODE, ADDR8_MODES, ADDR8_MODES_TEXT),
];
/// The rule data of `is_valid_dma_direct2d`.
pub const DMA_TABLE: GateTable = GateTable {
    fields: &[DMA_ENUMS],
    dtypes: &[],
    operands: &[],
};

/// One side of a DMA_DIRECT2D: its counts, element size and dtype.
struct Side {
    num: Field,
    elem_size: Field,
    dtype: Field,
}

const SRC_SIDE: Side = Side {
    num: Field::at(loc::dma_direct2d::SRC_NUM),
    elem_size: Field::at(loc::dma_direct2d::SRC_ELEM_SIZE),
    dtype: Field::at(loc::dma_direct2d::IN_DTYPE),
};
const DST_SIDE: Side = Side {
    num: Field::at(loc::dma_direct2d::DST_NUM),
    elem_size: Field::at(loc::dma_direct2d::DST_ELEM_SIZE),
    dtype: Field::at(loc::dma_direct2d::OUT_DTYPE),
};

/// What a side's counts say about its element count.
enum Elements {
    /// `num[0] × num[1] × elem_size / dtype size`.
    Count(u64),
    /// The element size is not a whole number of the dtype's elements.
    Partial,
    /// The dtype has no byte size (INVALID, packed or coded tags): not decided here.
    Unknown,
}

fn side_elements<S: Sink>(ck: &Ck<S>, s: &Side) -> Elements {
    let Some(size) = super::super::dtype::size(ck.get(s.dtype) as u8) else {
        return Elements::Unknown;
    };
    let nums = ck.get(s.num);
    let (n0, n1) = (nums & 0xFFFF, nums >> 16);
    let chunk = match ck.get(s.elem_size) {
        0 => 0x10000,
        v => v,
    };
    if chunk % size as u64 != 0 {
        return Elements::Partial;
    }
    Elements::Count(n0 * n1 * (chunk / size as u64))
}

/// `is_valid_dma_direct2d`: DMA_DIRECT2D pseudo 0xD4 — dge_op, the ADDR8 mode bytes, byte 6
/// of the DGE-table forms, the element counts of a DIRECT2D copy; what the operands name is
/// resolved by the runtime against the NEFF and is reported as not checked.
pub fn is_valid_dma_direct2d<S: Sink>(ck: &mut Ck<S>) {
    check(ck, DMA_ENUMS);
    for (mode, b6) in [(DMA_SRC_MODE, DMA_SRC_B6), (DMA_DST_MODE, DMA_DST_B6)] {
        if ADDR8_DGE_MODES.has(ck.get(mode) as u8) {
            ck.check(ck.get(b6) == 0, &DMA_ADDR8_DGE_HIGH, b6, Allowed::Eq(0));
        }
    }
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    if ck.get(DMA_DGE_OP) == 0 {
        match (side_elements(ck, &SRC_SIDE), side_elements(ck, &DST_SIDE)) {
            (Elements::Count(a), Elements::Count(b)) if a != b => {
                let f = DST_SIDE.elem_size;
                ck.fail(
                    &DMA_ELEMENTS,
                    f,
                    ck.get(f),
                    Allowed::Text(
                        "the source's element count (num[0] × num[1] × elem_size / dtype size)",
                    ),
                );
            }
            (Elements::Partial, _) => {
                let f = SRC_SIDE.elem_size;
                ck.fail(
                    &DMA_ELEMENTS,
                    f,
                    ck.get(f),
                    Allowed::Text("a multiple of in_dtype's size"),
                );
            }
            (_, Elements::Partial) => {
                let f = DST_SIDE.elem_size;
                ck.fail(
                    &DMA_ELEMENTS,
                    f,
                    ck.get(f),
                    Allowed::Text("a multiple of out_dtype's size"),
                );
            }
            (Elements::Unknown, _) => ck.not_checked(
                &DMA_ELEMENTS,
                SRC_SIDE.dtype,
                Allowed::Text("a dtype with a byte size"),
            ),
            (_, Elements::Unknown) => ck.not_checked(
                &DMA_ELEMENTS,
                DST_SIDE.dtype,
                Allowed::Text("a dtype with a byte size"),
            ),
            _ => {}
        }
    } else {
        ck.not_checked(
            &DMA_ELEMENTS_OTHER,
            DMA_DGE_OP,
            Allowed::Text("no public element rule for this dge_op"),
        );
    }
    if ck.done() {
        return;
    }
    ck.not_checked(
        &DMA_ADDR8,
        DMA_SRC,
        Allowed::Text("resolved against the NEFF by the runtime; no public condition"),
    );
}

/// The name field of a named pseudo instruction: (offset, length). The opcodes are those
/// whose format has a string field (`name_fields_are_the_string_fields` ties them to the spec).
pub const fn name_field(opcode: u8) -> Option<Field> {
    use tpbsim_isa::opcode_byte as ob;
    match opcode {
        ob::PSEUDO_DMATRIGGER => Some(Field::at(loc::dma_trigger::QUEUE_NAME)),
        ob::PSEUDO_LOAD_ACT_FUNC_SET => Some(Field::at(loc::load_act_func_set::ACT_SET_NAME)),
        ob::PSEUDO_FUNCTION_BEGIN => Some(Field::at(loc::function_begin::NAME)),
        ob::PSEUDO_FUNCTION_CALL => Some(Field::at(loc::function_call::NAME)),
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

/// GID_LOAD destination kind.
pub const GID_TARGET: Field = Field::at(loc::gid_load::DST_TARGET);
/// GID_LOAD destination (the register form: bytes +16..+22 zero, the register at +23).
pub const GID_DST: Field = Field::at(loc::gid_load::DST);
/// The register a register-form GID_LOAD writes (byte 7 of the destination).
pub const GID_REGNUM: Field = Field {
    name: "dst",
    sub: "regnum",
    start: loc::gid_load::DST.l2_offset() + 7,
    len: 1,
};
/// The reserved bytes of a register-form GID_LOAD destination (bytes 0..7 of it).
pub const GID_REG_RESERVED: Field = Field {
    name: "dst",
    sub: "reserved[0..6]",
    start: loc::gid_load::DST.l2_offset(),
    len: 7,
};

/// `is_valid_gid_load_dst`: the register form writes a real register (below the 64 of
/// v2..v4, or a DGE table register) and leaves the destination's other bytes zero; the
/// address form is reported as not checked.
fn gid_load_dst<S: Sink>(ck: &mut Ck<S>) {
    let regnum = ck.get(GID_REGNUM);
    match tpbsim_isa::GidTargetType(ck.get(GID_TARGET) as u8) {
        tpbsim_isa::GidTargetType::REGISTER => {
            ck.check(
                ck.get(GID_REG_RESERVED) == 0,
                &GID_LOAD_REGISTER,
                GID_REG_RESERVED,
                Allowed::Text("0"),
            );
            ck.check(
                regnum < 64 || regnum == 130 || regnum == 131,
                &GID_LOAD_REGISTER,
                GID_REGNUM,
                Allowed::Text("a register below 64, or 130 / 131"),
            );
        }
        tpbsim_isa::GidTargetType::ADDRESS => ck.not_checked(
            &GID_LOAD_ADDRESS,
            GID_DST,
            Allowed::Text("no public marker values"),
        ),
        _ => {}
    }
}

/// PSEUDO_INST sub-op.
pub const PSEUDO_SUB_OP: Field = Field::at(loc::pseudo_inst::SUB_OP);

/// PSEUDO_TRIGGER_COLLECTIVE collective type.
pub const COLLECTIVE_CTYPE: Field = Field::at(loc::trigger_collective::CTYPE);

/// The pseudo enum stage: PSEUDO_INST's sub-op, PSEUDO_TRIGGER_COLLECTIVE's type.
pub const PSEUDO_ENUMS: &[FieldRule] = &[
    FieldRule::set(
        &PSEUDO_INST_OP_ENUM,
        PSEUDO_SUB_OP,
        ByteSet::range(1, 2),
        "1 or 2",
    )
    .only(&[tpbsim_isa::opcode_byte::PSEUDO_INST]),
    FieldRule::set(
        &COLLECTIVE_TYPE_ENUM,
        COLLECTIVE_CTYPE,
        ByteSet::range(1, 9),
        "1..=9",
    )
    .only(&[tpbsim_isa::opcode_byte::PSEUDO_TRIGGER_COLLECTIVE]),
];
/// PSEUDO_TRIGGER_COLLECTIVE element type.
pub const COLLECTIVE_DTYPE: Field = Field::at(loc::trigger_collective::DTYPE);
/// The pseudo dtype stage: PSEUDO_TRIGGER_COLLECTIVE's element type is a wire dtype.
pub const PSEUDO_DTYPES: &[DtypeRule] = &[DtypeRule::byte(COLLECTIVE_DTYPE, DtypeOpts::PLAIN)
    .only(&[tpbsim_isa::opcode_byte::PSEUDO_TRIGGER_COLLECTIVE])];
/// The rule data of `is_valid_pseudo`.
pub const PSEUDO_TABLE: GateTable = GateTable {
    fields: &[PSEUDO_ENUMS],
    dtypes: &[PSEUDO_DTYPES],
    operands: &[],
};

/// `is_valid_pseudo`: DmaTrigger 0xC1, LoadActFuncSet 0xC6, FunctionBegin 0xD1, FunctionCall
/// 0xD3 (name strings), TriggerCollective 0xC8 (collective type, element type) and PSEUDO_INST
/// 0xDF (sub-op).
pub fn is_valid_pseudo<S: Sink>(ck: &mut Ck<S>) {
    let op = ck.u8(0);
    check(ck, PSEUDO_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    check_dtypes(ck, PSEUDO_DTYPES);
    if op == tpbsim_isa::opcode_byte::PSEUDO_GID_LOAD {
        gid_load_dst(ck);
    }
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

    /// GID_LOAD's register form writes a real register and leaves the destination's other
    /// bytes zero; its address form is reported as not checked.
    #[test]
    fn gid_load_writes_a_real_register() {
        let mut b = hdr(0xDC);
        b.0[12] = 1;
        for reg in [0u8, 5, 63, 130, 131] {
            b.0[23] = reg;
            assert!(
                fails(&b, Gen::V3, None, is_valid_pseudo).is_empty(),
                "{reg}"
            );
        }
        for reg in [64u8, 129, 132, 255] {
            b.0[23] = reg;
            assert_eq!(
                fails(&b, Gen::V3, None, is_valid_pseudo),
                ["is_valid_gid_load_dst"],
                "{reg}"
            );
        }
        b.0[23] = 5;
        b.0[17] = 1;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_pseudo),
            ["is_valid_gid_load_dst"]
        );
        b.0[14] = 1;
        assert!(fails(&b, Gen::V3, None, is_valid_pseudo).contains(&"reserved_zero"));
        let mut a = hdr(0xDC);
        a.0[16] = 0x44;
        assert!(fails(&a, Gen::V3, None, is_valid_pseudo).is_empty());
    }

    /// The named pseudo opcodes are exactly those whose format has a string field, and the
    /// name field is that field.
    #[test]
    fn name_fields_are_the_string_fields() {
        use tpbsim_isa::spec::{self, FieldType};
        for r in spec::OPCODES {
            let string = spec::FORMATS
                .iter()
                .find(|f| f.name == r.format && !r.format.is_empty())
                .and_then(|f| f.fields.iter().find(|x| matches!(x.ty, FieldType::Str(_))));
            match (name_field(r.code), string) {
                (Some(f), Some(x)) => {
                    assert_eq!((f.name, f.start), (x.name, x.at[0]), "{:#04x}", r.code);
                    assert_eq!(f.len, x.ty.width(), "{:#04x}", r.code);
                }
                (None, None) => {}
                (f, x) => panic!("{:#04x}: name field {f:?}, string field {x:?}", r.code),
            }
        }
    }

    /// A DIRECT2D copy as neuronx-cc 2.23 writes it on Pool (shared/real-neff-trn2.md §2):
    /// output0 (DGE table entry 2) from SBUF 0x4200, FP32 -> FP16, 128 rows of 64 elements.
    fn direct2d() -> tpbsim_isa::Bundle {
        let mut b = hdr(0xD4);
        b.0[13] = 27;
        b.0[14] = 16;
        b.set_u32(16, 0x4200);
        b.0[23] = 0x10;
        b.set_u32(24, 262144);
        b.set_u32(28, 1);
        b.set_u16(32, 128);
        b.set_u16(34, 1);
        b.set_u16(36, 256);
        b.set_u16(44, 2);
        b.0[47] = 0x20;
        b.set_u32(48, 256);
        b.set_u32(52, 1);
        b.set_u16(56, 128);
        b.set_u16(58, 1);
        b.set_u16(60, 128);
        b.0[62] = dtype::FP32;
        b.0[63] = dtype::FP16;
        b
    }

    #[test]
    fn dma_direct2d() {
        let b = direct2d();
        assert!(fails(&b, Gen::V3, None, is_valid_dma_direct2d).is_empty());
        assert_eq!(
            unchecked(&b, Gen::V3, None, is_valid_dma_direct2d),
            ["is_valid_dma_direct2d.addr8"]
        );
        let mut x = b;
        x.0[15] = 3;
        assert!(fails(&x, Gen::V3, None, is_valid_dma_direct2d).is_empty());
        assert_eq!(
            unchecked(&x, Gen::V3, None, is_valid_dma_direct2d),
            [
                "is_valid_dma_direct2d.elements_dge_op",
                "is_valid_dma_direct2d.addr8"
            ]
        );
        x.0[15] = 4;
        assert_eq!(
            fails(&x, Gen::V3, None, is_valid_dma_direct2d),
            ["is_valid_enum(DGE_OPCODE)"]
        );
    }

    #[test]
    fn dma_direct2d_addr8_modes() {
        for mode in [0x10u8, 0x20, 0x28, 0x2C, 0x50, 0x60, 0x68, 0x6C] {
            let mut b = direct2d();
            b.0[47] = mode;
            assert!(
                fails(&b, Gen::V4, None, is_valid_dma_direct2d).is_empty(),
                "{mode:#x}"
            );
        }
        for mode in [0x00u8, 0x01, 0x11, 0x14, 0x18, 0x24, 0x30, 0x80, 0xA0] {
            let mut b = direct2d();
            b.0[23] = mode;
            assert_eq!(
                fails(&b, Gen::V3, None, is_valid_dma_direct2d),
                ["is_valid_dma_direct2d.addr8_mode"],
                "{mode:#x}"
            );
        }
        // Byte 6: the var id's high byte in the 0x10 form, unused in the DGE forms.
        let mut b = direct2d();
        b.0[22] = 1;
        assert!(fails(&b, Gen::V3, None, is_valid_dma_direct2d).is_empty());
        b.0[46] = 1;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_dma_direct2d),
            ["is_valid_dma_direct2d.addr8_dge_byte6"]
        );
    }

    #[test]
    fn dma_direct2d_elements() {
        // 128 rows of 64 elements each side; one more row on the destination breaks it.
        let mut b = direct2d();
        b.set_u16(56, 129);
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_dma_direct2d),
            ["is_valid_dma_direct2d.elements"]
        );
        // The same element count split differently is fine: 64 rows of 128 elements.
        let mut b = direct2d();
        b.set_u16(56, 64);
        b.set_u16(60, 256);
        assert!(fails(&b, Gen::V3, None, is_valid_dma_direct2d).is_empty());
        // elem_size 0 is 0x10000 bytes.
        let mut b = direct2d();
        b.set_u16(32, 1);
        b.set_u16(36, 0);
        b.set_u16(56, 1);
        b.set_u16(60, 0x8000);
        assert!(fails(&b, Gen::V3, None, is_valid_dma_direct2d).is_empty());
        // An element size that is not whole elements of its dtype.
        let mut b = direct2d();
        b.set_u16(36, 258);
        b.set_u16(60, 129);
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_dma_direct2d),
            ["is_valid_dma_direct2d.elements"]
        );
        // A dtype without a byte size: not decided.
        let mut b = direct2d();
        b.0[62] = 0;
        assert!(fails(&b, Gen::V3, None, is_valid_dma_direct2d).is_empty());
        assert!(unchecked(&b, Gen::V3, None, is_valid_dma_direct2d)
            .contains(&"is_valid_dma_direct2d.elements"));
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
