//! DMA transfers: strided, optionally casting copies between DRAM variables, SBUF and PSUM.
//!
//! Both the DMA_DIRECT2D bundle (0xD4) and the sidecar descriptors a DMATRIGGER (0xC1) fires
//! are reduced to one [`DmaDesc`]: a source and a destination [`DmaSide`], each a start address,
//! a number format and up to four (byte step, count) dimensions, innermost first. The transfer
//! reads the source elements in order, converts them when the formats differ, and writes them
//! to the destination elements in the same order. Element counts must agree. On-chip addresses
//! are partition-folded; every contiguous run must stay inside one partition's active bytes.
//!
//! Transfers complete synchronously, when the triggering bundle executes (see `docs/machine.md`).
//! A transfer of more than [`CHUNK_VALUES`] values is streamed: both sides are bounds-checked,
//! then each chunk is read whole, converted and written before the next chunk is read, so the
//! working memory is two chunks whatever the transfer moves.

use super::geometry::Geometry;
use super::memory::{Dram, OnChip};
use super::pattern::AccessError;
use crate::numerics::cast::{cast_slice, CastPolicy};
use tpbsim_isa::NumFormat;

/// Where one side of a transfer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaMem {
    /// A DRAM variable, by id; addresses are byte offsets into it.
    Dram(u32),
    /// SBUF/PSUM; addresses are partition-folded byte addresses.
    OnChip,
}

/// Maximum number of dimensions of one side.
pub const DMA_MAX_DIMS: usize = 4;

/// One side of a transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaSide {
    /// Memory.
    pub mem: DmaMem,
    /// Start address (DRAM byte offset or on-chip byte address).
    pub addr: u64,
    /// Element format.
    pub format: NumFormat,
    /// (byte step, count) per dimension, innermost first; empty means one element.
    pub dims: Vec<(i64, u32)>,
}

impl DmaSide {
    /// Number of elements.
    pub fn elems(&self) -> u64 {
        // Saturating: a count past 2^64 is refused by the budgets, not wrapped.
        self.dims
            .iter()
            .fold(1u64, |acc, d| acc.saturating_mul(d.1 as u64))
    }

    /// The bytes of one run (the dense innermost dimensions merged) and the dimensions that
    /// step from run to run, innermost first (dimensions of count 1 or 0 are skipped).
    fn run_and_loops(&self) -> (i64, impl Iterator<Item = (i64, u32)> + '_) {
        let eb = self.format.container_bytes() as i64;
        let mut dims = self.dims.iter().filter(|d| d.1 > 1).copied().peekable();
        let mut run = eb;
        while let Some(&(step, n)) = dims.peek() {
            match run.checked_mul(n as i64) {
                Some(r) if step == run => {
                    run = r;
                    dims.next();
                }
                _ => break,
            }
        }
        (run, dims)
    }

    /// Visit maximal contiguous byte runs as (start address, length) in element order; a
    /// side with a dimension of count 0 has no runs.
    pub(crate) fn for_each_run(
        &self,
        mut f: impl FnMut(i128, usize) -> Result<(), AccessError>,
    ) -> Result<(), AccessError> {
        if self.elems() == 0 {
            return Ok(());
        }
        let (run, dims) = self.run_and_loops();
        let loops: Vec<(i128, u32)> = dims.map(|(s, n)| (s as i128, n)).collect();
        odometer(self.addr as i128, &loops, |at| f(at, run as usize))
    }
}

/// Call `f` with every start address `start + Σ i_k · step_k` (`i_k < count_k`), the first
/// loop innermost, until `f` fails.
fn odometer<E>(
    start: i128,
    loops: &[(i128, u32)],
    mut f: impl FnMut(i128) -> Result<(), E>,
) -> Result<(), E> {
    let mut idx = vec![0u32; loops.len()];
    let mut at = start;
    loop {
        f(at)?;
        let mut k = 0;
        loop {
            if k == loops.len() {
                return Ok(());
            }
            idx[k] += 1;
            at += loops[k].0;
            if idx[k] < loops[k].1 {
                break;
            }
            at -= loops[k].0 * loops[k].1 as i128;
            idx[k] = 0;
            k += 1;
        }
    }
}

