//! `is_valid_ctrl_es`: EventSemaphore 0xA0 (`CTRL_ES`) — the extended events block at +0x20
//! (isa-facts §2.5).

use super::super::header;
use super::super::rule::{Ck, Field, Sink};
use tpbsim_isa::formats::loc;
use tpbsim_isa::Gen;

/// The extended events block.
const EXT: tpbsim_isa::spec::FieldLoc = loc::event_semaphore::EVENTS_EXT;
/// Extended wait mode.
pub const X_WAIT_MODE: Field = ext(loc::events_ext::WAIT_MODE);
/// Extended update mode.
pub const X_UPDATE_MODE: Field = ext(loc::events_ext::UPDATE_MODE);
/// Extended wait value.
pub const X_WAIT_VALUE: Field = ext(loc::events_ext::SEM_WAIT_VALUE);
/// Extended update value.
pub const X_UPDATE_VALUE: Field = ext(loc::events_ext::SEM_UPDATE_VALUE);

/// A field of the extended events block.
const fn ext(f: tpbsim_isa::spec::FieldLoc) -> Field {
    Field::member(EXT.name, EXT.l2_offset(), f)
}

/// `is_valid_ctrl_es`: the extended block's wait/update modes are enum members and its REG
/// forms name registers; the block's remaining bytes are not checked.
pub fn is_valid_ctrl_es<S: Sink>(ck: &mut Ck<S>) {
    header::events_block(ck, X_WAIT_MODE, X_UPDATE_MODE, X_WAIT_VALUE, X_UPDATE_VALUE);
    super::spec_reserved(ck);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::Gen;

    #[test]
    fn extended_events() {
        let mut b = hdr(0xA0);
        b.0[0x20] = 0x05;
        b.0[0x22] = 0x13;
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl_es).is_empty());
        b.0[0x22] = 0x16;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_ctrl_es),
            ["has_valid_neuron_events.is_valid_enum(UPDATE_MODE)"]
        );
    }

    #[test]
    fn eq_waits_are_accepted_on_event_semaphore() {
        // The runtime's wait-eq-and-clear records: EQ (1) in the ordinary wait and in the
        // extended wait (docs/isa.md conflict P11).
        for gen in [Gen::V2, Gen::V3, Gen::V4] {
            let mut b = hdr(0xA0);
            b.0[4] = 0x01;
            b.0[5] = 9;
            b.0[0x20] = 0x01;
            b.0[0x21] = 9;
            b.0[0x22] = 0x19; // SEM_WRITE at completion
            b.0[0x23] = 9;
            let f = crate::l2::cascade::check_collect(gen, tpbsim_isa::Engine::Sp, &b);
            assert!(f.is_empty(), "{gen}: {f:?}");
        }
    }
}

// ---- CTRL_NO (ActivationTableLoad 0x23, Notify 0xA6) and the plain CTRL formats ----

use super::super::rule::{rule, Allowed};
use super::super::table::{check, check_dtypes, DtypeRule, FieldRule, GateTable};
use super::{spec_reserved, DtypeOpts};
use tpbsim_isa::spec::ByteSet;

rule!(CTRL_NO_NOTIFICATION, "ctrl_no_valid_notification", Format,
    project "R isa/validators-per-arch.md names is_valid_ctrl_no / ctrl_no_valid_notification, but the notification word's placement and conditions are not public; reported as not checked",
    "the CTRL_NO notification word (and ActivationTableLoad's set selector)");
rule!(WRITE_PAYLOAD, "is_valid_write.payload", Format,
    project "the Write (CSR write) operand layout is not public; reported as not checked",
    "Write's CSR address and value");
rule!(CTRL_AL_DATASRC, "is_valid_enum(DATASRC)", Format,
    public "isa-facts §4.4 (ALU_OP 0xA8 src1 datasrc: REG 0, IMM 1)",
    "src1_datasrc is REG 0 or IMM 1");
rule!(CMP_OP_ENUM, "is_valid_enum(CMP_OP)", Format,
    public "isa-facts §4.4/§6.7 (cmp_op 0 unconditional, IMM forms 1..=6, REG forms 9..=14; 7/8 unused)",
    "cmp_op is 0, 1..=6 or 9..=14");
