//! Module-scope pre-checks the compiler runs in `enterModule` before the walk (seed 002):
//! `checkFP8TypeConsistency`, `checkInstCount`, `checkSbIO`.

use crate::bir::Module;
use crate::diag::{Diagnostic, Layer, Location, Severity};
use crate::registry::Rule;
use tpbsim_isa::NumFormat;

use super::{error_at, operand, operands};

/// The fp8 representation family of a dtype, for `checkFP8TypeConsistency`.
///
/// `project-defined`: the seed gives the rule (a module never holds both a legacy-fp8 and an
/// OCP-fp8 tensor) but not the partition of the dtypes. tpbsim calls legacy the formats with
/// an IEEE-style infinity that OCP dropped (`float8_e3m4`, `float8_e4m3`) and OCP the
/// finite-only E4M3 forms (`float8_e4m3fn`, `float8_e4m3fn_x4`); E5M2 is the same format in
/// both conventions and E8M0 is a scale, so neither takes a side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8Family {
    /// Pre-OCP fp8.
    Legacy,
    /// OCP fp8.
    Ocp,
}

/// The family of `d`, if it has one.
pub const fn fp8_family(d: NumFormat) -> Option<Fp8Family> {
    match d {
        NumFormat::Float8E3m4 | NumFormat::Float8E4m3 => Some(Fp8Family::Legacy),
        NumFormat::Float8E4m3fn | NumFormat::Float8E4m3fnX4 => Some(Fp8Family::Ocp),
        _ => None,
    }
}

/// `checkFP8TypeConsistency` (no assertion code).
pub struct Fp8TypeConsistency;

impl Rule for Fp8TypeConsistency {
    rule_meta! {
        name: "checkFP8TypeConsistency",
        property: Fp8TypeConsistency,
        codes: [],
        summary: "a module never mixes legacy-fp8 and OCP-fp8 tensors",
        source: "seed 000 (checkFP8TypeConsistency: \"LegacyTensor == nullptr || OcpTensor == nullptr\"); seed 002 (module pre-checks)",
        project: "which dtypes count as legacy (float8_e3m4, float8_e4m3) and OCP (float8_e4m3fn, float8_e4m3fn_x4)",
    }
    fn verify(&self, m: &Module, out: &mut Vec<Diagnostic>) {
        let mut first: Option<(Fp8Family, NumFormat, String)> = None;
        let mut reported = false;
        m.walk(&mut |r| {
            if reported {
                return;
            }
            for (dir, i, ap) in operands(r.inst) {
                let Some(fam) = fp8_family(ap.dtype) else { continue };
                match &first {
                    None => {
                        let l = r.location();
                        let at = format!(
                            "{}/{}/{} {}",
                            l.function.unwrap_or_default(),
                            l.block.unwrap_or_default(),
                            l.instruction.unwrap_or_default(),
                            operand(dir, i)
                        );
                        first = Some((fam, ap.dtype, at));
                    }
                    Some((f0, d0, at0)) if *f0 != fam => {
                        out.push(error_at(
                            r,
                            "checkFP8TypeConsistency",
                            None,
                            format!(
                                "LegacyTensor == nullptr || OcpTensor == nullptr: {} is {} ({:?} fp8) but {at0} is {d0} ({:?} fp8) [project-defined: fp8 family split]",
                                operand(dir, i),
                                ap.dtype,
                                fam,
                                f0
                            ),
                        ));
                        reported = true;
                        return;
                    }
                    Some(_) => {}
                }
            }
        });
    }
}

pub(crate) fn module_not_checked(rule: &'static str, message: &str) -> Diagnostic {
    Diagnostic::error(Layer::L1, rule, None, message)
        .with_severity(Severity::NotChecked)
        .at(Location::default())
}

/// `checkInstCount`: known by name only; reported as not checked.
pub struct InstCount;

impl Rule for InstCount {
    rule_meta! {
        name: "checkInstCount",
        property: InstCount,
        codes: [],
        summary: "module instruction-count limits (predicate not public: reported as not checked)",
        source: "seed 002 (named among the enterModule pre-checks)",
    }
    fn verify(&self, _m: &Module, out: &mut Vec<Diagnostic>) {
        out.push(module_not_checked(
            "checkInstCount",
            "the compiler runs checkInstCount before the walk; its limits are not public, so instruction counts are not checked",
        ));
    }
}

/// `checkSbIO`: known by name only; reported as not checked.
pub struct SbIo;

impl Rule for SbIo {
    rule_meta! {
        name: "checkSbIO",
        property: SbIo,
        codes: [],
        summary: "SBUF-resident module I/O (predicate not public: reported as not checked)",
        source: "seed 002 (named among the enterModule pre-checks)",
    }
    fn verify(&self, _m: &Module, out: &mut Vec<Diagnostic>) {
        out.push(module_not_checked(
            "checkSbIO",
            "the compiler runs checkSbIO before the walk; its predicate is not public, so SBUF I/O placement is not checked",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::{ArchLevel, EngineType, InstClass, Instruction};
    use crate::l1::testutil::*;
    use crate::registry::Property;

    fn act(dt_in: NumFormat, dt_out: NumFormat) -> Instruction {
        Instruction::new(InstClass::Activation, EngineType::Act)
            .with_args(vec![sb("x", dt_in, 0, 128, 8)])
            .with_outs(vec![sb("y", dt_out, 0, 128, 8)])
    }

    #[test]
    fn fp8_mixing() {
        let ok = module(
            ArchLevel::CoreV4,
            vec![
                act(NumFormat::Float8E4m3fn, NumFormat::Float8E5m2),
                act(NumFormat::Bfloat16, NumFormat::Float8E4m3fn),
            ],
        );
        assert!(run(Property::Fp8TypeConsistency, &ok).is_empty());
        let bad = module(
            ArchLevel::CoreV4,
            vec![
                act(NumFormat::Float8E4m3fn, NumFormat::Bfloat16),
                act(NumFormat::Bfloat16, NumFormat::Float8E4m3),
            ],
        );
        let d = run(Property::Fp8TypeConsistency, &bad);
        assert_eq!(error_rules(&d), vec!["checkFP8TypeConsistency"]);
        assert_eq!(d[0].location.instruction.as_deref(), Some("1:Activation"));
        assert!(
            d[0].message
                .contains("main/bb0/0:Activation args[0] is float8_e4m3fn"),
            "{}",
            d[0].message
        );
        // Reported once per module.
        let worse = module(
            ArchLevel::CoreV4,
            vec![
                act(NumFormat::Float8E4m3fn, NumFormat::Float8E3m4),
                act(NumFormat::Float8E4m3, NumFormat::Float8E3m4),
            ],
        );
        assert_eq!(run(Property::Fp8TypeConsistency, &worse).len(), 1);
    }

    #[test]
    fn name_only_checks_report_not_checked() {
        let m = module(ArchLevel::CoreV4, vec![]);
        for p in [Property::InstCount, Property::SbIo] {
            let d = run(p, &m);
            assert_eq!(d.len(), 1);
            assert_eq!(d[0].severity, Severity::NotChecked);
            assert!(d[0].location.function.is_none());
        }
    }
}
