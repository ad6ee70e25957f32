//! The opcode catalog as the validator uses it: a view over the declarative ISA spec's opcode
//! rows (`tpbsim_isa::spec::OPCODES`). Every table the validator needs — the opcode enum of
//! each generation ([`super::header`]) and the per-engine bitmaps ([`super::engine_gate`]) —
//! is computed from these rows at compile time, never written by hand.

use tpbsim_isa::spec::{
    legal_engine_classes, presence_at, EngineClass, OpKind, OpcodeRow, OPCODES,
};
use tpbsim_isa::Gen;

use tpbsim_isa::spec::ByteSet;

/// Bit of a wire engine in an engine mask (PE 0, ACT 1, POOL 2, DVE 3, SP 4).
pub const PE: u8 = 1 << 0;
/// ACT engine bit.
pub const ACT: u8 = 1 << 1;
/// POOL engine bit.
pub const POOL: u8 = 1 << 2;
/// DVE engine bit.
pub const DVE: u8 = 1 << 3;
/// SP engine bit.
pub const SP: u8 = 1 << 4;
/// Every engine.
pub const ALL: u8 = PE | ACT | POOL | DVE | SP;

/// The INVALID sentinel (never a legal instruction).
pub const INVALID_OPCODE: u8 = 0xFF;

/// Opcodes whose engine the public sources disagree on; the validator accepts every engine
/// either source names (project-defined): 0x30 EXPONENTIAL (ledger DVE, compiler ACT) and
/// 0xE4 CONV_LUT_LOAD (ledger POOL, PE firmware dispatch chain).
pub const ENGINE_UNIONS: [(u8, u8); 2] = [(0x30, DVE | ACT), (0xE4, POOL | PE)];

/// True for rows that are members of the header opcode enum (real and pseudo opcodes; not the
/// compiler-only names or the INVALID sentinel).
pub const fn in_header_enum(r: &OpcodeRow) -> bool {
    matches!(r.kind, OpKind::Real | OpKind::Pseudo)
}

/// True when `r` is a member of `gen`'s opcode enum.
pub const fn present(r: &OpcodeRow, gen: Gen) -> bool {
    in_header_enum(r) && presence_at(r.presence, gen.index()).is_present()
}

/// The wire engines a row's engine column executes on: PE, ACT, POOL, DVE map to their
/// engine; NX (the sequencer of every engine) to all engines; DMA to SP (the queue that issues
/// DMA), as the spec's `OpcodeRow::runs_on`; plus [`ENGINE_UNIONS`].
pub const fn engines(r: &OpcodeRow) -> u8 {
    classes_to_engines(r.code, r.engines)
}

/// The wire engines a row is legal on in `gen`: [`engines`] plus the spec's per-generation
/// engine legality rows (`spec::ENGINE_LEGAL`, as `OpcodeRow::legal_on`).
pub const fn engines_at(r: &OpcodeRow, gen: Gen) -> u8 {
    classes_to_engines(r.code, legal_engine_classes(r, gen.index()))
}

const fn classes_to_engines(code: u8, classes: EngineClass) -> u8 {
    let c = classes.0;
    if c & EngineClass::NX.0 != 0 {
        return ALL;
    }
    let mut m = 0;
    if c & EngineClass::PE.0 != 0 {
        m |= PE;
    }
    if c & EngineClass::ACT.0 != 0 {
        m |= ACT;
    }
    if c & EngineClass::POOL.0 != 0 {
        m |= POOL;
    }
    if c & EngineClass::DVE.0 != 0 {
        m |= DVE;
    }
    if c & EngineClass::DMA.0 != 0 {
        m |= SP;
    }
    let mut i = 0;
    while i < ENGINE_UNIONS.len() {
        if ENGINE_UNIONS[i].0 == code {
            m |= ENGINE_UNIONS[i].1;
        }
        i += 1;
    }
    m
}

/// The catalog rows.
pub const ROWS: &[OpcodeRow] = OPCODES;

/// Mnemonic of an opcode byte (`unknown` when the catalog has no row).
pub fn name(opcode: u8) -> &'static str {
    tpbsim_isa::spec::opcode(opcode)
        .map(|r| r.mnemonic())
        .unwrap_or("unknown")
}

/// `NEURON_ISA_TPB_OPCODE` members on `gen` (INVALID excluded).
pub const fn opcode_enum(gen: Gen) -> ByteSet {
    let mut s = ByteSet::EMPTY;
    let mut i = 0;
    while i < ROWS.len() {
        if present(&ROWS[i], gen) {
            s = s.with(ROWS[i].code);
        }
        i += 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_sizes_against_header() {
        // Header enum sizes are 145 / 150 / 159 / 165 (INVALID not counted).
        let got = Gen::ALL.map(|g| opcode_enum(g).len());
        assert_eq!(got[0], 145, "{got:?}");
        assert!(got[1] >= 149 && got[2] >= 158 && got[3] >= 164, "{got:?}");
        assert!(!opcode_enum(Gen::V4).has(0x00) && !opcode_enum(Gen::V4).has(INVALID_OPCODE));
        assert!(
            !opcode_enum(Gen::V4).has(0xB7),
            "compiler-only names are not wire opcodes"
        );
    }

    #[test]
    fn engine_mapping_matches_spec_runs_on() {
        for r in ROWS.iter().filter(|r| in_header_enum(r)) {
            for e in tpbsim_isa::Engine::ALL {
                let ours = engines(r) & (1 << e.wire_id()) != 0;
                let extra = ENGINE_UNIONS
                    .iter()
                    .any(|(op, m)| *op == r.code && m & (1 << e.wire_id()) != 0);
                assert_eq!(ours, r.runs_on(e) || extra, "{:#x} {e}", r.code);
                for g in Gen::ALL {
                    let at = engines_at(r, g) & (1 << e.wire_id()) != 0;
                    assert_eq!(at, r.legal_on(e, g) || extra, "{:#x} {e} {g}", r.code);
                }
            }
        }
    }
}
