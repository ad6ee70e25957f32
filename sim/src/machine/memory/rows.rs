//! Row loops over fp32 tiles in place: every operand is one contiguous, word-aligned run of the
//! same length in each of the same number of partitions (*dense rows*), so that a tile is
//! `partitions` rows at a fixed stride (the store's partition stride) and an elementwise op
//! is one loop over rows and one over words, without gathering the operands into buffers or
//! scattering the result.
//!
//! * [`OnChip::zip_rows_f32`]: `dst[k][i] = elem(row(k), [src_0[k][i], …])` in memory.
//! * [`OnChip::read_rows_f32`] / [`OnChip::write_rows_f32`]: rows into a partition-major buffer
//!   (mapped per element on the way) and back, for ops that evaluate a whole tile at once.
//!
//! Each records the same accesses as gathering its sources in order and scattering its
//! destination, and marks the destination rows written; each declines (returns `false` having
//! read, written and recorded nothing) when an operand is not dense rows, and `zip_rows_f32`
//! also when a destination row could meet a source row other than its own.

use super::{OnChip, PARTITIONS};
use crate::machine::geometry::Space;
use crate::machine::pattern::Resolved;
use crate::machine::race::ChipAccess;

/// Where an operand's rows lie in its memory.
#[derive(Clone, Copy, Debug)]
struct Rows {
    space: Space,
    /// Byte offset of the first row in the memory.
    first: usize,
    /// Bytes from one row to the next (the store's partition stride).
    stride: usize,
}

impl Rows {
    fn at(&self, k: usize) -> usize {
        self.first + k * self.stride
    }
}

/// Whether `s` starts at the row of `d` (the same rows when the shapes are equal).
fn same_rows(s: &Resolved, d: &Resolved) -> bool {
    s.space == d.space && s.first_partition == d.first_partition && s.base == d.base
}

/// Whether the rows of `s` either are the rows of `d` or meet none of them: other memory, other
/// bytes of each partition, or other partitions.
fn same_or_apart(s: &Resolved, d: &Resolved) -> bool {
    let len = d.run_bytes as u64;
    same_rows(s, d)
        || s.space != d.space
        || u64::from(s.base) + len <= u64::from(d.base)
        || u64::from(d.base) + len <= u64::from(s.base)
        || s.first_partition + d.partitions <= d.first_partition
        || d.first_partition + d.partitions <= s.first_partition
}

impl OnChip {
    /// The rows of `r` when it is dense rows of `len` bytes over `parts` partitions lying
    /// wholly inside its (word-aligned) memory.
    fn dense_rows(&self, r: &Resolved, len: usize, parts: u32) -> Option<Rows> {
        let (per, stride) = (self.per_partition(r.space), self.stride(r.space));
        let bytes = &self.store(r.space).bytes;
        let fits = cfg!(target_endian = "little")
            && r.is_dense()
            && r.run_bytes as usize == len
            && r.partitions == parts
            && len.is_multiple_of(4)
            && r.base.is_multiple_of(4)
            && stride.is_multiple_of(4)
            && (bytes.as_ptr() as usize).is_multiple_of(4)
            && r.base as usize + len <= per
            && r.first_partition + parts <= PARTITIONS
            && (r.first_partition + parts) as usize * stride <= bytes.len();
        fits.then_some(Rows {
            space: r.space,
            first: r.first_partition as usize * stride + r.base as usize,
            stride,
        })
    }

    /// Mark the rows of dense rows `r` written.
    fn mark_rows(&mut self, r: &Resolved) {
        if r.run_bytes > 0 && r.partitions > 0 {
            let (lo, hi) = (r.base as usize, (r.base + r.run_bytes) as usize);
            let s = self.store_mut(r.space);
            s.mark(r.first_partition as usize, r.partitions as usize, lo, hi);
        }
    }

    /// Whether `srcs` and `dst` qualify for [`OnChip::zip_rows_f32`].
    fn zip_layout<const N: usize>(
        &self,
        srcs: [&Resolved; N],
        dst: &Resolved,
    ) -> Option<([Rows; N], Rows)> {
        let (len, parts) = (dst.run_bytes as usize, dst.partitions);
        let d = self.dense_rows(dst, len, parts)?;
        let mut s = [d; N];
        for (slot, r) in s.iter_mut().zip(srcs) {
            if !same_or_apart(r, dst) {
                return None;
            }
            *slot = self.dense_rows(r, len, parts)?;
        }
        Some((s, d))
    }

