//! Per-generation geometry (SBUF, PSUM, quadrants, PE array, DMA), read from the spec's
//! `GEOMETRY` rows so every constant has one source row with its provenance.

use crate::spec::GEOMETRY;
use crate::Gen;

/// Geometry constants of one generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Generation.
    pub gen: Gen,
    /// SBUF partitions (128).
    pub sbuf_partitions: u32,
    /// SBUF address step per partition (0x40000 on v2..v4, 0x100000 on v5).
    pub sbuf_partition_stride: u32,
    /// Active SBUF bytes per partition.
    pub sbuf_partition_bytes: u32,
    /// State-buffer aperture (STATE_BUF_SZ).
    pub state_buf_size: u32,
    /// PSUM base address (PSUM_BUF_OFFSET).
    pub psum_base: u32,
    /// PSUM address step per partition.
    pub psum_partition_stride: u32,
    /// PSUM banks per partition.
    pub psum_banks: u32,
    /// Bytes per PSUM bank.
    pub psum_bank_bytes: u32,
    /// Active PSUM bytes per partition.
    pub psum_partition_bytes: u32,
    /// PSUM_BUF_SZ as shipped.
    pub psum_buf_size: u32,
    /// State-buffer word (bytes).
    pub state_buf_word: u32,
    /// Quadrants.
    pub quadrants: u32,
    /// Partitions per quadrant.
    pub quadrant_partitions: u32,
    /// PE array rows.
    pub pe_rows: u32,
    /// PE array columns.
    pub pe_cols: u32,
    /// PE row groups.
    pub pe_row_groups: u32,
    /// PE column groups.
    pub pe_col_groups: u32,
    /// DMA width (bytes).
    pub dma_width: u32,
    /// DMA engines per TPB.
    pub dma_engines: u32,
    /// Partition address mask of an ADDR4.
    pub partition_addr_mask: u32,
    /// Semaphores per NeuronCore.
    pub semaphores: u32,
    /// Event bits.
    pub events: u32,
    /// Address registers.
    pub address_registers: u32,
}