impl DmaSide {
    /// Visit contiguous byte runs `(start address, length)` that together cover exactly the
    /// bytes [`DmaSide::for_each_run`] visits — the same set, not the same order: the
    /// dimensions are taken by increasing step magnitude (a negative step walks the same
    /// addresses from the other end) and folded into the run while each step is at most the
    /// run so far (the copies abut or overlap), so a transposing pattern gives one run per
    /// outer position instead of one per element. Used to record a transfer's accesses.
    pub(crate) fn for_each_covered_run(&self, mut f: impl FnMut(i128, usize)) {
        if self.elems() == 0 {
            return;
        }
        let mut start = self.addr as i128;
        let mut dims: Vec<(i128, u32)> = Vec::with_capacity(self.dims.len());
        for &(step, n) in &self.dims {
            if n <= 1 || step == 0 {
                continue;
            }
            let mut s = step as i128;
            if s < 0 {
                start += s * (n as i128 - 1);
                s = -s;
            }
            dims.push((s, n));
        }
        dims.sort_unstable_by_key(|d| d.0);
        let mut run = self.format.container_bytes() as i128;
        let mut k = 0;
        while k < dims.len() && dims[k].0 <= run {
            run += dims[k].0 * (dims[k].1 as i128 - 1);
            k += 1;
        }
        let _ = odometer::<()>(start, &dims[k..], |at| {
            f(at, run as usize);
            Ok(())
        });
    }
}

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
fn read_fast(s: &DmaSide, dram: &Dram, chip: &OnChip, buf: &mut Vec<u8>) -> Option<()> {
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
fn write_fast(d: &DmaSide, dram: &mut Dram, chip: &mut OnChip, data: &[u8]) -> Option<u64> {
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
            let v = dram.get_mut(var)?;
            if !inside(&runs, v.bytes.len() as u64) {
                return None;
            }
            let bytes = &mut v.bytes;
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

/// One transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaDesc {
    /// Source.
    pub from: DmaSide,
    /// Destination.
    pub to: DmaSide,
}

/// Which side of a transfer failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The source.
    From,
    /// The destination.
    To,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::From => "from",
            Side::To => "to",
        })
    }
}

/// Why a transfer failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DmaError {
    /// A side leaves its memory.
    #[error("`{side}` side: {err}")]
    Access {
        /// Which side.
        side: Side,
        /// The failure.
        err: AccessError,
    },
    /// Element counts differ.
    #[error("source has {from} elements, destination {to}")]
    Count {
        /// Source elements.
        from: u64,
        /// Destination elements.
        to: u64,
    },
    /// A format conversion that cannot be made.
    #[error("cannot convert {from} to {to}: {why}")]
    Cast {
        /// Source format name.
        from: &'static str,
        /// Destination format name.
        to: &'static str,
        /// Why.
        why: String,
    },
}

fn addr_u32(at: i128) -> Result<u32, AccessError> {
    u32::try_from(at).map_err(|_| AccessError::Unsupported {
        addr: at.clamp(0, u32::MAX as i128) as u32,
        what: "address outside 32 bits",
    })
}

fn dram_offset(at: i128, var: u32, dram: &Dram) -> Result<u64, AccessError> {
    u64::try_from(at).map_err(|_| AccessError::Dram {
        var: dram
            .get(var)
            .map_or_else(|| format!("#{var}"), |v| v.name.clone()),
        lo: at.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        hi: at.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        size: dram.get(var).map_or(0, |v| v.bytes.len() as u64),
    })
}

/// Convert `src` elements of `from` into `to`, appending to `out`, through the cast engine's
/// fp32 hub with the reference policy (RNE, FP8 saturation on).
pub fn convert(
    from: NumFormat,
    to: NumFormat,
    src: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), DmaError> {
    if is_raw_alias(from, to) {
        out.extend_from_slice(src);
        return Ok(());
    }
    let n = src.len() / from.container_bytes() * from.lanes();
    let start = out.len();
    out.resize(start + n / to.lanes() * to.container_bytes(), 0);
    cast_slice(src, from, &mut out[start..], to, &CastPolicy::REFERENCE).map_err(|e| {
        DmaError::Cast {
            from: from.name(),
            to: to.name(),
            why: e.to_string(),
        }
    })?;
    Ok(())
}

/// Formats whose bytes a DMA moves unchanged (fp32r is fp32 storage: no rounding on a copy).
fn is_raw_alias(a: NumFormat, b: NumFormat) -> bool {
    a == b
        || matches!(
            (a, b),
            (NumFormat::Float32, NumFormat::Float32r) | (NumFormat::Float32r, NumFormat::Float32)
        )
}

/// Execute one transfer; returns the bytes written.
pub fn transfer(
    desc: &DmaDesc,
    dram: &mut Dram,
    chip: &mut OnChip,
    buf: &mut Vec<u8>,
) -> Result<u64, DmaError> {
    transfer_with(desc, dram, chip, buf, true)
}

