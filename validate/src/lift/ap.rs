//! Descriptors ↔ access patterns (facts §3).
//!
//! A TENSORnD / MEM_PATTERNnD holds an ADDR4 and `n` (step, count) pairs, innermost first; the
//! partition dimension is not a pair but the ADDR4's partition plus the op's active-partition
//! byte. An access pattern lists its free dimensions outermost first, so lifting reverses the
//! pairs and drops the trailing (outermost) filler pairs `(step 1, count 1)`; lowering pads with
//! them again. Any other pair, including a count-1 pair with another step, is kept, so the
//! conversion is exact both ways.
//!
//! An immediate ADDR4 in the PSUM window (`(addr − 0x2000000) ≤ 0x3FFFFF`) is PSUM partition
//! `(addr − base) / 32 KiB`, byte `(addr − base) % 32 KiB` (banks included); any other immediate
//! is SBUF partition `addr / stride`, byte `addr % stride` (stride 256 KiB, 1 MiB on v5). The
//! byte offset becomes an element offset in the operand's dtype and must be aligned to it.
//! Lifted patterns name the buffers `sbuf` and `psum` (one per physical memory, so that the
//! aliasing checks see every overlap).
//!
//! An ADDR4 that is not a plain immediate (register, shape-register or indirect markers) keeps
//! its raw word: the pattern is `indirect`, in SB, on the buffer
//! `addr4:0x<word>`, at partition 0 and offset 0 (the real location is decided at run time).
//!
//! The v5 MXTENSOR_V2 marker (byte-3 bit 0) is not treated as a marker: with v5's 1 MiB
//! partition stride that bit is partition bit 4 of every immediate SBUF address, and the
//! MXTENSOR_V2 union arm is known from the header only. `project-defined` reading.

use tpbsim_isa::geometry::Geometry;
use tpbsim_isa::{Addr4, Gen};

use crate::bir::{AccessPattern, Dim, MemoryType};
use tpbsim_isa::NumFormat;

/// Buffer name of lifted SBUF patterns.
pub const SBUF_BUFFER: &str = "sbuf";
/// Buffer name of lifted PSUM patterns.
pub const PSUM_BUFFER: &str = "psum";
/// Prefix of the buffer name that keeps a non-immediate ADDR4 word.
pub const RAW_ADDR_PREFIX: &str = "addr4:";

/// A descriptor's parts as read from a bundle: address, steps and counts (innermost first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Desc {
    /// Address word.
    pub addr: Addr4,
    /// Steps in elements, innermost first.
    pub step: Vec<i16>,
    /// Counts, innermost first.
    pub num: Vec<u16>,
}

/// Where an ADDR4 points: memory, buffer, start partition, element offset, indirect.
pub(crate) struct Place {
    pub mem: MemoryType,
    pub buffer: String,
    pub partition: u64,
    pub offset: i64,
    pub indirect: bool,
}

