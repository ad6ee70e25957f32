//! The three per-generation entry points with their documented arities, the shared format
//! cascade, and `runSingleISACheck` with its length gate, DMA-engine fence, `convert()`,
//! engine gate, format gate and v4 SP second path.

use tpbsim_isa::{Bundle, Engine, Gen, BUNDLE_SIZE};

use super::engine_gate;
use super::formats;
use super::header;
use super::rule::{rule, Allowed, Ck, Collect, Failure, Field, Gate, Silent, Sink};

/// A field standing for an entry-point argument rather than bundle bytes (length 0: no
/// bytes to mark).
pub const ARGUMENT: Field = Field::new("(argument)", 0, 0);

rule!(IS_VALID_ENUM_ENGINE, "is_valid_enum(NEURON_ENGINE)", Format,
    public "C walrus/l2-wire-validator.md (cascade step 1: is_valid_enum(4, engine))",
    "v4: the wire engine argument is a NEURON_ENGINE member (PE 0 .. SP 4)");
rule!(CORE_VERSION, "is_valid_enum(NEURON_CORE_VERSION)", Format,
    project "the v3 and v4 families are called with core version 3 and 4 by the compiler; any other value is rejected",
    "the core version argument matches the validator family");
rule!(NO_FORMAT_GATE, "is_valid_<fmt>", Format,
    project "tpbsim implements the format gates whose layouts and rules are public; other opcodes are reported as not checked",
    "the opcode's format gate");
rule!(WRONG_INSTRUCTION_LENGTH, "runSingleISACheck.length", Length,
    public "C walrus/l2-wire-validator.md (assert(len == 64, \"Wrong instruction length\"))",
    "the encoded instruction is 64 bytes");
rule!(DMA_ENGINE_FENCE, "runSingleISACheck.dma_fence", DmaFence,
    public "C walrus/l2-wire-validator.md (\"CoreV4Gen - Instruction cannot be on the DMA engine by codegen\"); condition read as: BIR engine DMA and BIR opcode not in {46, 49, 50}",
    "v4: an instruction is not on the BIR DMA engine unless it is one of the DMA BIR opcodes 46, 49, 50");
rule!(CONVERT, "convert", Engine,
    public "C walrus/l2-wire-validator.md (convert(): 1→2, 2→1, 3→0, 5→3, 6→4)",
    "the BIR engine has a wire engine (Pool, Act, PE, DVE or SP)");

/// The shared format cascade: (1) v4 engine enum, (2) header, (3) events, then the opcode's
/// format gate (per-field enums → reserved bits → dtypes → format rules).
pub fn format_cascade<S: Sink>(ck: &mut Ck<S>) {
    if let Some(e) = ck.engine {
        if Engine::from_wire_id(e).is_none() {
            ck.fail(&IS_VALID_ENUM_ENGINE, ARGUMENT, e as u64, Allowed::Max(4));
            return;
        }
    }
    let known = header::has_valid_neuron_header(ck);
    if ck.done() {
        return;
    }
    header::has_valid_neuron_events(ck);
    if !known || ck.done() {
        return;
    }
    match tpbsim_isa::FormatGate::of(ck.gen, ck.u8(0)) {
        Some(f) => formats::run(f, ck),
        None => ck.not_checked(
            &NO_FORMAT_GATE,
            header::OPCODE,
            Allowed::Text("no public format gate for this opcode"),
        ),
    }
}

fn entry<S: Sink>(
    b: &Bundle,
    gen: Gen,
    version: Option<u32>,
    engine: Option<u8>,
    gate: Gate,
    sink: &mut S,
) {
    let mut ck = Ck::new(b, gen, engine, gate, sink);
    if let Some(v) = version {
        if v != gen.core_version() {
            ck.fail(
                &CORE_VERSION,
                ARGUMENT,
                v as u64,
                Allowed::Eq(gen.core_version() as u64),
            );
            return;
        }
    }
    format_cascade(&mut ck);
}

/// core_v2 `is_valid_neuron_instruction(INST_UNION)`: the v2 format gate (no version, no
/// engine).
pub fn is_valid_neuron_instruction(b: &Bundle) -> bool {
    let mut s = Silent::default();
    entry(b, Gen::V2, None, None, Gate::Format, &mut s);
    !s.failed
}

