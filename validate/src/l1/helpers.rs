//! The five shared helpers of the L1 verifier (seed 000, "The Five Shared Primitives";
//! seed 002 for the engine gate), each a rule applying the driver table to every instruction.

use crate::bir::{
    AccessPattern, ArchLevel, EngineSet, EngineType, InstClass, InstRef, MemoryType, Module,
    NUM_PARTITIONS,
};
use crate::diag::Diagnostic;
use crate::registry::Rule;

use super::table::{driver, ArchWindow, PartitionRule};
use super::{error_at, not_checked_at, operand, operands, provenance, Dir};

/// Outcome of the engine gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineVerdict {
    /// The engine is legal (or a wildcard lets it through).
    Legal,
    /// `TensorScalarPtr` outside its set: the compiler delegates to `checkValidEnginesTSP`,
    /// whose rule is not public.
    TspDelegate,
    /// Not legal: assertion 400.
    Illegal,
}

/// `checkValidEngines`: legal when the function skips the check, the instruction's engine is a
/// wildcard (Unassigned, ALL), the engine is in the legal set, or ALL is in the set; a
/// `TensorScalarPtr` outside the set goes to the TSP delegate; anything else is 400.
pub fn check_valid_engines(
    skip: bool,
    class: InstClass,
    engine: EngineType,
    legal: EngineSet,
) -> EngineVerdict {
    if skip || engine.is_wildcard() || legal.contains(engine) || legal.contains(EngineType::All) {
        EngineVerdict::Legal
    } else if class == InstClass::TensorScalarPtr {
        EngineVerdict::TspDelegate
    } else {
        EngineVerdict::Illegal
    }
}

/// `checkArchLevel(min, max)`: `Some((code, predicate))` when the level is outside the window
/// (366 below the minimum, 367 above the maximum).
pub fn check_arch_level(arch: ArchLevel, w: &ArchWindow) -> Option<(u32, String)> {
    if let Some(min) = w.min.filter(|m| arch < *m) {
        return Some((
            366,
            format!("curArchLevel >= min.value(): needs {min} or later, module targets {arch}"),
        ));
    }
    if let Some(max) = w.max.filter(|m| arch > *m) {
        return Some((
            367,
            format!("curArchLevel <= max.value(): needs {max} or earlier, module targets {arch}"),
        ));
    }
    None
}

/// `checkLegalPartitionAccess` over one SB/PSUM pattern: the violated predicates (empty when
/// legal). `limit` is the memory's partition count.
pub fn check_partition_access(ap: &AccessPattern, rule: PartitionRule, limit: u64) -> Vec<String> {
    let mut v = Vec::new();
    let end = ap.end_partition();
    if end > limit {
        v.push(format!(
            "Pattern accesses > {limit} partitions: partitions {}..{} of {}",
            ap.start_partition, end, ap.mem
        ));
    }
    if rule == PartitionRule::Halves {
        if ap.start_partition != 0 && ap.start_partition != 64 {
            v.push(format!(
                "Access pattern did not start at partition 0 or 64. Starts at partition {}",
                ap.start_partition
            ));
        }
        if ap.start_partition < 64 && end > 64 {
            v.push(format!(
                "Access pattern crosses 64th partition boundary: partitions {}..{end}",
                ap.start_partition
            ));
        }
    }
    v
}

/// `checkMemType`, code 310.
pub struct MemType;

impl Rule for MemType {
    rule_meta! {
        name: "checkMemType",
        property: MemType,
        codes: [310],
        summary: "each input and output lies in a memory type its class allows",
        source: "seed 000, shared primitives (checkMemType, inst_visitor.cpp:1285)",
        project: "the allowed memory sets per class (only CustomOp's inputs {SB, Input, …} are seed-given)",
        scope: Instruction,
    }
    fn check(&self, _m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        let rule = driver(r.inst.class);
        for (dir, i, ap) in operands(r.inst) {
            let allowed = if dir == Dir::Arg {
                rule.mem.args
            } else {
                rule.mem.outs
            };
            if !allowed.contains(ap.mem) {
                out.push(error_at(
                    r,
                    "checkMemType",
                    Some(310),
                    format!(
                        "{} lies in {}, {} allows {allowed}{}",
                        operand(dir, i),
                        ap.mem,
                        r.inst.class,
                        provenance(rule.mem.src)
                    ),
                ));
            }
        }
    }
}

/// `checkArchLevel`, codes 366 / 367.
pub struct ArchLevelRule;

