//! The per-class driver table of the L1 verifier, and the catalog-derived engine data it and
//! the L0 table fall back on.
//!
//! Each compiler `visitInst<Op>` driver is a short sequence of calls into the shared helpers
//! with op-specific parameters: the legal engine vector, the arch window, the allowed memory
//! types per operand, the valid dtypes. Here those parameters are data, one [`ClassRule`] per
//! class, and the shared-helper rules read it. Where the seeds give the value it is marked
//! [`Src::Seed`]; everything else is [`Src::Project`] (`project-defined`), and diagnostics
//! produced from such data say so.

use crate::bir::{ArchLevel, EngineSet, EngineType, InstClass, MemSet, MemoryType};
use tpbsim_isa::NumFormat;

/// Where a table value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// Stated by a seed document or another public source (the compiler's own output, the
    /// NKI documentation); the text names where.
    Seed(&'static str),
    /// `project-defined`: no public source; the text says how tpbsim chose it.
    Project(&'static str),
}

impl Src {
    /// True for project-defined data.
    pub const fn is_project(self) -> bool {
        matches!(self, Src::Project(_))
    }

    /// The explanation.
    pub const fn note(self) -> &'static str {
        match self {
            Src::Seed(s) | Src::Project(s) => s,
        }
    }
}

use EngineType as E;

/// {Unassigned}: kernels; only wildcard-assigned instructions pass.
pub const UNASSIGNED: EngineSet = EngineSet::of(&[E::Unassigned]);
/// {Pool}
pub const POOL: EngineSet = EngineSet::of(&[E::Pool]);
/// {Act}
pub const ACT: EngineSet = EngineSet::of(&[E::Act]);
/// {PE}
pub const PE: EngineSet = EngineSet::of(&[E::Pe]);
/// {DVE}
pub const DVE: EngineSet = EngineSet::of(&[E::Dve]);
/// {Pool, DVE}
pub const POOL_DVE: EngineSet = EngineSet::of(&[E::Pool, E::Dve]);
/// {Act, DVE}
pub const ACT_DVE: EngineSet = EngineSet::of(&[E::Act, E::Dve]);
/// {ALL}: the control-flow wildcard.
pub const ALL: EngineSet = EngineSet::of(&[E::All]);
/// The six concrete engines.
pub const CONCRETE: EngineSet = EngineSet::of(&E::CONCRETE);
/// The generic base's full vector {0, 3, 2, 1, 4, 5, 6, 7}.
pub const ANY8: EngineSet = EngineSet::of(&E::ALL_TYPES);

/// Engine data the opcode catalog implies for a class, and the generations that carry its
/// opcodes (facts §5.1 engine column and presence flags, §5.5). `project-defined`: the
/// compiler's own per-op tables are not public.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogRow {
    /// Engines the opcode ledger names.
    pub engines: EngineSet,
    /// First level with the class's opcodes.
    pub min: Option<ArchLevel>,
    /// Last level with the class's opcodes.
    pub max: Option<ArchLevel>,
}

const fn row(engines: EngineSet, min: Option<ArchLevel>, max: Option<ArchLevel>) -> CatalogRow {
    CatalogRow { engines, min, max }
}

