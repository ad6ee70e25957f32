//! Boundary tests generated from the rule tables, not listed by hand:
//!
//! * every enum-like byte of every fuzz recipe (`tpbsim_isa::fuzzgen::recipes::RECIPES`, the
//!   table the fuzzer mutates from) is tried with all 256 values on a valid bundle: the recipe's
//!   rule rejects every value its membership function excludes (so the value after the
//!   largest member fails);
//! * every numeric range a format gate reports on a one-byte field (`Allowed::Max(n)` or a text
//!   `a..=b`, found by probing the field of a valid bundle with 0 and 255) is tried at its
//!   bounds: `b` (and `a`) pass that rule, `b + 1` (and `a − 1`) fail it.

use tpbsim_isa::fuzzgen::recipes::RECIPES;
use tpbsim_isa::fuzzgen::{layout_of, valid_bundle, SplitMix64};
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_validate::l2::cascade::check_collect;
use tpbsim_validate::l2::rule::{Allowed, Failure, Outcome};

/// Valid bundles of each recipe's format (a few seeds), with the engine that runs them.
fn valid(gen: Gen, format: &str, opcode: u8) -> Vec<(Bundle, Engine)> {
    let Some(layout) = layout_of(format, gen) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for seed in 0..64u64 {
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

fn fails_at(f: &[Failure], rule: &str, off: u8) -> bool {
    f.iter()
        .any(|x| x.outcome == Outcome::Fail && x.rule.name == rule && x.field.start == off)
}

#[test]
fn every_recipe_enum_rule_rejects_exactly_its_non_members() {
    let mut checked = 0;
    for r in RECIPES {
        for &gen in r.gens {
            for &op in r.opcodes {
                let bundles = valid(gen, r.format, op);
                assert!(
                    !bundles.is_empty() || r.enums.is_empty(),
                    "{} 0x{op:02X} {gen}: no valid bundle",
                    r.gate
                );
                for (b, e) in &bundles {
                    for er in r.enums {
                        for v in 0..=255u8 {
                            let mut x = *b;
                            x.0[er.off as usize] = v;
                            let f = check_collect(gen, *e, &x);
                            let rejected = f
                                .iter()
                                .any(|x| x.outcome == Outcome::Fail && x.rule.name == er.rule);
                            // A non-member is always rejected by the rule. (A member may still
                            // be rejected where the rule also ties the field to others, as the
                            // group rules do.)
                            if !(er.member)(gen, v) {
                                assert!(
                                    rejected,
                                    "{} 0x{op:02X} {gen} {} = {v} passes: {:?}",
                                    r.gate,
                                    er.field,
                                    f.iter().map(|x| x.rule.name).collect::<Vec<_>>()
                                );
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

/// `(lo, hi)` of an allowed range a failure reports, when it is numeric.
fn range_of(a: &Allowed) -> Option<(u64, u64)> {
    match *a {
        Allowed::Max(n) => Some((0, n)),
        // Only a bare range bounds the field alone ("1..=128 partitions" ties the count to
        // the start partition).
        Allowed::Text(t) => {
            let (lo, hi) = t.split_once("..=")?;
            Some((lo.parse().ok()?, hi.parse().ok()?))
        }
        _ => None,
    }
}

#[test]
fn every_numeric_one_byte_range_holds_at_its_bounds() {
    let mut ranges = std::collections::BTreeSet::new();
    for r in RECIPES {
        for &gen in r.gens {
            for &op in r.opcodes {
                for (b, e) in valid(gen, r.format, op) {
                    for off in 12..64u8 {
                        // Probe the byte with 0 and 255; a failure on exactly this byte that
                        // states a numeric range gives the bounds to test.
                        for probe in [0u8, 255] {
                            let mut x = b;
                            x.0[off as usize] = probe;
                            for f in check_collect(gen, e, &x) {
                                if f.outcome != Outcome::Fail
                                    || f.field.start != off
                                    || f.field.len != 1
                                {
                                    continue;
                                }
                                let Some((lo, hi)) = range_of(&f.allowed) else {
                                    continue;
                                };
                                let at = |v: u64| {
                                    let mut y = b;
                                    y.0[off as usize] = v as u8;
                                    fails_at(&check_collect(gen, e, &y), f.rule.name, off)
                                };
                                let what = format!(
                                    "{} 0x{op:02X} {gen} +{off} {} {lo}..={hi}",
                                    r.gate, f.rule.name
                                );
                                assert!(!at(hi), "{what}: the maximum fails");
                                if hi < 255 {
                                    assert!(at(hi + 1), "{what}: maximum + 1 passes");
                                }
                                if lo > 0 {
                                    assert!(!at(lo), "{what}: the minimum fails");
                                    assert!(at(lo - 1), "{what}: minimum − 1 passes");
                                }
                                ranges.insert((f.rule.name, gen, op, off));
                            }
                        }
                    }
                }
            }
        }
    }
    // The count rules are among those found (each a 1..=128 range on its count byte).
    for rule in [
        "valid_num_active_rows",
        "check_active_channels",
        "is_valid_activate.num_active_partitions",
    ] {
        assert!(
            ranges.iter().any(|r| r.0 == rule),
            "{rule} not reached: {ranges:?}"
        );
    }
}
