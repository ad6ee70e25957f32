//! BIR enumerations: architecture levels, engines, memory types and collective kinds (element
//! types are the one number-format type, [`tpbsim_isa::NumFormat`]).
//!
//! Ordinals follow the compiler's in-memory enums (facts digest §1.1, §6.2, §6.6, §6.7; BIR
//! memory-location page for `MemoryType`). Every enum has one canonical spelling used by the
//! JSON export, and a few accepted aliases on import.

use std::fmt;

use tpbsim_isa::{Engine, Gen, Geometry};

/// The compiler's `ArchLevel`: the architecture a BIR module targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u32)]
pub enum ArchLevel {
    /// Inf1 (CoreV1); the compiler also calls it Tonga.
    Inferentia = 10,
    /// Trn1/Inf2 (CoreV2, header SUNDA).
    Sunda = 20,
    /// Trn2 (CoreV3, header CAYMAN).
    Gen3 = 30,
    /// Trn3 (CoreV4, header MARIANA).
    CoreV4 = 40,
    /// Trn4 (CoreV5, header MAVERICK).
    CoreV5 = 50,
}

impl ArchLevel {
    /// Every level, oldest first.
    pub const ALL: [ArchLevel; 5] = [
        ArchLevel::Inferentia,
        ArchLevel::Sunda,
        ArchLevel::Gen3,
        ArchLevel::CoreV4,
        ArchLevel::CoreV5,
    ];

    /// The level number (10, 20, 30, 40, 50).
    #[inline]
    pub const fn level(self) -> u32 {
        self as u32
    }

    /// Level from its number.
    pub const fn from_level(n: u64) -> Option<ArchLevel> {
        match n {
            10 => Some(ArchLevel::Inferentia),
            20 => Some(ArchLevel::Sunda),
            30 => Some(ArchLevel::Gen3),
            40 => Some(ArchLevel::CoreV4),
            50 => Some(ArchLevel::CoreV5),
            _ => None,
        }
    }

    /// The compiler's canonical name (`inferentia`, `sunda`, `gen3`, `core_v4`, `core_v5`).
    pub const fn name(self) -> &'static str {
        match self {
            ArchLevel::Inferentia => "inferentia",
            ArchLevel::Sunda => "sunda",
            ArchLevel::Gen3 => "gen3",
            ArchLevel::CoreV4 => "core_v4",
            ArchLevel::CoreV5 => "core_v5",
        }
    }

    /// Parse a name, alias or level number (`core_v4`, `mariana`, `v4`, `trn3`, `40`, ...).
    pub fn parse(s: &str) -> Option<ArchLevel> {
        let l = s.trim().to_ascii_lowercase();
        match l.as_str() {
            "10" | "inferentia" | "tonga" | "inf1" | "v1" | "core_v1" | "corev1" => {
                Some(ArchLevel::Inferentia)
            }
            _ => l.parse::<Gen>().ok().map(ArchLevel::from),
        }
    }

    /// The decoded generation, if tpbsim decodes this level (not Inferentia).
    pub const fn gen(self) -> Option<Gen> {
        match self {
            ArchLevel::Inferentia => None,
            ArchLevel::Sunda => Some(Gen::V2),
            ArchLevel::Gen3 => Some(Gen::V3),
            ArchLevel::CoreV4 => Some(Gen::V4),
            ArchLevel::CoreV5 => Some(Gen::V5),
        }
    }

    /// PSUM geometry of this level: `(banks, bank bytes, partitions)`.
    ///
    /// Sunda and later read the spec geometry ([`Geometry`]: v2 the shipped header's
    /// 16 × 1024 B, facts §10 #3, header over compiler table; gen3 and later 8 × 2048 B).
    /// Inferentia, which the spec does not cover, is 4 × 2048 B over 64 partitions (compiler
    /// geometry table, the only source for that level).
    pub const fn psum_geometry(self) -> PsumGeometry {
        match self.gen() {
            Some(g) => {
                let g = Geometry::at(g);
                PsumGeometry {
                    banks: g.psum_banks,
                    bank_bytes: g.psum_bank_bytes,
                    partitions: g.sbuf_partitions,
                }
            }
            None => PsumGeometry {
                banks: 4,
                bank_bytes: 2048,
                partitions: 64,
            },
        }
    }
}

