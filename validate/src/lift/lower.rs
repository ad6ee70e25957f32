//! Lowering: BIR instructions → bundles.
//!
//! Lowering runs in four steps: choose the opcode sequence ([`plan`]: the seed-004 fan-in, or
//! the `opcode` attribute), bind the instruction's operands to descriptor fields
//! ([`bindings`], shared with the lifter), build the canonical bundles (operands, dtype tags,
//! partition counts and the fields tpbsim derives: PE group codes, fp32 pass modes, the
//! transpose marker, ...), then apply the parameters, `events` and `wire` attributes. Every
//! bundle produced decodes in the target generation.

use serde_json::{Map, Value};
use tpbsim_isa::formats::loc::{
    self, activate as act_loc, ld_weights as ldw_loc, ld_weights_mx as ldwmx_loc, matmul as mm_loc,
    matmul_mx as mmx_loc, quantize_mx as qmx_loc, read_accumulator as rdacc_loc,
};
use tpbsim_isa::opcode_byte as ob;
use tpbsim_isa::spec::{FieldLoc, FieldType};
use tpbsim_isa::{decode, spec, Addr4, Bundle, FieldValue, Gen, LayoutMeta, Wire};

use super::ap::{self, Desc, MxDesc};
use super::dtype::{bir_dtype, wire_tag, DtypeCtx};
use super::error::{AttrError, FieldError, GenericError, OperandError, PlanError, SlotFault};
use super::fields::{self, canonical, layout_of, write_uint};
use super::groups;
use super::rules::{self, Dt, Form, Role};
use super::{LowerError, ATTR_BUNDLE, ATTR_EVENTS, ATTR_FP32_PASSES, ATTR_OPCODE, ATTR_WIRE};
use crate::bir::{AccessPattern, ClassFields, InstClass, Instruction};
use tpbsim_isa::NumFormat;

/// An operand position of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// `args[i]`.
    Arg(usize),
    /// `outs[i]`.
    Out(usize),
}

/// How one operand sits in a bundle.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bind {
    /// A descriptor role.
    Role(Role, Slot),
    /// An MXMEM_PATTERN1D holding data and scales, its data dtype tag in `dt`.
    Mx {
        field: FieldLoc,
        dt: FieldLoc,
        part: FieldLoc,
        data: Slot,
        scale: Slot,
    },
    /// The ACTIVATE bias pointer: one value per partition at the `bias` address, dtype in the
    /// high nibble of `in_bias_dtypes`, `bias_src_n` = POINTER.
    Bias(Slot),
}

/// One bundle of a lowering: its opcode, form and operand bindings.
#[derive(Clone, Debug)]
pub(crate) struct Piece {
    pub opcode: u8,
    pub form: &'static Form,
    pub binds: Vec<Bind>,
}

pub(crate) fn piece(opcode: u8, form: &'static Form, binds: Vec<Bind>) -> Piece {
    Piece {
        opcode,
        form,
        binds,
    }
}

/// The form's own operands bound in order (`args[i]` / `outs[j]` + offsets).
pub(crate) fn form_binds(form: &'static Form, arg0: usize, out0: usize) -> Vec<Bind> {
    form.args
        .iter()
        .enumerate()
        .map(|(i, r)| Bind::Role(*r, Slot::Arg(arg0 + i)))
        .chain(
            form.outs
                .iter()
                .enumerate()
                .map(|(j, r)| Bind::Role(*r, Slot::Out(out0 + j))),
        )
        .collect()
}

/// ACTIVATE's own operands, and the bias pointer as `args[1]` when it has two inputs.
pub(crate) fn activate_piece(nargs: usize) -> Piece {
    let mut b = form_binds(&rules::ACT, 0, 0);
    if nargs == 2 {
        b.push(Bind::Bias(Slot::Arg(1)));
    }
    piece(ob::ACTIVATE, &rules::ACT, b)
}