/// The catalog row of a class.
pub const fn catalog(c: InstClass) -> CatalogRow {
    use ArchLevel::*;
    use InstClass as C;
    match c {
        C::Generic
        | C::GenericCopy
        | C::GenericRelu
        | C::AbstractCopy
        | C::SwitchQueueInstance
        | C::ResetQueueInstance
        | C::Collective
        | C::CollectiveCompute
        | C::CollectiveSend
        | C::CollectiveRecv
        | C::AllReduce
        | C::AllGather
        | C::ReduceScatter
        | C::AllToAll
        | C::AllToAllV
        | C::SendRecv
        | C::Permute => row(CONCRETE, None, None),
        C::Activation
        | C::ReadActivationAccumulator
        | C::LoadActFuncSet
        | C::ActivationReadAccumulator
        | C::ActivationQuantize => row(ACT, None, None),
        C::ActivationMultipass => row(ACT, Some(CoreV5), None),
        C::MatmultBase | C::Matmult | C::LoadWeights | C::PeRegWrite | C::Transpose => {
            row(PE, None, None)
        }
        C::MatmultSparse => row(PE, Some(Gen3), None),
        C::MatmultMx | C::PeManageSeed => row(PE, Some(CoreV4), None),
        C::Memset
        | C::Reciprocal
        | C::TensorCopy
        | C::TensorCopyDynamicSrc
        | C::TensorCopyDynamicDst
        | C::TensorReduce
        | C::TensorScalar
        | C::TensorScalarCache
        | C::TensorTensor
        | C::Select
        | C::CopyPredicated
        | C::Iota
        | C::Dropout
        | C::TensorScalarAffineSelect
        | C::Cast
        | C::ScalarTensorTensor
        | C::TensorTensorScan
        | C::GetRandState
        | C::SetRandState
        | C::Rand
        | C::RandSetState
        | C::RandGetState
        | C::Rng => row(POOL_DVE, None, None),
        C::NonzeroWithCount => row(POOL_DVE, Some(Gen3), None),
        C::Pool
        | C::TensorScalarPtr
        | C::IndirectCopy
        | C::StreamShuffle
        | C::StreamTranspose
        | C::Gather
        | C::TensorDequantize
        | C::Sort
        | C::CrossLaneReduce
        | C::TensorCumulative
        | C::CustomOp
        | C::InlineAsmBytes => row(POOL, None, None),
        C::GetSequenceBounds | C::GpsimdSb2Sb => row(POOL, Some(Gen3), None),
        C::BnStats
        | C::BnStatsAggregate
        | C::BnGradients
        | C::BnBackprop
        | C::BnBackprop2
        | C::Max
        | C::MaxIndex
        | C::MatchReplace
        | C::MaxIndexAndMatchReplace
        | C::DveReadAccumulator => row(DVE, None, None),
        C::RangeSelect => row(DVE, Some(Gen3), None),
        C::QuantizeMx | C::Rand2 | C::SparsityCompress => row(DVE, Some(CoreV4), None),
        // Ledger ACT (compiler page) versus DVE (firmware ledger): facts §10 #28, open.
        C::Exponential => row(ACT_DVE, None, None),
        C::Dma
        | C::Load
        | C::Save
        | C::DmaCopy
        | C::DmaTrigger
        | C::DmaDescriptor
        | C::DmaDescriptorCopy
        | C::DmaDescriptorCce
        | C::DmaDescriptorTranspose
        | C::DmaDescriptorReplicate
        | C::GenericIndirectLoad
        | C::IndirectLoad
        | C::GenericIndirectSave
        | C::IndirectSave
        | C::IndirectSaveAccumulate
        | C::TensorLoad
        | C::TensorSave
        | C::DmaBlock
        | C::BirKernel
        | C::NkiKernel
        | C::NkiKlirKernel => row(CONCRETE, None, None),
        C::DmaTranspose => row(CONCRETE, Some(Gen3), None),
        C::GetGlobalRankId
        | C::NoOp
        | C::EventSemaphore
        | C::GroupResetSemaphores
        | C::AllEngineBarrier
        | C::Drain
        | C::Halt
        | C::ReadVarAddr
        | C::DevicePrint
        | C::GetCurProcessingRankId
        | C::RegisterAlu
        | C::RegisterMove
        | C::Terminator
        | C::CompareAndBranch
        | C::UnconditionalBranch
        | C::BranchHint
        | C::Return
        | C::Exit
        | C::Break
        | C::Call
        | C::CoreBarrier
        | C::TensorCompletion
        | C::Loop
        | C::DynamicForLoop
        | C::DoWhile
        | C::Wait
        | C::Signal => row(CONCRETE, None, None),
        C::TongaReduceMacroSymbolic => row(CONCRETE, None, Some(Inferentia)),
    }
}

/// The legal engine vector an L1 driver passes to `checkValidEngines`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineRule {
    /// One set for every level.
    Fixed(EngineSet, Src),
    /// A set per level (`Rng`); levels not listed use the fallback.
    PerArch(&'static [(ArchLevel, EngineSet)], EngineSet, Src),
}

impl EngineRule {
    /// The legal set at `arch`.
    pub fn at(&self, arch: ArchLevel) -> EngineSet {
        match *self {
            EngineRule::Fixed(s, _) => s,
            EngineRule::PerArch(rows, fallback, _) => rows
                .iter()
                .find(|(a, _)| *a == arch)
                .map_or(fallback, |(_, s)| *s),
        }
    }

