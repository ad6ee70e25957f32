//! BIR, the compiler's IR, as tpbsim models it: a [`Module`] for one architecture level holds
//! functions, a function holds basic blocks, a block holds instructions; an instruction has a
//! class ([`InstClass`]), an assigned engine ([`EngineType`]), input and output
//! [`AccessPattern`]s and class-specific fields. Structured regions (`Loop`, `DynamicForLoop`,
//! `DoWhile`, `DMABlock`) hold their own body blocks.
//!
//! [`json`] reads and writes the BIR JSON form documented in `docs/bir-json.md`.

mod class;
mod enums;
pub mod json;
mod model;

pub use class::InstClass;
pub use enums::{
    ArchLevel, CollectiveKind, EngineSet, EngineType, MemSet, MemoryType, PsumGeometry,
    NUM_PARTITIONS,
};
pub use json::{
    from_json_str, from_json_value, to_json_string, to_json_value, write_json, BirJsonError,
};
pub use model::{
    instruction_label, AccessPattern, Block, ClassFields, CollectiveFields, Dim, FieldsKind,
    Function, InstRef, Instruction, MatmultMxFields, Module, MxTiles, NkiKernelFields, Sb2SbFields,
    ATTR_SKIP_ENGINE_CHECK, EXACT_SET_LIMIT,
};
