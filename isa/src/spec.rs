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
include!("../spec/dtypes.rs");

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

/// The simulator's "runs on" rows: engines an opcode also executes on beyond its engine column.
pub fn runs_on_rows() -> &'static [RunsOnRow] {
    RUNS_ON
}

/// The per-generation engine legality rows: engines an opcode is legal on, on some
/// generations, beyond its engine column.
pub fn engine_legal_rows() -> &'static [EngineLegalRow] {
    ENGINE_LEGAL
}

/// Whether the simulator executes `opcode` on engine `e`: the engine column of its row
/// ([`OpcodeRow::runs_on`]) or one of its [`RUNS_ON`] rows (generated table).
#[inline]
pub fn sim_runs_on(opcode: u8, e: Engine) -> bool {
    crate::formats::RUNS_ON_ENGINES[opcode as usize] & (1 << e.wire_id()) != 0
}

/// Every number-format row.
pub fn num_format_rows() -> &'static [NumFormatRow] {
    NUM_FORMATS
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

    /// Whether the opcode is legal on the wire engine `e` in `gen`: its engine column
    /// ([`OpcodeRow::runs_on`]) plus the [`ENGINE_LEGAL`] rows for `gen`. This is what the L2
    /// engine gate and the disassembler's engine annotation read.
    pub fn legal_on(&self, e: Engine, gen: Gen) -> bool {
        self.legal_classes(gen).has_engine(e)
    }

    /// The engine classes the opcode is legal on in `gen` (engine column plus [`ENGINE_LEGAL`]).
    pub fn legal_classes(&self, gen: Gen) -> EngineClass {
        legal_engine_classes(self, gen.index())
    }

    /// Whether the row's engine classes include the wire engine `e`.
    ///
    /// Mapping (project-defined): PE, ACT, POOL, DVE are their engines; NX (the sequencer of
    /// every engine) matches all engines; DMA matches SP (the queue that issues DMA).
    pub fn runs_on(&self, e: Engine) -> bool {
        self.engines.has_engine(e)
    }
}

impl EngineClass {
    /// Whether the set includes the wire engine `e`: NX (the sequencer of every engine)
    /// matches all engines, DMA matches SP, the others their engine.
    pub fn has_engine(self, e: Engine) -> bool {
        if self.contains(EngineClass::NX) {
            return true;
        }
        match e {
            Engine::Pe => self.contains(EngineClass::PE),
            Engine::Act => self.contains(EngineClass::ACT),
            Engine::Pool => self.contains(EngineClass::POOL),
            Engine::Dve => self.contains(EngineClass::DVE),
            Engine::Sp => self.contains(EngineClass::DMA),
        }
    }

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

    #[test]
    fn engine_legal_rows_are_well_formed() {
        let mut last = None;
        for x in ENGINE_LEGAL {
            assert!(!x.prov.is_empty(), "{:#04x}", x.code);
            assert!(last < Some(x.code), "rows ascending at {:#04x}", x.code);
            last = Some(x.code);
            let r = opcode(x.code).expect("an opcode row");
            assert!(x.gens.len() == 4 && x.gens.bytes().all(|c| c == b'Y' || c == b'-'));
            for g in Gen::ALL {
                let added = presence_at(x.gens, g.index()).is_present();
                // A row adds only where the opcode exists, and only engines beyond its column.
                assert!(!added || r.is_present(g), "{:#04x} absent on {g}", x.code);
                for e in Engine::ALL {
                    if x.engines.has_engine(e) {
                        assert!(!r.runs_on(e), "{:#04x} already on {e}", x.code);
                        assert_eq!(r.legal_on(e, g), added, "{:#04x} {e} {g}", x.code);
                    }
                }
            }
        }
    }