/// Why an address word or access pattern does not convert.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApError {
    /// The address is not a whole number of elements into its partition.
    #[error("address {addr:#x} ({mem} partition {partition}, byte {byte:#x}) is not aligned to {dtype} ({size} bytes)")]
    Misaligned {
        /// The address.
        addr: u32,
        /// Its memory.
        mem: MemoryType,
        /// Its partition.
        partition: u32,
        /// Its byte within the partition.
        byte: u32,
        /// The element type.
        dtype: NumFormat,
        /// Bytes per element.
        size: u32,
    },
    /// An `addr4:` buffer name without a `0x` word.
    #[error("buffer `{0}` does not hold a 0x-prefixed ADDR4 word")]
    RawWord(String),
    /// An indirect pattern on a named buffer.
    #[error("an indirect pattern has no encodable address (lifted indirect patterns name their ADDR4 word as `{RAW_ADDR_PREFIX}0x…`)")]
    Indirect,
    /// The byte offset leaves the partition's address window.
    #[error("{} byte offset {byte} is outside a partition's {window:#x}-byte {}", if *.psum { "PSUM" } else { "SB" }, if *.psum { "window" } else { "address window" })]
    OutsideWindow {
        /// PSUM (else SB).
        psum: bool,
        /// The byte offset.
        byte: i128,
        /// The partition's window size.
        window: u64,
    },
    /// Memory without an on-chip address.
    #[error("{0} has no on-chip address (only SB and PSUM operands are encoded)")]
    NotOnChip(MemoryType),
    /// The partition is beyond the 29-bit address.
    #[error("{mem} partition {partition} does not fit the 29-bit address")]
    TooFar {
        /// The memory.
        mem: MemoryType,
        /// The partition.
        partition: i128,
    },
    /// The address reads back as another place (an SB partition reaching into the PSUM window).
    #[error("{mem} partition {partition} byte {byte:#x} encodes as {addr:#x}, which reads back as {back_mem} partition {back_partition}")]
    ReadsBack {
        /// The memory.
        mem: MemoryType,
        /// The partition.
        partition: i128,
        /// The byte offset.
        byte: i128,
        /// The encoded address.
        addr: i128,
        /// The memory it reads back as.
        back_mem: MemoryType,
        /// The partition it reads back as.
        back_partition: u64,
    },
    /// More free dimensions than the descriptor has pairs.
    #[error("{found} free dimensions do not fit a {dims}-dimensional descriptor")]
    Dims {
        /// Free dimensions of the pattern.
        found: usize,
        /// Pairs of the descriptor.
        dims: usize,
    },
    /// A step outside i16.
    #[error("step {0} does not fit the signed 16-bit step field")]
    Step(i64),
    /// A count outside u16.
    #[error("count {0} does not fit the 16-bit count field")]
    Count(u64),
    /// An MX step sign byte other than 0x01 / 0xFF.
    #[error("MX step sign {0:#04x} is neither 0x01 nor 0xFF")]
    MxStepSign(u8),
    /// An MX K that is not a multiple of 4.
    #[error("MX K = {0} is not a whole number of x4 containers")]
    MxK(u16),
    /// An MX data pattern with several free dimensions.
    #[error("an MX data pattern has one free dimension, not {0}")]
    MxDims(usize),
    /// An MX data pattern stepping by other than ±1.
    #[error("an MX data pattern steps by +1 or -1, not {0}")]
    MxStep(i64),
    /// Too many x4 containers for the K field.
    #[error("{0} x4 containers do not fit the 16-bit K field")]
    MxContainers(u64),
}

/// True when the address word is a plain immediate (no register / indirect marker bits).
pub(crate) fn is_plain(a: Addr4) -> bool {
    a.byte3() & 0xE0 == 0
}

/// Read an address word as a place for elements of `dtype`.
pub(crate) fn place(a: Addr4, dtype: NumFormat, gen: Gen) -> Result<Place, ApError> {
    if !is_plain(a) {
        return Ok(Place {
            mem: MemoryType::Sb,
            buffer: format!("{RAW_ADDR_PREFIX}{:#010x}", a.0),
            partition: 0,
            offset: 0,
            indirect: true,
        });
    }
    let g = Geometry::of(gen);
    let addr = a.address();
    let (mem, buffer, (p, byte)) = if g.is_psum(addr) {
        (MemoryType::Psum, PSUM_BUFFER, g.psum_split(addr))
    } else {
        (MemoryType::Sb, SBUF_BUFFER, g.sbuf_split(addr))
    };
    let size = dtype.container_bytes() as u32;
    if byte % size != 0 {
        return Err(ApError::Misaligned {
            addr,
            mem,
            partition: p,
            byte,
            dtype,
            size,
        });
    }
    Ok(Place {
        mem,
        buffer: buffer.to_string(),
        partition: p as u64,
        offset: (byte / size) as i64,
        indirect: false,
    })
}

