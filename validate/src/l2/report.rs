//! Failures → the shared [`Diagnostic`] model (Layer::L2) and the text renderer: the bundle
//! as a hex dump with a `^^` marker under the offending field's bytes.

use std::fmt::Write as _;

use tpbsim_isa::{Bundle, Engine, Gen};

use super::catalog;
use super::formats;
use super::rule::{Allowed, Failure, Outcome};
use crate::diag::{Diagnostic, FieldLoc, Layer, Location, Severity};

/// Where a bundle sits: file, engine, index and byte offset in the stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BundleLoc {
    /// Source file (stream or NEFF member).
    pub file: Option<String>,
    /// Engine whose stream holds the bundle.
    pub engine: Option<Engine>,
    /// Bundle index in the stream.
    pub index: u64,
    /// Byte offset of the bundle in the stream.
    pub offset: u64,
}

fn allowed_text(a: Allowed) -> String {
    match a {
        Allowed::Text(t) => t.to_string(),
        Allowed::Eq(v) => format!("{v:#x}"),
        Allowed::Max(v) => format!("<= {v:#x}"),
        Allowed::Min(v) => format!(">= {v:#x}"),
    }
}

fn found_text(f: &Failure) -> String {
    if f.field.len == 0 || f.field.len > 2 {
        format!("{:#x}", f.found)
    } else {
        format!("{:#x} ({})", f.found, f.found)
    }
}

/// The message of a failure: the opcode and format gate, what the rule checks, the value
/// found versus what was allowed.
pub fn message(gen: Gen, opcode: u8, f: &Failure) -> String {
    let gate = formats::format_of(gen, opcode).map(|g| g.gate_name());
    let mut m = String::new();
    let _ = write!(m, "{} {:#04x}", catalog::name(opcode), opcode);
    if let Some(g) = gate {
        let _ = write!(m, " ({g})");
    }
    match f.outcome {
        Outcome::Fail => {
            let _ = write!(
                m,
                ": {}; found {} = {}, allowed {}",
                f.rule.what,
                f.field.full_name(),
                found_text(f),
                allowed_text(f.allowed)
            );
        }
        Outcome::NotChecked => {
            let _ = write!(
                m,
                ": not checked: {} ({})",
                f.rule.what,
                allowed_text(f.allowed)
            );
        }
    }
    if f.rule.is_project_defined() {
        m.push_str(" [project-defined]");
    }
    m
}

/// Convert one failure on a bundle to a diagnostic.
pub fn to_diagnostic(gen: Gen, b: &Bundle, f: &Failure, loc: &BundleLoc) -> Diagnostic {
    let severity = match f.outcome {
        Outcome::Fail => Severity::Error,
        Outcome::NotChecked => Severity::NotChecked,
    };
    let field = (f.field.len > 0).then(|| FieldLoc {
        name: f.field.full_name().into(),
        start: f.field.start,
        len: f.field.len,
    });
    Diagnostic {
        severity,
        layer: Layer::L2,
        rule: f.rule.name.into(),
        code: f.gate.code(gen),
        message: message(gen, b.opcode(), f),
        location: Location {
            file: loc.file.clone(),
            engine: loc.engine,
            index: Some(loc.index),
            offset: Some(loc.offset),
            field,
            ..Default::default()
        },
    }
}

/// Render a diagnostic with the bundle as a hex dump (four rows of 16 bytes) and `^^`
/// markers under the bytes of the offending field.
pub fn render(d: &Diagnostic, b: &Bundle) -> String {
    let mut s = format!("{d}\n");
    let (start, end) = match &d.location.field {
        Some(f) => (f.start as usize, f.start as usize + f.len as usize),
        None => (usize::MAX, usize::MAX),
    };
    for row in 0..4 {
        let base = row * 16;
        let _ = write!(s, "    +{base:02x}:");
        let mut marks = String::new();
        let mut any = false;
        for i in 0..16 {
            let off = base + i;
            let sep = if i % 4 == 0 { "  " } else { " " };
            let _ = write!(s, "{sep}{:02x}", b.0[off]);
            marks.push_str(&" ".repeat(sep.len()));
            if off >= start && off < end {
                marks.push_str("^^");
                any = true;
            } else {
                marks.push_str("  ");
            }
        }
        s.push('\n');
        if any {
            let _ = writeln!(s, "        {}", marks.trim_end());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::cascade::check_collect;
    use super::*;

    #[test]
    fn diagnostic_and_render() {
        let mut b = Bundle::ZERO;
        b.0[0] = 0x01;
        b.0[1] = 0x10;
        b.set_u32(16, 0x100);
        b.set_u32(20, 0x0001_0001);
        for i in 0..3 {
            b.set_u16(26 + 2 * i, 1);
        }
        b.0[32] = 0x06;
        b.0[38] = 128;
        b.0[39] = 0x90;
        b.0[44] = 0xF;
        b.0[45] = 0xF;
        let f = check_collect(Gen::V4, Engine::Pe, &b);
        assert_eq!(f.len(), 1, "{f:?}");
        let loc = BundleLoc {
            file: Some("PE.bin".into()),
            engine: Some(Engine::Pe),
            index: 3,
            offset: 192,
        };
        let d = to_diagnostic(Gen::V4, &b, &f[0], &loc);
        assert_eq!(d.code, Some(934));
        assert_eq!(d.rule, "valid_col_group_active_columns");
        let fl = d.location.field.as_ref().unwrap();
        assert_eq!(
            (fl.start, fl.len, fl.name.as_ref()),
            (39, 1, "num_active_cols")
        );
        assert!(
            d.message.contains("LDWEIGHTS 0x01 (is_valid_s3_lw)")
                && d.message.contains("0x90 (144)"),
            "{}",
            d.message
        );
        let r = render(&d, &b);
        let lines: Vec<&str> = r.lines().collect();
        // Row +20 holds byte 39 at column 7; the marker line follows it.
        let row = lines
            .iter()
            .position(|l| l.trim_start().starts_with("+20:"))
            .unwrap();
        let mark = lines[row + 1];
        let col = mark.find("^^").unwrap();
        assert_eq!(&lines[row][col..col + 2], "90", "{r}");
        assert_eq!(mark.matches("^^").count(), 1);
    }
}
