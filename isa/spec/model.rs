// Row types of the declarative encoding spec.
//
// This file is `include!`d verbatim by `isa/build.rs` (which generates the typed formats, field
// enums, decode and encode from the tables) and by the library (`tpbsim_isa::spec`), so it may use
// only `core` items and must not contain inner attributes or inner doc comments.
//
// Provenance strings name a wiki page relative to `GrigoryEvko/crucible-notes`:
// `C <path>` = `neuronx-cc/wiki/src/<path>`, `G <path>` = `neuronx-gpsimd/wiki/src/<path>`,
// `R <path>` = `neuronx-runtime/wiki/src/<path>`; or the mark `project-defined`.
// An empty `prov` on an enum value, set member or bit row means "same source as its parent row".

/// Per-generation presence string: one character per generation v2, v3, v4, v5.
///
/// `Y` maintained, `n` dormant, `.` present but unflagged, `-` absent.
pub type PresenceStr = &'static str;

/// Presence of an item in one generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Presence {
    /// `Y`: present and maintained.
    Maintained,
    /// `n`: present in the enum but dormant.
    Dormant,
    /// `.`: present, not flagged either way.
    Unflagged,
    /// `-`: absent.
    Absent,
}

impl Presence {
    /// Parse one presence character.
    pub const fn from_symbol(c: u8) -> Option<Presence> {
        match c {
            b'Y' => Some(Presence::Maintained),
            b'n' => Some(Presence::Dormant),
            b'.' => Some(Presence::Unflagged),
            b'-' => Some(Presence::Absent),
            _ => None,
        }
    }

    /// The presence character.
    pub const fn symbol(self) -> char {
        match self {
            Presence::Maintained => 'Y',
            Presence::Dormant => 'n',
            Presence::Unflagged => '.',
            Presence::Absent => '-',
        }
    }

    /// Whether the item exists in that generation (anything but `-`).
    pub const fn is_present(self) -> bool {
        !matches!(self, Presence::Absent)
    }
}

/// Presence for generation index `gi` (0 = v2 .. 3 = v5) in a presence string.
/// Malformed strings read as absent (the spec tests reject them).
pub const fn presence_at(s: PresenceStr, gi: usize) -> Presence {
    let b = s.as_bytes();
    if b.len() != 4 || gi >= 4 {
        return Presence::Absent;
    }
    match Presence::from_symbol(b[gi]) {
        Some(p) => p,
        None => Presence::Absent,
    }
}

/// A set of engine classes (the catalog's `Eng` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EngineClass(pub u8);

impl EngineClass {
    /// No engine (the INVALID sentinel).
    pub const NONE: EngineClass = EngineClass(0);
    /// Tensor engine.
    pub const PE: EngineClass = EngineClass(1);
    /// Activation engine.
    pub const ACT: EngineClass = EngineClass(2);
    /// GpSimd (Pool) engine.
    pub const POOL: EngineClass = EngineClass(4);
    /// Vector engine.
    pub const DVE: EngineClass = EngineClass(8);
    /// The sequencer present in every engine (control instructions legal on all engines).
    pub const NX: EngineClass = EngineClass(16);
    /// DMA queues.
    pub const DMA: EngineClass = EngineClass(32);

    /// Union of two sets.
    pub const fn or(self, o: EngineClass) -> EngineClass {
        EngineClass(self.0 | o.0)
    }

    /// Whether every class of `o` is in `self`.
    pub const fn contains(self, o: EngineClass) -> bool {
        self.0 & o.0 == o.0 && o.0 != 0
    }

    /// Names of the classes in the set, in catalog order (`PE`, `ACT`, `POOL`, `DVE`, `NX`, `DMA`).
    pub const NAMES: [(&'static str, EngineClass); 6] = [
        ("PE", EngineClass::PE),
        ("ACT", EngineClass::ACT),
        ("POOL", EngineClass::POOL),
        ("DVE", EngineClass::DVE),
        ("NX", EngineClass::NX),
        ("DMA", EngineClass::DMA),
    ];
}

/// What kind of opcode a row describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// A device opcode of the shipped header enum.
    Real,
    /// A pseudo opcode of the band 0xC1..0xDF: compiler-emitted, rewritten by the runtime.
    Pseudo,
    /// A name only the compiler's decoder knows; absent from the shipped header union.
    CompilerOnly,
    /// The 0xFF INVALID sentinel.
    Invalid,
}