/// core_v3 `is_valid_neuron_isa_instruction(INST_UNION, NEURON_CORE_VERSION)`.
pub fn is_valid_neuron_isa_instruction(b: &Bundle, core_version: u32) -> bool {
    let mut s = Silent::default();
    entry(b, Gen::V3, Some(core_version), None, Gate::Format, &mut s);
    !s.failed
}

/// core_v4 `is_valid_neuron_engine_instruction(INST_UNION, NEURON_CORE_VERSION,
/// NEURON_ENGINE)` with the wire engine id (PE 0, ACT 1, POOL 2, DVE 3, SP 4).
pub fn is_valid_neuron_engine_instruction(b: &Bundle, core_version: u32, engine: u8) -> bool {
    let mut s = Silent::default();
    entry(
        b,
        Gen::V4,
        Some(core_version),
        Some(engine),
        Gate::Format,
        &mut s,
    );
    !s.failed
}

/// The debug twin of [`is_valid_neuron_instruction`]: every failing rule.
pub fn debug_invalid_neuron_instruction(b: &Bundle) -> Vec<Failure> {
    let mut c = Collect::default();
    entry(b, Gen::V2, None, None, Gate::Format, &mut c);
    c.failures
}

/// The debug twin of [`is_valid_neuron_isa_instruction`].
pub fn debug_invalid_neuron_isa_instruction(b: &Bundle, core_version: u32) -> Vec<Failure> {
    let mut c = Collect::default();
    entry(b, Gen::V3, Some(core_version), None, Gate::Format, &mut c);
    c.failures
}

/// The debug twin of [`is_valid_neuron_engine_instruction`].
pub fn debug_invalid_neuron_engine_instruction(
    b: &Bundle,
    core_version: u32,
    engine: u8,
) -> Vec<Failure> {
    let mut c = Collect::default();
    entry(
        b,
        Gen::V4,
        Some(core_version),
        Some(engine),
        Gate::Format,
        &mut c,
    );
    c.failures
}

/// BIR `EngineType` ordinals (isa-facts §6.6).
pub mod bir_engine {
    /// Unassigned.
    pub const UNASSIGNED: u8 = 0;
    /// Pool (GpSimd).
    pub const POOL: u8 = 1;
    /// Activation.
    pub const ACT: u8 = 2;
    /// PE.
    pub const PE: u8 = 3;
    /// DMA.
    pub const DMA: u8 = 4;
    /// DVE.
    pub const DVE: u8 = 5;
    /// SP.
    pub const SP: u8 = 6;
    /// All engines.
    pub const ALL: u8 = 7;
}

/// The compiler's bir → wire engine remap: 1→2, 2→1, 3→0, 5→3, 6→4.
pub const fn convert(bir: u8) -> Option<Engine> {
    match bir {
        1 => Some(Engine::Pool),
        2 => Some(Engine::Act),
        3 => Some(Engine::Pe),
        5 => Some(Engine::Dve),
        6 => Some(Engine::Sp),
        _ => None,
    }
}

/// The inverse of [`convert`].
pub const fn bir_engine_of(e: Engine) -> u8 {
    match e {
        Engine::Pool => 1,
        Engine::Act => 2,
        Engine::Pe => 3,
        Engine::Dve => 5,
        Engine::Sp => 6,
    }
}

/// BIR opcodes allowed on the DMA engine by the v4 fence.
pub const DMA_BIR_OPCODES: [u16; 3] = [46, 49, 50];

/// What `runSingleISACheck` knows about the BIR instruction behind a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BirInstr {
    /// BIR opcode (`Inst+0x88`), when known.
    pub opcode: Option<u16>,
    /// BIR engine (`Inst+0x90`).
    pub engine: u8,
}

impl BirInstr {
    /// The BIR view of a bundle read from `engine`'s stream (opcode unknown).
    pub const fn from_stream(engine: Engine) -> BirInstr {
        BirInstr {
            opcode: None,
            engine: bir_engine_of(engine),
        }
    }
}

