//! Semantics of the SP/control bundles that do not touch tensors: branch conditions and
//! targets, and the semaphore range clear. Field values come from the decoded bundle.

use super::sync::SyncState;
use tpbsim_isa::NumFormat;

/// Number of registers per engine.
pub const NUM_REGS: usize = 64;

/// Why a control bundle's fields do not describe an action the machine can take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// A branch comparison in a number format the model does not compare in.
    #[error("branch comparison in {0} is not simulated")]
    CompareFormat(&'static str),
    /// A `cmp_op` outside 0..=6 and 9..=14.
    #[error("unknown branch compare op {0}")]
    CompareOp(u8),
    /// A `target_mode` other than 1, 3 and 4.
    #[error("unknown branch target mode {0}")]
    TargetMode(u8),
    /// A branch target that is not a bundle boundary.
    #[error("branch target byte offset {0} is not a multiple of 64")]
    Misaligned(i64),
    /// A branch target before the stream or past its end.
    #[error("branch target byte offset {target} is outside the stream of {len} bundles")]
    OutsideStream {
        /// The target's byte offset.
        target: i64,
        /// The stream's length in bundles.
        len: usize,
    },
    /// A range clear whose first semaphore is past its last.
    #[error("semaphore range {first}..={last} is empty")]
    EmptyRange {
        /// First semaphore of the range.
        first: u8,
        /// Last semaphore of the range.
        last: u8,
    },
    /// A range-clear `mode` other than 1 and 2.
    #[error("unknown range-clear mode {0}")]
    RangeClearMode(u8),
}

impl From<ControlError> for String {
    fn from(e: ControlError) -> String {
        e.to_string()
    }
}

/// Compare two register values at the width and signedness of `format`.
fn compare(format: NumFormat, op: u8, a: u32, b: u32) -> Result<bool, ControlError> {
    use std::cmp::Ordering;
    let ord = match format {
        NumFormat::Int8 => (a as u8 as i8).cmp(&(b as u8 as i8)),
        NumFormat::Int16 => (a as u16 as i16).cmp(&(b as u16 as i16)),
        NumFormat::Int32 => (a as i32).cmp(&(b as i32)),
        NumFormat::Uint8 => (a as u8).cmp(&(b as u8)),
        NumFormat::Uint16 => (a as u16).cmp(&(b as u16)),
        NumFormat::Uint32 => a.cmp(&b),
        NumFormat::Float32 => match f32::from_bits(a).partial_cmp(&f32::from_bits(b)) {
            Some(o) => o,
            // Every ordered comparison with NaN is false; NE is true.
            None => return Ok(op == 4),
        },
        other => return Err(ControlError::CompareFormat(other.name())),
    };
    Ok(match op {
        1 => ord == Ordering::Less,
        2 => ord != Ordering::Greater,
        3 => ord == Ordering::Equal,
        4 => ord != Ordering::Equal,
        5 => ord != Ordering::Less,
        6 => ord == Ordering::Greater,
        _ => return Err(ControlError::CompareOp(op)),
    })
}

/// Whether a CompareBranch is taken: `cmp_op` 0 always; 1..=6 register vs immediate; 9..=14
/// register vs register (LT, LE, EQ, NE, GE, GT).
pub fn branch_taken(
    cmp_op: u8,
    format: NumFormat,
    reg0: u32,
    imm: u32,
    reg1: u32,
) -> Result<bool, ControlError> {
    match cmp_op {
        0 => Ok(true),
        1..=6 => compare(format, cmp_op, reg0, imm),
        9..=14 => compare(format, cmp_op - 8, reg0, reg1),
        _ => Err(ControlError::CompareOp(cmp_op)),
    }
}

/// Bundle index a taken branch goes to. `mode`: 1 REGISTER (absolute byte offset in
/// `reg`), 3 REL_IMM (signed 32-bit byte offset `imm` from this bundle), 4 REL_REGISTER (signed
/// byte offset in `reg`). The target must be bundle-aligned and inside the stream (`len` =
/// one past the end is allowed).
pub fn branch_target(
    pc: usize,
    len: usize,
    mode: u8,
    imm: u64,
    reg: u32,
) -> Result<usize, ControlError> {
    let here = pc as i64 * 64;
    let target = match mode {
        1 => reg as i64,
        3 => here + imm as u32 as i32 as i64,
        4 => here + reg as i32 as i64,
        _ => return Err(ControlError::TargetMode(mode)),
    };
    if target % 64 != 0 {
        return Err(ControlError::Misaligned(target));
    }
    if target < 0 || target / 64 > len as i64 {
        return Err(ControlError::OutsideStream { target, len });
    }
    Ok((target / 64) as usize)
}