rule!(BR_TARGET_MODE_ENUM, "is_valid_enum(BR_TARGET_MODE)", Format,
    public "isa-facts §4.4/§6.7 (BR_TARGET_MODE REGISTER 1, REL_IMM 3, REL_REGISTER 4)",
    "target_mode is REGISTER 1, REL_IMM 3 or REL_REGISTER 4");
rule!(RANGE_CLEAR_MODE_ENUM, "is_valid_enum(RANGE_CLEAR_MODE)", Format,
    public "isa-facts §4.4 (EventSemaphoreRangeClear +0x0C mode {1 range, 2 bitmask})",
    "mode is RANGE 1 or BITMASK 2");
rule!(RANGE_CLEAR_ORDER, "is_valid_event_semaphore_range_clear.range", Format,
    project "a range clear names its first and last event; tpbsim requires first <= last in RANGE mode",
    "RANGE mode: first <= last");

/// ActivationTableLoad's set selector (+0x23).
pub const ACT_TABLE_SET: Field = Field::at(loc::act_table_load::ACT_TABLE_SET);
/// Notify's payload (first bytes).
pub const NOTIFY_PAYLOAD: Field = Field::at(loc::notify::PAYLOAD).head(8);

/// `is_valid_ctrl_no`: ActivationTableLoad 0x23 and Notify 0xA6. Only reserved bytes of the
/// spec layout are checked; the notification word is reported as not checked.
pub fn is_valid_ctrl_no<S: Sink>(ck: &mut Ck<S>) {
    spec_reserved(ck);
    let f = if ck.u8(0) == 0x23 {
        ACT_TABLE_SET
    } else {
        NOTIFY_PAYLOAD
    };
    ck.not_checked(
        &CTRL_NO_NOTIFICATION,
        f,
        Allowed::Text("no public condition"),
    );
}

/// `is_valid_ctrl`: the control-only instructions (EngineNop 0x9F, Halt 0xA1,
/// InstructionFlush 0xA3, Nop 0xA4): the whole body is reserved.
pub fn is_valid_ctrl<S: Sink>(ck: &mut Ck<S>) {
    spec_reserved(ck);
}

/// `is_valid_drain`: Drain 0xA2 (count at +0x28; every other body byte reserved).
pub fn is_valid_drain<S: Sink>(ck: &mut Ck<S>) {
    spec_reserved(ck);
}

/// Write's payload (first bytes).
pub const WRITE_PAYLOAD_F: Field = Field::at(loc::write::PAYLOAD).head(8);

/// `is_valid_write`: Write 0xA5; the CSR operands are reported as not checked.
pub fn is_valid_write<S: Sink>(ck: &mut Ck<S>) {
    spec_reserved(ck);
    ck.not_checked(
        &WRITE_PAYLOAD,
        WRITE_PAYLOAD_F,
        Allowed::Text("no public layout"),
    );
}

/// CTRL_AL op.
pub const AL_OP: Field = Field::at(loc::alu_op_inst::OP);
/// CTRL_AL dtype.
pub const AL_DTYPE: Field = Field::at(loc::alu_op_inst::DTYPE);
/// CTRL_AL src1 data source.
pub const AL_DATASRC: Field = Field::at(loc::alu_op_inst::SRC1_DATASRC);
/// CTRL_AL destination dtype.
pub const AL_DST_DTYPE: Field = Field::at(loc::alu_op_inst::DST_DTYPE);

rule!(CTRL_AL_DST_DTYPE, "is_valid_ctrl_al.dst_dtype", Format,
    public "R isa/pseudo-instruction-lowering.md (add_add32_imm / add_sub32 / add_max32 / add_min32 store the word 0x10804 / 0x805 / 0x808 / 0x809 at +0x0C, leaving dst_dtype 0, and every emitted record passes is_valid_neuron_instruction)",
    "CTRL_AL dst_dtype is 0 (not stated: the operation's dtype) or a wire dtype");