    /// Provenance.
    pub fn src(&self) -> Src {
        match *self {
            EngineRule::Fixed(_, s) | EngineRule::PerArch(_, _, s) => s,
        }
    }
}

/// The `checkArchLevel(min, max)` window of a driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchWindow {
    /// Lowest legal level.
    pub min: Option<ArchLevel>,
    /// Highest legal level.
    pub max: Option<ArchLevel>,
    /// Provenance.
    pub src: Src,
}

impl ArchWindow {
    /// True when `arch` is inside the window.
    pub fn contains(&self, arch: ArchLevel) -> bool {
        self.min.is_none_or(|m| arch >= m) && self.max.is_none_or(|m| arch <= m)
    }
}

/// Memory types a driver passes to `checkMemType`, for inputs and outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemRule {
    /// Allowed for every input.
    pub args: MemSet,
    /// Allowed for every output.
    pub outs: MemSet,
    /// Provenance.
    pub src: Src,
}

/// A set of dtypes (bit `n` = ordinal `n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtypeSet(pub u32);

impl DtypeSet {
    /// Every dtype.
    pub const ANY: DtypeSet = DtypeSet((1 << 20) - 1);

    /// Set of the given dtypes.
    pub const fn of(d: &[NumFormat]) -> DtypeSet {
        let mut bits = 0u32;
        let mut i = 0;
        while i < d.len() {
            bits |= 1 << d[i] as u8;
            i += 1;
        }
        DtypeSet(bits)
    }

    /// Every dtype except the given ones.
    pub const fn except(d: &[NumFormat]) -> DtypeSet {
        DtypeSet(DtypeSet::ANY.0 & !DtypeSet::of(d).0)
    }

    /// Membership.
    pub const fn contains(self, d: NumFormat) -> bool {
        self.0 & (1 << d as u8) != 0
    }
}

impl std::fmt::Display for DtypeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if *self == DtypeSet::ANY {
            return f.write_str("{any}");
        }
        f.write_str("{")?;
        let mut first = true;
        for d in NumFormat::ALL.into_iter().filter(|d| self.contains(*d)) {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            f.write_str(d.name())?;
        }
        f.write_str("}")
    }
}

/// Valid dtypes per operand (`getSrcValidDtypes` / `getDstValidDtypes`; the compiler keeps
/// these sets in the BIR op classes, which are not public, so every policy is
/// `project-defined`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtypeRule {
    /// Valid for input `i` (the last entry repeats for further inputs).
    pub args: &'static [DtypeSet],
    /// Valid for every output.
    pub outs: DtypeSet,
    /// How the sets were chosen.
    pub src: Src,
}

impl DtypeRule {
    /// Valid set for input `i`.
    pub fn arg(&self, i: usize) -> DtypeSet {
        self.args
            .get(i)
            .or(self.args.last())
            .copied()
            .unwrap_or(DtypeSet::ANY)
    }
}

/// Which `checkLegalPartitionAccess` variant a driver applies to SB/PSUM operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionRule {
    /// Only the partition bound (no access beyond the memory's partitions).
    Bounds,
    /// The bound plus the half-array rules: start at partition 0 or 64, never cross 64.
    Halves,
}

/// One L1 driver: everything the shared helpers need for a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassRule {
    /// The class.
    pub class: InstClass,
    /// Legal engines.
    pub engines: EngineRule,
    /// Legal levels.
    pub arch: ArchWindow,
    /// Memory types.
    pub mem: MemRule,
    /// Dtypes.
    pub dtypes: DtypeRule,
    /// Partition-access variant.
    pub partitions: PartitionRule,
}

const fn fixed(s: EngineSet, src: Src) -> EngineRule {
    EngineRule::Fixed(s, src)
}

const CAT_ENGINES: Src =
    Src::Project("the opcode catalog's engine column for the class's opcodes (facts §5.1)");
const CAT_ARCH: Src = Src::Project(
    "the generations whose opcode enum carries the class's opcodes (facts §5.1, §5.5)",
);
const GENERIC_SRC: Src = Src::Seed("seed 000: visitInstGeneric builds the full vector {0,3,2,1,4,5,6,7} and checkArchLevel(min=20)");