/// The bundles a class with `nargs` inputs lowers to for `opcodes`, with their bindings.
/// The lifter calls this with the opcodes it found; lowering with the ones [`plan`] chose.
pub(crate) fn bindings(
    class: InstClass,
    opcodes: &[u8],
    nargs: usize,
    gen: Gen,
) -> Result<Vec<Piece>, PlanError> {
    use InstClass as C;
    use Slot::*;
    let bad = || PlanError::NoBinding {
        class,
        opcodes: opcodes.to_vec(),
    };
    if let Some(g) = groups::find(class, opcodes) {
        return Ok(groups::pieces(g, opcodes, nargs, gen));
    }
    Ok(match (class, opcodes) {
        (C::Matmult | C::Transpose, [ob::MATMUL]) => groups::pe_pieces(opcodes, nargs, gen),
        (C::QuantizeMx, [ob::QUANTIZE_MX]) => vec![piece(
            ob::QUANTIZE_MX,
            &QMX_FORM,
            vec![
                Bind::Role(
                    rules::role(
                        qmx_loc::SRC,
                        Dt::Field(qmx_loc::IN_DTYPE),
                        qmx_loc::NUM_ACTIVE_PARTITIONS,
                    ),
                    Arg(0),
                ),
                Bind::Mx {
                    field: qmx_loc::DST,
                    dt: qmx_loc::OUT_DTYPE,
                    part: qmx_loc::NUM_ACTIVE_PARTITIONS,
                    data: Out(0),
                    scale: Out(1),
                },
            ],
        )],
        (C::Activation, [ob::ACTIVATE]) => vec![activate_piece(nargs)],
        (_, [op]) => {
            let (_, form) = rules::forms_of(class)
                .find(|(o, _)| o == op)
                .ok_or_else(bad)?;
            vec![piece(*op, form, form_binds(form, 0, 0))]
        }
        // No group of the class has this sequence.
        (_, [] | [_, _, ..]) => return Err(bad()),
    })
}

/// MATMUL: operands placed by [`bindings`].
pub(crate) static MM_FORM: Form = Form {
    format: "Matmul",
    args: &[],
    outs: &[],
    params: rules::MM_PARAMS,
};
/// LDWEIGHTS_MX.
pub(crate) static LDWMX_FORM: Form = Form {
    format: "LdWeightsMx",
    args: &[],
    outs: &[],
    params: &[],
};
/// MATMUL_MX.
pub(crate) static MMX_FORM: Form = Form {
    format: "MatmulMx",
    args: &[],
    outs: &[],
    params: rules::MMX_PARAMS,
};
/// QUANTIZE_MX.
pub(crate) static QMX_FORM: Form = Form {
    format: "QuantizeMx",
    args: &[],
    outs: &[],
    params: &[],
};

/// Mnemonics of an opcode list, for messages.
pub(crate) fn mnemonics(ops: &[u8]) -> String {
    ops.iter()
        .map(|&o| mnemonic(o))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The catalog mnemonic of an opcode, or its hex.
pub(crate) fn mnemonic(op: u8) -> String {
    spec::opcode(op).map_or_else(|| format!("{op:#04x}"), |r| r.mnemonic().to_string())
}

fn opcode_by_name(v: &Value) -> Result<u8, PlanError> {
    let s = v
        .as_str()
        .ok_or_else(|| PlanError::NotMnemonic(v.clone()))?;
    spec::opcode_by_mnemonic(s)
        .map(|r| r.code)
        .ok_or_else(|| PlanError::UnknownMnemonic(s.to_string()))
}

pub(crate) fn is_two_pass(inst: &Instruction) -> bool {
    inst.args.len() == 2
        && inst.args.iter().any(|a| a.dtype == NumFormat::Float32)
        && inst.attrs.get(ATTR_FP32_PASSES).and_then(Value::as_u64) != Some(1)
}

/// The opcode sequence an instruction lowers to: the fan-in, then the `opcode` attribute.
pub(crate) fn plan(inst: &Instruction, gen: Gen) -> Result<Vec<u8>, PlanError> {
    use InstClass as C;
    let mut ops: Vec<u8> = match groups::plan(inst)? {
        Some(ops) => ops,
        None => match inst.class {
            C::QuantizeMx => vec![ob::QUANTIZE_MX],
            _ => vec![rules::default_opcode(inst, gen)?],
        },
    };
    match inst.attrs.get(ATTR_OPCODE) {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            if list.len() != ops.len() {
                return Err(PlanError::MnemonicCount {
                    given: list.len(),
                    bundles: ops.len(),
                });
            }
            for (slot, v) in ops.iter_mut().zip(list) {
                let op = opcode_by_name(v)?;
                let same = |a: u8, b: u8| {
                    let fa = layout_of(&canonical(a), gen).map(|m| m.format_name());
                    let fb = layout_of(&canonical(b), gen).map(|m| m.format_name());
                    matches!((fa, fb), (Ok(x), Ok(y)) if x == y)
                };
                if op != *slot && !same(op, *slot) {
                    return Err(PlanError::OtherLayout {
                        given: op,
                        planned: *slot,
                    });
                }
                *slot = op;
            }
        }
        Some(v) => {
            let op = opcode_by_name(v)?;
            if ops.len() != 1 {
                return Err(PlanError::OneMnemonic {
                    class: inst.class,
                    bundles: ops.len(),
                });
            }
            if !rules::forms_of(inst.class).any(|(o, _)| o == op) {
                return Err(PlanError::NotOfClass {
                    opcode: op,
                    class: inst.class,
                });
            }
            ops[0] = op;
        }
    }
    Ok(ops)
}