/// One opcode of the catalog.
#[derive(Clone, Copy, Debug)]
pub struct OpcodeRow {
    /// Opcode byte (bundle byte 0).
    pub code: u8,
    /// Header enum name without prefix (`MATMUL`, `DMATRIGGER`).
    pub name: &'static str,
    /// Kind of opcode.
    pub kind: OpKind,
    /// Engine classes that execute it.
    pub engines: EngineClass,
    /// Header operand struct (`S3D3_MM`), or "" when none is named.
    pub header_struct: &'static str,
    /// Spec format (a `FormatDef::name`) that decodes it, or "" for the raw form.
    pub format: &'static str,
    /// Presence v2..v5.
    pub presence: PresenceStr,
    /// Source.
    pub prov: &'static str,
    /// Remarks (engine hedges, conflicts).
    pub note: &'static str,
    /// Semantic family within its format (a variant of the generated `<Format>Sem` enum), or
    /// "" for a format whose opcodes all share one meaning. `NotSimulated` declares that the
    /// simulator does not execute the opcode. When one row of a format names a family, every
    /// row of that format must (checked by `isa/build.rs`).
    pub sem: &'static str,
}

impl OpcodeRow {
    /// A row with an empty note.
    pub const fn new(
        code: u8,
        name: &'static str,
        kind: OpKind,
        engines: EngineClass,
        header_struct: &'static str,
        format: &'static str,
        presence: PresenceStr,
        prov: &'static str,
    ) -> OpcodeRow {
        OpcodeRow { code, name, kind, engines, header_struct, format, presence, prov, note: "", sem: "" }
    }

    /// Same row with a note.
    pub const fn note(mut self, note: &'static str) -> OpcodeRow {
        self.note = note;
        self
    }

    /// Same row with a semantic family (see [`OpcodeRow::sem`]).
    pub const fn sem(mut self, sem: &'static str) -> OpcodeRow {
        self.sem = sem;
        self
    }

    /// Presence in generation index `gi` (0 = v2).
    pub const fn presence_in(&self, gi: usize) -> Presence {
        presence_at(self.presence, gi)
    }
}

/// One enumeration (one byte on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumDef {
    /// Header name (`DTYPE`, `ALU_OP`).
    pub name: &'static str,
    /// Generated Rust type name (`Dtype`, `AluOp`).
    pub rust: &'static str,
    /// Source.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
    /// Values.
    pub values: &'static [EnumVal],
}

impl EnumDef {
    /// The value row for `raw`, if the enum names it.
    pub const fn value(&self, raw: u8) -> Option<&'static EnumVal> {
        let mut i = 0;
        while i < self.values.len() {
            if self.values[i].value == raw {
                return Some(&self.values[i]);
            }
            i += 1;
        }
        None
    }
}

/// One enumerator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumVal {
    /// Wire value.
    pub value: u8,
    /// Name.
    pub name: &'static str,
    /// Membership v2..v5.
    pub gens: PresenceStr,
    /// Element width in bits for DTYPE values (0 elsewhere or when not a storage type).
    pub bits: u16,
    /// Source ("" = the enum's).
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
}

/// An enumerator present in every generation.
pub const fn ev(value: u8, name: &'static str) -> EnumVal {
    EnumVal { value, name, gens: "YYYY", bits: 0, prov: "", note: "" }
}

impl EnumVal {
    /// Same value with per-generation membership.
    pub const fn gens(mut self, g: PresenceStr) -> EnumVal {
        self.gens = g;
        self
    }
    /// Same value with an element width.
    pub const fn bits(mut self, b: u16) -> EnumVal {
        self.bits = b;
        self
    }
    /// Same value with its own source.
    pub const fn prov(mut self, p: &'static str) -> EnumVal {
        self.prov = p;
        self
    }
    /// Same value with a note.
    pub const fn note(mut self, n: &'static str) -> EnumVal {
        self.note = n;
        self
    }
}

/// A named subset of an enumeration (validator predicate sets such as "general arith").
#[derive(Clone, Copy, Debug)]
pub struct SetDef {
    /// Set name.
    pub name: &'static str,
    /// Enum (or bitfield) it ranges over.
    pub of: &'static str,
    /// Source.
    pub prov: &'static str,
    /// Remarks (expected sizes per generation).
    pub note: &'static str,
    /// Members with their per-generation membership.
    pub members: &'static [SetMember],
}

