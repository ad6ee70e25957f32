//! The layer differential behind `sim fuzz`: generate valid, mutated and random bundles
//! ([`generate`]), run each through decode → L2 → lift → L1, count the verdicts per
//! format and collect the bundles on which the two layers disagree.
//!
//! L1 and L2 are conjunctive, so disagreements are expected where a layer has a rule the other
//! lacks: "passes L1, fails L2" is the L2-only class (the v4 dual-FP8 restriction is the
//! canonical one); "passes L2, fails L1" the L1-only class. Each disagreement is reduced to a
//! smaller reproducer (bytes zeroed while the class and both rule sets stay the same).
//!
//! A run is a pure function of its [`Config`]: same seed, same cases, same report.

pub mod generate;
pub mod targets;

use std::collections::BTreeMap;

use generate::{Entropy, Generated, MutationKind, SplitMix64};
use tpbsim_isa::{decode, Bundle, Engine, Gen, LayoutMeta};

use crate::diag::{Mode, Severity};
use crate::l2::{self, Outcome};
use crate::lift::{lift_streams, StreamInput};
use crate::registry::{PropertySet, Registry};

/// What to fuzz.
#[derive(Clone, Debug)]
pub struct Config {
    /// Generation.
    pub gen: Gen,
    /// Only bundles of this engine's stream (any engine when `None`).
    pub engine: Option<Engine>,
    /// Number of cases.
    pub cases: u64,
    /// Seed of the generator.
    pub seed: u64,
    /// Only this spec format (`LdWeights`), case-insensitive.
    pub format: Option<String>,
    /// At most this many disagreements kept per (format, class, rules) group.
    pub keep_per_group: usize,
}

/// One layer's verdict on a bundle.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// No error.
    Pass,
    /// Errors, by rule name (sorted, deduplicated).
    Fail(Vec<String>),
    /// The layer could not decide (no L2 on v5; the bundle lifted to `Generic`).
    NotChecked,
}

impl Verdict {
    /// `pass`, `fail`, `not-checked`.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail(_) => "fail",
            Verdict::NotChecked => "not-checked",
        }
    }
    /// The failing rules.
    pub fn rules(&self) -> &[String] {
        match self {
            Verdict::Fail(r) => r,
            _ => &[],
        }
    }
}

/// How a case was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A valid-strategy bundle.
    Valid,
    /// A mutation of one.
    Mutated(MutationKind),
    /// Arbitrary body bytes under a present opcode.
    Random,
}

impl Origin {
    /// `valid`, `random` or the mutation kind's name.
    pub fn label(&self) -> &'static str {
        match self {
            Origin::Valid => "valid",
            Origin::Random => "random",
            Origin::Mutated(k) => k.name(),
        }
    }
}

/// The two disagreement classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// L1 passes, L2 rejects.
    L2Only,
    /// L2 passes, L1 rejects.
    L1Only,
}

impl Class {
    /// `passes L1, fails L2` / `passes L2, fails L1`.
    pub fn label(self) -> &'static str {
        match self {
            Class::L2Only => "passes L1, fails L2",
            Class::L1Only => "passes L2, fails L1",
        }
    }
    /// `l2-only` / `l1-only`.
    pub fn slug(self) -> &'static str {
        match self {
            Class::L2Only => "l2-only",
            Class::L1Only => "l1-only",
        }
    }
}

/// A bundle on which the layers disagree, reduced.
#[derive(Clone, Debug)]
pub struct Disagreement {
    /// Class.
    pub class: Class,
    /// Spec format of the bundle.
    pub format: &'static str,
    /// Engine stream.
    pub engine: Engine,
    /// How the case was made.
    pub origin: Origin,
    /// Case number (0-based) in the run.
    pub case: u64,
    /// The reduced bundle.
    pub bundle: Bundle,
    /// The bundle as generated.
    pub original: Bundle,
    /// L2 verdict on the reduced bundle.
    pub l2: Verdict,
    /// L1 verdict on the reduced bundle.
    pub l1: Verdict,
}

/// Verdict counts of one format.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Cases.
    pub cases: u64,
    /// Bundles that did not decode.
    pub decode_errors: u64,
    /// Both layers pass.
    pub both_pass: u64,
    /// Both layers reject.
    pub both_fail: u64,
    /// L1 passes, L2 rejects.
    pub l2_only: u64,
    /// L2 passes, L1 rejects.
    pub l1_only: u64,
    /// At least one layer could not decide.
    pub not_checked: u64,
}

/// The result of a run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Cases run.
    pub cases: u64,
    /// Per spec format.
    pub per_format: BTreeMap<&'static str, Counts>,
    /// Disagreements kept (at most `keep_per_group` per format, class and rule sets), in
    /// case order.
    pub disagreements: Vec<Disagreement>,
    /// Disagreements found in total (kept or not).
    pub disagreements_total: u64,
}

