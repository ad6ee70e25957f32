//! L1 numeric boundary tests generated from the L1 driver table ([`super::table::driver`]):
//! every class is tried at the edges of its arch window and of its partition rule.
//!
//! * arch window `min..=max`: the module targeting `min` (and `max`) passes `checkArchLevel`,
//!   the level before `min` fails with 366 and the level after `max` with 367;
//! * partitions: an SB operand covering all `NUM_PARTITIONS` partitions passes and one more
//!   fails; a PSUM operand likewise at the level's PSUM partition count; a half-array class
//!   passes at 0..half and half..full and fails one partition past either edge (crossing the
//!   half, or starting off 0 / half).

use super::table::{driver, PartitionRule};
use super::testutil::{error_codes, module, psum, run, sb};
use crate::bir::{ArchLevel, EngineType, InstClass, Instruction, NUM_PARTITIONS};
use crate::registry::Property;
use tpbsim_isa::NumFormat;

fn inst(c: InstClass, args: Vec<crate::bir::AccessPattern>) -> Instruction {
    Instruction::new(c, EngineType::Pool).with_args(args)
}

/// `checkArchLevel` codes for class `c` on a module targeting `arch`.
fn arch_codes(c: InstClass, arch: ArchLevel) -> Vec<Option<u32>> {
    error_codes(&run(
        Property::ArchLevel,
        &module(arch, vec![inst(c, vec![])]),
    ))
}

#[test]
fn every_arch_window_holds_at_its_edges() {
    let levels = ArchLevel::ALL;
    let mut bounded = 0;
    for &c in InstClass::ALL {
        let w = driver(c).arch;
        if let Some(min) = w.min {
            bounded += 1;
            assert_eq!(arch_codes(c, min), vec![], "{c:?} at its minimum {min}");
            let i = levels.iter().position(|l| *l == min).expect("a level");
            if i > 0 {
                assert_eq!(
                    arch_codes(c, levels[i - 1]),
                    vec![Some(366)],
                    "{c:?} one level below its minimum {min}"
                );
            }
        }
        if let Some(max) = w.max {
            bounded += 1;
            assert_eq!(arch_codes(c, max), vec![], "{c:?} at its maximum {max}");
            let i = levels.iter().position(|l| *l == max).expect("a level");
            if let Some(&next) = levels.get(i + 1) {
                assert_eq!(
                    arch_codes(c, next),
                    vec![Some(367)],
                    "{c:?} one level above its maximum {max}"
                );
            }
        }
    }
    assert!(bounded > 10, "only {bounded} bounds");
}

/// Number of `checkLegalPartitionAccess` errors for class `c` with one operand.
fn partition_errors(c: InstClass, arch: ArchLevel, ap: crate::bir::AccessPattern) -> usize {
    run(
        Property::PartitionAccess,
        &module(arch, vec![inst(c, vec![ap])]),
    )
    .iter()
    .filter(|d| d.is_error())
    .count()
}

#[test]
fn every_partition_rule_holds_at_its_edges() {
    let dt = NumFormat::Float32;
    let full = NUM_PARTITIONS;
    let half = full / 2;
    let mut halves = 0;
    for &c in InstClass::ALL {
        let arch = ArchLevel::CoreV4;
        let at = |start, parts| partition_errors(c, arch, sb("x", dt, start, parts, 1));
        match driver(c).partitions {
            PartitionRule::Bounds => {
                assert_eq!(at(0, full), 0, "{c:?}: all {full} SB partitions");
                assert_eq!(at(0, full + 1), 1, "{c:?}: {} SB partitions", full + 1);
                assert_eq!(at(1, full), 1, "{c:?}: 1..{} SB partitions", full + 1);
                assert_eq!(at(1, full - 1), 0, "{c:?}: 1..{full} SB partitions");
            }
            PartitionRule::Halves => {
                halves += 1;
                assert_eq!(at(0, half), 0, "{c:?}: 0..{half}");
                assert_eq!(
                    at(0, half + 1),
                    1,
                    "{c:?}: 0..{} crosses the half",
                    half + 1
                );
                assert_eq!(at(half, half), 0, "{c:?}: {half}..{full}");
                assert_eq!(at(half, half + 1), 1, "{c:?}: past {full}");
                assert_eq!(at(half - 1, 1), 1, "{c:?}: starts at {}", half - 1);
                assert_eq!(at(half + 1, 1), 1, "{c:?}: starts at {}", half + 1);
            }
        }
        // PSUM: the level's partition count.
        for level in ArchLevel::ALL {
            let parts = u64::from(level.psum_geometry().partitions);
            let p = |n| partition_errors(c, level, psum("p", dt, n, 1));
            if driver(c).partitions == PartitionRule::Bounds {
                assert_eq!(p(parts), 0, "{c:?} {level}: {parts} PSUM partitions");
                assert_eq!(
                    p(parts + 1),
                    1,
                    "{c:?} {level}: {} PSUM partitions",
                    parts + 1
                );
            }
        }
    }
    assert!(halves > 0, "no half-array class");
}
