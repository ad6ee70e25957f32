//! The rule framework: rule descriptors, field locations, failures, and the two sinks (the
//! silent gate and its collecting debug twin) that every rule writes into.
//!
//! A rule is a small function over a bundle that reports through [`Ck`]. The same function
//! body serves both the fast silent gate (a [`Silent`] sink: no allocation, stop at the first
//! failure) and the diagnostic twin (a [`Collect`] sink: every failure, with its field, the
//! value found and what was allowed). This mirrors the shipped validators, where the silent
//! `is_valid_*` forest gates and the `dbg_is_valid_*` twin re-runs only on failure to name the
//! reason.

use tpbsim_isa::{Bundle, Gen};

/// Which gate of `runSingleISACheck` a rule belongs to; it selects the assertion code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gate {
    /// The length gate (`assert(len == 64)`); no assertion code is published.
    Length,
    /// The v4 DMA-engine fence (BIR engine must not be DMA); no assertion code is published.
    DmaFence,
    /// The engine-opcode gate: `instruction_engine_check` (v2) or
    /// `neuron_isa_check_opcode_on_engine` (v3/v4).
    Engine,
    /// The format gate: `is_valid_neuron_instruction` (v2), `is_valid_neuron_isa_instruction`
    /// (v3), `is_valid_neuron_engine_instruction` (v4).
    Format,
    /// The v4 SP second path (the format gate re-run with wire engine 3).
    SpSecondPath,
}

impl Gate {
    /// The `NeuronAssertion` code this gate raises on `gen`, where the facts give one.
    ///
    /// v4: 935 engine, 934 format, 2083 SP second path; v3: 1084 / 1000; v2: 1083 / 999.
    /// The v2 second format path (939) has no public trigger condition and is never raised.
    pub const fn code(self, gen: Gen) -> Option<u32> {
        match (self, gen) {
            (Gate::Engine, Gen::V2) => Some(1083),
            (Gate::Engine, Gen::V3) => Some(1084),
            (Gate::Engine, Gen::V4) => Some(935),
            (Gate::Format, Gen::V2) => Some(999),
            (Gate::Format, Gen::V3) => Some(1000),
            (Gate::Format, Gen::V4) => Some(934),
            (Gate::SpSecondPath, Gen::V4) => Some(2083),
            _ => None,
        }
    }
}

/// Where a rule's fact comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provenance {
    /// A published fact (header, decompiled validator body or compiler store site); the string
    /// names the source page(s).
    Public(&'static str),
    /// A tpbsim decision where the public facts are silent or ambiguous; the string says what
    /// was decided and why. Listed in `docs/l2.md`.
    ProjectDefined(&'static str),
}

/// A rule: the name of the real gate or sub-check, what it checks, the gate (and so the
/// assertion code) it reports under, and where the fact comes from.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The gate's name as the shipped validators spell it (`s3_lw_dual_fp8_restrictions`).
    pub name: &'static str,
    /// One line: what the rule checks.
    pub what: &'static str,
    /// The `runSingleISACheck` gate it reports under.
    pub gate: Gate,
    /// Source of the fact.
    pub provenance: Provenance,
}

impl Rule {
    /// True when the rule is a tpbsim decision rather than a published fact.
    pub const fn is_project_defined(&self) -> bool {
        matches!(self.provenance, Provenance::ProjectDefined(_))
    }
}

/// Declare a `pub static` [`Rule`] in the format gate's source file.
macro_rules! rule {
    ($id:ident, $name:literal, $gate:ident, public $src:literal, $what:literal) => {
        #[doc = $what]
        pub static $id: $crate::l2::rule::Rule = $crate::l2::rule::Rule {
            name: $name,
            what: $what,
            gate: $crate::l2::rule::Gate::$gate,
            provenance: $crate::l2::rule::Provenance::Public($src),
        };
    };
    ($id:ident, $name:literal, $gate:ident, project $why:literal, $what:literal) => {
        #[doc = $what]
        pub static $id: $crate::l2::rule::Rule = $crate::l2::rule::Rule {
            name: $name,
            what: $what,
            gate: $crate::l2::rule::Gate::$gate,
            provenance: $crate::l2::rule::Provenance::ProjectDefined($why),
        };
    };
}
pub(crate) use rule;

/// A named byte range inside a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// Name as the layout names it (`num_active_cols`, `src`).
    pub name: &'static str,
    /// Sub-field inside a descriptor (`start_addr`, `num[1]`), empty for plain fields.
    pub sub: &'static str,
    /// First byte within the bundle.
    pub start: u8,
    /// Width in bytes.
    pub len: u8,
}

