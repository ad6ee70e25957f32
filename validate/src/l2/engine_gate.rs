//! The engine-opcode gate: `instruction_engine_check` (v2) and
//! `neuron_isa_check_opcode_on_engine` (v3/v4), as per-engine opcode bitmaps — one 64-bit
//! mask per engine per 64-opcode band, tested with a single bit test like the shipped
//! `_bittest64` gate.
//!
//! The bitmaps are computed at compile time from the ISA spec's opcode rows (engine classes,
//! the per-generation engine legality rows `spec::ENGINE_LEGAL` and per-generation presence,
//! via [`super::catalog`]); the derived rows are project-defined (the full per-engine
//! expansion of the shipped masks is not public) except where a legality row carries its
//! evidence (COPY 0x46 / CAST 0x47 on ACT from v3: the compiler's own output and NKI's
//! `tensor_copy` engine list). The one published mask — v4 ACT `0x1000000000FE7F41` indexed
//! by `opcode − 88` — overrides the derived ACT rows for opcodes 88..=151 on v4; it does not
//! reach 0x46 / 0x47 (70, 71).

use tpbsim_isa::formats::loc;
use tpbsim_isa::{Engine, Gen};

use super::catalog;
use super::rule::{rule, Allowed, Ck, Field, Sink};
use tpbsim_isa::spec::ByteSet;
use tpbsim_isa::spec::OpcodeRow;

/// The published v4 ACT mask and its rebase (`_bittest64(0x1000000000FE7F41, opcode − 88)`).
pub const V4_ACT_MASK: u64 = 0x1000_0000_00FE_7F41;
/// Rebase of [`V4_ACT_MASK`].
pub const V4_ACT_BASE: u8 = 88;

/// Per generation (v2..v5) and wire engine (PE..SP): the legal opcode set.
pub type EngineBitmaps = [[ByteSet; 5]; 4];

const fn derive(rows: &[OpcodeRow]) -> EngineBitmaps {
    let mut t = [[ByteSet::EMPTY; 5]; 4];
    let gens = [Gen::V2, Gen::V3, Gen::V4, Gen::V5];
    let mut g = 0;
    while g < 4 {
        let mut e = 0;
        while e < 5 {
            let mut s = ByteSet::EMPTY;
            let mut i = 0;
            while i < rows.len() {
                let r = &rows[i];
                if catalog::present(r, gens[g]) && catalog::engines_at(r, gens[g]) & (1 << e) != 0 {
                    s = s.with(r.code);
                }
                i += 1;
            }
            t[g][e] = s;
            e += 1;
        }
        g += 1;
    }
    // Published v4 ACT mask overrides the derived ACT rows in 88..=151.
    let mut k = 0u32;
    while k < 64 {
        let op = V4_ACT_BASE as u32 + k;
        let bit = 1u64 << (op & 63);
        let w = (op >> 6) as usize;
        let act = &mut t[2][Engine::Act as usize].0;
        if (V4_ACT_MASK >> k) & 1 == 1 {
            act[w] |= bit;
        } else {
            act[w] &= !bit;
        }
        k += 1;
    }
    t
}

/// The computed bitmaps.
pub const BITMAPS: EngineBitmaps = derive(catalog::ROWS);

/// True when `opcode` is legal on wire engine `engine` at `gen`.
#[inline]
pub const fn opcode_on_engine(gen: Gen, engine: Engine, opcode: u8) -> bool {
    BITMAPS[gen.index()][engine as usize].has(opcode)
}

rule!(NEURON_ISA_CHECK_OPCODE_ON_ENGINE, "neuron_isa_check_opcode_on_engine", Engine,
    project "per-engine opcode bitmaps derived from the catalog's engine classes (NX = every engine) plus the spec's per-generation engine legality rows (COPY 0x46 / CAST 0x47 on ACT from v3: emitted by neuronx-cc 2.23 on ACT in Trn2 NEFFs; NKI nki.isa.tensor_copy: v3+ Vector, Scalar, GpSimd); v4 ACT 88..=151 from the published mask 0x1000000000FE7F41",
    "the opcode is legal on the engine whose stream holds it (v3/v4 per-engine bitmap)");
rule!(INSTRUCTION_ENGINE_CHECK, "instruction_engine_check", Engine,
    project "the v2 gate body is not public; tpbsim uses the same catalog-derived per-engine sets",
    "the opcode is legal on the engine whose stream holds it (v2)");
rule!(DVE_OP66_SUBDECODE, "neuron_isa_check_opcode_on_engine.dve_op66", Engine,
    project "v4 sends DVE opcode 66 (0x42) to a sub-decode whose body is not public; reported as not checked",
    "v4 DVE TENSOR_REDUCE_ARITH_OP special sub-decode");

/// The opcode field.
pub const OPCODE: Field = Field::at(loc::header::OPCODE);

