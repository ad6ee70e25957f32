//! The copy loops that resolve each side of a transfer once: its runs are prepared and
//! bounds-checked as a whole, then copied without a lookup per run. A side where some run may
//! fail is left to the checked path, which gives the same bytes and reports the failure
//! (`transfer_with`).

use super::{DmaMem, DmaSide, DMA_MAX_DIMS};
use crate::machine::memory::{Dram, OnChip};

/// The runs of a side prepared for the unchecked-index copy loops: the first run's address,
/// the run length and up to [`DMA_MAX_DIMS`] outer loops (byte step, count), innermost first,
/// exactly as [`DmaSide::for_each_run`] visits them.
#[derive(Clone, Copy, Debug)]
struct Runs {
    start: i128,
    run: usize,
    loops: [(i64, u32); DMA_MAX_DIMS],
    nloops: usize,
}

impl Runs {
    /// The runs of `side`; `None` with more outer loops than [`DMA_MAX_DIMS`].
    fn of(side: &DmaSide) -> Option<Runs> {
        let (run, dims) = side.run_and_loops();
        let mut loops = [(0i64, 1u32); DMA_MAX_DIMS];
        let mut nloops = 0;
        for d in dims {
            *loops.get_mut(nloops)? = d;
            nloops += 1;
        }
        Some(Runs {
            start: side.addr as i128,
            run: usize::try_from(run).ok()?,
            loops,
            nloops,
        })
    }

    /// The byte addresses the runs cover, `[lowest, highest + 1)`.
    fn extent(&self) -> (i128, i128) {
        let (mut lo, mut hi) = (self.start, self.start + self.run as i128);
        for &(step, n) in &self.loops[..self.nloops] {
            let d = step as i128 * (n as i128 - 1);
            if d < 0 {
                lo += d;
            } else {
                hi += d;
            }
        }
        (lo, hi)
    }

    /// Visit each run's start address as an index, in element order, while `f` returns
    /// true; returns false when `f` stopped. The caller has checked that [`Runs::extent`]
    /// lies inside `0..=isize::MAX`, so every address is a valid `usize`.
    #[inline(always)]
    fn for_each(&self, mut f: impl FnMut(usize) -> bool) -> bool {
        let start = self.start as i64;
        if self.nloops == 0 {
            return f(start as usize);
        }
        let (step0, n0) = self.loops[0];
        let outer = &self.loops[1..self.nloops];
        let mut idx = [0u32; DMA_MAX_DIMS];
        let mut base = start;
        loop {
            let mut at = base;
            for _ in 0..n0 {
                if !f(at as usize) {
                    return false;
                }
                at += step0;
            }
            let mut k = 0;
            loop {
                if k == outer.len() {
                    return true;
                }
                idx[k] += 1;
                base += outer[k].0;
                if idx[k] < outer[k].1 {
                    break;
                }
                base -= outer[k].0 * outer[k].1 as i64;
                idx[k] = 0;
                k += 1;
            }
        }
    }
}

/// Append the runs of `src` (indices from [`Runs::for_each`]) to `out`; false when a run
/// leaves `src`.
#[inline(always)]
fn gather_runs(runs: &Runs, src: &[u8], out: &mut Vec<u8>) -> bool {
    match runs.run {
        1 => runs.for_each(|a| src.get(a).map(|&b| out.push(b)).is_some()),
        2 => runs.for_each(|a| copy_run::<2>(src, a, out)),
        4 => runs.for_each(|a| copy_run::<4>(src, a, out)),
        n => runs.for_each(|a| match src.get(a..a + n) {
            Some(r) => {
                out.extend_from_slice(r);
                true
            }
            None => false,
        }),
    }
}

#[inline(always)]
fn copy_run<const N: usize>(src: &[u8], a: usize, out: &mut Vec<u8>) -> bool {
    match src.get(a..a + N) {
        Some(r) => {
            out.extend_from_slice(r);
            true
        }
        None => false,
    }
}

/// Whether every run of `r` starts and ends inside `0..limit`.
fn inside(r: &Runs, limit: u64) -> bool {
    let (lo, hi) = r.extent();
    lo >= 0 && hi <= limit.min(isize::MAX as u64) as i128
}

/// The source side without per-run lookups: `None` where a run may fail (the caller then
/// takes the checked path, which reports the failure).
pub(super) fn read_fast(s: &DmaSide, dram: &Dram, chip: &OnChip, buf: &mut Vec<u8>) -> Option<()> {
    let runs = Runs::of(s)?;
    match s.mem {
        DmaMem::Dram(var) => {
            let v = dram.get(var)?;
            if !inside(&runs, v.bytes.len() as u64) {
                return None;
            }
            gather_runs(&runs, &v.bytes, buf).then_some(())
        }
        DmaMem::OnChip => {
            // Run starts must be 32-bit addresses; each run must stay in one partition.
            let (lo, hi) = runs.extent();
            if lo < 0 || hi - runs.run as i128 > u32::MAX as i128 {
                return None;
            }
            let n = runs.run;
            runs.for_each(|a| match chip.run_at(a as u32, n) {
                Some((space, i)) => {
                    buf.extend_from_slice(&chip.space_bytes(space)[i..i + n]);
                    true
                }
                None => false,
            })
            .then_some(())
        }
    }
}

/// The destination side without per-run lookups; `None` where a run may fail (see
/// [`read_fast`]; runs written before it are written again, with the same bytes, by the
/// checked path).
pub(super) fn write_fast(
    d: &DmaSide,
    dram: &mut Dram,
    chip: &mut OnChip,
    data: &[u8],
) -> Option<u64> {
    let runs = Runs::of(d)?;
    let n = runs.run;
    let mut at = 0usize;
    let next = |at: &mut usize| {
        let r = data.get(*at..*at + n);
        *at += n;
        r
    };
    let ok = match d.mem {
        DmaMem::Dram(var) => {
            let len = dram.get(var)?.bytes.len() as u64;
            if !inside(&runs, len) {
                return None;
            }
            let bytes = dram.bytes_mut(var)?;
            runs.for_each(|a| match (bytes.get_mut(a..a + n), next(&mut at)) {
                (Some(dst), Some(src)) => {
                    dst.copy_from_slice(src);
                    true
                }
                _ => false,
            })
        }
        DmaMem::OnChip => {
            let (lo, hi) = runs.extent();
            if lo < 0 || hi - n as i128 > u32::MAX as i128 {
                return None;
            }
            runs.for_each(|a| match (chip.run_at(a as u32, n), next(&mut at)) {
                (Some((space, i)), Some(src)) => {
                    chip.write_run(space, i, src);
                    true
                }
                _ => false,
            })
        }
    };
    ok.then_some(at as u64)
}
