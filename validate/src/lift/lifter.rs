//! Lifting: the bundles of engine streams → one BIR module.
//!
//! Each stream becomes one function with one block `bb0` holding its instructions in stream
//! order. A run of bundles the compiler emits for one BIR instruction (LDWEIGHTS + MATMUL, the
//! fp32 two-pass quadruple, LDWEIGHTS_MX + MATMUL_MX, ACTIVATE + READ_ACCUMULATOR, ...) is
//! fused into that instruction; every other bundle is lifted alone. A lifted instruction is
//! checked by lowering it again: it must reproduce its bundles byte for byte, otherwise (and
//! for opcodes without a lifting rule, operands that do not map to an access pattern, unknown
//! opcodes) the bundle becomes a `Generic` instruction that keeps its bytes, and the stream's
//! report says so.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use tpbsim_isa::formats::loc::{activate as act_loc, ld_weights as ldw_loc, matmul as mm_loc};
use tpbsim_isa::opcode_byte as ob;
use tpbsim_isa::spec::FieldLoc;
use tpbsim_isa::{decode, Addr4, Bundle, Engine, Gen, InstVisitor, LayoutMeta, BUNDLE_SIZE};

use super::ap;
use super::dtype::{bir_dtype, DtypeCtx};
use super::error::{FieldError, LiftFault};
use super::fields::{self, layout_of, read_uint};
use super::groups::{self, Shape};
use super::lower::{
    self, arity, bindings, build, plan, primary, read_desc, read_mx, Bind, Piece, Slot,
};
use super::rules::{self, Dt, Role};
use super::{
    bir_engine, LiftError, Origin, ATTR_BUNDLE, ATTR_EVENTS, ATTR_FP32_PASSES, ATTR_MNEMONIC,
    ATTR_OPCODE, ATTR_ORIGIN, ATTR_PAYLOADS, ATTR_TSC_MODE, ATTR_UNLIFTED, ATTR_WIDE, ATTR_WIRE,
    FN_ATTR_ENGINE, FN_ATTR_FILE, LIFT_RULE,
};
use crate::bir::{
    AccessPattern, ArchLevel, Block, EngineType, Function, InstClass, Instruction, Module,
};
use crate::diag::{Diagnostic, Layer, Location, Severity};
use tpbsim_isa::NumFormat;

/// One engine stream to lift.
#[derive(Clone, Debug)]
pub struct StreamInput<'a> {
    /// Name of the function the stream becomes (unique in the module).
    pub function: String,
    /// Source file (or `file:member` inside a NEFF), for diagnostics.
    pub file: Option<String>,
    /// Engine whose stream this is.
    pub engine: Engine,
    /// The bundles, in program order.
    pub bundles: &'a [Bundle],
}

/// The lift of one stream.
#[derive(Clone, Debug)]
pub struct LiftedStream {
    /// The function.
    pub function: Function,
    /// Where each instruction of block `bb0` came from.
    pub origins: Vec<Origin>,
    /// What could not be lifted (or lifted only in part), one summary per opcode.
    pub diagnostics: Vec<Diagnostic>,
    /// Bundles lifted into non-`Generic` instructions.
    pub lifted_bundles: u64,
    /// Bundles kept as `Generic`.
    pub generic_bundles: u64,
}