/// Run the engine gate of `gen` for the bundle on wire engine `engine`.
pub fn engine_gate<S: Sink>(ck: &mut Ck<S>, engine: Engine) {
    let op = ck.u8(0);
    let rule = if ck.gen == Gen::V2 {
        &INSTRUCTION_ENGINE_CHECK
    } else {
        &NEURON_ISA_CHECK_OPCODE_ON_ENGINE
    };
    if !opcode_on_engine(ck.gen, engine, op) {
        ck.fail(rule, OPCODE, op as u64, Allowed::Text(engine_text(engine)));
        return;
    }
    if ck.gen == Gen::V4 && engine == Engine::Dve && op == 0x42 {
        ck.not_checked(
            &DVE_OP66_SUBDECODE,
            OPCODE,
            Allowed::Text("sub-decode of the bundle (not public)"),
        );
    }
}

const fn engine_text(e: Engine) -> &'static str {
    match e {
        Engine::Pe => "an opcode the PE engine executes",
        Engine::Act => "an opcode the ACT engine executes",
        Engine::Pool => "an opcode the POOL engine executes",
        Engine::Dve => "an opcode the DVE engine executes",
        Engine::Sp => "an opcode the SP engine executes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_rows() {
        assert!(opcode_on_engine(Gen::V4, Engine::Pe, 0x02));
        assert!(!opcode_on_engine(Gen::V4, Engine::Act, 0x02));
        assert!(opcode_on_engine(Gen::V3, Engine::Act, 0x21));
        assert!(!opcode_on_engine(Gen::V3, Engine::Pe, 0x21));
        assert!(
            opcode_on_engine(Gen::V3, Engine::Dve, 0x41)
                && opcode_on_engine(Gen::V3, Engine::Pool, 0x41)
        );
        assert!(
            !opcode_on_engine(Gen::V3, Engine::Pe, 0x09),
            "LDWEIGHTS_MX is v4+"
        );
        assert!(opcode_on_engine(Gen::V4, Engine::Pe, 0x09));
        for e in Engine::ALL {
            assert!(
                opcode_on_engine(Gen::V2, e, 0xA0),
                "control on every engine"
            );
            assert!(opcode_on_engine(Gen::V2, e, 0xD1), "pseudo on every engine");
            assert!(!opcode_on_engine(Gen::V4, e, 0xFF));
            assert!(!opcode_on_engine(Gen::V4, e, 0x00));
        }
        assert!(
            opcode_on_engine(Gen::V4, Engine::Dve, 0xE3)
                && !opcode_on_engine(Gen::V3, Engine::Dve, 0xE3)
        );
    }

    #[test]
    fn copy_and_cast_on_act_from_v3() {
        for op in [0x46u8, 0x47] {
            assert!(!opcode_on_engine(Gen::V2, Engine::Act, op), "{op:#x} v2");
            for g in [Gen::V3, Gen::V4] {
                assert!(opcode_on_engine(g, Engine::Act, op), "{op:#x} {g}");
                assert!(
                    opcode_on_engine(g, Engine::Dve, op) && opcode_on_engine(g, Engine::Pool, op)
                );
                assert!(!opcode_on_engine(g, Engine::Pe, op), "{op:#x} {g} PE");
                assert!(!opcode_on_engine(g, Engine::Sp, op), "{op:#x} {g} SP");
            }
            // The published v4 ACT mask starts at 88: it says nothing about 70 / 71.
            assert!(op < V4_ACT_BASE);
        }
        // Neighbours keep their column: RECIPROCAL (0x48) is still not an ACT opcode.
        assert!(!opcode_on_engine(Gen::V3, Engine::Act, 0x48));
    }

    #[test]
    fn v4_act_published_mask() {
        for k in 0..64u32 {
            let op = (V4_ACT_BASE as u32 + k) as u8;
            assert_eq!(
                opcode_on_engine(Gen::V4, Engine::Act, op),
                (V4_ACT_MASK >> k) & 1 == 1,
                "{op:#x}"
            );
        }
        assert!(opcode_on_engine(Gen::V4, Engine::Act, 0x21));
        assert!(opcode_on_engine(Gen::V4, Engine::Act, 0x25));
    }

    #[test]
    fn derived_dve_band_close_to_published_sub_range_mask() {
        // The published v4 sub-range mask 0x66F000100001 (indexed by opcode + 68, i.e.
        // opcodes 188..=251) is not attributed to an engine by the public sources; its set
        // {0xBC, 0xD0, 0xE0..0xE3, 0xE5, 0xE6, 0xE9, 0xEA} matches the derived DVE rows except
        // 0xBD (DMA_TRANSPOSE, class NX/DMA, derived on every engine), 0xE8/0xF2 (derived
        // POOL/DVE) and the pseudo 0xD0. Kept as a documented cross-check.
        let mask = 0x66F0_0010_0001u64;
        let mut diff = vec![];
        for k in 0..64u32 {
            let op = (188 + k) as u8;
            let published = (mask >> k) & 1 == 1;
            let derived =
                opcode_on_engine(Gen::V4, Engine::Dve, op) && !(0xC1..=0xDF).contains(&op);
            if published != derived && !(0xC1..=0xDF).contains(&op) {
                diff.push(op);
            }
        }
        assert_eq!(diff, vec![0xBD, 0xE8, 0xF2]);
    }
}