impl From<Gen> for ArchLevel {
    fn from(g: Gen) -> Self {
        match g {
            Gen::V2 => ArchLevel::Sunda,
            Gen::V3 => ArchLevel::Gen3,
            Gen::V4 => ArchLevel::CoreV4,
            Gen::V5 => ArchLevel::CoreV5,
        }
    }
}

impl fmt::Display for ArchLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.level())
    }
}

/// PSUM banks of one architecture level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsumGeometry {
    /// Number of banks per partition.
    pub banks: u32,
    /// Bytes per bank per partition.
    pub bank_bytes: u32,
    /// PSUM partitions.
    pub partitions: u32,
}

/// Number of SBUF partitions on every level tpbsim decodes (`NUM_PARTITIONS`, the spec
/// geometry; the same on every generation).
pub const NUM_PARTITIONS: u64 = Geometry::at(Gen::V2).sbuf_partitions as u64;

/// The BIR `EngineType` an instruction is assigned to (facts §6.6). Distinct from the wire
/// engine enum ([`Engine`]); [`EngineType::wire`] is the compiler's `convert()` remap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum EngineType {
    /// Not yet assigned: a wildcard for the engine gate.
    Unassigned = 0,
    /// GpSimd engine.
    Pool = 1,
    /// Activation (scalar) engine.
    Act = 2,
    /// Tensor (matmul) engine.
    Pe = 3,
    /// DMA queues.
    Dma = 4,
    /// Vector engine.
    Dve = 5,
    /// Sync engine.
    Sp = 6,
    /// Every engine: a wildcard for the engine gate.
    All = 7,
}

impl EngineType {
    /// Every engine type in ordinal order.
    pub const ALL_TYPES: [EngineType; 8] = [
        EngineType::Unassigned,
        EngineType::Pool,
        EngineType::Act,
        EngineType::Pe,
        EngineType::Dma,
        EngineType::Dve,
        EngineType::Sp,
        EngineType::All,
    ];

    /// The six concrete engines (no wildcard).
    pub const CONCRETE: [EngineType; 6] = [
        EngineType::Pool,
        EngineType::Act,
        EngineType::Pe,
        EngineType::Dma,
        EngineType::Dve,
        EngineType::Sp,
    ];

    /// Ordinal (0..=7).
    #[inline]
    pub const fn ordinal(self) -> u8 {
        self as u8
    }

    /// Engine type from its ordinal.
    pub const fn from_ordinal(n: u64) -> Option<EngineType> {
        match n {
            0 => Some(EngineType::Unassigned),
            1 => Some(EngineType::Pool),
            2 => Some(EngineType::Act),
            3 => Some(EngineType::Pe),
            4 => Some(EngineType::Dma),
            5 => Some(EngineType::Dve),
            6 => Some(EngineType::Sp),
            7 => Some(EngineType::All),
            _ => None,
        }
    }

