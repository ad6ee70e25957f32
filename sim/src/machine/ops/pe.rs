//! PE: LdWeights / Matmul (0x01 / 0x02) and their MX forms LdWeightsMx / MatmulMx (0x09 / 0x0A).

use tpbsim_isa::{LdWeights, LdWeightsMx, Matmul, MatmulMx, Tensor, ZeroRegion as WireZeroRegion};

use super::{mx_packed, Stationary};
use crate::machine::core::Machine;
use crate::machine::fault::{Fault, Site};
use crate::machine::geometry::Space;
use crate::machine::pattern::TensorPattern;
use crate::numerics::cast::CastPolicy;
use crate::numerics::pe::{self, Fp32Mode, MxOperand, PeMode, PsumFlags, ZeroRegion};
use tpbsim_isa::Gen;
use tpbsim_isa::NumFormat;

/// The row/column group code of all four 32-lane quadrants of the PE array: the only group the
/// machine simulates (the code the compiler writes, and forces for a transpose).
pub const ALL_QUADRANTS: u8 = 0x0F;

/// Partial PE quadrants are not modelled: a `row_grp` / `col_grp` other than
/// [`ALL_QUADRANTS`] is not simulated (where a partial group places the columns is not public).
/// v5 has neither field.
fn full_array(site: Site, row_grp: Option<u8>, col_grp: Option<u8>) -> Result<(), Fault> {
    for (field, group) in [("row_grp", row_grp), ("col_grp", col_grp)] {
        match group {
            Some(g) if g != ALL_QUADRANTS => {
                return Err(Fault::NotSimulated {
                    site,
                    name: format!(
                        "{field} 0x{g:02x} (partial PE quadrants; only 0x0f, all four 32-lane quadrants, is modelled)"
                    ),
                    engine: site.engine,
                })
            }
            _ => {}
        }
    }
    Ok(())
}

/// `transpose_mode` (v3/v4; the other generations have no field, read as 0): 1 makes the PE
/// pass the stationary values through. Other values are not simulated.
fn transposes(site: Site, mode: Option<u8>) -> Result<bool, Fault> {
    match mode.unwrap_or(0) {
        0 => Ok(false),
        1 => Ok(true),
        m => Err(Fault::NotSimulated {
            site,
            name: format!("transpose_mode {m}"),
            engine: site.engine,
        }),
    }
}

/// The LdWeights source the compiler writes for `n` elements per partition whose element 0 sits
/// at the immediate address `addr` (`elem_bytes` bytes each): read last to first, so that under
/// the column rule (`pe::stationary_column`) stationary column `c` holds element `c`. A multiple
/// of 32 elements is read in groups of 32, step −1 inside a group and −32 from group to group
/// (`[addr + (n − 1)·elem_bytes step=-1,0,-32 num=32,1,n/32]`, the neuronx-cc 2.23 form); other
/// counts as one group (`step=-1,0,0 num=n,1,1`).
pub fn compiler_weights_source(addr: u32, n: u16, elem_bytes: u32) -> Tensor<3> {
    let last = addr + u32::from(n.saturating_sub(1)) * elem_bytes;
    let (step, num) = if n > 32 && n.is_multiple_of(32) {
        ([-1, 0, -32], [32, 1, n / 32])
    } else {
        ([-1, 0, 0], [n, 1, 1])
    };
    Tensor::new(tpbsim_isa::Addr4::imm(last), step, num)
}

/// The moving tile spans the stationary's `k` rows.
fn moving_rows(site: Site, src: &TensorPattern, k: usize) -> Result<(), Fault> {
    if src.partitions as usize != k {
        return Err(Fault::exec(
            site,
            format!(
                "moving tile has {} partitions, the weights {k} rows",
                src.partitions
            ),
        ));
    }
    Ok(())
}

/// The PSUM destination holds the `n × f` result.
fn psum_shape(site: Site, dst: &TensorPattern, n: usize, f: usize) -> Result<(), Fault> {
    if dst.partitions as usize != n || dst.elems_per_partition() as usize != f {
        return Err(Fault::exec(
            site,
            format!(
                "PSUM destination is {} × {}, the result is {n} × {f}",
                dst.partitions,
                dst.elems_per_partition()
            ),
        ));
    }
    Ok(())
}

