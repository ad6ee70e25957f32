//! Boundary tests generated from the L2 rule data (`l2::formats::table`), not listed by hand.
//!
//! For every gate, every opcode bound to it on v2..v4 and a few valid bundles of that opcode
//! (from the fuzz generator, passing L2), every row of the gate's table that applies is tried
//! at its edges:
//!
//! * a range row (`lo..=hi`, an exact value being `v..=v`): `hi` and `lo` pass the row's rule,
//!   `hi + 1` and `lo − 1` (where the field can hold them) fail it, on that field;
//! * a set row: every byte value is tried; the rule rejects the field exactly when the value
//!   is not a member (so the value after the largest member fails, the largest passes);
//! * a dtype row: every dtype code of the field (a nibble or a byte) is tried; `is_valid_dtype`
//!   rejects the field exactly when the row's flags reject the code.
//!
//! Every row that applies to some opcode of an L2 generation must have been exercised.

use std::collections::BTreeSet;

use tpbsim_isa::{spec, Bundle, Engine, FormatGate, Gen};
use tpbsim_validate::fuzz::generate::{layout_of, valid_bundle, SplitMix64};
use tpbsim_validate::l2::cascade::check_collect;
use tpbsim_validate::l2::formats::table;
use tpbsim_validate::l2::rule::{Allowed, Field, Outcome, Rule};
use tpbsim_validate::l2::table::{DtypeRule, FieldRule, Part, Values};
use tpbsim_validate::l2::GENS;

/// Up to three valid bundles of `opcode` on `gen`, with the engine that runs them.
fn valid(gen: Gen, opcode: u8) -> Vec<(Bundle, Engine)> {
    let Some(row) = spec::opcode(opcode) else {
        return Vec::new();
    };
    let Some(layout) = layout_of(row.format, gen) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for seed in 0..256u64 {
        let mut rng = SplitMix64(seed * 0x9E37 + opcode as u64);
        if let Some(g) = valid_bundle(&mut rng, layout, gen) {
            if g.bundle.0[0] == opcode
                && check_collect(gen, g.engine, &g.bundle)
                    .iter()
                    .all(|x| x.outcome != Outcome::Fail)
            {
                out.push((g.bundle, g.engine));
                if out.len() == 3 {
                    break;
                }
            }
        }
    }
    out
}

/// True when `rule` rejects `field` of `b` (reporting `allowed`, when given: a rule may also
/// judge the field against other fields, as the partition-window rules do).
fn rejects(
    gen: Gen,
    e: Engine,
    b: &Bundle,
    rule: &Rule,
    field: Field,
    allowed: Option<Allowed>,
) -> bool {
    check_collect(gen, e, b).iter().any(|x| {
        x.outcome == Outcome::Fail
            && std::ptr::eq(x.rule, rule)
            && x.field.start == field.start
            && x.field.sub == field.sub
            && allowed.is_none_or(|a| a == x.allowed)
    })
}

/// `b` with `field` set to `v` (little-endian, the field's width).
fn with(b: &Bundle, field: Field, v: u64) -> Bundle {
    let mut x = *b;
    for i in 0..field.len as usize {
        x.0[field.start as usize + i] = (v >> (8 * i)) as u8;
    }
    x
}

/// The bounds a diagnostic text states when it starts with `a..=b` (decimal or hex).
fn text_range(t: &str) -> Option<(u64, u64)> {
    let num = |x: &str| match x.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => x.parse().ok(),
    };
    let (a, rest) = t.split_once("..=")?;
    let b = rest.split(' ').next()?;
    let tail = &rest[b.len()..];
    // Only a bare range, or one followed by a parenthesised remark or a unit.
    if !(tail.is_empty() || tail.starts_with(" (") || tail == " partitions") {
        return None;
    }
    Some((num(a)?, num(b)?))
}

/// What the row's diagnostic states agrees with what it checks: a widened or narrowed bound
/// shows as a disagreement with the text a user reads.
fn states_its_values(gen: Gen, r: &FieldRule, max: u64, what: &str) {
    match (r.values, r.allowed) {
        (Values::Range(lo, hi), Allowed::Max(n)) => {
            assert_eq!((lo, hi), (0, n), "{what}: Max({n}) but checks {lo}..={hi}")
        }
        (Values::Range(lo, hi), Allowed::Eq(v)) => {
            assert_eq!((lo, hi), (v, v), "{what}: Eq({v}) but checks {lo}..={hi}")
        }
        (Values::Range(lo, hi), Allowed::Min(n)) => {
            assert_eq!(
                (lo, hi),
                (n, max),
                "{what}: Min({n}) but checks {lo}..={hi}"
            )
        }
        (Values::Range(lo, hi), Allowed::Text(t)) => {
            let stated = text_range(t);
            assert_eq!(
                stated,
                Some((lo, hi)),
                "{what}: states {t:?}, checks {lo}..={hi}"
            );
        }
        (_, Allowed::Text(t)) => {
            if let Some((a, b)) = text_range(t) {
                let members: Vec<u64> = (0..=255).filter(|&v| r.admits(gen, v)).collect();
                let stated: Vec<u64> = (a..=b).collect();
                assert_eq!(members, stated, "{what}: states {t:?}");
            }
        }
        (_, a) => panic!("{what}: a set row reports {a:?}"),
    }
}

