//! The declarative per-generation encoding spec: opcode catalog, enumerations, predicate sets,
//! bitfields, formats, geometry and the recorded source conflicts.
//!
//! The tables live in `isa/spec/*.rs` and are the single source of truth: `isa/build.rs`
//! generates the typed formats, decode and encode from the same files this module includes.
//! Every row carries its provenance (a wiki page path, `C`/`G`/`R` prefixed) or the mark
//! `project-defined`.

#![allow(missing_docs, clippy::too_many_arguments)]

include!("../spec/model.rs");
include!("../spec/opcodes.rs");
include!("../spec/enums.rs");
include!("../spec/formats.rs");
include!("../spec/conflicts.rs");
include!("../spec/geometry.rs");

use crate::{Engine, Gen};

/// Every opcode row (ascending by byte).
pub fn opcodes() -> &'static [OpcodeRow] {
    OPCODES
}

/// The row of an opcode byte, if the catalog has one.
pub fn opcode(code: u8) -> Option<&'static OpcodeRow> {
    let i = crate::formats::OPCODE_ROW[code as usize];
    OPCODES.get(i as usize)
}

/// The row of an opcode by mnemonic (`MATMUL`, `PSEUDO_DMATRIGGER`), case-insensitive.
pub fn opcode_by_mnemonic(m: &str) -> Option<&'static OpcodeRow> {
    (0..256usize).find_map(|c| match crate::formats::MNEMONICS[c] {
        Some(n) if n.eq_ignore_ascii_case(m) => opcode(c as u8),
        _ => None,
    })
}

/// Every format.
pub fn formats() -> &'static [FormatDef] {
    FORMATS
}

/// A format by name.
pub fn format(name: &str) -> Option<&'static FormatDef> {
    FORMATS.iter().find(|f| f.name == name)
}

/// Every enumeration.
pub fn enums() -> &'static [EnumDef] {
    ENUMS
}

/// An enumeration by header name (`DTYPE`).
pub fn enum_def(name: &str) -> Option<&'static EnumDef> {
    ENUMS.iter().find(|e| e.name == name)
}

/// Every predicate set.
pub fn sets() -> &'static [SetDef] {
    SETS
}

/// A predicate set by name (`general_arith`).
pub fn set(name: &str) -> Option<&'static SetDef> {
    SETS.iter().find(|s| s.name == name)
}

/// Every bitfield.
pub fn bitfields() -> &'static [BitfieldDef] {
    BITFIELDS
}

/// A bitfield by header name (`MATMUL_FLAGS`).
pub fn bitfield(name: &str) -> Option<&'static BitfieldDef> {
    BITFIELDS.iter().find(|b| b.name == name)
}

/// Every recorded conflict.
pub fn conflicts() -> &'static [ConflictRow] {
    CONFLICTS
}

/// Every geometry row.
pub fn geometry_rows() -> &'static [GeomRow] {
    GEOMETRY
}

impl OpcodeRow {
    /// Presence in `gen`.
    pub fn presence_for(&self, gen: Gen) -> Presence {
        self.presence_in(gen.index())
    }

    /// Whether the opcode exists in `gen` (decode accepts it).
    pub fn is_present(&self, gen: Gen) -> bool {
        self.presence_for(gen).is_present()
    }

    /// Mnemonic used by the text form (`PSEUDO_` prefix for the pseudo band).
    pub fn mnemonic(&self) -> &'static str {
        crate::formats::MNEMONICS[self.code as usize].unwrap_or(self.name)
    }

    /// Whether the row's engine classes include the wire engine `e`.
    ///
    /// Mapping (project-defined): PE, ACT, POOL, DVE are their engines; NX (the sequencer of
    /// every engine) matches all engines; DMA matches SP (the queue that issues DMA).
    pub fn runs_on(&self, e: Engine) -> bool {
        let c = self.engines;
        if c.contains(EngineClass::NX) {
            return true;
        }
        match e {
            Engine::Pe => c.contains(EngineClass::PE),
            Engine::Act => c.contains(EngineClass::ACT),
            Engine::Pool => c.contains(EngineClass::POOL),
            Engine::Dve => c.contains(EngineClass::DVE),
            Engine::Sp => c.contains(EngineClass::DMA),
        }
    }
}

impl EngineClass {
    /// `PE/DVE`-style text of the set.
    pub fn label(self) -> String {
        let v: Vec<&str> = Self::NAMES
            .iter()
            .filter(|(_, c)| self.contains(*c))
            .map(|(n, _)| *n)
            .collect();
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join("/")
        }
    }
}

impl SetDef {
    /// Whether `raw` is a member in `gen`.
    pub fn contains_in(&self, raw: u8, gen: Gen) -> bool {
        self.contains(raw, gen.index())
    }

    /// Members in `gen`.
    pub fn members_in(&self, gen: Gen) -> impl Iterator<Item = u8> + '_ {
        self.members
            .iter()
            .filter(move |m| presence_at(m.gens, gen.index()).is_present())
            .map(|m| m.value)
    }
}