    #[test]
    fn copy_and_cast_are_legal_on_act_from_v3() {
        for code in [0x46, 0x47] {
            let r = opcode(code).unwrap();
            assert!(!r.legal_on(Engine::Act, Gen::V2), "{code:#04x}");
            for g in [Gen::V3, Gen::V4, Gen::V5] {
                assert!(r.legal_on(Engine::Act, g), "{code:#04x} {g}");
                assert!(r.legal_on(Engine::Dve, g) && r.legal_on(Engine::Pool, g));
                assert!(!r.legal_on(Engine::Pe, g) && !r.legal_on(Engine::Sp, g));
            }
            assert_eq!(r.legal_classes(Gen::V2).label(), "POOL/DVE");
            assert_eq!(r.legal_classes(Gen::V3).label(), "ACT/POOL/DVE");
        }
        // The engine column itself stays the catalog's.
        assert!(!opcode(0x46).unwrap().runs_on(Engine::Act));
    }
}

/// A set of byte values (bit `v` set iff `v` is a member): the form the generated enumeration
/// and predicate sets take (`formats::members`, `formats::sets`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ByteSet(pub [u64; 4]);

impl ByteSet {
    /// The empty set.
    pub const EMPTY: ByteSet = ByteSet([0; 4]);

    /// Set of the listed values.
    pub const fn of(vals: &[u8]) -> ByteSet {
        let mut s = [0u64; 4];
        let mut i = 0;
        while i < vals.len() {
            let v = vals[i] as usize;
            s[v >> 6] |= 1 << (v & 63);
            i += 1;
        }
        ByteSet(s)
    }

    /// Set of the inclusive range `lo..=hi`.
    pub const fn range(lo: u8, hi: u8) -> ByteSet {
        let mut s = [0u64; 4];
        let mut v = lo as usize;
        while v <= hi as usize {
            s[v >> 6] |= 1 << (v & 63);
            v += 1;
        }
        ByteSet(s)
    }

    /// Union.
    pub const fn or(self, o: ByteSet) -> ByteSet {
        ByteSet([
            self.0[0] | o.0[0],
            self.0[1] | o.0[1],
            self.0[2] | o.0[2],
            self.0[3] | o.0[3],
        ])
    }

    /// Difference.
    pub const fn minus(self, o: ByteSet) -> ByteSet {
        ByteSet([
            self.0[0] & !o.0[0],
            self.0[1] & !o.0[1],
            self.0[2] & !o.0[2],
            self.0[3] & !o.0[3],
        ])
    }

    /// Add one value.
    pub const fn with(self, v: u8) -> ByteSet {
        let mut s = self.0;
        s[(v as usize) >> 6] |= 1 << (v & 63);
        ByteSet(s)
    }

    /// Membership.
    #[inline]
    pub const fn has(&self, v: u8) -> bool {
        (self.0[(v as usize) >> 6] >> (v & 63)) & 1 == 1
    }

    /// Number of members.
    pub const fn len(&self) -> u32 {
        self.0[0].count_ones()
            + self.0[1].count_ones()
            + self.0[2].count_ones()
            + self.0[3].count_ones()
    }

    /// True when empty.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Union of a per-generation set over every generation.
    pub const fn union_of(per_gen: &[ByteSet; 4]) -> ByteSet {
        per_gen[0].or(per_gen[1]).or(per_gen[2]).or(per_gen[3])
    }

    /// Members in ascending order.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        (0u16..256).map(|v| v as u8).filter(move |v| self.has(*v))
    }
}

/// Where one named field of a format sits in each generation (generated as
/// `formats::loc::<format>::<FIELD>`). Rows that share a name (a `Tensor` in one generation, a
/// `MemPattern` in another) are one locator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLoc {
    /// Format name (`Matmul`); empty for header and events fields.
    pub format: &'static str,
    /// Field name (`num_active_rows`).
    pub name: &'static str,
    /// Byte offset in v2, v3, v4, v5 (`NA` = absent).
    pub at: [u8; 4],
    /// Type in v2, v3, v4, v5 (`None` = absent).
    pub ty: [Option<FieldType>; 4],
}

impl FieldLoc {
    /// Byte offset in `gen`.
    #[inline]
    pub const fn at(&self, gen: Gen) -> Option<u8> {
        match self.at[gen.index()] {
            NA => None,
            o => Some(o),
        }
    }