impl Field {
    /// A field of `len` bytes at `start`.
    pub const fn new(name: &'static str, start: u8, len: u8) -> Field {
        Field {
            name,
            sub: "",
            start,
            len,
        }
    }

    /// The field a spec locator names, at the offset it has in the L2 generations (v2..v4).
    /// A locator whose offset or width moves between those generations fails to compile.
    pub const fn at(loc: tpbsim_isa::spec::FieldLoc) -> Field {
        Field {
            name: loc.name,
            sub: "",
            start: loc.l2_offset(),
            len: loc.l2_width(),
        }
    }

    /// A part (`sub`) of the one-byte field a spec locator names (a nibble of a dtype pair).
    pub const fn sub_at(loc: tpbsim_isa::spec::FieldLoc, sub: &'static str) -> Field {
        Field {
            name: loc.name,
            sub,
            start: loc.l2_offset(),
            len: 1,
        }
    }

    /// The field a block-relative spec locator names inside the block `block` that starts at
    /// `base` (`events.wait_mode`, `events_ext.sem_wait_value`).
    pub const fn member(block: &'static str, base: u8, loc: tpbsim_isa::spec::FieldLoc) -> Field {
        Field {
            name: block,
            sub: loc.name,
            start: base + loc.l2_offset(),
            len: loc.l2_width(),
        }
    }

    /// Element `k` of the array field a spec locator names, `elem` bytes wide, reported as
    /// `name` (`mask_num[2]`).
    pub const fn element(
        loc: tpbsim_isa::spec::FieldLoc,
        k: u8,
        elem: u8,
        name: &'static str,
    ) -> Field {
        assert!(
            (k + 1) * elem <= loc.l2_width(),
            "element past the array's end"
        );
        Field {
            name,
            sub: "",
            start: loc.l2_offset() + k * elem,
            len: elem,
        }
    }

    /// The first `len` bytes of the field (a read window over a wide opaque field).
    pub const fn head(mut self, len: u8) -> Field {
        assert!(len <= self.len, "window wider than the field");
        self.len = len;
        self
    }

    /// The field reported under another name (a byte the gate reads in another role).
    pub const fn labelled(mut self, name: &'static str) -> Field {
        self.name = name;
        self
    }

    /// A sub-field of a descriptor operand named `name`.
    pub const fn sub(name: &'static str, sub: &'static str, start: u8, len: u8) -> Field {
        Field {
            name,
            sub,
            start,
            len,
        }
    }

    /// Full name (`src.num[1]`).
    pub fn full_name(&self) -> String {
        if self.sub.is_empty() {
            self.name.to_string()
        } else {
            format!("{}.{}", self.name, self.sub)
        }
    }

    /// Write `v` into the field, little-endian, truncated to the field's width (fields up to 8
    /// bytes).
    pub fn set(&self, b: &mut Bundle, v: u64) {
        for i in 0..(self.len as usize).min(8) {
            if let Some(x) = b.0.get_mut(self.start as usize + i) {
                *x = (v >> (8 * i)) as u8;
            }
        }
    }

    /// Read the field as a little-endian unsigned value (fields up to 8 bytes).
    #[inline]
    pub fn get(&self, b: &Bundle) -> u64 {
        let s = self.start as usize;
        let n = self.len as usize;
        // One unaligned 8-byte load where it fits in the bundle (every field but those in the
        // last 7 bytes), masked to the field's width.
        if let Some(w) = b.0.get(s..s + 8) {
            let mut x = [0u8; 8];
            x.copy_from_slice(w);
            let v = u64::from_le_bytes(x);
            return match n {
                0 => 0,
                1..=7 => v & ((1u64 << (8 * n)) - 1),
                _ => v,
            };
        }
        let mut v = 0u64;
        for i in (0..n.min(8)).rev() {
            v = (v << 8) | b.0.get(s + i).copied().unwrap_or(0) as u64;
        }
        v
    }
}

/// What a rule allowed, rendered only when a diagnostic is produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allowed {
    /// A description of the allowed values.
    Text(&'static str),
    /// Exactly this value.
    Eq(u64),
    /// At most this value.
    Max(u64),
    /// At least this value.
    Min(u64),
}

/// Severity of a failure as a rule reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The rule rejects the bundle.
    Fail,
    /// The rule applies but tpbsim has no public fact to decide it.
    NotChecked,
}

/// One rule failure (or one applicable-but-unchecked rule) on one bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The rule.
    pub rule: &'static Rule,
    /// The offending field.
    pub field: Field,
    /// The value found in the field (little-endian, up to 8 bytes).
    pub found: u64,
    /// What was allowed.
    pub allowed: Allowed,
    /// Fail or not checked.
    pub outcome: Outcome,
    /// Which gate run produced it (the SP second path re-runs format rules).
    pub gate: Gate,
}