/// Values (elements times lanes) moved per chunk: a transfer of more values is streamed chunk
/// by chunk, so its working memory stays bounded whatever it moves.
pub const CHUNK_VALUES: u64 = 1 << 16;

/// [`transfer`], with (`fast`) or without the copy loops that resolve each side once; both
/// give the same bytes and the same errors.
fn transfer_with(
    desc: &DmaDesc,
    dram: &mut Dram,
    chip: &mut OnChip,
    buf: &mut Vec<u8>,
    fast: bool,
) -> Result<u64, DmaError> {
    let nf = desc
        .from
        .elems()
        .saturating_mul(desc.from.format.lanes() as u64);
    let nt = desc
        .to
        .elems()
        .saturating_mul(desc.to.format.lanes() as u64);
    if nf != nt {
        return Err(DmaError::Count { from: nf, to: nt });
    }
    if nf == 0 {
        // A dimension of size 0 on both sides: an empty transfer touches no memory.
        return Ok(0);
    }
    if nf > CHUNK_VALUES {
        return streamed(desc, dram, chip, buf, CHUNK_VALUES);
    }
    buf.clear();
    if !fast || read_fast(&desc.from, dram, chip, buf).is_none() {
        buf.clear();
        read_checked(&desc.from, dram, chip, buf).map_err(|err| DmaError::Access {
            side: Side::From,
            err,
        })?;
    }
    let converted;
    let data: &[u8] = if is_raw_alias(desc.from.format, desc.to.format) {
        buf
    } else {
        let mut out = Vec::new();
        convert(desc.from.format, desc.to.format, buf, &mut out)?;
        converted = out;
        &converted
    };
    if fast {
        if let Some(n) = write_fast(&desc.to, dram, chip, data) {
            return Ok(n);
        }
    }
    write_checked(&desc.to, dram, chip, data).map_err(|err| DmaError::Access {
        side: Side::To,
        err,
    })
}

/// A position in the runs of a side, in element order: the runs of
/// [`DmaSide::for_each_run`], handed out in pieces of bounded length.
#[derive(Clone, Debug)]
struct RunCursor {
    run: usize,
    loops: Vec<(i128, u32)>,
    idx: Vec<u32>,
    /// Start of the current run.
    at: i128,
    /// Bytes of the current run already handed out.
    off: usize,
    done: bool,
}

impl RunCursor {
    fn new(side: &DmaSide) -> RunCursor {
        let (run, dims) = side.run_and_loops();
        let loops: Vec<(i128, u32)> = dims.map(|(s, n)| (s as i128, n)).collect();
        RunCursor {
            run: run as usize,
            idx: vec![0; loops.len()],
            loops,
            at: side.addr as i128,
            off: 0,
            done: side.elems() == 0,
        }
    }

    /// The next piece of at most `max` bytes (never crossing a run's end), or `None` past the
    /// last run.
    fn next_piece(&mut self, max: usize) -> Option<(i128, usize)> {
        if self.done || max == 0 {
            return None;
        }
        let len = (self.run - self.off).min(max);
        let piece = (self.at + self.off as i128, len);
        self.off += len;
        if self.off == self.run {
            self.off = 0;
            let mut k = 0;
            loop {
                if k == self.loops.len() {
                    self.done = true;
                    break;
                }
                self.idx[k] += 1;
                self.at += self.loops[k].0;
                if self.idx[k] < self.loops[k].1 {
                    break;
                }
                self.at -= self.loops[k].0 * self.loops[k].1 as i128;
                self.idx[k] = 0;
                k += 1;
            }
        }
        Some(piece)
    }
}

/// Every run of `s` inside its memory (nothing read or written).
fn check_side(s: &DmaSide, dram: &Dram, chip: &OnChip) -> Result<(), AccessError> {
    match s.mem {
        DmaMem::Dram(var) => s.for_each_run(|at, len| {
            let off = dram_offset(at, var, dram)?;
            dram.read(var, off, len).map(|_| ())
        }),
        DmaMem::OnChip => s.for_each_run(|at, len| {
            let a = addr_u32(at)?;
            chip.read_flat(a, len).map(|_| ())
        }),
    }
}

