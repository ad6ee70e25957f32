//! The BIR object model: module → functions → basic blocks → instructions, and the access
//! patterns instructions read and write.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ArchLevel, CollectiveKind, EngineType, InstClass, MemoryType};
use crate::diag::Location;
use tpbsim_isa::NumFormat;

/// One free dimension of an access pattern: `num` elements `step` elements apart. Written
/// `[step, num]` in BIR JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    /// Distance between consecutive elements, in elements of the pattern's dtype (may be
    /// negative or zero).
    pub step: i64,
    /// Element count (a zero count makes the pattern empty).
    pub num: u64,
}

/// Above this many elements per partition the exact address-set tests fall back to the
/// conservative window test.
pub const EXACT_SET_LIMIT: u64 = 1 << 16;

/// An access pattern: where an instruction operand lives and which elements it touches.
///
/// Addresses are in elements of `dtype`: element `(i0, i1, ...)` of partition `p` sits at
/// `offset + Σ i_k · pattern[k].step` in partition `start_partition + p` of `buffer`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessPattern {
    /// Memory type of the location.
    #[serde(with = "super::json::by_name")]
    pub mem: MemoryType,
    /// The memory location (buffer) the pattern indexes; two patterns alias only when they
    /// name the same buffer in the same memory.
    pub buffer: String,
    /// Element type.
    #[serde(with = "super::json::dtype")]
    pub dtype: NumFormat,
    /// First partition.
    #[serde(default, deserialize_with = "super::json::or_default")]
    pub start_partition: u64,
    /// Partitions accessed (the partition dimension's count).
    #[serde(default = "super::json::one", deserialize_with = "super::json::or_one")]
    pub partitions: u64,
    /// Free dimensions, outermost first.
    #[serde(default, deserialize_with = "super::json::or_default")]
    pub pattern: Vec<Dim>,
    /// Element offset of the first element within each partition.
    #[serde(default, deserialize_with = "super::json::or_default")]
    pub offset: i64,
    /// The addresses come from another tensor or a register (indirect / dynamic pattern),
    /// not from the pattern alone.
    #[serde(
        default,
        deserialize_with = "super::json::or_default",
        skip_serializing_if = "super::json::is_false"
    )]
    pub indirect: bool,
}

impl AccessPattern {
    /// A plain pattern with no free-dimension stride games: `partitions` × `elems` contiguous.
    pub fn contiguous(
        mem: MemoryType,
        buffer: &str,
        dtype: NumFormat,
        start_partition: u64,
        partitions: u64,
        elems: u64,
    ) -> Self {
        AccessPattern {
            mem,
            buffer: buffer.to_string(),
            dtype,
            start_partition,
            partitions,
            pattern: vec![Dim {
                step: 1,
                num: elems,
            }],
            offset: 0,
            indirect: false,
        }
    }

    /// Elements per partition as stored (containers, not unpacked x4 values); saturates.
    pub fn num_elements_per_partition(&self) -> u64 {
        self.pattern
            .iter()
            .fold(1u64, |acc, d| acc.saturating_mul(d.num))
    }

    /// Logical elements per partition: ×4 for the x4-packed MX containers (the MX x4-unpack
    /// gate).
    pub fn unpacked_elements_per_partition(&self) -> u64 {
        let n = self.num_elements_per_partition();
        if self.dtype.is_packed() {
            n.saturating_mul(4)
        } else {
            n
        }
    }

    /// Elements over all partitions (containers); saturates.
    pub fn num_elements(&self) -> u64 {
        self.partitions
            .saturating_mul(self.num_elements_per_partition())
    }

    /// Bytes per partition (containers × container size); saturates.
    pub fn bytes_per_partition(&self) -> u64 {
        self.num_elements_per_partition()
            .saturating_mul(self.dtype.container_bytes() as u64)
    }

    /// One past the last partition.
    pub fn end_partition(&self) -> u64 {
        self.start_partition.saturating_add(self.partitions)
    }

    /// The 32-partition quadrant the pattern starts in.
    pub fn start_quadrant(&self) -> u64 {
        self.start_partition >> 5
    }

    /// Number of dimensions: the partition dimension plus the free ones.
    pub fn num_dims(&self) -> usize {
        1 + self.pattern.len()
    }

    /// True when nothing is accessed.
    pub fn is_empty(&self) -> bool {
        self.partitions == 0 || self.pattern.iter().any(|d| d.num == 0)
    }