/// A lifted module.
#[derive(Clone, Debug)]
pub struct Lifted {
    /// The module: one function per stream, in input order.
    pub module: Module,
    /// Per function, per instruction of `bb0`: where it came from.
    pub origins: Vec<Vec<Origin>>,
    /// Lifter reports of every stream, in stream order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Lift several streams into one module for `gen` (one function per stream, in order).
pub fn lift_streams(inputs: &[StreamInput<'_>], gen: Gen, name: Option<String>) -> Lifted {
    let mut module = Module::new(ArchLevel::from(gen));
    module.name = name;
    let mut origins = Vec::with_capacity(inputs.len());
    let mut diagnostics = Vec::new();
    for input in inputs {
        let s = lift_stream(input, gen);
        module.functions.push(s.function);
        origins.push(s.origins);
        diagnostics.extend(s.diagnostics);
    }
    Lifted {
        module,
        origins,
        diagnostics,
    }
}

/// A group of bundles recognised as one instruction, before checking.
struct Group {
    class: InstClass,
    len: usize,
    nargs: usize,
    attrs: Map<String, Value>,
}

impl Group {
    fn new(class: InstClass, len: usize, nargs: usize) -> Self {
        Group {
            class,
            len,
            nargs,
            attrs: Map::new(),
        }
    }
    fn attr(mut self, k: &str, v: Value) -> Self {
        self.attrs.insert(k.to_string(), v);
        self
    }
}

/// Classes whose opaque lift leaves tensor operands undecoded (reported as not checked).
fn has_hidden_operands(c: InstClass) -> bool {
    !matches!(
        c,
        InstClass::RegisterMove
            | InstClass::Signal
            | InstClass::Wait
            | InstClass::AllEngineBarrier
            | InstClass::CoreBarrier
            | InstClass::Return
            | InstClass::BranchHint
    )
}

/// The Activation bias operand is present: `bias_src_n` = POINTER and a real bias dtype.
fn has_bias(b: &Bundle, gen: Gen) -> bool {
    let read = |l: FieldLoc| fields::read_loc(b, l, gen);
    read(act_loc::BIAS_SRC_N) == Some(u64::from(tpbsim_isa::ImmSrcN::POINTER.0))
        && read(act_loc::IN_BIAS_DTYPES)
            .is_some_and(|v| bir_dtype((v >> 4) as u8, gen, DtypeCtx::Plain).is_some())
}

/// Recognise the group starting at bundle `i`.
fn recognise(bundles: &[Bundle], i: usize, gen: Gen) -> Result<Group, LiftError> {
    let b = &bundles[i];
    let inst = decode(b, gen).map_err(LiftError::Decode)?;
    let nargs_act = || activate_inputs(b, gen);
    match groups::recognise(bundles, i, gen) {
        Err(why) => return Err(LiftError::Unpaired(why)),
        Ok(Some(found)) => {
            let g = found.def;
            let nargs = g.nargs.unwrap_or_else(nargs_act);
            return Ok(match g.shape {
                Shape::Passes => {
                    let len = if is_fp32_quad(bundles, i, gen) { 4 } else { 2 };
                    Group::new(mm_class(&bundles[i + 1], gen), len, nargs)
                }
                Shape::Repeat => Group::new(g.classes[0], found.len, nargs)
                    .attr(ATTR_PAYLOADS, (found.len - 1).into()),
                Shape::Pair => Group::new(g.classes[0], found.len, nargs),
            });
        }
        Ok(None) => {}
    }
    inst.accept(&mut Single { b, gen })
}

/// Matmult, or Transpose when the MATMUL transposes.
fn mm_class(mm: &Bundle, gen: Gen) -> InstClass {
    if is_transpose_mm(mm, gen) {
        InstClass::Transpose
    } else {
        InstClass::Matmult
    }
}

/// ACTIVATE's inputs: the source, and the bias when it has one.
fn activate_inputs(b: &Bundle, gen: Gen) -> usize {
    if has_bias(b, gen) {
        2
    } else {
        1
    }
}

/// A bundle lifted alone, per format: the formats the lifter reads itself (MATMUL without its
/// LDWEIGHTS, QUANTIZE_MX, ACTIVATE, the v5 INT_WIDE pair, the cumulative TensorScalarCache),
/// and the per-opcode forms of [`rules`] for every other format and for the raw form.
struct Single<'a> {
    b: &'a Bundle,
    gen: Gen,
}

impl Single<'_> {
    /// The bundle's per-opcode lifting form.
    fn by_rule(&self) -> Result<Group, LiftError> {
        let op = self.b.opcode();
        match rules::single(op, self.b, self.gen) {
            Some((class, form)) => Ok(Group::new(class, 1, form.args.len())),
            None => Err(LiftError::NoRule { opcode: op }),
        }
    }
}

