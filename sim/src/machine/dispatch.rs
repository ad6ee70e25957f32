//! From a decoded instruction to its effect: the control bundles, DMA, and the compute
//! operations of [`super::exec`], each on the engine whose stream holds it.

use tpbsim_isa::{Addr4Kind, Addr8, Dtype, Engine, Inst, LdWeights, Matmul, Tensor, TensorReduce};

use super::control;
use super::core::Machine;
use super::dma::{DmaDesc, DmaMem, DmaSide};
use super::exec::{ActArgs, MatmulArgs, ReduceArgs, ScalarSrc, TsArgs, TtArgs, Unary};
use super::fault::{Fault, Site};
use super::ops::{mx_packed, Act2Args, SttArgs, SttKind};
use super::pattern::{Dim, TensorPattern};
use super::sched::Flow;
use super::select::{AffineSelectArgs, RangeSelectArgs, SelectReduceArgs, TsSelectArgs};
use super::sync::SyncState;
use crate::numerics::alu::{AluContext, AluOp, ElementOp};
use crate::numerics::pe::PsumFlags;
use crate::numerics::{Format, Kind};

impl Machine<'_> {
    /// The format a dtype field names on this generation.
    pub(crate) fn format(&self, site: Site, field: &str, d: Dtype) -> Result<Format, Fault> {
        Format::from_wire_tag(d.0, self.gen).ok_or_else(|| {
            Fault::exec(
                site,
                format!(
                    "`{field}` dtype tag 0x{:02x} is not a number format on {}",
                    d.0, self.gen
                ),
            )
        })
    }

    /// The access pattern of a TENSORnD operand over `partitions` partitions of `f` elements.
    fn pattern<const N: usize>(
        &self,
        site: Site,
        name: &str,
        t: &Tensor<N>,
        partitions: u8,
        f: Format,
    ) -> Result<TensorPattern, Fault> {
        let addr = match t.addr.kind() {
            Addr4Kind::Imm => t.addr.address(),
            Addr4Kind::AddrReg => {
                let r = t.addr.0 as u8 as usize;
                self.regs[site.engine as usize]
                    .get(r)
                    .copied()
                    .ok_or_else(|| {
                        Fault::exec(
                            site,
                            format!("operand `{name}`: register {r} does not exist"),
                        )
                    })?
            }
            k => {
                return Err(Fault::NotSimulated {
                    site,
                    name: format!("operand `{name}` with ADDR4 form {k:?}"),
                    engine: site.engine,
                })
            }
        };
        if partitions == 0 {
            return Err(Fault::exec(
                site,
                format!("operand `{name}`: the active partition count is 0"),
            ));
        }
        let dims: Vec<Dim> = t
            .step
            .iter()
            .zip(&t.num)
            .map(|(&s, &n)| Dim::new(s as i32, n as u32))
            .collect();
        Ok(TensorPattern::new(
            addr,
            partitions as u32,
            f.container_bytes() as u32,
            &dims,
        ))
    }

    fn scalar(&self, site: Site, src: u8, value: u32, format: Format) -> Result<ScalarSrc, Fault> {
        match src {
            0 => Ok(ScalarSrc::Imm(value)),
            1 => Ok(ScalarSrc::Pointer {
                addr: value & tpbsim_isa::Addr4::ADDR_MASK,
                format,
            }),
            s => Err(Fault::NotSimulated {
                site,
                name: format!("scalar source mode {s} (register pointer)"),
                engine: site.engine,
            }),
        }
    }

    fn not_simulated(&self, site: Site, inst: &Inst) -> Fault {
        Fault::NotSimulated {
            site,
            name: format!("{} (opcode 0x{:02x})", inst.mnemonic(), site.opcode),
            engine: site.engine,
        }
    }

    fn addr8_side(
        &self,
        site: Site,
        what: &str,
        a: Addr8,
        steps: [i32; 2],
        nums: [u16; 2],
        elem: u16,
        d: Dtype,
    ) -> Result<DmaSide, Fault> {
        if !a.is_var_id() {
            return Err(Fault::NotSimulated {
                site,
                name: format!(
                    "DMA `{what}` ADDR8 mode 0x{:02x} (C isa/dma-encoding.md gives the DGE forms 0x20/0x28, not the DGE queue they use)",
                    a.marker_byte()
                ),
                engine: site.engine,
            });
        }
        let format = self.format(site, &format!("{what}_dtype"), d)?;
        let eb = format.container_bytes() as u32;
        let chunk = if elem == 0 { 0x10000 } else { elem as u32 };
        if chunk % eb != 0 {
            return Err(Fault::exec(
                site,
                format!(
                    "DMA `{what}` chunk of {chunk} bytes is not whole {} elements",
                    format.name()
                ),
            ));
        }
        let var = ((a.value() >> 32) & 0x00FF_FFFF) as u32;
        Ok(DmaSide {
            mem: if var == 0 {
                DmaMem::OnChip
            } else {
                DmaMem::Dram(var)
            },
            addr: a.value() & 0xFFFF_FFFF,
            format,
            dims: vec![
                (eb as i64, chunk / eb),
                (steps[0] as i64, nums[0] as u32),
                (steps[1] as i64, nums[1] as u32),
            ],
        })
    }

    /// Execute one decoded instruction.
    pub(crate) fn dispatch(
        &mut self,
        site: Site,
        inst: &Inst,
        sync: &mut SyncState,
    ) -> Result<Flow, Fault> {
        let e = site.engine;
        let pc = site.index;
        match inst {
            Inst::Control(_) => match site.opcode {
                0xA1 => Ok(Flow::Finish),
                0x9F | 0xA3 | 0xA4 | 0xA6 => Ok(Flow::Next),
                _ => Err(self.not_simulated(site, inst)),
            },
            Inst::Drain(_) | Inst::EventSemaphore(_) => Ok(Flow::Next),
            // The model has one NeuronCore: the other cores a cross-core barrier waits for
            // are not modelled.
            Inst::CoreBarrier(x) => Err(Fault::NotSimulated {
                site,
                name: format!(
                    "cross-core barrier (CORE_BARRIER id {}, index {})",
                    x.id, x.index
                ),
                engine: e,
            }),
            Inst::PseudoInst(x) => match x.sub_op.0 {
                1 => Ok(Flow::Finish),
                s => Err(Fault::NotSimulated {
                    site,
                    name: format!("PSEUDO_INST sub-op {s}"),
                    engine: e,
                }),
            },
            Inst::EventSemaphoreRangeClear(x) => {
                control::range_clear(sync, x.mode.0, x.first, x.last, &x.mask)
                    .map_err(|m| Fault::exec(site, m))?;
                Ok(Flow::Next)
            }
            Inst::CompareBranch(x) => {
                let fmt = self.format(site, "dtype", x.dtype)?;
                let regs = &self.regs[e as usize];
                let reg = |what: &str, i: u8| {
                    regs.get(i as usize).copied().ok_or_else(|| {
                        Fault::exec(
                            site,
                            format!("{what} register {i} does not exist (registers 0..{})", regs.len()),
                        )
                    })
                };
                let taken = control::branch_taken(
                    x.cmp_op.0,
                    fmt,
                    reg("cmp_reg0", x.cmp_reg0)?,
                    x.cmp_imm,
                    reg("cmp_reg1", x.cmp_reg1)?,
                )
                .map_err(|m| Fault::exec(site, m))?;
                if !taken {
                    return Ok(Flow::Next);
                }
                let len = self.stream_len_of(e);
                let t = control::branch_target(
                    pc,
                    len,
                    x.target_mode.0,
                    x.br_immediate,
                    reg("target_reg_lo", x.target_reg_lo)?,
                )
                .map_err(|m| Fault::exec(site, m))?;
                Ok(Flow::Jump(t))
            }
            Inst::AluOpInst(x) => {
                let fmt = self.format(site, "dtype", x.dtype)?;
                if fmt.kind() == Kind::Float || fmt.container_bytes() != 4 {
                    return Err(Fault::NotSimulated {
                        site,
                        name: format!("register ALU in {}", fmt.name()),
                        engine: e,
                    });
                }
                let sign = if fmt.kind() == Kind::Signed {
                    crate::numerics::alu::Signedness::Signed
                } else {
                    crate::numerics::alu::Signedness::Unsigned
                };
                let op =
                    AluOp::from_wire(x.op.0).map_err(|err| Fault::exec(site, err.to_string()))?;
                // The sequencer's scalar ALU is the integer datapath of the SP.
                let iop = AluContext::new(self.gen, Engine::Sp)
                    .int_op(op, sign)
                    .map_err(|err| Fault::exec(site, err.to_string()))?;
                let regs = &self.regs[e as usize];
                let get = |i: u8| {
                    regs.get(i as usize)
                        .copied()
                        .ok_or_else(|| Fault::exec(site, format!("register {i} does not exist")))
                };
                let a = get(x.src0_reg_lo)?;
                let b = if x.src1_datasrc.0 == 1 {
                    x.imm as u32
                } else {
                    get(x.src1_reg_lo)?
                };
                let v = iop.apply(a, b);
                let slot = self.regs[e as usize]
                    .get_mut(x.dst_reg_lo as usize)
                    .ok_or_else(|| {
                        Fault::exec(site, format!("register {} does not exist", x.dst_reg_lo))
                    })?;
                *slot = v;
                Ok(Flow::Next)
            }
            Inst::DmaDirect2d(x) => {
                let d = DmaDesc {
                    from: self.addr8_side(
                        site,
                        "src",
                        x.src,
                        x.src_step,
                        x.src_num,
                        x.src_elem_size,
                        x.in_dtype,
                    )?,
                    to: self.addr8_side(
                        site,
                        "dst",
                        x.dst,
                        x.dst_step,
                        x.dst_num,
                        x.dst_elem_size,
                        x.out_dtype,
                    )?,
                };
                self.dma_direct(site, &d, x.semaphore, x.sem_increment as u32, sync)?;
                Ok(Flow::Next)
            }
            Inst::DmaTrigger(x) => {
                // use_raw_count (G neff/format-reference.md §4.4; offset +0x2C inferred): a raw
                // descriptor count instead of a block id.
                if self.bundle_at(site)[0x2C] != 0 {
                    return Err(Fault::NotSimulated {
                        site,
                        name: "DMATRIGGER with use_raw_count (G neff/format-reference.md §4.4 gives no raw-count semantics)".into(),
                        engine: e,
                    });
                }
                let name = super::core::queue_name(&x.queue_name);
                self.trigger(site, e, &name, x.block_id, sync)?;
                Ok(Flow::Next)
            }
            Inst::TensorTensor(x)
                if matches!(site.opcode, 0x41 | 0x51)
                    && matches!(e, Engine::Pool | Engine::Dve) =>
            {
                let (in0, in1) = (
                    self.format(site, "in0", x.in_dtypes.lo())?,
                    self.format(site, "in1", x.in_dtypes.hi())?,
                );
                let out = self.format(site, "out", x.out_dtype)?;
                let n = x.num_active_partitions;
                let a = TtArgs {
                    op: x.op.0,
                    in0,
                    in1,
                    out,
                    src0: self.pattern(site, "src0", &x.src0, n, in0)?,
                    src1: self.pattern(site, "src1", &x.src1, n, in1)?,
                    dst: self.pattern(site, "dst", &x.dst, n, out)?,
                };
                self.exec_tensor_tensor(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::TensorScalar(x)
                if matches!(site.opcode, 0x43 | 0x53)
                    && matches!(e, Engine::Pool | Engine::Dve | Engine::Act) =>
            {
                let (input, out) = (
                    self.format(site, "in", x.in_dtype)?,
                    self.format(site, "out", x.out_dtype)?,
                );
                let n = x.num_active_partitions;
                let a = TsArgs {
                    op0: x.op0.0,
                    op1: x.op1.0,
                    s0: self.scalar(site, x.imm0_src.0, x.imm0, input)?,
                    s1: self.scalar(site, x.imm1_src.0, x.imm1, input)?,
                    reverse: x.reverse.into_bits(),
                    input,
                    out,
                    src: self.pattern(site, "src", &x.src, n, input)?,
                    dst: self.pattern(site, "dst", &x.dst, n, out)?,
                };
                self.exec_tensor_scalar(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::Activate(x) if e == Engine::Act => {
                let input = self.format(site, "in", x.in_bias_dtypes.lo())?;
                let out = self.format(site, "out", x.out_dtype)?;
                let n = x.num_active_partitions;
                // IMM_SRC_N (inverted): POINTER 0, INSTRUCTION 1, REG 2.
                let bias = match x.bias_src_n.0 {
                    0 => ScalarSrc::Pointer {
                        addr: x.bias & tpbsim_isa::Addr4::ADDR_MASK,
                        format: self.format(site, "bias", x.in_bias_dtypes.hi())?,
                    },
                    1 => ScalarSrc::Imm(x.bias),
                    s => {
                        return Err(Fault::NotSimulated {
                            site,
                            name: format!("activation bias source {s}"),
                            engine: e,
                        })
                    }
                };
                let a = ActArgs {
                    func: x.activation_func.0,
                    scale: self.scalar(site, x.scale_src.0, x.scale_value.0, Format::Float32)?,
                    bias,
                    alpha: x.imm,
                    accumulate: x.accumulator_cmd.0,
                    input,
                    out,
                    src: self.pattern(site, "src", &x.src, n, input)?,
                    dst: self.pattern(site, "dst", &x.dst, n, out)?,
                };
                self.exec_activate(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::ActTableLoad(x) if e == Engine::Act => {
                self.engines.act_table_set = Some(x.act_table_set);
                Ok(Flow::Next)
            }
            Inst::ReadAccumulator(x)
                if matches!((site.opcode, e), (0x24, Engine::Act) | (0x9B, Engine::Dve)) =>
            {
                let out = self.format(site, "dtype", x.dtype)?;
                let dst = self.pattern(site, "dst", &x.dst, x.num_active_partitions, out)?;
                self.exec_read_accumulator(site, x.negated != 0, out, &dst)?;
                Ok(Flow::Next)
            }
            Inst::TensorReduce(x) if matches!(e, Engine::Pool | Engine::Dve | Engine::Act) => {
                let (input, out) = (
                    self.format(site, "in", x.in_dtype())?,
                    self.format(site, "out", x.out_dtype())?,
                );
                let n = x.num_active_channels();
                let (src, dst) = match x {
                    TensorReduce::V2(v) => (v.src, v.dst),
                    TensorReduce::V4(v) => (v.src.0, v.dst.0),
                };
                let (src, dst) = (
                    self.pattern(site, "src", &src, n, input)?,
                    self.pattern(site, "dst", &dst, n, out)?,
                );
                match site.opcode {
                    0x42 | 0x52 => {
                        let a = ReduceArgs {
                            op: x.op().0,
                            negated: x.negated() != 0,
                            op_dim: x.op_dim().0,
                            input,
                            out,
                            src,
                            dst,
                        };
                        self.exec_reduce(site, &a)?
                    }
                    0x46 | 0x47 => self.exec_unary(site, Unary::Copy, input, out, &src, &dst)?,
                    0x48 => self.exec_unary(site, Unary::Reciprocal, input, out, &src, &dst)?,
                    0x83 | 0x84 if e == Engine::Pool => self.exec_transpose_reduce(
                        site,
                        x.op().0,
                        x.negated() != 0,
                        x.op_dim().0,
                        input,
                        out,
                        &src,
                        &dst,
                    )?,
                    _ => return Err(self.not_simulated(site, inst)),
                }
                Ok(Flow::Next)
            }
            Inst::Memset(x)
                if site.opcode == 0x49 && matches!(e, Engine::Pool | Engine::Dve | Engine::Act) =>
            {
                let f = self.format(site, "dtype", x.dtype)?;
                let dst = self.pattern(site, "dst", &x.dst, x.num_active_channels, f)?;
                self.exec_memset(site, f, x.fill_value, &dst)?;
                Ok(Flow::Next)
            }
            Inst::LdWeights(x) if e == Engine::Pe => {
                if let LdWeights::V2(v) = x {
                    // The v2 transpose flag in the source ADDR4's top byte (docs/isa.md P9).
                    if (v.src.addr.0 >> 24) as u8 == 0x80 {
                        return Err(Fault::NotSimulated {
                            site,
                            name: "v2 transposed LdWeights (+0x13 = 0x80)".into(),
                            engine: e,
                        });
                    }
                }
                let f = self.format(site, "in", x.in_dtype())?;
                let src = match x {
                    LdWeights::V2(v) => v.src,
                    LdWeights::V3(v) => v.src,
                    LdWeights::V4(v) => v.src.0,
                    LdWeights::V5(v) => v.src.0,
                };
                let src = self.pattern(site, "src", &src, x.num_active_rows(), f)?;
                self.exec_load_weights(site, f, &src)?;
                Ok(Flow::Next)
            }
            Inst::Matmul(x) if e == Engine::Pe => {
                let input = self.format(site, "in", x.in_dtype())?;
                let out = match x.out_dtype() {
                    Some(d) if d.0 != 0 => self.format(site, "out", d)?,
                    _ => Format::Float32,
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
                let a = MatmulArgs {
                    input,
                    fp32_mode: x.fp32_mode().0,
                    flags,
                    zero_region: x.psum_zero_region().map_or(0, |z| z.0),
                    out,
                    src: self.pattern(site, "src", &src, x.num_active_rows(), input)?,
                    dst: self.pattern(site, "dst", &dst, x.num_active_cols(), out)?,
                };
                self.exec_matmul(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::Activate2(x) if e == Engine::Act => {
                let input = self.format(site, "in", x.in_dtype)?;
                let out = self.format(site, "out", x.out_dtype)?;
                let n = x.num_active_partitions;
                if x.relu_param_src.0 != 0 {
                    return Err(Fault::NotSimulated {
                        site,
                        name: format!("Activate2 relu_param source {}", x.relu_param_src.0),
                        engine: e,
                    });
                }
                let imm_format = match x.imm_dtype.0 {
                    0 => Format::Float32,
                    _ => self.format(site, "imm", x.imm_dtype)?,
                };
                let a = Act2Args {
                    func: x.activation_func.0,
                    op0: x.op0.0,
                    op1: x.op1.0,
                    s0: self.scalar(site, x.imm0_src.0, x.imm0, imm_format)?,
                    s1: ScalarSrc::Imm(x.imm1),
                    reverse: x.reverse,
                    alpha: x.relu_param,
                    reduce_cmd: x.reduce_cmd.0,
                    reduce_op: x.reduce_op.0,
                    input,
                    out,
                    src: self.pattern(site, "src", &x.src, n, input)?,
                    dst: self.pattern(site, "dst", &x.dst, n, out)?,
                };
                self.exec_activate2(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::Iota(x) if matches!(e, Engine::Pool | Engine::Dve) => {
                if x.src_band.iter().any(|&b| b != 0) {
                    return Err(Fault::NotSimulated {
                        site,
                        name: "Iota with a non-zero manual source band (+0x10..+0x1E, layout not published)".into(),
                        engine: e,
                    });
                }
                let out = self.format(site, "out", x.out_dtype)?;
                let dst = self.pattern(site, "dst", &x.dst, x.num_active_channels, out)?;
                self.exec_iota(site, x.start_value, out, &dst)?;
                Ok(Flow::Next)
            }
            Inst::TensorTensor(x)
                if matches!(site.opcode, 0x72 | 0x99)
                    && matches!(e, Engine::Pool | Engine::Dve) =>
            {
                if x.op.0 != AluOp::BYPASS.wire() {
                    return Err(Fault::exec(
                        site,
                        format!(
                            "predicated copy with ALU op 0x{:02x} (only BYPASS moves data)",
                            x.op.0
                        ),
                    ));
                }
                let (pf, df) = (
                    self.format(site, "predicate", x.in_dtypes.lo())?,
                    self.format(site, "data", x.in_dtypes.hi())?,
                );
                let out = self.format(site, "out", x.out_dtype)?;
                let n = x.num_active_partitions;
                let (pred, data, dst) = (
                    self.pattern(site, "predicate", &x.src0, n, pf)?,
                    self.pattern(site, "data", &x.src1, n, df)?,
                    self.pattern(site, "dst", &x.dst, n, out)?,
                );
                self.exec_predicated(site, site.opcode == 0x99, pf, df, out, &pred, &data, &dst)?;
                Ok(Flow::Next)
            }
            Inst::CopyPredScalar(x) if matches!(e, Engine::Pool | Engine::Dve) => {
                let mf = self.format(site, "mask", x.mask_dtype)?;
                let sf = self.format(site, "src", x.src_dtype)?;
                let out = self.format(site, "out", x.out_dtype)?;
                let n = x.num_active_partitions;
                let (mask, dst) = (
                    self.pattern(site, "mask", &x.mask, n, mf)?,
                    self.pattern(site, "dst", &x.dst, n, out)?,
                );
                let fill = match x.use_false_fill {
                    0 => false,
                    1 => true,
                    v => return Err(Fault::exec(site, format!("use_false_fill is {v} (0 or 1)"))),
                };
                self.exec_copy_pred_scalar(site, x.scalar, fill, mf, sf, out, &mask, &dst)?;
                Ok(Flow::Next)
            }
            Inst::QuantizeMx(x) if e == Engine::Dve => {
                let input = self.format(site, "in", x.in_dtype)?;
                let df = mx_packed(self.format(site, "out", x.out_dtype)?);
                let n = x.num_active_partitions;
                let src = self.pattern(site, "src", &x.src.0, n, input)?;
                let lanes = df.lanes() as u64;
                let free = src.elems_per_partition();
                if free % lanes != 0 {
                    return Err(Fault::exec(
                        site,
                        format!("{free} source elements per partition are not whole ×{lanes} containers"),
                    ));
                }
                let dst = self.mx_patterns(site, "dst", &x.dst, n, (free / lanes) as u32, df)?;
                self.exec_quantize_mx(site, input, df, &src, &dst)?;
                Ok(Flow::Next)
            }
            Inst::LdWeightsMx(x) if e == Engine::Pe => {
                let f = mx_packed(self.format(site, "in", x.in_dtype)?);
                let src = self.mx_patterns(
                    site,
                    "src",
                    &x.src,
                    x.num_active_rows,
                    u32::from(x.num_active_cols),
                    f,
                )?;
                self.exec_load_weights_mx(site, f, &src.data, &src.scale)?;
                Ok(Flow::Next)
            }
            Inst::MatmulMx(x) if e == Engine::Pe => {
                let input = mx_packed(self.format(site, "in", x.in_dtype)?);
                let out = match x.out_dtype.0 {
                    0 => Format::Float32,
                    _ => self.format(site, "out", x.out_dtype)?,
                };
                let flags = PsumFlags::from_wire(x.psum_accumulate_flags.into_bits())
                    .map_err(|err| Fault::exec(site, err.to_string()))?;
                let dst = self.pattern(site, "dst", &x.dst.0, x.num_active_cols, out)?;
                let f = dst.elems_per_partition() as u32;
                let src = self.mx_patterns(site, "src", &x.src, x.num_active_rows, f, input)?;
                let a = MatmulArgs {
                    input,
                    fp32_mode: 0,
                    flags,
                    zero_region: x.psum_zero_region.0,
                    out,
                    src: src.data,
                    dst,
                };
                self.exec_matmul_mx(site, &a, &src.scale)?;
                Ok(Flow::Next)
            }
            Inst::TensorDequantize(x) if e == Engine::Pool => {
                let (input, out) = (
                    self.format(site, "in", x.in_dtype)?,
                    self.format(site, "out", x.out_dtype)?,
                );
                let n = x.num_active_partitions;
                let (src, dst) = (
                    self.pattern(site, "src", &x.src, n, input)?,
                    self.pattern(site, "dst", &x.dst, n, out)?,
                );
                self.exec_dequantize(site, x.dequant_fmt.0, x.group_size, input, out, &src, &dst)?;
                Ok(Flow::Next)
            }
            Inst::RangeSelect(x) if e == Engine::Dve => {
                let (input, out) = (
                    self.format(site, "in", x.in_out_dtypes.lo())?,
                    self.format(site, "out", x.in_out_dtypes.hi())?,
                );
                let n = x.num_active_partitions;
                let a = RangeSelectArgs {
                    reduce_cmd: x.reduce_cmd.0,
                    reduce_op: x.reduce_op.0,
                    fill: x.fill_val.0,
                    comp: [x.comp_op0.0, x.comp_op1.0],
                    bounds: [
                        self.scalar(site, x.bound0_src.0, x.bound0, Format::Float32)?,
                        self.scalar(site, x.bound1_src.0, x.bound1, Format::Float32)?,
                    ],
                    input,
                    out,
                    src: self.pattern(site, "src", &x.src, n, input)?,
                    dst: self.pattern(site, "dst", &x.dst, n, out)?,
                };
                self.exec_range_select(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::SelectReduce(x) if matches!(e, Engine::Pool | Engine::Dve) => {
                let (mf, sf) = (
                    self.format(site, "mask", x.mask_src_dtypes.lo())?,
                    self.format(site, "src", x.mask_src_dtypes.hi())?,
                );
                let out = self.format(site, "out", x.out_dtype)?;
                let n = x.num_active_partitions;
                let a = SelectReduceArgs {
                    bypass_op: x.bypass_op.0,
                    reduce_op: x.reduce_op.0,
                    reverse: x.reverse,
                    accumulate: x.accumulator_cmd.0,
                    mask_format: mf,
                    src_format: sf,
                    out,
                    mask: self.pattern(site, "mask", &x.mask, n, mf)?,
                    src: self.pattern(site, "src", &x.src, n, sf)?,
                    dst: self.pattern(site, "dst", &x.dst, n, out)?,
                };
                self.exec_select_reduce(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::ScalarTensorTensor(x) if matches!(e, Engine::Pool | Engine::Dve) => {
                let kind = SttKind::from_opcode(site.opcode)
                    .ok_or_else(|| self.not_simulated(site, inst))?;
                let (in0, in1) = (
                    self.format(site, "in0", x.in_dtypes.lo())?,
                    self.format(site, "in1", x.in_dtypes.hi())?,
                );
                let out = self.format(site, "out", x.out_dtype)?;
                let scalar_format = self.format(site, "imm0", x.imm0_dtype)?;
                let n = x.num_active_partitions;
                let a = SttArgs {
                    kind,
                    op0: x.op0.0,
                    op1: x.op1.0,
                    reverse: x.reverse,
                    accumulate: x.accumulator_cmd.0,
                    scalar: self.scalar(site, x.imm0_src.0, x.imm0, scalar_format)?,
                    scalar_format,
                    in0,
                    in1,
                    out,
                    src0: self.pattern(site, "src0", &x.src0, n, in0)?,
                    src1: self.pattern(site, "src1", &x.src1, n, in1)?,
                    dst: self.pattern(site, "dst", &x.dst, n, out)?,
                };
                self.exec_scalar_tensor_tensor(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::TensorScalarSelect(x) if matches!(e, Engine::Pool | Engine::Dve) => {
                let f = self.format(site, "dtype", x.dtype)?;
                let pf = self.format(site, "pred", x.pred_dtype)?;
                let n = x.num_active_partitions;
                let a = TsSelectArgs {
                    reversed: x.reversed_pred,
                    format: f,
                    pred_format: pf,
                    imm: self.scalar(site, x.imm_src.0, x.imm, f)?,
                    pred: self.scalar(site, x.pred_src.0, x.pred, pf)?,
                    src: self.pattern(site, "src", &x.src, n, f)?,
                    dst: self.pattern(site, "dst", &x.dst, n, f)?,
                };
                self.exec_ts_select(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::AffineSelect(x) if matches!(e, Engine::Pool | Engine::Dve) => {
                let (input, out) = (
                    self.format(site, "in", x.in_out_dtypes.lo())?,
                    self.format(site, "out", x.in_out_dtypes.hi())?,
                );
                let n = x.num_active_partitions;
                let a = AffineSelectArgs {
                    mode: x.fill_mode.0,
                    fill_reg: x.fill_reg,
                    base: x.mask_base,
                    step: x.mask_step.map(|s| s as i16),
                    num: x.mask_num,
                    channel_multiplier: x.channel_multiplier,
                    input,
                    out,
                    src: self.pattern(site, "src", &x.src, n, input)?,
                    dst: self.pattern(site, "dst", &x.dst, n, out)?,
                };
                self.exec_affine_select(site, &a)?;
                Ok(Flow::Next)
            }
            Inst::Raw(r) if (0xC1..=0xDF).contains(&site.opcode) => {
                self.pseudo(site, &r.0, sync)
            }
            Inst::FunctionCall(_) | Inst::FunctionBegin(_) => Err(Fault::NotSimulated {
                site,
                name: format!(
                    "{} (R isa/pseudo-instruction-lowering.md puts function bodies in FUNCTION sections; no page names their NEFF members)",
                    inst.mnemonic()
                ),
                engine: e,
            }),
            _ => Err(self.not_simulated(site, inst)),
        }
    }
}
