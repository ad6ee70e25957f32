//! The lifter (engine-stream bundles → BIR) and its inverse, lowering (BIR → bundles).
//!
//! [`lift_streams`] turns the decoded bundles of one or more engine streams into one BIR
//! [`Module`](crate::bir::Module): one function per stream (named by the caller, attributes
//! `engine` and `file`), one block `bb0`, the instructions in stream order. It inverts the
//! compiler's dtype / engine / generation fan-in (seed 004): the dtype and generation variants
//! of an opcode family lift to their generic class (0x8A BF16 add → `TensorTensor` with
//! bfloat16 inputs and op ADD; 0x53 → `TensorScalar` with a bit-vector op), the engine comes
//! from the stream, and the multi-bundle sequences fuse back into one instruction. Operand
//! descriptors become access patterns ([`ap`]), wire dtype tags become BIR dtypes ([`dtype`]).
//!
//! [`lower_instruction`] chooses the opcode(s) for an instruction's class, dtypes, engine, op
//! and generation and encodes the bundles. Every lifted instruction is checked by lowering it:
//! it must give back its bundles byte for byte, so `lower(lift(stream)) == stream` holds for
//! every stream. Whatever lowering would not derive from the class, operands and parameters
//! (sync events, reserved bytes, non-canonical group codes, ...) is kept in the instruction's
//! attributes:
//!
//! | Attribute | Meaning |
//! |---|---|
//! | `<field>` | a parameter field of the parameter-carrying bundle (`op`, `activation_func`, `imm0`, …), when it differs from what lowering derives; enum values by name |
//! | `opcode` | the opcode mnemonic(s) found, when the fan-in would choose another |
//! | `events` | per bundle, the non-zero event fields (`wait_mode`, `wait_idx`, `update_mode`, `update_idx`, `semaphore_value`), or `null` |
//! | `wire` | per bundle, every other field (by spec name, descriptor parts as `src.num[1]`, dtype-pair nibbles as `in_dtypes.hi`, reserved runs as `@<offset>`) whose bytes differ |
//! | `wide_result` | `TensorTensor` / `TensorScalar` with a low and a high output (v5 INT_WIDE) |
//! | `tsc_mode` | `TensorScalarCache` mode (`Reduce`, `Cumulative`, `TensorScan`) |
//! | `fp32_passes` | 1 on a matmul over float32 done in one LDWEIGHTS + MATMUL pass |
//! | `payload_bundles` | number of CUSTOM_OP_PAYLOAD bundles of a `CustomOp` |
//! | `origin` | `{index, bundles, offset}`: the first bundle and bundle count it came from |
//! | `bundle`, `mnemonic`, `unlifted` | on `Generic`: the kept bundle (hex), its mnemonic and why it was not lifted |
//!
//! `docs/lift.md` has the full mapping tables.

pub mod ap;
pub mod dtype;
mod fields;
mod groups;
mod lifter;
mod lower;
mod rules;

#[cfg(test)]
mod tests;

use tpbsim_isa::{Bundle, Engine, Gen};

use crate::bir::{EngineType, Function, InstClass};

pub use lifter::{lift_stream, lift_streams, locate, Lifted, LiftedStream, StreamInput};
pub use lower::lower_instruction;

/// Attribute: the `{index, bundles, offset}` the instruction was lifted from.
pub const ATTR_ORIGIN: &str = "origin";
/// Attribute: opcode mnemonic (or one per bundle) overriding the fan-in.
pub const ATTR_OPCODE: &str = "opcode";
/// Attribute: per-bundle event fields.
pub const ATTR_EVENTS: &str = "events";
/// Attribute: per-bundle raw fields lowering does not derive.
pub const ATTR_WIRE: &str = "wire";
/// Attribute: a wide (low + high output) integer TensorTensor / TensorScalar (v5).
pub const ATTR_WIDE: &str = "wide_result";
/// Attribute: TensorScalarCache mode.
pub const ATTR_TSC_MODE: &str = "tsc_mode";
/// Attribute: 1 for a single-pass float32 matmul.
pub const ATTR_FP32_PASSES: &str = "fp32_passes";
/// Attribute: number of CUSTOM_OP_PAYLOAD bundles.
pub const ATTR_PAYLOADS: &str = "payload_bundles";
/// Attribute of `Generic`: the bundle's 128 hex digits.
pub const ATTR_BUNDLE: &str = "bundle";
/// Attribute of `Generic`: the bundle's mnemonic.
pub const ATTR_MNEMONIC: &str = "mnemonic";
/// Attribute of `Generic`: why it was not lifted.
pub const ATTR_UNLIFTED: &str = "unlifted";
/// Function attribute: the stream's engine (`pe`, `act`, `pool`, `dve`, `sp`).
pub const FN_ATTR_ENGINE: &str = "engine";
/// Function attribute: the stream's file.
pub const FN_ATTR_FILE: &str = "file";
/// Rule name of the lifter's reports.
pub const LIFT_RULE: &str = "lift";

/// Where a lifted instruction came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Stream file.
    pub file: Option<String>,
    /// Stream engine.
    pub engine: Engine,
    /// Index of the first bundle.
    pub index: u64,
    /// Number of bundles.
    pub bundles: u32,
    /// Byte offset of the first bundle.
    pub offset: u64,
}