/// Visitor methods that lift by the per-opcode form.
macro_rules! by_rule {
    ($($method:ident: $format:ty),* $(,)?) => {
        $(
            fn $method(&mut self, _: &$format) -> Self::Output {
                self.by_rule()
            }
        )*
    };
}

impl InstVisitor for Single<'_> {
    type Output = Result<Group, LiftError>;

    fn matmul(&mut self, _: &tpbsim_isa::Matmul) -> Self::Output {
        Ok(Group::new(mm_class(self.b, self.gen), 1, 1))
    }
    fn quantize_mx(&mut self, _: &tpbsim_isa::QuantizeMx) -> Self::Output {
        Ok(Group::new(InstClass::QuantizeMx, 1, 1))
    }
    fn activate(&mut self, _: &tpbsim_isa::Activate) -> Self::Output {
        Ok(Group::new(
            InstClass::Activation,
            1,
            activate_inputs(self.b, self.gen),
        ))
    }
    fn tensor_tensor_int_wide(&mut self, _: &tpbsim_isa::TensorTensorIntWide) -> Self::Output {
        Ok(Group::new(InstClass::TensorTensor, 1, 2).attr(ATTR_WIDE, true.into()))
    }
    fn tensor_scalar_int_wide(&mut self, _: &tpbsim_isa::TensorScalarIntWide) -> Self::Output {
        Ok(Group::new(InstClass::TensorScalar, 1, 1).attr(ATTR_WIDE, true.into()))
    }
    fn tensor_scalar(&mut self, _: &tpbsim_isa::TensorScalar) -> Self::Output {
        // TENSOR_SCALAR_CACHE_CUMULATIVE shares the layout; its mode is an attribute.
        if self.b.opcode() == ob::TENSOR_SCALAR_CACHE_CUMULATIVE {
            Ok(Group::new(InstClass::TensorScalarCache, 1, 1)
                .attr(ATTR_TSC_MODE, "Cumulative".into()))
        } else {
            self.by_rule()
        }
    }
    fn raw(&mut self, _: &tpbsim_isa::RawInst) -> Self::Output {
        self.by_rule()
    }

    by_rule! {
        ld_weights: tpbsim_isa::LdWeights,
        matmul_sparse: tpbsim_isa::MatmulSparse,
        ld_tags: tpbsim_isa::LdTags,
        pe_manage_seed: tpbsim_isa::PeManageSeed,
        ld_weights_mx: tpbsim_isa::LdWeightsMx,
        matmul_mx: tpbsim_isa::MatmulMx,
        activate_quantize: tpbsim_isa::ActivateQuantize,
        act_table_load: tpbsim_isa::ActTableLoad,
        notify: tpbsim_isa::Notify,
        read_accumulator: tpbsim_isa::ReadAccumulator,
        activate2: tpbsim_isa::Activate2,
        tensor_tensor: tpbsim_isa::TensorTensor,
        tensor_reduce: tpbsim_isa::TensorReduce,
        pool: tpbsim_isa::Pool,
        memset: tpbsim_isa::Memset,
        iota: tpbsim_isa::Iota,
        scalar_tensor_tensor: tpbsim_isa::ScalarTensorTensor,
        select_reduce: tpbsim_isa::SelectReduce,
        tensor_scalar_select: tpbsim_isa::TensorScalarSelect,
        affine_select: tpbsim_isa::AffineSelect,
        copy_pred_scalar: tpbsim_isa::CopyPredScalar,
        tensor_dequantize: tpbsim_isa::TensorDequantize,
        range_select: tpbsim_isa::RangeSelect,
        extended_tta: tpbsim_isa::ExtendedTta,
        rdma_desc_gen: tpbsim_isa::RdmaDescGen,
        extended: tpbsim_isa::Extended,
        event_semaphore: tpbsim_isa::EventSemaphore,
        control: tpbsim_isa::Control,
        ordering_mode: tpbsim_isa::OrderingMode,
        drain: tpbsim_isa::Drain,
        write: tpbsim_isa::Write,
        event_semaphore_range_clear: tpbsim_isa::EventSemaphoreRangeClear,
        core_barrier: tpbsim_isa::CoreBarrier,
        alu_op_inst: tpbsim_isa::AluOpInst,
        compare_branch: tpbsim_isa::CompareBranch,
        dma_direct2d: tpbsim_isa::DmaDirect2d,
        dma_trigger: tpbsim_isa::DmaTrigger,
        trigger_collective: tpbsim_isa::TriggerCollective,
        send_recv: tpbsim_isa::SendRecv,
        cur_processing_rank_id: tpbsim_isa::CurProcessingRankId,
        gid_load: tpbsim_isa::GidLoad,
        load_act_func_set: tpbsim_isa::LoadActFuncSet,
        function_begin: tpbsim_isa::FunctionBegin,
        function_call: tpbsim_isa::FunctionCall,
        pseudo_inst: tpbsim_isa::PseudoInst,
    }
}