/// EventSemaphoreRangeClear: mode 1 zeroes semaphores `first..=last`; mode 2 zeroes the
/// semaphores whose bit is set in the 256-bit little-endian `mask`.
pub fn range_clear(
    sync: &mut SyncState,
    mode: u8,
    first: u8,
    last: u8,
    mask: &[u8; 32],
) -> Result<(), ControlError> {
    match mode {
        1 => {
            if first > last {
                return Err(ControlError::EmptyRange { first, last });
            }
            sync.sems[first as usize..=last as usize].fill(0);
        }
        2 => {
            for (i, s) in sync.sems.iter_mut().enumerate() {
                if mask[i >> 3] >> (i & 7) & 1 == 1 {
                    *s = 0;
                }
            }
        }
        _ => return Err(ControlError::RangeClearMode(mode)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_at_dtype_width() {
        // -1 as int32 < 1; as uint32 it is the largest.
        assert!(branch_taken(1, NumFormat::Int32, u32::MAX, 1, 0).unwrap());
        assert!(!branch_taken(1, NumFormat::Uint32, u32::MAX, 1, 0).unwrap());
        // int8 looks only at the low byte: 0x1FF is -1.
        assert!(branch_taken(3, NumFormat::Int8, 0x1FF, 0xFF, 0).unwrap());
        assert!(branch_taken(13, NumFormat::Int32, 5, 0, 5).unwrap()); // GE reg
        assert!(!branch_taken(14, NumFormat::Int32, 5, 0, 5).unwrap()); // GT reg
        assert!(branch_taken(0, NumFormat::Int64, 0, 0, 0).unwrap());
        let nan = f32::NAN.to_bits();
        assert!(!branch_taken(3, NumFormat::Float32, nan, nan, 0).unwrap());
        assert!(branch_taken(4, NumFormat::Float32, nan, nan, 0).unwrap());
        assert_eq!(
            branch_taken(7, NumFormat::Int32, 0, 0, 0),
            Err(ControlError::CompareOp(7))
        );
        let e = branch_taken(1, NumFormat::Bfloat16, 0, 0, 0).unwrap_err();
        assert!(matches!(e, ControlError::CompareFormat(_)), "{e}");
    }

    #[test]
    fn each_comparison_against_an_immediate_and_a_register() {
        // (op, taken for 1 vs 2, 2 vs 2, 3 vs 2): LT, LE, EQ, NE, GE, GT.
        let table = [
            (1, [true, false, false]),
            (2, [true, true, false]),
            (3, [false, true, false]),
            (4, [true, false, true]),
            (5, [false, true, true]),
            (6, [false, false, true]),
        ];
        for f in [
            NumFormat::Int8,
            NumFormat::Int16,
            NumFormat::Int32,
            NumFormat::Uint8,
            NumFormat::Uint16,
            NumFormat::Uint32,
            NumFormat::Float32,
        ] {
            let v = |x: u32| {
                if f == NumFormat::Float32 {
                    (x as f32).to_bits()
                } else {
                    x
                }
            };
            for (op, want) in table {
                for (a, w) in [1, 2, 3].into_iter().zip(want) {
                    assert_eq!(
                        branch_taken(op, f, v(a), v(2), 0),
                        Ok(w),
                        "{f:?} op {op}: {a} vs 2"
                    );
                    assert_eq!(
                        branch_taken(op + 8, f, v(a), 0, v(2)),
                        Ok(w),
                        "{f:?} op {}: {a} vs 2",
                        op + 8
                    );
                }
            }
        }
        // Codes 7, 8 and past 14 compare nothing.
        for op in [7, 8, 15, 255] {
            assert_eq!(
                branch_taken(op, NumFormat::Int32, 0, 0, 0),
                Err(ControlError::CompareOp(op))
            );
        }
    }

    #[test]
    fn targets() {
        assert_eq!(branch_target(5, 10, 3, (-128i32) as u32 as u64, 0), Ok(3));
        assert_eq!(branch_target(5, 10, 3, 320, 0), Ok(10));
        assert_eq!(
            branch_target(5, 10, 3, 384, 0),
            Err(ControlError::OutsideStream {
                target: 704,
                len: 10
            })
        );
        let e = branch_target(5, 10, 3, 32, 0).unwrap_err();
        assert_eq!(e, ControlError::Misaligned(352));
        assert!(e.to_string().contains("multiple of 64"), "{e}");
        assert_eq!(
            branch_target(0, 10, 3, (-64i32) as u32 as u64, 0),
            Err(ControlError::OutsideStream {
                target: -64,
                len: 10
            })
        );
        assert_eq!(branch_target(7, 10, 1, 0, 128), Ok(2));
        assert_eq!(branch_target(7, 10, 4, 0, (-64i32) as u32), Ok(6));
        assert_eq!(
            branch_target(7, 10, 2, 0, 0),
            Err(ControlError::TargetMode(2))
        );
    }

    #[test]
    fn range_clear_modes() {
        let mut s = SyncState::default();
        s.sems.fill(7);
        range_clear(&mut s, 1, 3, 5, &[0; 32]).unwrap();
        assert_eq!(&s.sems[2..7], &[7, 0, 0, 0, 7]);
        let mut mask = [0u8; 32];
        mask[31] = 0x80; // semaphore 255
        mask[0] = 0x01; // semaphore 0
        range_clear(&mut s, 2, 0, 0, &mask).unwrap();
        assert_eq!((s.sems[0], s.sems[1], s.sems[255]), (0, 7, 0));
        assert_eq!(
            range_clear(&mut s, 1, 5, 3, &mask),
            Err(ControlError::EmptyRange { first: 5, last: 3 })
        );
        assert_eq!(
            range_clear(&mut s, 0, 0, 0, &mask),
            Err(ControlError::RangeClearMode(0))
        );
    }
}