/// Append the next `bytes` bytes of side `s` at cursor `cur` to `out`.
fn read_chunk(
    s: &DmaSide,
    cur: &mut RunCursor,
    mut bytes: usize,
    dram: &Dram,
    chip: &OnChip,
    out: &mut Vec<u8>,
) -> Result<(), AccessError> {
    // The variable is looked up once per chunk; each piece is still range-checked.
    let var = match s.mem {
        DmaMem::Dram(id) => Some((id, dram.get(id).ok_or(AccessError::UnknownVar(id))?)),
        DmaMem::OnChip => None,
    };
    while let Some((at, len)) = cur.next_piece(bytes) {
        match var {
            Some((id, v)) => {
                let off = dram_offset(at, id, dram)?;
                match usize::try_from(off)
                    .ok()
                    .and_then(|o| v.bytes.get(o..o.checked_add(len)?))
                {
                    Some(b) => out.extend_from_slice(b),
                    None => out.extend_from_slice(dram.read(id, off, len)?),
                }
            }
            None => out.extend_from_slice(chip.read_flat(addr_u32(at)?, len)?),
        }
        bytes -= len;
    }
    Ok(())
}

/// Write `data` to side `d` at cursor `cur`.
fn write_chunk(
    d: &DmaSide,
    cur: &mut RunCursor,
    data: &[u8],
    dram: &mut Dram,
    chip: &mut OnChip,
) -> Result<(), AccessError> {
    let mut done = 0;
    while let Some((at, len)) = cur.next_piece(data.len() - done) {
        let src = &data[done..done + len];
        match d.mem {
            DmaMem::Dram(var) => {
                let off = dram_offset(at, var, dram)?;
                dram.write(var, off, len)?.copy_from_slice(src);
            }
            DmaMem::OnChip => chip.write_flat(addr_u32(at)?, len)?.copy_from_slice(src),
        }
        done += len;
    }
    Ok(())
}

/// Move one chunk: the source values in `src` (the source format) are converted to the
/// destination format and written at the destination cursor. Returns the bytes written.
fn move_chunk(
    desc: &DmaDesc,
    src: &[u8],
    converted: &mut Vec<u8>,
    to: &mut RunCursor,
    dram: &mut Dram,
    chip: &mut OnChip,
) -> Result<u64, DmaError> {
    let data: &[u8] = if is_raw_alias(desc.from.format, desc.to.format) {
        src
    } else {
        converted.clear();
        convert(desc.from.format, desc.to.format, src, converted)?;
        converted
    };
    write_chunk(&desc.to, to, data, dram, chip).map_err(|err| DmaError::Access {
        side: Side::To,
        err,
    })?;
    Ok(data.len() as u64)
}

/// A transfer in chunks of `chunk_values` values: both sides are bounds-checked first (a
/// failing transfer writes nothing), then each chunk is read whole and written before the next
/// is read. Working memory: two chunks.
fn streamed(
    desc: &DmaDesc,
    dram: &mut Dram,
    chip: &mut OnChip,
    buf: &mut Vec<u8>,
    chunk_values: u64,
) -> Result<u64, DmaError> {
    check_side(&desc.from, dram, chip).map_err(|err| DmaError::Access {
        side: Side::From,
        err,
    })?;
    check_side(&desc.to, dram, chip).map_err(|err| DmaError::Access {
        side: Side::To,
        err,
    })?;
    let from = desc.from.format;
    let total = desc.from.elems().saturating_mul(from.lanes() as u64);
    let (mut src, mut dst) = (RunCursor::new(&desc.from), RunCursor::new(&desc.to));
    let mut converted = Vec::new();
    let (mut moved, mut written) = (0u64, 0u64);
    while moved < total {
        let values = (total - moved).min(chunk_values);
        let bytes = (values / from.lanes() as u64) as usize * from.container_bytes();
        buf.clear();
        read_chunk(&desc.from, &mut src, bytes, dram, chip, buf).map_err(|err| {
            DmaError::Access {
                side: Side::From,
                err,
            }
        })?;
        written += move_chunk(desc, buf, &mut converted, &mut dst, dram, chip)?;
        moved += values;
    }
    Ok(written)
}

/// Append the source runs to `buf`, looking up and checking each run.
fn read_checked(
    s: &DmaSide,
    dram: &Dram,
    chip: &OnChip,
    buf: &mut Vec<u8>,
) -> Result<(), AccessError> {
    match s.mem {
        DmaMem::Dram(var) => s.for_each_run(|at, len| {
            let off = dram_offset(at, var, dram)?;
            buf.extend_from_slice(dram.read(var, off, len)?);
            Ok(())
        }),
        DmaMem::OnChip => s.for_each_run(|at, len| {
            let a = addr_u32(at)?;
            buf.extend_from_slice(chip.read_flat(a, len)?);
            Ok(())
        }),
    }
}