/// The instruction operand at a slot.
pub(crate) fn slot_ap(inst: &Instruction, s: Slot) -> Option<&AccessPattern> {
    match s {
        Slot::Arg(i) => inst.args.get(i),
        Slot::Out(i) => inst.outs.get(i),
    }
}

/// Slots a piece list binds: (highest arg + 1, highest out + 1).
pub(crate) fn arity(pieces: &[Piece]) -> (usize, usize) {
    let (mut a, mut o) = (0, 0);
    let mut see = |s: Slot| match s {
        Slot::Arg(i) => a = a.max(i + 1),
        Slot::Out(i) => o = o.max(i + 1),
    };
    for p in pieces {
        for b in &p.binds {
            match *b {
                Bind::Role(_, s) | Bind::Bias(s) => see(s),
                Bind::Mx { data, scale, .. } => {
                    see(data);
                    see(scale);
                }
            }
        }
    }
    (a, o)
}

/// Tracks the partition counts written into one bundle, so two operands never disagree.
struct Parts(Vec<(FieldLoc, u64)>);

impl Parts {
    fn put(
        &mut self,
        b: &mut Bundle,
        meta: &'static LayoutMeta,
        field: FieldLoc,
        n: u64,
        gen: Gen,
    ) -> Result<(), SlotFault> {
        let name = field.name;
        if let Some((_, prev)) = self.0.iter().find(|(f, _)| *f == field) {
            if *prev != n {
                return Err(SlotFault::PartsDisagree {
                    field: name,
                    first: *prev,
                    second: n,
                });
            }
            return Ok(());
        }
        let m = fields::field(meta, field)?;
        let v = if n == 256 && gen == Gen::V5 && name == mm_loc::NUM_ACTIVE_COLS.name {
            0
        } else {
            u8::try_from(n).map_err(|_| SlotFault::PartsWidth {
                partitions: n,
                field: name,
            })?
        };
        b.0[m.offset as usize] = v;
        self.0.push((field, n));
        Ok(())
    }
}

/// The dtype tag of a PE operand: float32r uses the FP32 tag with fp32_mode High (the
/// compiler's 0x020A signature, facts §4.1).
fn pe_tag(d: NumFormat, gen: Gen) -> u8 {
    if d == NumFormat::Float32r {
        tpbsim_isa::Dtype::FP32.0
    } else {
        wire_tag(d, gen)
    }
}

