//! On-chip memories (SBUF, PSUM) and the DRAM variables of a kernel.

use std::sync::Mutex;

use super::geometry::{Geometry, Space, PARTITIONS, PSUM_BYTES_PER_PARTITION};
use super::pattern::{AccessError, Resolved, TensorPattern};
use super::race::{ChipAccess, OnChipLog};
use crate::numerics::pe::PsumFlags;

/// Bytes per bit of a [`Store`]'s dirty map.
const GRANULE: usize = 1024;

/// Cleared stores kept for reuse (see [`OnChip`]); at most this many SBUF/PSUM pairs.
const POOL_CAPACITY: usize = 4;

/// One on-chip memory: anonymous zero-filled pages and a map of the granules written since
/// they were last known to be zero.
struct Store {
    bytes: memmap2::MmapMut,
    dirty: Vec<u64>,
}

impl Store {
    fn new(len: usize) -> std::io::Result<Store> {
        Ok(Store {
            bytes: memmap2::MmapMut::map_anon(len)?,
            dirty: vec![0; len.div_ceil(GRANULE).div_ceil(64)],
        })
    }

    /// Note that bytes `lo..hi` (`lo < hi <= len`) may now be non-zero.
    #[inline]
    fn mark(&mut self, lo: usize, hi: usize) {
        let (first, last) = (lo / GRANULE, (hi - 1) / GRANULE);
        let (w0, w1) = (first / 64, last / 64);
        let lo_mask = u64::MAX << (first % 64);
        let hi_mask = u64::MAX >> (63 - last % 64);
        if w0 == w1 {
            self.dirty[w0] |= lo_mask & hi_mask;
        } else {
            self.dirty[w0] |= lo_mask;
            self.dirty[w0 + 1..w1].fill(u64::MAX);
            self.dirty[w1] |= hi_mask;
        }
    }