/// The address word of a pattern's first element.
pub(crate) fn address_of(ap: &AccessPattern, gen: Gen) -> Result<Addr4, ApError> {
    if let Some(h) = ap.buffer.strip_prefix(RAW_ADDR_PREFIX) {
        let word = h
            .strip_prefix("0x")
            .and_then(|x| u32::from_str_radix(x, 16).ok())
            .ok_or_else(|| ApError::RawWord(ap.buffer.clone()))?;
        return Ok(Addr4(word));
    }
    if ap.indirect {
        return Err(ApError::Indirect);
    }
    let g = Geometry::of(gen);
    let size = ap.dtype.container_bytes() as i128;
    let byte = ap.offset as i128 * size;
    let p = ap.start_partition as i128;
    let addr: i128 = match ap.mem {
        MemoryType::Sb => {
            if byte < 0 || byte >= g.sbuf_partition_stride as i128 {
                return Err(ApError::OutsideWindow {
                    psum: false,
                    byte,
                    window: g.sbuf_partition_stride as u64,
                });
            }
            p * g.sbuf_partition_stride as i128 + byte
        }
        MemoryType::Psum => {
            if byte < 0 || byte >= g.psum_partition_stride as i128 {
                return Err(ApError::OutsideWindow {
                    psum: true,
                    byte,
                    window: g.psum_partition_stride as u64,
                });
            }
            g.psum_base as i128 + p * g.psum_partition_stride as i128 + byte
        }
        other => return Err(ApError::NotOnChip(other)),
    };
    if addr < 0 || addr > Addr4::ADDR_MASK as i128 {
        return Err(ApError::TooFar {
            mem: ap.mem,
            partition: p,
        });
    }
    let a = Addr4(addr as u32);
    // The word must read back as the same place (an SB partition may not reach into the PSUM
    // window, nor a PSUM one beyond it).
    let back = place(a, ap.dtype, gen)?;
    if back.mem != ap.mem || back.partition != ap.start_partition || back.offset != ap.offset {
        return Err(ApError::ReadsBack {
            mem: ap.mem,
            partition: p,
            byte,
            addr,
            back_mem: back.mem,
            back_partition: back.partition,
        });
    }
    Ok(a)
}

/// Lift a descriptor to an access pattern of `partitions` partitions of `dtype`.
pub(crate) fn lift_desc(
    d: &Desc,
    dtype: NumFormat,
    partitions: u64,
    gen: Gen,
) -> Result<AccessPattern, ApError> {
    let pl = place(d.addr, dtype, gen)?;
    let mut n = d.step.len();
    while n > 0 && d.step[n - 1] == 1 && d.num[n - 1] == 1 {
        n -= 1;
    }
    let pattern = (0..n)
        .rev()
        .map(|i| Dim {
            step: d.step[i] as i64,
            num: d.num[i] as u64,
        })
        .collect();
    Ok(AccessPattern {
        mem: pl.mem,
        buffer: pl.buffer,
        dtype,
        start_partition: pl.partition,
        partitions,
        pattern,
        offset: pl.offset,
        indirect: pl.indirect,
    })
}

/// Lower an access pattern to a descriptor of `dims` pairs.
pub(crate) fn lower_desc(ap: &AccessPattern, dims: usize, gen: Gen) -> Result<Desc, ApError> {
    if ap.pattern.len() > dims {
        return Err(ApError::Dims {
            found: ap.pattern.len(),
            dims,
        });
    }
    let addr = address_of(ap, gen)?;
    let mut step = vec![1i16; dims];
    let mut num = vec![1u16; dims];
    for (i, d) in ap.pattern.iter().rev().enumerate() {
        step[i] = i16::try_from(d.step).map_err(|_| ApError::Step(d.step))?;
        num[i] = u16::try_from(d.num).map_err(|_| ApError::Count(d.num))?;
    }
    Ok(Desc { addr, step, num })
}