    /// `dst[k][i] = elem(&row(k), [src_0[k][i], …, src_{N-1}[k][i]])` for every partition `k`
    /// of the tile and word `i` of its rows, in place (see the module text). A source may be
    /// the destination itself (each word is read before it is written); false when the
    /// operands do not qualify.
    pub fn zip_rows_f32<const N: usize, R>(
        &mut self,
        srcs: [&Resolved; N],
        dst: &Resolved,
        mut row: impl FnMut(usize) -> R,
        elem: impl Fn(&R, [f32; N]) -> f32,
    ) -> bool {
        let Some((s, d)) = self.zip_layout(srcs, dst) else {
            return false;
        };
        for r in srcs {
            self.note(|| ChipAccess::Read(r.clone()));
        }
        self.note(|| ChipAccess::Write(dst.clone()));
        let (len, parts) = (dst.run_bytes as usize, dst.partitions);
        self.mark_rows(dst);
        // Every pointer comes from one mutable borrow of each memory's bytes.
        let bases: [*mut u8; 2] = {
            let (sbuf, psum) = self.stores.split_at_mut(1);
            [sbuf[0].bytes.as_mut_ptr(), psum[0].bytes.as_mut_ptr()]
        };
        let ptr = |r: Rows| bases[r.space as usize].wrapping_add(r.first) as *mut f32;
        let loops = ZipLoops {
            src: s.map(|r| ptr(r) as *const f32),
            src_stride: s.map(|r| r.stride / 4),
            dst: ptr(d),
            dst_stride: d.stride / 4,
            rows: parts as usize,
            len: len / 4,
        };
        // SAFETY: `dense_rows` checked that every row of every operand lies inside its memory
        // and is word-aligned; `same_or_apart` that a source row is its destination row or
        // meets no destination row; the memories stay borrowed (`self`) throughout.
        unsafe { loops.run(&mut row, &elem) };
        true
    }

    /// `out` (cleared first) = `elem(&row(k), src[k][i])` for every partition `k` and word `i`,
    /// partition-major: [`OnChip::gather_f32_into`] mapped per element. False when `src` is not
    /// dense rows.
    pub fn read_rows_f32<R>(
        &self,
        src: &Resolved,
        out: &mut Vec<f32>,
        mut row: impl FnMut(usize) -> R,
        elem: impl Fn(&R, f32) -> f32,
    ) -> bool {
        let (len, parts) = (src.run_bytes as usize, src.partitions);
        let Some(s) = self.dense_rows(src, len, parts) else {
            return false;
        };
        self.note(|| ChipAccess::Read(src.clone()));
        let words: &[f32] = bytemuck::cast_slice(&self.store(s.space).bytes[..]);
        let n = len / 4;
        out.clear();
        out.resize(n * parts as usize, 0.0);
        if n == 0 {
            return true;
        }
        for (k, o) in out.chunks_exact_mut(n).enumerate() {
            let r = row(k);
            let at = s.at(k) / 4;
            map_short(o, &words[at..at + n], |x| elem(&r, x));
        }
        true
    }

    /// Write `vals` (partition-major, `dst.total_bytes() / 4` words) into the rows of `dst`:
    /// [`OnChip::scatter`] of fp32 words. False, with nothing written, when `dst` is not dense
    /// rows or `vals` is not its length.
    pub fn write_rows_f32(&mut self, dst: &Resolved, vals: &[f32]) -> bool {
        let (len, parts) = (dst.run_bytes as usize, dst.partitions);
        let Some(d) = self.dense_rows(dst, len, parts) else {
            return false;
        };
        let n = len / 4;
        if vals.len() != n * parts as usize {
            return false;
        }
        self.note(|| ChipAccess::Write(dst.clone()));
        self.mark_rows(dst);
        if n == 0 {
            return true;
        }
        let words: &mut [f32] = bytemuck::cast_slice_mut(&mut self.store_mut(d.space).bytes[..]);
        for (k, v) in vals.chunks_exact(n).enumerate() {
            let at = d.at(k) / 4;
            map_short(&mut words[at..at + n], v, |x| x);
        }
        true
    }

