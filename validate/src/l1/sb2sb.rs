//! `InstGPSIMDSB2SB::verify` (seed 002): a thin gate, then the compatibility checks C1–C8 of
//! `isCompatible`, which stop at the first failure as the compiler's do.

use crate::bir::{AccessPattern, ArchLevel, InstClass, InstRef, Instruction, MemoryType, Module};
use crate::diag::Diagnostic;
use crate::registry::Rule;

use super::{error_at, not_checked_at};

/// Per-partition byte budget of a GPSIMD SB→SB transfer (`MaxBytesPerPartition`).
pub const MAX_BYTES_PER_PARTITION: u64 = 1024;

/// `getEffectiveBytesPerPartition`: each element occupies a 32-bit lane, so 8-bit containers
/// are charged ×4 and 16-bit ×2.
pub fn effective_bytes_per_partition(ap: &AccessPattern) -> u64 {
    let b = ap.dtype.container_bytes() as u64;
    let factor = match b {
        1 => 4,
        2 => 2,
        _ => 1,
    };
    ap.num_elements_per_partition()
        .saturating_mul(b)
        .saturating_mul(factor)
}

/// A finding of the SB2SB verify: which check, its message, and whether it is "not checked".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sb2SbFinding {
    /// `verify:71`, `verify:74` or `C1`..`C8`.
    pub check: &'static str,
    /// Predicate and values.
    pub message: String,
    /// The check could not be decided.
    pub not_checked: bool,
}

fn fail(check: &'static str, message: String) -> Sb2SbFinding {
    Sb2SbFinding {
        check,
        message,
        not_checked: false,
    }
}

/// `verify` then `isCompatible`: at most one failure (the first), plus a "not checked" C1 when
/// the context constant is absent.
pub fn check_sb2sb(i: &Instruction, arch: ArchLevel) -> Vec<Sb2SbFinding> {
    let mut v = Vec::new();
    if i.engine.ordinal() > 1 {
        v.push(fail("verify:71", format!("GPSIMDSB2SB.cpp:71: the engine field must be 0 or 1 (Unassigned or Pool), found {}", i.engine)));
        return v;
    }
    let (Some(ifmap), Some(dst)) = (i.args.first(), i.outs.first()) else {
        v.push(fail(
            "verify:74",
            format!(
                "GPSIMDSB2SB.cpp:74: needs an input and an output, found {} and {}",
                i.args.len(),
                i.outs.len()
            ),
        ));
        return v;
    };
    match i.sb2sb().and_then(|f| f.ctx) {
        None => v.push(Sb2SbFinding {
            check: "C1",
            message: "C1 (isCompatible:21): no ctx given; ctx != 2 is not checked".into(),
            not_checked: true,
        }),
        Some(c) if c != 2 => {
            v.push(fail(
                "C1",
                format!("C1 (isCompatible:21): ctx must be 2, found {c}"),
            ));
            return v;
        }
        Some(_) => {}
    }
    let first_failure = if arch < ArchLevel::Gen3 {
        Some(fail(
            "C2",
            format!(
                "C2 (isCompatible:25): GPSIMD SB2SB needs gen3 or later, module targets {arch}"
            ),
        ))
    } else if ifmap.dtype != dst.dtype {
        Some(fail(
            "C3",
            format!(
                "C3 (isCompatible:29): ifmap dtype {} != dst dtype {}",
                ifmap.dtype, dst.dtype
            ),
        ))
    } else if ifmap.bytes_per_partition() != dst.bytes_per_partition() {
        Some(fail(
            "C4",
            format!(
                "C4 (isCompatible:33): bytes per partition differ: ifmap {} × {} B vs dst {} × {} B",
                ifmap.num_elements_per_partition(),
                ifmap.dtype.container_bytes(),
                dst.num_elements_per_partition(),
                dst.dtype.container_bytes()
            ),
        ))
    } else if let Some((name, ap)) = [("ifmap", ifmap), ("dst", dst)]
        .into_iter()
        .find(|(_, a)| !(2..=5).contains(&a.num_dims()))
    {
        Some(fail(
            "C5",
            format!(
                "C5 (isCompatible:40): {name} has {} dimensions, expected 2..=5",
                ap.num_dims()
            ),
        ))
    } else if let Some((name, ap)) = [("ifmap", ifmap), ("dst", dst)]
        .into_iter()
        .find(|(_, a)| a.mem != MemoryType::Sb)
    {
        Some(fail(
            "C6",
            format!(
                "C6 (isCompatible:43): {name} lies in {}, both must be SB",
                ap.mem
            ),
        ))
    } else if let Some((name, _)) = [("ifmap", ifmap), ("dst", dst)]
        .into_iter()
        .find(|(_, a)| a.indirect)
    {
        Some(fail(
            "C7",
            format!(
                "C7 (isCompatible:46): {name} is not a plain physical access pattern (indirect)"
            ),
        ))
    } else {
        [("ifmap", ifmap), ("dst", dst)]
            .into_iter()
            .map(|(name, ap)| (name, effective_bytes_per_partition(ap)))
            .find(|(_, b)| *b > MAX_BYTES_PER_PARTITION)
            .map(|(name, b)| {
                fail(
                    "C8",
                    format!("C8 (isCompatible:52): {name} needs {b} effective bytes per partition (8-bit ×4, 16-bit ×2) > {MAX_BYTES_PER_PARTITION}"),
                )
            })
    };
    v.extend(first_failure);
    v
}