/// CTRL_AL enum stage.
pub const AL_ENUMS: &[FieldRule] = &[
    super::act2::alu_op_row(AL_OP),
    FieldRule::set(
        &CTRL_AL_DATASRC,
        AL_DATASRC,
        ByteSet::range(0, 1),
        "REG 0 or IMM 1",
    ),
];
/// CTRL_AL dtype stage (`dst_dtype` 0 is accepted and stays procedural).
pub const AL_DTYPES: &[DtypeRule] = &[DtypeRule::byte(AL_DTYPE, DtypeOpts::PLAIN)];
/// `dst_dtype` values of `gen`: 0 (not stated) or a wire dtype.
fn al_dst_dtypes(gen: Gen) -> ByteSet {
    static SETS: std::sync::OnceLock<[ByteSet; 4]> = std::sync::OnceLock::new();
    SETS.get_or_init(|| {
        Gen::ALL.map(|g| {
            (1..=255u8)
                .filter(|&d| super::super::dtype::is_valid(g, d, false, false, false))
                .fold(ByteSet::of(&[0]), ByteSet::with)
        })
    })[gen.index()]
}
/// CTRL_AL `dst_dtype`, after the dtype stage.
pub const AL_DST: &[FieldRule] = &[FieldRule::per_gen(
    &CTRL_AL_DST_DTYPE,
    AL_DST_DTYPE,
    al_dst_dtypes,
    "0 or a wire dtype of this generation",
)];
/// The rule data of `is_valid_ctrl_al`.
pub const AL_TABLE: GateTable = GateTable {
    fields: &[AL_ENUMS, AL_DST],
    dtypes: &[AL_DTYPES],
    operands: &[],
};

/// `is_valid_ctrl_al`: the scalar-register ALU 0xA8. The runtime's own ALU builders leave
/// `dst_dtype` 0 ([`CTRL_AL_DST_DTYPE`]): 0 is accepted there, any other value must be a
/// wire dtype; `dtype` must always be one.
pub fn is_valid_ctrl_al<S: Sink>(ck: &mut Ck<S>) {
    check(ck, AL_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    check_dtypes(ck, AL_DTYPES);
    check(ck, AL_DST);
}

#[cfg(test)]
mod ctrl_al_tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::{Bundle, Engine, Gen};

    /// The record the runtime's `add_add32_imm(dst 7, src0 5, imm 42)` emits.
    fn add32_imm() -> Bundle {
        let hex = "a810000000000000000000000408010005000000070000002a";
        let mut b = Bundle::ZERO;
        for (i, c) in hex.as_bytes().chunks(2).enumerate() {
            b.0[i] = u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap();
        }
        b
    }

    #[test]
    fn the_runtimes_alu_records_pass_on_every_generation() {
        let mut recs = vec![add32_imm()];
        // add_sub32 / add_max32 / add_min32: register src1, descriptor words 0x805 / 0x808 /
        // 0x809 (dst_dtype 0 as well).
        for word in [0x805u32, 0x808, 0x809] {
            let mut b = hdr(0xA8);
            b.set_u32(0x0C, word);
            b.0[0x10] = 1;
            b.0[0x12] = 2;
            b.0[0x14] = 3;
            recs.push(b);
        }
        for b in &recs {
            assert_eq!(b.0[0x0F], 0, "dst_dtype is left 0");
            for gen in [Gen::V2, Gen::V3, Gen::V4] {
                let f = crate::l2::cascade::check_collect(gen, Engine::Sp, b);
                assert!(f.is_empty(), "{gen:?} {b:?}: {f:?}");
            }
        }
    }

    #[test]
    fn dst_dtype_zero_or_a_wire_dtype() {
        let mut b = add32_imm();
        b.0[0x0F] = 0x08; // INT32
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl_al).is_empty());
        b.0[0x0F] = 0xEE;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_ctrl_al),
            ["is_valid_ctrl_al.dst_dtype"]
        );
        // dtype itself stays required.
        let mut b = add32_imm();
        b.0[0x0D] = 0;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_ctrl_al),
            ["is_valid_dtype"]
        );
    }
}

