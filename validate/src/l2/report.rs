//! Failures → the shared [`Diagnostic`] model (Layer::L2) and the text renderer: the bundle
//! disassembled with a `^^^` marker under the offending field.

use std::fmt::Write as _;
use std::ops::Range;

use tpbsim_isa::spec::FieldType;
use tpbsim_isa::{text, Bundle, Engine, Gen};

use super::catalog;
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
    let gate = tpbsim_isa::FormatGate::of(gen, opcode).map(|g| g.gate_name());
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|x| format!("{x:02x}")).collect()
}

/// One piece of a disassembly line: its text, the bundle bytes it shows and, for an access
/// pattern, the text span and bytes of each part (the address, every step, every count).
struct Piece {
    text: String,
    bytes: Range<usize>,
    parts: Vec<(Range<usize>, Range<usize>)>,
}

impl Piece {
    fn new(text: String, bytes: Range<usize>) -> Piece {
        Piece {
            text,
            bytes,
            parts: Vec::new(),
        }
    }
}

/// The parts of an `n`-dim pattern piece `name=[ADDR step=s0,s1 num=n0,n1]` whose descriptor
/// starts at byte `off`: ADDR is bytes `off..off+4`, step `i` `off+4+2i`, count `i`
/// `off+4+2n+2i`.
fn pattern_parts(text: &str, off: usize, n: usize) -> Vec<(Range<usize>, Range<usize>)> {
    let mut out = Vec::new();
    let Some(open) = text.find('[') else {
        return out;
    };
    let addr_end = text[open..].find(' ').map_or(text.len(), |k| open + k);
    out.push((open + 1..addr_end, off..off + 4));
    for (key, base) in [(" step=", off + 4), (" num=", off + 4 + 2 * n)] {
        let Some(k) = text.find(key) else { continue };
        let mut at = k + key.len();
        for (i, item) in text[at..]
            .split([' ', ']'])
            .next()
            .unwrap_or("")
            .split(',')
            .enumerate()
        {
            out.push((at..at + item.len(), base + 2 * i..base + 2 * i + 2));
            at += item.len() + 1;
        }
    }
    out
}

/// The disassembly of a bundle as text pieces, each with the bundle bytes it shows: the
/// mnemonic (the opcode byte), then `name=value` for every non-zero field, every field
/// overlapping `keep` (so the offending field is shown even when zero) and every non-zero
/// reserved run. A bundle that does not decode for `gen` is `.bundle` and its bytes in hex, one
/// piece per byte.
fn disasm_pieces(b: &Bundle, gen: Gen, keep: &Range<usize>) -> Vec<Piece> {
    let overlaps = |r: &Range<usize>| r.start < keep.end && keep.start < r.end;
    let Ok(inst) = tpbsim_isa::decode(b, gen) else {
        let mut out = vec![Piece::new(".bundle".to_string(), 0..0)];
        out.extend((0..64).map(|i| Piece::new(hex(&b.0[i..i + 1]), i..i + 1)));
        return out;
    };
    let meta = inst.meta();
    let mut out = vec![Piece::new(inst.mnemonic().to_string(), 0..1)];
    for m in meta.fields {
        let r = m.range();
        let shown = match m.name {
            "opcode" => false,
            "inst_word_len" => b.0[1] != tpbsim_isa::INST_WORD_LEN,
            _ => b.0[r.clone()].iter().any(|&x| x != 0),
        };
        if (shown || overlaps(&r)) && m.name != "opcode" {
            let mut p = Piece::new(format!("{}={}", m.name, text::value_text(m, &m.read(b))), r);
            if let FieldType::Tensor(n) | FieldType::MemPattern(n) = m.ty {
                p.parts = pattern_parts(&p.text, m.offset as usize, n as usize);
            }
            out.push(p);
        }
    }
    for r in meta.nonzero_reserved(b) {
        out.push(Piece::new(
            format!("reserved@{}={}", r.start, hex(&b.0[r.clone()])),
            r,
        ));
    }
    // A field no piece shows (zero reserved bytes, a byte outside the layout's fields): its
    // raw bytes.
    if !keep.is_empty() && keep.end <= 64 && !out.iter().any(|p| overlaps(&p.bytes)) {
        out.push(Piece::new(
            format!("@{}={}", keep.start, hex(&b.0[keep.clone()])),
            keep.clone(),
        ));
    }
    out
}

