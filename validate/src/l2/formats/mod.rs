//! The per-opcode format gates (`is_valid_<fmt>`) and the opcode → gate dispatch of each
//! generation's roster.
//!
//! Every gate runs its stages in the cascade order: per-field enums, reserved-bit zeroing,
//! dtype checks, then the format's own geometry / placement rules.

use tpbsim_isa::Gen;

use super::dtype;
use super::enums::ByteSet;
use super::rule::{rule, Allowed, Ck, Field, Sink};

pub mod act;
pub mod act2;
pub mod ctrl;
pub mod dma;
pub mod mx;
pub mod pe;
pub mod pe_aux;
pub mod pool;
pub mod rs;
pub mod tr;
pub mod ts;
pub mod tt;

/// A format gate of the roster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// `S3_LW` LdWeights 0x01.
    S3Lw,
    /// `S3D3_MM` Matmul 0x02.
    S3d3Mm,
    /// `S4D3_MM` MatmulSparse 0x07 (v3+).
    S4d3Mm,
    /// `SMX1_LW` LdWeightsMx 0x09 (v4+).
    Smx1Lw,
    /// `SMX1D3_MM` MatmulMx 0x0A (v4+).
    Smx1d3Mm,
    /// `S3DMX1_QUANT` QuantizeMx 0xE3 (v4+).
    S3dmx1Quant,
    /// `S3D3_AC` Activate 0x21.
    S3d3Ac,
    /// `S3S3D3_TT` TensorTensor family (0x41, 0x51, 0x72, 0x99).
    S3s3d3Tt,
    /// `S3D3_TS` TensorScalar family (0x43, 0x53, 0x93, 0x9A, 0xE6, 0x30).
    S3d3Ts,
    /// `S4D4_TR` tensor-reduce / copy / cast family.
    S4d4Tr,
    /// `S2D2_RS` RangeSelect 0xBC (v3+).
    S2d2Rs,
    /// `CTRL_ES` EventSemaphore 0xA0 (extended events).
    CtrlEs,
    /// `S2D2_AC` Activate2 0x25 (v4).
    S2d2Ac,
    /// `S3D3_AQ` ActivateQuantize 0x22.
    S3d3Aq,
    /// `D1_RD` ReadAccumulator 0x24 (ACT) / DveReadAccumulator 0x9B.
    D1Rd,
    /// `CTRL_NO` ActivationTableLoad 0x23 and Notify 0xA6.
    CtrlNo,
    /// Memset 0x49 (family C, compiler layout).
    Memset,
    /// Iota 0x7E (family C, compiler layout).
    Iota,
    /// `S3D3_TENS_DEQUANT` TensorDequantize 0x7B (v3+).
    TensDequant,
    /// `S3D3_CP_PRED_SCALAR` CopyPredicatedScalar 0xE8.
    CpPredScalar,
    /// SelectReduce 0xEA (`S2S2D2_STT`, compiler layout).
    SelectReduce,
    /// `S2S2D2_STT` ScalarTensorTensor 0x9D / 0x9E and TensorTensorScan 0xE5.
    S2s2d2Stt,
    /// `S4D4_PL` Pool 0x45 / MaxPoolSelect 0x58.
    S4d4Pl,
    /// `S3D3_TS_SELECT` TensorScalarSelect 0x98.
    S3d3TsSelect,
    /// `S2D2_TS_AS` TensorScalarAffineSelect 0x92.
    S2d2TsAs,
    /// `S3_LT` LdTags 0x06 (v3+).
    S3Lt,
    /// `S2S1D2_PE_SEED` PE_MANAGE_SEED 0x08 (v4).
    PeManageSeed,
    /// `CTRL` control-only instructions: EngineNop 0x9F, Halt 0xA1, InstructionFlush 0xA3,
    /// Nop 0xA4.
    Ctrl,
    /// `CTRL` Drain 0xA2.
    Drain,
    /// `CTRL` Write 0xA5.
    Write,
    /// `CTRL_AL` scalar-register ALU 0xA8.
    CtrlAl,
    /// `CTRL_BR` CompareBranch 0xA9.
    CtrlBr,
    /// `CTRL` EventSemaphoreRangeClear 0xB0.
    RangeClear,
    /// `DMA_DIRECT2D` pseudo 0xD4.
    DmaDirect2d,
    /// Named pseudo instructions: DmaTrigger 0xC1, LoadActFuncSet 0xC6, FunctionBegin 0xD1,
    /// FunctionCall 0xD3, PseudoInst 0xDF.
    Pseudo,
    /// `EXTENDED_INST` 0xF0 (sub-opcode selected).
    Extended,
    /// CoreBarrier pseudo 0xD8.
    CoreBarrier,
}