/// Why a run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// No typed layout matches the format / engine / generation.
    #[error("no typed format {what} on {gen}")]
    NoLayout {
        /// What was asked for.
        what: String,
        /// Generation.
        gen: Gen,
    },
}

/// The L2 verdict of `b` in `engine`'s stream.
pub fn l2_verdict(gen: Gen, engine: Engine, b: &Bundle) -> Verdict {
    if !l2::GENS.contains(&gen) {
        return Verdict::NotChecked;
    }
    let mut rules: Vec<String> = l2::check_collect(gen, engine, b)
        .iter()
        .filter(|f| f.outcome == Outcome::Fail)
        .map(|f| f.rule.name.to_string())
        .collect();
    rules.sort();
    rules.dedup();
    if rules.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail(rules)
    }
}

/// The L1 verdict of `b` lifted alone from `engine`'s stream.
pub fn l1_verdict(registry: &Registry, gen: Gen, engine: Engine, b: &Bundle) -> Verdict {
    let bundles = [*b];
    let input = StreamInput {
        function: "fuzz".into(),
        file: None,
        engine,
        bundles: &bundles,
    };
    let lifted = lift_streams(&[input], gen, None);
    let diags = registry.verify(PropertySet::default_l1(), &lifted.module, Mode::CollectAll);
    let mut rules: Vec<String> = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.rule.to_string())
        .collect();
    rules.extend(
        lifted
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.rule.to_string()),
    );
    rules.sort();
    rules.dedup();
    if !rules.is_empty() {
        return Verdict::Fail(rules);
    }
    let generic = lifted
        .module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|bb| &bb.instructions)
        .any(|i| i.class == crate::bir::InstClass::Generic);
    if generic
        || lifted
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::NotChecked)
    {
        Verdict::NotChecked
    } else {
        Verdict::Pass
    }
}

fn classify(l2: &Verdict, l1: &Verdict) -> Option<Class> {
    match (l2, l1) {
        (Verdict::Fail(_), Verdict::Pass) => Some(Class::L2Only),
        (Verdict::Pass, Verdict::Fail(_)) => Some(Class::L1Only),
        _ => None,
    }
}

/// Zero bytes of `b` (body first, then events and the header's debug bytes) as long as the
/// class and both rule sets stay the same.
fn reduce(
    registry: &Registry,
    gen: Gen,
    engine: Engine,
    b: Bundle,
    l2: &Verdict,
    l1: &Verdict,
) -> Bundle {
    let mut cur = b;
    for i in (12..64).chain(2..12) {
        if cur.0[i] == 0 {
            continue;
        }
        let mut t = cur;
        t.0[i] = 0;
        if decode(&t, gen).map(|x| x.meta().rust_name).ok()
            != decode(&cur, gen).map(|x| x.meta().rust_name).ok()
        {
            continue;
        }
        if &l2_verdict(gen, engine, &t) == l2 && &l1_verdict(registry, gen, engine, &t) == l1 {
            cur = t;
        }
    }
    cur
}

/// Layouts of `gen` the run draws from (with generated opcodes, the format filter applied).
fn candidate_layouts(cfg: &Config) -> Result<Vec<&'static LayoutMeta>, FuzzError> {
    let ls: Vec<&'static LayoutMeta> = generate::layouts()
        .filter(|(_, g)| *g == cfg.gen)
        .map(|(l, _)| l)
        .filter(|l| {
            cfg.format
                .as_deref()
                .is_none_or(|f| l.format_name().eq_ignore_ascii_case(f))
        })
        .filter(|l| {
            generate::generated_opcodes(l, cfg.gen)
                .iter()
                .any(|(op, _)| {
                    cfg.engine
                        .is_none_or(|e| generate::recipes::engines(cfg.gen, *op).contains(&e))
                })
        })
        .collect();
    if ls.is_empty() {
        let what = match (&cfg.format, cfg.engine) {
            (Some(f), Some(e)) => format!("{f} on engine {}", e.short()),
            (Some(f), None) => f.clone(),
            (None, Some(e)) => format!("on engine {}", e.short()),
            (None, None) => "at all".into(),
        };
        return Err(FuzzError::NoLayout { what, gen: cfg.gen });
    }
    Ok(ls)
}