    /// Elements within each partition are dense and in order: innermost step 1, each outer
    /// step the product of the inner counts (dimensions of count 1 do not matter).
    pub fn is_partition_contiguous(&self) -> bool {
        let mut expected: i128 = 1;
        for d in self.pattern.iter().rev() {
            if d.num == 1 {
                continue;
            }
            if d.step as i128 != expected {
                return false;
            }
            expected = expected.saturating_mul(d.num as i128);
        }
        true
    }

    /// Byte window `[lo, hi)` the pattern touches within each partition (empty patterns give
    /// an empty window at the offset).
    pub fn byte_window(&self) -> (i128, i128) {
        let b = self.dtype.container_bytes() as i128;
        let base = self.offset as i128;
        if self.is_empty() {
            return (base * b, base * b);
        }
        let (mut lo, mut hi) = (base, base);
        for d in &self.pattern {
            let span = (d.step as i128).saturating_mul(d.num as i128 - 1);
            if span < 0 {
                lo = lo.saturating_add(span);
            } else {
                hi = hi.saturating_add(span);
            }
        }
        (lo.saturating_mul(b), hi.saturating_add(1).saturating_mul(b))
    }

    /// Element offsets (within a partition) the pattern touches, in pattern order, when there
    /// are at most [`EXACT_SET_LIMIT`] of them.
    pub fn element_offsets(&self) -> Option<Vec<i128>> {
        let n = self.num_elements_per_partition();
        if n > EXACT_SET_LIMIT {
            return None;
        }
        let mut out = Vec::with_capacity(n as usize);
        if self.is_empty() {
            return Some(out);
        }
        let mut idx = vec![0u64; self.pattern.len()];
        loop {
            let off = self.offset as i128
                + self
                    .pattern
                    .iter()
                    .zip(&idx)
                    .map(|(d, &i)| d.step as i128 * i as i128)
                    .sum::<i128>();
            out.push(off);
            // Odometer increment, innermost dimension fastest.
            let mut k = self.pattern.len();
            loop {
                if k == 0 {
                    return Some(out);
                }
                k -= 1;
                idx[k] += 1;
                if idx[k] < self.pattern[k].num {
                    break;
                }
                idx[k] = 0;
            }
        }
    }
}

/// MX tile descriptor: four parallel vectors, one entry per tile; `-1` means "not tiled".
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "super::json::TilesJson")]
pub struct MxTiles {
    /// Row tile positions.
    pub row_pos: Vec<i64>,
    /// Column tile positions.
    pub col_pos: Vec<i64>,
    /// Row tile sizes.
    pub row_size: Vec<i64>,
    /// Column tile sizes.
    pub col_size: Vec<i64>,
}

impl MxTiles {
    /// Number of tiles (all four vectors have this length).
    pub fn len(&self) -> usize {
        self.row_pos.len()
    }

    /// True when there are no tiles.
    pub fn is_empty(&self) -> bool {
        self.row_pos.is_empty()
    }
}

/// Fields of `MatmultMx`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct MatmultMxFields {
    /// Weight-replication shift amount.
    pub replication_shift: i64,
    /// Tile descriptor, when the matmul is tiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiles: Option<MxTiles>,
}

/// Fields of `NKIKernel`: the buffers the kernel declares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct NkiKernelFields {
    /// Name of the module function holding the kernel body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub func: Option<String>,
    /// SBUF partitions per buffer.
    pub sb_num_partitions: i64,
    /// SBUF bytes per partition per buffer.
    pub sb_per_partition_size: i64,
    /// PSUM banks used.
    pub psum_bank_count: i64,
    /// PSUM partitions used.
    pub psum_num_partitions: i64,
    /// SBUF buffers.
    pub num_sb_buffers: i64,
    /// PSUM buffers.
    pub num_psum_buffers: i64,
}

/// Fields of the collective classes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct CollectiveFields {
    /// Collective kind (required on `CollectiveCompute`, implied by the coarse-grain classes).
    #[serde(
        serialize_with = "super::json::by_name::opt::serialize",
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<CollectiveKind>,
    /// Shape of the replica groups: `[number of groups, ranks per group]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_groups_shape: Option<Vec<u64>>,
    /// Ranks each input is received from (SendRecv).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recv_from_rank: Option<Vec<i64>>,
    /// The collective carries an SBUF scratch-pad output.
    pub sb_scratchpad: bool,
    /// The collective stays within the core (legal inside dynamic control flow).
    pub is_local: bool,
}

impl CollectiveFields {
    /// Ranks per replica group (the last entry of `replica_groups_shape`).
    pub fn group_size(&self) -> Option<u64> {
        self.replica_groups_shape
            .as_ref()
            .and_then(|s| s.last().copied())
    }
}

/// Fields of `GPSIMDSB2SB`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Sb2SbFields {
    /// The context constant the compatibility check compares against 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctx: Option<u64>,
}

