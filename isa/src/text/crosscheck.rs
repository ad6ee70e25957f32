//! Cross-checking an engine stream against the producer's `.asm` text shipped beside it in a
//! NEFF (`sim neff info`): the text is assembled and compared bundle by bundle.

use super::*;

/// The outcome of [`cross_check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AsmCheck {
    /// Every bundle matches (the count is given).
    Match(usize),
    /// The text does not assemble: (1-based line, the error).
    Unparsed(usize, ParseError),
    /// The bundle counts differ (stream, text); the common prefix matches.
    Count(usize, usize),
    /// The text holds more bundles than the stream (its count); those match. The text is
    /// assembled no further than one bundle past the stream, so a member of any length costs
    /// no more than the stream beside it.
    Longer(usize),
    /// The first bundle that differs.
    Differ {
        /// Bundle index.
        index: usize,
        /// First differing byte.
        byte: usize,
        /// The field (or header part) that byte belongs to.
        field: String,
        /// The stream's bundle in the text form.
        stream: String,
        /// The `.asm` line's bundle in the text form.
        text: String,
    },
}

impl std::fmt::Display for AsmCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AsmCheck::Match(n) => write!(f, "{n} bundle(s) match"),
            AsmCheck::Unparsed(line, e) => write!(f, "does not assemble: line {line}: {e}"),
            AsmCheck::Count(s, t) => write!(
                f,
                "the stream has {s} bundle(s), the text {t} (the first {} match)",
                s.min(t)
            ),
            AsmCheck::Longer(s) => write!(
                f,
                "the stream has {s} bundle(s), the text more (the first {s} match; the rest is not assembled)"
            ),
            AsmCheck::Differ {
                index,
                byte,
                field,
                stream,
                text,
            } => write!(
                f,
                "bundle {index} differs at byte {byte} (field `{field}`): stream `{stream}`, text `{text}`"
            ),
        }
    }
}

impl AsmCheck {
    /// True for [`AsmCheck::Match`].
    pub fn matches(&self) -> bool {
        matches!(self, AsmCheck::Match(_))
    }
}

/// The name of the field byte `at` of `b` belongs to, for `gen`.
pub fn field_at(b: &Bundle, gen: Gen, at: usize) -> String {
    let meta = decode(b, gen)
        .map(|i| i.meta())
        .unwrap_or(&crate::formats::RAW_META);
    if let Some(m) = meta.fields.iter().find(|m| m.range().contains(&at)) {
        return m.name.to_string();
    }
    if meta
        .reserved
        .iter()
        .any(|&(s, e)| (s as usize..e as usize).contains(&at))
    {
        return format!("reserved@{at}");
    }
    format!("byte {at}")
}

/// Assemble `text` for `gen` and compare it with `stream` bundle by bundle.
pub fn cross_check(stream: &[Bundle], text: &str, gen: Gen) -> AsmCheck {
    let mut index = 0;
    for (i, line) in text.lines().enumerate() {
        let t = match parse_line(line, gen) {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(e) => return AsmCheck::Unparsed(i + 1, e),
        };
        let Some(s) = stream.get(index) else {
            return AsmCheck::Longer(stream.len());
        };
        if let Some(byte) = (0..64).find(|&i| s.0[i] != t.0[i]) {
            // Name the field in the layout the stream's bundle decodes to.
            return AsmCheck::Differ {
                index,
                byte,
                field: field_at(s, gen, byte),
                stream: neuron::disasm_bundle(s, gen),
                text: neuron::disasm_bundle(&t, gen),
            };
        }
        index += 1;
    }
    if stream.len() != index {
        return AsmCheck::Count(stream.len(), index);
    }
    AsmCheck::Match(stream.len())
}
