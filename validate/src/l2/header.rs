//! The shared preamble every format gate runs first: `has_valid_neuron_header` (opcode in the
//! generation's enum, `inst_word_len == 0x10`) and `has_valid_neuron_events` (wait / update
//! modes in their enums, value-word consistency).
//!
//! Sources: R isa/validator-architecture.md §3 (preamble), isa-facts §2.

use tpbsim_isa::formats::loc;
use tpbsim_isa::Gen;

use super::catalog;
use super::enums::{self, NUM_ADDR_REGISTERS};
use super::rule::{rule, Allowed, Ck, Field, Sink};
use tpbsim_isa::spec::ByteSet;

/// Header fields.
pub const OPCODE: Field = Field::at(loc::header::OPCODE);
/// `inst_word_len`.
pub const INST_WORD_LEN: Field = Field::at(loc::header::INST_WORD_LEN);
/// Events block fields (bytes 4..12).
pub const WAIT_MODE: Field = Field::member("events", 0, loc::events::WAIT_MODE);
/// Semaphore/event index the wait reads.
pub const WAIT_IDX: Field = Field::member("events", 0, loc::events::WAIT_IDX);
/// Update mode.
pub const UPDATE_MODE: Field = Field::member("events", 0, loc::events::UPDATE_MODE);
/// Semaphore/event index the update writes.
pub const UPDATE_IDX: Field = Field::member("events", 0, loc::events::UPDATE_IDX);
/// Value word (immediate or register id).
pub const SEM_VALUE: Field = Field::member("events", 0, loc::events::SEMAPHORE_VALUE);

/// QuantizeMx, whose header byte 1 may carry the saturate bit.
pub const QUANTIZE_MX: u8 = 0xE3;

rule!(HAS_VALID_NEURON_HEADER_OPCODE, "has_valid_neuron_header.is_valid_enum(OPCODE)", Format,
    public "R isa/validator-architecture.md §3; opcode enum per generation from the catalog (isa-facts §5)",
    "the opcode byte is a member of the generation's NEURON_ISA_TPB_OPCODE enum");
rule!(HAS_VALID_INST_LEN, "has_valid_inst_len", Format,
    public "R isa/validator-architecture.md §3 (inst_word_len == 16); QuantizeMx saturate bit: C isa/pe-matmul-encoding.md",
    "inst_word_len is 0x10 (QuantizeMx on v4+ may set bit 0, the saturate bit: 0x11)");
rule!(VALID_EVENT_WAIT_MODE, "has_valid_neuron_events.is_valid_enum(WAIT_MODE)", Format,
    public "R isa/validator-architecture.md §3; isa-facts §2.3",
    "the wait mode is a NEURON_ISA_TPB_WAIT_MODE member");
rule!(VALID_EVENT_UPDATE_MODE, "has_valid_neuron_events.is_valid_enum(UPDATE_MODE)", Format,
    public "R isa/validator-architecture.md §3; isa-facts §2.4",
    "the update mode is a NEURON_ISA_TPB_UPDATE_MODE member");
rule!(EVENTS_REG_VALUE, "has_valid_neuron_events.reg_value", Format,
    project "REG-family modes compare/write a register named by the value word; tpbsim requires the id to name one of the 64 registers",
    "a REG-family wait or update names a register id below 0x40 in the value word");
rule!(IS_UPDATE_SEMAPHORE, "is_update_semaphore", Format,
    project "the body of the semaphore-update consistency check is not public; a bundle whose wait and update both consume the single value word is reported as not checked",
    "semaphore-update consistency when wait and update share the value word");

/// The opcode enum of each generation (v2..v5), computed at compile time from the spec rows.
pub const OPCODE_ENUMS: [ByteSet; 4] = [
    catalog::opcode_enum(Gen::V2),
    catalog::opcode_enum(Gen::V3),
    catalog::opcode_enum(Gen::V4),
    catalog::opcode_enum(Gen::V5),
];

/// The opcode enum of `gen`.
#[inline]
pub fn opcode_enum(gen: Gen) -> &'static ByteSet {
    &OPCODE_ENUMS[gen.index()]
}

/// `has_valid_neuron_header`. Returns false when the opcode is not in the enum (the
/// per-opcode stages then have nothing to check).
pub fn has_valid_neuron_header<S: Sink>(ck: &mut Ck<S>) -> bool {
    let op = ck.u8(0);
    let known = opcode_enum(ck.gen).has(op);
    ck.check(
        known,
        &HAS_VALID_NEURON_HEADER_OPCODE,
        OPCODE,
        Allowed::Text("an opcode of this generation's enum"),
    );
    let len = ck.get(INST_WORD_LEN) as u8;
    let ok = len == 0x10 || (len == 0x11 && op == QUANTIZE_MX && ck.v4plus());
    ck.check(ok, &HAS_VALID_INST_LEN, INST_WORD_LEN, Allowed::Eq(0x10));
    known
}