/// `CoreV{2,3,4}GenImpl::runSingleISACheck` over encoded bytes.
///
/// Runs, in order: the length gate; (v4) the DMA-engine fence; `convert()`; the engine gate
/// (v2 `instruction_engine_check`, v3/v4 `neuron_isa_check_opcode_on_engine`); the format gate
/// (v2/v3/v4 entry point); (v4) the SP second path. A silent sink stops at the first failure
/// (like the assertions); a collecting sink runs every gate and reports every failing rule,
/// except that the SP second path runs only after a clean first pass (as in the compiler).
/// Generation v5 has no L2 validator and reports nothing.
pub fn run_single_isa_check<S: Sink>(gen: Gen, instr: BirInstr, bytes: &[u8], sink: &mut S) {
    if gen == Gen::V5 {
        return;
    }
    let Some(b) = Bundle::from_slice(bytes) else {
        let z = Bundle::ZERO;
        let mut ck = Ck::new(&z, gen, None, Gate::Length, sink);
        ck.fail(
            &WRONG_INSTRUCTION_LENGTH,
            ARGUMENT,
            bytes.len() as u64,
            Allowed::Eq(BUNDLE_SIZE as u64),
        );
        return;
    };
    check_bundle_with(gen, instr, &b, sink);
}

/// `runSingleISACheck` for a bundle of known length.
pub fn check_bundle_with<S: Sink>(gen: Gen, instr: BirInstr, b: &Bundle, sink: &mut S) {
    if gen == Gen::V5 {
        return;
    }
    if gen == Gen::V4
        && instr.engine == bir_engine::DMA
        && !instr.opcode.is_some_and(|o| DMA_BIR_OPCODES.contains(&o))
    {
        let mut ck = Ck::new(b, gen, None, Gate::DmaFence, sink);
        ck.fail(
            &DMA_ENGINE_FENCE,
            ARGUMENT,
            instr.engine as u64,
            Allowed::Text("a non-DMA BIR engine"),
        );
        if S::STOP_EARLY {
            return;
        }
    }
    let Some(wire) = convert(instr.engine) else {
        let mut ck = Ck::new(b, gen, None, Gate::Engine, sink);
        ck.fail(
            &CONVERT,
            ARGUMENT,
            instr.engine as u64,
            Allowed::Text("BIR engine 1, 2, 3, 5 or 6"),
        );
        return;
    };
    {
        let mut ck = Ck::new(b, gen, None, Gate::Engine, sink);
        engine_gate::engine_gate(&mut ck, wire);
        if ck.done() {
            return;
        }
    }
    let engine = if gen == Gen::V4 {
        Some(wire.wire_id())
    } else {
        None
    };
    let mut ck = Ck::new(b, gen, engine, Gate::Format, sink);
    format_cascade(&mut ck);
    if gen == Gen::V4 && instr.engine == bir_engine::SP && !ck.sink.failed() {
        let mut ck = Ck::new(b, gen, Some(3), Gate::SpSecondPath, ck.sink);
        format_cascade(&mut ck);
    }
}

/// Check a bundle from `engine`'s stream on `gen` with the silent gate.
#[inline]
pub fn check_silent(gen: Gen, engine: Engine, b: &Bundle) -> Silent {
    let mut s = Silent::default();
    check_bundle_with(gen, BirInstr::from_stream(engine), b, &mut s);
    s
}

/// Check a bundle from `engine`'s stream on `gen` and return every failing rule (and every
/// applicable rule that could not be decided), in cascade order.
pub fn check_collect(gen: Gen, engine: Engine, b: &Bundle) -> Vec<Failure> {
    let mut c = Collect::default();
    check_bundle_with(gen, BirInstr::from_stream(engine), b, &mut c);
    c.failures
}

#[cfg(test)]
mod tests {
    use super::super::rule::Outcome;
    use super::*;

