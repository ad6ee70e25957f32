//! Per-generation memory geometry of one NeuronCore as the machine models it, read from the
//! spec's geometry rows ([`tpbsim_isa::Geometry`], isa-facts §1.2). v2 PSUM banking follows the
//! header (16 × 1 KiB) rather than the compiler's table (8 × 2 KiB); see `docs/machine.md`.

use tpbsim_isa::Gen;

/// The spec geometry of v2: the constants below are the same on every generation (checked at
/// compile time against every generation's row).
const SPEC: tpbsim_isa::Geometry = tpbsim_isa::Geometry::at(Gen::V2);

/// Number of SBUF and PSUM partitions on every generation.
pub const PARTITIONS: u32 = SPEC.sbuf_partitions;

/// First byte address of the PSUM window (PSUM_BUF_OFFSET), every generation.
pub const PSUM_BASE: u32 = SPEC.psum_base;

/// Address distance between two PSUM partitions.
pub const PSUM_PARTITION_STRIDE: u32 = SPEC.psum_partition_stride;

/// Size of the PSUM address window: 128 partitions × 32 KiB stride.
pub const PSUM_WINDOW: u32 = PARTITIONS * PSUM_PARTITION_STRIDE;

/// Active PSUM bytes per partition.
pub const PSUM_BYTES_PER_PARTITION: u32 = SPEC.psum_partition_bytes;

/// Mask of the byte-address bits of an ADDR4 word.
pub const ADDR4_ADDRESS_MASK: u32 = SPEC.partition_addr_mask;

const _: () = {
    let mut i = 0;
    while i < Gen::ALL.len() {
        let g = tpbsim_isa::Geometry::at(Gen::ALL[i]);
        assert!(
            g.sbuf_partitions == PARTITIONS
                && g.psum_base == PSUM_BASE
                && g.psum_partition_stride == PSUM_PARTITION_STRIDE
                && g.psum_partition_bytes == PSUM_BYTES_PER_PARTITION
                && g.partition_addr_mask == ADDR4_ADDRESS_MASK
                && g.sbuf_partition_stride.is_power_of_two()
        );
        i += 1;
    }
};

/// Memory geometry of one generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The generation.
    pub gen: Gen,
    /// log2 of the SBUF address distance between partitions (18 on v2–v4, 20 on v5).
    pub sbuf_partition_shift: u32,
    /// Active SBUF bytes per partition (192/224/256/512 KiB).
    pub sbuf_bytes_per_partition: u32,
    /// PSUM banks per partition.
    pub psum_banks: u32,
    /// Bytes per PSUM bank.
    pub psum_bank_bytes: u32,
}

const fn from_spec(gen: Gen) -> Geometry {
    let g = tpbsim_isa::Geometry::at(gen);
    Geometry {
        gen,
        sbuf_partition_shift: g.sbuf_partition_shift(),
        sbuf_bytes_per_partition: g.sbuf_partition_bytes,
        psum_banks: g.psum_banks,
        psum_bank_bytes: g.psum_bank_bytes,
    }
}

/// Every generation's geometry, evaluated at compile time.
const ALL: [Geometry; 4] = [
    from_spec(Gen::V2),
    from_spec(Gen::V3),
    from_spec(Gen::V4),
    from_spec(Gen::V5),
];

impl Geometry {
    /// Geometry of `gen`.
    #[inline]
    pub const fn of(gen: Gen) -> Geometry {
        ALL[gen.index()]
    }

    /// Address distance between two SBUF partitions.
    pub const fn sbuf_partition_stride(&self) -> u32 {
        1 << self.sbuf_partition_shift
    }

    /// SBUF byte address of `offset` in `partition`.
    pub const fn sbuf_address(&self, partition: u32, offset: u32) -> u32 {
        (partition << self.sbuf_partition_shift) | offset
    }

    /// PSUM byte address of `offset` in `partition`.
    pub const fn psum_address(&self, partition: u32, offset: u32) -> u32 {
        PSUM_BASE + partition * PSUM_PARTITION_STRIDE + offset
    }

    /// Where a (partition-folded) byte address points, before bounds checks.
    pub const fn locate(&self, addr: u32) -> Located {
        let a = addr & ADDR4_ADDRESS_MASK;
        if a.wrapping_sub(PSUM_BASE) < PSUM_WINDOW {
            let rel = a - PSUM_BASE;
            Located {
                space: Space::Psum,
                partition: rel / PSUM_PARTITION_STRIDE,
                offset: rel % PSUM_PARTITION_STRIDE,
            }
        } else {
            Located {
                space: Space::Sbuf,
                partition: a >> self.sbuf_partition_shift,
                offset: a & (self.sbuf_partition_stride() - 1),
            }
        }
    }

    /// Active bytes per partition of `space`.
    pub const fn bytes_per_partition(&self, space: Space) -> u32 {
        match space {
            Space::Sbuf => self.sbuf_bytes_per_partition,
            Space::Psum => PSUM_BYTES_PER_PARTITION,
        }
    }
}

/// An on-chip memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    /// State buffer.
    Sbuf,
    /// Partial-sum buffer.
    Psum,
}

impl std::fmt::Display for Space {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Space::Sbuf => "SBUF",
            Space::Psum => "PSUM",
        })
    }
}

/// A byte address split into memory, partition and in-partition offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    /// Memory.
    pub space: Space,
    /// Partition index (may be ≥ 128 for an out-of-range address).
    pub partition: u32,
    /// Byte offset inside the partition (may exceed the active size).
    pub offset: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_formation_round_trips() {
        for gen in Gen::ALL {
            let g = Geometry::of(gen);
            for (p, o) in [(0, 0), (5, 100), (127, g.sbuf_bytes_per_partition - 1)] {
                let a = g.sbuf_address(p, o);
                if a.wrapping_sub(PSUM_BASE) < PSUM_WINDOW {
                    continue; // v5 SBUF partitions 32..35 alias the PSUM window
                }
                assert_eq!(
                    g.locate(a),
                    Located {
                        space: Space::Sbuf,
                        partition: p,
                        offset: o
                    },
                    "{gen}"
                );
            }
            let a = g.psum_address(3, 2048 + 8);
            assert_eq!(
                g.locate(a),
                Located {
                    space: Space::Psum,
                    partition: 3,
                    offset: 2056
                }
            );
        }
        assert_eq!(Geometry::of(Gen::V2).sbuf_address(1, 0), 0x40000);
        assert_eq!(Geometry::of(Gen::V5).sbuf_address(1, 0), 0x100000);
        assert_eq!(
            Geometry::of(Gen::V2).psum_banks * Geometry::of(Gen::V2).psum_bank_bytes,
            PSUM_BYTES_PER_PARTITION
        );
        assert_eq!(
            Geometry::of(Gen::V3).psum_banks * Geometry::of(Gen::V3).psum_bank_bytes,
            PSUM_BYTES_PER_PARTITION
        );
    }

    #[test]
    fn psum_window_edges() {
        let g = Geometry::of(Gen::V3);
        assert_eq!(g.locate(PSUM_BASE - 1).space, Space::Sbuf);
        assert_eq!(g.locate(PSUM_BASE).space, Space::Psum);
        assert_eq!(g.locate(PSUM_BASE + PSUM_WINDOW - 1).space, Space::Psum);
        assert_eq!(g.locate(PSUM_BASE + PSUM_WINDOW).space, Space::Sbuf);
    }
}