/// `has_valid_neuron_events` over the 8-byte events block at +4.
pub fn has_valid_neuron_events<S: Sink>(ck: &mut Ck<S>) {
    events_block(ck, WAIT_MODE, UPDATE_MODE, SEM_VALUE, SEM_VALUE);
}

/// The events checks over a wait/update mode pair and their value words (the 8-byte block
/// shares one value word; the extended 12-byte block has one each).
pub fn events_block<S: Sink>(
    ck: &mut Ck<S>,
    wait: Field,
    update: Field,
    wait_val: Field,
    update_val: Field,
) {
    let w = ck.get(wait) as u8;
    let u = ck.get(update) as u8;
    if w == 0 && u == 0 {
        // NONE / NONE: both members, no register value, no value word read.
        return;
    }
    ck.check(
        enums::WAIT_MODE.has(w),
        &VALID_EVENT_WAIT_MODE,
        wait,
        Allowed::Text("NONE, SEM_*_IMM 1..5, EVT_* 6/7/14/15, REG forms 0x81..0x85"),
    );
    ck.check(
        enums::UPDATE_MODE.has(u),
        &VALID_EVENT_UPDATE_MODE,
        update,
        Allowed::Text(
            "NONE, *_READ 1..5/7/9, *_COMPLETE 0x11..0x15/0x17/0x19, REG forms 0x97/0x99",
        ),
    );
    if enums::WAIT_REG.has(w) {
        let v = ck.get(wait_val);
        ck.check(
            v < NUM_ADDR_REGISTERS as u64,
            &EVENTS_REG_VALUE,
            wait_val,
            Allowed::Max(NUM_ADDR_REGISTERS as u64 - 1),
        );
    }
    if enums::UPDATE_REG.has(u) {
        let v = ck.get(update_val);
        ck.check(
            v < NUM_ADDR_REGISTERS as u64,
            &EVENTS_REG_VALUE,
            update_val,
            Allowed::Max(NUM_ADDR_REGISTERS as u64 - 1),
        );
    }
    if (wait_val.start, wait_val.len) == (update_val.start, update_val.len)
        && enums::WAIT_USES_VALUE.has(w)
        && enums::UPDATE_USES_VALUE.has(u)
    {
        ck.not_checked(
            &IS_UPDATE_SEMAPHORE,
            wait_val,
            Allowed::Text("wait and update both read the shared value word"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::rule::{Collect, Gate};
    use super::*;
    use tpbsim_isa::Bundle;

    fn run(b: &Bundle, gen: Gen) -> Vec<&'static str> {
        let mut c = Collect::default();
        let mut ck = Ck::new(b, gen, None, Gate::Format, &mut c);
        has_valid_neuron_header(&mut ck);
        has_valid_neuron_events(&mut ck);
        c.failures.iter().map(|f| f.rule.name).collect()
    }

    #[test]
    fn header() {
        let mut b = Bundle::ZERO;
        b.0[0] = 0x02;
        b.0[1] = 0x10;
        assert!(run(&b, Gen::V2).is_empty());
        b.0[1] = 0x08;
        assert_eq!(run(&b, Gen::V2), ["has_valid_inst_len"]);
        b.0[1] = 0x10;
        b.0[0] = 0x09; // LDWEIGHTS_MX: v4+ only
        assert_eq!(
            run(&b, Gen::V3),
            ["has_valid_neuron_header.is_valid_enum(OPCODE)"]
        );
        assert!(run(&b, Gen::V4).is_empty());
        b.0[0] = QUANTIZE_MX;
        b.0[1] = 0x11;
        assert!(run(&b, Gen::V4).is_empty());
        b.0[0] = 0x02;
        assert_eq!(run(&b, Gen::V4), ["has_valid_inst_len"]);
    }

    #[test]
    fn events() {
        let mut b = Bundle::ZERO;
        b.0[0] = 0xA4;
        b.0[1] = 0x10;
        b.0[4] = 0x05;
        b.0[6] = 0x13;
        assert!(run(&b, Gen::V3).is_empty());
        b.0[4] = 0x08;
        assert_eq!(
            run(&b, Gen::V3),
            ["has_valid_neuron_events.is_valid_enum(WAIT_MODE)"]
        );
        b.0[4] = 0;
        b.0[6] = 0x06;
        assert_eq!(
            run(&b, Gen::V3),
            ["has_valid_neuron_events.is_valid_enum(UPDATE_MODE)"]
        );
        b.0[6] = 0x99;
        b.set_u32(8, 0x40);
        assert_eq!(run(&b, Gen::V3), ["has_valid_neuron_events.reg_value"]);
        b.set_u32(8, 3);
        assert!(run(&b, Gen::V3).is_empty());
        b.0[4] = 0x05; // wait reads the value too
        assert_eq!(run(&b, Gen::V3), ["is_update_semaphore"]);
    }
}