const fn row(name: &str, gi: usize) -> u32 {
    let mut i = 0;
    while i < GEOMETRY.len() {
        if eq(GEOMETRY[i].name, name) {
            return GEOMETRY[i].v[gi] as u32;
        }
        i += 1;
    }
    panic!("missing geometry row")
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn build(gen: Gen) -> Geometry {
    let g = gen.index();
    Geometry {
        gen,
        sbuf_partitions: row("sbuf_partitions", g),
        sbuf_partition_stride: row("sbuf_partition_stride", g),
        sbuf_partition_bytes: row("sbuf_partition_bytes", g),
        state_buf_size: row("state_buf_size", g),
        psum_base: row("psum_base", g),
        psum_partition_stride: row("psum_partition_stride", g),
        psum_banks: row("psum_banks", g),
        psum_bank_bytes: row("psum_bank_bytes", g),
        psum_partition_bytes: row("psum_partition_bytes", g),
        psum_buf_size: row("psum_buf_size", g),
        state_buf_word: row("state_buf_word", g),
        quadrants: row("quadrants", g),
        quadrant_partitions: row("quadrant_partitions", g),
        pe_rows: row("pe_rows", g),
        pe_cols: row("pe_cols", g),
        pe_row_groups: row("pe_row_groups", g),
        pe_col_groups: row("pe_col_groups", g),
        dma_width: row("dma_width", g),
        dma_engines: row("dma_engines", g),
        partition_addr_mask: row("partition_addr_mask", g),
        semaphores: row("semaphores", g),
        events: row("events", g),
        address_registers: row("address_registers", g),
    }
}

/// Every generation's geometry, evaluated at compile time.
const TABLE: [Geometry; 4] = [
    build(Gen::V2),
    build(Gen::V3),
    build(Gen::V4),
    build(Gen::V5),
];

static ALL: [Geometry; 4] = TABLE;

impl Geometry {
    /// Geometry of `gen`.
    pub fn of(gen: Gen) -> &'static Geometry {
        &ALL[gen.index()]
    }

    /// Geometry of `gen`, by value in a `const` context.
    pub const fn at(gen: Gen) -> Geometry {
        TABLE[gen.index()]
    }

    /// SBUF partition stride as an address shift (18 on v2..v4, 20 on v5).
    pub const fn sbuf_partition_shift(&self) -> u32 {
        self.sbuf_partition_stride.trailing_zeros()
    }

    /// PSUM partition stride as an address shift (15).
    pub const fn psum_partition_shift(&self) -> u32 {
        self.psum_partition_stride.trailing_zeros()
    }

    /// Size of the PSUM address window: every partition's stride (0x400000).
    pub const fn psum_window(&self) -> u32 {
        self.sbuf_partitions * self.psum_partition_stride
    }

    /// Whether `addr` (partition-folded, marker stripped) lies in the PSUM window:
    /// `(addr - psum_base) <= 0x3FFFFF` unsigned (the validators' predicate).
    pub const fn is_psum(&self, addr: u32) -> bool {
        addr.wrapping_sub(self.psum_base) < self.psum_window()
    }

    /// `(partition, offset)` of an SBUF address.
    pub const fn sbuf_split(&self, addr: u32) -> (u32, u32) {
        (
            addr / self.sbuf_partition_stride,
            addr % self.sbuf_partition_stride,
        )
    }

    /// `(partition, offset)` of a PSUM address (offset within the partition's 32 KiB window).
    pub const fn psum_split(&self, addr: u32) -> (u32, u32) {
        let rel = addr.wrapping_sub(self.psum_base);
        (
            rel / self.psum_partition_stride,
            rel % self.psum_partition_stride,
        )
    }

    /// SBUF address of `(partition, offset)`.
    pub const fn sbuf_addr(&self, partition: u32, offset: u32) -> u32 {
        partition * self.sbuf_partition_stride + offset
    }

    /// PSUM address of `(partition, bank, offset)`.
    pub const fn psum_addr(&self, partition: u32, bank: u32, offset: u32) -> u32 {
        self.psum_base
            + partition * self.psum_partition_stride
            + bank * self.psum_bank_bytes
            + offset
    }

    /// Quadrant of a partition.
    pub const fn quadrant_of_partition(&self, partition: u32) -> u32 {
        partition / self.quadrant_partitions
    }

    /// Quadrant of an SBUF address: `addr / (stride * 32)`.
    pub const fn quadrant_of_sbuf_addr(&self, addr: u32) -> u32 {
        addr / (self.sbuf_partition_stride * self.quadrant_partitions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_constants() {
        let g2 = Geometry::of(Gen::V2);
        assert_eq!((g2.psum_banks, g2.psum_bank_bytes), (16, 1024));
        let g3 = Geometry::of(Gen::V3);
        assert_eq!((g3.psum_banks, g3.psum_bank_bytes), (8, 2048));
        assert_eq!(g3.sbuf_partition_bytes, 224 * 1024);
        let g5 = Geometry::of(Gen::V5);
        assert_eq!(g5.sbuf_partition_stride, 0x10_0000);
        assert_eq!((g5.pe_cols, g5.pe_row_groups, g5.dma_engines), (256, 2, 8));
        for g in Gen::ALL {
            let geo = Geometry::of(g);
            assert_eq!(
                geo.psum_banks * geo.psum_bank_bytes,
                geo.psum_partition_bytes
            );
        }
    }

    #[test]
    fn address_formation() {
        let g = Geometry::of(Gen::V3);
        assert_eq!(g.sbuf_addr(3, 0x40), (3 << 18) | 0x40);
        assert_eq!(g.sbuf_split((3 << 18) | 0x40), (3, 0x40));
        let p = g.psum_addr(5, 2, 8);
        assert_eq!(p, 0x200_0000 + (5 << 15) + (2 << 11) + 8);
        assert!(g.is_psum(p));
        assert!(!g.is_psum(0x1FF_FFFF));
        assert!(!g.is_psum(0x240_0000));
        assert_eq!(g.psum_split(p), (5, (2 << 11) + 8));
        assert_eq!(g.quadrant_of_sbuf_addr(g.sbuf_addr(64, 0)), 2);
    }
}