/// One member of a set.
#[derive(Clone, Copy, Debug)]
pub struct SetMember {
    /// Raw value.
    pub value: u8,
    /// Membership v2..v5.
    pub gens: PresenceStr,
}

/// A member in every generation where the underlying enum value exists.
pub const fn sm(value: u8) -> SetMember {
    SetMember { value, gens: "YYYY" }
}

/// A member with explicit per-generation membership.
pub const fn smg(value: u8, gens: PresenceStr) -> SetMember {
    SetMember { value, gens }
}

impl SetDef {
    /// Whether `raw` is a member in generation index `gi`.
    pub const fn contains(&self, raw: u8, gi: usize) -> bool {
        let mut i = 0;
        while i < self.members.len() {
            if self.members[i].value == raw {
                return presence_at(self.members[i].gens, gi).is_present();
            }
            i += 1;
        }
        false
    }
}

/// A one-byte bitfield (sub-byte fields, least significant bit first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitfieldDef {
    /// Header name (`MATMUL_FLAGS`).
    pub name: &'static str,
    /// Generated Rust type name.
    pub rust: &'static str,
    /// Source.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
    /// Sub-fields, in bit order; bits not covered are reserved.
    pub bits: &'static [BitDef],
}

/// One sub-field of a bitfield.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitDef {
    /// Name.
    pub name: &'static str,
    /// Lowest bit.
    pub lsb: u8,
    /// Width in bits.
    pub width: u8,
    /// Remarks (value meanings).
    pub note: &'static str,
}

/// Sentinel offset: the field does not exist in that generation.
pub const NA: u8 = 0xFF;

