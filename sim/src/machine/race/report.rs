//! What the checker reports: accesses, origins, memories, findings and their text.

use super::*;

/// An access recorded by a compute bundle on the on-chip memories, logged by [`OnChipLog`]
/// and attributed to the bundle when it finishes.
#[derive(Clone, Debug)]
pub enum ChipAccess {
    /// An operand resolved under a name (the names later reads and writes are reported with).
    Operand(String, Resolved),
    /// Bytes gathered.
    Read(Resolved),
    /// Bytes scattered.
    Write(Resolved),
    /// Bytes `lo..hi` of partitions `first..first + count` cleared (PSUM START).
    Zero {
        /// Memory.
        space: Space,
        /// First partition.
        first: u32,
        /// Partition count.
        count: u32,
        /// First byte.
        lo: u32,
        /// One past the last byte.
        hi: u32,
    },
    /// A matmul writes its product into the PSUM bytes of the pattern under `flags`.
    Accumulate(Resolved, PsumFlags),
    /// The operation's reads of the pattern (its destination) use the bytes' values: a
    /// read-modify-write, checked for uninitialised bytes like a source.
    ReadModifyWrite(Resolved),
    /// The shape of the operand just named (for the timeline's cost model).
    Shape {
        /// Elements per partition.
        elems: u64,
        /// Bytes per element.
        elem_bytes: u32,
    },
}

/// The access log the on-chip memories keep while a race check runs.
pub type OnChipLog = RefCell<Vec<ChipAccess>>;

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    /// A read.
    Read,
    /// A write.
    Write,
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        })
    }
}

/// Who made an access: the agent, the bundle (for a DMA: the trigger), and the operand.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Origin {
    /// Engine of the bundle.
    pub engine: Engine,
    /// Bundle index in that engine's stream.
    pub index: usize,
    /// Agent that made the access: the engine (`dve`), a DMA queue (`sp:in`) or a collective
    /// of a world (`pe:collective#0`).
    pub agent: String,
    /// Mnemonic of the bundle.
    pub mnemonic: String,
    /// Operand (`src0`, `dst`; for a DMA `QUEUE[BLOCK].desc[I].from|to`).
    pub operand: String,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.agent == self.engine.short() {
            write!(
                f,
                "{} bundle #{} {} operand `{}`",
                self.engine, self.index, self.mnemonic, self.operand
            )
        } else {
            let (what, by) = agent_kind(&self.agent);
            write!(
                f,
                "{what} {} `{}` ({by} {} bundle #{} {})",
                self.agent, self.operand, self.engine, self.index, self.mnemonic
            )
        }
    }
}

/// What a non-engine agent is, and how its bundle started it: a collective of a world
/// (`pe:collective#3`), issued by its bundle, or a DMA queue, triggered by it.
fn agent_kind(agent: &str) -> (&'static str, &'static str) {
    if agent.contains(":collective") {
        ("collective", "issued by")
    } else {
        ("DMA queue", "triggered by")
    }
}

/// The memory a finding is in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(tag = "space", content = "var")]
pub enum Memory {
    /// SBUF.
    #[serde(rename = "SBUF")]
    Sbuf,
    /// PSUM.
    #[serde(rename = "PSUM")]
    Psum,
    /// A DRAM variable, by name.
    #[serde(rename = "DRAM")]
    Dram(String),
}

/// The bytes a finding covers.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Extent {
    /// Memory.
    pub memory: Memory,
    /// Partition range `[first, end)` (on-chip memories).
    pub partitions: Option<(u32, u32)>,
    /// Byte range `[lo, hi)` inside each partition (on-chip) or inside the variable (DRAM).
    pub bytes: (u64, u64),
    /// Partition-folded address of the first byte (on-chip).
    pub address: Option<u32>,
    /// Overlapping bytes counted over all occurrences.
    pub count: u64,
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.memory, self.partitions) {
            (Memory::Dram(v), _) => write!(
                f,
                "DRAM `{v}` bytes 0x{:x}..0x{:x}",
                self.bytes.0, self.bytes.1
            )?,
            (m, Some((p0, p1))) => {
                let name = if *m == Memory::Sbuf { "SBUF" } else { "PSUM" };
                write!(
                    f,
                    "{name} partitions {p0}..{p1}, bytes 0x{:x}..0x{:x} of each",
                    self.bytes.0, self.bytes.1
                )?;
                if let Some(a) = self.address {
                    write!(f, " (address 0x{a:08x})")?;
                }
            }
            (_, None) => write!(f, "bytes 0x{:x}..0x{:x}", self.bytes.0, self.bytes.1)?,
        }
        write!(f, ", {} bytes", self.count)
    }
}

/// One access of a race.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RaceSide {
    /// Who.
    pub origin: Origin,
    /// Read or write.
    pub kind: AccessKind,
    /// The first semaphore/event update its agent makes after the access, if any.
    pub next_release: Option<String>,
}

/// One core's access in a [`FindingKind::CoreRace`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CoreSide {
    /// Core index.
    pub core: usize,
    /// The subgraph it runs (`sg00`, ...).
    pub subgraph: String,
    /// Read or write.
    pub kind: AccessKind,
}