impl Format {
    /// The gate's name as the shipped validators spell it.
    pub const fn gate_name(self) -> &'static str {
        match self {
            Format::S3Lw => "is_valid_s3_lw",
            Format::S3d3Mm => "is_valid_s3d3_mm",
            Format::S4d3Mm => "is_valid_s4d3_mm",
            Format::Smx1Lw => "is_valid_smx1_lw",
            Format::Smx1d3Mm => "is_valid_smx1d3_mm",
            Format::S3dmx1Quant => "is_valid_s3dmx1_quant",
            Format::S3d3Ac => "is_valid_activate",
            Format::S3s3d3Tt => "is_valid_s3s3d3_tt",
            Format::S3d3Ts => "is_valid_s3d3_ts",
            Format::S4d4Tr => "is_valid_s4d4_tr",
            Format::S2d2Rs => "is_valid_s2d2_rs",
            Format::CtrlEs => "is_valid_ctrl_es",
            Format::S2d2Ac => "is_valid_s2d2_ac",
            Format::S3d3Aq => "is_valid_s3d3_aq",
            Format::D1Rd => "is_valid_d1_rd",
            Format::CtrlNo => "is_valid_ctrl_no",
            Format::Memset => "is_valid_memset",
            Format::Iota => "is_valid_iota",
            Format::TensDequant => "is_valid_tensor_dequantize",
            Format::CpPredScalar => "is_valid_s3d3_cp_pred_scalar",
            Format::SelectReduce => "is_valid_select_reduce",
            Format::S2s2d2Stt => "is_valid_s2s2d2_stt",
            Format::S4d4Pl => "is_valid_s4d4_pl",
            Format::S3d3TsSelect => "is_valid_s3d3_ts_select",
            Format::S2d2TsAs => "is_valid_s2d2_ts_as",
            Format::S3Lt => "is_valid_s3_lt",
            Format::PeManageSeed => "is_valid_pe_manage_seed",
            Format::Ctrl => "is_valid_ctrl",
            Format::Drain => "is_valid_drain",
            Format::Write => "is_valid_write",
            Format::CtrlAl => "is_valid_ctrl_al",
            Format::CtrlBr => "is_valid_ctrl_br",
            Format::RangeClear => "is_valid_event_semaphore_range_clear",
            Format::DmaDirect2d => "is_valid_dma_direct2d",
            Format::Pseudo => "is_valid_pseudo",
            Format::Extended => "is_valid_extended",
            Format::CoreBarrier => "is_valid_core_barrier",
        }
    }
}

/// The format gate tpbsim implements for `opcode` on `gen`, if any. Opcodes absent from the
/// generation's enum never reach this (the header gate rejects them).
pub const fn format_of(gen: Gen, opcode: u8) -> Option<Format> {
    let v3 = !matches!(gen, Gen::V2);
    let v2 = matches!(gen, Gen::V2);
    let v4 = matches!(gen, Gen::V4 | Gen::V5);
    Some(match opcode {
        0x01 => Format::S3Lw,
        0x02 => Format::S3d3Mm,
        0x07 if v3 => Format::S4d3Mm,
        0x09 if v4 => Format::Smx1Lw,
        0x0A if v4 => Format::Smx1d3Mm,
        0xE3 if v4 => Format::S3dmx1Quant,
        0x21 => Format::S3d3Ac,
        0x41 | 0x51 | 0x72 | 0x99 | 0x65 => Format::S3s3d3Tt,
        0x8A | 0x8B | 0x8F if v2 => Format::S3s3d3Tt,
        0x8C | 0x8D if v2 => Format::S4d4Tr,
        0x43 | 0x53 | 0x93 | 0x9A | 0xE6 | 0x30 => Format::S3d3Ts,
        0x42 | 0x52 | 0x83 | 0x84 | 0x4E | 0x5E | 0x46 | 0x47 | 0x48 | 0x6A | 0x6B => {
            Format::S4d4Tr
        }
        0xBC if v3 => Format::S2d2Rs,
        0xA0 => Format::CtrlEs,
        0x25 if v4 => Format::S2d2Ac,
        0x22 => Format::S3d3Aq,
        0x24 | 0x9B => Format::D1Rd,
        0x23 | 0xA6 => Format::CtrlNo,
        0x49 => Format::Memset,
        0x7E => Format::Iota,
        0x7B if v3 => Format::TensDequant,
        0xE8 => Format::CpPredScalar,
        0xEA => Format::SelectReduce,
        0x9D | 0x9E | 0xE5 => Format::S2s2d2Stt,
        0x45 | 0x58 => Format::S4d4Pl,
        0x98 => Format::S3d3TsSelect,
        0x92 => Format::S2d2TsAs,
        0x06 if v3 => Format::S3Lt,
        0x08 if v4 => Format::PeManageSeed,
        0x9F | 0xA1 | 0xA3 | 0xA4 => Format::Ctrl,
        0xA2 => Format::Drain,
        0xA5 => Format::Write,
        0xA8 => Format::CtrlAl,
        0xA9 => Format::CtrlBr,
        0xB0 => Format::RangeClear,
        0xD4 => Format::DmaDirect2d,
        0xC1 | 0xC6 | 0xD1 | 0xD3 | 0xDF => Format::Pseudo,
        0xF0 => Format::Extended,
        0xD8 => Format::CoreBarrier,
        _ => return None,
    })
}