const MEM_ANY: MemRule = MemRule {
    args: MemSet::ANY,
    outs: MemSet::ANY,
    src: Src::Project("no memory restriction known"),
};
const MEM_ONCHIP: MemRule = MemRule {
    args: MemSet::of(&[MemoryType::Sb, MemoryType::Psum]),
    outs: MemSet::of(&[MemoryType::Sb, MemoryType::Psum]),
    src: Src::Project("compute engines read and write the on-chip SBUF and PSUM only"),
};
const MEM_PE: MemRule = MemRule {
    args: MemSet::of(&[MemoryType::Sb]),
    outs: MemSet::of(&[MemoryType::Psum]),
    src: Src::Project("the PE array streams from SBUF and accumulates into PSUM (L2 mm_dst_mem3d_valid: destination PSUM)"),
};
const MEM_CUSTOM_OP: MemRule = MemRule {
    args: MemSet::of(&[MemoryType::Sb, MemoryType::Input]),
    outs: MemSet::of(&[MemoryType::Sb, MemoryType::Output]),
    src: Src::Project("seed 000 gives inputs {16 (SB), 2 (Input), …}; the elided members and the output set are project-defined"),
};

const NO_64_FP32R_X4: DtypeSet = DtypeSet::except(&[
    NumFormat::Uint64,
    NumFormat::Int64,
    NumFormat::Float32r,
    NumFormat::Float4E2m1fnX4,
    NumFormat::Float8E4m3fnX4,
    NumFormat::Float8E5m2X4,
]);
const X4: DtypeSet = DtypeSet::of(&[
    NumFormat::Float4E2m1fnX4,
    NumFormat::Float8E4m3fnX4,
    NumFormat::Float8E5m2X4,
]);
const E8M0: DtypeSet = DtypeSet::of(&[NumFormat::Uint8, NumFormat::Float8E8m0fnu]);
/// PSUM destination dtypes of a matmul (L2 `mm_dst_mem3d_valid_nc_v4`: wire tags 4..=11).
const MM_OUT: DtypeSet = DtypeSet::of(&[
    NumFormat::Int16,
    NumFormat::Uint16,
    NumFormat::Bfloat16,
    NumFormat::Float16,
    NumFormat::Int32,
    NumFormat::Uint32,
    NumFormat::Float32,
    NumFormat::Float32r,
]);
const NO_64_X4: DtypeSet = DtypeSet::except(&[
    NumFormat::Uint64,
    NumFormat::Int64,
    NumFormat::Float4E2m1fnX4,
    NumFormat::Float8E4m3fnX4,
    NumFormat::Float8E5m2X4,
]);
const BN: DtypeSet = DtypeSet::of(&[NumFormat::Bfloat16, NumFormat::Float16, NumFormat::Float32]);

const DT_ANY: DtypeRule = DtypeRule {
    args: &[DtypeSet::ANY],
    outs: DtypeSet::ANY,
    src: Src::Project("no dtype restriction known"),
};
const DT_COMPUTE: DtypeRule = DtypeRule {
    args: &[NO_64_FP32R_X4],
    outs: NO_64_FP32R_X4,
    src: Src::Project("compute engines take no 64-bit, float32r or x4-packed operands (L2 32-bit dtype path; x4 only on MX paths)"),
};
const DT_COPY: DtypeRule = DtypeRule {
    args: &[NO_64_X4],
    outs: NO_64_X4,
    src: Src::Project("copies and casts take no 64-bit or x4-packed operands"),
};
const DT_MATMUL: DtypeRule = DtypeRule {
    args: &[NO_64_X4],
    outs: MM_OUT,
    src: Src::Project("matmul inputs: no 64-bit or x4 (x4 is MatmultMx only); PSUM outputs: wire tags 4..=11 (L2 mm_dst_mem3d_valid_nc_v4)"),
};
const DT_MX: DtypeRule = DtypeRule {
    args: &[X4, X4, E8M0, E8M0],
    outs: MM_OUT,
    src: Src::Project("MX data in the x4 containers {2, 8, 9}, scales as E8M0 bytes (uint8 / float8_e8m0fnu), PSUM out as a matmul"),
};
const DT_BN: DtypeRule = DtypeRule {
    args: &[BN],
    outs: BN,
    src: Src::Project("batch-norm statistics in bfloat16, float16, float32 (L2 is_valid_s4d2_bn dtypes {6, 7, 10})"),
};
const DT_QUANTIZE_MX: DtypeRule = DtypeRule {
    args: &[NO_64_FP32R_X4],
    outs: DtypeSet(X4.0 | E8M0.0),
    src: Src::Project("QuantizeMx reads plain values and writes x4 containers plus E8M0 scales"),
};