    /// Type in `gen`.
    #[inline]
    pub const fn ty(&self, gen: Gen) -> Option<FieldType> {
        self.ty[gen.index()]
    }

    /// Width in bytes in `gen`.
    pub const fn width(&self, gen: Gen) -> Option<u8> {
        match self.ty[gen.index()] {
            Some(t) => Some(t.width()),
            None => None,
        }
    }

    /// The field's unsigned little-endian value in the 64-byte bundle `b` in `gen`; `None`
    /// when `gen` has no such field (or its type is wider than 8 bytes).
    pub fn read_uint(&self, b: &[u8; 64], gen: Gen) -> Option<u64> {
        let (at, w) = (self.at(gen)? as usize, self.width(gen)? as usize);
        let bytes = b.get(at..at + w).filter(|_| w <= 8)?;
        Some(bytes.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64))
    }

    /// Write the low bytes of `v` as the field's little-endian value into `b` in `gen`;
    /// `false` (nothing written) when `gen` has no such field or it is wider than 8 bytes.
    pub fn write_uint(&self, b: &mut [u8; 64], gen: Gen, v: u64) -> bool {
        let (Some(at), Some(w)) = (self.at(gen), self.width(gen)) else {
            return false;
        };
        let (at, w) = (at as usize, w as usize);
        match b.get_mut(at..at + w).filter(|_| w <= 8) {
            Some(bytes) => {
                for (i, x) in bytes.iter_mut().enumerate() {
                    *x = (v >> (8 * i)) as u8;
                }
                true
            }
            None => false,
        }
    }

    /// Bit range `lo..hi` within the bundle in `gen`.
    pub const fn bits(&self, gen: Gen) -> Option<(u16, u16)> {
        match (self.at(gen), self.width(gen)) {
            (Some(o), Some(w)) => Some((8 * o as u16, 8 * (o as u16 + w as u16))),
            _ => None,
        }
    }

    /// Enumeration or bitfield the field ranges over, by header name (`DTYPE`).
    pub const fn set(&self, gen: Gen) -> Option<&'static str> {
        match self.ty[gen.index()] {
            Some(FieldType::Enum(e)) | Some(FieldType::Bits(e)) => Some(e),
            Some(FieldType::DtypePair) => Some("DTYPE"),
            _ => None,
        }
    }

    /// The offset the field has in every generation with an L2 validator (v2, v3, v4) where
    /// it is present. Evaluated in a `const`, a locator whose offset moves between those
    /// generations (or that is absent in all of them) fails to compile.
    pub const fn l2_offset(&self) -> u8 {
        let mut off = NA;
        let mut gi = 0;
        while gi < 3 {
            let o = self.at[gi];
            if o != NA {
                if off != NA && off != o {
                    panic!("field offset differs between the L2 generations");
                }
                off = o;
            }
            gi += 1;
        }
        if off == NA {
            panic!("field absent in every L2 generation");
        }
        off
    }

    /// The width in bytes the field has in the L2 generations (see [`FieldLoc::l2_offset`]).
    pub const fn l2_width(&self) -> u8 {
        let mut w = 0u8;
        let mut gi = 0;
        while gi < 3 {
            if let Some(t) = self.ty[gi] {
                let x = t.width();
                if w != 0 && w != x {
                    panic!("field width differs between the L2 generations");
                }
                w = x;
            }
            gi += 1;
        }
        if w == 0 {
            panic!("field absent in every L2 generation");
        }
        w
    }
}

/// Bits `lsb..lsb + width` of a bitfield byte (generated as `formats::loc::<format>::<FIELD>_<BIT>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitLoc {
    /// The byte holding the bits.
    pub field: FieldLoc,
    /// Sub-field name (`seed_mode`).
    pub name: &'static str,
    /// Lowest bit.
    pub lsb: u8,
    /// Width in bits.
    pub width: u8,
}

