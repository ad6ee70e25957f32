//! On-chip memories (SBUF, PSUM) and the DRAM variables of a kernel.

use std::sync::Mutex;

use super::geometry::{Geometry, Space, ADDR4_ADDRESS_MASK, PARTITIONS};
use super::pattern::{AccessError, Resolved, TensorPattern};
use super::race::{ChipAccess, OnChipLog};
use crate::numerics::pe::PsumFlags;

mod dram;
mod rows;

pub use dram::{AccessLog, Dram, DramVar, VarBytes, VarKind};
pub use tpbsim_isa::ranges::Ranges;

/// Bytes per bit of a [`Store`]'s dirty map.
const GRANULE: usize = 1024;

/// Bytes between the end of one partition and the start of the next in a [`Store`]. Partitions
/// a multiple of 4 KiB long would put the same offset of every partition in the same cache
/// set (of L1 and L2 alike), so that a tile — one row per partition — would evict itself; one
/// line of padding makes the stride an odd number of lines, which spreads the rows of a tile
/// over distinct sets.
const PARTITION_PAD: usize = 64;

/// Cleared stores kept for reuse (see [`OnChip`]); at most this many SBUF/PSUM pairs.
const POOL_CAPACITY: usize = 4;

/// One on-chip memory: [`PARTITIONS`] partitions of `per` bytes, `stride` bytes apart, in
/// anonymous zero-filled pages, and a map of the granules written since they were last known to
/// be zero. The map is column-major — bit `column × PARTITIONS + partition` stands for bytes
/// `column × GRANULE ..` of the partition — so that a tile (the same bytes of consecutive
/// partitions) is marked with a word or two per granule column, whatever its partition count.
struct Store {
    bytes: memmap2::MmapMut,
    dirty: Vec<u64>,
    per: usize,
    stride: usize,
}

impl Store {
    fn new(per: usize, stride: usize) -> std::io::Result<Store> {
        Ok(Store {
            bytes: memmap2::MmapMut::map_anon(PARTITIONS as usize * stride)?,
            dirty: vec![0; (per.div_ceil(GRANULE) * PARTITIONS as usize).div_ceil(64)],
            per,
            stride,
        })
    }

    /// The bytes of partition `p` in the store (its active bytes, without the padding).
    #[inline]
    fn partition_range(&self, p: u32) -> std::ops::Range<usize> {
        let at = p as usize * self.stride;
        at..at + self.per
    }

    /// Note that bytes `lo..hi` (`lo < hi <= per`) of partitions `first..first + count`
    /// (`count > 0`, inside the memory) may now be non-zero.
    #[inline]
    fn mark(&mut self, first: usize, count: usize, lo: usize, hi: usize) {
        for column in lo / GRANULE..=(hi - 1) / GRANULE {
            let start = column * PARTITIONS as usize + first;
            let (w0, w1) = (start / 64, (start + count - 1) / 64);
            let lo_mask = u64::MAX << (start % 64);
            let hi_mask = u64::MAX >> (63 - (start + count - 1) % 64);
            if w0 == w1 {
                self.dirty[w0] |= lo_mask & hi_mask;
            } else {
                self.dirty[w0] |= lo_mask;
                self.dirty[w0 + 1..w1].fill(u64::MAX);
                self.dirty[w1] |= hi_mask;
            }
        }
    }

    /// Zero every dirty granule and forget them.
    fn clear(&mut self) {
        for w in 0..self.dirty.len() {
            let mut bits = std::mem::take(&mut self.dirty[w]);
            while bits != 0 {
                let g = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (column, partition) = (g / PARTITIONS as usize, g % PARTITIONS as usize);
                let whole = self.partition_range(partition as u32);
                let lo = whole.start + column * GRANULE;
                self.bytes[lo..(lo + GRANULE).min(whole.end)].fill(0);
            }
        }
    }
}

/// SBUF/PSUM store pairs of dropped memories, cleared.
static POOL: Mutex<Vec<Vec<Store>>> = Mutex::new(Vec::new());