/// Type of a field of a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// Unsigned byte.
    U8,
    /// Little-endian u16.
    U16,
    /// Little-endian u32.
    U32,
    /// Little-endian u64.
    U64,
    /// Little-endian i16.
    I16,
    /// Little-endian i32.
    I32,
    /// IEEE binary32 (kept as raw bits).
    F32,
    /// One-byte enumeration (by `EnumDef::name`).
    Enum(&'static str),
    /// Two 4-bit DTYPE codes: low nibble, high nibble.
    DtypePair,
    /// One-byte bitfield (by `BitfieldDef::name`).
    Bits(&'static str),
    /// 4-byte address word with byte-3 marker.
    Addr4,
    /// TENSORnD access pattern (4 + 4N bytes).
    Tensor(u8),
    /// MEM_PATTERNnD (same bytes as TENSORnD, a union with indirect arms).
    MemPattern(u8),
    /// MXMEM_PATTERN1D (16 bytes).
    MxMemPattern1d,
    /// MXINDIRECT16B (16 bytes).
    MxIndirect16b,
    /// 8-byte DMA address with byte-7 marker.
    Addr8,
    /// EVENTS_EXTENDED (12 bytes).
    EventsExt,
    /// Array of N little-endian i32.
    I32Array(u8),
    /// Array of N little-endian u16.
    U16Array(u8),
    /// NUL-padded character array of N bytes.
    Str(u8),
    /// N bytes that are present on the wire but whose layout is not published: kept, shown,
    /// never reported as reserved.
    Opaque(u8),
}

impl FieldType {
    /// Width in bytes.
    pub const fn width(&self) -> u8 {
        match *self {
            FieldType::U8 | FieldType::Enum(_) | FieldType::DtypePair | FieldType::Bits(_) => 1,
            FieldType::U16 | FieldType::I16 => 2,
            FieldType::U32 | FieldType::I32 | FieldType::F32 | FieldType::Addr4 => 4,
            FieldType::U64 | FieldType::Addr8 => 8,
            FieldType::Tensor(n) | FieldType::MemPattern(n) => 4 + 4 * n,
            FieldType::MxMemPattern1d | FieldType::MxIndirect16b => 16,
            FieldType::EventsExt => 12,
            FieldType::I32Array(n) => 4 * n,
            FieldType::U16Array(n) => 2 * n,
            FieldType::Str(n) | FieldType::Opaque(n) => n,
        }
    }
}

/// One field of a format, with its offset in each generation.
#[derive(Clone, Copy, Debug)]
pub struct FieldRow {
    /// snake_case name.
    pub name: &'static str,
    /// Type.
    pub ty: FieldType,
    /// Byte offset in v2, v3, v4, v5 (`NA` = absent in that generation).
    pub at: [u8; 4],
    /// Source.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
    /// A u32 field that may hold an fp32 immediate: the text form accepts a decimal float
    /// and stores its bits.
    pub float: bool,
    /// What the default (all bytes zero, the value of an omitted field) means, when it is
    /// worth saying ("" = nothing beyond the zero value itself).
    pub zero: &'static str,
}

/// A field row.
pub const fn fld(name: &'static str, ty: FieldType, at: [u8; 4], prov: &'static str) -> FieldRow {
    FieldRow { name, ty, at, prov, note: "", float: false, zero: "" }
}

/// A field row at the same offset in every generation.
pub const fn fall(name: &'static str, ty: FieldType, off: u8, prov: &'static str) -> FieldRow {
    FieldRow { name, ty, at: [off; 4], prov, note: "", float: false, zero: "" }
}

impl FieldRow {
    /// Same row with a note.
    pub const fn note(mut self, n: &'static str) -> FieldRow {
        self.note = n;
        self
    }
    /// Same row marked as holding an fp32 immediate in a u32.
    pub const fn float(mut self) -> FieldRow {
        self.float = true;
        self
    }
    /// Same row with the meaning of its zero default.
    pub const fn zero(mut self, z: &'static str) -> FieldRow {
        self.zero = z;
        self
    }
}

/// Sub-opcode selection: the format applies to `opcode` only when byte `offset` equals `value`.
#[derive(Clone, Copy, Debug)]
pub struct SubSelect {
    /// Opcode byte.
    pub opcode: u8,
    /// Offset of the selector byte.
    pub offset: u8,
    /// Selector value.
    pub value: u8,
}

/// One instruction format (operand struct): the body fields after the 12-byte header+events.
///
/// Bytes 12..64 not covered by a field in a generation are reserved (must be zero).
#[derive(Clone, Copy, Debug)]
pub struct FormatDef {
    /// Rust type name (`Matmul`).
    pub name: &'static str,
    /// Header operand struct (`S3D3_MM`), or "" when the layout is a compiler view only.
    pub header_struct: &'static str,
    /// The L2 format gate that checks it (a `GateDef::variant` of `GATES`), or "" for none.
    pub gate: &'static str,
    /// Generations in which this typed layout applies (an opcode present in a generation where
    /// its format is absent decodes to the raw form).
    pub gens: PresenceStr,
    /// Optional sub-opcode selector.
    pub sub: Option<SubSelect>,
    /// Source of the layout.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
    /// Body fields.
    pub fields: &'static [FieldRow],
}

/// A recorded conflict between sources and the choice the spec makes.
#[derive(Clone, Copy, Debug)]
pub struct ConflictRow {
    /// Identifier (`D<n>` = row n of the digest's discrepancy table, `P<n>` = found here).
    pub id: &'static str,
    /// Topic.
    pub topic: &'static str,
    /// First reading with its source.
    pub claim_a: &'static str,
    /// Second reading with its source.
    pub claim_b: &'static str,
    /// The choice made and the spec row(s) that carry it.
    pub choice: &'static str,
}

/// One per-generation geometry constant.
#[derive(Clone, Copy, Debug)]
pub struct GeomRow {
    /// Name (snake_case, the `geometry` accessor name).
    pub name: &'static str,
    /// Value in v2, v3, v4, v5.
    pub v: [u64; 4],
    /// Unit or meaning.
    pub unit: &'static str,
    /// Source.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
}

/// One L2 format gate: its validator name. The formats it checks are the format rows that name
/// it (`FormatDef::gate`); the validator crate binds each gate to its function and rule table by
/// an exhaustive match over the generated `FormatGate`, so a new gate fails to build there until
/// it is implemented.
#[derive(Clone, Copy, Debug)]
pub struct GateDef {
    /// Variant name of the generated `FormatGate` enum (`S3d3Ts`).
    pub variant: &'static str,
    /// The gate's name as the shipped validators spell it (`is_valid_s3d3_ts`); the validator
    /// crate's gate function has this name.
    pub gate: &'static str,
    /// Source.
    pub prov: &'static str,
}