/// Run `fmt`'s gate.
pub fn run<S: Sink>(fmt: Format, ck: &mut Ck<S>) {
    match fmt {
        Format::S3Lw => pe::is_valid_s3_lw(ck),
        Format::S3d3Mm => pe::is_valid_s3d3_mm(ck),
        Format::S4d3Mm => pe::is_valid_s4d3_mm(ck),
        Format::Smx1Lw => mx::is_valid_smx1_lw(ck),
        Format::Smx1d3Mm => mx::is_valid_smx1d3_mm(ck),
        Format::S3dmx1Quant => mx::is_valid_s3dmx1_quant(ck),
        Format::S3d3Ac => act::is_valid_activate(ck),
        Format::S3s3d3Tt => tt::is_valid_s3s3d3_tt(ck),
        Format::S3d3Ts => ts::is_valid_s3d3_ts(ck),
        Format::S4d4Tr => tr::is_valid_s4d4_tr(ck),
        Format::S2d2Rs => rs::is_valid_s2d2_rs(ck),
        Format::CtrlEs => ctrl::is_valid_ctrl_es(ck),
        Format::S2d2Ac => act2::is_valid_s2d2_ac(ck),
        Format::S3d3Aq => act2::is_valid_s3d3_aq(ck),
        Format::D1Rd => act2::is_valid_d1_rd(ck),
        Format::CtrlNo => ctrl::is_valid_ctrl_no(ck),
        Format::Memset => pool::is_valid_memset(ck),
        Format::Iota => pool::is_valid_iota(ck),
        Format::TensDequant => pool::is_valid_tensor_dequantize(ck),
        Format::CpPredScalar => pool::is_valid_s3d3_cp_pred_scalar(ck),
        Format::SelectReduce => pool::is_valid_select_reduce(ck),
        Format::S2s2d2Stt => pool::is_valid_s2s2d2_stt(ck),
        Format::S4d4Pl => pool::is_valid_s4d4_pl(ck),
        Format::S3d3TsSelect => pool::is_valid_s3d3_ts_select(ck),
        Format::S2d2TsAs => pool::is_valid_s2d2_ts_as(ck),
        Format::S3Lt => pe_aux::is_valid_s3_lt(ck),
        Format::PeManageSeed => pe_aux::is_valid_pe_manage_seed(ck),
        Format::Ctrl => ctrl::is_valid_ctrl(ck),
        Format::Drain => ctrl::is_valid_drain(ck),
        Format::Write => ctrl::is_valid_write(ck),
        Format::CtrlAl => ctrl::is_valid_ctrl_al(ck),
        Format::CtrlBr => ctrl::is_valid_ctrl_br(ck),
        Format::RangeClear => ctrl::is_valid_event_semaphore_range_clear(ck),
        Format::DmaDirect2d => dma::is_valid_dma_direct2d(ck),
        Format::Pseudo => dma::is_valid_pseudo(ck),
        Format::Extended => dma::is_valid_extended(ck),
        Format::CoreBarrier => ctrl::is_valid_core_barrier(ck),
    }
}

rule!(RESERVED_ZERO, "reserved_zero", Format,
    public "reserved byte ranges of the ISA spec layouts (isa/spec/formats.rs; isa-facts §4: bytes not listed are reserved-zero); C isa/pe-matmul-encoding.md (d3_mm_reserved_z*, lw_reserved_zero)",
    "reserved bytes of the format are zero");
rule!(IS_VALID_DTYPE, "is_valid_dtype", Format,
    public "R isa/validator-architecture.md §3 (is_valid_dtype); R isa/validators-per-arch.md (is_valid_dtype_64, is_valid_dtype_inc_fp4)",
    "a dtype byte is a valid wire dtype: not INVALID, FP32R only where allowed, 64-bit types only on the 64-bit path, FP4 only on v4+");
rule!(NAN_INF_FLOAT, "float_field_finite", Format,
    public "C walrus/l2-wire-validator.md (NaN/Inf float-field reject (x & 0x7F800000) == 0x7F800000)",
    "a float immediate the instruction reads is finite");

rule!(ALU_OP_POOL_ONLY, "alu_op_pool_only", Format,
    public "isa-facts §6.3 (POW, CRC32, RSQRT are Pool only)",
    "v4 (engine known): POW, CRC32 and RSQRT execute only on the Pool engine");
rule!(POOL_OPERAND_IN_SBUF, "pool_operand_in_sbuf", Format,
    project "G dma/sbuf-psum-banks.md (the GpSimd/Pool engine has no PSUM port) applied where the v4 entry names the engine",
    "v4 (engine known): a Pool-engine operand is not in PSUM");

/// v4: reject a Pool-only ALU op in `f` when the entry's engine is not Pool.
pub fn alu_pool_only<S: Sink>(ck: &mut Ck<S>, f: Field) {
    let op = ck.get(f) as u8;
    if let Some(e) = ck.engine {
        if e != tpbsim_isa::Engine::Pool.wire_id() && super::enums::ALU_POOL_ONLY.has(op) {
            ck.fail(
                &ALU_OP_POOL_ONLY,
                f,
                op as u64,
                Allowed::Text("an op this engine executes (POW, CRC32, RSQRT are Pool only)"),
            );
        }
    }
}

