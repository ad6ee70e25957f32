//! Tensor access patterns over SBUF/PSUM: bounds checking and fast run iteration.
//!
//! A pattern is the partition dimension (a start partition folded into the address plus a
//! partition count) and up to four free dimensions, each a signed stride in elements and a
//! count, dimension 0 innermost — the TENSOR1D..TENSOR4D descriptors. Resolving a pattern
//! checks every byte it can touch against the generation's geometry once; iteration then
//! visits maximal contiguous byte runs (innermost dimensions merged when they are dense).

use super::geometry::{Geometry, Space, PARTITIONS};

/// One free dimension: stride in elements (signed) and element count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Dim {
    /// Distance between consecutive indices, in elements.
    pub stride: i32,
    /// Number of indices (≥ 1).
    pub num: u32,
}

impl Dim {
    /// A dimension.
    pub const fn new(stride: i32, num: u32) -> Dim {
        Dim { stride, num }
    }
}

/// Maximum number of free dimensions of a pattern.
pub const MAX_DIMS: usize = 4;

/// An access pattern over on-chip memory, as given by an instruction operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorPattern {
    /// Partition-folded byte address of element 0 of the first partition.
    pub addr: u32,
    /// Number of partitions, starting at the partition of `addr`.
    pub partitions: u32,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// Number of free dimensions in `dims` (0..=4; 0 means one element per partition).
    pub ndims: u8,
    /// Free dimensions, innermost first.
    pub dims: [Dim; MAX_DIMS],
}

impl TensorPattern {
    /// A pattern with the given free dimensions (innermost first; at most four are used).
    pub fn new(addr: u32, partitions: u32, elem_bytes: u32, dims: &[Dim]) -> TensorPattern {
        let mut d = [Dim::new(1, 1); MAX_DIMS];
        let n = dims.len().min(MAX_DIMS);
        d[..n].copy_from_slice(&dims[..n]);
        TensorPattern {
            addr,
            partitions,
            elem_bytes,
            ndims: n as u8,
            dims: d,
        }
    }

    /// A dense pattern: `partitions` × `elems` contiguous elements.
    pub fn dense(addr: u32, partitions: u32, elem_bytes: u32, elems: u32) -> TensorPattern {
        TensorPattern::new(addr, partitions, elem_bytes, &[Dim::new(1, elems)])
    }

    /// The free dimensions in use.
    pub fn free_dims(&self) -> &[Dim] {
        &self.dims[..self.ndims as usize]
    }

    /// Elements per partition (product of the counts).
    pub fn elems_per_partition(&self) -> u64 {
        // Saturating: a count past 2^64 is refused by the budget, not wrapped.
        self.free_dims()
            .iter()
            .fold(1u64, |acc, d| acc.saturating_mul(d.num as u64))
    }

    /// Elements in total.
    pub fn elems(&self) -> u64 {
        self.elems_per_partition()
            .saturating_mul(self.partitions as u64)
    }
}

/// Why an access pattern cannot be used. Rendered as a sentence naming the address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// Partition range beyond the partition count.
    #[error(
        "{space} access at 0x{addr:08x}: partitions {first}..{end} exceed the {limit} partitions"
    )]
    Partitions {
        /// Memory.
        space: Space,
        /// Start address.
        addr: u32,
        /// First partition.
        first: u32,
        /// One past the last partition.
        end: u64,
        /// Partition count.
        limit: u32,
    },
    /// Byte range outside the active bytes of a partition.
    #[error("{space} access at 0x{addr:08x}: bytes {lo}..{hi} of each partition are outside the active 0..{limit}")]
    Bytes {
        /// Memory.
        space: Space,
        /// Start address.
        addr: u32,
        /// Lowest byte offset touched.
        lo: i64,
        /// One past the highest byte offset touched.
        hi: i64,
        /// Active bytes per partition.
        limit: u32,
    },
    /// A zero count, zero partitions or zero element size.
    #[error("access at 0x{addr:08x}: {what} is zero")]
    Empty {
        /// Start address.
        addr: u32,
        /// Which count.
        what: &'static str,
    },
    /// A DRAM access outside its variable.
    #[error("DRAM variable `{var}`: bytes {lo}..{hi} are outside its {size} bytes")]
    Dram {
        /// Variable name.
        var: String,
        /// Lowest byte offset touched.
        lo: i64,
        /// One past the highest byte offset touched.
        hi: i64,
        /// Size of the variable.
        size: u64,
    },
    /// A DRAM variable id that the NEFF does not define.
    #[error("DRAM variable id {0} is not defined")]
    UnknownVar(u32),
    /// A register-addressed operand (the machine resolves registers before patterns).
    #[error("access at 0x{addr:08x}: {what}")]
    Unsupported {
        /// Raw address.
        addr: u32,
        /// What is not supported.
        what: &'static str,
    },
}

