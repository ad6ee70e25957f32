//! The L2 wire validator: the per-generation silicon legality cascade over encoded 64-byte
//! bundles, with field-level diagnostics.
//!
//! Three entry points keep the compiler's arities — [`is_valid_neuron_instruction`] (v2,
//! bundle), [`is_valid_neuron_isa_instruction`] (v3, bundle + core version) and
//! [`is_valid_neuron_engine_instruction`] (v4, bundle + core version + wire engine) — each
//! running the same cascade: opcode in the generation's enum and `inst_word_len == 0x10` →
//! events → per-field enums → reserved bits → dtypes → the opcode's format gate.
//! [`run_single_isa_check`] adds the length gate, the v4 DMA-engine fence, `convert()`, the
//! engine gate and the v4 SP second path, with the published assertion codes
//! (v4 935/934/2083, v3 1084/1000, v2 1083/999).
//!
//! Every rule is a small function reporting through [`rule::Ck`]; the same code serves the
//! silent gate ([`rule::Silent`], no allocation) and its debug twin ([`rule::Collect`]).
//! [`batch::validate_stream`] checks whole streams in parallel; [`report`] turns failures
//! into the shared [`crate::diag::Diagnostic`] model and renders them. See `docs/l2.md`.

pub mod addr;
pub mod batch;
pub mod cascade;
pub mod catalog;
pub mod dtype;
pub mod engine_gate;
pub mod enums;
pub mod formats;
pub mod header;
pub mod report;
pub mod rule;
pub mod runner;
pub mod table;

pub use batch::{validate_stream, StreamReport, StreamSpec, CHUNK};
pub use cascade::{
    check_collect, check_silent, convert, debug_invalid_neuron_engine_instruction,
    debug_invalid_neuron_instruction, debug_invalid_neuron_isa_instruction,
    is_valid_neuron_engine_instruction, is_valid_neuron_instruction,
    is_valid_neuron_isa_instruction, run_single_isa_check, BirInstr,
};
pub use report::{render, to_diagnostic, BundleLoc};
pub use rule::{Allowed, Failure, Field, Gate, Outcome, Provenance, Rule};
pub use runner::L2Check;

/// The generations with an L2 validator (the compiler validates v2, v3 and v4).
pub const GENS: [tpbsim_isa::Gen; 3] = [
    tpbsim_isa::Gen::V2,
    tpbsim_isa::Gen::V3,
    tpbsim_isa::Gen::V4,
];