/// Receives rule failures. The silent sink only remembers that something failed; the
/// collecting sink keeps every failure in order.
pub trait Sink {
    /// Stop evaluating further rules of a bundle after the first failure.
    const STOP_EARLY: bool;
    /// Record a failure.
    fn push(&mut self, f: Failure);
    /// True once any rule has failed (not counting not-checked reports).
    fn failed(&self) -> bool;
}

/// How many distinct not-checked rules the silent gate remembers per bundle.
pub const SILENT_NOT_CHECKED: usize = 4;

/// The silent gate: a verdict without allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Silent {
    /// Some rule failed.
    pub failed: bool,
    /// Some applicable rule could not be decided.
    pub unchecked: bool,
    /// The first not-checked rules (for stream summaries), without allocation.
    pub not_checked: [Option<&'static Rule>; SILENT_NOT_CHECKED],
}

impl Silent {
    /// The remembered not-checked rules.
    pub fn not_checked_rules(&self) -> impl Iterator<Item = &'static Rule> + '_ {
        self.not_checked.iter().map_while(|r| *r)
    }
}

impl Sink for Silent {
    const STOP_EARLY: bool = true;
    #[inline]
    fn push(&mut self, f: Failure) {
        match f.outcome {
            Outcome::Fail => self.failed = true,
            Outcome::NotChecked => {
                self.unchecked = true;
                if let Some(slot) = self
                    .not_checked
                    .iter_mut()
                    .find(|s| s.is_none_or(|r| std::ptr::eq(r, f.rule)))
                {
                    *slot = Some(f.rule);
                }
            }
        }
    }
    #[inline]
    fn failed(&self) -> bool {
        self.failed
    }
}

/// The debug twin: every failure, in rule order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Collect {
    /// Failures and not-checked reports, in the order the cascade produced them.
    pub failures: Vec<Failure>,
}

impl Sink for Collect {
    const STOP_EARLY: bool = false;
    fn push(&mut self, f: Failure) {
        // A gate reached twice (once per operand) reports the same finding once.
        if !self.failures.contains(&f) {
            self.failures.push(f);
        }
    }
    fn failed(&self) -> bool {
        self.failures.iter().any(|f| f.outcome == Outcome::Fail)
    }
}

/// The checking context handed to every rule: the bundle, the generation, the wire engine the
/// entry point was given (v4 only), the gate being run and the sink.
pub struct Ck<'a, S: Sink> {
    /// The bundle under check.
    pub b: &'a Bundle,
    /// Target generation.
    pub gen: Gen,
    /// Wire engine id passed to the v4 entry point (`None` on v2/v3, whose format gates do
    /// not take an engine).
    pub engine: Option<u8>,
    /// Gate the failures are attributed to.
    pub gate: Gate,
    /// Where failures go.
    pub sink: &'a mut S,
}

impl<'a, S: Sink> Ck<'a, S> {
    /// New context.
    pub fn new(b: &'a Bundle, gen: Gen, engine: Option<u8>, gate: Gate, sink: &'a mut S) -> Self {
        Ck {
            b,
            gen,
            engine,
            gate,
            sink,
        }
    }

    /// True when the silent gate has already failed and may stop.
    #[inline]
    pub fn done(&self) -> bool {
        S::STOP_EARLY && self.sink.failed()
    }

    /// Report a failure of `rule` on `field`.
    #[inline]
    pub fn fail(&mut self, rule: &'static Rule, field: Field, found: u64, allowed: Allowed) {
        self.sink.push(Failure {
            rule,
            field,
            found,
            allowed,
            outcome: Outcome::Fail,
            gate: self.gate,
        });
    }

    /// Report that `rule` applies to `field` but cannot be decided.
    #[inline]
    pub fn not_checked(&mut self, rule: &'static Rule, field: Field, allowed: Allowed) {
        let found = field.get(self.b);
        self.sink.push(Failure {
            rule,
            field,
            found,
            allowed,
            outcome: Outcome::NotChecked,
            gate: self.gate,
        });
    }

    /// `rule` holds iff `ok`; on failure the field's value is reported.
    #[inline]
    pub fn check(&mut self, ok: bool, rule: &'static Rule, field: Field, allowed: Allowed) {
        if !ok {
            let found = field.get(self.b);
            self.fail(rule, field, found, allowed);
        }
    }

    /// Read a field.
    #[inline]
    pub fn get(&self, f: Field) -> u64 {
        f.get(self.b)
    }