    /// Zero every dirty granule (runs of them with one fill) and forget them.
    fn clear(&mut self) {
        let len = self.bytes.len();
        let mut run: Option<(usize, usize)> = None;
        for w in 0..self.dirty.len() {
            let mut bits = std::mem::take(&mut self.dirty[w]);
            while bits != 0 {
                let g = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                run = match run {
                    Some((a, b)) if b == g => Some((a, g + 1)),
                    Some((a, b)) => {
                        self.bytes[a * GRANULE..(b * GRANULE).min(len)].fill(0);
                        Some((g, g + 1))
                    }
                    None => Some((g, g + 1)),
                };
            }
        }
        if let Some((a, b)) = run {
            self.bytes[a * GRANULE..(b * GRANULE).min(len)].fill(0);
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
        let sbuf = PARTITIONS as usize * geom.sbuf_bytes_per_partition as usize;
        let psum = PARTITIONS as usize * PSUM_BYTES_PER_PARTITION as usize;
        let reused = {
            let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
            pool.iter()
                .position(|s| s[0].bytes.len() == sbuf && s[1].bytes.len() == psum)
                .map(|i| pool.swap_remove(i))
        };
        let stores = match reused {
            Some(s) => s,
            None => vec![Store::new(sbuf)?, Store::new(psum)?],
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
        self.geom.bytes_per_partition(space) as usize
    }

    fn store(&self, space: Space) -> &Store {
        &self.stores[space as usize]
    }

    fn store_mut(&mut self, space: Space) -> &mut Store {
        &mut self.stores[space as usize]
    }

    /// The active bytes of one partition.
    pub fn partition(&self, space: Space, partition: u32) -> &[u8] {
        let per = self.per_partition(space);
        let p = partition as usize;
        &self.store(space).bytes[p * per..(p + 1) * per]
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
        let per = self.per_partition(space);
        let at = partition as usize * per;
        let s = self.store_mut(space);
        if range.start < range.end && range.end <= per {
            s.mark(at + range.start, at + range.end);
        }
        &mut s.bytes[at..at + per][range]
    }

    /// Clear bytes `range` of one partition.
    pub fn zero(&mut self, space: Space, partition: u32, range: std::ops::Range<usize>) {
        let per = self.per_partition(space);
        let at = partition as usize * per;
        // Zero bytes need no clearing later: the dirty map is left as it is.
        self.store_mut(space).bytes[at..at + per][range].fill(0);
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

    /// `dst = f(srcs)` row by row on fp32 tiles whose every operand is one contiguous,
    /// word-aligned run per partition of the same length, without gathering or scattering
    /// the tiles: `f` gets the row index, the source rows and the destination row, all in
    /// place (a source row that is the destination row itself is copied into `rows`, reused
    /// buffers, first). Records the same accesses as gathering the sources in order and
    /// scattering `dst`. False, with nothing read, written or recorded, when the operands do
    /// not qualify, or when a destination row could overlap a source row other than its own.
    pub fn map_rows_f32<const N: usize>(
        &mut self,
        srcs: [&Resolved; N],
        dst: &Resolved,
        rows: &mut [Vec<f32>; N],
        mut f: impl FnMut(usize, &[&[f32]; N], &mut [f32]),
    ) -> bool {
        let (len, parts) = (dst.run_bytes as usize, dst.partitions);
        let fits = |r: &Resolved| {
            r.is_dense()
                && r.run_bytes as usize == len
                && r.partitions == parts
                && len % 4 == 0
                && r.base % 4 == 0
        };
        let same_rows = |s: &Resolved| {
            s.space == dst.space && s.first_partition == dst.first_partition && s.base == dst.base
        };
        // Otherwise no row of `s` meets a row of `dst`: other memory, other bytes of each
        // partition, or other partitions.
        let apart = |s: &Resolved| {
            s.space != dst.space
                || s.base as usize + len <= dst.base as usize
                || dst.base as usize + len <= s.base as usize
                || s.first_partition + parts <= dst.first_partition
                || dst.first_partition + parts <= s.first_partition
        };
        if !cfg!(target_endian = "little")
            || !fits(dst)
            || !srcs.iter().all(|s| fits(s) && (same_rows(s) || apart(s)))
            || [dst].iter().chain(&srcs).any(|r| {
                self.per_partition(r.space) % 4 != 0
                    || self.store(r.space).bytes.as_ptr() as usize % 4 != 0
            })
        {
            return false;
        }
        for s in srcs {
            self.note(|| ChipAccess::Read(s.clone()));
        }
        self.note(|| ChipAccess::Write(dst.clone()));
        let alias: [bool; N] = std::array::from_fn(|i| same_rows(srcs[i]));
        for (b, _) in rows.iter_mut().zip(alias).filter(|(_, a)| *a) {
            b.resize(len / 4, 0.0);
        }
        let per = [Space::Sbuf, Space::Psum].map(|s| self.per_partition(s));
        let (sbuf, psum) = self.stores.split_at_mut(1);
        let (out_store, other) = match dst.space {
            Space::Sbuf => (&mut sbuf[0], &psum[0]),
            Space::Psum => (&mut psum[0], &sbuf[0]),
        };
        let start = |r: &Resolved, k: u32| {
            (r.first_partition + k) as usize * per[r.space as usize] + r.base as usize
        };
        for k in 0..parts {
            let at = start(dst, k);
            out_store.mark(at, at + len);
            let (below, rest) = out_store.bytes.split_at_mut(at);
            let (out, above) = rest.split_at_mut(len);
            for (b, _) in rows.iter_mut().zip(alias).filter(|(_, a)| *a) {
                b.copy_from_slice(bytemuck::cast_slice(out));
            }
            let ins: [&[f32]; N] = std::array::from_fn(|i| {
                let s = srcs[i];
                let from = start(s, k);
                let bytes = if alias[i] {
                    return rows[i].as_slice();
                } else if s.space != dst.space {
                    &other.bytes[from..from + len]
                } else if from + len <= at {
                    &below[from..from + len]
                } else {
                    // `apart`: the row lies wholly above the destination row.
                    &above[from - at - len..from - at]
                };
                bytemuck::cast_slice(bytes)
            });
            f(k as usize, &ins, bytemuck::cast_slice_mut(out));
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
    /// that memory's partition-major bytes; `None` where [`OnChip::read_flat`] fails.
    #[inline]
    pub(crate) fn run_at(&self, addr: u32, len: usize) -> Option<(Space, usize)> {
        let loc = self.geom.locate(addr);
        let per = self.per_partition(loc.space);
        (loc.partition < PARTITIONS && loc.offset as usize + len <= per).then_some((
            loc.space,
            loc.partition as usize * per + loc.offset as usize,
        ))
    }

    /// All bytes of `space`, partition-major (indices from [`OnChip::run_at`]).
    #[inline]
    pub(crate) fn space_bytes(&self, space: Space) -> &[u8] {
        &self.store(space).bytes
    }

    /// Write `data` at index `at` of `space`'s partition-major bytes (from
    /// [`OnChip::run_at`]).
    #[inline]
    pub(crate) fn write_run(&mut self, space: Space, at: usize, data: &[u8]) {
        let s = self.store_mut(space);
        if !data.is_empty() {
            s.mark(at, at + data.len());
        }
        s.bytes[at..at + data.len()].copy_from_slice(data);
    }

    fn check_flat(&self, addr: u32, len: usize) -> Result<(Space, u32, usize), AccessError> {
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

/// Kind of a DRAM variable, as def.json names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VarKind {
    /// Kernel input (loaded from `--input` or the NEFF's own data).
    Input,
    /// Kernel output (written as `.npy` after the run).
    Output,
    /// Constant data shipped in the NEFF.
    File,
    /// Any other variable (scratch, state).
    Other,
}

/// One DRAM variable: a named, sized byte buffer.
#[derive(Clone, Debug)]
pub struct DramVar {
    /// Name from def.json.
    pub name: String,
    /// Kind.
    pub kind: VarKind,
    /// Contents.
    pub bytes: Vec<u8>,
}

/// The DRAM variables of a kernel, addressed by variable id.
#[derive(Clone, Debug, Default)]
pub struct Dram {
    vars: Vec<(u32, DramVar)>,
}

impl Dram {
    /// Add a variable under `id`. Ids need not be dense.
    pub fn insert(&mut self, id: u32, var: DramVar) {
        match self.vars.binary_search_by_key(&id, |(i, _)| *i) {
            Ok(i) => self.vars[i].1 = var,
            Err(i) => self.vars.insert(i, (id, var)),
        }
    }

    /// Variable by id.
    pub fn get(&self, id: u32) -> Option<&DramVar> {
        self.vars
            .binary_search_by_key(&id, |(i, _)| *i)
            .ok()
            .map(|i| &self.vars[i].1)
    }

    /// Variable by id, writable.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut DramVar> {
        self.vars
            .binary_search_by_key(&id, |(i, _)| *i)
            .ok()
            .map(move |i| &mut self.vars[i].1)
    }

    /// Variable id by name.
    pub fn id_of(&self, name: &str) -> Option<u32> {
        self.vars
            .iter()
            .find(|(_, v)| v.name == name)
            .map(|(i, _)| *i)
    }

    /// All variables in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &DramVar)> {
        self.vars.iter().map(|(i, v)| (*i, v))
    }

    /// `len` bytes at `offset` of variable `id`.
    pub fn read(&self, id: u32, offset: u64, len: usize) -> Result<&[u8], AccessError> {
        let v = self.get(id).ok_or(AccessError::UnknownVar(id))?;
        let r = Self::range(v, offset, len)?;
        Ok(&v.bytes[r])
    }

    /// Writable `len` bytes at `offset` of variable `id`.
    pub fn write(&mut self, id: u32, offset: u64, len: usize) -> Result<&mut [u8], AccessError> {
        let v = self.get_mut(id).ok_or(AccessError::UnknownVar(id))?;
        let r = Self::range(v, offset, len)?;
        Ok(&mut v.bytes[r])
    }

    fn range(v: &DramVar, offset: u64, len: usize) -> Result<std::ops::Range<usize>, AccessError> {
        let hi = offset.checked_add(len as u64).unwrap_or(u64::MAX);
        if hi > v.bytes.len() as u64 {
            return Err(AccessError::Dram {
                var: v.name.clone(),
                lo: offset as i64,
                hi: hi.min(i64::MAX as u64) as i64,
                size: v.bytes.len() as u64,
            });
        }
        Ok(offset as usize..hi as usize)
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
    fn map_rows_equals_gather_compute_scatter_or_declines() {
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
            let mut rows = [Vec::new(), Vec::new()];
            let done = fast.map_rows_f32([&ra, &rb], &rd, &mut rows, |p, [x, y], o| {
                for ((o, x), y) in o.iter_mut().zip(*x).zip(*y) {
                    *o = x * 3.0 - y + p as f32;
                }
            });
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
        let mut s = Store::new(260 * GRANULE + 100).unwrap();
        for (lo, hi) in [
            (0, 1),
            (GRANULE - 1, GRANULE + 1),
            (64 * GRANULE + 5, 66 * GRANULE),
            // Across four words of the map.
            (50 * GRANULE + 7, 200 * GRANULE - 3),
            (260 * GRANULE, 260 * GRANULE + 100),
        ] {
            s.bytes[lo..hi].fill(0xAB);
            s.mark(lo, hi);
        }
        // Granules 10 and 230 are written without being marked: clearing leaves them alone.
        s.bytes[10 * GRANULE] = 7;
        s.bytes[230 * GRANULE] = 8;
        s.clear();
        assert!(s.dirty.iter().all(|&w| w == 0));
        let nonzero: Vec<usize> = (0..s.bytes.len()).filter(|&i| s.bytes[i] != 0).collect();
        assert_eq!(nonzero, vec![10 * GRANULE, 230 * GRANULE]);
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
        let mut d = Dram::default();
        d.insert(
            7,
            DramVar {
                name: "x".into(),
                kind: VarKind::Input,
                bytes: vec![0; 16],
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