/// SBUF and PSUM contents, partition-major, zero at start.
///
/// The storage is anonymous memory, zero-filled lazily by the OS page by page as a run touches
/// it. Every write marks the 1 KiB granules it touches; when the memories are dropped, the
/// marked granules are cleared and the storage is kept (a few pairs per process) for the next
/// machine of the same generation, which so starts from zeroed memory without a page fault per
/// touched page.
pub struct OnChip {
    /// Geometry of the generation.
    pub geom: Geometry,
    /// SBUF, then PSUM (empty only while being dropped).
    stores: Vec<Store>,
    /// While a race check runs: the accesses of the current bundle, in order.
    pub(crate) log: Option<OnChipLog>,
}

impl Drop for OnChip {
    fn drop(&mut self) {
        let mut stores = std::mem::take(&mut self.stores);
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_CAPACITY {
            stores.iter_mut().for_each(Store::clear);
            pool.push(stores);
        }
    }
}

impl std::fmt::Debug for OnChip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnChip")
            .field("geom", &self.geom)
            .finish_non_exhaustive()
    }
}

impl OnChip {
    /// Zeroed SBUF and PSUM for `geom`; fails only when the OS refuses the mapping.
    pub fn new(geom: Geometry) -> std::io::Result<OnChip> {
        let per = [Space::Sbuf, Space::Psum].map(|s| geom.bytes_per_partition(s) as usize);
        let reused = {
            let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
            pool.iter()
                .position(|s| s[0].per == per[0] && s[1].per == per[1])
                .map(|i| pool.swap_remove(i))
        };
        let stores = match reused {
            Some(s) => s,
            None => vec![
                Store::new(per[0], per[0] + PARTITION_PAD)?,
                Store::new(per[1], per[1] + PARTITION_PAD)?,
            ],
        };
        Ok(OnChip {
            geom,
            stores,
            log: None,
        })
    }

    #[inline]
    fn note(&self, a: impl FnOnce() -> ChipAccess) {
        if let Some(l) = &self.log {
            l.borrow_mut().push(a());
        }
    }

    /// Record (while a race check runs) that operand `name` resolved to `r`.
    #[inline]
    pub fn note_operand(&self, name: &str, r: &Resolved) {
        self.note(|| ChipAccess::Operand(name.to_string(), r.clone()));
    }

    /// Record (while a race check or timeline runs) an operand's shape for the cost model:
    /// elements per partition and bytes per element.
    #[inline]
    pub fn note_shape(&self, p: &TensorPattern) {
        self.note(|| ChipAccess::Shape {
            elems: p.elems_per_partition(),
            elem_bytes: p.elem_bytes,
        });
    }

    /// Record (while a race check runs) that bytes `lo..hi` of `count` partitions from `first`
    /// of `space` were cleared.
    #[inline]
    pub fn note_zero(&self, space: Space, first: u32, count: u32, lo: u32, hi: u32) {
        self.note(|| ChipAccess::Zero {
            space,
            first,
            count,
            lo,
            hi,
        });
    }

    /// Record (while a race check runs) that a matmul writes `r` under `flags`.
    #[inline]
    pub fn note_accumulate(&self, r: &Resolved, flags: PsumFlags) {
        self.note(|| ChipAccess::Accumulate(r.clone(), flags));
    }

    /// Record (while a race check runs) that the operation's reads of `r`, its destination,
    /// use the bytes' values (read-modify-write): they are checked for uninitialised bytes like
    /// a source's. Other reads of a destination are taken as gathers of the bytes the operation
    /// leaves unchanged.
    #[inline]
    pub fn note_read_modify_write(&self, r: &Resolved) {
        self.note(|| ChipAccess::ReadModifyWrite(r.clone()));
    }

    /// Bounds-check a pattern.
    pub fn resolve(&self, p: &TensorPattern) -> Result<Resolved, AccessError> {
        Resolved::new(&self.geom, p)
    }

    fn per_partition(&self, space: Space) -> usize {
        self.store(space).per
    }

    /// Bytes from the start of one partition to the next in `space`'s store.
    #[inline]
    fn stride(&self, space: Space) -> usize {
        self.store(space).stride
    }

    fn store(&self, space: Space) -> &Store {
        &self.stores[space as usize]
    }

    fn store_mut(&mut self, space: Space) -> &mut Store {
        &mut self.stores[space as usize]
    }