/// v4: reject PSUM operands when the entry's engine is Pool.
pub fn pool_no_psum<S: Sink>(ck: &mut Ck<S>, ops: &[super::addr::Operand]) {
    if ck.engine != Some(tpbsim_isa::Engine::Pool.wire_id()) {
        return;
    }
    for op in ops {
        let w = ck.get(op.addr()) as u32;
        if !super::addr::is_register(w) && super::addr::in_psum(w) {
            ck.fail(
                &POOL_OPERAND_IN_SBUF,
                op.addr(),
                w as u64,
                Allowed::Text("an SBUF address (Pool has no PSUM port)"),
            );
        }
    }
}

/// Reserved-byte masks of the spec layout of every opcode, per generation, built once from
/// `tpbsim_isa::decode` + `LayoutMeta::reserved`: one bit per bundle byte, and the same mask
/// as bytes (0xFF per reserved byte) in eight little-endian words for the fast test.
struct ReservedMask {
    bits: u64,
    bytes: [u64; 8],
}

fn reserved_masks() -> &'static [[ReservedMask; 256]; 4] {
    static MASKS: std::sync::OnceLock<Box<[[ReservedMask; 256]; 4]>> = std::sync::OnceLock::new();
    MASKS.get_or_init(|| {
        let mut t: Box<[[ReservedMask; 256]; 4]> = Box::new(std::array::from_fn(|_| {
            std::array::from_fn(|_| ReservedMask {
                bits: 0,
                bytes: [0; 8],
            })
        }));
        for gen in Gen::ALL {
            for op in 0..=255u8 {
                let mut b = tpbsim_isa::Bundle::ZERO;
                b.0[0] = op;
                b.0[1] = 0x10;
                if let Ok(inst) = tpbsim_isa::decode(&b, gen) {
                    let m = &mut t[gen.index()][op as usize];
                    for &(s, e) in inst.meta().reserved {
                        for i in s..e {
                            m.bits |= 1u64 << i;
                            m.bytes[i as usize / 8] |= 0xFF << (8 * (i % 8));
                        }
                    }
                }
            }
        }
        t
    })
}

/// The reserved-bytes stage: every reserved byte of the layout the ISA spec gives for this
/// opcode and generation (`LayoutMeta::reserved`, reserved bytes inside descriptors included)
/// is zero. The fast test ANDs the bundle's eight words with the opcode's byte mask; runs are
/// located and named only on failure.
pub fn spec_reserved<S: Sink>(ck: &mut Ck<S>) {
    if ck.u8(0) == SUB_SELECTED_OPCODE {
        return sub_selected_reserved(ck);
    }
    let m = &reserved_masks()[ck.gen.index()][ck.u8(0) as usize];
    let mut any = 0u64;
    for (w, mask) in ck.b.0.chunks_exact(8).zip(m.bytes) {
        let mut x = [0u8; 8];
        x.copy_from_slice(w);
        any |= u64::from_le_bytes(x) & mask;
    }
    if any == 0 {
        return;
    }
    let mask = m.bits;
    let mut nz = 0u64;
    for (i, &x) in ck.b.0.iter().enumerate() {
        nz |= ((x != 0) as u64) << i;
    }
    let bad = nz & mask;
    if bad == 0 {
        return;
    }
    let mut i = 0u8;
    while i < 64 {
        if bad >> i & 1 == 1 {
            let mut j = i;
            while j < 64 && bad >> j & 1 == 1 && j - i < 8 {
                j += 1;
            }
            let f = Field::new("reserved", i, j - i);
            let v = ck.get(f);
            ck.fail(&RESERVED_ZERO, f, v, Allowed::Eq(0));
            if ck.done() {
                return;
            }
            i = j;
        } else {
            i += 1;
        }
    }
}

/// The opcode whose layout a body byte selects (EXTENDED_INST 0xF0, sub-opcode at +12): its
/// reserved bytes come from the layout the bundle itself decodes to.
const SUB_SELECTED_OPCODE: u8 = 0xF0;

/// [`spec_reserved`] for a sub-selected layout: decode the bundle and test the reserved
/// ranges of the layout it selects.
fn sub_selected_reserved<S: Sink>(ck: &mut Ck<S>) {
    let Ok(inst) = tpbsim_isa::decode(ck.b, ck.gen) else {
        return;
    };
    for &(s, e) in inst.meta().reserved {
        let mut i = s;
        while i < e {
            let j = (i + 8).min(e);
            let f = Field::new("reserved", i, j - i);
            let v = ck.get(f);
            if v != 0 {
                ck.fail(&RESERVED_ZERO, f, v, Allowed::Eq(0));
                if ck.done() {
                    return;
                }
            }
            i = j;
        }
    }
}

/// Dtype acceptance flags for [`dtype_check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DtypeOpts {
    /// FP32R is allowed.
    pub fp32r: bool,
    /// UINT64 / INT64 are allowed (`is_valid_dtype_64`).
    pub b64: bool,
    /// FP4_EXP2 is allowed on v4+ (`is_valid_dtype_inc_fp4`).
    pub fp4: bool,
}