fn write_tag(
    b: &mut Bundle,
    meta: &'static LayoutMeta,
    dt: Dt,
    d: NumFormat,
    ctx: DtypeCtx,
    pe: bool,
    gen: Gen,
) -> Result<(), SlotFault> {
    let tag = if pe { pe_tag(d, gen) } else { wire_tag(d, gen) };
    let check_ctx = || {
        if bir_dtype(tag, gen, ctx).is_none() {
            Err(SlotFault::NoWireTag { dtype: d, gen })
        } else {
            Ok(())
        }
    };
    match dt {
        Dt::Fixed(f) => {
            if d != f {
                return Err(SlotFault::FixedDtype {
                    fixed: f,
                    gen,
                    dtype: d,
                });
            }
        }
        Dt::Field(name) | Dt::PsumOut(name) => {
            check_ctx()?;
            b.0[fields::field(meta, name)?.offset as usize] = tag;
        }
        Dt::Lo(name) | Dt::Hi(name) => {
            check_ctx()?;
            if tag > 0x0F {
                return Err(SlotFault::WideTag { dtype: d, tag });
            }
            let o = fields::field(meta, name)?.offset as usize;
            b.0[o] = if matches!(dt, Dt::Lo(_)) {
                (b.0[o] & 0xF0) | tag
            } else {
                (b.0[o] & 0x0F) | tag << 4
            };
        }
    }
    Ok(())
}

fn write_desc(b: &mut Bundle, m: &tpbsim_isa::FieldMeta, d: &Desc) {
    let o = m.offset as usize;
    let n = d.step.len();
    d.addr.write(&mut b.0, o);
    for i in 0..n {
        d.step[i].write(&mut b.0, o + 4 + 2 * i);
        d.num[i].write(&mut b.0, o + 4 + 2 * n + 2 * i);
    }
}

/// Descriptor dimensions of a field.
pub(crate) fn dims_of(m: &tpbsim_isa::FieldMeta) -> Result<usize, FieldError> {
    match m.ty {
        FieldType::Tensor(n) | FieldType::MemPattern(n) => Ok(n as usize),
        ty => Err(FieldError::NotDescriptorType { field: m.name, ty }),
    }
}

/// Read a descriptor field.
pub(crate) fn read_desc(b: &Bundle, m: &tpbsim_isa::FieldMeta) -> Result<Desc, FieldError> {
    match m.read(b) {
        FieldValue::Pattern(p) => {
            let n = p.dims as usize;
            Ok(Desc {
                addr: p.addr,
                step: p.step[..n].to_vec(),
                num: p.num[..n].to_vec(),
            })
        }
        _ => Err(FieldError::NotDescriptor { field: m.name }),
    }
}

/// Read an MX descriptor field.
pub(crate) fn read_mx(b: &Bundle, m: &tpbsim_isa::FieldMeta) -> Result<MxDesc, FieldError> {
    match m.read(b) {
        FieldValue::MxMem(x) => Ok(MxDesc {
            data: x.data,
            scale: x.scale,
            k: x.k,
            step_sign: x.step_sign,
        }),
        _ => Err(FieldError::NotMx { field: m.name }),
    }
}