impl BitLoc {
    /// The sub-field's value in the byte `v`.
    pub const fn get(&self, v: u8) -> u8 {
        (v >> self.lsb) & (((1u16 << self.width) - 1) as u8)
    }
}

#[cfg(test)]
mod locator_tests {
    use super::*;
    use crate::formats::{loc, members, sets, LAYOUT_META};
    use crate::FormatGate;

    #[test]
    fn every_layout_field_has_its_locator_at_the_same_offset() {
        for m in LAYOUT_META.iter() {
            let f = m.format.expect("typed layout");
            let fi = FORMATS.iter().position(|x| x.name == f.name).unwrap();
            for fm in &m.fields[9..] {
                let l = loc::BY_FORMAT[fi]
                    .iter()
                    .find(|l| l.name == fm.name)
                    .unwrap_or_else(|| panic!("{}.{} has no locator", f.name, fm.name));
                for gen in Gen::ALL.into_iter().filter(|g| m.gens[g.index()]) {
                    assert_eq!(l.at(gen), Some(fm.offset), "{}.{} {gen}", f.name, fm.name);
                    assert_eq!(l.ty(gen), Some(fm.ty), "{}.{} {gen}", f.name, fm.name);
                }
            }
        }
    }

    #[test]
    fn locator_accessors() {
        let l = loc::matmul::NUM_ACTIVE_ROWS;
        assert_eq!((l.at(Gen::V3), l.at(Gen::V5)), (Some(38), Some(35)));
        assert_eq!(l.l2_offset(), 38);
        assert_eq!(l.bits(Gen::V5), Some((280, 288)));
        let o = loc::matmul::OUT_DTYPE;
        assert_eq!(
            (o.at(Gen::V2), o.l2_offset(), o.set(Gen::V4)),
            (None, 40, Some("DTYPE"))
        );
        let src = loc::matmul::SRC;
        assert_eq!(src.ty(Gen::V3), Some(FieldType::Tensor(3)));
        assert_eq!(src.ty(Gen::V4), Some(FieldType::MemPattern(3)));
        assert_eq!(src.width(Gen::V4), Some(16));
        let b = loc::matmul::FLAGS_SEED_MODE;
        assert_eq!((b.field.at(Gen::V4), b.get(0b0000_1100)), (Some(42), 3));
        assert_eq!(loc::events::UPDATE_MODE.at(Gen::V2), Some(6));
    }

    #[test]
    fn generated_sets_follow_the_rows() {
        assert_eq!(
            members::ALU_OP.map(|s| s.len()),
            [33, 60, 64, 65],
            "the ALU_OP note gives 33 / 60 / 64 / 65"
        );
        assert_eq!(sets::ARITH[Gen::V3.index()].len(), 26);
        assert_eq!(sets::ARITH[Gen::V4.index()].len(), 30);
        assert!(sets::PSUM_ZERO_REGION_LEGAL[Gen::V3.index()] == ByteSet::of(&[0]));
        assert!(
            !members::DTYPE[Gen::V3.index()].has(0x10) && members::DTYPE[Gen::V4.index()].has(0x10)
        );
    }

    #[test]
    fn gate_binding_follows_the_format_column() {
        assert_eq!(FormatGate::of(Gen::V3, 0x43), Some(FormatGate::S3d3Ts));
        assert_eq!(FormatGate::of(Gen::V3, 0x44), None, "dormant");
        assert_eq!(FormatGate::of(Gen::V2, 0x7B), None, "no layout on v2");
        assert_eq!(
            FormatGate::of(Gen::V5, 0xF3),
            None,
            "no gate lists the format"
        );
        for gen in Gen::ALL {
            for op in 0..=255u8 {
                if let Some(g) = FormatGate::of(gen, op) {
                    let r = opcode(op).expect("catalog row");
                    assert!(g.formats().contains(&r.format), "{gen} {op:#x}");
                    let p = r.presence_for(gen);
                    assert!(p.is_present() && p != Presence::Dormant, "{gen} {op:#x}");
                }
            }
        }
    }
}