/// Try a field row at its boundaries on one valid bundle.
fn field_row(gen: Gen, e: Engine, b: &Bundle, r: &FieldRule, what: &str) {
    let f = r.field;
    let max = if f.len >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * f.len)) - 1
    };
    states_its_values(gen, r, max, what);
    let at = |v: u64| rejects(gen, e, &with(b, f, v), r.rule, f, Some(r.allowed));
    match r.values {
        Values::Range(lo, hi) => {
            assert!(!at(hi), "{what}: the maximum {hi} fails");
            if hi < max {
                assert!(at(hi + 1), "{what}: the maximum + 1 ({}) passes", hi + 1);
            }
            assert!(!at(lo), "{what}: the minimum {lo} fails");
            if lo > 0 {
                assert!(at(lo - 1), "{what}: the minimum − 1 ({}) passes", lo - 1);
            }
        }
        Values::Set(_) | Values::PerGen(_) => {
            for v in 0..=255u64 {
                let member = r.admits(gen, v);
                assert_eq!(at(v), !member, "{what}: value {v} (member: {member})");
            }
        }
    }
}

/// Try every code of a dtype row on one valid bundle (with the row's condition made to hold:
/// its field set to the first byte that satisfies it), with the flags the row uses there; a
/// row whose condition does not hold is not checked at all.
fn dtype_row(gen: Gen, e: Engine, b: &Bundle, r: &DtypeRule, what: &str) {
    let rule = &tpbsim_validate::l2::formats::IS_VALID_DTYPE;
    if let Some(w) = r.when.filter(|w| !w.on(b)) {
        let d = r.field.start as usize;
        let mut x = *b;
        x.0[d] = r.with_tag(b.0[d], 0);
        assert!(
            !rejects(gen, e, &x, rule, r.field, None),
            "{what}: an INVALID dtype is rejected while the row's condition does not hold"
        );
        let v = (0..=255u8)
            .find(|&v| (w.holds)(v))
            .expect("a satisfiable condition");
        let mut y = *b;
        y.0[w.field.start as usize] = v;
        return dtype_row(gen, e, &y, r, what);
    }
    let codes = if r.part == Part::Byte {
        0..=255u8
    } else {
        0..=15u8
    };
    let off = r.field.start as usize;
    for tag in codes {
        let mut x = *b;
        x.0[off] = r.with_tag(b.0[off], tag);
        let ok = r.admits(&x, gen, tag);
        assert_eq!(
            rejects(gen, e, &x, rule, r.field, None),
            !ok,
            "{what}: dtype {tag:#04x} (valid: {ok})"
        );
    }
}