/// Class-specific fields of an instruction.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ClassFields {
    /// The class carries no verified fields.
    #[default]
    None,
    /// `MatmultMx`.
    MatmultMx(MatmultMxFields),
    /// `NKIKernel`.
    NkiKernel(NkiKernelFields),
    /// Collective classes.
    Collective(CollectiveFields),
    /// `GPSIMDSB2SB`.
    Sb2Sb(Sb2SbFields),
    /// Structured regions: the body blocks.
    Region(Vec<Block>),
}

/// Which [`ClassFields`] variant a class carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldsKind {
    /// No fields.
    None,
    /// [`MatmultMxFields`].
    MatmultMx,
    /// [`NkiKernelFields`].
    NkiKernel,
    /// [`CollectiveFields`].
    Collective,
    /// [`Sb2SbFields`].
    Sb2Sb,
    /// Region body.
    Region,
}

impl FieldsKind {
    /// The fields a class carries.
    pub const fn of(class: InstClass) -> FieldsKind {
        if class.is_region() {
            FieldsKind::Region
        } else if class.is_collective() {
            FieldsKind::Collective
        } else {
            match class {
                InstClass::MatmultMx => FieldsKind::MatmultMx,
                InstClass::NkiKernel => FieldsKind::NkiKernel,
                InstClass::GpsimdSb2Sb => FieldsKind::Sb2Sb,
                _ => FieldsKind::None,
            }
        }
    }
}

/// One BIR instruction. Its JSON form (`Serialize` / `Deserialize` in `bir/json.rs`) flattens
/// the class fields beside the common keys; the class decides which it may carry.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// Optional instruction name.
    pub name: Option<String>,
    /// Class.
    pub class: InstClass,
    /// Assigned engine.
    pub engine: EngineType,
    /// Input access patterns, positional.
    pub args: Vec<AccessPattern>,
    /// Output access patterns, positional.
    pub outs: Vec<AccessPattern>,
    /// Class-specific fields.
    pub fields: ClassFields,
    /// Free-form attributes the verifier does not read (kept on round trip).
    pub attrs: Map<String, Value>,
}

impl Instruction {
    /// An instruction of `class` on `engine` with the default fields for its class.
    pub fn new(class: InstClass, engine: EngineType) -> Self {
        let fields = match FieldsKind::of(class) {
            FieldsKind::None => ClassFields::None,
            FieldsKind::MatmultMx => ClassFields::MatmultMx(MatmultMxFields::default()),
            FieldsKind::NkiKernel => ClassFields::NkiKernel(NkiKernelFields::default()),
            FieldsKind::Collective => ClassFields::Collective(CollectiveFields {
                kind: class.coarse_collective_kind(),
                ..CollectiveFields::default()
            }),
            FieldsKind::Sb2Sb => ClassFields::Sb2Sb(Sb2SbFields::default()),
            FieldsKind::Region => ClassFields::Region(Vec::new()),
        };
        Instruction {
            name: None,
            class,
            engine,
            args: Vec::new(),
            outs: Vec::new(),
            fields,
            attrs: Map::new(),
        }
    }

    /// Builder: set the inputs.
    pub fn with_args(mut self, args: Vec<AccessPattern>) -> Self {
        self.args = args;
        self
    }

    /// Builder: set the outputs.
    pub fn with_outs(mut self, outs: Vec<AccessPattern>) -> Self {
        self.outs = outs;
        self
    }

    /// `MatmultMx` fields.
    pub fn matmult_mx(&self) -> Option<&MatmultMxFields> {
        match &self.fields {
            ClassFields::MatmultMx(f) => Some(f),
            _ => None,
        }
    }

    /// `NKIKernel` fields.
    pub fn nki_kernel(&self) -> Option<&NkiKernelFields> {
        match &self.fields {
            ClassFields::NkiKernel(f) => Some(f),
            _ => None,
        }
    }

    /// Collective fields.
    pub fn collective(&self) -> Option<&CollectiveFields> {
        match &self.fields {
            ClassFields::Collective(f) => Some(f),
            _ => None,
        }
    }

    /// `GPSIMDSB2SB` fields.
    pub fn sb2sb(&self) -> Option<&Sb2SbFields> {
        match &self.fields {
            ClassFields::Sb2Sb(f) => Some(f),
            _ => None,
        }
    }

    /// Region body blocks (empty for non-regions).
    pub fn region_blocks(&self) -> &[Block] {
        match &self.fields {
            ClassFields::Region(b) => b,
            _ => &[],
        }
    }

