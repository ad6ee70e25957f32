//! The per-opcode format gates (`is_valid_<fmt>`) and the opcode → gate dispatch of each
//! generation's roster.
//!
//! Every gate runs its stages in the cascade order: per-field enums, reserved-bit zeroing,
//! dtype checks, then the format's own geometry / placement rules.

use tpbsim_isa::{FormatGate, Gen};

use super::dtype;
use super::rule::{rule, Allowed, Ck, Field, Sink};
use super::table::{FieldRule, GateTable};
use tpbsim_isa::spec::ByteSet;

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

/// The binding of each gate of the spec (`FormatGate`, generated from `spec::GATES`) to its
/// function and rule table here: [`run`], [`table`] and [`gate_fn_name`] match exhaustively, so a
/// gate added to the spec fails to build until it is bound; a test ties each function's name to
/// the spec's gate name.
macro_rules! gate_binding {
    ($($variant:ident => $m:ident :: $gate:ident, [$($table:path)?];)*) => {
        /// Run `fmt`'s gate.
        pub fn run<S: Sink>(fmt: FormatGate, ck: &mut Ck<S>) {
            match fmt {
                $(FormatGate::$variant => $m::$gate(ck),)*
            }
        }

        /// The rule data of `fmt`'s gate: the rows its generic checker evaluates (enum
        /// membership, numeric ranges, dtypes), which the fuzz generator and the boundary tests
        /// read; [`GateTable::EMPTY`] for a gate without rule rows.
        pub const fn table(fmt: FormatGate) -> GateTable {
            match fmt {
                $(FormatGate::$variant => gate_binding!(@table $($table)?),)*
            }
        }

        /// The name of the function bound to `fmt` (the spec's `gate_name`).
        pub const fn gate_fn_name(fmt: FormatGate) -> &'static str {
            match fmt {
                $(FormatGate::$variant => stringify!($gate),)*
            }
        }
    };
    (@table) => { GateTable::EMPTY };
    (@table $table:path) => { $table };
}