/// Write the operands of one piece into its canonical bundle.
fn write_piece(
    b: &mut Bundle,
    meta: &'static LayoutMeta,
    p: &Piece,
    inst: &Instruction,
    gen: Gen,
) -> Result<(), OperandError> {
    let mut parts = Parts(Vec::new());
    let pe = matches!(p.opcode, ob::LDWEIGHTS | ob::MATMUL);
    let get = |slot: Slot| {
        slot_ap(inst, slot).ok_or(OperandError::Missing {
            class: inst.class,
            slot,
        })
    };
    let at = |slot: Slot| move |fault| OperandError::Slot { slot, fault };
    for bind in &p.binds {
        match *bind {
            Bind::Role(r, s) => {
                let a = get(s)?;
                let m = fields::field(meta, r.field)?;
                let d = ap::lower_desc(a, dims_of(m)?, gen).map_err(|error| {
                    OperandError::Descriptor {
                        slot: s,
                        field: r.field.name,
                        error,
                    }
                })?;
                write_desc(b, m, &d);
                let pe_in = pe
                    && matches!(r.dt, Dt::Field(l) if l == ldw_loc::IN_DTYPE || l == mm_loc::IN_DTYPE);
                write_tag(b, meta, r.dt, a.dtype, r.ctx, pe_in, gen).map_err(at(s))?;
                parts
                    .put(b, meta, r.part, a.partitions, gen)
                    .map_err(at(s))?;
            }
            Bind::Mx {
                field,
                dt,
                part,
                data,
                scale,
            } => {
                let (da, sa) = (get(data)?, get(scale)?);
                if sa.dtype != NumFormat::Float8E8m0fnu && sa.dtype != NumFormat::Uint8 {
                    return Err(OperandError::MxScale {
                        slot: scale,
                        dtype: sa.dtype,
                    });
                }
                let x = ap::lower_mx(da, sa, gen).map_err(|error| OperandError::Descriptor {
                    slot: data,
                    field: field.name,
                    error,
                })?;
                let o = fields::field(meta, field)?.offset as usize;
                x.data.write(&mut b.0, o);
                x.scale.write(&mut b.0, o + 4);
                x.k.write(&mut b.0, o + 8);
                b.0[o + 10] = x.step_sign;
                write_tag(
                    b,
                    meta,
                    Dt::Field(dt),
                    da.dtype,
                    DtypeCtx::MxData,
                    false,
                    gen,
                )
                .map_err(at(data))?;
                parts
                    .put(b, meta, part, da.partitions, gen)
                    .map_err(at(data))?;
            }
            Bind::Bias(s) => {
                let a = get(s)?;
                if a.num_elements_per_partition() != 1 {
                    return Err(OperandError::BiasElements {
                        slot: s,
                        elements: a.num_elements_per_partition(),
                    });
                }
                let addr: Addr4 = ap::address_of(a, gen)
                    .map_err(|error| OperandError::BiasAddress { slot: s, error })?;
                write_uint(
                    b,
                    fields::field(meta, act_loc::BIAS)?.offset as usize,
                    4,
                    addr.0 as u64,
                );
                write_tag(
                    b,
                    meta,
                    Dt::Hi(act_loc::IN_BIAS_DTYPES),
                    a.dtype,
                    DtypeCtx::Plain,
                    false,
                    gen,
                )
                .map_err(at(s))?;
                parts
                    .put(b, meta, act_loc::NUM_ACTIVE_PARTITIONS, a.partitions, gen)
                    .map_err(at(s))?;
            }
        }
    }
    Ok(())
}

/// Write `v` into a field when the layout has it (`locs`: the field's locator in each format
/// the bundle may have).
fn set_if(b: &mut Bundle, meta: &'static LayoutMeta, locs: &[FieldLoc], v: u64) {
    if let Some(m) = fields::located(meta, locs) {
        write_uint(b, m.offset as usize, m.width() as usize, v);
    }
}

