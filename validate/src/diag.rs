//! One diagnostics model for L1 (BIR verifier) and L2 (wire validator).
//!
//! A diagnostic names the rule that produced it, the assertion code where the facts give one,
//! and where it applies: file, engine, bundle index, byte offset, field, and for L1 the
//! function / block / instruction. Ordering is deterministic: stream order, then rule order.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use tpbsim_isa::Engine;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The input is illegal.
    Error,
    /// Legal but suspicious.
    Warning,
    /// A rule that applies but that tpbsim cannot decide (no public fact): reported as not
    /// checked, never as passed.
    NotChecked,
    /// Information.
    Note,
}

impl Severity {
    /// Lower-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::NotChecked => "not-checked",
            Severity::Note => "note",
        }
    }
}

/// Which legality layer produced a diagnostic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Layer {
    /// Structural checks over BIR (the compiler's birverifier).
    L1,
    /// Silicon checks over encoded bundles (the wire validator).
    L2,
    /// Legal bundles that likely do not do what was meant (`crate::lint`).
    Lint,
}

/// A named byte range inside a bundle.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct FieldLoc {
    /// Field name as the spec names it (`num_active_cols`, `src.addr`, ...).
    pub name: Cow<'static, str>,
    /// First byte of the field within the bundle.
    pub start: u8,
    /// Width in bytes (at least 1).
    pub len: u8,
}

/// Where a diagnostic applies. Every part is optional; the more the better.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Location {
    /// Source file (stream, NEFF member or BIR JSON).
    pub file: Option<String>,
    /// Engine whose stream holds the bundle, or the BIR instruction's engine.
    pub engine: Option<Engine>,
    /// Bundle index within the stream.
    pub index: Option<u64>,
    /// Byte offset of the bundle within the stream.
    pub offset: Option<u64>,
    /// The field inside the bundle.
    pub field: Option<FieldLoc>,
    /// BIR function name (L1).
    pub function: Option<String>,
    /// BIR block name (L1).
    pub block: Option<String>,
    /// BIR instruction index or name within its block (L1).
    pub instruction: Option<String>,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// Severity.
    pub severity: Severity,
    /// L1 or L2.
    pub layer: Layer,
    /// Rule name, the real gate's name where one is known (`s3_lw_dual_fp8_restrictions`).
    pub rule: Cow<'static, str>,
    /// Assertion code where the facts give one (e.g. 935, 400).
    pub code: Option<u32>,
    /// What was found versus what was allowed.
    pub message: String,
    /// Where.
    pub location: Location,
}

impl Diagnostic {
    /// An error diagnostic.
    pub fn error(
        layer: Layer,
        rule: impl Into<Cow<'static, str>>,
        code: Option<u32>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: Severity::Error,
            layer,
            rule: rule.into(),
            code,
            message: message.into(),
            location: Location::default(),
        }
    }

    /// Set the severity.
    pub fn with_severity(mut self, s: Severity) -> Self {
        self.severity = s;
        self
    }

    /// Set the location.
    pub fn at(mut self, loc: Location) -> Self {
        self.location = loc;
        self
    }

    /// Set the field.
    pub fn field(mut self, name: impl Into<Cow<'static, str>>, start: u8, len: u8) -> Self {
        self.location.field = Some(FieldLoc {
            name: name.into(),
            start,
            len,
        });
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The JSON Lines object: keys `file, engine, index, offset, layer, rule, code, severity,
    /// field, message`, plus `function, block, instruction` when present (L1).
    pub fn to_json(&self) -> serde_json::Value {
        let l = &self.location;
        let mut m = serde_json::Map::new();
        m.insert(
            "file".into(),
            l.file.clone().map_or(serde_json::Value::Null, Into::into),
        );
        m.insert(
            "engine".into(),
            l.engine
                .map_or(serde_json::Value::Null, |e| e.short().into()),
        );
        m.insert(
            "index".into(),
            l.index.map_or(serde_json::Value::Null, Into::into),
        );
        m.insert(
            "offset".into(),
            l.offset.map_or(serde_json::Value::Null, Into::into),
        );
        m.insert(
            "layer".into(),
            match self.layer {
                Layer::L1 => "L1",
                Layer::L2 => "L2",
                Layer::Lint => "lint",
            }
            .into(),
        );
        m.insert("rule".into(), self.rule.as_ref().into());
        m.insert(
            "code".into(),
            self.code.map_or(serde_json::Value::Null, Into::into),
        );
        m.insert("severity".into(), self.severity.as_str().into());
        m.insert(
            "field".into(),
            l.field.as_ref().map_or(
                serde_json::Value::Null,
                |f| serde_json::json!({ "name": f.name, "start": f.start, "len": f.len }),
            ),
        );
        m.insert("message".into(), self.message.clone().into());
        if l.function.is_some() || l.block.is_some() || l.instruction.is_some() {
            m.insert(
                "function".into(),
                l.function
                    .clone()
                    .map_or(serde_json::Value::Null, Into::into),
            );
            m.insert(
                "block".into(),
                l.block.clone().map_or(serde_json::Value::Null, Into::into),
            );
            m.insert(
                "instruction".into(),
                l.instruction
                    .clone()
                    .map_or(serde_json::Value::Null, Into::into),
            );
        }
        serde_json::Value::Object(m)
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = &self.location;
        if let Some(file) = &l.file {
            write!(f, "{file}:")?;
        }
        if let Some(e) = l.engine {
            write!(f, "{e}:")?;
        }
        if let Some(i) = l.index {
            write!(f, "#{i}")?;
        }
        if let Some(o) = l.offset {
            write!(f, "@0x{o:x}")?;
        }
        if let Some(func) = &l.function {
            if l.index.is_some() || l.offset.is_some() {
                f.write_str(":")?;
            }
            write!(f, "{func}")?;
            if let Some(b) = &l.block {
                write!(f, "/{b}")?;
            }
            if let Some(i) = &l.instruction {
                write!(f, "/{i}")?;
            }
        }
        write!(
            f,
            ": {} [{:?} {}",
            self.severity.as_str(),
            self.layer,
            self.rule
        )?;
        if let Some(c) = self.code {
            write!(f, " #{c}")?;
        }
        f.write_str("]")?;
        if let Some(fl) = &l.field {
            write!(
                f,
                " field {} (bytes {}..{})",
                fl.name,
                fl.start,
                fl.start as u16 + fl.len as u16
            )?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Collect every diagnostic, or stop at the first error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Collect all diagnostics (default).
    #[default]
    CollectAll,
    /// Stop at the first error.
    FailFast,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keys() {
        let d = Diagnostic::error(Layer::L2, "is_valid_s3_lw", Some(934), "cols 0x90 > 0x80")
            .at(Location {
                file: Some("PE.bin".into()),
                engine: Some(Engine::Pe),
                index: Some(3),
                offset: Some(192),
                ..Default::default()
            })
            .field("num_active_cols", 39, 1);
        let v = d.to_json();
        for k in [
            "file", "engine", "index", "offset", "layer", "rule", "code", "severity", "field",
            "message",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["code"], 934);
        assert_eq!(v["engine"], "pe");
        assert!(v.get("function").is_none());
        let s = d.to_string();
        assert!(
            s.contains("is_valid_s3_lw") && s.contains("#934") && s.contains("bytes 39..40"),
            "{s}"
        );
    }
}