rule!(CORE_BARRIER_COMPANION, "is_valid_core_barrier.companion", Format,
    project "C isa/sp-sync-encoding.md §6d gives CoreBarrier's id (+0x0C) and index (+0x10) as certain and names a companion access at +0x20 whose layout is not published; reported as not checked",
    "CoreBarrier's companion access (+0x20..+0x3F)");

/// CoreBarrier companion access.
pub const CB_COMPANION: Field = Field::at(loc::core_barrier::COMPANION);

/// `is_valid_core_barrier`: CoreBarrier 0xD8. The id and index are any u32 (no bound is
/// published); the bytes between them and the companion access are reserved; the companion
/// access is reported as not checked.
pub fn is_valid_core_barrier<S: Sink>(ck: &mut Ck<S>) {
    spec_reserved(ck);
    ck.not_checked(
        &CORE_BARRIER_COMPANION,
        CB_COMPANION,
        Allowed::Text("no public layout"),
    );
}

#[cfg(test)]
mod core_barrier_tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::Gen;

    #[test]
    fn id_and_index_are_free_and_the_gap_is_reserved() {
        let mut b = hdr(0xD8);
        b.set_u32(0x0C, 0xDEAD_BEEF);
        b.set_u32(0x10, 7);
        assert!(fails(&b, Gen::V3, None, is_valid_core_barrier).is_empty());
        b.0[0x14] = 1;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_core_barrier),
            ["reserved_zero"]
        );
    }
}

/// CTRL_BR compare op.
pub const BR_CMP: Field = Field::at(loc::compare_branch::CMP_OP);
/// CTRL_BR compare dtype.
pub const BR_DTYPE: Field = Field::at(loc::alu_op_inst::DTYPE);
/// CTRL_BR target mode.
pub const BR_MODE: Field = Field::at(loc::compare_branch::TARGET_MODE);

/// CTRL_BR enum stage.
pub const BR_ENUMS: &[FieldRule] = &[
    FieldRule::set(
        &CMP_OP_ENUM,
        BR_CMP,
        ByteSet::range(0, 6).or(ByteSet::range(9, 14)),
        "0..=6 or 9..=14",
    ),
    FieldRule::set(
        &BR_TARGET_MODE_ENUM,
        BR_MODE,
        ByteSet::of(&[1, 3, 4]),
        "1, 3 or 4",
    ),
];
/// The compared dtype: it matters only for a conditional branch (`cmp_op` non-zero).
pub const BR_DTYPES: &[DtypeRule] =
    &[DtypeRule::byte(BR_DTYPE, DtypeOpts::PLAIN).when(BR_CMP, conditional)];
/// The rule data of `is_valid_ctrl_br`.
pub const BR_TABLE: GateTable = GateTable {
    fields: &[BR_ENUMS],
    dtypes: &[BR_DTYPES],
    operands: &[],
};

/// True for a conditional `cmp_op` (0 branches unconditionally).
const fn conditional(cmp: u8) -> bool {
    cmp != 0
}