    /// Whether [`OnChip::read_rows_f32`] of `src` and [`OnChip::write_rows_f32`] of `dst`
    /// both apply (equal row shapes).
    pub fn rows_pair_f32(&self, src: &Resolved, dst: &Resolved) -> bool {
        let (len, parts) = (dst.run_bytes as usize, dst.partitions);
        self.dense_rows(dst, len, parts).is_some() && self.dense_rows(src, len, parts).is_some()
    }
}

/// `dst[i] = f(src[i])` (equal lengths) in whole blocks of [`LANES`] words and then words: a
/// short row costs no call and no overlap check.
#[inline(always)]
fn map_short(dst: &mut [f32], src: &[f32], f: impl Fn(f32) -> f32) {
    let (d8, d1) = dst.as_chunks_mut::<LANES>();
    let (s8, s1) = src.as_chunks::<LANES>();
    for (d, s) in d8.iter_mut().zip(s8) {
        *d = s.map(&f);
    }
    for (d, &s) in d1.iter_mut().zip(s1) {
        *d = f(s);
    }
}

/// Words per block of the row loop (one AVX2 register of fp32).
const LANES: usize = 8;

/// The raw rows of one [`OnChip::zip_rows_f32`]: `rows` rows of `len` words per operand, row
/// `k` of operand `j` at `src[j] + k × src_stride[j]` words.
struct ZipLoops<const N: usize> {
    src: [*const f32; N],
    src_stride: [usize; N],
    dst: *mut f32,
    dst_stride: usize,
    rows: usize,
    len: usize,
}