/// One case: a generated bundle, how it was made.
fn make_case(
    rng: &mut SplitMix64,
    cfg: &Config,
    layouts: &[&'static LayoutMeta],
) -> Option<(Generated, Origin)> {
    let l = rng.pick(layouts);
    let mut g = generate::valid_bundle(rng, l, cfg.gen)?;
    if let Some(e) = cfg.engine {
        if !generate::recipes::engines(cfg.gen, g.bundle.0[0]).contains(&e) {
            return None;
        }
        g.engine = e;
    }
    let roll = rng.below(8);
    Some(match roll {
        0 | 1 => (g, Origin::Valid),
        2 => {
            // Arbitrary body under the same header.
            for i in 12..64 {
                g.bundle.0[i] = rng.next_u64() as u8;
            }
            (g, Origin::Random)
        }
        _ => {
            let m = generate::mutate(rng, cfg.gen, g);
            // A mutation that moves the bundle to another engine is kept only without an
            // engine filter.
            let engine = if cfg.engine.is_some() {
                g.engine
            } else {
                m.engine
            };
            (
                Generated {
                    bundle: m.bundle,
                    engine,
                },
                Origin::Mutated(m.kind),
            )
        }
    })
}

/// How findings are grouped: the layer, the class of disagreement and the two sides' rules.
type GroupKey = (&'static str, Class, Vec<String>, Vec<String>);

/// Run the differential.
pub fn run(cfg: &Config) -> Result<Report, FuzzError> {
    let layouts = candidate_layouts(cfg)?;
    let registry = Registry::l1();
    let mut rng = SplitMix64(cfg.seed);
    let mut report = Report::default();
    let mut groups: BTreeMap<GroupKey, usize> = BTreeMap::new();
    let mut case = 0u64;
    let mut attempts = 0u64;
    while case < cfg.cases && attempts < cfg.cases.saturating_mul(64).max(1024) {
        attempts += 1;
        let Some((g, origin)) = make_case(&mut rng, cfg, &layouts) else {
            continue;
        };
        let format = match decode(&g.bundle, cfg.gen) {
            Ok(i) => i.meta().format_name(),
            Err(_) => "(undecodable)",
        };
        let counts = report.per_format.entry(format).or_default();
        counts.cases += 1;
        let this = case;
        case += 1;
        if decode(&g.bundle, cfg.gen).is_err() {
            counts.decode_errors += 1;
            continue;
        }
        let l2v = l2_verdict(cfg.gen, g.engine, &g.bundle);
        let l1v = l1_verdict(&registry, cfg.gen, g.engine, &g.bundle);
        match (&l2v, &l1v, classify(&l2v, &l1v)) {
            (_, _, Some(Class::L2Only)) => counts.l2_only += 1,
            (_, _, Some(Class::L1Only)) => counts.l1_only += 1,
            (Verdict::Pass, Verdict::Pass, None) => counts.both_pass += 1,
            (Verdict::Fail(_), Verdict::Fail(_), None) => counts.both_fail += 1,
            _ => counts.not_checked += 1,
        }
        let Some(class) = classify(&l2v, &l1v) else {
            continue;
        };
        report.disagreements_total += 1;
        let key = (format, class, l2v.rules().to_vec(), l1v.rules().to_vec());
        let n = groups.entry(key).or_default();
        *n += 1;
        if *n > cfg.keep_per_group {
            continue;
        }
        let bundle = reduce(&registry, cfg.gen, g.engine, g.bundle, &l2v, &l1v);
        report.disagreements.push(Disagreement {
            class,
            format,
            engine: g.engine,
            origin,
            case: this,
            bundle,
            original: g.bundle,
            l2: l2_verdict(cfg.gen, g.engine, &bundle),
            l1: l1_verdict(&registry, cfg.gen, g.engine, &bundle),
        });
    }
    report.cases = case;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(gen: Gen, format: Option<&str>, cases: u64, seed: u64) -> Config {
        Config {
            gen,
            engine: None,
            cases,
            seed,
            format: format.map(Into::into),
            keep_per_group: 2,
        }
    }

    #[test]
    fn deterministic_for_a_seed() {
        let a = run(&cfg(Gen::V3, None, 60, 9)).unwrap();
        let b = run(&cfg(Gen::V3, None, 60, 9)).unwrap();
        assert_eq!(a.cases, 60);
        assert_eq!(a.per_format, b.per_format);
        assert_eq!(
            a.disagreements.iter().map(|d| d.bundle).collect::<Vec<_>>(),
            b.disagreements.iter().map(|d| d.bundle).collect::<Vec<_>>()
        );
    }

    #[test]
    fn v4_ld_weights_finds_the_dual_fp8_l2_only_rejection() {
        let r = run(&cfg(Gen::V4, Some("LdWeights"), 300, 1)).unwrap();
        let d = r
            .disagreements
            .iter()
            .find(|d| {
                d.class == Class::L2Only
                    && d.l2
                        .rules()
                        .iter()
                        .any(|x| x == "s3_lw_dual_fp8_restrictions")
            })
            .expect("a dual-FP8 L2-only case");
        // The reproducer still disagrees the same way.
        let reg = Registry::l1();
        assert_eq!(l2_verdict(Gen::V4, d.engine, &d.bundle), d.l2);
        assert_eq!(
            l1_verdict(&reg, Gen::V4, d.engine, &d.bundle),
            Verdict::Pass
        );
        assert_eq!(d.bundle.0[0], 0x01);
    }

    #[test]
    fn unknown_format_is_an_error() {
        assert!(run(&cfg(Gen::V4, Some("NoSuchFormat"), 10, 1)).is_err());
    }
}
