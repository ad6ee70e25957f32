//! Decoding, the raw form, layout and field metadata, and the generic field visitor.

use crate::desc::{Addr4, Addr8, MxIndirect16b, MxMemPattern1d};
use crate::formats::{decode_dispatch, Inst, Opcode, MNEMONICS};
use crate::spec::{self, BitfieldDef, EnumDef, FieldType, FormatDef};
use crate::wire::{DtypePair, Events, EventsExt, F32Bits, Header, Wire};
use crate::{Bundle, Gen};
use std::ops::Range;

/// Why a bundle does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecodeError {
    /// The opcode byte is absent (`-`) in the generation, or not in the catalog at all.
    UnknownOpcode {
        /// Opcode byte.
        opcode: u8,
        /// Generation decoded for.
        gen: Gen,
    },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            DecodeError::UnknownOpcode { opcode, gen } => match spec::opcode(opcode) {
                Some(row) => {
                    let present: Vec<&str> = Gen::ALL
                        .iter()
                        .filter(|g| row.is_present(**g))
                        .map(|g| g.short())
                        .collect();
                    if present.is_empty() {
                        write!(f, "opcode {opcode:#04x} ({}) is not an opcode of the shipped ISA on {gen} ({})", row.mnemonic(), gen.codename())
                    } else {
                        write!(
                            f,
                            "opcode {opcode:#04x} ({}) is absent on {gen} ({}); present on {}",
                            row.mnemonic(),
                            gen.codename(),
                            present.join(", ")
                        )
                    }
                }
                None => write!(
                    f,
                    "opcode {opcode:#04x} is not defined on {gen} ({})",
                    gen.codename()
                ),
            },
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decode one bundle for `gen`.
///
/// An opcode absent in `gen` is [`DecodeError::UnknownOpcode`]; a known opcode with a typed
/// format gives that generation's layout; any other known opcode gives [`Inst::Raw`]. Never
/// panics, never allocates.
#[inline]
pub fn decode(b: &Bundle, gen: Gen) -> Result<Inst, DecodeError> {
    decode_dispatch(b, gen)
}

/// A known opcode without a typed format: the exact 64 bytes, with header and events views.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct RawInst(pub Bundle);

impl RawInst {
    /// Header view.
    pub fn header(&self) -> Header {
        Header::read(&self.0 .0, 0)
    }
    /// Events view.
    pub fn events(&self) -> Events {
        Events::read(&self.0 .0, 4)
    }
    /// Body bytes 12..64.
    pub fn body(&self) -> &[u8] {
        &self.0 .0[12..]
    }
}

/// Metadata of one generated layout (one format in one or more generations).
#[derive(Debug)]
pub struct LayoutMeta {
    /// Rust type name (`MatmulV3`).
    pub rust_name: &'static str,
    /// The spec format (`None` for the raw form).
    pub format: Option<&'static FormatDef>,
    /// Generations v2..v5 in which this layout applies.
    pub gens: [bool; 4],
    /// Every field, header and events first, then the body by offset.
    pub fields: &'static [FieldMeta],
    /// Reserved byte ranges `[start, end)`, including reserved bytes inside descriptors.
    pub reserved: &'static [(u8, u8)],
}

impl LayoutMeta {
    /// Opcodes that decode to this layout in `gen`, with the sub-opcode selector (offset,
    /// value) when the format is selected by a body byte.
    pub fn opcodes(&self, gen: Gen) -> Vec<(u8, Option<(u8, u8)>)> {
        let Some(f) = self.format else {
            return Vec::new();
        };
        match f.sub {
            Some(s) => vec![(s.opcode, Some((s.offset, s.value)))],
            None => spec::opcodes()
                .iter()
                .filter(|r| r.format == f.name && r.is_present(gen))
                .map(|r| (r.code, None))
                .collect(),
        }
    }

    /// Format name (`Matmul`), or `Raw`.
    pub fn format_name(&self) -> &'static str {
        self.format.map(|f| f.name).unwrap_or("Raw")
    }
    /// A field by name.
    pub fn field(&self, name: &str) -> Option<&'static FieldMeta> {
        self.fields.iter().find(|f| f.name == name)
    }
    /// Byte ranges of reserved bytes that are non-zero in `b` (contiguous runs merged).
    pub fn nonzero_reserved(&self, b: &Bundle) -> Vec<Range<usize>> {
        let mut out: Vec<Range<usize>> = Vec::new();
        for &(s, e) in self.reserved {
            for i in s as usize..e as usize {
                if b.0[i] != 0 {
                    match out.last_mut() {
                        Some(r) if r.end == i => r.end = i + 1,
                        _ => out.push(i..i + 1),
                    }
                }
            }
        }
        out
    }
    /// Whether any reserved byte of `b` is non-zero.
    pub fn has_nonzero_reserved(&self, b: &Bundle) -> bool {
        self.reserved
            .iter()
            .any(|&(s, e)| b.0[s as usize..e as usize].iter().any(|&x| x != 0))
    }
}