impl DtypeOpts {
    /// Plain `is_valid_dtype(dt, 0)`.
    pub const PLAIN: DtypeOpts = DtypeOpts {
        fp32r: false,
        b64: false,
        fp4: false,
    };
    /// FP32R allowed.
    pub const FP32R: DtypeOpts = DtypeOpts {
        fp32r: true,
        b64: false,
        fp4: false,
    };
}

/// `is_valid_dtype[_64|_inc_fp4]` on the dtype `tag` held in `f`. Returns true when valid.
pub fn dtype_check<S: Sink>(ck: &mut Ck<S>, f: Field, tag: u8, o: DtypeOpts) -> bool {
    let ok = dtype::is_valid(ck.gen, tag, o.fp32r, o.b64, o.fp4);
    if !ok {
        let allowed = match tag {
            dtype::INVALID => "not INVALID (0)",
            dtype::FP32R => "FP32R is not allowed for this operand",
            dtype::UINT64 | dtype::INT64 => "64-bit dtypes only on the 64-bit path",
            dtype::FP4_EXP2 => "FP4_EXP2 only where the fp4-inclusive check applies, on v4+",
            _ => "a wire dtype of this generation",
        };
        ck.fail(&IS_VALID_DTYPE, f, tag as u64, Allowed::Text(allowed));
    }
    ok
}

/// Check that the byte in `f` is a member of `set`.
#[inline]
pub fn enum_check<S: Sink>(
    ck: &mut Ck<S>,
    rule: &'static super::rule::Rule,
    f: Field,
    set: ByteSet,
    allowed: &'static str,
) -> bool {
    let v = ck.get(f) as u8;
    let ok = set.has(v);
    if !ok {
        ck.fail(rule, f, v as u64, Allowed::Text(allowed));
    }
    ok
}

rule!(CHECK_ACTIVE_CHANNELS, "check_active_channels", Format,
    public "G firmware/kernels/tensor-dequantize.md (check_active_channels: num != 0 && num <= POOLING_NUM_CHANNELS = 128); isa-facts §4.2/§4.3 num_active fields",
    "num_active_partitions / num_active_channels is 1..=128");
rule!(FLAG_BYTE, "flag_byte", Format,
    project "a byte the layouts name as a boolean flag (negated, use_false_fill): tpbsim accepts 0 and 1",
    "a flag byte is 0 or 1");

/// `check_active_channels` on the count in `f`; returns the count.
#[inline]
pub fn active_channels<S: Sink>(ck: &mut Ck<S>, f: Field) -> u64 {
    let n = ck.get(f);
    ck.check(
        (1..=128).contains(&n),
        &CHECK_ACTIVE_CHANNELS,
        f,
        Allowed::Text("1..=128"),
    );
    n
}

/// A flag byte (0 or 1).
#[inline]
pub fn flag<S: Sink>(ck: &mut Ck<S>, f: Field) {
    ck.check(ck.get(f) <= 1, &FLAG_BYTE, f, Allowed::Max(1));
}