    /// Byte at `off`.
    #[inline]
    pub fn u8(&self, off: usize) -> u8 {
        self.b.0[off]
    }

    /// Little-endian 16-bit word at `off` (0 past the bundle's end).
    #[inline]
    pub fn u16_at(&self, off: usize) -> u16 {
        match self.b.0.get(off..off + 2) {
            Some(w) => u16::from_le_bytes([w[0], w[1]]),
            None => 0,
        }
    }

    /// Little-endian 32-bit word at `off` (0 past the bundle's end).
    #[inline]
    pub fn u32_at(&self, off: usize) -> u32 {
        match self.b.0.get(off..off + 4) {
            Some(w) => u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
            None => 0,
        }
    }

    /// True on v4 (and later) targets.
    #[inline]
    pub fn v4plus(&self) -> bool {
        self.gen >= Gen::V4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    rule!(T_RULE, "t_rule", Format, public "test", "test rule");

    #[test]
    fn field_reads_little_endian() {
        let mut b = Bundle::ZERO;
        for (i, x) in b.0.iter_mut().enumerate() {
            *x = i as u8 + 1;
        }
        // Every start and width agrees with a byte-by-byte read, at the bundle's end too.
        for start in 0..64u8 {
            for len in 0..=8u8.min(64 - start) {
                let want = (0..len as usize)
                    .rev()
                    .fold(0u64, |v, i| (v << 8) | b.0[start as usize + i] as u64);
                assert_eq!(Field::new("f", start, len).get(&b), want, "{start} {len}");
            }
        }
        let mut b = Bundle::ZERO;
        b.set_u32(16, 0x8000_0012);
        assert_eq!(Field::new("a", 16, 4).get(&b), 0x8000_0012);
        assert_eq!(Field::new("a", 19, 1).get(&b), 0x80);
    }

    #[test]
    fn located_fields_sit_where_the_spec_puts_them() {
        use tpbsim_isa::formats::loc;
        let f = |x: Field| (x.full_name(), x.start, x.len);
        let ext = loc::event_semaphore::EVENTS_EXT;
        assert_eq!(
            f(Field::member("events", 0, loc::events::SEMAPHORE_VALUE)),
            ("events.semaphore_value".into(), 8, 4)
        );
        assert_eq!(
            f(Field::member(
                ext.name,
                ext.l2_offset(),
                loc::events_ext::UPDATE_MODE
            )),
            ("events_ext.update_mode".into(), 0x22, 1)
        );
        assert_eq!(
            f(Field::member(
                ext.name,
                ext.l2_offset(),
                loc::events_ext::SEM_UPDATE_VALUE
            )),
            ("events_ext.sem_update_value".into(), 0x28, 4)
        );
        let m = loc::affine_select::MASK_NUM;
        assert_eq!(
            f(Field::element(m, 3, 2, "mask_num[3]")),
            ("mask_num[3]".into(), 34, 2)
        );
        let p = Field::at(loc::notify::PAYLOAD);
        assert_eq!((p.len, p.head(8).len, p.head(8).start), (52, 8, 12));
        assert_eq!(f(p.labelled("x")), ("x".into(), 12, 52));
        let mut b = Bundle::ZERO;
        Field::new("w", 62, 2).set(&mut b, 0x1_2345);
        Field::new("v", 20, 3).set(&mut b, 0x0A0B_0C0D);
        assert_eq!(
            (b.0[62], b.0[63], b.0[20], b.0[22], b.0[23]),
            (0x45, 0x23, 0x0D, 0x0B, 0)
        );
    }

    #[test]
    fn silent_stops_collect_keeps_all() {
        let b = Bundle::ZERO;
        let f = Field::new("x", 0, 1);
        let mut s = Silent::default();
        {
            let mut ck = Ck::new(&b, Gen::V4, None, Gate::Format, &mut s);
            assert!(!ck.done());
            ck.check(false, &T_RULE, f, Allowed::Eq(1));
            assert!(ck.done());
        }
        assert!(s.failed);
        let mut c = Collect::default();
        {
            let mut ck = Ck::new(&b, Gen::V4, None, Gate::Format, &mut c);
            ck.check(false, &T_RULE, f, Allowed::Eq(1));
            ck.not_checked(&T_RULE, f, Allowed::Text("?"));
            assert!(!ck.done());
        }
        assert_eq!(c.failures.len(), 2);
        assert!(c.failed());
        assert_eq!(Gate::Format.code(Gen::V3), Some(1000));
        assert_eq!(Gate::SpSecondPath.code(Gen::V4), Some(2083));
        assert_eq!(Gate::Engine.code(Gen::V2), Some(1083));
    }
}