    fn names(v: &[Failure]) -> Vec<&'static str> {
        v.iter()
            .filter(|f| f.outcome == Outcome::Fail)
            .map(|f| f.rule.name)
            .collect()
    }

    fn nop() -> Bundle {
        let mut b = Bundle::ZERO;
        b.0[0] = 0xA4;
        b.0[1] = 0x10;
        b
    }

    #[test]
    fn three_entry_points() {
        let b = nop();
        assert!(is_valid_neuron_instruction(&b));
        assert!(is_valid_neuron_isa_instruction(&b, 3));
        assert!(!is_valid_neuron_isa_instruction(&b, 4));
        assert!(is_valid_neuron_engine_instruction(&b, 4, 4));
        assert!(!is_valid_neuron_engine_instruction(&b, 4, 5));
        assert_eq!(
            names(&debug_invalid_neuron_engine_instruction(&b, 4, 9)),
            ["is_valid_enum(NEURON_ENGINE)"]
        );
        assert_eq!(
            names(&debug_invalid_neuron_isa_instruction(&b, 2)),
            ["is_valid_enum(NEURON_CORE_VERSION)"]
        );
        let mut bad = b;
        bad.0[1] = 0x0F;
        assert!(!is_valid_neuron_instruction(&bad));
        assert_eq!(
            names(&debug_invalid_neuron_instruction(&bad)),
            ["has_valid_inst_len"]
        );
    }

    #[test]
    fn convert_map() {
        assert_eq!(convert(1), Some(Engine::Pool));
        assert_eq!(convert(2), Some(Engine::Act));
        assert_eq!(convert(3), Some(Engine::Pe));
        assert_eq!(convert(5), Some(Engine::Dve));
        assert_eq!(convert(6), Some(Engine::Sp));
        assert_eq!(convert(4), None);
        for e in Engine::ALL {
            assert_eq!(convert(bir_engine_of(e)), Some(e));
        }
    }

    #[test]
    fn run_single_isa_check_gates_and_codes() {
        let mut c = Collect::default();
        run_single_isa_check(
            Gen::V4,
            BirInstr {
                opcode: None,
                engine: 3,
            },
            &[0u8; 63],
            &mut c,
        );
        assert_eq!(c.failures[0].rule.name, "runSingleISACheck.length");
        assert_eq!(c.failures[0].gate.code(Gen::V4), None);

        // DMA fence on v4: a non-DMA BIR opcode on the DMA engine.
        let mut c = Collect::default();
        run_single_isa_check(
            Gen::V4,
            BirInstr {
                opcode: Some(10),
                engine: 4,
            },
            &nop().0,
            &mut c,
        );
        assert_eq!(c.failures[0].rule.name, "runSingleISACheck.dma_fence");
        let mut s = Silent::default();
        run_single_isa_check(
            Gen::V3,
            BirInstr {
                opcode: Some(10),
                engine: 4,
            },
            &nop().0,
            &mut s,
        );
        assert!(
            s.failed,
            "v3 has no fence but convert() has no wire engine for DMA"
        );

        // Wrong engine: a matmul on ACT.
        let mut mm = Bundle::ZERO;
        mm.0[0] = 0x02;
        mm.0[1] = 0x10;
        for (gen, code, rule) in [
            (Gen::V2, 1083, "instruction_engine_check"),
            (Gen::V3, 1084, "neuron_isa_check_opcode_on_engine"),
            (Gen::V4, 935, "neuron_isa_check_opcode_on_engine"),
        ] {
            let f = check_collect(gen, Engine::Act, &mm);
            assert_eq!(f[0].rule.name, rule);
            assert_eq!(f[0].gate.code(gen), Some(code));
        }
        // Format failure codes.
        let mut bad = nop();
        bad.0[1] = 0;
        for (gen, code) in [(Gen::V2, 999), (Gen::V3, 1000), (Gen::V4, 934)] {
            let f = check_collect(gen, Engine::Sp, &bad);
            assert_eq!(f[0].gate.code(gen), Some(code), "{gen}");
            assert!(check_silent(gen, Engine::Sp, &bad).failed);
            assert!(!check_silent(gen, Engine::Sp, &nop()).failed);
        }
    }

    #[test]
    fn unknown_format_is_not_checked_not_passed() {
        let mut b = Bundle::ZERO;
        b.0[0] = 0x68; // GATHER: no public format gate
        b.0[1] = 0x10;
        let s = check_silent(Gen::V3, Engine::Pool, &b);
        assert!(!s.failed && s.unchecked);
        let f = check_collect(Gen::V3, Engine::Pool, &b);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].outcome, Outcome::NotChecked);
    }
}