/// Reject a NaN/Inf f32 immediate in `f`.
#[inline]
pub fn float_finite<S: Sink>(ck: &mut Ck<S>, f: Field) {
    let x = ck.get(f) as u32;
    ck.check(
        x & 0x7F80_0000 != 0x7F80_0000,
        &NAN_INF_FLOAT,
        f,
        Allowed::Text("a finite f32 (not NaN or Inf)"),
    );
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers to run a gate on a crafted bundle.
    use super::super::rule::Ck;
    use super::super::rule::{Collect, Gate, Outcome};
    use tpbsim_isa::{Bundle, Gen};

    /// Run `f` on `b` and return the names of failing rules (errors only).
    pub fn fails(
        b: &Bundle,
        gen: Gen,
        engine: Option<u8>,
        f: impl FnOnce(&mut Ck<Collect>),
    ) -> Vec<&'static str> {
        let mut c = Collect::default();
        let mut ck = Ck::new(b, gen, engine, Gate::Format, &mut c);
        f(&mut ck);
        c.failures
            .iter()
            .filter(|f| f.outcome == Outcome::Fail)
            .map(|f| f.rule.name)
            .collect()
    }

    /// Run `f` on `b` and return the names of not-checked rules.
    pub fn unchecked(
        b: &Bundle,
        gen: Gen,
        engine: Option<u8>,
        f: impl FnOnce(&mut Ck<Collect>),
    ) -> Vec<&'static str> {
        let mut c = Collect::default();
        let mut ck = Ck::new(b, gen, engine, Gate::Format, &mut c);
        f(&mut ck);
        c.failures
            .iter()
            .filter(|f| f.outcome == Outcome::NotChecked)
            .map(|f| f.rule.name)
            .collect()
    }

    /// A TENSOR3D at `off` with address `addr`, unit strides/counts.
    pub fn t3(b: &mut Bundle, off: usize, addr: u32, nums: [u16; 3]) {
        b.set_u32(off, addr);
        b.set_u16(off + 4, 1);
        b.set_u16(off + 6, 1);
        b.set_u16(off + 8, 1);
        b.set_u16(off + 10, nums[0]);
        b.set_u16(off + 12, nums[1]);
        b.set_u16(off + 14, nums[2]);
    }

    /// A TENSOR2D at `off`.
    pub fn t2(b: &mut Bundle, off: usize, addr: u32, nums: [u16; 2]) {
        b.set_u32(off, addr);
        b.set_u16(off + 4, 1);
        b.set_u16(off + 6, 1);
        b.set_u16(off + 8, nums[0]);
        b.set_u16(off + 10, nums[1]);
    }

    /// A TENSOR4D at `off`.
    pub fn t4(b: &mut Bundle, off: usize, addr: u32, nums: [u16; 4]) {
        b.set_u32(off, addr);
        for i in 0..4 {
            b.set_u16(off + 4 + 2 * i, 1);
            b.set_u16(off + 12 + 2 * i, nums[i]);
        }
    }

    /// A header with opcode `op` and inst_word_len 0x10.
    pub fn hdr(op: u8) -> Bundle {
        let mut b = Bundle::ZERO;
        b.0[0] = op;
        b.0[1] = 0x10;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn reserved_runs_from_spec_layout() {
        let mut b = hdr(0x01);
        assert!(fails(&b, Gen::V3, None, spec_reserved).is_empty());
        b.0[13] = 1;
        b.0[14] = 2;
        b.0[41] = 3;
        assert_eq!(
            fails(&b, Gen::V3, None, spec_reserved),
            ["reserved_zero", "reserved_zero"]
        );
        let mut b = hdr(0x01);
        b.0[12] = 1;
        assert_eq!(fails(&b, Gen::V3, None, spec_reserved), ["reserved_zero"]);
        assert!(
            fails(&b, Gen::V4, None, spec_reserved).is_empty(),
            "bg_xpose_mode is live on v4"
        );
    }

    #[test]
    fn dtype_and_float() {
        let b = hdr(0x01);
        let f = Field::new("x", 32, 1);
        assert_eq!(
            fails(&b, Gen::V3, None, |ck| {
                dtype_check(ck, f, 0, DtypeOpts::PLAIN);
            }),
            ["is_valid_dtype"]
        );
        assert!(fails(&b, Gen::V3, None, |ck| {
            dtype_check(ck, f, 6, DtypeOpts::PLAIN);
        })
        .is_empty());
        let mut b = hdr(0x21);
        b.set_u32(36, 0x7FC0_0000);
        assert_eq!(
            fails(&b, Gen::V3, None, |ck| float_finite(
                ck,
                Field::new("s", 36, 4)
            )),
            ["float_field_finite"]
        );
        b.set_u32(36, 0x3F80_0000);
        assert!(fails(&b, Gen::V3, None, |ck| float_finite(
            ck,
            Field::new("s", 36, 4)
        ))
        .is_empty());
    }

    #[test]
    fn dispatch() {
        assert_eq!(format_of(Gen::V3, 0x09), None);
        assert_eq!(format_of(Gen::V4, 0x09), Some(Format::Smx1Lw));
        assert_eq!(format_of(Gen::V2, 0xBC), None);
        assert_eq!(format_of(Gen::V4, 0x68), None);
    }
}

#[cfg(test)]
mod spec_field_names {
    //! The fields the gates name in diagnostics agree with the ISA spec's field metadata
    //! (name and byte offset) in every generation where the gate runs.
    use super::super::addr::Operand;
    use super::*;
    use tpbsim_isa::Bundle;

    fn check(gen: Gen, opcode: u8, fields: &[Field], ops: &[Operand], bad: &mut Vec<String>) {
        let mut b = Bundle::ZERO;
        b.0[0] = opcode;
        b.0[1] = 0x10;
        let Ok(inst) = tpbsim_isa::decode(&b, gen) else {
            bad.push(format!("{gen} {opcode:#x}: no layout"));
            return;
        };
        let meta = inst.meta();
        for f in fields {
            match meta.fields.iter().find(|m| m.name == f.name) {
                Some(m) if m.offset == f.start => {}
                Some(m) => bad.push(format!(
                    "{gen} {opcode:#x} {}: spec offset {} vs {}",
                    f.name, m.offset, f.start
                )),
                None => bad.push(format!(
                    "{gen} {opcode:#x} {}: not in the spec layout {}",
                    f.name, meta.rust_name
                )),
            }
        }
        for o in ops {
            match meta.fields.iter().find(|m| m.name == o.name) {
                Some(m) if m.offset == o.off => {}
                _ => bad.push(format!("{gen} {opcode:#x} operand {} @{}", o.name, o.off)),
            }
        }
    }

