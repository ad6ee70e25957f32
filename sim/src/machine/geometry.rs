//! Per-generation memory geometry of one NeuronCore as the machine models it.
//!
//! Numbers are the shipped header constants (isa-facts §1.2). v2 PSUM banking follows the
//! header (16 × 1 KiB) rather than the compiler's table (8 × 2 KiB); see `docs/machine.md`.

use tpbsim_isa::Gen;

/// Number of SBUF and PSUM partitions on every generation.
pub const PARTITIONS: u32 = 128;

/// First byte address of the PSUM window (PSUM_BUF_OFFSET), every generation.
pub const PSUM_BASE: u32 = 0x0200_0000;

/// Size of the PSUM address window: 128 partitions × 32 KiB stride.
pub const PSUM_WINDOW: u32 = 0x0040_0000;

/// Address distance between two PSUM partitions.
pub const PSUM_PARTITION_STRIDE: u32 = 0x8000;

/// Active PSUM bytes per partition.
pub const PSUM_BYTES_PER_PARTITION: u32 = 16 * 1024;

/// Mask of the byte-address bits of an ADDR4 word.
pub const ADDR4_ADDRESS_MASK: u32 = 0x1FFF_FFFF;

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

impl Geometry {
    /// Geometry of `gen`.
    pub const fn of(gen: Gen) -> Geometry {
        match gen {
            Gen::V2 => Geometry {
                gen,
                sbuf_partition_shift: 18,
                sbuf_bytes_per_partition: 192 * 1024,
                psum_banks: 16,
                psum_bank_bytes: 1024,
            },
            Gen::V3 => Geometry {
                gen,
                sbuf_partition_shift: 18,
                sbuf_bytes_per_partition: 224 * 1024,
                psum_banks: 8,
                psum_bank_bytes: 2048,
            },
            Gen::V4 => Geometry {
                gen,
                sbuf_partition_shift: 18,
                sbuf_bytes_per_partition: 256 * 1024,
                psum_banks: 8,
                psum_bank_bytes: 2048,
            },
            Gen::V5 => Geometry {
                gen,
                sbuf_partition_shift: 20,
                sbuf_bytes_per_partition: 512 * 1024,
                psum_banks: 8,
                psum_bank_bytes: 2048,
            },
        }
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
