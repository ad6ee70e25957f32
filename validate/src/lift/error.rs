//! The lifter's and lowering's faults, one variant each with the data that names it: the
//! opcode, the field (by its spec name), the operand slot, the values found.
//!
//! [`LowerError`] says at which lowering step an instruction fails and carries the step's
//! reason ([`GenericError`], [`PlanError`], [`OperandError`], [`AttrError`]); [`LiftError`]
//! says why a bundle is kept as `Generic`, its [`LiftFault`] for a recognised group that does
//! not map to BIR. The value and field faults beneath them are [`ValueError`] (a JSON value that
//! does not fit its field), [`FieldError`] (a layout or field that is not there) and
//! [`SlotFault`] (an operand's dtype tag or partition count).

use serde_json::Value;
use tpbsim_isa::spec::FieldType;
use tpbsim_isa::{DecodeError, Gen, NumFormat};

use super::ap::ApError;
use super::lower::{mnemonic, mnemonics, Slot};
use super::{ATTR_BUNDLE, ATTR_EVENTS, ATTR_OPCODE, ATTR_PAYLOADS, ATTR_TSC_MODE, ATTR_WIRE};
use crate::bir::InstClass;

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
        reason: GenericError,
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
        reason: PlanError,
    },
    /// An operand or a derived field does not fit the chosen layouts.
    #[error("{class} on {gen}: {reason}")]
    Operands {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
        /// Which operand and what does not fit.
        reason: OperandError,
    },
    /// A parameter, `events` or `wire` attribute does not fit its field.
    #[error("{class} on {gen}: {reason}")]
    Attribute {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
        /// Which attribute (`attrs.<key>`) and what does not fit.
        reason: AttrError,
    },
    /// An encoded bundle does not decode in the target generation.
    #[error("{class} on {gen}: {error}")]
    Decode {
        /// The instruction's class.
        class: InstClass,
        /// Target generation.
        gen: Gen,
        /// The decoder's verdict.
        error: DecodeError,
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
            LowerError::GenericBundle { reason, .. } => reason.to_string(),
            LowerError::Opcode { reason, .. } => reason.to_string(),
            LowerError::Operands { reason, .. } => reason.to_string(),
            LowerError::Attribute { reason, .. } => reason.to_string(),
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
    Decode(DecodeError),
    /// A bundle of a multi-bundle group without the rest of its group.
    #[error("{0}")]
    Unpaired(&'static str),
    /// The opcode has no lifting form.
    #[error("no lifting rule for {}", mnemonic(*.opcode))]
    NoRule {
        /// The opcode.
        opcode: u8,
    },
    /// The group's operands or parameters do not map to BIR, or lowering the result does not
    /// give the bundles back byte for byte.
    #[error("{} as {class}: {reason}", mnemonics(.opcodes))]
    NotLiftable {
        /// The group's opcodes.
        opcodes: Vec<u8>,
        /// The class the group would lift to.
        class: InstClass,
        /// What does not map.
        reason: Box<LiftFault>,
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

/// Why a recognised group does not lift to a BIR instruction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiftFault {
    /// The group's opcodes bind no operands for its class, or the fan-in cannot be planned.
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// A layout or field the group's binding names is not there.
    #[error("{0}")]
    Field(#[from] FieldError),
    /// A dtype tag with no BIR dtype in its context.
    #[error("dtype tag {tag:#04x} in `{field}` has no BIR dtype on {gen}")]
    Dtype {
        /// The tag.
        tag: u8,
        /// The dtype field.
        field: &'static str,
        /// The generation.
        gen: Gen,
    },
    /// An operand descriptor that is not an access pattern.
    #[error("{field}: {error}")]
    Operand {
        /// The descriptor field.
        field: &'static str,
        /// Why it does not map.
        error: ApError,
    },
    /// The ACTIVATE bias address that is not an on-chip place.
    #[error("bias: {0}")]
    Bias(ApError),
    /// A slot of the class's operands that no bundle of the group binds.
    #[error("an operand slot is not bound by any bundle")]
    Unbound,
    /// Even with the `opcode` attribute, lowering chooses other opcodes.
    #[error("lowering does not reach {}", mnemonics(.0))]
    Unreached(Vec<u8>),
    /// The lifted operands do not build the canonical bundles.
    #[error("{0}")]
    Operands(#[from] OperandError),
    /// The kept parameters or overrides do not apply.
    #[error("{0}")]
    Attribute(#[from] AttrError),
    /// The lifted instruction does not lower.
    #[error("{0}")]
    Lower(Box<LowerError>),
    /// The lifted instruction lowers to other bytes.
    #[error("internal: lowering the lifted instruction does not reproduce the bundles")]
    NotReproduced,
}

/// What is wrong with the bundle(s) a `Generic` instruction keeps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenericError {
    /// No `bundle` attribute.
    #[error("a Generic instruction keeps its bundle in attrs.{ATTR_BUNDLE}")]
    Missing,
    /// A `bundle` entry that is not 128 hex digits.
    #[error("attrs.{ATTR_BUNDLE}: expected 128 hex digits, found {0}")]
    NotHex(Value),
}

/// Why no opcode sequence carries an instruction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The class has no binding for these opcodes.
    #[error("{class} does not lower to opcodes {}", mnemonics(.opcodes))]
    NoBinding {
        /// The instruction's class.
        class: InstClass,
        /// The opcodes.
        opcodes: Vec<u8>,
    },
    /// An `opcode` entry that is not a string.
    #[error("attrs.{ATTR_OPCODE}: expected a mnemonic, found {0}")]
    NotMnemonic(Value),
    /// An `opcode` entry naming no opcode.
    #[error("attrs.{ATTR_OPCODE}: unknown mnemonic `{0}`")]
    UnknownMnemonic(String),
    /// An `opcode` list of another length than the planned bundles.
    #[error("attrs.{ATTR_OPCODE}: {given} mnemonics for {bundles} bundles")]
    MnemonicCount {
        /// Mnemonics given.
        given: usize,
        /// Bundles planned.
        bundles: usize,
    },
    /// An `opcode` entry of another layout than the planned bundle's.
    #[error("attrs.{ATTR_OPCODE}: {} does not share the layout of {}", mnemonic(*.given), mnemonic(*.planned))]
    OtherLayout {
        /// The opcode given.
        given: u8,
        /// The opcode planned.
        planned: u8,
    },
    /// One mnemonic for a multi-bundle lowering.
    #[error(
        "attrs.{ATTR_OPCODE}: {class} lowers to {bundles} bundles; give one mnemonic per bundle"
    )]
    OneMnemonic {
        /// The instruction's class.
        class: InstClass,
        /// Bundles planned.
        bundles: usize,
    },
    /// An `opcode` that is not one of the class's single-bundle forms.
    #[error("attrs.{ATTR_OPCODE}: {} is not an opcode of {class}", mnemonic(*.opcode))]
    NotOfClass {
        /// The opcode given.
        opcode: u8,
        /// The instruction's class.
        class: InstClass,
    },
    /// A parameter the fan-in reads (an ALU op, the accumulate command) does not parse.
    #[error("{0}")]
    Attribute(#[from] AttrError),
    /// An unknown `tsc_mode`.
    #[error("attrs.{ATTR_TSC_MODE}: unknown mode `{0}` (Reduce, Cumulative, TensorScan)")]
    TscMode(String),
    /// A class with no single-bundle opcode.
    #[error("no single-bundle opcode lowers {0}")]
    NoOpcode(InstClass),
    /// A Select without its three inputs and one output.
    #[error("Select takes [predicate, on_true, on_false] and one output")]
    SelectOperands,
    /// A `payload_bundles` that is not a count below 4096.
    #[error("attrs.{ATTR_PAYLOADS}: expected a count, found {0}")]
    PayloadCount(Value),
    /// A matmul with neither one nor two inputs.
    #[error("{class} takes 1 (weights already loaded) or 2 inputs, found {found}")]
    PeInputs {
        /// The instruction's class.
        class: InstClass,
        /// Inputs found.
        found: usize,
    },
}

/// Why an instruction's operands do not build its bundles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperandError {
    /// Another number of inputs or outputs than the bundles bind.
    #[error("{class} lowered to {} takes {args} input(s) and {outs} output(s), found {found_args} and {found_outs}", mnemonics(.opcodes))]
    Arity {
        /// The instruction's class.
        class: InstClass,
        /// The opcodes it lowers to.
        opcodes: Vec<u8>,
        /// Inputs the bundles bind.
        args: usize,
        /// Outputs the bundles bind.
        outs: usize,
        /// Inputs found.
        found_args: usize,
        /// Outputs found.
        found_outs: usize,
    },
    /// A layout or field the binding names is not there.
    #[error("{0}")]
    Field(#[from] FieldError),
    /// A bound slot the instruction does not have.
    #[error("{class} has no {slot:?} operand")]
    Missing {
        /// The instruction's class.
        class: InstClass,
        /// The slot.
        slot: Slot,
    },
    /// An access pattern that does not encode as its descriptor.
    #[error("{slot:?} ({field}): {error}")]
    Descriptor {
        /// The slot.
        slot: Slot,
        /// The descriptor field.
        field: &'static str,
        /// Why it does not encode.
        error: ApError,
    },
    /// An operand's dtype tag or partition count does not fit.
    #[error("{slot:?}: {fault}")]
    Slot {
        /// The slot.
        slot: Slot,
        /// What does not fit.
        fault: SlotFault,
    },
    /// MX scales of another dtype than E8M0 bytes.
    #[error("{slot:?}: MX scales are E8M0 bytes, not {dtype}")]
    MxScale {
        /// The scale slot.
        slot: Slot,
        /// Its dtype.
        dtype: NumFormat,
    },
    /// An activation bias of more than one value per partition.
    #[error("{slot:?}: the activation bias is one value per partition, not {elements}")]
    BiasElements {
        /// The bias slot.
        slot: Slot,
        /// Its elements per partition.
        elements: u64,
    },
    /// An activation bias with no encodable address.
    #[error("{slot:?} (bias): {error}")]
    BiasAddress {
        /// The bias slot.
        slot: Slot,
        /// Why it does not encode.
        error: ApError,
    },
    /// A matmul without its PSUM output.
    #[error("a matmul writes one PSUM output")]
    MatmulOutput,
    /// A matmul without the input a bundle reads.
    #[error("missing matmul input")]
    MatmulInput,
    /// More matmul output partitions than `num_active_cols` holds.
    #[error("{partitions} output partitions do not fit num_active_cols")]
    MatmulCols {
        /// Output partitions.
        partitions: u64,
    },
    /// A transpose on v2, whose matmul layout has no transpose marker.
    #[error("no transpose marker is known for the v2 matmul layout")]
    TransposeV2,
    /// MatmultMx class fields the MX layouts cannot carry.
    #[error("MatmultMx replication shift and tiles have no field in the 0x09/0x0A layouts")]
    MxFields,
    /// A MatmultMx without its PSUM output.
    #[error("MatmultMx writes one PSUM output")]
    MxOutput,
    /// A MatmultMx without the data a bundle reads.
    #[error("missing MX data")]
    MxData,
    /// More MatmultMx output partitions than `num_active_cols` holds.
    #[error("output partitions do not fit num_active_cols")]
    MxCols,
}

/// What does not fit in an operand's dtype tag or partition-count field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotFault {
    /// A layout or field the binding names is not there.
    #[error("{0}")]
    Field(#[from] FieldError),
    /// A dtype with no tag for this operand.
    #[error("{dtype} has no wire tag for this operand on {gen}")]
    NoWireTag {
        /// The dtype.
        dtype: NumFormat,
        /// The generation.
        gen: Gen,
    },
    /// Another dtype than the one an operand without a dtype field has.
    #[error("this operand is {fixed} on {gen} (no dtype field), not {dtype}")]
    FixedDtype {
        /// The operand's dtype.
        fixed: NumFormat,
        /// The generation.
        gen: Gen,
        /// The dtype given.
        dtype: NumFormat,
    },
    /// A tag too wide for a dtype-pair nibble.
    #[error("{dtype} (tag {tag:#04x}) does not fit a 4-bit dtype nibble")]
    WideTag {
        /// The dtype.
        dtype: NumFormat,
        /// Its tag.
        tag: u8,
    },
    /// Two operands of one bundle with different counts for a shared partition field.
    #[error("operands disagree on `{field}`: {first} vs {second} partitions")]
    PartsDisagree {
        /// The partition-count field.
        field: &'static str,
        /// The count written first.
        first: u64,
        /// The other count.
        second: u64,
    },
    /// A partition count above the field's byte.
    #[error("{partitions} partitions do not fit `{field}`")]
    PartsWidth {
        /// The count.
        partitions: u64,
        /// The partition-count field.
        field: &'static str,
    },
}

/// Why a parameter, `events` or `wire` attribute does not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttrError {
    /// A parameter value that does not fit its field.
    #[error("attrs.{key}: {error}")]
    Value {
        /// The attribute.
        key: &'static str,
        /// Why it does not fit.
        error: ValueError,
    },
    /// A parameter the primary bundle's layout has no field for.
    #[error("attrs.{key}: the {layout} layout has no such field")]
    NoParamField {
        /// The attribute.
        key: &'static str,
        /// The layout.
        layout: &'static str,
    },
    /// A per-bundle list of another length than the bundles.
    #[error("attrs.{key}: {found} entries for {bundles} bundles")]
    EntryCount {
        /// The attribute.
        key: &'static str,
        /// Entries found.
        found: usize,
        /// Bundles.
        bundles: usize,
    },
    /// A per-bundle attribute that is not a list.
    #[error("attrs.{key}: expected an array (one entry per bundle), found {found}")]
    NotPerBundle {
        /// The attribute.
        key: &'static str,
        /// The value found.
        found: Value,
    },
    /// An `events` entry that does not fit.
    #[error("attrs.{ATTR_EVENTS}[{bundle}]: {error}")]
    Events {
        /// The bundle.
        bundle: usize,
        /// Why it does not fit.
        error: ValueError,
    },
    /// A `wire` entry that is not an object.
    #[error("attrs.{ATTR_WIRE}[{bundle}]: expected an object, found {found}")]
    WireNotObject {
        /// The bundle.
        bundle: usize,
        /// The value found.
        found: Value,
    },
    /// A `wire` key naming no leaf of the bundle's layout.
    #[error("attrs.{ATTR_WIRE}[{bundle}]: the {layout} layout has no field `{name}`")]
    WireNoField {
        /// The bundle.
        bundle: usize,
        /// The layout.
        layout: &'static str,
        /// The key.
        name: String,
    },
    /// A `wire` value that does not fit its leaf.
    #[error("attrs.{ATTR_WIRE}[{bundle}].{name}: {error}")]
    Wire {
        /// The bundle.
        bundle: usize,
        /// The leaf.
        name: String,
        /// Why it does not fit.
        error: ValueError,
    },
    /// An `fp32_mode` on the two-pass float32 form.
    #[error("attrs.fp32_mode: {0} conflicts with the two-pass float32 form (Low then High)")]
    Fp32TwoPass(Value),
    /// An `fp32_mode` on a float32r input.
    #[error("attrs.fp32_mode: {0} conflicts with the float32r input (fp32_mode High)")]
    Fp32Float32r(Value),
    /// `fp32_mode` High on a float32 input in one pass.
    #[error("attrs.fp32_mode: High on a float32 input in one pass is the dtype float32r; write that instead")]
    Fp32High,
}

/// A layout or field that is not there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// The opcode's canonical bundle does not decode in the generation.
    #[error("{0}")]
    Layout(DecodeError),
    /// A raw layout, whose fields are not published.
    #[error("no typed layout in this generation (field `{field}` not published)")]
    Unpublished {
        /// The field.
        field: &'static str,
    },
    /// A layout without the field.
    #[error("layout {layout} has no field `{field}`")]
    Missing {
        /// The layout.
        layout: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A field whose type is not a descriptor.
    #[error("field `{field}` is {ty:?}, not a descriptor")]
    NotDescriptorType {
        /// The field.
        field: &'static str,
        /// Its type.
        ty: FieldType,
    },
    /// A field that does not read as a descriptor.
    #[error("field `{field}` is not a descriptor")]
    NotDescriptor {
        /// The field.
        field: &'static str,
    },
    /// A field that does not read as an MXMEM_PATTERN1D.
    #[error("field `{field}` is not an MXMEM_PATTERN1D")]
    NotMx {
        /// The field.
        field: &'static str,
    },
}

/// A JSON value that does not fit the field or leaf it is written to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Not an integer.
    #[error("expected an integer, found {0}")]
    NotInteger(Value),
    /// An integer wider than the field.
    #[error("{value} does not fit {width} byte(s)")]
    IntWidth {
        /// The integer.
        value: i128,
        /// The field's bytes.
        width: usize,
    },
    /// Not a string of hex digits.
    #[error("expected a hex string, found {0}")]
    NotHexString(Value),
    /// A string that is not hex.
    #[error("`{0}` is not hex")]
    NotHex(String),
    /// Hex of another length than the leaf.
    #[error("{len} byte(s) of hex do not fit {width} byte(s) at offset {offset}")]
    HexWidth {
        /// Bytes given.
        len: usize,
        /// Bytes of the leaf.
        width: usize,
        /// The leaf's offset.
        offset: usize,
    },
    /// A nibble above 15.
    #[error("{0} does not fit a 4-bit nibble")]
    Nibble(u8),
    /// A float given as a string that is not `0x` bits.
    #[error("`{0}` is neither a number nor 0x-prefixed float bits")]
    FloatBits(String),
    /// A JSON number with no f64 reading.
    #[error("{0} is not a number")]
    NotF64(serde_json::Number),
    /// A number binary32 does not hold exactly (the f64's bits).
    #[error("{} is not exactly a binary32 value", f64::from_bits(*.0))]
    NotBinary32(u64),
    /// Not a number.
    #[error("expected a number, found {0}")]
    NotNumber(Value),
    /// Not a string.
    #[error("expected a string, found {0}")]
    NotString(Value),
    /// A string longer than its field, or holding a NUL.
    #[error("`{text}` does not fit {width} byte(s) without NULs")]
    StrWidth {
        /// The string.
        text: String,
        /// The field's bytes.
        width: usize,
    },
    /// Not an object.
    #[error("expected an object, found {0}")]
    NotObject(Value),
    /// An unknown key of an extended events object.
    #[error("unknown key `{0}`")]
    UnknownKey(String),
    /// A list of another length than the field's leaves.
    #[error("expected {count} value(s), found {found}")]
    Count {
        /// Leaves of the field.
        count: usize,
        /// The value found.
        found: Value,
    },
    /// A name that is not a value of the field's enumeration.
    #[error("`{name}` is not a {enumeration} value")]
    NotEnumValue {
        /// The name.
        name: String,
        /// The enumeration.
        enumeration: &'static str,
    },
    /// An `events` entry that is neither an object nor `null`.
    #[error("expected an object or null, found {0}")]
    NotEventsObject(Value),
    /// An unknown `events` key.
    #[error("unknown events key `{0}`")]
    UnknownEventsKey(String),
}