#[test]
fn every_rule_row_holds_at_its_boundaries() {
    // (gate, slice, row) of every field row exercised; (gate, slice, row) of dtype rows.
    let mut fields = BTreeSet::new();
    let mut dtypes = BTreeSet::new();
    let mut numeric = BTreeSet::new();
    for gen in GENS {
        for op in 0..=255u8 {
            let Some(gate) = FormatGate::of(gen, op) else {
                continue;
            };
            let t = table(gate);
            let bundles = valid(gen, op);
            let applies = t
                .fields
                .iter()
                .flat_map(|s| s.iter())
                .any(|r| r.applies(gen, op))
                || t.dtypes.iter().any(|s| !s.is_empty());
            assert!(
                !bundles.is_empty() || !applies,
                "{} {op:#04x} {gen}: no valid bundle",
                gate.gate_name()
            );
            for (b, e) in &bundles {
                for (si, s) in t.fields.iter().enumerate() {
                    for (ri, r) in s.iter().enumerate().filter(|(_, r)| r.applies(gen, op)) {
                        let what = format!(
                            "{} {op:#04x} {gen} {} {}",
                            gate.gate_name(),
                            r.rule.name,
                            r.field.full_name()
                        );
                        field_row(gen, *e, b, r, &what);
                        fields.insert((gate.gate_name(), si, ri));
                        if matches!(r.values, Values::Range(..)) {
                            numeric.insert(r.rule.name);
                        }
                    }
                }
                for (si, s) in t.dtypes.iter().enumerate() {
                    for (ri, r) in s.iter().enumerate().filter(|(_, r)| r.ops.has(op)) {
                        let what = format!(
                            "{} {op:#04x} {gen} dtype {}",
                            gate.gate_name(),
                            r.field.full_name()
                        );
                        dtype_row(gen, *e, b, r, &what);
                        dtypes.insert((gate.gate_name(), si, ri));
                    }
                }
            }
        }
    }
    // Every row that applies to an opcode of an L2 generation was exercised.
    for gate in FormatGate::ALL {
        let ops: Vec<(Gen, u8)> = GENS
            .iter()
            .flat_map(|&g| (0..=255u8).map(move |op| (g, op)))
            .filter(|&(g, op)| FormatGate::of(g, op) == Some(gate))
            .collect();
        let t = table(gate);
        for (si, s) in t.fields.iter().enumerate() {
            for (ri, r) in s.iter().enumerate() {
                if ops.iter().any(|&(g, op)| r.applies(g, op)) {
                    assert!(
                        fields.contains(&(gate.gate_name(), si, ri)),
                        "{}: row {} on {} never exercised",
                        gate.gate_name(),
                        r.rule.name,
                        r.field.full_name()
                    );
                }
            }
        }
        for (si, s) in t.dtypes.iter().enumerate() {
            for (ri, r) in s.iter().enumerate() {
                if ops.iter().any(|&(_, op)| r.ops.has(op)) {
                    assert!(
                        dtypes.contains(&(gate.gate_name(), si, ri)),
                        "{}: dtype row {} never exercised",
                        gate.gate_name(),
                        r.field.full_name()
                    );
                }
            }
        }
    }
    // The count rules are among the numeric rows (each a 1..=128 range on its count byte).
    for rule in [
        "valid_num_active_rows",
        "check_active_channels",
        "is_valid_activate.num_active_partitions",
        "is_valid_s3d3_ts.num_active_partitions",
    ] {
        assert!(numeric.contains(rule), "{rule} not exercised: {numeric:?}");
    }
}

/// Every operand region row, on valid bundles of every opcode its gate binds: a PSUM start
/// address (partition 0, aligned for any dtype) in the row's descriptor is rejected on that
/// descriptor — by the PSUM placement, the 4-byte PSUM write or the Pool-engine rule — exactly
/// when the row does not admit PSUM for the descriptor's dtype on the bundle's engine; an SBUF
/// address there (partition 0) is accepted by those rules. Every row is exercised.
#[test]
fn every_operand_row_places_its_descriptor_as_it_states() {
    use tpbsim_validate::l2::{addr, formats};
    let placement_rules: [&Rule; 4] = [
        &addr::ALLOWED_IN_PSUM,
        &addr::ALLOWED_IN_SBUF,
        &addr::PSUM_WRITE_DTYPE,
        &formats::POOL_OPERAND_IN_SBUF,
    ];
    let mut seen = BTreeSet::new();
    for gen in GENS {
        for op in 0..=255u8 {
            let Some(gate) = FormatGate::of(gen, op) else {
                continue;
            };
            let t = table(gate);
            for (b, e) in valid(gen, op) {
                for (si, s) in t.operands.iter().enumerate() {
                    for (ri, r) in s.iter().enumerate() {
                        let f = r.op.addr();
                        let placed = |word: u32| {
                            let mut x = b;
                            x.set_u32(f.start as usize, word);
                            let bad = placement_rules
                                .iter()
                                .any(|rule| rejects(gen, e, &x, rule, f, None));
                            (x, bad)
                        };
                        let what = format!(
                            "{} {op:#04x} {gen} {e:?} {}",
                            gate.gate_name(),
                            f.full_name()
                        );
                        let (x, bad) = placed(0x0200_0000);
                        // The format gate is given the engine on v4 only.
                        let engine = (gen == Gen::V4).then_some(e);
                        let ok = r.psum_ok(engine, r.dtype.on(&x));
                        assert_eq!(bad, !ok, "{what}: PSUM (admitted: {ok})");
                        assert!(!placed(0).1, "{what}: SBUF rejected");
                        seen.insert((gate.gate_name(), si, ri));
                    }
                }
            }
        }
    }
    for gate in FormatGate::ALL {
        let t = table(gate);
        for (si, s) in t.operands.iter().enumerate() {
            for ri in 0..s.len() {
                assert!(
                    seen.contains(&(gate.gate_name(), si, ri)),
                    "{}: operand row {ri} never exercised",
                    gate.gate_name()
                );
            }
        }
    }
}