/// A bounds-checked pattern, ready to iterate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Memory.
    pub space: Space,
    /// First partition.
    pub first_partition: u32,
    /// Partition count.
    pub partitions: u32,
    /// Byte offset of element 0 inside each partition.
    pub base: u32,
    /// Bytes per contiguous run.
    pub run_bytes: u32,
    /// Outer loops over runs, innermost first: (byte stride, count).
    loops: [(i64, u32); MAX_DIMS],
    nloops: u8,
    /// Total bytes per partition.
    pub bytes_per_partition: u64,
}

/// Byte extent `[lo, hi)` touched by `dims` relative to element 0.
fn extent(dims: &[Dim], elem_bytes: u32) -> (i64, i64) {
    let mut lo = 0i64;
    let mut hi = 0i64;
    for d in dims {
        let span = d.stride as i64 * elem_bytes as i64 * (d.num as i64 - 1);
        if span >= 0 {
            hi += span;
        } else {
            lo += span;
        }
    }
    (lo, hi + elem_bytes as i64)
}

impl Resolved {
    /// Check `p` against `geom` and prepare its runs.
    pub fn new(geom: &Geometry, p: &TensorPattern) -> Result<Resolved, AccessError> {
        if p.partitions == 0 {
            return Err(AccessError::Empty {
                addr: p.addr,
                what: "the partition count",
            });
        }
        if p.elem_bytes == 0 {
            return Err(AccessError::Empty {
                addr: p.addr,
                what: "the element size",
            });
        }
        if p.free_dims().iter().any(|d| d.num == 0) {
            return Err(AccessError::Empty {
                addr: p.addr,
                what: "a dimension count",
            });
        }
        let loc = geom.locate(p.addr);
        let end = loc.partition as u64 + p.partitions as u64;
        if end > PARTITIONS as u64 {
            return Err(AccessError::Partitions {
                space: loc.space,
                addr: p.addr,
                first: loc.partition,
                end,
                limit: PARTITIONS,
            });
        }
        let limit = geom.bytes_per_partition(loc.space);
        let (lo, hi) = extent(p.free_dims(), p.elem_bytes);
        let (lo, hi) = (lo + loc.offset as i64, hi + loc.offset as i64);
        if lo < 0 || hi > limit as i64 {
            return Err(AccessError::Bytes {
                space: loc.space,
                addr: p.addr,
                lo,
                hi,
                limit,
            });
        }
        // Merge dense innermost dimensions into one run.
        let eb = p.elem_bytes as i64;
        let mut dims = p
            .free_dims()
            .iter()
            .filter(|d| d.num > 1)
            .copied()
            .peekable();
        let mut run = eb;
        while let Some(d) = dims.peek() {
            if d.stride as i64 * eb == run {
                run *= d.num as i64;
                dims.next();
            } else {
                break;
            }
        }
        let mut loops = [(0i64, 1u32); MAX_DIMS];
        let mut nloops = 0u8;
        for d in dims {
            loops[nloops as usize] = (d.stride as i64 * eb, d.num);
            nloops += 1;
        }
        Ok(Resolved {
            space: loc.space,
            first_partition: loc.partition,
            partitions: p.partitions,
            base: loc.offset,
            run_bytes: run as u32,
            loops,
            nloops,
            bytes_per_partition: p.elems_per_partition().saturating_mul(p.elem_bytes as u64),
        })
    }

    /// Total bytes the pattern covers.
    pub fn total_bytes(&self) -> u64 {
        self.bytes_per_partition
            .saturating_mul(self.partitions as u64)
    }

    /// The bytes of each partition the pattern touches, `[lowest, highest + 1)` (every run
    /// lies inside it).
    pub fn span(&self) -> std::ops::Range<usize> {
        let (mut lo, mut hi) = (self.base as i64, self.base as i64 + self.run_bytes as i64);
        for &(stride, n) in &self.loops[..self.nloops as usize] {
            let d = stride * (n as i64 - 1);
            if d < 0 {
                lo += d;
            } else {
                hi += d;
            }
        }
        lo as usize..hi as usize
    }

    /// True when each partition is one contiguous run.
    pub fn is_dense(&self) -> bool {
        self.nloops == 0
    }