    /// Canonical JSON spelling (`Unassigned`, `Pool`, `Act`, `PE`, `DMA`, `DVE`, `SP`, `ALL`).
    pub const fn name(self) -> &'static str {
        match self {
            EngineType::Unassigned => "Unassigned",
            EngineType::Pool => "Pool",
            EngineType::Act => "Act",
            EngineType::Pe => "PE",
            EngineType::Dma => "DMA",
            EngineType::Dve => "DVE",
            EngineType::Sp => "SP",
            EngineType::All => "ALL",
        }
    }

    /// Parse a canonical name or alias (case-insensitive: `gpsimd`, `activation`, `tensor`, ...).
    pub fn parse(s: &str) -> Option<EngineType> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "unassigned" => EngineType::Unassigned,
            "pool" | "gpsimd" => EngineType::Pool,
            "act" | "activation" | "scalar" => EngineType::Act,
            "pe" | "tensor" => EngineType::Pe,
            "dma" | "syncdma" => EngineType::Dma,
            "dve" | "vector" => EngineType::Dve,
            "sp" | "sync" => EngineType::Sp,
            "all" => EngineType::All,
            _ => return None,
        })
    }

    /// True for the two wildcards (Unassigned, ALL).
    #[inline]
    pub const fn is_wildcard(self) -> bool {
        matches!(self, EngineType::Unassigned | EngineType::All)
    }

    /// The wire engine (`convert()`: Pool→2, Act→1, PE→0, DVE→3, SP→4); none for DMA and the
    /// wildcards.
    pub const fn wire(self) -> Option<Engine> {
        match self {
            EngineType::Pool => Some(Engine::Pool),
            EngineType::Act => Some(Engine::Act),
            EngineType::Pe => Some(Engine::Pe),
            EngineType::Dve => Some(Engine::Dve),
            EngineType::Sp => Some(Engine::Sp),
            EngineType::Unassigned | EngineType::Dma | EngineType::All => None,
        }
    }
}

impl fmt::Display for EngineType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`EngineType`]s (bit `n` = ordinal `n`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct EngineSet(pub u8);

impl EngineSet {
    /// The empty set.
    pub const EMPTY: EngineSet = EngineSet(0);

    /// Set of the given engines.
    pub const fn of(engines: &[EngineType]) -> EngineSet {
        let mut bits = 0u8;
        let mut i = 0;
        while i < engines.len() {
            bits |= 1 << engines[i] as u8;
            i += 1;
        }
        EngineSet(bits)
    }

    /// Membership.
    #[inline]
    pub const fn contains(self, e: EngineType) -> bool {
        self.0 & (1 << e as u8) != 0
    }

    /// Union.
    #[inline]
    pub const fn union(self, o: EngineSet) -> EngineSet {
        EngineSet(self.0 | o.0)
    }

    /// True when empty.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Members in ordinal order.
    pub fn iter(self) -> impl Iterator<Item = EngineType> {
        EngineType::ALL_TYPES
            .into_iter()
            .filter(move |e| self.contains(*e))
    }

    /// The concrete engines an L1 engine gate with this legal set lets through: the members,
    /// or every concrete engine when ALL is in the set.
    pub fn l1_accepts(self) -> EngineSet {
        if self.contains(EngineType::All) {
            EngineSet::of(&EngineType::CONCRETE)
        } else {
            EngineSet(self.0 & EngineSet::of(&EngineType::CONCRETE).0)
        }
    }
}

impl fmt::Display for EngineSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, e) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(e.name())?;
        }
        f.write_str("}")
    }
}

impl fmt::Debug for EngineSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// BIR `MemoryType`: a power-of-two flag enum; DRAM, SB and PSUM are the placeable memories,
/// Input/Output mark not-yet-placed module I/O tensors ("IO tensors").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u32)]
pub enum MemoryType {
    /// 1
    Unallocated = 1,
    /// 2: module input tensor.
    Input = 2,
    /// 4: module output tensor.
    Output = 4,
    /// 8
    Dram = 8,
    /// 16: state buffer (SBUF).
    Sb = 16,
    /// 32
    Psum = 32,
    /// 64
    RngState = 64,
    /// 128
    Reg = 128,
}

impl MemoryType {
    /// Every memory type in value order.
    pub const ALL: [MemoryType; 8] = [
        MemoryType::Unallocated,
        MemoryType::Input,
        MemoryType::Output,
        MemoryType::Dram,
        MemoryType::Sb,
        MemoryType::Psum,
        MemoryType::RngState,
        MemoryType::Reg,
    ];