/// `InstGPSIMDSB2SB::verify` with `isCompatible` C1–C8 (no assertion codes: the checks are
/// named C1..C8 by their order in the body).
pub struct GpsimdSb2Sb;

impl Rule for GpsimdSb2Sb {
    rule_meta! {
        name: "GPSIMDSB2SB::verify",
        property: GpsimdSb2Sb,
        codes: [],
        summary: "GPSIMDSB2SB on Pool/Unassigned with an input and an output; then ctx == 2, gen3+, same dtype and bytes per partition, 2..5 dims, both SB, plain physical patterns, <= 1024 effective bytes per partition",
        source: "seed 002, GPSIMD-SB2SB (InstGPSIMDSB2SB::verify, GPSIMDSB2SB.cpp:71/74; isCompatible C1-C8)",
        project: "the meaning of ctx (C1) is not public: absent ctx is reported as not checked",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        if r.inst.class != InstClass::GpsimdSb2Sb {
            return;
        }
        for f in check_sb2sb(r.inst, m.arch) {
            let rule = if f.check.starts_with("verify") {
                "GPSIMDSB2SB::verify"
            } else {
                "isCompatible"
            };
            out.push(if f.not_checked {
                not_checked_at(r, rule, f.message)
            } else {
                error_at(r, rule, None, f.message)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::{ClassFields, Dim, EngineType, Sb2SbFields};
    use crate::l1::testutil::*;
    use crate::registry::Property;
    use tpbsim_isa::NumFormat;

    fn sb2sb() -> Instruction {
        let mut i = Instruction::new(InstClass::GpsimdSb2Sb, EngineType::Pool)
            .with_args(vec![sb("in", NumFormat::Bfloat16, 0, 128, 256)])
            .with_outs(vec![sb("out", NumFormat::Bfloat16, 0, 128, 256)]);
        i.fields = ClassFields::Sb2Sb(Sb2SbFields { ctx: Some(2) });
        i
    }

    fn checks(i: &Instruction, arch: ArchLevel) -> Vec<&'static str> {
        check_sb2sb(i, arch)
            .into_iter()
            .filter(|f| !f.not_checked)
            .map(|f| f.check)
            .collect()
    }

    #[test]
    fn effective_bytes() {
        assert_eq!(
            effective_bytes_per_partition(&sb("a", NumFormat::Uint8, 0, 1, 256)),
            1024
        );
        assert_eq!(
            effective_bytes_per_partition(&sb("a", NumFormat::Bfloat16, 0, 1, 256)),
            1024
        );
        assert_eq!(
            effective_bytes_per_partition(&sb("a", NumFormat::Float32, 0, 1, 256)),
            1024
        );
        assert_eq!(
            effective_bytes_per_partition(&sb("a", NumFormat::Uint8, 0, 1, 257)),
            1028
        );
        assert_eq!(
            effective_bytes_per_partition(&sb("a", NumFormat::Int64, 0, 1, 128)),
            1024
        );
    }

    #[test]
    fn legal_and_each_check_alone() {
        assert!(check_sb2sb(&sb2sb(), ArchLevel::Gen3).is_empty());
        assert!(check_sb2sb(&sb2sb(), ArchLevel::CoreV4).is_empty());
        let mut cases: Vec<(&str, Instruction, ArchLevel)> = Vec::new();
        let mut i = sb2sb();
        i.engine = EngineType::Dve;
        cases.push(("verify:71", i, ArchLevel::CoreV4));
        let mut i = sb2sb();
        i.outs.clear();
        cases.push(("verify:74", i, ArchLevel::CoreV4));
        let mut i = sb2sb();
        i.fields = ClassFields::Sb2Sb(Sb2SbFields { ctx: Some(1) });
        cases.push(("C1", i, ArchLevel::CoreV4));
        cases.push(("C2", sb2sb(), ArchLevel::Sunda));
        let mut i = sb2sb();
        i.outs[0].dtype = NumFormat::Float16;
        cases.push(("C3", i, ArchLevel::CoreV4));
        let mut i = sb2sb();
        i.outs[0].pattern[0].num = 128;
        cases.push(("C4", i, ArchLevel::CoreV4));
        let mut i = sb2sb();
        for ap in [&mut i.args[0], &mut i.outs[0]] {
            ap.pattern = vec![
                Dim { step: 128, num: 1 },
                Dim { step: 64, num: 1 },
                Dim { step: 32, num: 1 },
                Dim { step: 16, num: 1 },
                Dim { step: 1, num: 256 },
            ];
        }
        cases.push(("C5", i, ArchLevel::CoreV4));
        let mut i = sb2sb();
        i.outs[0].mem = MemoryType::Psum;
        cases.push(("C6", i, ArchLevel::CoreV4));
        let mut i = sb2sb();
        i.args[0].indirect = true;
        cases.push(("C7", i, ArchLevel::CoreV4));
        let mut i = sb2sb();
        i.args[0].pattern[0].num = 512;
        i.outs[0].pattern[0].num = 512;
        cases.push(("C8", i, ArchLevel::CoreV4));
        for (want, inst, arch) in cases {
            assert_eq!(checks(&inst, arch), vec![want], "{want}");
        }
    }

    #[test]
    fn absent_ctx_not_checked_and_rule_names() {
        let mut i = sb2sb();
        i.fields = ClassFields::Sb2Sb(Sb2SbFields { ctx: None });
        let d = run(Property::GpsimdSb2Sb, &module(ArchLevel::CoreV4, vec![i]));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].severity, crate::diag::Severity::NotChecked);
        let mut i = sb2sb();
        i.args[0].dtype = NumFormat::Float16;
        let d = run(Property::GpsimdSb2Sb, &module(ArchLevel::CoreV4, vec![i]));
        assert_eq!(error_rules(&d), vec!["isCompatible"]);
        assert!(d[0].message.starts_with("C3 "), "{}", d[0].message);
        let mut i = sb2sb();
        i.engine = EngineType::Act;
        assert_eq!(
            error_rules(&run(
                Property::GpsimdSb2Sb,
                &module(ArchLevel::CoreV4, vec![i])
            )),
            vec!["GPSIMDSB2SB::verify"]
        );
    }
}
