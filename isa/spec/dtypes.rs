// Number formats: every element type BIR, the NEFF schema and the simulator name, one row
// each, with its wire DTYPE tag per generation. `isa/build.rs` generates `NumFormat` from
// these rows (variant order = row order; the discriminant of a BIR format is its ordinal).

const BIR_LUT: &str = "isa-facts §6.2 (compiler BIR dtype ordinals, container sizes and BIR -> wire tag LUT)";
const FP4_ELEM: &str = "project-defined: one unpacked lane of float4_e2m1fn_x4 (OCP E2M1, isa-facts §6.1 FP4_EXP2)";
const HOST: &str = "project-defined: host-side numpy dtype of .npy members and def.json (docs/neff.md)";

/// The broad class of a number format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NumClass {
    /// Two's-complement or unsigned integer (see `NumFormatRow::signed`).
    Int,
    /// IEEE-style binary float of 16 bits or more (`float32r` included).
    Float,
    /// 8-bit float (E3M4, E4M3, E4M3FN, E5M2; the ×4 FP8 forms).
    Fp8,
    /// 4-bit float (E2M1, packed or not).
    Fp4,
    /// Scale-only exponent byte (E8M0).
    Scale,
    /// Host-side boolean.
    Bool,
}

/// No BIR ordinal / no wire tag.
pub const NUM_NONE: u8 = 0xFF;

/// One number format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumFormatRow {
    /// Rust variant of `NumFormat`.
    pub variant: &'static str,
    /// Name as numpy / `ml_dtypes` (and the compiler's BIR JSON) spell it.
    pub name: &'static str,
    /// The compiler's own spelling where it differs (`float8e4`), accepted on import; or "".
    pub compiler: &'static str,
    /// Short form BIR JSON import accepts (`bf16`), project-defined; or "".
    pub short: &'static str,
    /// BIR dtype ordinal, or `NUM_NONE`.
    pub bir: u8,
    /// Wire DTYPE tag per generation v2..v5 (`NUM_NONE`: no tag there).
    pub wire: [u8; 4],
    /// Generations where a plain operand's wire tag reads as this format.
    pub plain: PresenceStr,
    /// Generations where the data tag of a microscaled (MX) operand reads as this format.
    pub mx: PresenceStr,
    /// Bits of one element's code.
    pub bits: u8,
    /// Elements per storage container (4 for the ×4 forms).
    pub lanes: u8,
    /// Class.
    pub class: NumClass,
    /// Signed (integers; every float is signed).
    pub signed: bool,
    /// Variant of one lane of a ×4 form, or "" (the format itself).
    pub element: &'static str,
    /// Largest finite value as fp32 bits (0: none, integers and E8M0).
    pub max_finite: u32,
    /// The simulator has a value model for it (a device format).
    pub device: bool,
    /// The NEFF schema (`def.json` `dtype`, `.npy`) spells it.
    pub neff: bool,
    /// numpy has a native dtype for it (otherwise `.npy` stores it as void).
    pub numpy_native: bool,
    /// Source, or `project-defined`.
    pub prov: &'static str,
    /// Remarks.
    pub note: &'static str,
}

const fn nf(variant: &'static str, name: &'static str, bir: u8, wire: [u8; 4], bits: u8, class: NumClass, signed: bool) -> NumFormatRow {
    NumFormatRow {
        variant,
        name,
        compiler: "",
        short: "",
        bir,
        wire,
        plain: "YYYY",
        mx: "----",
        bits,
        lanes: 1,
        class,
        signed,
        element: "",
        max_finite: 0,
        device: true,
        neff: true,
        numpy_native: false,
        prov: BIR_LUT,
        note: "",
    }
}

impl NumFormatRow {
    const fn compiler(mut self, s: &'static str) -> Self {
        self.compiler = s;
        self
    }
    const fn short(mut self, s: &'static str) -> Self {
        self.short = s;
        self
    }
    const fn plain(mut self, p: PresenceStr) -> Self {
        self.plain = p;
        self
    }
    const fn x4(mut self, element: &'static str) -> Self {
        self.lanes = 4;
        self.element = element;
        self.mx = "YYYY";
        self
    }
    const fn max(mut self, bits: u32) -> Self {
        self.max_finite = bits;
        self
    }
    const fn native(mut self) -> Self {
        self.numpy_native = true;
        self
    }
    const fn host(mut self) -> Self {
        self.device = false;
        self.plain = "----";
        self.prov = HOST;
        self
    }
    const fn not_neff(mut self) -> Self {
        self.neff = false;
        self
    }
    const fn prov(mut self, p: &'static str) -> Self {
        self.prov = p;
        self
    }
    const fn note(mut self, n: &'static str) -> Self {
        self.note = n;
        self
    }
}