/// The MX descriptor parts of one operand (data + scales).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MxDesc {
    pub data: Addr4,
    pub scale: Addr4,
    pub k: u16,
    pub step_sign: u8,
}

/// Lift an MXMEM_PATTERN1D to (data, scales). The data pattern is one dimension of `k / 4`
/// x4 containers stepping by the sign byte (+1 for 0x01, −1 for 0xFF); the scales are one E8M0
/// byte per container per 8 data partitions (`[P/8, K/4]`, facts §9.4), starting where the
/// scale ADDR4 points. `project-defined` reading: the scale-lane interleave is not modelled.
pub(crate) fn lift_mx(
    d: &MxDesc,
    dtype: NumFormat,
    partitions: u64,
    gen: Gen,
) -> Result<(AccessPattern, AccessPattern), ApError> {
    let step = match d.step_sign {
        0x01 => 1,
        0xFF => -1,
        s => return Err(ApError::MxStepSign(s)),
    };
    if !d.k.is_multiple_of(4) {
        return Err(ApError::MxK(d.k));
    }
    let containers = (d.k / 4) as u64;
    let data = place(d.data, dtype, gen)?;
    let scale = place(d.scale, NumFormat::Float8E8m0fnu, gen)?;
    let mk = |pl: Place, dtype: NumFormat, parts: u64, step: i64| AccessPattern {
        mem: pl.mem,
        buffer: pl.buffer,
        dtype,
        start_partition: pl.partition,
        partitions: parts,
        pattern: vec![Dim {
            step,
            num: containers,
        }],
        offset: pl.offset,
        indirect: pl.indirect,
    };
    Ok((
        mk(data, dtype, partitions, step),
        mk(scale, NumFormat::Float8E8m0fnu, partitions.div_ceil(8), 1),
    ))
}