impl Rule for ArchLevelRule {
    rule_meta! {
        name: "checkArchLevel",
        property: ArchLevel,
        codes: [366, 367],
        summary: "the module's arch level lies in the class's [min, max] window",
        source: "seed 000, shared primitives (checkArchLevel, inst_visitor.cpp:1299/1307)",
        project: "the windows of classes whose driver the seeds do not give: taken from the generations whose opcode enum carries the class's opcodes",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        let w = driver(r.inst.class).arch;
        if let Some((code, msg)) = check_arch_level(m.arch, &w) {
            out.push(error_at(
                r,
                "checkArchLevel",
                Some(code),
                format!("{}: {msg}{}", r.inst.class, provenance(w.src)),
            ));
        }
    }
}

/// `checkValidEngines`, code 400 (and the `TensorScalarPtr` delegate, not checked).
pub struct ValidEngines;

impl Rule for ValidEngines {
    rule_meta! {
        name: "checkValidEngines",
        property: ValidEngines,
        codes: [400],
        summary: "the assigned engine is in the class's legal set (wildcards Unassigned/ALL, ALL in the set, the function skip attribute)",
        source: "seed 002, L1 engine gate (checkValidEngines, inst_visitor.cpp:1368); seed 000 for the seed-given sets",
        project: "legal sets of classes whose driver the seeds do not give (opcode-catalog engine column); the TensorScalarPtr delegate is reported as not checked",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        let rule = driver(r.inst.class);
        let legal = rule.engines.at(m.arch);
        match check_valid_engines(r.function.skip_engine_check(), r.inst.class, r.inst.engine, legal) {
            EngineVerdict::Legal => {}
            EngineVerdict::TspDelegate => out.push(not_checked_at(
                r,
                "checkValidEnginesTSP",
                format!(
                    "TensorScalarPtr on {} is outside {legal}; the compiler delegates to checkValidEnginesTSP, whose rule is not public",
                    r.inst.engine
                ),
            )),
            EngineVerdict::Illegal => out.push(error_at(
                r,
                "checkValidEngines",
                Some(400),
                format!(
                    "validEngines: {} on {} is not legal at {}; legal engines {legal}{}",
                    r.inst.class,
                    r.inst.engine,
                    m.arch,
                    provenance(rule.engines.src())
                ),
            )),
        }
    }
}

/// `checkLegalPartitionAccess` (no assertion code: string diagnostics).
pub struct PartitionAccess;

impl Rule for PartitionAccess {
    rule_meta! {
        name: "checkLegalPartitionAccess",
        property: PartitionAccess,
        codes: [],
        summary: "SB/PSUM patterns stay within the memory's partitions; half-array classes start at 0 or 64 and never cross 64",
        source: "seed 000, shared primitives (checkLegalPartitionAccess)",
        project: "which classes call the half-array variant (TongaReduceMacroSymbolic only); applying the bound to every SB/PSUM operand of every class",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        let psum_parts = u64::from(m.arch.psum_geometry().partitions);
        let rule = driver(r.inst.class);
        for (dir, i, ap) in operands(r.inst) {
            let limit = match ap.mem {
                MemoryType::Sb => NUM_PARTITIONS,
                MemoryType::Psum => psum_parts,
                _ => continue,
            };
            for msg in check_partition_access(ap, rule.partitions, limit) {
                out.push(error_at(
                    r,
                    "checkLegalPartitionAccess",
                    None,
                    format!("{}: {msg}", operand(dir, i)),
                ));
            }
        }
    }
}

/// `checkDataType` (no assertion code; the compiler reports through `reportError`).
pub struct DataType;