/// A stationary / matmul pairing whose behaviour is not public.
fn mismatch(site: Site, what: String) -> Fault {
    Fault::NotSimulated {
        site,
        name: what,
        engine: site.engine,
    }
}

/// Where a matmul's product goes: the PSUM destination and how it is written.
struct PsumTarget {
    /// PSUM write flags.
    flags: PsumFlags,
    /// The bundle's zero region (START clears it).
    zero_region: WireZeroRegion,
    /// PSUM element format (fp32, or bf16 on v4+).
    out: NumFormat,
    /// PSUM destination: N partitions × F elements.
    dst: TensorPattern,
}

impl Machine<'_> {
    /// LdWeights: the `[k = partitions, n = elements]` tile becomes the stationary operand, the
    /// `j`-th element read on a partition in column `n − 1 − j` (`pe::stationary_column`).
    pub(crate) fn ld_weights(&mut self, site: Site, x: &LdWeights) -> Result<(), Fault> {
        if let LdWeights::V2(v) = x {
            // The v2 transpose flag in the source ADDR4's top byte (docs/isa.md P9).
            if (v.src.addr.0 >> 24) as u8 == 0x80 {
                return Err(Fault::NotSimulated {
                    site,
                    name: "v2 transposed LdWeights (+0x13 = 0x80)".into(),
                    engine: site.engine,
                });
            }
        }
        full_array(site, x.row_grp(), x.col_grp())?;
        let transpose = transposes(site, x.transpose_mode())?;
        let format = self.format(site, "in", x.in_dtype())?;
        let src = match x {
            LdWeights::V2(v) => v.src,
            LdWeights::V3(v) => v.src,
            LdWeights::V4(v) => v.src.0,
            LdWeights::V5(v) => v.src.0,
        };
        let src = self.pattern(site, "src", &src, x.num_active_rows(), format)?;
        let (k, n) = (src.partitions as usize, src.elems_per_partition() as usize);
        // v5: a column count of 0 means 256.
        let cols = match (x, x.num_active_cols()) {
            (LdWeights::V5(_), 0) => 256,
            (_, c) => usize::from(c),
        };
        if n != cols {
            return Err(mismatch(
                site,
                format!("LdWeights reading {n} elements per partition into num_active_cols {cols}"),
            ));
        }
        let r = self.operand(site, "src", &src)?;
        let err = |e: pe::PeError| Fault::exec(site, e.to_string());
        self.engines.stationary = Some(if transpose {
            let bits = self.chip.gather(&r);
            Stationary::Transpose {
                bits: pe::stationary_from_load(&bits, n, format.container_bytes()).map_err(err)?,
                k,
                n,
                format,
            }
        } else {
            let loaded = self.load_f32(site, &r, format)?;
            Stationary::Dense {
                values: pe::stationary_from_load(&loaded, n, 1).map_err(err)?,
                k,
                n,
                format,
            }
        });
        Ok(())
    }

    /// LdWeightsMx: the packed MX tile and its scales become the stationary operand, the `j`-th
    /// container of a partition (and its scale byte) in column `lanes − 1 − j` — the dense column
    /// rule (`pe::stationary_column`) applied to the same array, by inference.
    pub(crate) fn ld_weights_mx(&mut self, site: Site, x: &LdWeightsMx) -> Result<(), Fault> {
        full_array(site, Some(x.row_grp), Some(x.col_grp))?;
        let format = mx_packed(self.format(site, "in", x.in_dtype)?);
        let src = self.mx_patterns(
            site,
            "src",
            &x.src,
            x.num_active_rows,
            u32::from(x.num_active_cols),
            format,
        )?;
        let (rd, rs) = (
            self.operand(site, "src.data", &src.data)?,
            self.operand(site, "src.scale", &src.scale)?,
        );
        let partitions = src.data.partitions as usize;
        let lanes = src.data.elems_per_partition() as usize;
        let err = |e: pe::PeError| Fault::exec(site, e.to_string());
        let data =
            pe::stationary_from_load(&self.chip.gather(&rd), lanes, format.container_bytes())
                .map_err(err)?;
        let scales = pe::stationary_from_load(&self.chip.gather(&rs), lanes, 1).map_err(err)?;
        self.engines.stationary = Some(Stationary::Mx {
            format,
            partitions,
            lanes,
            data,
            scales,
        });
        Ok(())
    }

    /// Matmul: `psum[c][f] (+)= Σ_k stationary[k][c] · moving[k][f]`, or with
    /// `transpose_mode = 1` the stationary passed through ([`Machine::matmul_transpose`]).
    pub(crate) fn matmul(&mut self, site: Site, x: &Matmul) -> Result<(), Fault> {
        full_array(site, x.row_grp(), x.col_grp())?;
        let transpose = transposes(site, x.transpose_mode())?;
        let input = self.format(site, "in", x.in_dtype())?;
        let flags = match (x.psum_accumulate_flags(), x.flags()) {
            (Some(p), _) => PsumFlags::from_wire(p.into_bits()),
            (None, Some(f)) => Ok(PsumFlags::from_accumulate_flag(f.accumulate_flag())),
            (None, None) => Ok(PsumFlags::from_accumulate_flag(false)),
        }
        .map_err(|err| Fault::exec(site, err.to_string()))?;
        let (src, dst) = match x {
            Matmul::V2(v) => (v.src, v.dst),
            Matmul::V3(v) => (v.src, v.dst),
            Matmul::V4(v) => (v.src.0, v.dst.0),
            Matmul::V5(v) => (v.src.0, v.dst.0),
        };
        let src = self.pattern(site, "src", &src, x.num_active_rows(), input)?;
        if transpose {
            return self.matmul_transpose(site, x, input, flags, &src, &dst);
        }
        if let Some(Stationary::Transpose { .. }) = &self.engines.stationary {
            return Err(mismatch(
                site,
                "Matmul with transpose_mode 0 on weights loaded with transpose_mode 1".into(),
            ));
        }
        let out = match x.out_dtype() {
            Some(d) if d.0 != 0 => self.format(site, "out", d)?,
            _ => NumFormat::Float32,
        };
        let target = PsumTarget {
            flags,
            zero_region: x.psum_zero_region().unwrap_or_default(),
            out,
            dst: self.pattern(site, "dst", &dst, x.num_active_cols(), out)?,
        };
        let Some(Stationary::Dense {
            values,
            k,
            n,
            format,
        }) = &self.engines.stationary
        else {
            return Err(Fault::exec(
                site,
                "Matmul without dense weights loaded by LdWeights",
            ));
        };
        let (k, n) = (*k, *n);
        let rs = self.operand(site, "src", &src)?;
        moving_rows(site, &src, k)?;
        let f = src.elems_per_partition() as usize;
        let mode = if input == NumFormat::Float32 || *format == NumFormat::Float32 {
            PeMode::Fp32(
                Fp32Mode::from_wire(x.fp32_mode().0)
                    .map_err(|e| Fault::exec(site, e.to_string()))?,
            )
        } else {
            PeMode::Plain
        };
        let mut moving = self.bufs.pop().unwrap_or_default();
        let mut sum = self.bufs.pop().unwrap_or_default();
        sum.clear();
        sum.resize(n * f, 0.0);
        let done = self
            .load_f32_into(site, &rs, input, &mut moving)
            .and_then(|()| {
                pe::matmul(mode, values, &moving, k, n, f, &mut sum)
                    .map_err(|e| Fault::exec(site, e.to_string()))
            })
            .and_then(|()| self.write_psum(site, &target, n, f, &sum));
        self.give_buf(moving);
        self.give_buf(sum);
        done
    }

    /// Matmul with `transpose_mode = 1` (the stationary loaded the same way): the PE passes the
    /// stationary through, `psum[c][f]` = the bits of `W[p][c]` for the `p` with
    /// `M[p][f] = 1`, written at the input's width (`pe::transpose_pass`). The PSUM write is a
    /// plain store of the destination elements: `psum_accumulate_flags` must be begin and end
    /// (3), and no zero region is cleared (the compiler writes two such transposes into one
    /// 2 KiB bank and reads both).
    fn matmul_transpose(
        &mut self,
        site: Site,
        x: &Matmul,
        input: NumFormat,
        flags: PsumFlags,
        src: &TensorPattern,
        dst: &Tensor<3>,
    ) -> Result<(), Fault> {
        let Some(Stationary::Transpose { bits, k, n, format }) = &self.engines.stationary else {
            return Err(mismatch(
                site,
                "Matmul with transpose_mode 1 on weights loaded without transpose_mode 1".into(),
            ));
        };
        let (k, n, format) = (*k, *n, *format);
        if !(flags.start && flags.stop && !flags.accumulate) {
            return Err(mismatch(
                site,
                format!(
                    "transposing Matmul with psum_accumulate_flags {{begin={} end={} accumulate={}}} (begin=1 end=1 is modelled)",
                    u8::from(flags.start),
                    u8::from(flags.stop),
                    u8::from(flags.accumulate)
                ),
            ));
        }
        if input != format {
            return Err(mismatch(
                site,
                format!(
                    "transposing Matmul with a {} moving tensor on {} weights",
                    input.name(),
                    format.name()
                ),
            ));
        }
        if let Some(d) = x.out_dtype().filter(|d| d.0 != 0) {
            let out = self.format(site, "out", d)?;
            if out != format {
                return Err(mismatch(
                    site,
                    format!(
                        "transposing Matmul writing {} from {} weights (the output has the input's type)",
                        out.name(),
                        format.name()
                    ),
                ));
            }
        }
        let dst = self.pattern(site, "dst", dst, x.num_active_cols(), format)?;
        let rs = self.operand(site, "src", src)?;
        moving_rows(site, src, k)?;
        let f = src.elems_per_partition() as usize;
        psum_shape(site, &dst, n, f)?;
        let moving = self.load_f32(site, &rs, input)?;
        let eb = format.container_bytes();
        let mut out = vec![0u8; n * f * eb];
        pe::transpose_pass(bits, eb, &moving, k, n, f, &mut out).map_err(|e| match e {
            pe::PeError::NotPermutation { .. } => mismatch(site, e.to_string()),
            e => Fault::exec(site, e.to_string()),
        })?;
        let rd = self.operand(site, "dst", &dst)?;
        if rd.space != Space::Psum {
            return Err(Fault::exec(
                site,
                format!("matmul destination 0x{:08x} is not in PSUM", dst.addr),
            ));
        }
        self.chip.scatter(&rd, &out);
        Ok(())
    }

    /// MatmulMx: both operands MX; the moving tile's data and scales come from the bundle.
    pub(crate) fn matmul_mx(&mut self, site: Site, x: &MatmulMx) -> Result<(), Fault> {
        full_array(site, Some(x.row_grp), Some(x.col_grp))?;
        let input = mx_packed(self.format(site, "in", x.in_dtype)?);
        let out = match x.out_dtype.0 {
            0 => NumFormat::Float32,
            _ => self.format(site, "out", x.out_dtype)?,
        };
        let flags = PsumFlags::from_wire(x.psum_accumulate_flags.into_bits())
            .map_err(|err| Fault::exec(site, err.to_string()))?;
        let dst = self.pattern(site, "dst", &x.dst.0, x.num_active_cols, out)?;
        let f = dst.elems_per_partition() as u32;
        let src = self.mx_patterns(site, "src", &x.src, x.num_active_rows, f, input)?;
        let target = PsumTarget {
            flags,
            zero_region: x.psum_zero_region,
            out,
            dst,
        };
        let Some(Stationary::Mx {
            format,
            partitions,
            lanes,
            data,
            scales: sscales,
        }) = &self.engines.stationary
        else {
            return Err(Fault::exec(
                site,
                "MatmulMx without MX weights loaded by LdWeightsMx",
            ));
        };
        let st = MxOperand {
            format: *format,
            partitions: *partitions,
            lanes: *lanes,
            data,
            scales: sscales,
        };
        let (rs, rsc) = (
            self.operand(site, "src.data", &src.data)?,
            self.operand(site, "src.scale", &src.scale)?,
        );
        let (mdata, mscales) = (self.chip.gather(&rs), self.chip.gather(&rsc));
        let f = src.data.elems_per_partition() as usize;
        let mv = MxOperand {
            format: input,
            partitions: src.data.partitions as usize,
            lanes: f,
            data: &mdata,
            scales: &mscales,
        };
        let n = st.lanes;
        let mut sum = vec![0f32; n * f];
        pe::mx_matmul(&st, &mv, &mut sum).map_err(|e| Fault::exec(site, e.to_string()))?;
        self.write_psum(site, &target, n, f, &sum)
    }

    fn write_psum(
        &mut self,
        site: Site,
        a: &PsumTarget,
        n: usize,
        f: usize,
        sum: &[f32],
    ) -> Result<(), Fault> {
        psum_shape(site, &a.dst, n, f)?;
        let rd = self.operand(site, "dst", &a.dst)?;
        if rd.space != Space::Psum {
            return Err(Fault::exec(
                site,
                format!("matmul destination 0x{:08x} is not in PSUM", a.dst.addr),
            ));
        }
        self.chip.note_accumulate(&rd, a.flags);
        if a.flags.start {
            let region = ZeroRegion::from_wire(a.zero_region.0)
                .map_err(|e| Fault::exec(site, e.to_string()))?;
            let span = region
                .span(rd.base as usize)
                .map_err(|e| Fault::exec(site, e.to_string()))?;
            for p in rd.first_partition..rd.first_partition + rd.partitions {
                self.chip.zero(Space::Psum, p, span.clone());
            }
            self.chip.note_zero(
                Space::Psum,
                rd.first_partition,
                rd.partitions,
                span.start as u32,
                span.end as u32,
            );
        }
        let err = |e: pe::PeError| Fault::exec(site, e.to_string());
        match a.out {
            NumFormat::Float32 => {
                let mut cur = self.load_f32(site, &rd, NumFormat::Float32)?;
                pe::psum_write_f32(a.flags, sum, &mut cur).map_err(err)?;
                self.store_f32(site, &rd, NumFormat::Float32, &cur, &CastPolicy::REFERENCE)
            }
            NumFormat::Bfloat16 if self.gen >= Gen::V4 => {
                let bytes = self.chip.gather(&rd);
                let mut cur: Vec<u16> = bytes
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                pe::psum_write_bf16(a.flags, sum, &mut cur).map_err(err)?;
                let out: Vec<u8> = cur.iter().flat_map(|v| v.to_le_bytes()).collect();
                self.chip.scatter(&rd, &out);
                Ok(())
            }
            other => Err(Fault::exec(
                site,
                format!(
                    "PSUM writes in {} are not simulated on {}",
                    other.name(),
                    self.gen
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiler_weights_source_groups_by_32_only_for_whole_groups_past_one() {
        let at = |t: Tensor<3>| (t.addr, t.step, t.num);
        let imm = tpbsim_isa::Addr4::imm;
        // Counts below, at and past one group of 32, and a multiple of 32.
        for (n, step, num) in [
            (1, [-1, 0, 0], [1, 1, 1]),
            (31, [-1, 0, 0], [31, 1, 1]),
            (32, [-1, 0, 0], [32, 1, 1]),
            (33, [-1, 0, 0], [33, 1, 1]),
            (64, [-1, 0, -32], [32, 1, 2]),
            (96, [-1, 0, -32], [32, 1, 3]),
            (128, [-1, 0, -32], [32, 1, 4]),
        ] {
            assert_eq!(
                at(compiler_weights_source(0x100, n, 2)),
                (imm(0x100 + 2 * (u32::from(n) - 1)), step, num),
                "n = {n}"
            );
        }
        // Element 0 sits at the address when there is one element (and with none).
        assert_eq!(compiler_weights_source(0x40, 1, 4).addr, imm(0x40));
        assert_eq!(compiler_weights_source(0x40, 0, 4).addr, imm(0x40));
    }
}