/// The derived fields tpbsim fills on top of the operands (class-specific canonical values).
fn finish(
    inst: &Instruction,
    pieces: &[Piece],
    bundles: &mut [(Bundle, &'static LayoutMeta)],
    gen: Gen,
) -> Result<(), OperandError> {
    use InstClass as C;
    let ap = |s: Slot| slot_ap(inst, s);
    match inst.class {
        C::Matmult | C::Transpose => {
            let two = pieces.len() == 4;
            let out = ap(Slot::Out(0)).ok_or(OperandError::MatmulOutput)?;
            for (k, (b, meta)) in bundles.iter_mut().enumerate() {
                let pass = k / 2;
                let operand = if pieces[k].opcode == ob::LDWEIGHTS {
                    ap(Slot::Arg(1))
                } else {
                    ap(Slot::Arg(0))
                };
                let operand = operand.ok_or(OperandError::MatmulInput)?;
                let mode = match operand.dtype {
                    NumFormat::Float32r => 2,
                    NumFormat::Float32 if two => [1, 2][pass],
                    _ => 0,
                };
                set_if(b, meta, &[ldw_loc::FP32_MODE, mm_loc::FP32_MODE], mode);
                set_if(
                    b,
                    meta,
                    &[ldw_loc::ROW_GRP, mm_loc::ROW_GRP],
                    rules::group_code(operand.start_partition, operand.partitions) as u64,
                );
                set_if(
                    b,
                    meta,
                    &[ldw_loc::COL_GRP, mm_loc::COL_GRP],
                    rules::group_code(out.start_partition, out.partitions) as u64,
                );
                if gen == Gen::V2 {
                    set_if(b, meta, &[ldw_loc::XBUS_SEL, mm_loc::XBUS_SEL], 0x10);
                }
                if pieces[k].opcode == ob::LDWEIGHTS {
                    let cols = if out.partitions == 256 && gen == Gen::V5 {
                        0
                    } else {
                        out.partitions
                    };
                    let cols = u8::try_from(cols).map_err(|_| OperandError::MatmulCols {
                        partitions: out.partitions,
                    })?;
                    set_if(b, meta, &[ldw_loc::NUM_ACTIVE_COLS], cols as u64);
                } else if inst.class == C::Transpose {
                    match gen {
                        Gen::V2 => return Err(OperandError::TransposeV2),
                        Gen::V3 | Gen::V4 => set_if(b, meta, &[mm_loc::TRANSPOSE_MODE], 1),
                        Gen::V5 => set_if(b, meta, &[mm_loc::FLAGS], 0x20),
                    }
                }
            }
        }
        // A float32r weight load is the FP32 tag with fp32_mode High, as in a matmul.
        C::LoadWeights if ap(Slot::Arg(0)).is_some_and(|a| a.dtype == NumFormat::Float32r) => {
            let (b, meta) = &mut bundles[0];
            set_if(b, meta, &[ldw_loc::FP32_MODE], 2);
        }
        C::MatmultMx => {
            if let ClassFields::MatmultMx(f) = &inst.fields {
                if f.replication_shift != 0 || f.tiles.is_some() {
                    return Err(OperandError::MxFields);
                }
            }
            let out = ap(Slot::Out(0)).ok_or(OperandError::MxOutput)?;
            for (k, (b, meta)) in bundles.iter_mut().enumerate() {
                let data = ap(if k == 0 { Slot::Arg(1) } else { Slot::Arg(0) })
                    .ok_or(OperandError::MxData)?;
                set_if(
                    b,
                    meta,
                    &[ldwmx_loc::ROW_GRP, mmx_loc::ROW_GRP],
                    rules::group_code(data.start_partition, data.partitions) as u64,
                );
                set_if(b, meta, &[ldwmx_loc::COL_GRP, mmx_loc::COL_GRP], 0x0F);
                if k == 0 {
                    let cols = u8::try_from(out.partitions).map_err(|_| OperandError::MxCols)?;
                    set_if(b, meta, &[ldwmx_loc::NUM_ACTIVE_COLS], cols as u64);
                }
            }
        }
        C::Activation if bundles.len() == 2 => {
            // A second (accumulator) output needs an accumulating command.
            let (b, meta) = &mut bundles[0];
            set_if(b, meta, &[act_loc::ACCUMULATOR_CMD], 3);
            let (b, meta) = &mut bundles[1];
            set_if(b, meta, &[rdacc_loc::DST_ELEMENT_COUNT], 1);
        }
        C::TensorScalar if bundles.len() == 2 => {
            let (b, meta) = &mut bundles[1];
            set_if(b, meta, &[rdacc_loc::DST_ELEMENT_COUNT], 1);
        }
        C::ReadActivationAccumulator | C::DveReadAccumulator => {
            let (b, meta) = &mut bundles[0];
            set_if(b, meta, &[rdacc_loc::DST_ELEMENT_COUNT], 1);
        }
        C::CompareAndBranch | C::UnconditionalBranch => {
            let (b, meta) = &mut bundles[0];
            set_if(b, meta, &[loc::compare_branch::TARGET_MODE], 3);
        }
        // The SELECT_REDUCE of a Select: the validator allows op0 BYPASS and op1 MAX only
        // (`is_valid_select_reduce.ops`), so MAX is the derived reduce op, not a parameter
        // left 0.
        C::Select => {
            if let Some((b, meta)) = bundles
                .iter_mut()
                .find(|(b, _)| b.opcode() == ob::SELECT_REDUCE)
            {
                set_if(
                    b,
                    meta,
                    &[loc::select_reduce::REDUCE_OP],
                    u64::from(tpbsim_isa::AluOp::MAX.0),
                );
            }
        }
        C::Exit => {
            let (b, meta) = &mut bundles[0];
            set_if(b, meta, &[loc::pseudo_inst::SUB_OP], 1);
        }
        C::CollectiveSend => {
            let (b, meta) = &mut bundles[0];
            set_if(b, meta, &[loc::send_recv::IS_SEND], 1);
        }
        _ => {}
    }
    Ok(())
}

/// The canonical bundles of an instruction for a piece list: operands and derived fields, no
/// parameters, events or wire overrides.
pub(crate) fn build(
    inst: &Instruction,
    pieces: &[Piece],
    gen: Gen,
) -> Result<Vec<(Bundle, &'static LayoutMeta)>, OperandError> {
    let (na, no) = arity(pieces);
    if inst.args.len() != na || inst.outs.len() != no {
        return Err(OperandError::Arity {
            class: inst.class,
            opcodes: pieces.iter().map(|p| p.opcode).collect(),
            args: na,
            outs: no,
            found_args: inst.args.len(),
            found_outs: inst.outs.len(),
        });
    }
    let mut out = Vec::with_capacity(pieces.len());
    for p in pieces {
        let mut b = canonical(p.opcode);
        let meta = layout_of(&b, gen)?;
        write_piece(&mut b, meta, p, inst, gen)?;
        out.push((b, meta));
    }
    finish(inst, pieces, &mut out, gen)?;
    Ok(out)
}

/// The piece whose bundle carries the instruction's parameters: the matmul of a matmul
/// sequence, the SELECT_REDUCE of a Select, the data move of a stream shuffle/transpose, else
/// the first bundle.
pub(crate) fn primary(pieces: &[Piece]) -> usize {
    let ops: Vec<u8> = pieces.iter().map(|p| p.opcode).collect();
    match ops.as_slice() {
        [ob::LDWEIGHTS, ob::MATMUL, ..]
        | [ob::LDWEIGHTS_MX, ob::MATMUL_MX]
        | [ob::LOAD_MASK_SELECT, _]
        | [ob::COPY | ob::CAST, ob::SELECT_REDUCE] => 1,
        _ => 0,
    }
}

/// Apply the parameter attributes of the primary piece.
pub(crate) fn apply_params(
    attrs: &Map<String, Value>,
    b: &mut Bundle,
    meta: &'static LayoutMeta,
    form: &Form,
) -> Result<(), AttrError> {
    for p in form.params {
        let key = p.name;
        let Some(v) = attrs.get(key) else { continue };
        if v.is_null() {
            continue;
        }
        let m = meta.field(key).ok_or(AttrError::NoParamField {
            key,
            layout: meta.rust_name,
        })?;
        fields::put_param(m, b, v).map_err(|error| AttrError::Value { key, error })?;
    }
    Ok(())
}

/// Apply `events` and `wire` to the bundles.
pub(crate) fn apply_overrides(
    attrs: &Map<String, Value>,
    bundles: &mut [(Bundle, &'static LayoutMeta)],
) -> Result<(), AttrError> {
    let n = bundles.len();
    let per_bundle = |key: &'static str| -> Result<Option<&Vec<Value>>, AttrError> {
        match attrs.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) if a.len() == n => Ok(Some(a)),
            Some(Value::Array(a)) => Err(AttrError::EntryCount {
                key,
                found: a.len(),
                bundles: n,
            }),
            Some(v) => Err(AttrError::NotPerBundle {
                key,
                found: v.clone(),
            }),
        }
    };
    if let Some(ev) = per_bundle(ATTR_EVENTS)? {
        for (k, ((b, _), v)) in bundles.iter_mut().zip(ev).enumerate() {
            fields::put_events(b, v).map_err(|error| AttrError::Events { bundle: k, error })?;
        }
    }
    if let Some(w) = per_bundle(ATTR_WIRE)? {
        for (k, ((b, meta), v)) in bundles.iter_mut().zip(w).enumerate() {
            let Some(obj) = v.as_object() else {
                if v.is_null() {
                    continue;
                }
                return Err(AttrError::WireNotObject {
                    bundle: k,
                    found: v.clone(),
                });
            };
            for (name, x) in obj {
                let leaf = fields::find_leaf(meta, name).ok_or_else(|| AttrError::WireNoField {
                    bundle: k,
                    layout: meta.rust_name,
                    name: name.clone(),
                })?;
                fields::put_leaf(b, &leaf, x).map_err(|error| AttrError::Wire {
                    bundle: k,
                    name: name.clone(),
                    error,
                })?;
            }
        }
    }
    Ok(())
}

fn generic_bundles(inst: &Instruction) -> Result<Vec<Bundle>, GenericError> {
    let v = inst.attrs.get(ATTR_BUNDLE).ok_or(GenericError::Missing)?;
    let one = |x: &Value| -> Result<Bundle, GenericError> {
        x.as_str()
            .and_then(Bundle::from_hex)
            .ok_or_else(|| GenericError::NotHex(x.clone()))
    };
    match v {
        Value::Array(list) => list.iter().map(one).collect(),
        x => Ok(vec![one(x)?]),
    }
}

/// An `fp32_mode` parameter may not override the mode the operands fix: High on a float32r
/// input, Low / High on the two passes of a float32 matmul.
fn fp32_mode_is_free(inst: &Instruction, pieces: &[Piece], k: usize) -> Result<(), AttrError> {
    let Some(v) = inst.attrs.get("fp32_mode").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    // The mode belongs to the bundles whose form has the field (LDWEIGHTS, MATMUL); the
    // operand it qualifies is the first input the bundle reads (the weights, the moving input).
    let piece = &pieces[k];
    if piece.form.param("fp32_mode").is_none() {
        return Ok(());
    }
    let operand = piece
        .binds
        .iter()
        .find_map(|b| match b {
            Bind::Role(_, Slot::Arg(i)) => Some(*i),
            _ => None,
        })
        .and_then(|i| inst.args.get(i));
    if pieces.len() == 4 {
        return Err(AttrError::Fp32TwoPass(v.clone()));
    }
    if operand.is_some_and(|a| a.dtype == NumFormat::Float32r) {
        return Err(AttrError::Fp32Float32r(v.clone()));
    }
    if operand.is_some_and(|a| a.dtype == NumFormat::Float32)
        && super::fields::parse_enum("PE_FP32MODE", v) == Ok(2)
    {
        return Err(AttrError::Fp32High);
    }
    Ok(())
}

/// Lower one instruction to its bundles for `gen`.
pub fn lower_instruction(inst: &Instruction, gen: Gen) -> Result<Vec<Bundle>, LowerError> {
    let class = inst.class;
    if class == InstClass::Generic {
        return generic_bundles(inst).map_err(|reason| LowerError::GenericBundle {
            class,
            gen,
            reason,
        });
    }
    let opcode = |reason| LowerError::Opcode { class, gen, reason };
    let operands = |reason| LowerError::Operands { class, gen, reason };
    let attribute = |reason| LowerError::Attribute { class, gen, reason };
    let ops = plan(inst, gen).map_err(opcode)?;
    let pieces = bindings(class, &ops, inst.args.len(), gen).map_err(opcode)?;
    let mut bundles = build(inst, &pieces, gen).map_err(operands)?;
    let k = primary(&pieces);
    fp32_mode_is_free(inst, &pieces, k).map_err(attribute)?;
    let (b, meta) = &mut bundles[k];
    apply_params(&inst.attrs, b, meta, pieces[k].form).map_err(attribute)?;
    apply_overrides(&inst.attrs, &mut bundles).map_err(attribute)?;
    let mut out = Vec::with_capacity(bundles.len());
    for (b, _) in bundles {
        decode(&b, gen).map_err(|error| LowerError::Decode { class, gen, error })?;
        out.push(b);
    }
    Ok(out)
}
