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

mod fast;

use fast::{read_fast, write_fast};

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
mod tests;