/// The decoded levels (those with a generation), oldest first.
const DECODED_LEVELS: [ArchLevel; 4] = [
    ArchLevel::Sunda,
    ArchLevel::Gen3,
    ArchLevel::CoreV4,
    ArchLevel::CoreV5,
];

/// The BIR engines of a spec engine-class set (PE, ACT, POOL, DVE; DMA as SP; NX as every
/// concrete engine), as `OpcodeRow::runs_on` maps them to wire engines.
const fn engine_set_of(c: tpbsim_isa::spec::EngineClass) -> EngineSet {
    use tpbsim_isa::spec::EngineClass as K;
    if c.contains(K::NX) {
        return CONCRETE;
    }
    let mut s = EngineSet::EMPTY;
    if c.contains(K::PE) {
        s = s.union(PE);
    }
    if c.contains(K::ACT) {
        s = s.union(ACT);
    }
    if c.contains(K::POOL) {
        s = s.union(POOL);
    }
    if c.contains(K::DVE) {
        s = s.union(DVE);
    }
    if c.contains(K::DMA) {
        s = s.union(EngineSet::of(&[E::Sp]));
    }
    s
}

/// `base` plus, per decoded level, the engines the spec's per-generation engine legality rows
/// (`spec::ENGINE_LEGAL`) add to any of `codes` on that level's generation: the L1 engine set
/// of a class whose instructions are those opcodes, read from the same data as the L2 engine
/// gate and the disassembler.
const fn with_spec_legality(base: EngineSet, codes: &[u8]) -> [(ArchLevel, EngineSet); 4] {
    let mut out = [(ArchLevel::Sunda, base); 4];
    let mut l = 0;
    while l < DECODED_LEVELS.len() {
        let level = DECODED_LEVELS[l];
        let gi = match level.gen() {
            Some(g) => g.index(),
            None => panic!("a decoded level has a generation"),
        };
        let mut s = base;
        let mut k = 0;
        while k < codes.len() {
            let mut i = 0;
            while i < tpbsim_isa::spec::OPCODES.len() {
                let r = &tpbsim_isa::spec::OPCODES[i];
                if r.code == codes[k] {
                    s = s.union(engine_set_of(tpbsim_isa::spec::legal_engine_classes(r, gi)));
                }
                i += 1;
            }
            k += 1;
        }
        out[l] = (level, s);
        l += 1;
    }
    out
}

/// TensorCopy / Cast (COPY 0x46, CAST 0x47): the catalog's {Pool, DVE} plus ACT from gen3.
const COPY_CAST_ENGINES: [(ArchLevel, EngineSet); 4] = with_spec_legality(POOL_DVE, &[0x46, 0x47]);

const COPY_CAST_SRC: Src = Src::Seed(
    "the spec's engine column plus its per-generation engine legality rows for COPY 0x46 / CAST 0x47 (isa/spec/opcodes.rs ENGINE_LEGAL: emitted by neuronx-cc 2.23 on ACT in Trn2 NEFFs; NKI nki.isa.tensor_copy: NeuronCore v2 Vector, GpSimd; v3+ Vector, Scalar, GpSimd)",
);