/// Lower (data, scales) to MX descriptor parts. Only the data pattern's shape is encoded (K and
/// the step sign); the scale pattern contributes its address.
pub(crate) fn lower_mx(
    data: &AccessPattern,
    scale: &AccessPattern,
    gen: Gen,
) -> Result<MxDesc, ApError> {
    let (step, n) = match data.pattern.as_slice() {
        [] => (1, 1),
        [d] => (d.step, d.num),
        more => return Err(ApError::MxDims(more.len())),
    };
    let step_sign = match step {
        1 => 0x01,
        -1 => 0xFF,
        s => return Err(ApError::MxStep(s)),
    };
    let k = n
        .checked_mul(4)
        .and_then(|k| u16::try_from(k).ok())
        .ok_or(ApError::MxContainers(n))?;
    Ok(MxDesc {
        data: address_of(data, gen)?,
        scale: address_of(scale, gen)?,
        k,
        step_sign,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(addr: u32, step: &[i16], num: &[u16]) -> Desc {
        Desc {
            addr: Addr4(addr),
            step: step.to_vec(),
            num: num.to_vec(),
        }
    }

    #[test]
    fn sbuf_and_psum_places() {
        let d = desc((5 << 18) | 0x40, &[1, 64, 1], &[32, 4, 1]);
        let ap = lift_desc(&d, NumFormat::Bfloat16, 16, Gen::V3).unwrap();
        assert_eq!(
            (ap.mem, ap.start_partition, ap.offset, ap.partitions),
            (MemoryType::Sb, 5, 0x20, 16)
        );
        assert_eq!(
            ap.pattern,
            vec![Dim { step: 64, num: 4 }, Dim { step: 1, num: 32 }]
        );
        assert_eq!(ap.buffer, SBUF_BUFFER);
        assert_eq!(lower_desc(&ap, 3, Gen::V3).unwrap(), d);
        // PSUM: partition 3, bank 2 (2 KiB banks), byte 8.
        let p = desc(
            0x200_0000 + (3 << 15) + 2 * 2048 + 8,
            &[1, 1, 1],
            &[128, 1, 1],
        );
        let ap = lift_desc(&p, NumFormat::Float32, 64, Gen::V4).unwrap();
        assert_eq!(
            (ap.mem, ap.start_partition, ap.offset),
            (MemoryType::Psum, 3, (2 * 2048 + 8) / 4)
        );
        assert_eq!(lower_desc(&ap, 3, Gen::V4).unwrap(), p);
        // v5 partition stride is 1 MiB.
        let v5 = desc((2 << 20) | 4, &[1], &[4]);
        assert_eq!(
            lift_desc(&v5, NumFormat::Uint8, 1, Gen::V5)
                .unwrap()
                .start_partition,
            2
        );
    }

    #[test]
    fn non_filler_count_one_pairs_are_kept() {
        let d = desc(0, &[1, 7, 1], &[8, 1, 1]);
        let ap = lift_desc(&d, NumFormat::Float32, 1, Gen::V2).unwrap();
        assert_eq!(ap.pattern.len(), 2);
        assert_eq!(lower_desc(&ap, 3, Gen::V2).unwrap(), d);
    }

    #[test]
    fn misaligned_and_raw_addresses() {
        assert!(lift_desc(&desc(3, &[1], &[1]), NumFormat::Float32, 1, Gen::V3).is_err());
        let r = desc(0x8000_0007, &[1, 1], &[4, 1]);
        let ap = lift_desc(&r, NumFormat::Float32, 2, Gen::V3).unwrap();
        assert!(ap.indirect);
        assert_eq!(ap.buffer, "addr4:0x80000007");
        assert_eq!(lower_desc(&ap, 2, Gen::V3).unwrap(), r);
        let mut bad = ap.clone();
        bad.buffer = "x".into();
        assert!(lower_desc(&bad, 2, Gen::V3).is_err());
    }

    #[test]
    fn unencodable_patterns() {
        let mut ap =
            AccessPattern::contiguous(MemoryType::Sb, SBUF_BUFFER, NumFormat::Float32, 0, 1, 4);
        ap.pattern.push(Dim {
            step: 1,
            num: 70_000,
        });
        assert_eq!(
            lower_desc(&ap, 3, Gen::V3).unwrap_err(),
            ApError::Count(70_000)
        );
        let mut ap = AccessPattern::contiguous(MemoryType::Dram, "x", NumFormat::Float32, 0, 1, 4);
        assert!(lower_desc(&ap, 3, Gen::V3).is_err());
        ap.mem = MemoryType::Sb;
        ap.start_partition = 128; // would land in the PSUM window
        assert!(lower_desc(&ap, 3, Gen::V3).is_err());
        ap.start_partition = 0;
        ap.pattern = vec![Dim { step: 1, num: 1 }; 4];
        assert!(lower_desc(&ap, 3, Gen::V3).is_err());
    }

    #[test]
    fn mx_operands() {
        let d = MxDesc {
            data: Addr4(4 << 18),
            scale: Addr4(96 << 18),
            k: 64,
            step_sign: 1,
        };
        let (data, scale) = lift_mx(&d, NumFormat::Float8E4m3fnX4, 128, Gen::V4).unwrap();
        assert_eq!(data.pattern, vec![Dim { step: 1, num: 16 }]);
        assert_eq!((scale.partitions, scale.start_partition), (16, 96));
        assert_eq!(lower_mx(&data, &scale, Gen::V4).unwrap(), d);
        assert!(lift_mx(
            &MxDesc { k: 6, ..d.clone() },
            NumFormat::Float8E4m3fnX4,
            128,
            Gen::V4
        )
        .is_err());
        assert!(lift_mx(
            &MxDesc { step_sign: 2, ..d },
            NumFormat::Float8E4m3fnX4,
            128,
            Gen::V4
        )
        .is_err());
    }
}