/// What a finding is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FindingKind {
    /// Two unordered accesses to overlapping bytes, at least one a write.
    Race {
        /// One access (the sides are in a fixed order: engine, bundle, agent, operand).
        a: RaceSide,
        /// The other.
        b: RaceSide,
        /// The synchronisation that would order them.
        missing: String,
    },
    /// A read of on-chip bytes nothing has written, or of DRAM bytes of an output (or of a
    /// variable without data) that no transfer or collective has written.
    UninitRead {
        /// The read.
        at: Origin,
    },
    /// Two cores access overlapping bytes of a DRAM variable they share, at least one a write,
    /// and nothing orders the two cores.
    CoreRace {
        /// The lower-numbered core's access.
        a: CoreSide,
        /// The other core's access.
        b: CoreSide,
    },
    /// A matmul adds into PSUM bytes outside an open accumulation group.
    PsumUnzeroed {
        /// The matmul.
        at: Origin,
        /// The last write of those bytes (a matmul with END, or nothing).
        last: Option<Origin>,
    },
}

/// One finding with the bytes it covers.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// The core it was found on, in a program of several cores (a race between cores names
    /// both in its kind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<usize>,
    /// What.
    #[serde(flatten)]
    pub kind: FindingKind,
    /// Where.
    pub extent: Extent,
}

impl Finding {
    /// A short kind name (`race`, `uninit-read`, `psum-unzeroed`).
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            FindingKind::Race { .. } => "race",
            FindingKind::UninitRead { .. } => "uninit-read",
            FindingKind::PsumUnzeroed { .. } => "psum-unzeroed",
            FindingKind::CoreRace { .. } => "core-race",
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = self.core {
            write!(f, "core {c}: ")?;
        }
        match &self.kind {
            FindingKind::Race { a, b, missing } => write!(
                f,
                "race: {} of {}\n  and {} of {}\n  on {}\n  missing synchronisation: {missing}",
                a.kind, a.origin, b.kind, b.origin, self.extent
            ),
            FindingKind::CoreRace { a, b } => write!(
                f,
                "race between cores: {} by core {} ({}) and {} by core {} ({})\n  on {}\n  missing synchronisation: nothing orders the two cores (the result depends on their timing)",
                a.kind, a.core, a.subgraph, b.kind, b.core, b.subgraph, self.extent
            ),
            FindingKind::UninitRead { at } => write!(
                f,
                "uninitialised read: {at} reads bytes nothing has written\n  on {}",
                self.extent
            ),
            FindingKind::PsumUnzeroed { at, last } => {
                write!(
                    f,
                    "PSUM accumulation onto an unzeroed bank: {at} adds into bytes outside an open accumulation group"
                )?;
                match last {
                    Some(o) => write!(f, " (last written by {o}, which closed its group)")?,
                    None => write!(f, " (never written: no START zeroed them)")?,
                }
                write!(f, "\n  on {}", self.extent)
            }
        }
    }
}

pub(super) fn order_key(f: &Finding) -> (u8, Vec<(Origin, Option<AccessKind>)>, Memory) {
    let (rank, sides) = match &f.kind {
        FindingKind::Race { a, b, .. } => (
            0,
            vec![
                (a.origin.clone(), Some(a.kind)),
                (b.origin.clone(), Some(b.kind)),
            ],
        ),
        FindingKind::UninitRead { at } => (1, vec![(at.clone(), None)]),
        FindingKind::PsumUnzeroed { at, last } => {
            let mut v = vec![(at.clone(), None)];
            v.extend(last.iter().map(|o| (o.clone(), None)));
            (2, v)
        }
        FindingKind::CoreRace { .. } => (3, Vec::new()),
    };
    (rank, sides, f.extent.memory.clone())
}

pub(super) fn side_text(s: &RaceSide) -> String {
    if s.origin.agent == s.origin.engine.short() {
        format!("{} bundle #{}", s.origin.engine, s.origin.index)
    } else {
        let (what, _) = agent_kind(&s.origin.agent);
        format!("{what} {} ({})", s.origin.agent, s.origin.operand)
    }
}

/// Who would have to wait for `s`: the engine, or the trigger of a DMA.
pub(super) fn waiter_text(s: &RaceSide) -> String {
    if s.origin.agent == s.origin.engine.short() {
        format!("{} bundle #{}", s.origin.engine, s.origin.index)
    } else {
        let (what, _) = agent_kind(&s.origin.agent);
        let start = if what == "collective" {
            "issue"
        } else {
            "trigger"
        };
        format!(
            "the {start} of {what} {} ({} bundle #{})",
            s.origin.agent, s.origin.engine, s.origin.index
        )
    }
}

pub(super) fn missing_sync(a: &RaceSide, b: &RaceSide) -> String {
    let dir = |x: &RaceSide, y: &RaceSide| match &x.next_release {
        Some(r) => format!(
            "after its {} {} next updates {r}, which {} does not wait for",
            x.kind,
            side_text(x),
            waiter_text(y)
        ),
        None => format!(
            "after its {} {} makes no semaphore or event update that {} could wait for",
            x.kind,
            side_text(x),
            waiter_text(y)
        ),
    };
    format!(
        "no semaphore or event wait orders the two accesses; {}; {}",
        dir(a, b),
        dir(b, a)
    )
}
