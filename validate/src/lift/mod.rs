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
mod error;
mod fields;
mod groups;
mod lifter;
mod lower;
mod rules;

#[cfg(test)]
mod tests;

use tpbsim_isa::{Bundle, Engine, Gen};

use crate::bir::{EngineType, Function, InstClass};

pub use error::{
    AttrError, FieldError, GenericError, LiftError, LiftFault, LowerError, OperandError, PlanError,
    SlotFault, ValueError,
};
pub use lifter::{lift_stream, lift_streams, locate, Lifted, LiftedStream, StreamInput};
pub use lower::{lower_instruction, Slot};

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
