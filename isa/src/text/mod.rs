//! The text form (`sim disasm` / `sim asm`) and the JSON form (`sim decode --json`) of bundles.
//!
//! # Text syntax
//!
//! One bundle per line:
//!
//! ```text
//!      0  0x000000:  MATMUL src=[0x00040100 step=1,1,1 num=64,1,1] in_dtype=BF16 num_active_cols=128
//! ```
//!
//! * An optional `INDEX 0xOFFSET:` prefix (ignored by the parser), then the mnemonic.
//! * `name=value` for every field whose bytes are not all zero (`inst_word_len` is shown only
//!   when it is not 0x10); omitted fields are zero. Values: integers in decimal or `0x` hex;
//!   enums by name or number; dtype pairs `LO|HI`; floats as decimal (or `0x` bits when the
//!   decimal would not round-trip); access patterns `[ADDR4 step=.. num=..]`; bitfields
//!   `{sub=value ...}`; character arrays as quoted strings with `\xNN` escapes; unpublished
//!   bytes as hex.
//! * Non-zero reserved bytes are shown as `reserved@OFFSET=HEX` so nothing is lost.
//! * A bundle that does not decode for the generation is written `.bundle HEX128`.
//! * `;` starts a comment.
//!
//! [`parse_line`] reads this syntax back, and the toolchain's dialect ([`neuron`]) beside it;
//! `parse(disasm(b)) == b` for every bundle in either syntax. `docs/asm.md` is the reference.
//!
//! A parsed line is a mnemonic and `name=value` items; each value is read by its field's type
//! into a [`FieldArg`] ([`parse_value`]) and written by [`write_arg`]. [`encode_fields`] takes
//! an instruction in that form directly (mnemonic, then fields with typed values: enumeration
//! names, integers, floats, dtype pairs, access patterns, ...), through the same encoding stage
//! (layout selection, unknown and repeated fields, reserved bytes), so a program building
//! instructions never renders a value as text.

use crate::desc::{Addr4, Addr8, MxIndirect16b, MxMemPattern1d};
use crate::formats::Opcode;
use crate::inst::{decode, FieldMeta, FieldValue, LayoutMeta, PatternValue};
use crate::spec::{self, BitfieldDef, EnumDef, FieldType};
use crate::wire::{EventsExt, F32Bits, Wire, INST_WORD_LEN};
use crate::{Bundle, Engine, Gen, Inst};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

pub mod crosscheck;
mod json;
mod lexer;
pub mod neuron;
mod parse;
mod print;
mod typed;
mod values;

pub use crosscheck::{cross_check, AsmCheck};
pub use json::bundle_json;
pub(crate) use lexer::*;
pub use neuron::SyncTokenError;
pub(crate) use parse::*;
pub use parse::{parse_line, parse_text};
pub(crate) use print::*;
pub use print::{disasm_bundle, fields_text, value_text};
pub(crate) use typed::*;
pub use typed::{encode_fields, parse_value, write_arg, EncodeError, FieldArg};
pub(crate) use values::*;
pub use values::{write_field, FieldTextError};

/// A text-form parse error, with the 1-based column where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct ParseError {
    /// 1-based column (in characters).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

pub(crate) fn perr(column: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        column,
        message: message.into(),
    }
}

/// The text dialect of a disassembly (`sim disasm --syntax`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Syntax {
    /// tpbsim's own form: `name=value` for every non-zero field.
    #[default]
    Tpbsim,
    /// The toolchain's public dialect: `$S[i]>=v`, `$S[i]++@complete`,
    /// `dtype@address[steps][counts]`, statements ending in `;`.
    Neuron,
}

impl std::str::FromStr for Syntax {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "tpbsim" => Ok(Syntax::Tpbsim),
            "neuron" => Ok(Syntax::Neuron),
            _ => Err(format!("`{s}`: the syntaxes are tpbsim and neuron")),
        }
    }
}

/// One disassembly line in `syntax` (without index/offset prefix).
pub fn disasm_bundle_as(b: &Bundle, gen: Gen, syntax: Syntax) -> String {
    match syntax {
        Syntax::Tpbsim => disasm_bundle(b, gen),
        Syntax::Neuron => neuron::disasm_bundle(b, gen),
    }
}

/// A full disassembly line: `INDEX 0xOFFSET:  TEXT`, plus an engine-legality comment when
/// `engine` is given and the opcode is not legal on it in `gen` (the catalog's engine classes
/// plus the spec's per-generation engine legality rows, `spec::ENGINE_LEGAL`).
pub fn disasm_line(index: usize, b: &Bundle, gen: Gen, engine: Option<Engine>) -> String {
    disasm_line_as(index, b, gen, engine, Syntax::Tpbsim)
}

/// [`disasm_line`] in `syntax`.
pub fn disasm_line_as(
    index: usize,
    b: &Bundle,
    gen: Gen,
    engine: Option<Engine>,
    syntax: Syntax,
) -> String {
    let mut s = format!(
        "{index:>6}  {:#08x}:  {}",
        index * 64,
        disasm_bundle_as(b, gen, syntax)
    );
    if let (Some(e), Some(row)) = (engine, spec::opcode(b.0[0])) {
        if row.is_present(gen) && !row.legal_on(e, gen) {
            let _ = write!(
                s,
                " ; engine classes {} do not include {e}",
                row.legal_classes(gen).label()
            );
        }
    }
    s
}

/// A parse error as a compiler writes it: `FILE:LINE:COL: MESSAGE`, then the line and a
/// caret under the column.
pub fn render_error(file: &str, text: &str, line: usize, e: &ParseError) -> String {
    let src = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let pad: String = src
        .chars()
        .take(e.column.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let gutter = line.to_string().len();
    format!(
        "{file}:{line}:{}: {}\n {line} | {src}\n {:gutter$} | {pad}^",
        e.column, e.message, ""
    )
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod edge_tests;

#[cfg(test)]
mod typed_tests;