    /// The active bytes of one partition.
    pub fn partition(&self, space: Space, partition: u32) -> &[u8] {
        let s = self.store(space);
        &s.bytes[s.partition_range(partition)]
    }

    /// The active bytes of one partition, writable (the whole partition counts as written).
    pub fn partition_mut(&mut self, space: Space, partition: u32) -> &mut [u8] {
        self.written_mut(space, partition, 0..self.per_partition(space))
    }

    /// Writable bytes `range` of one partition (only they count as written).
    fn written_mut(
        &mut self,
        space: Space,
        partition: u32,
        range: std::ops::Range<usize>,
    ) -> &mut [u8] {
        let s = self.store_mut(space);
        let whole = s.partition_range(partition);
        if range.start < range.end && range.end <= s.per {
            s.mark(partition as usize, 1, range.start, range.end);
        }
        &mut s.bytes[whole][range]
    }

    /// Clear bytes `range` of one partition.
    pub fn zero(&mut self, space: Space, partition: u32, range: std::ops::Range<usize>) {
        let s = self.store_mut(space);
        let whole = s.partition_range(partition);
        // Zero bytes need no clearing later: the dirty map is left as it is.
        s.bytes[whole][range].fill(0);
    }

    /// Copy the bytes of a resolved pattern into `out` (appended), partition-major, elements
    /// in pattern order.
    pub fn gather_into(&self, r: &Resolved, out: &mut Vec<u8>) {
        self.note(|| ChipAccess::Read(r.clone()));
        out.reserve(r.total_bytes() as usize);
        for p in r.first_partition..r.first_partition + r.partitions {
            let part = self.partition(r.space, p);
            r.for_each_run_in_partition(|o, l| out.extend_from_slice(&part[o..o + l]));
        }
    }

    /// Call `f` on each contiguous run of a resolved pattern, partition-major (the bytes
    /// [`OnChip::gather`] would concatenate, without the copy).
    pub fn for_each_run(&self, r: &Resolved, mut f: impl FnMut(&[u8])) {
        self.note(|| ChipAccess::Read(r.clone()));
        for p in r.first_partition..r.first_partition + r.partitions {
            let part = self.partition(r.space, p);
            r.for_each_run_in_partition(|o, l| f(&part[o..o + l]));
        }
    }

    /// The fp32 words of a resolved pattern whose runs are whole words (`None` otherwise),
    /// partition-major: [`OnChip::gather`] read as little-endian `f32`s, without the byte
    /// copy.
    pub fn gather_f32(&self, r: &Resolved) -> Option<Vec<f32>> {
        let mut out = Vec::new();
        self.gather_f32_into(r, &mut out).then_some(out)
    }

