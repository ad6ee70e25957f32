//! `checkArchLevelForEnum`: an enum-valued parameter (an ALU op, an activation function, ...)
//! names a member that exists on the module's architecture level. Seed 000 names the mechanism
//! (`lookupMinArchForISAEnum` + `checkArchLevelForEnum`); the per-generation membership of
//! every enum value is the ISA spec's (facts §7, the generation columns of the enum tables).

use serde_json::Value;

use crate::bir::{InstRef, Module};
use crate::diag::Diagnostic;
use crate::registry::Rule;

use super::error_at;

/// `checkArchLevelForEnum` (its assertion code is not public).
pub struct ArchLevelForEnum;

impl Rule for ArchLevelForEnum {
    rule_meta! {
        name: "checkArchLevelForEnum",
        property: ArchLevelForEnum,
        codes: [],
        summary: "enum-valued parameters (ALU op, activation function, ...) exist on the module's level",
        source: "seed 000 (control-flow family: per-enum min-arch via lookupMinArchForISAEnum + checkArchLevelForEnum); isa-facts §7 (per-generation enum members)",
        project: "which attributes are enum-valued: the parameters the lifter writes (docs/lift.md), typed by the spec field they lower to",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        let Some(gen) = m.arch.gen() else { return };
        for (key, v) in &r.inst.attrs {
            let Some(e) = crate::lift::param_enum(r.inst.class, key) else {
                continue;
            };
            let found = match v {
                Value::String(s) => e.values.iter().find(|x| x.name == s.as_str()),
                Value::Number(n) => n
                    .as_u64()
                    .and_then(|n| e.values.iter().find(|x| u64::from(x.value) == n)),
                _ => None,
            };
            // Unknown names and out-of-range numbers are lowering errors, not arch errors.
            let Some(x) = found else { continue };
            if e.values_in(gen).any(|y| y.value == x.value) {
                continue;
            }
            let from = tpbsim_isa::Gen::ALL
                .into_iter()
                .find(|&g| e.values_in(g).any(|y| y.value == x.value))
                .map_or_else(
                    || "no level".to_string(),
                    |g| crate::bir::ArchLevel::from(g).to_string(),
                );
            out.push(error_at(
                r,
                "checkArchLevelForEnum",
                None,
                format!(
                    "attrs.{key} = {} ({:#04x}): the {} member exists from {from} on, the module targets {}",
                    x.name, x.value, e.name, m.arch
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bir::ArchLevel;
    use crate::l1::testutil::*;
    use crate::registry::Property;

    #[test]
    fn enum_members_by_level() {
        let with = |op: serde_json::Value| {
            let mut i = tensor_tensor("a", "b", "c");
            i.attrs.insert("op".into(), op);
            i
        };
        // ABS_MAX (0x20) exists from core_v4 on; ADD everywhere; DIVIDE_INT from gen3 on.
        assert!(run(
            Property::ArchLevelForEnum,
            &module(ArchLevel::CoreV4, vec![with("ABS_MAX".into())])
        )
        .is_empty());
        assert!(run(
            Property::ArchLevelForEnum,
            &module(ArchLevel::Sunda, vec![with("ADD".into())])
        )
        .is_empty());
        for (arch, v) in [
            (ArchLevel::Gen3, serde_json::json!("ABS_MAX")),
            (ArchLevel::Sunda, serde_json::json!(0xC7)),
        ] {
            let d = run(Property::ArchLevelForEnum, &module(arch, vec![with(v)]));
            assert_eq!(error_rules(&d), vec!["checkArchLevelForEnum"], "{arch}");
            assert!(d[0].message.contains("ALU_OP"), "{}", d[0].message);
        }
        // Attributes that are not enum parameters of the class are not read.
        let mut i = tensor_tensor("a", "b", "c");
        i.attrs.insert("alu".into(), "ABS_MAX".into());
        assert!(run(
            Property::ArchLevelForEnum,
            &module(ArchLevel::Sunda, vec![i])
        )
        .is_empty());
    }
}