/// The L1 driver of a class.
pub const fn class_rule(c: InstClass) -> ClassRule {
    use InstClass as C;
    let cat = catalog(c);
    let cat_arch = ArchWindow {
        min: cat.min,
        max: cat.max,
        src: CAT_ARCH,
    };
    let mut r = ClassRule {
        class: c,
        engines: fixed(cat.engines, CAT_ENGINES),
        arch: cat_arch,
        mem: MEM_ANY,
        dtypes: DT_ANY,
        partitions: PartitionRule::Bounds,
    };
    match c {
        C::Generic | C::SwitchQueueInstance | C::ResetQueueInstance | C::Collective => {
            r.engines = fixed(ANY8, GENERIC_SRC);
            r.arch = ArchWindow {
                min: Some(ArchLevel::Sunda),
                max: None,
                src: GENERIC_SRC,
            };
        }
        C::GenericCopy | C::GenericRelu | C::AbstractCopy => {
            r.engines = fixed(
                ANY8,
                Src::Project("members of the generic family take the generic base's vector"),
            );
            r.arch = ArchWindow {
                min: Some(ArchLevel::Sunda),
                max: None,
                src: Src::Project("members of the generic family take the generic base's min=20"),
            };
        }
        C::Pool => {
            r.engines = fixed(DVE, Src::Seed("seed 002: visitInstPool builds {5} = {DVE}"));
            r.mem = MEM_ONCHIP;
            r.dtypes = DT_COMPUTE;
        }
        C::Memset => {
            r.engines = fixed(
                POOL_DVE,
                Src::Seed("seed 002: visitInstMemset builds {DVE=5, Pool=1}"),
            );
            r.mem = MEM_ONCHIP;
            r.dtypes = DT_COPY;
        }
        C::Activation => {
            r.engines = fixed(
                ACT,
                Src::Seed("seed 000: visitInstActivation builds {2} = {Act}"),
            );
            r.mem = MEM_ONCHIP;
            r.dtypes = DT_COMPUTE;
        }
        C::BirKernel => {
            r.engines = fixed(
                UNASSIGNED,
                Src::Seed("seed 000: visitInstBIRKernel passes {0} (Unassigned)"),
            );
            r.arch = ArchWindow {
                min: Some(ArchLevel::Sunda),
                max: None,
                src: Src::Seed("seed 000: visitInstBIRKernel checkArchLevel(min=20)"),
            };
        }
        C::NkiKernel | C::NkiKlirKernel => {
            r.engines = fixed(
                UNASSIGNED,
                Src::Seed("seed 000: NKI kernel drivers pass {0} (Unassigned)"),
            );
        }
        C::CustomOp => {
            r.engines = fixed(
                POOL,
                Src::Seed("seed 000: visitInstCustomOp passes {1} (Pool)"),
            );
            r.arch = ArchWindow {
                min: Some(ArchLevel::Sunda),
                max: None,
                src: Src::Seed("seed 000: visitInstCustomOp checkArchLevel(min=20)"),
            };
            r.mem = MEM_CUSTOM_OP;
        }
        C::InlineAsmBytes => {
            r.engines = fixed(
                POOL,
                Src::Seed("seed 000: visitInstInlineASMBytes passes {1} (Pool)"),
            );
        }
        C::UnconditionalBranch
        | C::Return
        | C::Call
        | C::CompareAndBranch
        | C::BranchHint
        | C::Loop
        | C::DynamicForLoop
        | C::DoWhile => {
            r.engines = fixed(
                ALL,
                Src::Seed("seed 000: control-flow drivers pass the wildcard {7} (ALL)"),
            );
        }
        C::Rng => {
            r.engines = EngineRule::PerArch(
                &[(ArchLevel::Sunda, DVE)],
                POOL_DVE,
                Src::Project("seed 000 gives sunda → {DVE}; gen3/core_v4/core_v5 choose their own sets, not public: the catalog's {Pool, DVE}"),
            );
            r.mem = MEM_ONCHIP;
        }
        C::MatmultMx => {
            r.mem = MEM_PE;
            r.dtypes = DT_MX;
        }
        C::Matmult | C::MatmultSparse | C::MatmultBase | C::LoadWeights | C::Transpose => {
            r.mem = MEM_PE;
            r.dtypes = DT_MATMUL;
        }
        C::TensorCopy
        | C::Cast
        | C::TensorCopyDynamicSrc
        | C::TensorCopyDynamicDst
        | C::IndirectCopy
        | C::Gather
        | C::StreamShuffle
        | C::StreamTranspose
        | C::CopyPredicated
        | C::Select => {
            r.mem = MEM_ONCHIP;
            r.dtypes = DT_COPY;
            if matches!(c, C::TensorCopy | C::Cast) {
                r.engines = EngineRule::PerArch(&COPY_CAST_ENGINES, POOL_DVE, COPY_CAST_SRC);
            }
        }
        C::ReadActivationAccumulator
        | C::ActivationReadAccumulator
        | C::ActivationQuantize
        | C::ActivationMultipass
        | C::Reciprocal
        | C::TensorReduce
        | C::TensorScalar
        | C::TensorScalarPtr
        | C::TensorScalarCache
        | C::TensorTensor
        | C::Iota
        | C::Dropout
        | C::TensorScalarAffineSelect
        | C::Max
        | C::MaxIndex
        | C::MatchReplace
        | C::MaxIndexAndMatchReplace
        | C::DveReadAccumulator
        | C::Exponential
        | C::NonzeroWithCount
        | C::RangeSelect
        | C::TensorCumulative
        | C::CrossLaneReduce
        | C::ScalarTensorTensor
        | C::TensorTensorScan
        | C::Sort
        | C::SparsityCompress
        | C::TensorDequantize => {
            r.mem = MEM_ONCHIP;
            r.dtypes = DT_COMPUTE;
        }
        C::BnStats | C::BnStatsAggregate | C::BnGradients | C::BnBackprop | C::BnBackprop2 => {
            r.mem = MEM_ONCHIP;
            r.dtypes = DT_BN;
        }
        C::QuantizeMx => {
            r.mem = MEM_ONCHIP;
            r.dtypes = DT_QUANTIZE_MX;
        }
        C::TongaReduceMacroSymbolic => {
            r.partitions = PartitionRule::Halves;
        }
        _ => {}
    }
    r
}

