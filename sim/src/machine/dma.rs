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

use super::geometry::Geometry;
use super::memory::{Dram, OnChip};
use super::pattern::AccessError;
use crate::numerics::cast::{cast_slice, CastPolicy};
use crate::numerics::Format;

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
    pub format: Format,
    /// (byte step, count) per dimension, innermost first; empty means one element.
    pub dims: Vec<(i64, u32)>,
}

impl DmaSide {
    /// Number of elements.
    pub fn elems(&self) -> u64 {
        self.dims.iter().map(|d| d.1 as u64).product()
    }

    /// Visit maximal contiguous byte runs as (start address, length) in element order.
    pub(crate) fn for_each_run(
        &self,
        mut f: impl FnMut(i128, usize) -> Result<(), AccessError>,
    ) -> Result<(), AccessError> {
        let eb = self.format.container_bytes() as i64;
        let mut dims = self.dims.iter().filter(|d| d.1 > 1).copied().peekable();
        let mut run = eb;
        while let Some(&(step, n)) = dims.peek() {
            if step == run {
                run *= n as i64;
                dims.next();
            } else {
                break;
            }
        }
        let loops: Vec<(i64, u32)> = dims.collect();
        let mut idx = vec![0u32; loops.len()];
        let mut at = self.addr as i128;
        loop {
            f(at, run as usize)?;
            let mut k = 0;
            loop {
                if k == loops.len() {
                    return Ok(());
                }
                idx[k] += 1;
                at += loops[k].0 as i128;
                if idx[k] < loops[k].1 {
                    break;
                }
                at -= loops[k].0 as i128 * loops[k].1 as i128;
                idx[k] = 0;
                k += 1;
            }
        }
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
pub fn convert(from: Format, to: Format, src: &[u8], out: &mut Vec<u8>) -> Result<(), DmaError> {
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
fn is_raw_alias(a: Format, b: Format) -> bool {
    a == b
        || matches!(
            (a, b),
            (Format::Float32, Format::Float32r) | (Format::Float32r, Format::Float32)
        )
}

/// Execute one transfer; returns the bytes written.
pub fn transfer(
    desc: &DmaDesc,
    dram: &mut Dram,
    chip: &mut OnChip,
    buf: &mut Vec<u8>,
) -> Result<u64, DmaError> {
    let nf = desc.from.elems() * desc.from.format.lanes() as u64;
    let nt = desc.to.elems() * desc.to.format.lanes() as u64;
    if nf != nt {
        return Err(DmaError::Count { from: nf, to: nt });
    }
    buf.clear();
    let s = &desc.from;
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
    .map_err(|err| DmaError::Access {
        side: Side::From,
        err,
    })?;
    let converted;
    let data: &[u8] = if is_raw_alias(desc.from.format, desc.to.format) {
        buf
    } else {
        let mut out = Vec::new();
        convert(desc.from.format, desc.to.format, buf, &mut out)?;
        converted = out;
        &converted
    };
    let d = &desc.to;
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
    }
    .map_err(|err| DmaError::Access {
        side: Side::To,
        err,
    })?;
    Ok(at_byte as u64)
}

/// Geometry helper for tests and builders: the on-chip side covering `partitions` partitions
/// of `elems` contiguous elements each, starting at `addr`.
pub fn onchip_rows(
    geom: &Geometry,
    addr: u32,
    format: Format,
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
    use crate::machine::geometry::Space;
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
            format: Format::Float32,
            dims: vec![(4, 4), (16, 4)],
        };
        let to = onchip_rows(&g, g.sbuf_address(2, 32), Format::Float32, 4, 4);
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
            format: Format::Uint8,
            dims: vec![(4, 4), (1, 4)],
        };
        let to = DmaSide {
            mem: DmaMem::Dram(2),
            addr: 0,
            format: Format::Uint8,
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
            format: Format::Float32,
            dims: vec![(4, 4)],
        };
        let to = onchip_rows(&g, 0, Format::Bfloat16, 1, 4);
        transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap();
        let got: Vec<u16> = c.partition(Space::Sbuf, 0)[..8]
            .chunks(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        // RNE to bf16: 1.0 = 0x3F80, -2.5 = 0xC020, 3e9 ≈ 0x4F33, 0.333 → 0x3EAA.
        assert_eq!(got, vec![0x3F80, 0xC020, 0x4F33, 0x3EAA]);
    }

    #[test]
    fn errors_name_the_side() {
        let (g, mut d, mut c) = setup();
        let from = DmaSide {
            mem: DmaMem::Dram(1),
            addr: 8,
            format: Format::Float32,
            dims: vec![(4, 15)],
        };
        let to = onchip_rows(&g, 0, Format::Float32, 1, 15);
        let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`from` side: DRAM variable `in`: bytes 8..68 are outside its 64 bytes"
        );
        let from = DmaSide {
            mem: DmaMem::Dram(1),
            addr: 0,
            format: Format::Float32,
            dims: vec![(4, 4)],
        };
        let to = onchip_rows(
            &g,
            g.sbuf_address(0, g.sbuf_bytes_per_partition - 8),
            Format::Float32,
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
        let to = onchip_rows(&g, 0, Format::Float32, 1, 3);
        let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
        assert_eq!(e, DmaError::Count { from: 4, to: 3 });
        let from = DmaSide {
            mem: DmaMem::Dram(9),
            addr: 0,
            format: Format::Uint8,
            dims: vec![],
        };
        let to = DmaSide {
            mem: DmaMem::Dram(2),
            addr: 0,
            format: Format::Uint8,
            dims: vec![],
        };
        let e = transfer(&DmaDesc { from, to }, &mut d, &mut c, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("variable id 9"), "{e}");
    }
}