/// Why an instruction does not lower; the variant says at which step. Every message reads
/// `<class> on <gen>: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// A structured region: its body blocks are not one flat stream.
    #[error("{class} on {gen}: structured regions do not lower to a flat stream")]
    Region {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
    },
    /// A `Generic` instruction whose kept bundle (`attrs.bundle`) is missing or malformed.
    #[error("{class} on {gen}: {reason}")]
    GenericBundle {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
        /// What is wrong with the kept bundle.
        reason: String,
    },
    /// No opcode sequence carries the instruction (its class, dtypes, engine, ALU op or
    /// `attrs.opcode`).
    #[error("{class} on {gen}: {reason}")]
    Opcode {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
        /// Why no opcode fits.
        reason: String,
    },
    /// An operand or a derived field does not fit the chosen layouts.
    #[error("{class} on {gen}: {reason}")]
    Operands {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
        /// Which operand and what does not fit.
        reason: String,
    },
    /// A parameter, `events` or `wire` attribute does not fit its field.
    #[error("{class} on {gen}: {reason}")]
    Attribute {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
        /// Which attribute (`attrs.<key>`) and what does not fit.
        reason: String,
    },
    /// An encoded bundle does not decode in the target generation.
    #[error("{class} on {gen}: {error}")]
    Decode {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
        /// The decoder's verdict.
        error: tpbsim_isa::DecodeError,
    },
}

impl LowerError {
    /// The class of the instruction that does not lower.
    pub fn class(&self) -> InstClass {
        match self {
            LowerError::Region { class, .. }
            | LowerError::GenericBundle { class, .. }
            | LowerError::Opcode { class, .. }
            | LowerError::Operands { class, .. }
            | LowerError::Attribute { class, .. }
            | LowerError::Decode { class, .. } => *class,
        }
    }

    /// The reason, without the `<class> on <gen>: ` prefix.
    pub fn reason(&self) -> String {
        match self {
            LowerError::Region { .. } => "structured regions do not lower to a flat stream".into(),
            LowerError::GenericBundle { reason, .. }
            | LowerError::Opcode { reason, .. }
            | LowerError::Operands { reason, .. }
            | LowerError::Attribute { reason, .. } => reason.clone(),
            LowerError::Decode { error, .. } => error.to_string(),
        }
    }
}

/// Why a bundle is not lifted: it is kept as a `Generic` instruction holding its bytes, and
/// the stream's report names the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiftError {
    /// The bundle does not decode in this generation.
    #[error("{0}")]
    Decode(tpbsim_isa::DecodeError),
    /// A bundle of a multi-bundle group without the rest of its group.
    #[error("{0}")]
    Unpaired(&'static str),
    /// The opcode has no lifting form.
    #[error("no lifting rule for {}", lower::mnemonic(*.opcode))]
    NoRule {
        /// The opcode.
        opcode: u8,
    },
    /// The group's operands or parameters do not map to BIR, or lowering the result does not
    /// give the bundles back byte for byte.
    #[error("{} as {class}: {reason}", lower::mnemonics(.opcodes))]
    NotLiftable {
        /// The group's opcodes.
        opcodes: Vec<u8>,
        /// The class the group would lift to.
        class: InstClass,
        /// What does not map.
        reason: String,
    },
}

impl LiftError {
    /// Short reason used to group reports.
    pub fn kind(&self) -> &'static str {
        match self {
            LiftError::Decode(_) => "unknown opcode",
            LiftError::Unpaired(_) => "unpaired",
            LiftError::NoRule { .. } => "no lifting rule",
            LiftError::NotLiftable { .. } => "not liftable",
        }
    }
}

/// The BIR engine of a wire engine (the inverse of the compiler's `convert()`: PE→3, ACT→2,
/// POOL→1, DVE→5, SP→6).
pub const fn bir_engine(e: Engine) -> EngineType {
    match e {
        Engine::Pe => EngineType::Pe,
        Engine::Act => EngineType::Act,
        Engine::Pool => EngineType::Pool,
        Engine::Dve => EngineType::Dve,
        Engine::Sp => EngineType::Sp,
    }
}

/// Lower every instruction of a function's blocks, in order, to one bundle sequence (the
/// function is one engine's stream; region bodies are not lowered).
pub fn lower_function(f: &Function, gen: Gen) -> Result<Vec<Bundle>, LowerError> {
    let mut out = Vec::new();
    for b in &f.blocks {
        for inst in &b.instructions {
            if inst.class.is_region() {
                return Err(LowerError::Region {
                    class: inst.class,
                    gen,
                });
            }
            out.extend(lower_instruction(inst, gen)?);
        }
    }
    Ok(out)
}

/// The enumeration a parameter attribute of `class` holds: the spec enum of the field the
/// single-bundle lowering writes `key` to (`op` → `ALU_OP`, `activation_func` → `ACT_FUNC`),
/// or `None` when no single-bundle form of the class has such an enum-typed parameter.
pub(crate) fn param_enum(
    class: InstClass,
    key: &str,
) -> Option<&'static tpbsim_isa::spec::EnumDef> {
    rules::forms_of(class).find_map(|(op, form)| {
        let loc = form.param(key)?;
        Gen::ALL.iter().find_map(|&g| {
            let meta = fields::layout_of(&fields::canonical(op), g).ok()?;
            fields::field(meta, loc).ok()?.enum_def()
        })
    })
}
