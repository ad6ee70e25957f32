//! The L2 cascade as the simulator's bundle check ([`tpbsim_isa::check::BundleCheck`]): a
//! runner installs [`L2Check`] to refuse every bundle the cascade fails before it executes.

use tpbsim_isa::check::{BundleCheck, Rejection};
use tpbsim_isa::{Bundle, Engine, Gen};

use super::{check_collect, check_silent, to_diagnostic, BundleLoc, Outcome, GENS};

/// The L2 cascade over one bundle; generations without an L2 validator (v5) pass unchecked.
#[derive(Clone, Copy, Debug, Default)]
pub struct L2Check;

impl BundleCheck for L2Check {
    fn check(&self, gen: Gen, engine: Engine, b: &Bundle) -> Result<(), Rejection> {
        if !GENS.contains(&gen) || !check_silent(gen, engine, b).failed {
            return Ok(());
        }
        let loc = BundleLoc {
            file: None,
            engine: Some(engine),
            index: 0,
            offset: 0,
        };
        let reasons = check_collect(gen, engine, b)
            .iter()
            .filter(|f| f.outcome == Outcome::Fail)
            .map(|f| {
                let d = to_diagnostic(gen, b, f, &loc);
                match &d.location.field {
                    Some(fl) => format!(
                        "L2 {}: field {} (bytes {}..{}): {}",
                        d.rule,
                        fl.name,
                        fl.start,
                        fl.start as u16 + fl.len as u16,
                        d.message
                    ),
                    None => format!("L2 {}: {}", d.rule, d.message),
                }
            })
            .collect();
        Err(Rejection { reasons })
    }
}