    #[test]
    fn gate_fields_match_spec_metadata() {
        let mut bad = vec![];
        for gen in [Gen::V2, Gen::V3, Gen::V4] {
            let mut lw = vec![
                pe::IN_DTYPE,
                pe::PERF_OPT,
                pe::NUM_ACTIVE_ROWS,
                pe::NUM_ACTIVE_COLS,
                pe::ROW_GRP,
                pe::COL_GRP,
            ];
            let mut mm = vec![
                pe::IN_DTYPE,
                pe::FP32_MODE,
                pe::PERF_OPT,
                pe::NUM_ACTIVE_ROWS,
                pe::NUM_ACTIVE_COLS,
                pe::PSUM_ACC,
                pe::ROW_GRP,
                pe::COL_GRP,
                pe::ZERO_REGION,
            ];
            if gen == Gen::V2 {
                lw.push(pe::XBUS_SEL);
                mm.push(pe::XBUS_SEL);
            } else {
                lw.push(pe::TRANSPOSE_MODE);
                mm.push(pe::TRANSPOSE_MODE);
                mm.push(pe::OUT_DTYPE);
            }
            if gen == Gen::V4 {
                lw.push(pe::LW_FLAGS);
                mm.push(pe::MM_FLAGS);
            }
            check(gen, 0x01, &lw, &[pe::SRC], &mut bad);
            check(gen, 0x02, &mm, &[pe::SRC, pe::DST], &mut bad);
            check(
                gen,
                0x21,
                &[
                    act::IN_DTYPE,
                    act::IMM_SRC,
                    act::SCALE_SRC,
                    act::ACC_CMD,
                    act::BIAS_SRC_N,
                    act::OUT_DTYPE,
                    act::NUM_ACTIVE,
                    act::FUNC,
                    act::SCALE,
                    act::BIAS,
                    act::IMM,
                ],
                &[act::SRC, act::DST],
                &mut bad,
            );
            check(
                gen,
                0x41,
                &[tt::DT0, tt::OUT, tt::OP, tt::NUM],
                &[tt::SRC0, tt::SRC1, tt::DST],
                &mut bad,
            );
            check(
                gen,
                0x43,
                &[
                    ts::ACC_CMD,
                    ts::IN_DTYPE,
                    ts::OUT_DTYPE,
                    ts::NUM,
                    ts::IMM0_SRC,
                    ts::OP0,
                    ts::OP1,
                    ts::REVERSE,
                    ts::IMM1_SRC,
                ],
                &[ts::SRC, ts::DST],
                &mut bad,
            );
            check(
                gen,
                0x46,
                &[
                    tr::IN_DTYPE,
                    tr::OUT_DTYPE,
                    tr::NUM,
                    tr::NEGATED,
                    tr::OP,
                    tr::OP_DIM,
                ],
                &[tr::SRC, tr::DST],
                &mut bad,
            );
            if gen != Gen::V2 {
                check(
                    gen,
                    0xBC,
                    &[
                        rs::NUM,
                        rs::DTYPES,
                        rs::REDUCE_CMD,
                        rs::REDUCE_OP,
                        rs::BASE,
                        rs::FILL,
                        rs::COMP0,
                        rs::COMP1,
                        rs::BOUND0_SRC,
                        rs::BOUND1_SRC,
                    ],
                    &[rs::SRC, rs::DST],
                    &mut bad,
                );
                check(
                    gen,
                    0x07,
                    &[
                        pe::IN_DTYPE,
                        pe::FP32_MODE,
                        pe::SPARSE_OUT_DTYPE,
                        pe::PSUM_ACC,
                        pe::ROW_GRP,
                        pe::COL_GRP,
                        pe::ZERO_REGION,
                    ],
                    &[pe::SPARSE_SRC, pe::DST],
                    &mut bad,
                );
            }
            if gen == Gen::V4 {
                check(
                    gen,
                    0x09,
                    &[
                        pe::IN_DTYPE,
                        pe::NUM_ACTIVE_ROWS,
                        pe::NUM_ACTIVE_COLS,
                        pe::ROW_GRP,
                        pe::COL_GRP,
                    ],
                    &[mx::MX_SRC],
                    &mut bad,
                );
                check(
                    gen,
                    0x0A,
                    &[
                        pe::IN_DTYPE,
                        mx::MX_OUT_DTYPE,
                        pe::PSUM_ACC,
                        pe::ZERO_REGION,
                    ],
                    &[mx::MX_SRC, pe::DST],
                    &mut bad,
                );
                check(
                    gen,
                    0xE3,
                    &[mx::Q_SRC_PARTITIONS, mx::Q_SRC_DTYPE, mx::Q_OUT_DTYPE],
                    &[mx::Q_SRC, mx::Q_DST],
                    &mut bad,
                );
            }
        }
        // The gates of the remaining typed formats.
        for gen in [Gen::V2, Gen::V3, Gen::V4] {
            check(
                gen,
                0x22,
                &[
                    act2::AQ_QUANT_SCALE,
                    act2::AQ_OUT,
                    act2::AQ_NUM,
                    act2::AQ_FUNC,
                    act2::AQ_DEQUANT_SCALE,
                    act2::AQ_BIAS,
                ],
                &[act2::AQ_SRC, act2::AQ_DST],
                &mut bad,
            );
            check(
                gen,
                0x24,
                &[act2::RD_COUNT, act2::RD_DTYPE, act2::RD_NEG, act2::RD_NUM],
                &[act2::RD_DST],
                &mut bad,
            );
            check(
                gen,
                0x49,
                &[pool::MS_COUNT, pool::MS_DTYPE, pool::MS_NUM],
                &[pool::MS_DST],
                &mut bad,
            );
            check(
                gen,
                0x7E,
                &[pool::IOTA_OUT, pool::IOTA_NUM],
                &[pool::IOTA_DST],
                &mut bad,
            );
            check(
                gen,
                0xE8,
                &[
                    pool::CPS_MASK_DT,
                    pool::CPS_FILL,
                    pool::CPS_NUM,
                    pool::CPS_SRC_DT,
                    pool::CPS_OUT,
                ],
                &[pool::CPS_DST, pool::CPS_MASK],
                &mut bad,
            );
            check(
                gen,
                0x9D,
                &[
                    pool::STT_OP0,
                    pool::STT_OP1,
                    pool::STT_REV,
                    pool::STT_IMM0_SRC,
                    pool::STT_OUT,
                    pool::STT_NUM,
                    pool::STT_IMM0_DT,
                    pool::STT_ACC_F,
                    pool::STT_IMM0,
                ],
                &[pool::STT_SRC0, pool::STT_SRC1, pool::STT_DST],
                &mut bad,
            );
            check(
                gen,
                0x98,
                &[
                    pool::TSS_REV,
                    pool::TSS_NUM,
                    pool::TSS_DTYPE,
                    pool::TSS_PRED_DT,
                    pool::TSS_IMM_SRC,
                    pool::TSS_PRED_SRC,
                    pool::TSS_IMM,
                    pool::TSS_PRED,
                ],
                &[pool::TSS_SRC, pool::TSS_DST],
                &mut bad,
            );
            check(
                gen,
                0x92,
                &[pool::AS_NUM, pool::AS_FILL_MODE],
                &[pool::AS_SRC, pool::AS_DST],
                &mut bad,
            );
            check(
                gen,
                0x45,
                &[
                    pool::PL_IN,
                    pool::PL_OUT,
                    pool::PL_NUM,
                    pool::PL_TYPE,
                    pool::PL_MODE,
                    pool::PL_SCALE,
                ],
                &[pool::PL_SRC, pool::PL_DST],
                &mut bad,
            );
            check(
                gen,
                0xA8,
                &[
                    ctrl::AL_OP,
                    ctrl::AL_DTYPE,
                    ctrl::AL_DATASRC,
                    ctrl::AL_DST_DTYPE,
                ],
                &[],
                &mut bad,
            );
            check(
                gen,
                0xA9,
                &[ctrl::BR_CMP, ctrl::BR_DTYPE, ctrl::BR_MODE],
                &[],
                &mut bad,
            );
            check(
                gen,
                0xB0,
                &[ctrl::RC_MODE, ctrl::RC_FIRST, ctrl::RC_LAST],
                &[],
                &mut bad,
            );
            check(gen, 0x23, &[ctrl::ACT_TABLE_SET], &[], &mut bad);
            check(gen, 0xD4, &[dma::DMA_DGE_OP], &[], &mut bad);
            check(gen, 0xDF, &[dma::PSEUDO_SUB_OP], &[], &mut bad);
            if gen != Gen::V2 {
                check(
                    gen,
                    0x7B,
                    &[
                        pool::DQ_IN,
                        pool::DQ_OUT,
                        pool::DQ_NUM,
                        pool::DQ_FMT_F,
                        pool::DQ_GROUP_F,
                    ],
                    &[pool::DQ_SRC, pool::DQ_DST],
                    &mut bad,
                );
                check(
                    gen,
                    0x06,
                    &[pe_aux::LT_DTYPE, pe_aux::LT_COL_GRP, pe_aux::LT_ROW_GRP],
                    &[pe_aux::LT_TAGS],
                    &mut bad,
                );
            }
            if gen == Gen::V4 {
                check(
                    gen,
                    0x25,
                    &[
                        act2::AC2_RELU_SRC,
                        act2::AC2_IMM0_SRC,
                        act2::AC2_REDUCE_CMD,
                        act2::AC2_IMM_DTYPE,
                        act2::AC2_OP0,
                        act2::AC2_OP1,
                        act2::AC2_REDUCE_OP,
                        act2::AC2_IN,
                        act2::AC2_OUT,
                        act2::AC2_NUM,
                        act2::AC2_FUNC,
                        act2::AC2_REVERSE_F,
                    ],
                    &[act2::AC2_SRC, act2::AC2_DST],
                    &mut bad,
                );
                check(
                    gen,
                    0x08,
                    &[
                        pe_aux::SEED_ID_DTYPE,
                        pe_aux::SEED_MODE_F,
                        pe_aux::SEED_ROWS,
                    ],
                    &[pe_aux::SEED_SRC, pe_aux::SEED_IDENTITY, pe_aux::SEED_DST],
                    &mut bad,
                );
            }
        }
        assert!(bad.is_empty(), "{bad:#?}");
    }
}