gate_binding! {
    S3Lw => pe::is_valid_s3_lw, [pe::LW_TABLE];
    S3d3Mm => pe::is_valid_s3d3_mm, [pe::MM_TABLE];
    S4d3Mm => pe::is_valid_s4d3_mm, [pe::SPARSE_TABLE];
    Smx1Lw => mx::is_valid_smx1_lw, [mx::LW_TABLE];
    Smx1d3Mm => mx::is_valid_smx1d3_mm, [mx::MM_TABLE];
    S3dmx1Quant => mx::is_valid_s3dmx1_quant, [mx::Q_TABLE];
    S3d3Ac => act::is_valid_activate, [act::TABLE];
    S3s3d3Tt => tt::is_valid_s3s3d3_tt, [tt::TABLE];
    S3d3Ts => ts::is_valid_s3d3_ts, [ts::TABLE];
    S4d4Tr => tr::is_valid_s4d4_tr, [tr::TABLE];
    S2d2Rs => rs::is_valid_s2d2_rs, [rs::TABLE];
    CtrlEs => ctrl::is_valid_ctrl_es, [];
    S2d2Ac => act2::is_valid_s2d2_ac, [act2::AC2_TABLE];
    S3d3Aq => act2::is_valid_s3d3_aq, [act2::AQ_TABLE];
    D1Rd => act2::is_valid_d1_rd, [act2::RD_TABLE];
    CtrlNo => ctrl::is_valid_ctrl_no, [];
    Memset => pool::is_valid_memset, [pool::MS_TABLE];
    Iota => pool::is_valid_iota, [pool::IOTA_TABLE];
    TensDequant => pool::is_valid_tensor_dequantize, [pool::DQ_TABLE];
    CpPredScalar => pool::is_valid_s3d3_cp_pred_scalar, [pool::CPS_TABLE];
    SelectReduce => pool::is_valid_select_reduce, [pool::SR_TABLE];
    S2s2d2Stt => pool::is_valid_s2s2d2_stt, [pool::STT_TABLE];
    S4d4Pl => pool::is_valid_s4d4_pl, [pool::PL_TABLE];
    S3d3TsSelect => pool::is_valid_s3d3_ts_select, [pool::TSS_TABLE];
    S2d2TsAs => pool::is_valid_s2d2_ts_as, [pool::AS_TABLE];
    S3Lt => pe_aux::is_valid_s3_lt, [pe_aux::LT_TABLE];
    PeManageSeed => pe_aux::is_valid_pe_manage_seed, [pe_aux::SEED_TABLE];
    Ctrl => ctrl::is_valid_ctrl, [];
    Drain => ctrl::is_valid_drain, [];
    Write => ctrl::is_valid_write, [];
    CtrlAl => ctrl::is_valid_ctrl_al, [ctrl::AL_TABLE];
    CtrlBr => ctrl::is_valid_ctrl_br, [ctrl::BR_TABLE];
    RangeClear => ctrl::is_valid_event_semaphore_range_clear, [ctrl::RC_TABLE];
    DmaDirect2d => dma::is_valid_dma_direct2d, [dma::DMA_TABLE];
    Pseudo => dma::is_valid_pseudo, [dma::PSEUDO_TABLE];
    Extended => dma::is_valid_extended, [dma::EXT_TABLE];
    CoreBarrier => ctrl::is_valid_core_barrier, [];
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

/// The `check_active_channels` row on the count in `f` (1..=128).
pub const fn active_channels_row(f: Field) -> FieldRule {
    FieldRule::range(&CHECK_ACTIVE_CHANNELS, f, 1, 128, Allowed::Text("1..=128"))
}

/// The `flag_byte` row on `f` (0 or 1).
pub const fn flag_row(f: Field) -> FieldRule {
    FieldRule::max(&FLAG_BYTE, f, 1)
}

/// `check_active_channels` on the count in `f`; returns the count.
#[inline]
pub fn active_channels<S: Sink>(ck: &mut Ck<S>, f: Field) -> u64 {
    active_channels_row(f).eval(ck);
    ck.get(f)
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

    /// Run `f` on `b` and collect what it reports.
    fn run(b: &Bundle, gen: Gen, engine: Option<u8>, f: impl FnOnce(&mut Ck<Collect>)) -> Collect {
        let mut c = Collect::default();
        let mut ck = Ck::new(b, gen, engine, Gate::Format, &mut c);
        f(&mut ck);
        c
    }

    /// The rule names of `c`'s findings with outcome `o`, in order.
    fn names(c: &Collect, o: Outcome) -> Vec<&'static str> {
        c.failures
            .iter()
            .filter(|f| f.outcome == o)
            .map(|f| f.rule.name)
            .collect()
    }

    /// Run `f` on `b` (no engine) and return each failing rule's name with what it allowed.
    pub fn fails_allowed(
        b: &Bundle,
        gen: Gen,
        f: impl FnOnce(&mut Ck<Collect>),
    ) -> Vec<(&'static str, super::super::rule::Allowed)> {
        run(b, gen, None, f)
            .failures
            .iter()
            .filter(|f| f.outcome == Outcome::Fail)
            .map(|f| (f.rule.name, f.allowed))
            .collect()
    }

    /// Run `f` on `b` and return the names of failing rules (errors only).
    pub fn fails(
        b: &Bundle,
        gen: Gen,
        engine: Option<u8>,
        f: impl FnOnce(&mut Ck<Collect>),
    ) -> Vec<&'static str> {
        names(&run(b, gen, engine, f), Outcome::Fail)
    }

    /// Run `f` on `b` and return the names of not-checked rules.
    pub fn unchecked(
        b: &Bundle,
        gen: Gen,
        engine: Option<u8>,
        f: impl FnOnce(&mut Ck<Collect>),
    ) -> Vec<&'static str> {
        names(&run(b, gen, engine, f), Outcome::NotChecked)
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
        for (i, n) in nums.into_iter().enumerate() {
            b.set_u16(off + 4 + 2 * i, 1);
            b.set_u16(off + 12 + 2 * i, n);
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
    fn each_gate_is_bound_to_the_function_of_its_spec_name() {
        for g in FormatGate::ALL {
            assert_eq!(gate_fn_name(g), g.gate_name(), "{g:?}");
        }
    }

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
        assert_eq!(FormatGate::of(Gen::V3, 0x09), None);
        assert_eq!(FormatGate::of(Gen::V4, 0x09), Some(FormatGate::Smx1Lw));
        assert_eq!(FormatGate::of(Gen::V2, 0xBC), None);
        assert_eq!(FormatGate::of(Gen::V4, 0x68), None);
    }
}
