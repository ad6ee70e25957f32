//! L0 / L1 drift: where the dormant libBIR engine map and the live L1 engine gate disagree.
//!
//! The compiler encodes "op X may run on engine E at level A" twice, in separate sources kept
//! in sync by convention (seed 002). tpbsim carries both as data ([`super::table::l0_map`],
//! [`super::table::class_rule`]); this module compares them cell by cell: the L1 side is the
//! set of concrete engines the gate lets through at a level (nothing when the arch gate
//! rejects the class there), the L0 side the map's cell (nothing when the level has no key).

use std::fmt::Write as _;

use crate::bir::{ArchLevel, EngineSet, InstClass};

use super::table::{driver, l0_base_map, l0_map};

/// One (class, level) cell where L0 and L1 disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drift {
    /// The class.
    pub class: InstClass,
    /// The level.
    pub arch: ArchLevel,
    /// The L0 cell (`None`: no key for the level).
    pub l0: Option<EngineSet>,
    /// Concrete engines the L1 gate accepts (`None`: the arch gate rejects the class).
    pub l1: Option<EngineSet>,
    /// The L1 set is seed-given (not project-defined).
    pub l1_from_seed: bool,
}

/// Every disagreeing cell, for one level or all.
pub fn compute(arch: Option<ArchLevel>) -> Vec<Drift> {
    let levels: Vec<ArchLevel> = match arch {
        Some(a) => vec![a],
        None => ArchLevel::ALL.to_vec(),
    };
    let mut out = Vec::new();
    for &class in InstClass::ALL {
        let rule = driver(class);
        let l0 = l0_map(class);
        for &a in &levels {
            let l0_cell = l0.iter().find(|(x, _)| *x == a).map(|(_, s)| *s);
            let l1_cell = rule
                .arch
                .contains(a)
                .then(|| rule.engines.at(a).l1_accepts());
            let same = match (l0_cell, l1_cell) {
                (None, None) => true,
                (Some(x), Some(y)) => x == y,
                _ => false,
            };
            if !same {
                out.push(Drift {
                    class,
                    arch: a,
                    l0: l0_cell,
                    l1: l1_cell,
                    l1_from_seed: !rule.engines.src().is_project(),
                });
            }
        }
    }
    out
}

fn cell(s: Option<EngineSet>, none: &str) -> String {
    match s {
        None => none.to_string(),
        Some(s) if s.is_empty() => "{} (wildcard-assigned only)".to_string(),
        Some(s) => s.to_string(),
    }
}

fn levels(run: &[&Drift]) -> String {
    match (run.first(), run.last()) {
        (Some(a), Some(b)) if a.arch != b.arch => format!("{}..{}", a.arch.name(), b.arch.name()),
        (Some(a), _) => a.arch.name().to_string(),
        _ => String::new(),
    }
}

/// The drift report as text.
pub fn render(drift: &[Drift]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "L0 (dormant libBIR getValidEngines map; cells project-defined) vs L1 (birverifier engine gate)");
    let (inferentia, rest): (Vec<&Drift>, Vec<&Drift>) = drift.iter().partition(|d| {
        d.arch == ArchLevel::Inferentia && d.l0.is_none() && d.l1.is_some_and(|s| !s.is_empty())
    });
    let _ = writeln!(out, "{:<28} {:<20} {:<34} L1", "class", "levels", "L0");
    let mut i = 0;
    while i < rest.len() {
        let d = rest[i];
        let mut j = i + 1;
        while j < rest.len() && rest[j].class == d.class && rest[j].l0 == d.l0 && rest[j].l1 == d.l1
        {
            j += 1;
        }
        let _ = writeln!(
            out,
            "{:<28} {:<20} {:<34} {}{}",
            d.class.name(),
            levels(&rest[i..j]),
            cell(d.l0, "no key"),
            cell(d.l1, "rejected by checkArchLevel"),
            if d.l1_from_seed { " (seed)" } else { "" }
        );
        i = j;
    }
    if !inferentia.is_empty() {
        let names: Vec<&str> = inferentia.iter().map(|d| d.class.name()).collect();
        let _ = writeln!(
            out,
            "inferentia: {} class(es) pass the L1 gates at level 10 while every concrete L0 map omits the level: {}",
            names.len(),
            names.join(", ")
        );
    }
    let base: Vec<String> = l0_base_map()
        .iter()
        .map(|(a, s)| format!("{}={s}", a.level()))
        .collect();
    let _ = writeln!(
        out,
        "L0 base map (inherited by no concrete class): {}",
        base.join(" ")
    );
    let classes = {
        let mut c: Vec<InstClass> = drift.iter().map(|d| d.class).collect();
        c.dedup();
        c.len()
    };
    let _ = writeln!(
        out,
        "{} disagreeing (class, level) cell(s) over {classes} class(es)",
        drift.len()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::l1::table::{DVE, POOL, POOL_DVE};

    #[test]
    fn seed_sets_drift_from_catalog() {
        let d = compute(Some(ArchLevel::Gen3));
        let pool = d.iter().find(|x| x.class == InstClass::Pool).unwrap();
        assert_eq!(
            (pool.l0, pool.l1, pool.l1_from_seed),
            (Some(POOL), Some(DVE), true)
        );
        // Memset's seed set equals the catalog's: no drift.
        assert!(d.iter().all(|x| x.class != InstClass::Memset));
        // Kernels accept only wildcard engines at L1.
        let k = d.iter().find(|x| x.class == InstClass::BirKernel).unwrap();
        assert_eq!(k.l1, Some(EngineSet::EMPTY));
        // Rng: sunda {DVE} at L1 versus the catalog's {Pool, DVE}.
        let rng = compute(Some(ArchLevel::Sunda));
        let r = rng.iter().find(|x| x.class == InstClass::Rng).unwrap();
        assert_eq!((r.l0, r.l1), (Some(POOL_DVE), Some(DVE)));
        assert!(compute(Some(ArchLevel::CoreV4))
            .iter()
            .all(|x| x.class != InstClass::Rng));
    }

    #[test]
    fn inferentia_asymmetry_and_render() {
        let d = compute(None);
        assert!(d.iter().any(|x| x.arch == ArchLevel::Inferentia
            && x.class == InstClass::Activation
            && x.l0.is_none()));
        // Generic's seed window starts at 20: no cell at 10 on either side.
        assert!(!d
            .iter()
            .any(|x| x.arch == ArchLevel::Inferentia && x.class == InstClass::Generic));
        let text = render(&d);
        assert!(
            text.contains("Pool                         sunda..core_v5       {Pool}"),
            "{text}"
        );
        assert!(text.contains("inferentia: "), "{text}");
        assert!(text.contains("L0 base map"), "{text}");
    }
}