    /// Visit each run of one partition as (byte offset in the partition, length), in element
    /// order (dimension 0 fastest).
    #[inline]
    pub fn for_each_run_in_partition(&self, mut f: impl FnMut(usize, usize)) {
        let len = self.run_bytes as usize;
        let base = self.base as i64;
        if self.nloops == 0 {
            f(base as usize, len);
            return;
        }
        let loops = &self.loops[..self.nloops as usize];
        let mut idx = [0u32; MAX_DIMS];
        let mut off = base;
        loop {
            f(off as usize, len);
            // Odometer increment.
            let mut k = 0;
            loop {
                if k == loops.len() {
                    return;
                }
                idx[k] += 1;
                off += loops[k].0;
                if idx[k] < loops[k].1 {
                    break;
                }
                off -= loops[k].0 * loops[k].1 as i64;
                idx[k] = 0;
                k += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpbsim_isa::Gen;

    fn naive_offsets(p: &TensorPattern) -> Vec<i64> {
        let dims = p.free_dims();
        let n: u64 = p.elems_per_partition();
        let mut out = Vec::new();
        for mut i in 0..n {
            let mut off = 0i64;
            for d in dims {
                off += (i % d.num as u64) as i64 * d.stride as i64 * p.elem_bytes as i64;
                i /= d.num as u64;
            }
            for b in 0..p.elem_bytes as i64 {
                out.push(off + b);
            }
        }
        out
    }

    fn run_offsets(r: &Resolved) -> Vec<i64> {
        let mut out = Vec::new();
        r.for_each_run_in_partition(|o, l| {
            out.extend((o..o + l).map(|x| x as i64 - r.base as i64))
        });
        out
    }

    #[test]
    fn dense_merges_to_one_run() {
        let g = Geometry::of(Gen::V3);
        let p = TensorPattern::new(
            g.sbuf_address(4, 64),
            8,
            4,
            &[Dim::new(1, 16), Dim::new(16, 4)],
        );
        let r = Resolved::new(&g, &p).unwrap();
        assert!(r.is_dense());
        assert_eq!(r.run_bytes, 256);
        assert_eq!((r.first_partition, r.partitions, r.base), (4, 8, 64));
    }

    #[test]
    fn bounds_are_exact() {
        let g = Geometry::of(Gen::V2);
        let lim = g.sbuf_bytes_per_partition;
        // Exactly fits.
        let p = TensorPattern::dense(g.sbuf_address(0, lim - 8), 1, 4, 2);
        assert!(Resolved::new(&g, &p).is_ok());
        // One byte over.
        let p = TensorPattern::dense(g.sbuf_address(0, lim - 7), 1, 4, 2);
        assert!(matches!(
            Resolved::new(&g, &p),
            Err(AccessError::Bytes { .. })
        ));
        // Negative stride below zero.
        let p = TensorPattern::new(g.sbuf_address(0, 4), 1, 4, &[Dim::new(-1, 3)]);
        let e = Resolved::new(&g, &p).unwrap_err();
        assert!(e.to_string().contains("bytes -4..8"), "{e}");
        // Partitions past 128.
        let p = TensorPattern::dense(g.sbuf_address(100, 0), 29, 4, 1);
        assert!(matches!(
            Resolved::new(&g, &p),
            Err(AccessError::Partitions { end: 129, .. })
        ));
        // PSUM limit is 16 KiB even though the stride is 32 KiB.
        let p = TensorPattern::dense(g.psum_address(0, 16 * 1024 - 4), 1, 4, 2);
        assert!(matches!(
            Resolved::new(&g, &p),
            Err(AccessError::Bytes {
                space: Space::Psum,
                ..
            })
        ));
        let p = TensorPattern::new(0, 1, 4, &[Dim::new(1, 0)]);
        assert!(matches!(
            Resolved::new(&g, &p),
            Err(AccessError::Empty { .. })
        ));
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn runs_match_naive_enumeration(
            eb in prop::sample::select(vec![1u32, 2, 4]),
            dims in prop::collection::vec((-40i32..40, 1u32..6), 0..=4),
            base in 0u32..4096,
        ) {
            let g = Geometry::of(Gen::V4);
            let dims: Vec<Dim> = dims.into_iter().map(|(s, n)| Dim::new(s, n)).collect();
            let p = TensorPattern::new(g.sbuf_address(2, base), 3, eb, &dims);
            match Resolved::new(&g, &p) {
                Ok(r) => {
                    prop_assert_eq!(run_offsets(&r), naive_offsets(&p));
                    prop_assert_eq!(r.bytes_per_partition, p.elems_per_partition() * eb as u64);
                }
                Err(_) => {
                    let offs = naive_offsets(&p);
                    let lo = *offs.iter().min().unwrap() + base as i64;
                    prop_assert!(lo < 0);
                }
            }
        }
    }
}