/// Write `data` to the destination runs, looking up and checking each run; returns the
/// bytes written.
fn write_checked(
    d: &DmaSide,
    dram: &mut Dram,
    chip: &mut OnChip,
    data: &[u8],
) -> Result<u64, AccessError> {
    let mut at_byte = 0usize;
    match d.mem {
        DmaMem::Dram(var) => d.for_each_run(|at, len| {
            let off = dram_offset(at, var, dram)?;
            dram.write(var, off, len)?
                .copy_from_slice(&data[at_byte..at_byte + len]);
            at_byte += len;
            Ok(())
        }),
        DmaMem::OnChip => d.for_each_run(|at, len| {
            let a = addr_u32(at)?;
            chip.write_flat(a, len)?
                .copy_from_slice(&data[at_byte..at_byte + len]);
            at_byte += len;
            Ok(())
        }),
    }?;
    Ok(at_byte as u64)
}

/// Geometry helper for tests and builders: the on-chip side covering `partitions` partitions
/// of `elems` contiguous elements each, starting at `addr`.
pub fn onchip_rows(
    geom: &Geometry,
    addr: u32,
    format: NumFormat,
    partitions: u32,
    elems: u32,
) -> DmaSide {
    let eb = format.container_bytes() as i64;
    DmaSide {
        mem: DmaMem::OnChip,
        addr: addr as u64,
        format,
        dims: vec![
            (eb, elems),
            (geom.sbuf_partition_stride() as i64, partitions),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::geometry::{Space, PARTITIONS, PSUM_BYTES_PER_PARTITION};
    use crate::machine::memory::{DramVar, VarKind};
    use tpbsim_isa::Gen;

    fn setup() -> (Geometry, Dram, OnChip) {
        let g = Geometry::of(Gen::V3);
        let mut d = Dram::default();
        let bytes: Vec<u8> = (0..64u8).collect();
        d.insert(
            1,
            DramVar {
                name: "in".into(),
                kind: VarKind::Input,
                bytes,
            },
        );
        d.insert(
            2,
            DramVar {
                name: "out".into(),
                kind: VarKind::Output,
                bytes: vec![0; 64],
            },
        );
        (g, d, OnChip::new(g).unwrap())
    }

    #[test]
    fn dram_to_sbuf_rows_and_back() {
        let (g, mut d, mut c) = setup();
        let from = DmaSide {
            mem: DmaMem::Dram(1),
            addr: 0,
            format: NumFormat::Float32,
            dims: vec![(4, 4), (16, 4)],
        };
        let to = onchip_rows(&g, g.sbuf_address(2, 32), NumFormat::Float32, 4, 4);
        let mut buf = Vec::new();
        let n = transfer(
            &DmaDesc {
                from: from.clone(),
                to: to.clone(),
            },
            &mut d,
            &mut c,
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, 64);
        assert_eq!(
            &c.partition(Space::Sbuf, 3)[32..48],
            &(16..32).collect::<Vec<u8>>()[..]
        );
        let back = DmaSide {
            mem: DmaMem::Dram(2),
            ..from
        };
        transfer(&DmaDesc { from: to, to: back }, &mut d, &mut c, &mut buf).unwrap();
        assert_eq!(d.get(2).unwrap().bytes, (0..64).collect::<Vec<u8>>());
    }

    #[test]
    fn transposing_steps() {
        let (_, mut d, mut c) = setup();
        // Read 4x4 u8 column-major into out (row-major).
        let from = DmaSide {
            mem: DmaMem::Dram(1),
            addr: 0,
            format: NumFormat::Uint8,
            dims: vec![(4, 4), (1, 4)],
        };
        let to = DmaSide {
            mem: DmaMem::Dram(2),
            addr: 0,
            format: NumFormat::Uint8,
            dims: vec![(1, 16)],
        };
        transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap();
        assert_eq!(&d.get(2).unwrap().bytes[..8], &[0, 4, 8, 12, 1, 5, 9, 13]);
    }

    #[test]
    fn casting_copy() {
        let (g, mut d, mut c) = setup();
        let vals = [1.0f32, -2.5, 3.0e9, 0.333];
        d.get_mut(1).unwrap().bytes[..16].copy_from_slice(
            &vals
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        );
        let from = DmaSide {
            mem: DmaMem::Dram(1),
            addr: 0,
            format: NumFormat::Float32,
            dims: vec![(4, 4)],
        };
        let to = onchip_rows(&g, 0, NumFormat::Bfloat16, 1, 4);
        transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap();
        let got: Vec<u16> = c.partition(Space::Sbuf, 0)[..8]
            .chunks(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        // RNE to bf16: 1.0 = 0x3F80, -2.5 = 0xC020, 3e9 ≈ 0x4F33, 0.333 → 0x3EAA.
        assert_eq!(got, vec![0x3F80, 0xC020, 0x4F33, 0x3EAA]);
    }

    /// The bytes of a side's runs, as a set.
    fn covered(side: &DmaSide, covered_runs: bool) -> std::collections::BTreeSet<i128> {
        let mut set = std::collections::BTreeSet::new();
        let mut add = |at: i128, len: usize| set.extend(at..at + len as i128);
        if covered_runs {
            side.for_each_covered_run(&mut add);
        } else {
            side.for_each_run(|at, len| {
                add(at, len);
                Ok(())
            })
            .unwrap();
        }
        set
    }

    #[test]
    fn covered_runs_cover_the_same_bytes() {
        let side = |dims: Vec<(i64, u32)>, format| DmaSide {
            mem: DmaMem::Dram(1),
            addr: 4096,
            format,
            dims,
        };
        let cases = [
            // transposing: inner step 64, outer step 1 (bytes of u8)
            (vec![(64, 16), (1, 64)], NumFormat::Uint8, 1),
            (vec![(-64, 16), (2, 32)], NumFormat::Bfloat16, 1),
            (vec![(4, 8), (64, 3), (0, 5)], NumFormat::Float32, 3),
            (vec![(2, 4), (1, 4)], NumFormat::Uint8, 1), // overlapping copies
            (vec![(2, 4), (3, 4)], NumFormat::Uint8, 16), // neither abuts the element
            (vec![(256, 4), (1, 16)], NumFormat::Uint8, 4), // gaps stay gaps
            (vec![(4, 0), (8, 2)], NumFormat::Float32, 0),
        ];
        for (dims, format, runs) in cases {
            let s = side(dims.clone(), format);
            assert_eq!(covered(&s, true), covered(&s, false), "{dims:?}");
            let mut n = 0;
            s.for_each_covered_run(|_, _| n += 1);
            assert_eq!(n, runs, "{dims:?}");
        }
    }

    #[test]
    fn a_dimension_of_size_zero_moves_nothing() {
        let (g, mut d, mut c) = setup();
        let before = (
            d.get(1).unwrap().bytes.clone(),
            c.partition(Space::Sbuf, 0)[..64].to_vec(),
        );
        let empty = |mem| DmaSide {
            mem,
            addr: 0,
            format: NumFormat::Float32,
            dims: vec![(4, 4), (16, 0)],
        };
        let desc = DmaDesc {
            from: empty(DmaMem::Dram(1)),
            to: DmaSide {
                addr: u64::from(g.sbuf_address(0, 0)),
                ..empty(DmaMem::OnChip)
            },
        };
        assert_eq!(transfer(&desc, &mut d, &mut c, &mut Vec::new()).unwrap(), 0);
        let mut runs = 0;
        desc.from
            .for_each_run(|_, _| {
                runs += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(runs, 0);
        assert_eq!(d.get(1).unwrap().bytes, before.0);
        assert_eq!(c.partition(Space::Sbuf, 0)[..64], before.1[..]);
        // An empty side against a non-empty one is a count mismatch.
        let to = onchip_rows(&g, 0, NumFormat::Float32, 1, 4);
        let e = transfer(
            &DmaDesc {
                from: empty(DmaMem::Dram(1)),
                to,
            },
            &mut d,
            &mut c,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert_eq!(e, DmaError::Count { from: 0, to: 4 });
    }

    #[test]
    fn errors_name_the_side() {
        let (g, mut d, mut c) = setup();
        let from = DmaSide {
            mem: DmaMem::Dram(1),
            addr: 8,
            format: NumFormat::Float32,
            dims: vec![(4, 15)],
        };
        let to = onchip_rows(&g, 0, NumFormat::Float32, 1, 15);
        let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`from` side: DRAM variable `in`: bytes 8..68 are outside its 64 bytes"
        );
        let from = DmaSide {
            mem: DmaMem::Dram(1),
            addr: 0,
            format: NumFormat::Float32,
            dims: vec![(4, 4)],
        };
        let to = onchip_rows(
            &g,
            g.sbuf_address(0, g.sbuf_bytes_per_partition - 8),
            NumFormat::Float32,
            1,
            4,
        );
        let e = transfer(
            &DmaDesc {
                from: from.clone(),
                to,
            },
            &mut d,
            &mut c,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(matches!(e, DmaError::Access { side: Side::To, .. }), "{e}");
        let to = onchip_rows(&g, 0, NumFormat::Float32, 1, 3);
        let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
        assert_eq!(e, DmaError::Count { from: 4, to: 3 });
        let from = DmaSide {
            mem: DmaMem::Dram(9),
            addr: 0,
            format: NumFormat::Uint8,
            dims: vec![],
        };
        let to = DmaSide {
            mem: DmaMem::Dram(2),
            addr: 0,
            format: NumFormat::Uint8,
            dims: vec![],
        };
        let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("variable id 9"), "{e}");
    }

    #[test]
    fn streamed_chunks_give_the_whole_transfer() {
        let (g, _, _) = setup();
        let mut d = Dram::default();
        let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let kind = VarKind::Input;
        d.insert(
            1,
            DramVar {
                name: "in".into(),
                kind,
                bytes,
            },
        );
        let out = || DramVar {
            name: "out".into(),
            kind: VarKind::Output,
            bytes: vec![0; 8192],
        };
        d.insert(2, out());
        let stride = g.sbuf_partition_stride() as i64;
        let chip_side = |format, dims| DmaSide {
            mem: DmaMem::OnChip,
            addr: u64::from(g.sbuf_address(0, 0)),
            format,
            dims,
        };
        let dram_side = |format, dims| DmaSide {
            mem: DmaMem::Dram(2),
            addr: 0,
            format,
            dims,
        };
        let cases = [
            // transposing u8 into bf16 (a cast), chunks splitting runs
            (
                vec![(64, 16), (1, 64)],
                NumFormat::Uint8,
                dram_side(NumFormat::Bfloat16, vec![(2, 1024)]),
            ),
            // f32 rows with a zero step (the same row again)
            (
                vec![(4, 8), (0, 3), (32, 4)],
                NumFormat::Float32,
                dram_side(NumFormat::Float32, vec![(4, 96)]),
            ),
            (
                vec![(4, 256)],
                NumFormat::Float32,
                chip_side(NumFormat::Float32, vec![(4, 8), (stride, 32)]),
            ),
        ];
        for (fdims, ff, to) in cases {
            let desc = DmaDesc {
                from: DmaSide {
                    mem: DmaMem::Dram(1),
                    addr: 0,
                    format: ff,
                    dims: fdims,
                },
                to,
            };
            let (mut d1, mut c1) = (d.clone(), OnChip::new(g).unwrap());
            let (mut d2, mut c2) = (d.clone(), OnChip::new(g).unwrap());
            let n1 = transfer(&desc, &mut d1, &mut c1, &mut Vec::new()).unwrap();
            for chunk in [2, 6, 64] {
                let n2 = streamed(&desc, &mut d2, &mut c2, &mut Vec::new(), chunk).unwrap();
                assert_eq!(n1, n2);
                assert_eq!(d1.get(2).unwrap().bytes, d2.get(2).unwrap().bytes);
                assert_eq!(
                    c1.partition(Space::Sbuf, 0)[..1024],
                    c2.partition(Space::Sbuf, 0)[..1024]
                );
            }
        }
        // A source leaving its variable fails before anything is written.
        let desc = DmaDesc {
            from: DmaSide {
                mem: DmaMem::Dram(1),
                addr: 0,
                format: NumFormat::Uint8,
                dims: vec![(1, 4097)],
            },
            to: DmaSide {
                mem: DmaMem::Dram(2),
                addr: 0,
                format: NumFormat::Uint8,
                dims: vec![(1, 4097)],
            },
        };
        let e = streamed(
            &desc,
            &mut d,
            &mut OnChip::new(g).unwrap(),
            &mut Vec::new(),
            2,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                DmaError::Access {
                    side: Side::From,
                    ..
                }
            ),
            "{e}"
        );
        assert!(d.get(2).unwrap().bytes.iter().all(|&b| b == 0));
    }

    mod fast_path {
        use super::*;
        use proptest::prelude::*;

        const EDGE: u32 = 4096;

        /// DRAM variables 1 (4 KiB) and 2 (300 bytes), seeded contents; variable 9 is unknown.
        fn memories(g: Geometry) -> (Dram, OnChip) {
            let mut d = Dram::default();
            for (id, len) in [(1u32, 4096usize), (2, 300)] {
                let bytes = (0..len).map(|i| (i * 7 + id as usize) as u8).collect();
                let name = format!("v{id}");
                let kind = VarKind::Input;
                d.insert(id, DramVar { name, kind, bytes });
            }
            let mut c = OnChip::new(g).unwrap();
            for space in [Space::Sbuf, Space::Psum] {
                let per = g.bytes_per_partition(space) as usize;
                for p in 0..PARTITIONS {
                    let part = c.partition_mut(space, p);
                    for (i, b) in part[..EDGE as usize].iter_mut().enumerate() {
                        *b = (i as u32 * 13 + p) as u8;
                    }
                    part[per - EDGE as usize..].fill(p as u8 ^ 0x5A);
                }
            }
            (d, c)
        }

        /// The bytes a generated side can reach: the first and last 4 KiB of each partition.
        fn edges(c: &OnChip, g: Geometry) -> Vec<u8> {
            let mut v = Vec::new();
            for space in [Space::Sbuf, Space::Psum] {
                let per = g.bytes_per_partition(space) as usize;
                for p in 0..PARTITIONS {
                    let part = c.partition(space, p);
                    v.extend_from_slice(&part[..EDGE as usize]);
                    v.extend_from_slice(&part[per - EDGE as usize..]);
                }
            }
            v
        }

        fn format() -> impl Strategy<Value = NumFormat> {
            prop_oneof![
                Just(NumFormat::Float32),
                Just(NumFormat::Bfloat16),
                Just(NumFormat::Float8E4m3fn),
                Just(NumFormat::Int32),
            ]
        }

        /// A side with the given counts: DRAM (known or unknown variable) or on-chip (SBUF or
        /// PSUM, near either end of a partition), steps of either sign, partition steps.
        fn side(counts: Vec<u32>) -> impl Strategy<Value = DmaSide> {
            let n = counts.len();
            let g = Geometry::of(Gen::V3);
            (
                prop_oneof![Just(1u32), Just(2), Just(9), Just(0)],
                0u32..128,
                any::<bool>(),
                any::<bool>(),
                0u32..EDGE,
                format(),
                proptest::collection::vec(
                    prop_oneof![
                        -8i64..9,
                        Just(g.sbuf_partition_stride() as i64),
                        Just(-(g.sbuf_partition_stride() as i64)),
                        Just(g.psum_address(1, 0) as i64 - g.psum_address(0, 0) as i64),
                    ],
                    n,
                ),
                any::<bool>(),
            )
                .prop_map(move |(mem, p, psum, high, off, format, steps, dense)| {
                    let eb = format.container_bytes() as i64;
                    let mut run = eb;
                    let dims = counts
                        .iter()
                        .zip(steps)
                        .map(|(&c, s)| {
                            // Dense dimensions exercise run merging.
                            let step = if dense {
                                run
                            } else if s.abs() < 9 {
                                s * eb
                            } else {
                                s
                            };
                            run *= c.max(1) as i64;
                            (step, c)
                        })
                        .collect();
                    let addr = match mem {
                        0 => {
                            let per = if psum {
                                PSUM_BYTES_PER_PARTITION
                            } else {
                                g.sbuf_bytes_per_partition
                            };
                            let off = if high { per - EDGE + off } else { off };
                            if psum {
                                g.psum_address(p, off)
                            } else {
                                g.sbuf_address(p, off)
                            }
                        }
                        _ => off,
                    } as u64;
                    DmaSide {
                        mem: if mem == 0 {
                            DmaMem::OnChip
                        } else {
                            DmaMem::Dram(mem)
                        },
                        addr,
                        format,
                        dims,
                    }
                })
        }

        fn desc() -> impl Strategy<Value = DmaDesc> {
            proptest::collection::vec(0u32..6, 0..6).prop_flat_map(|counts| {
                let mut to_counts = counts.clone();
                to_counts.reverse();
                (side(counts), side(to_counts)).prop_map(|(from, to)| DmaDesc { from, to })
            })
        }

        fn cases() -> u32 {
            std::env::var("TPBSIM_PROPTEST_CASES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(256)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(cases()))]

            /// The resolved copy loops give the bytes, counts and errors of the per-run
            /// checked path.
            #[test]
            fn same_as_checked_path(d in desc()) {
                let g = Geometry::of(Gen::V3);
                let (mut d1, mut c1) = memories(g);
                let (mut d2, mut c2) = memories(g);
                let (mut b1, mut b2) = (Vec::new(), Vec::new());
                let fast = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    transfer_with(&d, &mut d1, &mut c1, &mut b1, true)
                }));
                let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    transfer_with(&d, &mut d2, &mut c2, &mut b2, false)
                }));
                prop_assert_eq!(fast.is_ok(), checked.is_ok());
                if let (Ok(a), Ok(b)) = (fast, checked) {
                    prop_assert_eq!(a, b);
                    for id in [1, 2] {
                        prop_assert_eq!(&d1.get(id).unwrap().bytes, &d2.get(id).unwrap().bytes);
                    }
                    prop_assert!(edges(&c1, g) == edges(&c2, g));
                }
            }
        }
    }
}
