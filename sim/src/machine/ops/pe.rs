//! PE: LdWeights / Matmul (0x01 / 0x02) and their MX forms LdWeightsMx / MatmulMx (0x09 / 0x0A).

use tpbsim_isa::{LdWeights, LdWeightsMx, Matmul, MatmulMx, ZeroRegion as WireZeroRegion};

use super::{mx_packed, Stationary};
use crate::machine::core::Machine;
use crate::machine::fault::{Fault, Site};
use crate::machine::geometry::Space;
use crate::machine::pattern::TensorPattern;
use crate::numerics::cast::CastPolicy;
use crate::numerics::pe::{self, Fp32Mode, MxOperand, PeMode, PsumFlags, ZeroRegion};
use tpbsim_isa::Gen;
use tpbsim_isa::NumFormat;

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
    /// LdWeights: the `[k = partitions, n = elements]` tile becomes the stationary operand.
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
        let format = self.format(site, "in", x.in_dtype())?;
        let src = match x {
            LdWeights::V2(v) => v.src,
            LdWeights::V3(v) => v.src,
            LdWeights::V4(v) => v.src.0,
            LdWeights::V5(v) => v.src.0,
        };
        let src = self.pattern(site, "src", &src, x.num_active_rows(), format)?;
        let r = self.operand(site, "src", &src)?;
        let values = self.load_f32(site, &r, format)?;
        let (k, n) = (src.partitions as usize, src.elems_per_partition() as usize);
        self.engines.stationary = Some(Stationary::Dense {
            values,
            k,
            n,
            format,
        });
        Ok(())
    }

    /// LdWeightsMx: the packed MX tile and its scales become the stationary operand.
    pub(crate) fn ld_weights_mx(&mut self, site: Site, x: &LdWeightsMx) -> Result<(), Fault> {
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
        let (data, scales) = (self.chip.gather(&rd), self.chip.gather(&rs));
        self.engines.stationary = Some(Stationary::Mx {
            format,
            partitions,
            lanes,
            data,
            scales,
        });
        Ok(())
    }

    /// Matmul: `psum[n][f] (+)= Σ_k stationary[k][n] · moving[k][f]`.
    pub(crate) fn matmul(&mut self, site: Site, x: &Matmul) -> Result<(), Fault> {
        let input = self.format(site, "in", x.in_dtype())?;
        let out = match x.out_dtype() {
            Some(d) if d.0 != 0 => self.format(site, "out", d)?,
            _ => NumFormat::Float32,
        };
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
        if src.partitions as usize != k {
            return Err(Fault::exec(
                site,
                format!(
                    "moving tile has {} partitions, the weights {k} rows",
                    src.partitions
                ),
            ));
        }
        let f = src.elems_per_partition() as usize;
        let mode = if input == NumFormat::Float32 || *format == NumFormat::Float32 {
            PeMode::Fp32(
                Fp32Mode::from_wire(x.fp32_mode().0)
                    .map_err(|e| Fault::exec(site, e.to_string()))?,
            )
        } else {
            PeMode::Plain
        };
        let moving = self.load_f32(site, &rs, input)?;
        let mut sum = vec![0f32; n * f];
        pe::matmul(mode, values, &moving, k, n, f, &mut sum)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.write_psum(site, &target, n, f, &sum)
    }

    /// MatmulMx: both operands MX; the moving tile's data and scales come from the bundle.
    pub(crate) fn matmul_mx(&mut self, site: Site, x: &MatmulMx) -> Result<(), Fault> {
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
        if a.dst.partitions as usize != n || a.dst.elems_per_partition() as usize != f {
            return Err(Fault::exec(
                site,
                format!(
                    "PSUM destination is {} × {}, the product is {n} × {f}",
                    a.dst.partitions,
                    a.dst.elems_per_partition()
                ),
            ));
        }
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