/// `is_valid_ctrl_br`: CompareBranch 0xA9.
pub fn is_valid_ctrl_br<S: Sink>(ck: &mut Ck<S>) {
    check(ck, BR_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    check_dtypes(ck, BR_DTYPES);
}

/// Range-clear mode.
pub const RC_MODE: Field = Field::at(loc::event_semaphore_range_clear::MODE);
/// First event.
pub const RC_FIRST: Field = Field::at(loc::event_semaphore_range_clear::FIRST);
/// Last event.
pub const RC_LAST: Field = Field::at(loc::event_semaphore_range_clear::LAST);

/// EventSemaphoreRangeClear enum stage.
pub const RC_ENUMS: &[FieldRule] = &[FieldRule::set(
    &RANGE_CLEAR_MODE_ENUM,
    RC_MODE,
    ByteSet::range(1, 2),
    "1 or 2",
)];
/// The rule data of `is_valid_event_semaphore_range_clear`.
pub const RC_TABLE: GateTable = GateTable {
    fields: &[RC_ENUMS],
    dtypes: &[],
    operands: &[],
};

/// `is_valid_event_semaphore_range_clear`: EventSemaphoreRangeClear 0xB0.
pub fn is_valid_event_semaphore_range_clear<S: Sink>(ck: &mut Ck<S>) {
    check(ck, RC_ENUMS);
    spec_reserved(ck);
    if ck.get(RC_MODE) == 1 {
        ck.check(
            ck.get(RC_FIRST) <= ck.get(RC_LAST),
            &RANGE_CLEAR_ORDER,
            RC_LAST,
            Allowed::Text("last >= first"),
        );
    }
}

#[cfg(test)]
mod ctrl_tests {
    use super::super::testutil::*;
    use super::*;
    use crate::l2::dtype;
    use tpbsim_isa::Gen;

    #[test]
    fn control_only_and_ctrl_no() {
        let mut b = hdr(0xA1);
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl).is_empty());
        b.0[20] = 1;
        assert_eq!(fails(&b, Gen::V3, None, is_valid_ctrl), ["reserved_zero"]);
        let mut b = hdr(0xA2);
        b.set_u32(40, 7);
        assert!(fails(&b, Gen::V3, None, is_valid_drain).is_empty());
        b.0[12] = 1;
        assert_eq!(fails(&b, Gen::V3, None, is_valid_drain), ["reserved_zero"]);
        let mut b = hdr(0x23);
        b.0[35] = 4;
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl_no).is_empty());
        assert_eq!(
            unchecked(&b, Gen::V3, None, is_valid_ctrl_no),
            ["ctrl_no_valid_notification"]
        );
        let b = hdr(0xA5);
        assert_eq!(
            unchecked(&b, Gen::V3, None, is_valid_write),
            ["is_valid_write.payload"]
        );
    }

    #[test]
    fn alu_and_branch() {
        let mut b = hdr(0xA8);
        b.0[12] = 0x04;
        b.0[13] = dtype::INT32;
        b.0[14] = 1;
        b.0[15] = dtype::INT32;
        assert!(fails(&b, Gen::V2, None, is_valid_ctrl_al).is_empty());
        b.0[14] = 2;
        assert_eq!(
            fails(&b, Gen::V2, None, is_valid_ctrl_al),
            ["is_valid_enum(DATASRC)"]
        );
        b.0[14] = 0;
        b.0[12] = 0xC7; // DIVIDE_INT is v3+
        assert_eq!(
            fails(&b, Gen::V2, None, is_valid_ctrl_al),
            ["is_valid_enum(ALU_OP)"]
        );
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl_al).is_empty());
        // dst_dtype 0 is the runtime's own encoding; dtype 0 is not a dtype.
        b.0[15] = 0;
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl_al).is_empty());
        b.0[13] = 0;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_ctrl_al),
            ["is_valid_dtype"]
        );

        let mut b = hdr(0xA9);
        b.0[14] = 3;
        b.set_u64(48, 0x40);
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl_br).is_empty());
        b.0[12] = 3; // EQ_IMM needs a dtype
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_ctrl_br),
            ["is_valid_dtype"]
        );
        b.0[13] = dtype::INT32;
        assert!(fails(&b, Gen::V3, None, is_valid_ctrl_br).is_empty());
        b.0[12] = 7;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_ctrl_br),
            ["is_valid_enum(CMP_OP)"]
        );
        b.0[12] = 0;
        b.0[14] = 2;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_ctrl_br),
            ["is_valid_enum(BR_TARGET_MODE)"]
        );
    }

    #[test]
    fn range_clear() {
        let mut b = hdr(0xB0);
        b.0[12] = 1;
        b.0[13] = 2;
        b.0[14] = 9;
        let f = |b: &tpbsim_isa::Bundle| {
            fails(b, Gen::V4, Some(4), is_valid_event_semaphore_range_clear)
        };
        assert!(f(&b).is_empty());
        b.0[14] = 1;
        assert_eq!(f(&b), ["is_valid_event_semaphore_range_clear.range"]);
        b.0[12] = 2;
        assert!(f(&b).is_empty());
        b.0[12] = 3;
        assert_eq!(f(&b), ["is_valid_enum(RANGE_CLEAR_MODE)"]);
    }
}