/// The driver table, one row per class in [`InstClass::ALL`] order, built at compile time.
pub static L1_TABLE: [ClassRule; InstClass::COUNT] = {
    let mut t = [class_rule(InstClass::Generic); InstClass::COUNT];
    let mut i = 0;
    while i < InstClass::COUNT {
        t[i] = class_rule(InstClass::ALL[i]);
        i += 1;
    }
    t
};

/// The driver of a class, from [`L1_TABLE`].
#[inline]
pub fn driver(c: InstClass) -> &'static ClassRule {
    &L1_TABLE[c.index()]
}

/// The driver table, one row per class in [`InstClass::ALL`] order.
pub fn l1_table() -> impl Iterator<Item = ClassRule> {
    L1_TABLE.iter().copied()
}

/// Engines able to pack 2-row / 4-row partition replication at a level (`is2x2pAble`,
/// `is4x2pAble`): an instruction bound to one may never write in place.
/// `project-defined`: the predicate bodies are not public; tpbsim takes the PE array (whose
/// row-group replication makes the partition map non-identity) on every level.
pub const fn is_replication_capable(engine: EngineType, _arch: ArchLevel) -> bool {
    matches!(engine, EngineType::Pe)
}

/// Provenance of [`is_replication_capable`].
pub const REPLICATION_SRC: Src =
    Src::Project("is2x2pAble / is4x2pAble bodies are not public: tpbsim treats the PE array as the replication-capable engine on every level");

/// The L0 table: the dormant libBIR `(ArchLevel × EngineType)` map of a class (`getValidEngines`).
///
/// The mechanism is the seed's (seed 002): concrete classes have keys for levels 20..50 only
/// (every concrete map omits Inferentia); the cells are `project-defined` (the maps are built
/// by a static initialiser, not published): the catalog row's engines on the levels that
/// carry the class's opcodes.
pub fn l0_map(c: InstClass) -> Vec<(ArchLevel, EngineSet)> {
    let cat = catalog(c);
    ArchLevel::ALL
        .into_iter()
        .filter(|&a| a != ArchLevel::Inferentia)
        .filter(|&a| cat.min.is_none_or(|m| a >= m) && cat.max.is_none_or(|m| a <= m))
        .map(|a| (a, cat.engines))
        .collect()
}

/// The permissive L0 base map (`bir::Instruction::validEngines`): all five levels, including
/// Inferentia (seed 002, LD-01). Engine cells `project-defined`: every concrete engine.
pub fn l0_base_map() -> Vec<(ArchLevel, EngineSet)> {
    ArchLevel::ALL.into_iter().map(|a| (a, CONCRETE)).collect()
}