impl<const N: usize> ZipLoops<N> {
    /// Run the loops, compiled for AVX2 as well and chosen at run time (the results do not
    /// depend on it: each element is the same fp32 expression).
    ///
    /// # Safety
    ///
    /// Every row of every operand lies inside one live allocation that nothing else accesses
    /// meanwhile and is word-aligned; a source row either is its destination row or overlaps no
    /// destination row.
    #[inline(always)]
    unsafe fn run<R>(&self, row: &mut impl FnMut(usize) -> R, elem: &impl Fn(&R, [f32; N]) -> f32) {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2<const N: usize, R>(
                l: &ZipLoops<N>,
                row: &mut impl FnMut(usize) -> R,
                elem: &impl Fn(&R, [f32; N]) -> f32,
            ) {
                // SAFETY: the caller's.
                unsafe { l.rows_loop(row, elem) }
            }
            if crate::numerics::simd::Loop::Avx2.host_has() {
                // SAFETY: the CPU has AVX2; the rest is the caller's.
                return unsafe { avx2(self, row, elem) };
            }
        }
        // SAFETY: the caller's.
        unsafe { self.rows_loop(row, elem) }
    }

    /// # Safety
    ///
    /// As [`ZipLoops::run`].
    #[inline(always)]
    unsafe fn rows_loop<R>(
        &self,
        row: &mut impl FnMut(usize) -> R,
        elem: &impl Fn(&R, [f32; N]) -> f32,
    ) {
        for k in 0..self.rows {
            let r = row(k);
            let src: [*const f32; N] =
                std::array::from_fn(|j| self.src[j].wrapping_add(k * self.src_stride[j]));
            let dst = self.dst.wrapping_add(k * self.dst_stride);
            // Blocks of `LANES` words: every source block is read before the destination block
            // is written (values in registers, no overlap checks), then the last words.
            let blocks = self.len / LANES;
            for b in 0..blocks {
                // SAFETY: block `b` of row `k` of each operand is in bounds; a source block is
                // read before the destination block is written, and no other destination
                // block can meet it.
                unsafe {
                    let v: [[f32; LANES]; N] = std::array::from_fn(|j| {
                        src[j]
                            .add(b * LANES)
                            .cast::<[f32; LANES]>()
                            .read_unaligned()
                    });
                    let out: [f32; LANES] =
                        std::array::from_fn(|l| elem(&r, std::array::from_fn(|j| v[j][l])));
                    dst.add(b * LANES)
                        .cast::<[f32; LANES]>()
                        .write_unaligned(out);
                }
            }
            for i in blocks * LANES..self.len {
                // SAFETY: as above, word by word.
                unsafe {
                    let v: [f32; N] = std::array::from_fn(|j| src[j].add(i).read());
                    dst.add(i).write(elem(&r, v));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::geometry::Geometry;
    use crate::machine::pattern::{Dim, TensorPattern};
    use tpbsim_isa::Gen;

    /// A v3 memory whose first bytes of every partition hold distinct fp32 values.
    fn filled() -> OnChip {
        let mut m = OnChip::new(Geometry::of(Gen::V3)).unwrap();
        for space in [Space::Sbuf, Space::Psum] {
            for p in 0..PARTITIONS {
                let bytes = &mut m.partition_mut(space, p)[..1024];
                for (i, w) in bytes.chunks_exact_mut(4).enumerate() {
                    let v = (p * 1000 + i as u32) as f32
                        * if space == Space::Psum { -1.0 } else { 1.0 };
                    w.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        m
    }

    fn rows(space: Space, first: u32, parts: u32, offset: u32, words: u32) -> TensorPattern {
        let g = Geometry::of(Gen::V3);
        let addr = match space {
            Space::Sbuf => g.sbuf_address(first, offset),
            Space::Psum => g.psum_address(first, offset),
        };
        TensorPattern::new(addr, parts, 4, &[Dim::new(1, words)])
    }

    fn same_memories(a: &OnChip, b: &OnChip) {
        for space in [Space::Sbuf, Space::Psum] {
            for p in 0..PARTITIONS {
                assert_eq!(a.partition(space, p), b.partition(space, p), "{space} {p}");
            }
        }
    }

    #[test]
    fn read_then_write_rows_equals_gather_then_scatter() {
        // PSUM rows in, SBUF rows out; row lengths around a block of LANES words.
        for words in [1, 7, 8, 9, 17] {
            let (src, dst) = (
                rows(Space::Psum, 3, 9, 64, words),
                rows(Space::Sbuf, 100, 9, 516, words),
            );
            let (mut fast, mut slow) = (filled(), filled());
            let (rs, rd) = (fast.resolve(&src).unwrap(), fast.resolve(&dst).unwrap());
            let mut v = vec![5.0; 3];
            assert!(fast.rows_pair_f32(&rs, &rd));
            assert!(fast.read_rows_f32(&rs, &mut v, |p| p as f32, |p, x| x * 2.0 + p));
            assert!(fast.write_rows_f32(&rd, &v));
            let x = slow.gather_f32(&rs).unwrap();
            let want: Vec<f32> = x
                .iter()
                .enumerate()
                .map(|(i, x)| x * 2.0 + (i / words as usize) as f32)
                .collect();
            assert_eq!(v, want, "{words} words");
            slow.scatter(&rd, bytemuck::cast_slice(&want));
            same_memories(&fast, &slow);
        }
    }

    #[test]
    fn zip_rows_in_place_equals_gather_compute_scatter() {
        for words in [1, 7, 8, 9, 17] {
            let t = rows(Space::Sbuf, 60, 10, 8, words);
            let (mut fast, mut slow) = (filled(), filled());
            let r = fast.resolve(&t).unwrap();
            assert!(fast.zip_rows_f32([&r], &r, |p| p as f32, |p, [x]| x * 3.0 - p));
            let out: Vec<f32> = slow
                .gather_f32(&r)
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, x)| x * 3.0 - (i / words as usize) as f32)
                .collect();
            slow.scatter(&r, bytemuck::cast_slice(&out));
            same_memories(&fast, &slow);
        }
    }

    #[test]
    fn rows_decline_what_is_not_dense_rows_and_leave_everything() {
        let mut m = filled();
        let strided = TensorPattern::new(
            Geometry::of(Gen::V3).sbuf_address(0, 0),
            4,
            4,
            &[Dim::new(2, 8)],
        );
        let rs = m.resolve(&strided).unwrap();
        let rd = m.resolve(&rows(Space::Sbuf, 0, 4, 512, 8)).unwrap();
        let mut v = vec![1.0; 2];
        assert!(!m.rows_pair_f32(&rs, &rd));
        assert!(!m.read_rows_f32(&rs, &mut v, |_| (), |_, x| x));
        assert_eq!(v, [1.0; 2], "declined: the buffer is left alone");
        // Wrong length: nothing written.
        assert!(!m.write_rows_f32(&rd, &[0.0; 31]));
        assert!(!m.zip_rows_f32([&rs], &rd, |_| (), |_, [x]| x));
        same_memories(&m, &filled());
    }
}