/// v3/v4 `transpose_mode` or the v4/v5 MATMUL_FLAGS `xpose` bit marks a PE transpose.
fn is_transpose_mm(mm: &Bundle, gen: Gen) -> bool {
    let Ok(meta) = layout_of(mm, gen) else {
        return false;
    };
    let get = |l: FieldLoc| fields::located(meta, &[l]).map(|m| mm.0[m.offset as usize]);
    get(mm_loc::TRANSPOSE_MODE).is_some_and(|v| v != 0)
        || get(mm_loc::FLAGS).is_some_and(|v| v & 0x20 != 0)
}

fn fp32_mode(b: &Bundle, gen: Gen) -> Option<u8> {
    let meta = layout_of(b, gen).ok()?;
    fields::located(meta, &[ldw_loc::FP32_MODE, mm_loc::FP32_MODE]).map(|m| b.0[m.offset as usize])
}

/// LDWEIGHTS + MATMUL twice over the same operands, where some FP32-tagged input runs its Low
/// pass then its High pass (fp32_mode 1 then 2); other inputs repeat their mode (a float32r
/// input keeps High).
fn is_fp32_quad(bundles: &[Bundle], i: usize, gen: Gen) -> bool {
    let Some(q) = bundles.get(i..i + 4) else {
        return false;
    };
    if q.iter().map(Bundle::opcode).collect::<Vec<_>>()
        != [ob::LDWEIGHTS, ob::MATMUL, ob::LDWEIGHTS, ob::MATMUL]
    {
        return false;
    }
    let fp32 = |b: &Bundle| {
        layout_of(b, gen)
            .ok()
            .and_then(|m| fields::located(m, &[ldw_loc::IN_DTYPE, mm_loc::IN_DTYPE]))
            .is_some_and(|m| b.0[m.offset as usize] == tpbsim_isa::Dtype::FP32.0)
    };
    let mut split = false;
    for (a, c) in [(0, 2), (1, 3)] {
        match (fp32(&q[a]), fp32_mode(&q[a], gen), fp32_mode(&q[c], gen)) {
            (true, Some(1), Some(2)) => split = true,
            (_, x, y) if x == y => {}
            _ => return false,
        }
    }
    let ops = |k: usize| read_operands(&q[k..k + 2], &mm_pieces(gen), gen).ok();
    split
        && match (ops(0), ops(2)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
}

fn mm_pieces(gen: Gen) -> Vec<Piece> {
    bindings(InstClass::Matmult, &[ob::LDWEIGHTS, ob::MATMUL], 2, gen).unwrap_or_default()
}

/// Whether output role `ra` of bundle `a` and `rb` of bundle `b` read as the same pattern.
pub(crate) fn same_output(a: &Bundle, ra: &Role, b: &Bundle, rb: &Role, gen: Gen) -> bool {
    let read = |b: &Bundle, r: &Role| {
        layout_of(b, gen)
            .ok()
            .and_then(|m| read_role(b, m, r, gen).ok())
    };
    match (read(a, ra), read(b, rb)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn read_parts(
    b: &Bundle,
    meta: &'static LayoutMeta,
    field: FieldLoc,
    gen: Gen,
) -> Result<u64, FieldError> {
    let m = fields::field(meta, field)?;
    let v = b.0[m.offset as usize] as u64;
    Ok(
        if v == 0 && gen == Gen::V5 && field.name == mm_loc::NUM_ACTIVE_COLS.name {
            256
        } else {
            v
        },
    )
}

/// The dtype tag of an operand with a dtype field, and the field's name.
fn read_tag(
    b: &Bundle,
    meta: &'static LayoutMeta,
    field: FieldLoc,
    nibble: fn(u8) -> u8,
) -> Result<(u8, &'static str), FieldError> {
    Ok((
        nibble(b.0[fields::field(meta, field)?.offset as usize]),
        field.name,
    ))
}

fn read_dtype(
    b: &Bundle,
    meta: &'static LayoutMeta,
    dt: Dt,
    ctx: DtypeCtx,
    gen: Gen,
) -> Result<NumFormat, LiftFault> {
    let (tag, field) = match dt {
        Dt::Fixed(d) => return Ok(d),
        Dt::Field(n) | Dt::PsumOut(n) => read_tag(b, meta, n, |x| x)?,
        Dt::Lo(n) => read_tag(b, meta, n, |x| x & 0x0F)?,
        Dt::Hi(n) => read_tag(b, meta, n, |x| x >> 4)?,
    };
    if matches!(dt, Dt::PsumOut(_)) && tag == 0 {
        return Ok(NumFormat::Float32);
    }
    bir_dtype(tag, gen, ctx).ok_or(LiftFault::Dtype { tag, field, gen })
}

fn read_role(
    b: &Bundle,
    meta: &'static LayoutMeta,
    r: &Role,
    gen: Gen,
) -> Result<AccessPattern, LiftFault> {
    let m = fields::field(meta, r.field)?;
    let d = read_desc(b, m)?;
    let dtype = read_dtype(b, meta, r.dt, r.ctx, gen)?;
    let parts = read_parts(b, meta, r.part, gen)?;
    ap::lift_desc(&d, dtype, parts, gen).map_err(|error| LiftFault::Operand {
        field: r.field.name,
        error,
    })
}

type Operands = (Vec<AccessPattern>, Vec<AccessPattern>);

/// Read every bound operand of a group (each slot from the first piece that binds it).
fn read_operands(bundles: &[Bundle], pieces: &[Piece], gen: Gen) -> Result<Operands, LiftFault> {
    let (na, no) = arity(pieces);
    let mut args: Vec<Option<AccessPattern>> = vec![None; na];
    let mut outs: Vec<Option<AccessPattern>> = vec![None; no];
    let mut set = |s: Slot, a: AccessPattern| {
        let cell = match s {
            Slot::Arg(i) => &mut args[i],
            Slot::Out(i) => &mut outs[i],
        };
        if cell.is_none() {
            *cell = Some(a);
        }
    };
    for (p, b) in pieces.iter().zip(bundles) {
        let meta = layout_of(b, gen)?;
        for bind in &p.binds {
            match *bind {
                Bind::Role(r, s) => set(s, read_role(b, meta, &r, gen)?),
                Bind::Mx {
                    field,
                    dt,
                    part,
                    data,
                    scale,
                } => {
                    let x = read_mx(b, fields::field(meta, field)?)?;
                    let dtype = read_dtype(b, meta, Dt::Field(dt), DtypeCtx::MxData, gen)?;
                    let parts = read_parts(b, meta, part, gen)?;
                    let (d, sc) =
                        ap::lift_mx(&x, dtype, parts, gen).map_err(|error| LiftFault::Operand {
                            field: field.name,
                            error,
                        })?;
                    set(data, d);
                    set(scale, sc);
                }
                Bind::Bias(s) => {
                    let addr = Addr4(read_uint(
                        b,
                        fields::field(meta, act_loc::BIAS)?.offset as usize,
                        4,
                    ) as u32);
                    let bias_dt = Dt::Hi(act_loc::IN_BIAS_DTYPES);
                    let dtype = read_dtype(b, meta, bias_dt, DtypeCtx::Plain, gen)?;
                    let parts = read_parts(b, meta, act_loc::NUM_ACTIVE_PARTITIONS, gen)?;
                    let pl = ap::place(addr, dtype, gen).map_err(LiftFault::Bias)?;
                    set(
                        s,
                        AccessPattern {
                            mem: pl.mem,
                            buffer: pl.buffer,
                            dtype,
                            start_partition: pl.partition,
                            partitions: parts,
                            pattern: Vec::new(),
                            offset: pl.offset,
                            indirect: pl.indirect,
                        },
                    );
                }
            }
        }
    }
    let all = |v: Vec<Option<AccessPattern>>| v.into_iter().collect::<Option<Vec<_>>>();
    match (all(args), all(outs)) {
        (Some(a), Some(o)) => Ok((a, o)),
        _ => Err(LiftFault::Unbound),
    }
}

/// Build, check and return the instruction of a recognised group.
fn lift_group(
    bundles: &[Bundle],
    g: Group,
    engine: EngineType,
    gen: Gen,
) -> Result<Instruction, LiftFault> {
    let opcodes: Vec<u8> = bundles.iter().map(Bundle::opcode).collect();
    let pieces = bindings(g.class, &opcodes, g.nargs, gen)?;
    let (mut args, outs) = read_operands(bundles, &pieces, gen)?;
    let mut attrs = g.attrs;
    if matches!(
        g.class,
        InstClass::Matmult | InstClass::Transpose | InstClass::LoadWeights
    ) {
        // PE FP32 inputs: the High mode of a single pass is float32r (the 0x020A signature);
        // a single pass over float32 is recorded so lowering does not split it in two.
        for (k, p) in pieces.iter().enumerate().take(2) {
            let slot = if p.opcode == ob::LDWEIGHTS && g.class != InstClass::LoadWeights {
                1
            } else {
                0
            };
            let meta = layout_of(&bundles[k], gen)?;
            let in_dtype = if p.opcode == ob::LDWEIGHTS {
                ldw_loc::IN_DTYPE
            } else {
                mm_loc::IN_DTYPE
            };
            let tag = bundles[k].0[fields::field(meta, in_dtype)?.offset as usize];
            if tag == tpbsim_isa::Dtype::FP32.0 && fp32_mode(&bundles[k], gen) == Some(2) {
                args[slot].dtype = NumFormat::Float32r;
            }
        }
        if pieces.len() == 2 && args.iter().any(|a| a.dtype == NumFormat::Float32) {
            attrs.insert(ATTR_FP32_PASSES.into(), 1.into());
        }
    }
    let mut inst = Instruction::new(g.class, engine)
        .with_args(args)
        .with_outs(outs);
    inst.attrs = attrs;
    let k = primary(&pieces);
    let pmeta = layout_of(&bundles[k], gen)?;
    for p in pieces[k].form.params {
        if let Some(m) = pmeta.field(p.name) {
            inst.attrs
                .insert(p.name.to_string(), fields::param_value(m, &bundles[k]));
        }
    }
    // The opcode the fan-in picks, or the one found, recorded.
    if plan(&inst, gen)? != opcodes {
        let v: Value = if opcodes.len() == 1 {
            lower::mnemonic(opcodes[0]).into()
        } else {
            Value::Array(opcodes.iter().map(|&o| lower::mnemonic(o).into()).collect())
        };
        inst.attrs.insert(ATTR_OPCODE.into(), v);
        if plan(&inst, gen)? != opcodes {
            return Err(LiftFault::Unreached(opcodes));
        }
    }
    // Keep only the parameters lowering does not derive.
    let mut canon = build(&inst, &pieces, gen)?;
    let cmeta = canon[k].1;
    for p in pieces[k].form.params {
        if let Some(m) = cmeta.field(p.name) {
            let r = m.range();
            if bundles[k].0[r.clone()] == canon[k].0 .0[r] {
                inst.attrs.remove(p.name);
            }
        }
    }
    let (cb, cm) = &mut canon[k];
    lower::apply_params(&inst.attrs, cb, cm, pieces[k].form)?;
    // Events, then every other differing field.
    let events: Vec<Value> = bundles
        .iter()
        .zip(&canon)
        .map(|(a, (c, _))| {
            if a.0[fields::events_range()] != c.0[fields::events_range()] {
                fields::events_value(a).unwrap_or(Value::Null)
            } else {
                Value::Null
            }
        })
        .collect();
    if events.iter().any(|e| !e.is_null()) {
        inst.attrs.insert(ATTR_EVENTS.into(), Value::Array(events));
    }
    lower::apply_overrides(&inst.attrs, &mut canon)?;
    let wire: Vec<Value> = bundles
        .iter()
        .zip(&canon)
        .map(|(a, (c, meta))| {
            let mut obj = Map::new();
            if a != c {
                for l in fields::leaves(meta) {
                    if fields::events_range().contains(&l.off) {
                        continue;
                    }
                    if a.0[l.off..l.off + l.width] != c.0[l.off..l.off + l.width] {
                        let v = fields::leaf_value(a, &l);
                        if v != fields::leaf_value(c, &l) {
                            obj.insert(l.name.to_string(), v);
                        }
                    }
                }
            }
            Value::Object(obj)
        })
        .collect();
    if wire
        .iter()
        .any(|w| w.as_object().is_some_and(|o| !o.is_empty()))
    {
        inst.attrs.insert(ATTR_WIRE.into(), Value::Array(wire));
    }
    let again = lower::lower_instruction(&inst, gen).map_err(|e| LiftFault::Lower(Box::new(e)))?;
    if again != bundles {
        return Err(LiftFault::NotReproduced);
    }
    Ok(inst)
}

/// A `Generic` instruction keeping one bundle.
fn generic(b: &Bundle, engine: EngineType, reason: &str) -> Instruction {
    let mut inst = Instruction::new(InstClass::Generic, engine);
    inst.attrs.insert(ATTR_BUNDLE.into(), b.to_hex().into());
    inst.attrs
        .insert(ATTR_MNEMONIC.into(), lower::mnemonic(b.opcode()).into());
    inst.attrs.insert(ATTR_UNLIFTED.into(), reason.into());
    inst
}

/// Per-stream report accumulator: one entry per (opcode, kind), first occurrence and count.
#[derive(Default)]
struct Reports(BTreeMap<(u64, u8, &'static str), (String, u64)>);

impl Reports {
    fn note(
        &mut self,
        index: u64,
        op: u8,
        kind: &'static str,
        detail: String,
        first: &mut BTreeMap<(u8, &'static str), u64>,
    ) {
        let f = *first.entry((op, kind)).or_insert(index);
        let e = self.0.entry((f, op, kind)).or_insert((detail, 0));
        e.1 += 1;
    }
}

/// Lift one stream.
pub fn lift_stream(input: &StreamInput<'_>, gen: Gen) -> LiftedStream {
    let engine = bir_engine(input.engine);
    let bundles = input.bundles;
    let mut insts = Vec::new();
    let mut origins = Vec::new();
    let mut reports = Reports::default();
    let mut first = BTreeMap::new();
    let (mut lifted, mut kept) = (0u64, 0u64);
    let mut i = 0usize;
    while i < bundles.len() {
        let op = bundles[i].opcode();
        let result = recognise(bundles, i, gen).and_then(|g| {
            let (class, len) = (g.class, g.len);
            lift_group(&bundles[i..i + len], g, engine, gen)
                .map(|inst| (inst, len, class))
                .map_err(|reason| LiftError::NotLiftable {
                    opcodes: opcodes_of(&bundles[i..i + len]),
                    class,
                    reason: Box::new(reason),
                })
        });
        let (mut inst, len) = match result {
            Ok((inst, len, class)) => {
                lifted += len as u64;
                if rules::single(op, &bundles[i], gen).is_some_and(|(_, f)| f.format.is_empty())
                    && has_hidden_operands(class)
                {
                    reports.note(
                        i as u64,
                        op,
                        "operands not decoded",
                        format!(
                            "{} lifted to {class} without operands (layout not published)",
                            lower::mnemonic(op)
                        ),
                        &mut first,
                    );
                }
                if matches!(
                    class,
                    InstClass::MaxIndex | InstClass::Gather | InstClass::CustomOp
                ) {
                    reports.note(
                        i as u64,
                        op,
                        "operands not decoded",
                        format!(
                            "{} lifted to {class} without operands (layout not published)",
                            lower::mnemonics(&opcodes_of(&bundles[i..i + len]))
                        ),
                        &mut first,
                    );
                }
                (inst, len)
            }
            Err(u) => {
                kept += 1;
                let detail = u.to_string();
                reports.note(i as u64, op, u.kind(), detail.clone(), &mut first);
                (generic(&bundles[i], engine, &detail), 1)
            }
        };
        let origin = Origin {
            file: input.file.clone(),
            engine: input.engine,
            index: i as u64,
            bundles: len as u32,
            offset: (i * BUNDLE_SIZE) as u64,
        };
        inst.attrs.insert(ATTR_ORIGIN.into(), origin.to_json());
        insts.push(inst);
        origins.push(origin);
        i += len;
    }
    let mut diagnostics = Vec::new();
    for ((index, op, kind), (detail, count)) in reports.0 {
        let generic = kind != "operands not decoded";
        let message = if generic {
            format!(
                "{count} bundle(s) of {} not lifted ({kind}; first: {detail}); kept as Generic, operand rules not applied",
                lower::mnemonic(op)
            )
        } else {
            format!("{count} instruction(s): {detail}; operand rules not applied")
        };
        diagnostics.push(
            Diagnostic::error(Layer::L1, LIFT_RULE, None, message)
                .with_severity(Severity::NotChecked)
                .at(Location {
                    file: input.file.clone(),
                    engine: Some(input.engine),
                    index: Some(index),
                    offset: Some(index * BUNDLE_SIZE as u64),
                    function: Some(input.function.clone()),
                    ..Location::default()
                }),
        );
    }
    let mut fattrs = Map::new();
    fattrs.insert(FN_ATTR_ENGINE.into(), input.engine.short().into());
    if let Some(f) = &input.file {
        fattrs.insert(FN_ATTR_FILE.into(), f.clone().into());
    }
    let function = Function {
        name: input.function.clone(),
        attrs: fattrs,
        blocks: vec![Block {
            name: "bb0".into(),
            dynamic_cfg: false,
            instructions: insts,
        }],
    };
    LiftedStream {
        function,
        origins,
        diagnostics,
        lifted_bundles: lifted,
        generic_bundles: kept,
    }
}

fn opcodes_of(b: &[Bundle]) -> Vec<u8> {
    b.iter().map(Bundle::opcode).collect()
}

impl Origin {
    /// The `origin` attribute value.
    pub fn to_json(&self) -> Value {
        json!({ "index": self.index, "bundles": self.bundles, "offset": self.offset })
    }
}

/// Fill the stream location (file, engine, bundle index, offset) of an L1 diagnostic on a
/// lifted module from the instruction's `origin` attribute and its function's `engine` /
/// `file` attributes. Diagnostics without an instruction, or on instructions without an
/// origin, are left as they are.
pub fn locate(module: &Module, d: &mut Diagnostic) {
    let l = &mut d.location;
    let (Some(fname), Some(block), Some(label)) = (&l.function, &l.block, &l.instruction) else {
        return;
    };
    let Some(f) = module.function(fname) else {
        return;
    };
    let Some(idx) = label
        .split(':')
        .next()
        .and_then(|s| s.parse::<usize>().ok())
    else {
        return;
    };
    let Some(b) = f.blocks.iter().find(|b| &b.name == block) else {
        return;
    };
    let Some(inst) = b.instructions.get(idx) else {
        return;
    };
    let Some(o) = inst.attrs.get(ATTR_ORIGIN).and_then(Value::as_object) else {
        return;
    };
    if l.file.is_none() {
        l.file = f
            .attrs
            .get(FN_ATTR_FILE)
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if l.engine.is_none() {
        l.engine = f
            .attrs
            .get(FN_ATTR_ENGINE)
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<Engine>().ok());
    }
    if l.index.is_none() {
        l.index = o.get("index").and_then(Value::as_u64);
    }
    if l.offset.is_none() {
        l.offset = o.get("offset").and_then(Value::as_u64);
    }
}