impl EnumDef {
    /// Values that are members in `gen`.
    pub fn values_in(&self, gen: Gen) -> impl Iterator<Item = &'static EnumVal> + '_ {
        self.values
            .iter()
            .filter(move |v| presence_at(v.gens, gen.index()).is_present())
    }

    /// Value by name (case-insensitive).
    pub fn by_name(&self, name: &str) -> Option<&'static EnumVal> {
        self.values
            .iter()
            .find(|v| v.name.eq_ignore_ascii_case(name))
    }

    /// Provenance of a value row (its own, or the enum's).
    pub fn prov_of(&self, v: &EnumVal) -> &'static str {
        if v.prov.is_empty() {
            self.prov
        } else {
            v.prov
        }
    }
}

impl FormatDef {
    /// Whether the typed format applies in `gen`.
    pub fn applies_in(&self, gen: Gen) -> bool {
        presence_at(self.gens, gen.index()).is_present()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_in(e: &EnumDef, g: Gen) -> usize {
        e.values_in(g).count()
    }

    #[test]
    fn enum_counts_per_generation() {
        let alu = enum_def("ALU_OP").unwrap();
        assert_eq!(Gen::ALL.map(|g| count_in(alu, g)), [33, 60, 64, 65]);
        let dt = enum_def("DTYPE").unwrap();
        assert_eq!(Gen::ALL.map(|g| count_in(dt, g)), [16, 16, 24, 30]);
        assert_eq!(enum_def("REDUCE_OP").unwrap().values.len(), 6);
        assert_eq!(enum_def("TENSOR_SUBDIM").unwrap().values.len(), 5);
    }

    #[test]
    fn predicate_set_sizes() {
        let n = |s: &str, g: Gen| set(s).unwrap().members_in(g).count();
        assert_eq!(n("bitvec", Gen::V3), 10);
        assert_eq!(n("general_bitvec", Gen::V3), 9);
        assert_eq!([n("arith", Gen::V3), n("arith", Gen::V4)], [26, 30]);
        assert_eq!(
            [n("general_arith", Gen::V3), n("general_arith", Gen::V4)],
            [17, 21]
        );
        assert_eq!(n("valid_int_aluop", Gen::V3), 26);
        assert_eq!(
            [n("dve_int_subset", Gen::V4), n("dve_int_subset", Gen::V5)],
            [0, 15]
        );
        // general arith = arith minus DIVIDE, POW, MOD, RSQRT and the int-aluop members.
        for g in Gen::ALL {
            let ga: Vec<u8> = set("general_arith").unwrap().members_in(g).collect();
            let expect: Vec<u8> = set("arith")
                .unwrap()
                .members_in(g)
                .filter(|v| {
                    ![0x07, 0x1A, 0x1B, 0x1D].contains(v)
                        && !set("valid_int_aluop").unwrap().contains_in(*v, g)
                })
                .collect();
            let (mut a, mut b) = (ga.clone(), expect);
            a.sort();
            b.sort();
            assert_eq!(a, b, "{g}");
        }
        let ps = set("psum_accumulate_legal").unwrap();
        assert!(
            !ps.contains_in(5, Gen::V2)
                && !ps.contains_in(7, Gen::V2)
                && ps.contains_in(6, Gen::V2)
        );
    }

    #[test]
    fn dtype_widths_and_cptc_rule() {
        let dt = enum_def("DTYPE").unwrap();
        for v in dt.values {
            let cptc = (v.value & 0xF8) == 0x18 && (v.value & 7) != 0;
            assert_eq!(cptc, v.name.starts_with("CPTC"), "{}", v.name);
        }
        assert_eq!(dt.by_name("bf16").unwrap().bits, 16);
        assert_eq!(dt.value(0x10).unwrap().bits, 4);
    }

    #[test]
    fn every_row_has_provenance() {
        for r in OPCODES {
            assert!(!r.prov.is_empty());
        }
        for f in FORMATS {
            assert!(!f.prov.is_empty());
            for fr in f.fields {
                assert!(
                    fr.prov.starts_with("C ")
                        || fr.prov.starts_with("G ")
                        || fr.prov.starts_with("R ")
                        || fr.prov == "project-defined",
                    "{}.{}",
                    f.name,
                    fr.name
                );
            }
        }
        for g in GEOMETRY {
            assert!(!g.prov.is_empty());
        }
    }

    #[test]
    fn engine_gate_data() {
        let mm = opcode(0x02).unwrap();
        assert!(mm.runs_on(Engine::Pe) && !mm.runs_on(Engine::Act));
        let nop = opcode(0xA4).unwrap();
        assert!(Engine::ALL.iter().all(|e| nop.runs_on(*e)));
        let tt = opcode(0x41).unwrap();
        assert!(tt.runs_on(Engine::Pool) && tt.runs_on(Engine::Dve) && !tt.runs_on(Engine::Pe));
        assert_eq!(tt.engines.label(), "POOL/DVE");
        assert_eq!(
            opcode_by_mnemonic("pseudo_dma_direct2d").unwrap().code,
            0xD4
        );
    }
}