    /// [`OnChip::gather_f32`] appending to `out` (a reused buffer); false, with `out`
    /// unchanged, when the runs are not whole words.
    pub fn gather_f32_into(&self, r: &Resolved, out: &mut Vec<f32>) -> bool {
        if !r.run_bytes.is_multiple_of(4) {
            return false;
        }
        self.note(|| ChipAccess::Read(r.clone()));
        out.reserve(r.total_bytes() as usize / 4);
        for p in r.first_partition..r.first_partition + r.partitions {
            let part = self.partition(r.space, p);
            r.for_each_run_in_partition(|o, l| {
                let run = &part[o..o + l];
                match bytemuck::try_cast_slice::<u8, f32>(run) {
                    // Aligned words on a little-endian host: the bytes are the values.
                    Ok(words) if cfg!(target_endian = "little") => out.extend_from_slice(words),
                    _ => out.extend(
                        run.chunks_exact(4)
                            .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])),
                    ),
                }
            });
        }
        true
    }

    /// The bytes of a resolved pattern, partition-major.
    pub fn gather(&self, r: &Resolved) -> Vec<u8> {
        let mut v = Vec::new();
        self.gather_into(r, &mut v);
        v
    }

    /// Write `data` (partition-major, pattern order; `r.total_bytes()` long) through a resolved
    /// pattern. Later elements win where the pattern overlaps itself.
    pub fn scatter(&mut self, r: &Resolved, data: &[u8]) {
        debug_assert_eq!(data.len() as u64, r.total_bytes());
        self.note(|| ChipAccess::Write(r.clone()));
        let mut at = 0usize;
        let span = r.span();
        for p in r.first_partition..r.first_partition + r.partitions {
            let base = span.start;
            let part = self.written_mut(r.space, p, span.clone());
            r.for_each_run_in_partition(|o, l| {
                let o = o - base;
                part[o..o + l].copy_from_slice(&data[at..at + l]);
                at += l;
            });
        }
    }

    /// Read `len` bytes at a flat partition-folded address (a DMA chunk: it must stay inside
    /// one partition).
    pub fn read_flat(&self, addr: u32, len: usize) -> Result<&[u8], AccessError> {
        let (space, p, o) = self.check_flat(addr, len)?;
        Ok(&self.partition(space, p)[o..o + len])
    }

    /// Writable `len` bytes at a flat partition-folded address.
    pub fn write_flat(&mut self, addr: u32, len: usize) -> Result<&mut [u8], AccessError> {
        let (space, p, o) = self.check_flat(addr, len)?;
        Ok(self.written_mut(space, p, o..o + len))
    }

    /// Where the `len`-byte DMA run at flat address `addr` lies: its memory and its index in
    /// that memory's store ([`OnChip::space_bytes`]); `None` where [`OnChip::read_flat`] fails.
    #[inline]
    pub(crate) fn run_at(&self, addr: u32, len: usize) -> Option<(Space, usize)> {
        if addr & !ADDR4_ADDRESS_MASK != 0 {
            return None;
        }
        let loc = self.geom.locate(addr);
        let per = self.per_partition(loc.space);
        (loc.partition < PARTITIONS && loc.offset as usize + len <= per).then_some((
            loc.space,
            loc.partition as usize * self.stride(loc.space) + loc.offset as usize,
        ))
    }

    /// All bytes of `space`'s store: the partitions in order, each followed by padding
    /// (indices from [`OnChip::run_at`]).
    #[inline]
    pub(crate) fn space_bytes(&self, space: Space) -> &[u8] {
        &self.store(space).bytes
    }

    /// Write `data` at index `at` of `space`'s store (from
    /// [`OnChip::run_at`]).
    #[inline]
    pub(crate) fn write_run(&mut self, space: Space, at: usize, data: &[u8]) {
        let s = self.store_mut(space);
        if !data.is_empty() {
            let (p, offset) = (at / s.stride, at % s.stride);
            s.mark(p, 1, offset, offset + data.len());
        }
        s.bytes[at..at + data.len()].copy_from_slice(data);
    }

    fn check_flat(&self, addr: u32, len: usize) -> Result<(Space, u32, usize), AccessError> {
        // A flat address names a byte of SBUF or PSUM with its low 29 bits; higher bits are
        // outside every on-chip memory, never folded away.
        if addr & !ADDR4_ADDRESS_MASK != 0 {
            return Err(AccessError::Unsupported {
                addr,
                what: "address bits 29..31 set (outside the 29-bit on-chip address space)",
            });
        }
        let loc = self.geom.locate(addr);
        if loc.partition >= PARTITIONS {
            return Err(AccessError::Partitions {
                space: loc.space,
                addr,
                first: loc.partition,
                end: loc.partition as u64 + 1,
                limit: PARTITIONS,
            });
        }
        let limit = self.geom.bytes_per_partition(loc.space);
        let hi = loc.offset as u64 + len as u64;
        if hi > limit as u64 {
            return Err(AccessError::Bytes {
                space: loc.space,
                addr,
                lo: loc.offset as i64,
                hi: hi as i64,
                limit,
            });
        }
        Ok((loc.space, loc.partition, loc.offset as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::pattern::Dim;
    use tpbsim_isa::Gen;

    #[test]
    fn gather_scatter_round_trip_strided() {
        let g = Geometry::of(Gen::V3);
        let mut m = OnChip::new(g).unwrap();
        let src = TensorPattern::new(
            g.sbuf_address(1, 8),
            2,
            2,
            &[Dim::new(3, 4), Dim::new(20, 2)],
        );
        let r = m.resolve(&src).unwrap();
        let data: Vec<u8> = (0..r.total_bytes() as u8).collect();
        m.scatter(&r, &data);
        assert_eq!(m.gather(&r), data);
        // Element (partition 1, i0 = 1, i1 = 0) sits at byte 8 + 3*2.
        assert_eq!(&m.partition(Space::Sbuf, 1)[14..16], &data[2..4]);
        // Partition 2, i1 = 1, i0 = 3: 8 + (20 + 9)*2.
        assert_eq!(&m.partition(Space::Sbuf, 2)[66..68], &data[30..32]);
    }

    #[test]
    fn gather_f32_reads_the_gathered_words() {
        let g = Geometry::of(Gen::V3);
        let mut m = OnChip::new(g).unwrap();
        for p in 0..4 {
            for (i, b) in m.partition_mut(Space::Sbuf, p)[..256]
                .iter_mut()
                .enumerate()
            {
                *b = (i as u32 * 31 + p) as u8;
            }
        }
        let words = m
            .resolve(&TensorPattern::new(
                g.sbuf_address(1, 8),
                3,
                4,
                &[Dim::new(2, 2), Dim::new(-1, 3), Dim::new(9, 2)],
            ))
            .unwrap();
        let bytes = m.gather(&words);
        let want: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let got = m.gather_f32(&words).unwrap();
        assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want);
        let halves = TensorPattern::new(g.sbuf_address(0, 0), 2, 2, &[Dim::new(2, 4)]);
        assert!(m.gather_f32(&m.resolve(&halves).unwrap()).is_none());
    }

    #[test]
    fn zip_rows_equals_gather_compute_scatter_or_declines() {
        let g = Geometry::of(Gen::V3);
        let fill = |m: &mut OnChip| {
            for p in 0..PARTITIONS {
                for (i, w) in m.partition_mut(Space::Sbuf, p)[..512]
                    .chunks_exact_mut(4)
                    .enumerate()
                {
                    w.copy_from_slice(&((p * 1000 + i as u32) as f32).to_le_bytes());
                }
            }
        };
        let row = |p: u32, off: u32, n: u32| TensorPattern::dense(g.sbuf_address(p, off), 4, 4, n);
        // (src0, src1, dst, applies): exact alias, disjoint, other partitions apart; then
        // declined: shifted overlap, overlap across partitions, strided, unequal lengths.
        let cases = [
            (row(0, 0, 8), row(0, 64, 8), row(0, 0, 8), true),
            (row(2, 0, 8), row(2, 64, 8), row(2, 128, 8), true),
            (row(0, 0, 8), row(8, 0, 8), row(4, 256, 8), true),
            (row(0, 0, 8), row(0, 64, 8), row(0, 4, 8), false),
            (row(0, 0, 8), row(0, 64, 8), row(2, 0, 8), false),
            (
                TensorPattern::new(g.sbuf_address(0, 0), 4, 4, &[Dim::new(2, 8)]),
                row(0, 64, 8),
                row(0, 128, 8),
                false,
            ),
            (row(0, 0, 8), row(0, 64, 4), row(0, 128, 8), false),
        ];
        for (i, (a, b, d, applies)) in cases.into_iter().enumerate() {
            let mut fast = OnChip::new(g).unwrap();
            fill(&mut fast);
            let mut slow = OnChip::new(g).unwrap();
            fill(&mut slow);
            let (ra, rb, rd) = (
                fast.resolve(&a).unwrap(),
                fast.resolve(&b).unwrap(),
                fast.resolve(&d).unwrap(),
            );
            let done =
                fast.zip_rows_f32([&ra, &rb], &rd, |p| p as f32, |p, [x, y]| x * 3.0 - y + p);
            assert_eq!(done, applies, "case {i}");
            if done {
                let (x, y) = (slow.gather_f32(&ra).unwrap(), slow.gather_f32(&rb).unwrap());
                let n = x.len() / 4;
                let out: Vec<f32> = (0..x.len())
                    .map(|j| x[j] * 3.0 - y[j] + (j / n) as f32)
                    .collect();
                slow.scatter(&rd, bytemuck::cast_slice(&out));
            }
            for p in 0..8 {
                assert_eq!(
                    fast.partition(Space::Sbuf, p)[..512],
                    slow.partition(Space::Sbuf, p)[..512],
                    "case {i}, partition {p}"
                );
            }
        }
    }

    #[test]
    fn store_clear_zeroes_exactly_the_marked_granules() {
        // Partitions of 3 granules and 100 bytes, one pad line apart.
        let per = 3 * GRANULE + 100;
        let mut s = Store::new(per, per + PARTITION_PAD).unwrap();
        let at = |p: usize, o: usize| p * (per + PARTITION_PAD) + o;
        // (first partition, count, lo, hi)
        for (first, count, lo, hi) in [
            (0, 1, 0, 1),
            (0, 1, GRANULE - 1, GRANULE + 1),
            // Partitions 60..70 cross a word of the map; the last, partial granule.
            (60, 10, 3 * GRANULE + 5, per),
            // All partitions (every word of two columns).
            (0, 128, 2 * GRANULE + 1, 2 * GRANULE + 3),
            (127, 1, 0, per),
        ] {
            for p in first..first + count {
                s.bytes[at(p, lo)..at(p, hi)].fill(0xAB);
            }
            s.mark(first, count, lo, hi);
        }
        // Bytes written without being marked: clearing leaves them alone.
        let unmarked = [at(5, GRANULE + 2), at(59, 3 * GRANULE + 5), at(126, 0)];
        for i in unmarked {
            s.bytes[i] = 7;
        }
        s.clear();
        assert!(s.dirty.iter().all(|&w| w == 0));
        let nonzero: Vec<usize> = (0..s.bytes.len()).filter(|&i| s.bytes[i] != 0).collect();
        assert_eq!(nonzero, unmarked);
    }

    #[test]
    fn reused_memories_start_zeroed() {
        let g = Geometry::of(Gen::V3);
        for round in 0..3u8 {
            let mut m = OnChip::new(g).unwrap();
            for space in [Space::Sbuf, Space::Psum] {
                let per = g.bytes_per_partition(space) as usize;
                assert!(
                    (0..PARTITIONS).all(|p| m.partition(space, p).iter().all(|&b| b == 0)),
                    "round {round}: {space} not zero"
                );
                m.partition_mut(space, 3)[per - 1] = 1 + round;
            }
            let r = m
                .resolve(&TensorPattern::new(
                    g.sbuf_address(5, 5000),
                    7,
                    4,
                    &[Dim::new(1, 3), Dim::new(-500, 3)],
                ))
                .unwrap();
            m.scatter(&r, &vec![0xCD; r.total_bytes() as usize]);
            m.write_flat(g.sbuf_address(127, 9000), 9000)
                .unwrap()
                .fill(0xEE);
            m.zero(Space::Psum, 0, 0..16);
        }
    }

    #[test]
    fn flat_and_dram_bounds() {
        let g = Geometry::of(Gen::V2);
        let mut m = OnChip::new(g).unwrap();
        m.write_flat(g.sbuf_address(3, 10), 4)
            .unwrap()
            .copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            m.read_flat(g.sbuf_address(3, 10), 4).unwrap(),
            &[1, 2, 3, 4]
        );
        assert!(m
            .read_flat(g.sbuf_address(3, g.sbuf_bytes_per_partition - 2), 4)
            .is_err());
        // Bits above the 29-bit on-chip address are refused, not folded onto partition 3.
        for hi in [1u32 << 29, 7 << 29] {
            let a = g.sbuf_address(3, 10) | hi;
            assert!(m.read_flat(a, 4).is_err());
            assert!(m.write_flat(a, 4).is_err());
            assert!(m.run_at(a, 4).is_none());
        }
        assert!(m.run_at(g.sbuf_address(3, 10), 4).is_some());
        let mut d = Dram::default();
        d.insert(
            7,
            DramVar {
                name: "x".into(),
                kind: VarKind::Input,
                bytes: vec![0; 16].into(),
            },
        );
        assert!(d.read(7, 12, 4).is_ok());
        let e = d.read(7, 13, 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "DRAM variable `x`: bytes 13..17 are outside its 16 bytes"
        );
        assert!(matches!(d.write(8, 0, 1), Err(AccessError::UnknownVar(8))));
        assert_eq!(d.id_of("x"), Some(7));
    }
}