impl Rule for DataType {
    rule_meta! {
        name: "checkDataType",
        property: DataType,
        codes: [],
        summary: "each operand's dtype is in the class's valid set for that operand",
        source: "seed 000, shared primitives (checkDataType: membership in the op class's valid-dtype sets)",
        project: "every valid-dtype set (the compiler keeps them in the BIR op classes, not public)",
        scope: Instruction,
    }
    fn check(&self, _m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        let rule = driver(r.inst.class).dtypes;
        for (dir, i, ap) in operands(r.inst) {
            let valid = if dir == Dir::Arg {
                rule.arg(i)
            } else {
                rule.outs
            };
            if !valid.contains(ap.dtype) {
                out.push(error_at(
                    r,
                    "checkDataType",
                    None,
                    format!(
                        "{} dtype {} is not valid for {}: valid {valid}{}",
                        operand(dir, i),
                        ap.dtype,
                        r.inst.class,
                        provenance(rule.src)
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::{Instruction, MemoryType, ATTR_SKIP_ENGINE_CHECK};
    use crate::l1::table::{ACT, ALL, DVE, POOL_DVE};
    use crate::l1::testutil::*;
    use crate::registry::Property;
    use tpbsim_isa::NumFormat;

    #[test]
    fn engine_gate_predicate() {
        use EngineType as E;
        let tt = InstClass::TensorTensor;
        assert_eq!(
            check_valid_engines(false, tt, E::Dve, POOL_DVE),
            EngineVerdict::Legal
        );
        assert_eq!(
            check_valid_engines(false, tt, E::Pe, POOL_DVE),
            EngineVerdict::Illegal
        );
        assert_eq!(
            check_valid_engines(false, tt, E::Unassigned, DVE),
            EngineVerdict::Legal
        );
        assert_eq!(
            check_valid_engines(false, tt, E::All, DVE),
            EngineVerdict::Legal
        );
        assert_eq!(
            check_valid_engines(false, tt, E::Pe, ALL),
            EngineVerdict::Legal
        );
        assert_eq!(
            check_valid_engines(true, tt, E::Pe, DVE),
            EngineVerdict::Legal
        );
        assert_eq!(
            check_valid_engines(false, InstClass::TensorScalarPtr, E::Pe, DVE),
            EngineVerdict::TspDelegate
        );
        assert_eq!(
            check_valid_engines(false, InstClass::Activation, E::Act, ACT),
            EngineVerdict::Legal
        );
    }

    #[test]
    fn engines_rule_400() {
        let ok = module(ArchLevel::CoreV4, vec![tensor_tensor("a", "b", "c")]);
        assert!(run(Property::ValidEngines, &ok).is_empty());
        let mut bad = tensor_tensor("a", "b", "c");
        bad.engine = EngineType::Pe;
        let m = module(ArchLevel::CoreV4, vec![bad]);
        let d = run(Property::ValidEngines, &m);
        assert_eq!(error_codes(&d), vec![Some(400)]);
        assert!(
            d[0].message.contains("legal engines {Pool, DVE}")
                && d[0].message.contains("project-defined"),
            "{}",
            d[0].message
        );
        assert_eq!(d[0].location.instruction.as_deref(), Some("0:TensorTensor"));
        assert_eq!(d[0].location.engine, Some(tpbsim_isa::Engine::Pe));
        // Seed-given set: no project-defined suffix.
        let pool = Instruction::new(InstClass::Pool, EngineType::Pool);
        let d = run(Property::ValidEngines, &module(ArchLevel::Gen3, vec![pool]));
        assert_eq!(error_codes(&d), vec![Some(400)]);
        assert!(
            !d[0].message.contains("project-defined"),
            "{}",
            d[0].message
        );
        // The function skip attribute.
        let mut m2 = m.clone();
        m2.functions[0]
            .attrs
            .insert(ATTR_SKIP_ENGINE_CHECK.into(), true.into());
        assert!(run(Property::ValidEngines, &m2).is_empty());
        // Rng picks per arch.
        let rng = Instruction::new(InstClass::Rng, EngineType::Pool);
        assert_eq!(
            error_codes(&run(
                Property::ValidEngines,
                &module(ArchLevel::Sunda, vec![rng.clone()])
            )),
            vec![Some(400)]
        );
        assert!(run(
            Property::ValidEngines,
            &module(ArchLevel::CoreV4, vec![rng])
        )
        .is_empty());
    }

    #[test]
    fn tsp_delegate_not_checked() {
        let tsp = Instruction::new(InstClass::TensorScalarPtr, EngineType::Dve);
        let d = run(
            Property::ValidEngines,
            &module(ArchLevel::CoreV4, vec![tsp]),
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].severity, crate::diag::Severity::NotChecked);
        assert_eq!(d[0].rule, "checkValidEnginesTSP");
    }

    #[test]
    fn arch_rule_366_367() {
        let w = driver(InstClass::MatmultMx).arch;
        assert_eq!(check_arch_level(ArchLevel::CoreV4, &w), None);
        assert_eq!(
            check_arch_level(ArchLevel::Gen3, &w).map(|x| x.0),
            Some(366)
        );
        let mx = Instruction::new(InstClass::MatmultMx, EngineType::Pe);
        assert_eq!(
            error_codes(&run(
                Property::ArchLevel,
                &module(ArchLevel::Gen3, vec![mx])
            )),
            vec![Some(366)]
        );
        let tonga = Instruction::new(InstClass::TongaReduceMacroSymbolic, EngineType::Pool);
        assert!(run(
            Property::ArchLevel,
            &module(ArchLevel::Inferentia, vec![tonga.clone()])
        )
        .is_empty());
        assert_eq!(
            error_codes(&run(
                Property::ArchLevel,
                &module(ArchLevel::Sunda, vec![tonga])
            )),
            vec![Some(367)]
        );
        let generic = Instruction::new(InstClass::Generic, EngineType::Sp);
        assert_eq!(
            error_codes(&run(
                Property::ArchLevel,
                &module(ArchLevel::Inferentia, vec![generic])
            )),
            vec![Some(366)]
        );
    }

    #[test]
    fn mem_rule_310() {
        let ok = module(ArchLevel::CoreV4, vec![tensor_tensor("a", "b", "c")]);
        assert!(run(Property::MemType, &ok).is_empty());
        let mut bad = tensor_tensor("a", "b", "c");
        bad.args[1].mem = MemoryType::Dram;
        let d = run(Property::MemType, &module(ArchLevel::CoreV4, vec![bad]));
        assert_eq!(error_codes(&d), vec![Some(310)]);
        assert!(
            d[0].message.starts_with("args[1] lies in DRAM"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn partition_rule() {
        let ok = module(ArchLevel::CoreV4, vec![tensor_tensor("a", "b", "c")]);
        assert!(run(Property::PartitionAccess, &ok).is_empty());
        let mut bad = tensor_tensor("a", "b", "c");
        bad.outs[0].start_partition = 1;
        let d = run(
            Property::PartitionAccess,
            &module(ArchLevel::CoreV4, vec![bad]),
        );
        assert_eq!(error_rules(&d), vec!["checkLegalPartitionAccess"]);
        assert!(
            d[0].message.contains("Pattern accesses > 128 partitions"),
            "{}",
            d[0].message
        );
        // Inferentia PSUM has 64 partitions.
        let act = Instruction::new(InstClass::Activation, EngineType::Act).with_args(vec![psum(
            "p",
            NumFormat::Float32,
            96,
            8,
        )]);
        assert!(run(
            Property::PartitionAccess,
            &module(ArchLevel::Sunda, vec![act.clone()])
        )
        .is_empty());
        assert_eq!(
            run(
                Property::PartitionAccess,
                &module(ArchLevel::Inferentia, vec![act])
            )
            .len(),
            1
        );
        // The half-array variant.
        let ap = sb("x", NumFormat::Float32, 32, 64, 1);
        assert_eq!(
            check_partition_access(&ap, PartitionRule::Bounds, 128),
            Vec::<String>::new()
        );
        let v = check_partition_access(&ap, PartitionRule::Halves, 128);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(check_partition_access(
            &sb("x", NumFormat::Float32, 64, 64, 1),
            PartitionRule::Halves,
            128
        )
        .is_empty());
    }

    #[test]
    fn half_array_crossing_at_the_boundary() {
        // From partition 0: 64 partitions end on the boundary, 65 cross it.
        let halves = |start, parts| {
            check_partition_access(
                &sb("x", NumFormat::Float32, start, parts, 1),
                PartitionRule::Halves,
                128,
            )
        };
        assert_eq!(halves(0, 64), Vec::<String>::new());
        let v = halves(0, 65);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("crosses 64th partition boundary"), "{v:?}");
        // From partition 64 nothing crosses; the bounds rule stops at 128.
        assert_eq!(halves(64, 64), Vec::<String>::new());
        assert_eq!(halves(64, 65).len(), 1);
        assert!(halves(64, 65)[0].contains("> 128 partitions"));
    }

    #[test]
    fn dtype_rule() {
        let ok = module(ArchLevel::CoreV4, vec![tensor_tensor("a", "b", "c")]);
        assert!(run(Property::DataType, &ok).is_empty());
        let mut bad = tensor_tensor("a", "b", "c");
        bad.args[0].dtype = NumFormat::Int64;
        let d = run(Property::DataType, &module(ArchLevel::CoreV4, vec![bad]));
        assert_eq!(error_rules(&d), vec!["checkDataType"]);
        assert!(
            d[0].message
                .starts_with("args[0] dtype int64 is not valid for TensorTensor"),
            "{}",
            d[0].message
        );
    }
}