/// `isValidEngine(arch, engine)` over a map: `arch ∈ map ∧ engine ∈ map[arch]` (plain
/// membership; no wildcard).
pub fn l0_is_valid_engine(
    map: &[(ArchLevel, EngineSet)],
    arch: ArchLevel,
    engine: EngineType,
) -> bool {
    map.iter().any(|(a, s)| *a == arch && s.contains(engine))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_a_row() {
        let rows: Vec<ClassRule> = l1_table().collect();
        assert_eq!(rows.len(), InstClass::COUNT);
        for (r, c) in rows.iter().zip(InstClass::ALL) {
            assert_eq!(r.class, *c);
            assert!(!r.engines.at(ArchLevel::CoreV4).is_empty(), "{c}");
        }
    }

    #[test]
    fn seed_sets() {
        assert_eq!(class_rule(InstClass::Pool).engines.at(ArchLevel::Gen3), DVE);
        assert_eq!(
            class_rule(InstClass::Memset).engines.at(ArchLevel::Gen3),
            POOL_DVE
        );
        assert_eq!(
            class_rule(InstClass::Activation)
                .engines
                .at(ArchLevel::Gen3),
            ACT
        );
        assert_eq!(
            class_rule(InstClass::CustomOp).engines.at(ArchLevel::Sunda),
            POOL
        );
        assert_eq!(
            class_rule(InstClass::BirKernel)
                .engines
                .at(ArchLevel::Sunda),
            UNASSIGNED
        );
        assert_eq!(
            class_rule(InstClass::Loop).engines.at(ArchLevel::Sunda),
            ALL
        );
        assert_eq!(
            class_rule(InstClass::Generic).engines.at(ArchLevel::Sunda),
            ANY8
        );
        assert_eq!(class_rule(InstClass::Rng).engines.at(ArchLevel::Sunda), DVE);
        assert_eq!(
            class_rule(InstClass::Rng).engines.at(ArchLevel::CoreV4),
            POOL_DVE
        );
        assert!(!class_rule(InstClass::Pool).engines.src().is_project());
        assert!(class_rule(InstClass::TensorTensor)
            .engines
            .src()
            .is_project());
        assert_eq!(
            class_rule(InstClass::Generic).arch.min,
            Some(ArchLevel::Sunda)
        );
        assert_eq!(
            class_rule(InstClass::MatmultMx).arch.min,
            Some(ArchLevel::CoreV4)
        );
    }

    #[test]
    fn copy_and_cast_take_act_from_gen3() {
        for c in [InstClass::TensorCopy, InstClass::Cast] {
            let e = class_rule(c).engines;
            assert!(!e.src().is_project(), "{c}");
            assert_eq!(e.at(ArchLevel::Sunda), POOL_DVE, "{c}");
            for level in [ArchLevel::Gen3, ArchLevel::CoreV4, ArchLevel::CoreV5] {
                let s = e.at(level);
                assert!(s.contains(EngineType::Act), "{c} {level}");
                assert!(s.contains(EngineType::Pool) && s.contains(EngineType::Dve));
                assert!(!s.contains(EngineType::Pe) && !s.contains(EngineType::Sp));
            }
        }
        // The other POOL/DVE copies keep the catalog's set.
        assert_eq!(
            class_rule(InstClass::TensorCopyDynamicSrc)
                .engines
                .at(ArchLevel::Gen3),
            POOL_DVE
        );
    }

    #[test]
    fn l0_maps_omit_inferentia_except_base() {
        for &c in InstClass::ALL {
            assert!(
                l0_map(c).iter().all(|(a, _)| *a != ArchLevel::Inferentia),
                "{c}"
            );
        }
        assert_eq!(l0_base_map().len(), 5);
        let mx = l0_map(InstClass::MatmultMx);
        assert_eq!(mx, vec![(ArchLevel::CoreV4, PE), (ArchLevel::CoreV5, PE)]);
        assert!(l0_is_valid_engine(&mx, ArchLevel::CoreV4, EngineType::Pe));
        assert!(!l0_is_valid_engine(&mx, ArchLevel::Gen3, EngineType::Pe));
        assert!(!l0_is_valid_engine(&mx, ArchLevel::CoreV4, EngineType::All));
    }

    #[test]
    fn dtype_sets() {
        assert!(DT_MX.arg(0).contains(NumFormat::Float8E4m3fnX4));
        assert!(DT_MX.arg(3).contains(NumFormat::Float8E8m0fnu));
        assert!(!DT_MX.arg(7).contains(NumFormat::Float32));
        assert!(!DT_COMPUTE.arg(0).contains(NumFormat::Int64));
        assert!(DT_COMPUTE.arg(0).contains(NumFormat::Bfloat16));
        assert_eq!(
            DtypeSet::of(&[NumFormat::Uint8, NumFormat::Int8]).to_string(),
            "{uint8, int8}"
        );
    }
}