    /// The collective kind: the field, or the one the class implies.
    pub fn collective_kind(&self) -> Option<CollectiveKind> {
        self.collective()
            .and_then(|c| c.kind)
            .or(self.class.coarse_collective_kind())
    }
}

/// A basic block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Block {
    /// Block name (unique among its siblings).
    #[serde(deserialize_with = "super::json::block_name")]
    pub name: String,
    /// The block belongs to a dynamic control-flow region (its trip count is decided at run
    /// time).
    #[serde(default, deserialize_with = "super::json::or_default")]
    pub dynamic_cfg: bool,
    /// Instructions in program order.
    #[serde(default, deserialize_with = "super::json::or_default")]
    pub instructions: Vec<Instruction>,
}

/// Function attribute key that turns the engine gate off for a whole function.
pub const ATTR_SKIP_ENGINE_CHECK: &str = "skip_engine_check";

/// A function.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Function {
    /// Function name (unique in the module).
    pub name: String,
    /// Attributes; `skip_engine_check: true` disables the engine gate.
    #[serde(
        default,
        deserialize_with = "super::json::or_default",
        skip_serializing_if = "Map::is_empty"
    )]
    pub attrs: Map<String, Value>,
    /// Basic blocks.
    #[serde(default, deserialize_with = "super::json::or_default")]
    pub blocks: Vec<Block>,
}

impl Function {
    /// True when the function carries the skip-engine-check attribute set to true.
    pub fn skip_engine_check(&self) -> bool {
        self.attrs
            .get(ATTR_SKIP_ENGINE_CHECK)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// A BIR module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Module {
    /// Optional module name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Target architecture level.
    #[serde(with = "super::json::arch")]
    pub arch: ArchLevel,
    /// Functions; the verifier walks them in this order.
    pub functions: Vec<Function>,
}

/// One instruction as the walk reaches it, with its place in the module. Valid for the
/// duration of one visit.
#[derive(Clone, Copy, Debug)]
pub struct InstRef<'m> {
    /// Index of the function in the module.
    pub func_index: usize,
    /// The function.
    pub function: &'m Function,
    /// Path of the block: its name, or for a region body
    /// `<outer block>/<instruction index>/<body block>`.
    pub block_path: &'m str,
    /// The block.
    pub block: &'m Block,
    /// Index within the block.
    pub index: usize,
    /// The instruction.
    pub inst: &'m Instruction,
    /// The block is dynamic control flow: flagged so, or nested in a dynamic region.
    pub dynamic_cfg: bool,
    /// Sequence number in walk order (0-based, over the whole module).
    pub position: usize,
}

impl InstRef<'_> {
    /// The instruction label used in locations: `<index>:<op>` or `<index>:<op>(<name>)`.
    pub fn label(&self) -> String {
        instruction_label(self.index, self.inst)
    }

    /// Diagnostic location (function, block path, instruction, wire engine where one exists).
    pub fn location(&self) -> Location {
        Location {
            engine: self.inst.engine.wire(),
            function: Some(self.function.name.clone()),
            block: Some(self.block_path.to_string()),
            instruction: Some(self.label()),
            ..Location::default()
        }
    }
}

/// The label of instruction `index` (see [`InstRef::label`]).
pub fn instruction_label(index: usize, inst: &Instruction) -> String {
    match &inst.name {
        Some(n) => format!("{index}:{}({n})", inst.class.name()),
        None => format!("{index}:{}", inst.class.name()),
    }
}

impl Module {
    /// An empty module for `arch`.
    pub fn new(arch: ArchLevel) -> Self {
        Module {
            name: None,
            arch,
            functions: Vec::new(),
        }
    }