/// Metadata of one field.
#[derive(Debug, Clone, Copy)]
pub struct FieldMeta {
    /// snake_case name.
    pub name: &'static str,
    /// Byte offset in the bundle.
    pub offset: u8,
    /// Type.
    pub ty: FieldType,
    /// Source.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
    /// A u32 that may hold an fp32 immediate (the text form accepts decimal floats).
    pub float: bool,
    /// What the zero default means ("" = nothing to add).
    pub zero: &'static str,
}

impl FieldMeta {
    /// Width in bytes.
    pub const fn width(&self) -> u8 {
        self.ty.width()
    }
    /// Byte range in the bundle.
    pub const fn range(&self) -> Range<usize> {
        self.offset as usize..self.offset as usize + self.ty.width() as usize
    }
    /// The enumeration of an enum-typed field.
    pub fn enum_def(&self) -> Option<&'static EnumDef> {
        match self.ty {
            FieldType::Enum(e) => spec::enum_def(e),
            _ => None,
        }
    }
    /// The bitfield of a bitfield-typed field.
    pub fn bitfield_def(&self) -> Option<&'static BitfieldDef> {
        match self.ty {
            FieldType::Bits(b) => spec::bitfield(b),
            _ => None,
        }
    }

    /// Read the field's value from a bundle.
    pub fn read<'a>(&self, b: &'a Bundle) -> FieldValue<'a> {
        let o = self.offset as usize;
        let w = &b.0;
        match self.ty {
            FieldType::U8 => FieldValue::Unsigned(w[o] as u64),
            FieldType::U16 => FieldValue::Unsigned(u16::read(w, o) as u64),
            FieldType::U32 => FieldValue::Unsigned(u32::read(w, o) as u64),
            FieldType::U64 => FieldValue::Unsigned(u64::read(w, o)),
            FieldType::I16 => FieldValue::Signed(i16::read(w, o) as i64),
            FieldType::I32 => FieldValue::Signed(i32::read(w, o) as i64),
            FieldType::F32 => FieldValue::F32(F32Bits::read(w, o)),
            FieldType::Enum(e) => FieldValue::Enum {
                raw: w[o],
                def: spec::enum_def(e).expect("spec enum"),
            },
            FieldType::DtypePair => FieldValue::DtypePair(DtypePair(w[o])),
            FieldType::Bits(bf) => FieldValue::Bits {
                raw: w[o],
                def: spec::bitfield(bf).expect("spec bitfield"),
            },
            FieldType::Addr4 => FieldValue::Addr4(Addr4::read(w, o)),
            FieldType::Tensor(n) | FieldType::MemPattern(n) => {
                let n = n as usize;
                let mut p = PatternValue {
                    dims: n as u8,
                    addr: Addr4::read(w, o),
                    step: [0; 4],
                    num: [0; 4],
                };
                for i in 0..n {
                    p.step[i] = i16::read(w, o + 4 + 2 * i);
                    p.num[i] = u16::read(w, o + 4 + 2 * n + 2 * i);
                }
                FieldValue::Pattern(p)
            }
            FieldType::MxMemPattern1d => FieldValue::MxMem(MxMemPattern1d::read(w, o)),
            FieldType::MxIndirect16b => FieldValue::MxIndirect(MxIndirect16b::read(w, o)),
            FieldType::Addr8 => FieldValue::Addr8(Addr8::read(w, o)),
            FieldType::EventsExt => FieldValue::EventsExt(EventsExt::read(w, o)),
            FieldType::I32Array(n) => {
                let mut v = [0i64; 4];
                for (i, x) in v.iter_mut().enumerate().take(n as usize) {
                    *x = i32::read(w, o + 4 * i) as i64;
                }
                FieldValue::Array { vals: v, len: n }
            }
            FieldType::U16Array(n) => {
                let mut v = [0i64; 4];
                for (i, x) in v.iter_mut().enumerate().take(n as usize) {
                    *x = u16::read(w, o + 2 * i) as i64;
                }
                FieldValue::Array { vals: v, len: n }
            }
            FieldType::Str(n) => FieldValue::Str(&w[o..o + n as usize]),
            FieldType::Opaque(n) => FieldValue::Opaque(&w[o..o + n as usize]),
        }
    }
}

/// A TENSORnD / MEM_PATTERNnD value (up to 4 dims).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatternValue {
    /// Number of dims N.
    pub dims: u8,
    /// Start address.
    pub addr: Addr4,
    /// Strides (first `dims` used).
    pub step: [i16; 4],
    /// Counts (first `dims` used).
    pub num: [u16; 4],
}