    /// Flag value.
    #[inline]
    pub const fn value(self) -> u32 {
        self as u32
    }

    /// Canonical JSON spelling.
    pub const fn name(self) -> &'static str {
        match self {
            MemoryType::Unallocated => "Unallocated",
            MemoryType::Input => "Input",
            MemoryType::Output => "Output",
            MemoryType::Dram => "DRAM",
            MemoryType::Sb => "SB",
            MemoryType::Psum => "PSUM",
            MemoryType::RngState => "RNGSTATE",
            MemoryType::Reg => "REG",
        }
    }

    /// Parse a name or alias (case-insensitive; `SBUF` for SB).
    pub fn parse(s: &str) -> Option<MemoryType> {
        Some(match s.trim().to_ascii_uppercase().as_str() {
            "UNALLOCATED" => MemoryType::Unallocated,
            "INPUT" => MemoryType::Input,
            "OUTPUT" => MemoryType::Output,
            "DRAM" => MemoryType::Dram,
            "SB" | "SBUF" => MemoryType::Sb,
            "PSUM" => MemoryType::Psum,
            "RNGSTATE" => MemoryType::RngState,
            "REG" => MemoryType::Reg,
            _ => return None,
        })
    }

    /// True for module I/O tensors (Input, Output).
    #[inline]
    pub const fn is_io(self) -> bool {
        matches!(self, MemoryType::Input | MemoryType::Output)
    }
}

impl fmt::Display for MemoryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of memory types (the flag values OR-ed).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MemSet(pub u32);

impl MemSet {
    /// Every memory type.
    pub const ANY: MemSet = MemSet(0xFF);

    /// Set of the given types.
    pub const fn of(m: &[MemoryType]) -> MemSet {
        let mut bits = 0u32;
        let mut i = 0;
        while i < m.len() {
            bits |= m[i] as u32;
            i += 1;
        }
        MemSet(bits)
    }

    /// Membership.
    #[inline]
    pub const fn contains(self, m: MemoryType) -> bool {
        self.0 & m as u32 != 0
    }
}

impl fmt::Display for MemSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        let mut first = true;
        for m in MemoryType::ALL.into_iter().filter(|m| self.contains(*m)) {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            f.write_str(m.name())?;
        }
        f.write_str("}")
    }
}

impl fmt::Debug for MemSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// BIR `CollectiveKind` (facts §6.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum CollectiveKind {
    /// 0
    SendRecv = 0,
    /// 1
    SendRecvCce = 1,
    /// 2
    AllReduce = 2,
    /// 3
    ReduceScatter = 3,
    /// 4
    AllGather = 4,
    /// 5
    AllToAll = 5,
    /// 6
    AllToAllV = 6,
    /// 7
    Permute = 7,
    /// 8
    PermuteReduce = 8,
    /// 9
    PermuteImplicit = 9,
    /// 10
    PermuteReduceImplicit = 10,
}

impl CollectiveKind {
    /// Every kind in ordinal order.
    pub const ALL: [CollectiveKind; 11] = [
        CollectiveKind::SendRecv,
        CollectiveKind::SendRecvCce,
        CollectiveKind::AllReduce,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllGather,
        CollectiveKind::AllToAll,
        CollectiveKind::AllToAllV,
        CollectiveKind::Permute,
        CollectiveKind::PermuteReduce,
        CollectiveKind::PermuteImplicit,
        CollectiveKind::PermuteReduceImplicit,
    ];