    /// Visit every instruction in walk order: functions in order, blocks in order,
    /// instructions in order, a region's body blocks right after the region instruction.
    pub fn walk(&self, f: &mut dyn FnMut(&InstRef<'_>)) {
        let mut position = 0usize;
        for (func_index, function) in self.functions.iter().enumerate() {
            for block in &function.blocks {
                walk_block(
                    func_index,
                    function,
                    block,
                    &block.name,
                    false,
                    &mut position,
                    f,
                );
            }
        }
    }

    /// Total instructions, region bodies included.
    pub fn instruction_count(&self) -> usize {
        let mut n = 0;
        self.walk(&mut |_| n += 1);
        n
    }

    /// Function by name.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

fn walk_block(
    func_index: usize,
    function: &Function,
    block: &Block,
    path: &str,
    in_dynamic: bool,
    position: &mut usize,
    f: &mut dyn FnMut(&InstRef<'_>),
) {
    let dynamic_cfg = in_dynamic || block.dynamic_cfg;
    for (index, inst) in block.instructions.iter().enumerate() {
        let r = InstRef {
            func_index,
            function,
            block_path: path,
            block,
            index,
            inst,
            dynamic_cfg,
            position: *position,
        };
        *position += 1;
        f(&r);
        for body in inst.region_blocks() {
            let child = format!("{path}/{index}/{}", body.name);
            walk_block(
                func_index,
                function,
                body,
                &child,
                dynamic_cfg || inst.class.is_dynamic_region(),
                position,
                f,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ap(pattern: &[(i64, u64)], offset: i64, dtype: NumFormat) -> AccessPattern {
        AccessPattern {
            mem: MemoryType::Sb,
            buffer: "t".into(),
            dtype,
            start_partition: 0,
            partitions: 4,
            pattern: pattern
                .iter()
                .map(|&(step, num)| Dim { step, num })
                .collect(),
            offset,
            indirect: false,
        }
    }

    #[test]
    fn counts_and_unpack() {
        let a = ap(&[(8, 4), (1, 8)], 0, NumFormat::Float8E4m3fnX4);
        assert_eq!(a.num_elements_per_partition(), 32);
        assert_eq!(a.unpacked_elements_per_partition(), 128);
        assert_eq!(a.num_elements(), 128);
        assert_eq!(a.bytes_per_partition(), 128);
        let b = ap(&[], 0, NumFormat::Bfloat16);
        assert_eq!(b.num_elements_per_partition(), 1);
        let huge = ap(&[(1, u64::MAX), (1, u64::MAX)], 0, NumFormat::Float32);
        assert_eq!(huge.num_elements_per_partition(), u64::MAX);
        assert_eq!(huge.unpacked_elements_per_partition(), u64::MAX);
    }

    #[test]
    fn contiguity() {
        assert!(ap(&[(8, 4), (1, 8)], 0, NumFormat::Float32).is_partition_contiguous());
        assert!(ap(&[(100, 1), (1, 8)], 0, NumFormat::Float32).is_partition_contiguous());
        assert!(!ap(&[(16, 4), (1, 8)], 0, NumFormat::Float32).is_partition_contiguous());
        assert!(!ap(&[(2, 8)], 0, NumFormat::Float32).is_partition_contiguous());
        assert!(ap(&[], 0, NumFormat::Float32).is_partition_contiguous());
    }

    #[test]
    fn windows_and_offsets() {
        let a = ap(&[(8, 2), (1, 3)], 4, NumFormat::Bfloat16);
        assert_eq!(a.byte_window(), (8, 15 * 2));
        assert_eq!(a.element_offsets().unwrap(), vec![4, 5, 6, 12, 13, 14]);
        let neg = ap(&[(-1, 4)], 10, NumFormat::Float32);
        assert_eq!(neg.byte_window(), (7 * 4, 11 * 4));
        assert_eq!(neg.element_offsets().unwrap(), vec![10, 9, 8, 7]);
        let empty = ap(&[(1, 0)], 3, NumFormat::Uint8);
        assert!(empty.is_empty());
        assert_eq!(empty.element_offsets().unwrap(), Vec::<i128>::new());
        assert!(ap(&[(1, EXACT_SET_LIMIT + 1)], 0, NumFormat::Uint8)
            .element_offsets()
            .is_none());
    }

    #[test]
    fn walk_order_paths_and_dynamic_flag() {
        let mut inner = Instruction::new(InstClass::DoWhile, EngineType::All);
        inner.fields = ClassFields::Region(vec![Block {
            name: "body".into(),
            dynamic_cfg: false,
            instructions: vec![Instruction::new(InstClass::TensorCopy, EngineType::Dve)],
        }]);
        let m = Module {
            name: None,
            arch: ArchLevel::CoreV4,
            functions: vec![Function {
                name: "main".into(),
                attrs: Map::new(),
                blocks: vec![Block {
                    name: "bb0".into(),
                    dynamic_cfg: false,
                    instructions: vec![
                        Instruction::new(InstClass::Activation, EngineType::Act),
                        inner,
                    ],
                }],
            }],
        };
        let mut seen = Vec::new();
        m.walk(&mut |r| {
            seen.push((
                r.block_path.to_string(),
                r.label(),
                r.dynamic_cfg,
                r.position,
            ))
        });
        assert_eq!(
            seen,
            vec![
                ("bb0".to_string(), "0:Activation".to_string(), false, 0),
                ("bb0".to_string(), "1:DoWhile".to_string(), false, 1),
                (
                    "bb0/1/body".to_string(),
                    "0:TensorCopy".to_string(),
                    true,
                    2
                ),
            ]
        );
        assert_eq!(m.instruction_count(), 3);
    }
}
