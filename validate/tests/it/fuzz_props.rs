//! The generators of `tpbsim_validate::fuzz::generate` against the L2 validator: every bundle of a valid
//! strategy passes L2, every mutation that breaks a documented rule is rejected by that rule,
//! every gated opcode is generated (with its format's recipe or the default one), and the
//! opcodes left out of the valid strategies are exactly the listed ones.
//!
//! Case counts: `TPBSIM_PROPTEST_CASES` (default 256) spread over the layouts.

use proptest::test_runner::{Config, TestCaseError, TestRunner};
use tpbsim_isa::strategies::config;
use tpbsim_isa::{spec, Gen};
use tpbsim_validate::fuzz::generate::{self as fuzzgen, recipes, MutationKind};
use tpbsim_validate::l2::{self, check_collect, Outcome};
use tpbsim_validate::strategies::{arb_mutation, arb_valid_bundle};

fn errors(gen: Gen, engine: tpbsim_isa::Engine, b: &tpbsim_isa::Bundle) -> Vec<&'static str> {
    check_collect(gen, engine, b)
        .iter()
        .filter(|f| f.outcome == Outcome::Fail)
        .map(|f| f.rule.name)
        .collect()
}

fn per_layout(div: u32) -> u32 {
    (config().cases / div).max(8)
}