/// The value of one field, read generically from the bundle bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue<'a> {
    /// Unsigned integer.
    Unsigned(u64),
    /// Signed integer.
    Signed(i64),
    /// Float bits.
    F32(F32Bits),
    /// Enumeration value (raw kept; the name may be unknown).
    Enum {
        /// Raw byte.
        raw: u8,
        /// Enumeration.
        def: &'static EnumDef,
    },
    /// Two DTYPE nibbles.
    DtypePair(DtypePair),
    /// Bitfield byte.
    Bits {
        /// Raw byte.
        raw: u8,
        /// Bitfield.
        def: &'static BitfieldDef,
    },
    /// ADDR4.
    Addr4(Addr4),
    /// TENSORnD / MEM_PATTERNnD.
    Pattern(PatternValue),
    /// MXMEM_PATTERN1D.
    MxMem(MxMemPattern1d),
    /// MXINDIRECT16B.
    MxIndirect(MxIndirect16b),
    /// ADDR8.
    Addr8(Addr8),
    /// EVENTS_EXTENDED.
    EventsExt(EventsExt),
    /// Integer array (first `len` used).
    Array {
        /// Values.
        vals: [i64; 4],
        /// Length.
        len: u8,
    },
    /// NUL-padded character array.
    Str(&'a [u8]),
    /// Unpublished bytes.
    Opaque(&'a [u8]),
}

impl Inst {
    /// Opcode.
    pub fn opcode(&self) -> Opcode {
        self.header().opcode
    }
    /// Mnemonic (`MATMUL`, `PSEUDO_DMATRIGGER`); `UNKNOWN` for a hand-made raw form with a byte
    /// outside the catalog.
    pub fn mnemonic(&self) -> &'static str {
        MNEMONICS[self.opcode().0 as usize].unwrap_or("UNKNOWN")
    }
    /// Format name (`Matmul`, `Raw`).
    pub fn format_name(&self) -> &'static str {
        self.meta().format_name()
    }
    /// Visit every field (header and events first) with its metadata and value.
    pub fn visit_fields(&self, mut f: impl FnMut(&FieldMeta, FieldValue<'_>)) {
        let b = self.encode();
        for m in self.meta().fields {
            f(m, m.read(&b));
        }
    }
    /// The value of a field by name.
    pub fn field(&self, name: &str) -> Option<(&'static FieldMeta, OwnedFieldValue)> {
        let m = self.meta().field(name)?;
        let b = self.encode();
        Some((m, OwnedFieldValue::from(m.read(&b))))
    }
    /// Byte ranges of reserved bytes that are non-zero.
    pub fn nonzero_reserved(&self) -> Vec<Range<usize>> {
        self.meta().nonzero_reserved(&self.encode())
    }
}

/// A field value that owns its bytes (for [`Inst::field`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedFieldValue {
    /// Any value without borrowed bytes.
    Value(FieldValue<'static>),
    /// Character array bytes.
    Str(Vec<u8>),
    /// Unpublished bytes.
    Opaque(Vec<u8>),
}

impl From<FieldValue<'_>> for OwnedFieldValue {
    fn from(v: FieldValue<'_>) -> Self {
        match v {
            FieldValue::Str(s) => OwnedFieldValue::Str(s.to_vec()),
            FieldValue::Opaque(s) => OwnedFieldValue::Opaque(s.to_vec()),
            FieldValue::Unsigned(x) => OwnedFieldValue::Value(FieldValue::Unsigned(x)),
            FieldValue::Signed(x) => OwnedFieldValue::Value(FieldValue::Signed(x)),
            FieldValue::F32(x) => OwnedFieldValue::Value(FieldValue::F32(x)),
            FieldValue::Enum { raw, def } => OwnedFieldValue::Value(FieldValue::Enum { raw, def }),
            FieldValue::DtypePair(x) => OwnedFieldValue::Value(FieldValue::DtypePair(x)),
            FieldValue::Bits { raw, def } => OwnedFieldValue::Value(FieldValue::Bits { raw, def }),
            FieldValue::Addr4(x) => OwnedFieldValue::Value(FieldValue::Addr4(x)),
            FieldValue::Pattern(x) => OwnedFieldValue::Value(FieldValue::Pattern(x)),
            FieldValue::MxMem(x) => OwnedFieldValue::Value(FieldValue::MxMem(x)),
            FieldValue::MxIndirect(x) => OwnedFieldValue::Value(FieldValue::MxIndirect(x)),
            FieldValue::Addr8(x) => OwnedFieldValue::Value(FieldValue::Addr8(x)),
            FieldValue::EventsExt(x) => OwnedFieldValue::Value(FieldValue::EventsExt(x)),
            FieldValue::Array { vals, len } => {
                OwnedFieldValue::Value(FieldValue::Array { vals, len })
            }
        }
    }
}
