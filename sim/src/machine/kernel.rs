//! What the machine runs: the per-engine streams, the DRAM variables and the DMA queues of a
//! kernel, independent of the container they were read from.

use tpbsim_isa::{Bundle, Engine, Gen};

use super::dma::DmaDesc;
use super::memory::VarKind;
use super::sync::Update;
use tpbsim_isa::NumFormat;

/// One DRAM variable of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct VarSpec {
    /// Variable id (the DMA address space names variables by id).
    pub id: u32,
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: VarKind,
    /// Element format.
    pub format: NumFormat,
    /// Shape in elements (row-major).
    pub shape: Vec<usize>,
    /// Size in bytes.
    pub size: u64,
    /// Initial contents (constants, default inputs); zero-filled when absent.
    pub init: Option<Vec<u8>>,
}

impl VarSpec {
    /// Elements in the shape.
    pub fn elems(&self) -> u64 {
        self.shape
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(d as u64))
    }
}

/// One descriptor entry of a DMA block and what its completion updates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaEntrySpec {
    /// The transfer, or why the entry cannot be simulated (reported when it executes).
    pub desc: Result<DmaDesc, String>,
    /// Semaphore update applied when the entry completes.
    pub sem: Option<Update>,
    /// Event set when the entry completes.
    pub event: Option<u8>,
}

/// A block of descriptor entries a DMATRIGGER fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaBlockSpec {
    /// Block id (the trigger's block id selects it).
    pub id: u64,
    /// Entries, executed in order.
    pub entries: Vec<DmaEntrySpec>,
}

/// A DMA queue of one engine's sidecar: its blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaQueue {
    /// Queue name, as a DMATRIGGER names it.
    pub name: String,
    /// Semaphore incremented when a block of this queue completes (def.json queue table).
    pub semaphore: Option<u8>,
    /// Blocks.
    pub blocks: Vec<DmaBlockSpec>,
}

/// A dynamic DMA queue set of def.json (`type: dynamic`, `num_queues`, `semaphore_set`): the
/// queues an engine's PSEUDO_DMA_DIRECT2D transfers are spread over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSet {
    /// Queue-set name (`qPoolDynamic`, ...).
    pub name: String,
    /// The engine that owns it (issues its transfers).
    pub owner: Engine,
    /// Hardware queues in the set (NEFF doc: "must be 16 or less").
    pub num_queues: u32,
    /// The semaphores the set signals completion on.
    pub semaphores: Vec<u8>,
}

/// A `dge-table` variable: the variable ids the runtime populates its table with (NEFF doc:
/// "List of var_ids to populate the table with"); the ADDR8 DGE-table form (0x20) names an
/// entry of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DgeTable {
    /// Variable name (`DGETable0`).
    pub name: String,
    /// Variable id of each entry.
    pub entries: Vec<u32>,
}

/// Why FP8 conversions of a kernel cannot be simulated under its `fp8_conversion_config`
/// (`None`: the configuration is the one the machine's FP8 formats implement).
pub type Fp8Refusal = Option<String>;

/// A kernel ready to run.
#[derive(Clone, Debug, Default)]
pub struct Kernel {
    /// Target generation.
    pub gen: Option<Gen>,
    /// Per-engine streams, by wire id.
    pub streams: [Vec<Bundle>; Engine::COUNT],
    /// DRAM variables.
    pub vars: Vec<VarSpec>,
    /// Per-engine DMA queues (the issuing engine's sidecar), by wire id.
    pub queues: [Vec<DmaQueue>; Engine::COUNT],
    /// Ranks the collectives span (the largest `replica_groups` group; 1 for a single core).
    pub world: usize,
    /// def.json `replica_groups`: the ranks of each group, in replica order (a collective's
    /// `group_id` indexes it).
    pub replica_groups: Vec<Vec<u32>>,
    /// def.json `src_target_pairs`: (source rank, target rank) of the permutes.
    pub src_target_pairs: Vec<(u32, u32)>,
    /// The id of the state-buffer variable: an ADDR8 var-id operand naming it addresses SBUF
    /// (partition-folded). 0 when def.json declares none.
    pub sb_var: u32,
    /// The subgraph's `dge-table` variables.
    pub dge_tables: Vec<DgeTable>,
    /// The subgraph's dynamic DMA queue sets.
    pub queue_sets: Vec<QueueSet>,
    /// Number of ACT table sets (`activation_function_sets`) when the ACT sidecar lists them:
    /// ACTIVATION_TABLE_LOAD selects one of them.
    pub act_table_sets: Option<usize>,
    /// Why FP8 conversions cannot be simulated under the subgraph's FP8 configuration.
    pub fp8_refusal: Fp8Refusal,
}

impl Kernel {
    /// Stream of `e`.
    pub fn stream(&self, e: Engine) -> &[Bundle] {
        &self.streams[e as usize]
    }

    /// Variable by name.
    pub fn var(&self, name: &str) -> Option<&VarSpec> {
        self.vars.iter().find(|v| v.name == name)
    }
}