const N: u8 = NUM_NONE;
const fn tag(t: u8) -> [u8; 4] {
    [t; 4]
}

/// Every number format, BIR ordinals 0..=19 first (in ordinal order).
pub const NUM_FORMATS: &[NumFormatRow] = &[
    nf("Uint8", "uint8", 0, tag(0x03), 8, NumClass::Int, false).native(),
    nf("Int8", "int8", 1, tag(0x02), 8, NumClass::Int, true).native(),
    nf("Float4E2m1fnX4", "float4_e2m1fn_x4", 2, [0x05, 0x05, 0x10, 0x10], 4, NumClass::Fp4, true).x4("Float4E2m1fn").plain("--YY").max(0x40C0_0000).note("before v4 it travels as UINT16"),
    nf("Float8E3m4", "float8_e3m4", 3, tag(0x0D), 8, NumClass::Fp8, true).compiler("float8e3").max(0x4178_0000).note("bias 3, IEEE-like (Inf 0x70, NaN 0x71..=0x7F)"),
    nf("Float8E4m3", "float8_e4m3", 4, tag(0x0E), 8, NumClass::Fp8, true).compiler("float8e4").plain("----").max(0x4370_0000).note("bias 7, IEEE-like (Inf 0x78); FP8_EXP4 with the alternative emax"),
    nf("Float8E4m3fn", "float8_e4m3fn", 5, tag(0x0E), 8, NumClass::Fp8, true).max(0x43E0_0000).note("OCP, no Inf, NaN 0x7F/0xFF; the plain reading of FP8_EXP4 (compiler default emax 8)"),
    nf("Float8E8m0fnu", "float8_e8m0fnu", 6, tag(0x03), 8, NumClass::Scale, false).plain("----").note("MX block scale 2^(e-127), 0xFF = NaN; travels as UINT8"),
    nf("Float8E5m2", "float8_e5m2", 7, tag(0x0F), 8, NumClass::Fp8, true).compiler("float8e5").max(0x4760_0000).note("bias 15, Inf 0x7C"),
    nf("Float8E4m3fnX4", "float8_e4m3fn_x4", 8, tag(0x0E), 8, NumClass::Fp8, true).x4("Float8E4m3fn").plain("----").max(0x43E0_0000),
    nf("Float8E5m2X4", "float8_e5m2_x4", 9, tag(0x0F), 8, NumClass::Fp8, true).x4("Float8E5m2").plain("----").max(0x4760_0000),
    nf("Uint16", "uint16", 10, tag(0x05), 16, NumClass::Int, false).native(),
    nf("Int16", "int16", 11, tag(0x04), 16, NumClass::Int, true).native(),
    nf("Bfloat16", "bfloat16", 12, tag(0x06), 16, NumClass::Float, true).short("bf16").max(0x7F7F_0000),
    nf("Float16", "float16", 13, tag(0x07), 16, NumClass::Float, true).short("fp16").max(0x477F_E000).native(),
    nf("Uint32", "uint32", 14, tag(0x09), 32, NumClass::Int, false).native(),
    nf("Int32", "int32", 15, tag(0x08), 32, NumClass::Int, true).native(),
    nf("Float32", "float32", 16, tag(0x0A), 32, NumClass::Float, true).short("fp32").max(0x7F7F_FFFF).native(),
    nf("Float32r", "float32r", 17, tag(0x0B), 32, NumClass::Float, true).short("fp32r").max(0x7F7F_F000).native().note("fp32 storage, mantissa rounded (RNE) to 11 explicit bits; .npy stores it as <f4"),
    nf("Uint64", "uint64", 18, tag(0x01), 64, NumClass::Int, false).native(),
    nf("Int64", "int64", 19, tag(0x0C), 64, NumClass::Int, true).native(),
    nf("Float4E2m1fn", "float4_e2m1fn", N, [N, N, 0x10, 0x10], 4, NumClass::Fp4, true).plain("----").max(0x40C0_0000).not_neff().prov(FP4_ELEM).note("one code stored unpacked in the low nibble of a byte; no BIR ordinal"),
    nf("Bool", "bool", N, tag(N), 8, NumClass::Bool, false).host().native(),
    nf("Float64", "float64", N, tag(N), 64, NumClass::Float, true).host().native(),
];
