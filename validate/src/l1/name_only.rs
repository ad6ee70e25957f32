//! Checks the compiler runs whose predicates are not public: each applies to a known set of
//! instructions and is reported as not checked — once per module, at the first instruction
//! it applies to, with the number of instructions — never as a silent pass.

use crate::bir::{InstClass, InstRef, Instruction, Module};
use crate::diag::Diagnostic;
use crate::registry::Rule;

use super::not_checked_at;

/// Report `rule` as not checked at the first instruction `applies` accepts, with the count.
fn report(
    m: &Module,
    rule: &'static str,
    applies: fn(&Instruction) -> bool,
    what: &str,
    out: &mut Vec<Diagnostic>,
) {
    let mut first: Option<Diagnostic> = None;
    let mut n = 0usize;
    m.walk(&mut |r: &InstRef<'_>| {
        if applies(r.inst) {
            n += 1;
            if first.is_none() {
                first = Some(not_checked_at(r, rule, String::new()));
            }
        }
    });
    if let Some(mut d) = first {
        d.message =
            format!("{what}; not checked on {n} instruction(s) of the module (the first is here)");
        out.push(d);
    }
}

/// `visitInstruction`: the common checks every driver runs first on every instruction,
/// reported once at module scope (not at one instruction).
pub struct InstructionCommon;

impl Rule for InstructionCommon {
    rule_meta! {
        name: "visitInstruction",
        property: InstructionCommon,
        codes: [],
        summary: "the common Instruction checks every driver runs first (predicates not public: reported as not checked)",
        source: "seed 000 (entry point: visitInstruction, the common Instruction shell); seed 002 (driver order)",
    }
    fn verify(&self, m: &Module, out: &mut Vec<Diagnostic>) {
        let n = m.instruction_count();
        if n > 0 {
            out.push(super::module_scope::module_not_checked(
                "visitInstruction",
                &format!("visitInstruction runs common checks on every instruction before its driver; their predicates are not public, so they are not checked on the module's {n} instruction(s)"),
            ));
        }
    }
}

macro_rules! name_only_rule {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $prop:ident, $summary:literal, $source:literal, $applies:expr, $what:literal) => {
        $(#[$doc])*
        pub struct $ty;

        impl Rule for $ty {
            rule_meta! {
                name: $name,
                property: $prop,
                codes: [],
                summary: $summary,
                source: $source,
            }
            fn verify(&self, m: &Module, out: &mut Vec<Diagnostic>) {
                report(m, $name, $applies, $what, out);
            }
        }
    };
}

name_only_rule!(
    /// `checkTensorIndirectIO` on instructions with an indirect operand.
    TensorIndirectIo, "checkTensorIndirectIO", TensorIndirectIo,
    "indirect input / output tensors of an instruction (predicate not public: reported as not checked)",
    "seed 000 (entry point: checkTensorIndirectIO(I, inSet, outSet))",
    |i| i.args.iter().chain(&i.outs).any(|a| a.indirect),
    "checkTensorIndirectIO gates indirect operands against per-op input / output sets that are not public"
);

name_only_rule!(
    /// The loop verifiers of the structured control-flow regions.
    LoopVerifiers, "checkLoop", LoopVerifiers,
    "Loop / DynamicForLoop / DoWhile verifiers (predicates not public: reported as not checked)",
    "seed 000 (control-flow family: the loop verifiers carry non-trivial asserts); seed 002 (regions 105/106/108)",
    |i| matches!(i.class, InstClass::Loop | InstClass::DynamicForLoop | InstClass::DoWhile),
    "the loop verifiers check the loop regions' axes and nesting; their asserts are not public"
);

name_only_rule!(
    /// `checkSelect`.
    SelectCheck, "checkSelect", Select,
    "Select shape / mode gate (predicate not public: reported as not checked)",
    "seed 000 (RNG/Select family: checkSelect gates shape/mode)",
    |i| i.class == InstClass::Select,
    "checkSelect gates Select's shapes and mode; its predicate is not public"
);

name_only_rule!(
    /// `checkIota`.
    IotaCheck, "checkIota", Iota,
    "Iota shape / mode gate (predicate not public: reported as not checked)",
    "seed 000 (RNG/Select family: checkIota gates shape/mode)",
    |i| i.class == InstClass::Iota,
    "checkIota gates Iota's shapes and mode; its predicate is not public"
);

name_only_rule!(
    /// `checkMemsetMode`.
    MemsetMode, "checkMemsetMode", MemsetMode,
    "Memset mode gate (predicate not public: reported as not checked)",
    "seed 000 (RNG/Select family: checkMemsetMode gates shape/mode)",
    |i| i.class == InstClass::Memset,
    "checkMemsetMode gates Memset's mode; its predicate is not public"
);

name_only_rule!(
    /// `checkNKIKernelAddressRotationScope`.
    NkiAddressRotation, "checkNKIKernelAddressRotationScope", NkiAddressRotation,
    "NKIKernel address-rotation scope (predicate not public: reported as not checked)",
    "seed 000 (visitInstNKIKernel: checkNKIKernelAddressRotationScope)",
    |i| i.class == InstClass::NkiKernel,
    "checkNKIKernelAddressRotationScope runs on every NKIKernel; its predicate is not public"
);

#[cfg(test)]
mod tests {
    use crate::bir::{ArchLevel, EngineType, InstClass, Instruction};
    use crate::diag::Severity;
    use crate::l1::testutil::*;
    use crate::registry::Property;
    use tpbsim_isa::NumFormat;

    #[test]
    fn reported_once_per_module_where_they_apply() {
        let memset = || {
            Instruction::new(InstClass::Memset, EngineType::Pool).with_outs(vec![sb(
                "m",
                NumFormat::Float32,
                0,
                128,
                8,
            )])
        };
        let mut ind = tensor_tensor("a", "b", "c");
        ind.args[0].indirect = true;
        let m = module(
            ArchLevel::CoreV4,
            vec![tensor_tensor("a", "b", "c"), memset(), memset(), ind],
        );
        for (p, at, n) in [
            (Property::MemsetMode, "1:Memset", 2),
            (Property::TensorIndirectIo, "3:TensorTensor", 1),
        ] {
            let d = run(p, &m);
            assert_eq!(d.len(), 1, "{p}");
            assert_eq!(d[0].severity, Severity::NotChecked);
            assert_eq!(d[0].location.instruction.as_deref(), Some(at), "{p}");
            assert!(
                d[0].message.contains(&format!("on {n} instruction(s)")),
                "{}",
                d[0].message
            );
        }
        let d = run(Property::InstructionCommon, &m);
        assert_eq!(d.len(), 1);
        assert!(
            d[0].location.instruction.is_none()
                && d[0].message.contains("module's 4 instruction(s)"),
            "{:?}",
            d[0]
        );
        assert!(run(
            Property::InstructionCommon,
            &module(ArchLevel::CoreV4, vec![])
        )
        .is_empty());
        // Nothing applies: nothing reported.
        for p in [
            Property::Select,
            Property::Iota,
            Property::LoopVerifiers,
            Property::NkiAddressRotation,
        ] {
            assert!(run(p, &m).is_empty(), "{p}");
        }
        let iota = Instruction::new(InstClass::Iota, EngineType::Pool).with_outs(vec![sb(
            "i",
            NumFormat::Int32,
            0,
            128,
            8,
        )]);
        assert_eq!(
            run(Property::Iota, &module(ArchLevel::CoreV4, vec![iota])).len(),
            1
        );
    }
}