#[test]
fn every_valid_bundle_passes_l2() {
    let mut layouts = 0;
    for (layout, gen) in fuzzgen::layouts().filter(|(_, g)| l2::GENS.contains(g)) {
        let Some(s) = arb_valid_bundle(layout, gen) else {
            continue;
        };
        layouts += 1;
        // Formats with an L2 recipe get more cases: only they exercise the format gates.
        let gated = fuzzgen::generated_opcodes(layout, gen)
            .iter()
            .any(|(op, _)| recipes::recipe_for(gen, *op).is_some());
        let cases = if gated { per_layout(2) } else { per_layout(32) };
        TestRunner::new(Config { cases, ..config() })
            .run(&s, |g| {
                let e = errors(gen, g.engine, &g.bundle);
                if !e.is_empty() {
                    return Err(TestCaseError::fail(format!(
                        "{gen} {} on {:?}: {e:?}",
                        g.bundle.to_hex(),
                        g.engine
                    )));
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{} on {gen}: {e}", layout.rust_name));
    }
    assert!(layouts > 90, "only {layouts} layout/generation pairs");
}

/// The longest test of the workspace (several minutes of one core: every mutation kind that
/// does not apply to a layout is drawn until 5,000 rejections end it), so it is left out of the
/// default run and run by `.ci/run` on its own (docs/testing.md, "Build and test time").
#[test]
#[ignore = "long: cargo nextest run --workspace --run-ignored only -E 'test(every_rule_breaking_mutation_is_rejected_by_its_rule)'"]
fn every_rule_breaking_mutation_is_rejected_by_its_rule() {
    let mut seen = std::collections::BTreeSet::new();
    // The rules the mutations broke (and saw rejected), and the formats they broke them in.
    let hit_rules = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let hit_formats = std::cell::RefCell::new(std::collections::BTreeSet::new());
    for (layout, gen) in fuzzgen::layouts().filter(|(_, g)| l2::GENS.contains(g)) {
        let gated = fuzzgen::generated_opcodes(layout, gen)
            .iter()
            .any(|(op, _)| recipes::recipe_for(gen, *op).is_some());
        let kinds: &[MutationKind] = if gated {
            &MutationKind::ALL
        } else {
            &[
                MutationKind::InstWordLen,
                MutationKind::OpcodeAbsent,
                MutationKind::EnumOutOfRange,
                MutationKind::WrongEngine,
            ]
        };
        for &kind in kinds.iter().filter(|k| **k != MutationKind::BitFlip) {
            let Some(s) = arb_mutation(layout, gen, Some(kind)) else {
                continue;
            };
            let cases = if gated { per_layout(16) } else { 2 };
            let mut runner = TestRunner::new(Config {
                cases,
                max_global_rejects: 5_000,
                ..config()
            });
            let r = runner.run(&s, |m| {
                let rule = m.rule.expect("rule-breaking kinds name their rule");
                let e = errors(gen, m.engine, &m.bundle);
                if !e.contains(&rule) {
                    return Err(TestCaseError::fail(format!(
                        "{gen} {:?} {} on {:?}: expected {rule}, got {e:?}",
                        m.kind,
                        m.bundle.to_hex(),
                        m.engine
                    )));
                }
                hit_rules.borrow_mut().insert(rule);
                if let Some(r) = recipes::recipe_for(gen, m.bundle.0[0]) {
                    hit_formats.borrow_mut().insert((r.gate, r.format));
                }
                Ok(())
            });
            match r {
                Ok(()) => {
                    seen.insert((kind.name(), gated));
                }
                // A kind that never applies to this layout (no reserved bytes, no dtype row,
                // every engine executes the opcode) is rejected by the strategy's filter every
                // time; 5,000 rejections end the attempt.
                Err(proptest::test_runner::TestError::Abort(_)) => {}
                Err(e) => panic!("{} on {gen}, {}: {e}", layout.rust_name, kind.name()),
            }
        }
    }
    for kind in MutationKind::ALL
        .iter()
        .filter(|k| **k != MutationKind::BitFlip)
    {
        assert!(
            seen.contains(&(kind.name(), true)),
            "{} never applied to a gated format",
            kind.name()
        );
    }
    let (mut rules, formats) = (hit_rules.into_inner(), hit_formats.into_inner());
    // A rule row the random cases above did not break gets up to 256 more enum mutations of
    // its format, drawn from the same strategy, until one breaks it (and is rejected by it).
    let row_rules = |r: &recipes::Recipe| -> Vec<&'static str> {
        let mut v: Vec<&'static str> = fuzzgen::recipe_opcodes(r)
            .into_iter()
            .flat_map(|(g, op)| fuzzgen::rule_rows(g, op))
            .map(|row| row.rule.name)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    for r in recipes::all() {
        for rule in row_rules(r) {
            if rules.contains(rule) {
                continue;
            }
            let mut runner = TestRunner::new(config());
            'draw: for (layout, gen) in fuzzgen::layouts()
                .filter(|(l, g)| l2::GENS.contains(g) && l.format_name() == r.format)
            {
                let Some(s) = arb_mutation(layout, gen, Some(MutationKind::EnumOutOfRange)) else {
                    continue;
                };
                for _ in 0..256 {
                    let Ok(t) = proptest::strategy::Strategy::new_tree(&s, &mut runner) else {
                        continue;
                    };
                    let m = proptest::strategy::ValueTree::current(&t);
                    if m.rule == Some(rule) {
                        assert!(
                            errors(gen, m.engine, &m.bundle).contains(&rule),
                            "{gen} {}: {} not rejected by {}",
                            r.format,
                            m.bundle.to_hex(),
                            rule
                        );
                        rules.insert(rule);
                        break 'draw;
                    }
                }
            }
        }
    }
    // Every recipe's format had a broken rule rejected, and every rule row of its gate was
    // broken and rejected at least once.
    for r in recipes::all() {
        assert!(
            formats.contains(&(r.gate, r.format)),
            "no mutation of {} ({}) was rejected",
            r.format,
            r.gate
        );
        for rule in row_rules(r) {
            assert!(
                rules.contains(rule),
                "{} ({}): rule {rule} was never broken",
                r.format,
                r.gate
            );
        }
        let dtyped = fuzzgen::recipe_opcodes(r)
            .into_iter()
            .any(|(g, op)| !fuzzgen::dtype_rows(g, op).is_empty());
        if dtyped {
            assert!(
                rules.contains("is_valid_dtype"),
                "is_valid_dtype never broken"
            );
        }
    }
}

/// Every opcode the spec gates on an L2 generation (and `EXCLUDED` does not list) is generated
/// by its layout's valid strategy, with or without an entry in `RECIPES`, and passes L2.
#[test]
fn every_gated_opcode_is_generated_and_passes_l2() {
    let mut rng = fuzzgen::SplitMix64(11);
    let mut checked = 0;
    for gen in l2::GENS {
        for r in spec::opcodes() {
            if !r.is_present(gen)
                || tpbsim_isa::FormatGate::of(gen, r.code).is_none()
                || recipes::is_excluded(gen, r.code)
            {
                continue;
            }
            let layout = fuzzgen::layouts()
                .find(|(l, g)| {
                    *g == gen
                        && l.format_name() == r.format
                        && fuzzgen::layout_opcodes(l, gen)
                            .iter()
                            .any(|(op, _)| *op == r.code)
                })
                .map(|(l, _)| l)
                .unwrap_or_else(|| panic!("{gen} {:#04x}: no layout of {}", r.code, r.format));
            let n = fuzzgen::generated_opcodes(layout, gen).len() as u32;
            let hit = (0..64 * n).find_map(|_| {
                fuzzgen::valid_bundle(&mut rng, layout, gen).filter(|g| g.bundle.0[0] == r.code)
            });
            let g = hit.unwrap_or_else(|| {
                panic!("{gen} {:#04x} ({}) is never generated", r.code, r.format)
            });
            let e = errors(gen, g.engine, &g.bundle);
            assert!(e.is_empty(), "{gen} {}: {e:?}", g.bundle.to_hex());
            checked += 1;
        }
    }
    assert!(
        checked > 180,
        "only {checked} gated opcode/generation pairs"
    );
}

#[test]
fn excluded_opcodes_are_exactly_the_gated_ones_without_a_recipe() {
    for gen in l2::GENS {
        for op in 0..=255u8 {
            let present = spec::opcode(op).is_some_and(|r| r.is_present(gen));
            let gated = present && tpbsim_isa::FormatGate::of(gen, op).is_some();
            let recipe = fuzzgen::recipe_for(gen, op).is_some();
            let excluded = recipes::is_excluded(gen, op);
            if gated {
                assert!(
                    recipe ^ excluded,
                    "{gen} {op:#04x}: gated, recipe {recipe}, excluded {excluded}"
                );
            } else {
                assert!(!recipe, "{gen} {op:#04x}: recipe without an L2 gate");
            }
            if let Some(e) = fuzzgen::EXCLUDED.iter().find(|e| e.0 == op) {
                if gated {
                    assert_eq!(
                        tpbsim_isa::FormatGate::of(gen, op).map(|f| f.gate_name()),
                        Some(e.1),
                        "{op:#04x}"
                    );
                }
            }
        }
    }
    // Excluded opcodes are never generated on an L2 generation.
    let mut rng = fuzzgen::SplitMix64(3);
    for gen in l2::GENS {
        for _ in 0..2000 {
            if let Some(g) = fuzzgen::any_valid_bundle(&mut rng, gen) {
                assert!(!recipes::is_excluded(gen, g.bundle.0[0]));
            }
        }
    }
}