/// Render a diagnostic: its line (location, rule, code, field byte range, value found versus
/// allowed), then the bundle disassembled for `gen` (`isa::text` syntax) with a `^^^` marker
/// under every piece holding the offending field's bytes — under just the address, step or
/// count inside an access pattern when the field is one of them — followed by the field's
/// name and byte range.
pub fn render(d: &Diagnostic, b: &Bundle, gen: Gen) -> String {
    let mut s = format!("{d}\n");
    let field = d.location.field.as_ref();
    let keep = match field {
        Some(f) => f.start as usize..f.start as usize + (f.len as usize).max(1),
        None => 0..0,
    };
    let overlaps = |r: &Range<usize>| field.is_some() && r.start < keep.end && keep.start < r.end;
    let pieces = disasm_pieces(b, gen, &keep);
    let mut line = String::from("    ");
    let mut marks = String::from("    ");
    for (k, p) in pieces.iter().enumerate() {
        if k > 0 {
            line.push(' ');
            marks.push(' ');
        }
        let n = p.text.chars().count();
        line.push_str(&p.text);
        let mut m = vec![' '; n];
        if overlaps(&p.bytes) {
            // The parts inside the field, when the field lies within them; else the piece.
            let inside: Vec<&Range<usize>> = p
                .parts
                .iter()
                .filter(|(_, bytes)| overlaps(bytes))
                .map(|(chars, _)| chars)
                .collect();
            if !inside.is_empty() && keep.start >= p.bytes.start && keep.end <= p.bytes.end {
                for r in inside {
                    for c in m.iter_mut().take(r.end.min(n)).skip(r.start) {
                        *c = '^';
                    }
                }
            } else {
                m.iter_mut().for_each(|c| *c = '^');
            }
        }
        marks.extend(m);
    }
    let _ = writeln!(s, "{}", line.trim_end());
    if let Some(f) = field {
        let _ = writeln!(
            s,
            "{} {} (bytes {}..{})",
            marks.trim_end(),
            f.name,
            keep.start,
            keep.end
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::cascade::check_collect;
    use super::*;

    #[test]
    fn pattern_parts_map_each_list_item_to_its_text_and_bytes() {
        let text = "x [0x100 step=1,-2 num=30,4]";
        let parts = pattern_parts(text, 16, 2);
        let got: Vec<(&str, Range<usize>)> =
            parts.into_iter().map(|(t, b)| (&text[t], b)).collect();
        assert_eq!(
            got,
            vec![
                ("0x100", 16..20),
                ("1", 20..22),
                ("-2", 22..24),
                ("30", 24..26),
                ("4", 26..28),
            ]
        );
    }

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
        let r = render(&d, &b, Gen::V4);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines.len(), 3, "{r}");
        assert!(lines[1].trim_start().starts_with("LDWEIGHTS "), "{r}");
        let col = lines[2].find('^').unwrap();
        let n = lines[2][col..].find(' ').unwrap();
        assert_eq!(&lines[1][col..col + n], "num_active_cols=144", "{r}");
        assert_eq!(lines[2].matches('^').count(), n, "{r}");
        assert!(lines[2].ends_with("num_active_cols (bytes 39..40)"), "{r}");
    }

    /// The token above each marker run of a rendered diagnostic, and the marker line's tail.
    fn marked(r: &str) -> (Vec<String>, String) {
        let lines: Vec<&str> = r.lines().collect();
        let (text, marks) = (lines[1], lines[2]);
        let mut tokens = Vec::new();
        let mut i = 0;
        let m = marks.as_bytes();
        while i < m.len() && i < text.len() {
            if m[i] == b'^' {
                let j = (i..m.len()).find(|&j| m[j] != b'^').unwrap_or(m.len());
                tokens.push(text[i..j].to_string());
                i = j;
            } else {
                i += 1;
            }
        }
        let tail = marks.trim_start_matches([' ', '^']).to_string();
        (tokens, tail)
    }

    #[test]
    fn render_marks_the_field_in_the_disassembly() {
        let gen = Gen::V3;
        // A zero field named by the failure is shown (and marked) even though the
        // disassembly omits zero fields.
        let mut tt = tpbsim_isa::TensorTensor {
            header: tpbsim_isa::Header::new(tpbsim_isa::Opcode(0x41)),
            in_dtypes: tpbsim_isa::DtypePair::new(tpbsim_isa::Dtype::FP32, tpbsim_isa::Dtype::FP32),
            out_dtype: tpbsim_isa::Dtype::FP32,
            num_active_partitions: 1,
            src0: tpbsim_isa::Tensor::new(tpbsim_isa::Addr4::imm(0), [1, 1, 1], [4, 1, 1]),
            src1: tpbsim_isa::Tensor::new(tpbsim_isa::Addr4::imm(0x40), [1, 1, 1], [4, 1, 1]),
            dst: tpbsim_isa::Tensor::new(tpbsim_isa::Addr4::imm(0x80), [1, 1, 1], [4, 1, 1]),
            ..Default::default()
        }
        .to_bundle();
        assert!(check_collect(gen, Engine::Dve, &tt).is_empty());
        let loc = BundleLoc::default();
        let d = |b: &Bundle| {
            let f = check_collect(gen, Engine::Dve, b);
            assert!(!f.is_empty());
            to_diagnostic(gen, b, &f[0], &loc)
        };
        // inst_word_len (hidden when 0x10) is shown when it is the offending field.
        tt.0[1] = 0x11;
        let (tokens, tail) = marked(&render(&d(&tt), &tt, gen));
        assert_eq!(tokens, ["inst_word_len=17"]);
        assert_eq!(tail, "inst_word_len (bytes 1..2)");
        tt.0[1] = 0x10;
        // A count of zero in a source pattern: the pattern is marked.
        let src0 = tpbsim_isa::decode(&tt, gen)
            .unwrap()
            .meta()
            .field("src0")
            .unwrap();
        let mut z = tt;
        // TENSOR3D: ADDR4, three i16 steps, three u16 counts; the innermost count to 0.
        z.set_u16(src0.offset as usize + 10, 0);
        let diag = d(&z);
        let r = render(&diag, &z, gen);
        let (tokens, tail) = marked(&r);
        // Just the count inside the pattern is marked.
        assert_eq!(tokens, ["0"], "{r}");
        assert!(tail.starts_with("src0.num_elem[0] (bytes "), "{r}");
        let line = r.lines().nth(1).unwrap();
        let col = r.lines().nth(2).unwrap().find('^').unwrap();
        assert!(
            line[..col].ends_with("num=") && line[..col].contains("src0=["),
            "{r}"
        );
        // A start address inside a pattern: just the address.
        let mut a = tt;
        a.set_u32(src0.offset as usize, 0x1F00_0000);
        let r = render(&d(&a), &a, gen);
        let (tokens, tail) = marked(&r);
        assert_eq!(tokens, ["0x1f000000"], "{r}");
        assert!(tail.starts_with("src0.start_addr"), "{r}");
        // An unknown opcode: the raw form, the opcode byte marked.
        let mut u = tt;
        u.0[0] = 0xFE;
        let (tokens, tail) = marked(&render(&d(&u), &u, gen));
        assert_eq!(tokens, ["fe"]);
        assert_eq!(tail, "opcode (bytes 0..1)");
    }
}