    /// Canonical name.
    pub const fn name(self) -> &'static str {
        match self {
            CollectiveKind::SendRecv => "SendRecv",
            CollectiveKind::SendRecvCce => "SendRecvCCE",
            CollectiveKind::AllReduce => "AllReduce",
            CollectiveKind::ReduceScatter => "ReduceScatter",
            CollectiveKind::AllGather => "AllGather",
            CollectiveKind::AllToAll => "AllToAll",
            CollectiveKind::AllToAllV => "AllToAllV",
            CollectiveKind::Permute => "Permute",
            CollectiveKind::PermuteReduce => "PermuteReduce",
            CollectiveKind::PermuteImplicit => "PermuteImplicit",
            CollectiveKind::PermuteReduceImplicit => "PermuteReduceImplicit",
        }
    }

    /// Parse the canonical name.
    pub fn parse(s: &str) -> Option<CollectiveKind> {
        CollectiveKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl fmt::Display for CollectiveKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpbsim_isa::NumFormat;

    #[test]
    fn dtype_names_and_sizes() {
        for (i, d) in NumFormat::ALL.into_iter().enumerate() {
            assert_eq!(d.bir_ordinal(), Some(i as u8));
            assert_eq!(NumFormat::parse(d.name()), Some(d));
            assert_eq!(NumFormat::from_bir_ordinal(i as u8), Some(d));
        }
        assert_eq!(NumFormat::parse("float8e4"), Some(NumFormat::Float8E4m3));
        assert_eq!(NumFormat::parse("float9"), None);
        assert_eq!(NumFormat::Float4E2m1fnX4.container_bytes(), 2);
        assert_eq!(NumFormat::Float8E5m2X4.container_bytes(), 4);
        let x4: Vec<Option<u8>> = NumFormat::ALL
            .into_iter()
            .filter(|d| d.is_packed())
            .map(NumFormat::bir_ordinal)
            .collect();
        assert_eq!(x4, [Some(2), Some(8), Some(9)]);
    }

    #[test]
    fn engines() {
        for e in EngineType::ALL_TYPES {
            assert_eq!(EngineType::parse(e.name()), Some(e));
            assert_eq!(EngineType::from_ordinal(e.ordinal() as u64), Some(e));
        }
        assert_eq!(EngineType::Pe.wire(), Some(Engine::Pe));
        assert_eq!(EngineType::Pool.wire(), Some(Engine::Pool));
        assert_eq!(EngineType::Act.wire(), Some(Engine::Act));
        assert_eq!(EngineType::Dve.wire(), Some(Engine::Dve));
        assert_eq!(EngineType::Sp.wire(), Some(Engine::Sp));
        assert_eq!(EngineType::Dma.wire(), None);
        let s = EngineSet::of(&[EngineType::Dve, EngineType::Pool]);
        assert_eq!(s.to_string(), "{Pool, DVE}");
        assert_eq!(
            EngineSet::of(&[EngineType::All]).l1_accepts(),
            EngineSet::of(&EngineType::CONCRETE)
        );
        assert!(EngineSet::of(&[EngineType::Unassigned])
            .l1_accepts()
            .is_empty());
    }

    #[test]
    fn arch_levels() {
        for a in ArchLevel::ALL {
            assert_eq!(ArchLevel::parse(a.name()), Some(a));
            assert_eq!(ArchLevel::from_level(a.level() as u64), Some(a));
            assert_eq!(ArchLevel::parse(&a.level().to_string()), Some(a));
        }
        assert_eq!(ArchLevel::parse("mariana"), Some(ArchLevel::CoreV4));
        assert_eq!(ArchLevel::parse("tonga"), Some(ArchLevel::Inferentia));
        assert_eq!(ArchLevel::Sunda.psum_geometry().bank_bytes, 1024);
        assert_eq!(ArchLevel::CoreV4.psum_geometry().banks, 8);
    }

    #[test]
    fn memory_types() {
        for m in MemoryType::ALL {
            assert_eq!(MemoryType::parse(m.name()), Some(m));
        }
        let s = MemSet::of(&[MemoryType::Sb, MemoryType::Input]);
        assert!(s.contains(MemoryType::Sb) && !s.contains(MemoryType::Psum));
        assert_eq!(s.to_string(), "{Input, SB}");
    }
}
