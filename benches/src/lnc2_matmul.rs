//! NEFFs of the shape neuronx-cc 2.23 writes for an LNC2 matmul `x f16[128,K] @ y f16[K,N] ->
//! output0 f16[128,N]` (the compiler's `matmul_large` is K = 32768, N = 65536), in the runtime's
//! layout: `neff.json` naming `kelf-0.json`, two subgraphs `sg00`/`sg01` (one per physical core,
//! header `lnc_size` 2 and the `neff_feature_vnc` bit), each computing half of the output
//! columns.
//!
//! Every form the compiler's kernel uses is here, in the same roles (`shared/real-neff-trn2.md`):
//!
//! * x, y and output0 reached through the `dge-table` variable (ADDR8 mode 0x20, entries 0, 1,
//!   2) by the Pool engine's DMAs on its dynamic queue set (`qPoolDynamic`, semaphores 24..39,
//!   `sem_increment` 16 = `num_queues`); the identity matrix a `file` variable read by SP
//!   (mode 0x10, var id 4);
//! * x transposed on the PE (`transpose_mode` 1 on LdWeights and Matmul, the stationary read
//!   last element first with negative steps, the identity as the moving tensor), two
//!   transposes at a time moved out of PSUM as raw bits by an INT32 COPY on ACT;
//! * the transposed x spilled by ACT's DMAs (`qActDynamicHW`, semaphores 40..55) into 16-chunk
//!   `virtual` variables of 512 KiB (`backing_variable_off` tiling the core's scratchpad, var
//!   ids 5.. as in the compiler's file) and refilled by SP (`qSPDynamicHW`, 8..23);
//! * the product accumulated over K in four fp32 PSUM banks per block of 2048 columns
//!   (LdWeights once per 128-row chunk of K, one Matmul per bank), y streamed by Pool into two
//!   SBUF buffers;
//! * each block leaves PSUM by a CAST fp32 -> fp16 on DVE (even blocks) or a COPY on ACT and a
//!   DMA converting fp32 -> fp16 (odd blocks), then Pool's DMA to output0; a final Pool NOP
//!   waits for the last output DMA;
//! * `SET_ORDERING_MODE` and `PSEUDO_BRANCH_LABEL` opening every stream,
//!   `ACTIVATION_TABLE_LOAD` on ACT, `EVENT_SEMAPHORE` for the waits a bundle cannot carry.
//!
//! The streams are written as the neuron text dialect and assembled by `tpbsim_isa::text`.
//! Only Pool differs between the subgraphs (its y and output0 offsets select the core's column
//! half), as in the compiler's file.

use std::fmt::Write as _;

use serde_json::{json, Value};
use tpbsim_isa::{Gen, NumFormat};
use tpbsim_neff::{self as neff, Neff, NeffError};

/// Rows of x and of the output: one per SBUF partition.
pub const ROWS: usize = 128;
/// The K rows a chunk holds (the PE's contraction depth).
const CHUNK: usize = 128;
/// Chunks per virtual spill variable.
const GROUP: usize = 16;
/// Bytes of one virtual spill variable (128 partitions x 16 chunks x 128 fp16).
const VIRTUAL_BYTES: u64 = (ROWS * GROUP * CHUNK * 2) as u64;
/// fp32 columns of one PSUM bank.
const BANK_COLS: usize = 512;
/// Banks a block accumulates in.
const MAX_BANKS: usize = 4;
/// Cores (subgraphs) of the logical core.
pub const CORES: usize = 2;
/// SBUF bytes per partition the software DGE keeps as scratch (the Pool queue's
/// `SB_scratch_partition_size`); the kernel's own buffers start above.
const DGE_SCRATCH: u32 = 16384;
/// The partition step of an SBUF ADDR8 immediate (`partition << 18 | offset`).
const SB_PARTITION_STEP: u64 = 1 << 18;
/// First PSUM byte (partition 0).
const PSUM: u32 = 0x0200_0000;
/// Bytes of a PSUM bank per partition.
const BANK_BYTES: u32 = 0x800;

/// Engine semaphores (below the first queue set).
const S_ACT_EVAC: u32 = 3;
const S_ACT_T: u32 = 4;
const S_PE_T: u32 = 5;
const S_PE_STEP: u32 = 6;
const S_DVE_EVAC: u32 = 7;
/// Queue-set semaphores (each DMA adds `QUEUES` on completion).
const S_IDENTITY: u32 = 8;
const S_REFILL: u32 = 9;
const S_X: u32 = 24;
const S_Y: u32 = 25; // and 26
const S_OUT: u32 = 27;
const S_SPILL: u32 = 40;
/// Queues of each dynamic queue set (= `sem_increment`).
const QUEUES: u32 = 16;

/// Var ids (as in the compiler's file): x 1, y 2, output0 3, identity 4, virtual 5.., the
/// dge-table after them.
const VAR_IDENTITY: u32 = 4;
const VAR_VIRTUAL0: u32 = 5;

/// The shape of one generated kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lnc2Matmul {
    /// Contraction length (columns of x, rows of y).
    pub k: usize,
    /// Output columns (both cores together).
    pub n: usize,
}

/// Per-partition SBUF layout of one core.
struct Layout {
    x: u32,
    xt: u32,
    identity: u32,
    stage: [u32; 2],
    y: [u32; 2],
    out16: u32,
    out32: u32,
}

/// Bundle counts of one core's streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamCounts {
    pub sp: usize,
    pub act: usize,
    pub pe: usize,
    pub dve: usize,
    pub pool: usize,
}

/// Why [`Lnc2Matmul::new`] refused a shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// `k` is zero or not a multiple of 256.
    #[error("k = {0}: must be a positive multiple of 256")]
    K(usize),
    /// `n` is zero or not a multiple of 1024.
    #[error("n = {0}: must be a positive multiple of 1024")]
    N(usize),
    /// One core's buffers do not fit the v3 SBUF partition.
    #[error("k = {k}, n = {n}: the buffers need {need} SBUF bytes per partition, v3 has {have}")]
    Sbuf {
        k: usize,
        n: usize,
        need: u64,
        have: u64,
    },
    /// `y` is past the reach of a DMA immediate offset.
    #[error("k = {k}, n = {n}: y is larger than the 4 GiB a DMA immediate offset reaches")]
    TooLarge { k: usize, n: usize },
    /// More groups of chunks than virtual variable ids.
    #[error("k = {0}: too many virtual variables")]
    Virtuals(usize),
}

impl Lnc2Matmul {
    /// The kernel for `x[128, k] @ y[k, n]`: `k` a multiple of 256, `n` a multiple of 1024
    /// (each core takes `n / 2` columns, in blocks of up to four 512-column PSUM banks), and
    /// the core's buffers within the v3 SBUF partition.
    pub fn new(k: usize, n: usize) -> Result<Lnc2Matmul, ShapeError> {
        if k == 0 || !k.is_multiple_of(2 * CHUNK) {
            return Err(ShapeError::K(k));
        }
        if n == 0 || !n.is_multiple_of(CORES * BANK_COLS) {
            return Err(ShapeError::N(n));
        }
        let g = Lnc2Matmul { k, n };
        let need = g.layout_end();
        let have = u64::from(tpbsim_isa::Geometry::of(Gen::V3).sbuf_partition_bytes);
        if need > have {
            return Err(ShapeError::Sbuf { k, n, need, have });
        }
        if (k as u64) * (n as u64) * 2 > u64::from(u32::MAX) + 1 {
            return Err(ShapeError::TooLarge { k, n });
        }
        if g.groups() + VAR_VIRTUAL0 as usize >= usize::from(u16::MAX) {
            return Err(ShapeError::Virtuals(k));
        }
        Ok(g)
    }

    /// The compiler's `matmul_large`: x[128, 32768] @ y[32768, 65536].
    pub fn large() -> Lnc2Matmul {
        Lnc2Matmul { k: 32768, n: 65536 }
    }

    /// Columns per core.
    pub fn cols(&self) -> usize {
        self.n / CORES
    }
    fn chunks(&self) -> usize {
        self.k / CHUNK
    }
    fn groups(&self) -> usize {
        self.chunks().div_ceil(GROUP)
    }
    fn chunks_in_group(&self, g: usize) -> usize {
        (self.chunks() - g * GROUP).min(GROUP)
    }
    fn banks(&self) -> usize {
        let banks_per_core = self.cols() / BANK_COLS;
        [MAX_BANKS, 2, 1]
            .into_iter()
            .find(|b| banks_per_core.is_multiple_of(*b))
            .unwrap_or(1)
    }
    /// Output columns per block.
    fn block(&self) -> usize {
        self.banks() * BANK_COLS
    }
    fn blocks(&self) -> usize {
        self.cols() / self.block()
    }
    fn var_dge_table(&self) -> u32 {
        VAR_VIRTUAL0 + self.groups() as u32
    }
    /// Floating-point operations of the whole product.
    pub fn flops(&self) -> f64 {
        2.0 * ROWS as f64 * self.k as f64 * self.n as f64
    }
    /// Bytes of x, y and output0.
    pub fn bytes(&self) -> (u64, u64, u64) {
        let (m, k, n) = (ROWS as u64, self.k as u64, self.n as u64);
        (m * k * 2, k * n * 2, m * n * 2)
    }

    fn layout(&self) -> Layout {
        let align = |v: u64| v.div_ceil(256) * 256;
        let mut at = u64::from(DGE_SCRATCH);
        let mut take = |bytes: u64| {
            let a = at;
            at = align(at + bytes);
            a as u32
        };
        let xk = (self.k * 2) as u64;
        let block = self.block() as u64;
        Layout {
            x: take(xk),
            xt: take(xk),
            identity: take((CHUNK * 2) as u64),
            stage: [
                take(VIRTUAL_BYTES / ROWS as u64),
                take(VIRTUAL_BYTES / ROWS as u64),
            ],
            y: [take(block * 2), take(block * 2)],
            out16: take(block * 2),
            out32: take(block * 4),
        }
    }

    fn layout_end(&self) -> u64 {
        let l = self.layout();
        u64::from(l.out32) + self.block() as u64 * 4
    }

    /// Bundle counts of each core's streams.
    pub fn counts(&self) -> StreamCounts {
        let t = self.streams(0);
        let count = |s: &str| s.lines().filter(|l| !l.trim().is_empty()).count();
        StreamCounts {
            sp: count(&t.sp),
            act: count(&t.act),
            pe: count(&t.pe),
            dve: count(&t.dve),
            pool: count(&t.pool),
        }
    }

    /// The NEFF.
    pub fn neff(&self) -> Result<Neff, NeffError> {
        let pack = |what: &str, reason: String| NeffError::Pack {
            what: what.to_string(),
            reason,
        };
        let mut out = Neff::new(&format!("matmul_{}x{}x{}", ROWS, self.k, self.n))?;
        out.header.lnc_size = CORES as u32;
        out.header.num_tpb = 1;
        out.header.requested_tpb_count = 1;
        out.header.tpb_per_node[0] = 1;
        // vnc | DVE perf mode | DGE | hardware DGE: the compiler's large file.
        out.header.feature_bits = 0x20_1c00;
        let json = |v: &Value| -> Vec<u8> {
            let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
            b.push(b'\n');
            b
        };
        out.members
            .insert("neff.json".into(), json(&self.neff_json()));
        out.members.insert(
            "kelf-0.json".into(),
            json(&json!({
                "graphs": (0..CORES).map(|c| json!({
                    "definition": format!("sg{c:02}/def.json"),
                    "name": format!("sg{c:02}"),
                })).collect::<Vec<_>>(),
                "version": "0.5",
                "target": "cayman",
            })),
        );
        let mut eye = Vec::with_capacity(CHUNK * CHUNK * 2);
        for r in 0..CHUNK {
            for c in 0..CHUNK {
                let v: u16 = if r == c { 0x3C00 } else { 0 };
                eye.extend(v.to_le_bytes());
            }
        }
        let eye = neff::npy::encode_npy(NumFormat::Float16, &[CHUNK as u64, CHUNK as u64], &eye)
            .map_err(|e| pack("the identity", e.to_string()))?;
        for c in 0..CORES {
            let sg = format!("sg{c:02}");
            let t = self.streams(c);
            for (file, text) in [
                ("SP", &t.sp),
                ("Activation", &t.act),
                ("PE", &t.pe),
                ("DVE", &t.dve),
                ("Pool", &t.pool),
            ] {
                let bundles =
                    tpbsim_isa::text::parse_text(text, Gen::V3).map_err(|(line, e)| {
                        pack(
                            &format!("{sg}/{file}.bin"),
                            format!(
                                "line {line}: {e}: {}",
                                text.lines().nth(line - 1).unwrap_or("")
                            ),
                        )
                    })?;
                let bytes: Vec<u8> = bundles.iter().flat_map(|b| b.0).collect();
                out.members.insert(format!("{sg}/{file}.bin"), bytes);
                let side = json!({"dma": [], "instr": format!("{file}.bin"), "name": format!("{file}.json")});
                out.members.insert(format!("{sg}/{file}.json"), json(&side));
            }
            out.members
                .insert(format!("{sg}/value_identity_CRSM.npy"), eye.clone());
            out.members
                .insert(format!("{sg}/def.json"), json(&self.def_json(c)));
        }
        Ok(out)
    }

    fn neff_json(&self) -> Value {
        let (k, n) = (self.k as u64, self.n as u64);
        json!({
            "nodes": [
                {"op": "null", "name": "x", "inputs": [], "output_names": ["x"], "is_param": "0"},
                {"op": "null", "name": "y", "inputs": [], "output_names": ["y"], "is_param": "0"},
                {"op": "tvm_op", "name": "sg_coreV10", "attrs": {
                    "func_name": "__kelf", "flatten_data": "0", "num_inputs": "2",
                    "kelf": "kelf-0.json", "num_outputs": CORES.to_string()},
                 "inputs": [[0, 0, 0], [1, 0, 0]],
                 "output_names": vec!["output0"; CORES]},
            ],
            "arg_nodes": [0, 1],
            "heads": (0..CORES).map(|c| json!([2, c, 0])).collect::<Vec<_>>(),
            "attrs": {
                "shape": ["list_shape", [[ROWS, k], [k, n], [ROWS, n], [ROWS, n]]],
                "storage_id": ["list_int", [0, 1, 2, 3]],
                "dltype": ["list_str", ["float16", "float16", "float16", "float16"]],
            },
            "node_row_ptr": [0, 1, 2, 2 + CORES],
            "metadata": {"signatures": {"default": {
                "inputs": {
                    "x": {"id": 0, "dtype": "float16", "shape": [ROWS, k]},
                    "y": {"id": 1, "dtype": "float16", "shape": [k, n]},
                },
                "outputs": {},
            }}},
        })
    }

    fn def_json(&self, core: usize) -> Value {
        let (xb, yb, ob) = self.bytes();
        let mut vars = serde_json::Map::new();
        vars.insert("SB".into(), json!({"type": "state-buffer", "var_id": 0}));
        vars.insert(
            "x".into(),
            json!({"ops": [], "size": xb, "type": "input", "var_id": 1}),
        );
        vars.insert(
            "y".into(),
            json!({"ops": [], "size": yb, "type": "input", "var_id": 2}),
        );
        vars.insert(
            "output0".into(),
            json!({"ops": [], "size": ob, "type": "output", "var_id": 3}),
        );
        vars.insert(
            "identity_sg0000".into(),
            json!({"alignment": 32768, "fabric_path": "main", "file_name": "value_identity_CRSM.npy",
                   "ops": [], "size": CHUNK * CHUNK * 2, "type": "file", "var_id": VAR_IDENTITY}),
        );
        for g in 0..self.groups() {
            vars.insert(
                format!("t125_i{}_RematSpillSave{g}_sg{core:02}", g * GROUP * CHUNK),
                json!({"backing_variable_off": g as u64 * VIRTUAL_BYTES, "ops": [],
                       "size": VIRTUAL_BYTES, "type": "virtual",
                       "var_id": VAR_VIRTUAL0 + g as u32}),
            );
        }
        vars.insert(
            "DGETable0".into(),
            json!({"list": [1, 2, 3], "type": "dge-table", "var_id": self.var_dge_table()}),
        );
        let queue = |owner: &str, first: u32, extra: Option<Value>| {
            let mut q = json!({
                "fabric_path": "main", "num_queues": QUEUES, "owner": owner,
                "semaphore_set": (first..first + QUEUES).collect::<Vec<_>>(), "type": "dynamic",
            });
            if let Some(e) = extra {
                q["dynamic_dma"] = e;
            }
            q
        };
        json!({
            "#rank_world_size": 0,
            "act": "Activation.json", "act_instr": "Activation.bin",
            "cc_streams": {"num_streams": 0},
            "debug_info": {},
            "dma_queue": {
                "qSPDynamicHW": queue("sp", 8, None),
                "qPoolDynamic": queue("pool", 24, Some(json!({
                    "SB_scratch_partition_offset": 0,
                    "SB_scratch_partition_size": DGE_SCRATCH}))),
                "qActDynamicHW": queue("act", 40, None),
            },
            "dve": "DVE.json", "dve_instr": "DVE.bin",
            "fp8_conversion_config": {
                "emax_fp8_e4m3": 8, "emax_fp8_e5m2": 15, "fp8_range_extension": true,
                "fp8_sis": false, "fp8_sns": false, "ocp_sat": true},
            "name": "definition",
            "neff_features": ["neff_feature_vnc"],
            "pe": "PE.json", "pe_instr": "PE.bin",
            "pool": "Pool.json", "pool_instr": "Pool.bin",
            "runtime_event_count": 12,
            "runtime_semaphore_count": 3,
            "runtime_statebuffer_reservation": [{"base_partition": 0, "offset": 229368,
                "partitions": 128, "size": 8, "type": "evtaccel"}],
            "sp": "SP.json", "sp_instr": "SP.bin",
            "var": Value::Object(vars),
            "version": "0.6",
        })
    }

    /// The five streams of core `core` as neuron-dialect text.
    fn streams(&self, core: usize) -> Streams {
        let l = self.layout();
        let kc_n = self.chunks();
        let banks = self.banks();
        let blocks = self.blocks();
        let block = self.block();
        let mut s = Streams::default();
        let open = "SET_ORDERING_MODE;\nPSEUDO_BRANCH_LABEL;\n";
        for t in [&mut s.sp, &mut s.act, &mut s.pe, &mut s.dve, &mut s.pool] {
            t.push_str(open);
        }
        let w = |t: &mut String, line: std::fmt::Arguments| {
            let _ = t.write_fmt(line);
            t.push('\n');
        };
        let sb = |off: u32| 0x1000_0000_0000_0000u64 | u64::from(off);
        let var = |id: u32, imm: u64| 0x1000_0000_0000_0000u64 | u64::from(id) << 32 | imm;
        let dge = |entry: u32, imm: u64| 0x2000_0000_0000_0000u64 | u64::from(entry) << 32 | imm;
        let dma = |wait: &str,
                   sem: u32,
                   src: u64,
                   src_step: u64,
                   src_elem: usize,
                   dst: u64,
                   dst_step: u64,
                   dst_elem: usize,
                   from: &str,
                   to: &str| {
            format!(
                "PSEUDO_DMA_DIRECT2D {wait}semaphore={sem} sem_increment={QUEUES} src={src:#x} \
                 src_step={src_step},1 src_num={ROWS},1 src_elem_size={src_elem} dst={dst:#x} \
                 dst_step={dst_step},1 dst_num={ROWS},1 dst_elem_size={dst_elem} \
                 in_dtype={from} out_dtype={to};"
            )
        };
        let pe_grid = "num_active_rows=128 num_active_cols=128";
        let groups = "row_grp=15 col_grp=15";
        // Stationary read last element first: 4 groups of 32 at -32, each at -1.
        let reversed = "[-1,0,-32][32,1,4]";
        let tbuf = |j: usize| PSUM + (6 + (j % 2) as u32) * BANK_BYTES;
        let bank = |b: usize| PSUM + b as u32 * BANK_BYTES;

        // SP: the identity, then each spilled group back into SBUF.
        w(
            &mut s.sp,
            format_args!(
                "{}",
                dma(
                    "",
                    S_IDENTITY,
                    var(VAR_IDENTITY, 0),
                    (CHUNK * 2) as u64,
                    CHUNK * 2,
                    sb(l.identity),
                    SB_PARTITION_STEP,
                    CHUNK * 2,
                    "FP16",
                    "FP16"
                )
            ),
        );
        for g in 0..self.groups() {
            let bytes = self.chunks_in_group(g) * CHUNK * 2;
            let wait = format!("$S[{S_SPILL}]>={} ", QUEUES as usize * (g + 1));
            w(
                &mut s.sp,
                format_args!(
                    "{}",
                    dma(
                        &wait,
                        S_REFILL,
                        var(VAR_VIRTUAL0 + g as u32, 0),
                        VIRTUAL_BYTES / ROWS as u64,
                        bytes,
                        sb(l.xt + (g * GROUP * CHUNK * 2) as u32),
                        SB_PARTITION_STEP,
                        bytes,
                        "FP16",
                        "FP16"
                    )
                ),
            );
        }

        // Pool: x in pieces of one group's columns.
        let xrow = (self.k * 2) as u64;
        let pieces = self.groups();
        for q in 0..pieces {
            let bytes = self.chunks_in_group(q) * CHUNK * 2;
            let off = (q * GROUP * CHUNK * 2) as u64;
            w(
                &mut s.pool,
                format_args!(
                    "{}",
                    dma(
                        "",
                        S_X,
                        dge(0, off),
                        xrow,
                        bytes,
                        sb(l.x + off as u32),
                        SB_PARTITION_STEP,
                        bytes,
                        "FP16",
                        "FP16"
                    )
                ),
            );
        }

        // PE: the transposes of x, two chunks per PSUM buffer.
        w(
            &mut s.pe,
            format_args!("EVENT_SEMAPHORE $S[{S_X}]>={};", QUEUES as usize * pieces),
        );
        for j in 0..kc_n / 2 {
            let wait = match j {
                0 => format!("$S[{S_IDENTITY}]>={QUEUES} "),
                1 => String::new(),
                _ => format!("$S[{S_ACT_T}]>={} ", j - 1),
            };
            for h in 0..2 {
                let c = 2 * j + h;
                let src = l.x + (c * CHUNK * 2) as u32 + 0xFE;
                let wait = if h == 0 { wait.as_str() } else { "" };
                w(&mut s.pe, format_args!("LDWEIGHTS {wait}src=fp16@{src:#x}{reversed} transpose_mode=1 {pe_grid} {groups};"));
                w(&mut s.pe, format_args!("MATMUL $S[{S_PE_T}]++@complete src=fp16@{:#x}[1,0,0][128,1,1] transpose_mode=1 {pe_grid} psum_accumulate_flags={{begin=1 end=1}} {groups} dst={:#x}[1,0,0][128,1,1];", l.identity, tbuf(j) + (h * CHUNK * 2) as u32));
            }
        }

        // ACT: each pair of transposes into the stage buffer as raw 4-byte words; a full group
        // spilled to its virtual variable.
        w(&mut s.act, format_args!("ACTIVATION_TABLE_LOAD;"));
        for j in 0..kc_n / 2 {
            let c = 2 * j;
            let g = c / GROUP;
            let stage = l.stage[g % 2];
            if c % GROUP == 0 && g >= 2 {
                w(
                    &mut s.act,
                    format_args!(
                        "EVENT_SEMAPHORE $S[{S_SPILL}]>={};",
                        QUEUES as usize * (g - 1)
                    ),
                );
            }
            w(&mut s.act, format_args!("COPY $S[{S_PE_T}]>={} $S[{S_ACT_T}]++@complete src=int32@{:#x}[1,1,1,1][128,1,1,1] num_active_channels=128 dst=int32@{:#x}[1,1,1,1][128,1,1,1];", 2 * (j + 1), tbuf(j), stage + ((c % GROUP) * CHUNK * 2) as u32));
            if (c + 2) % GROUP == 0 || j + 1 == kc_n / 2 {
                let bytes = self.chunks_in_group(g) * CHUNK * 2;
                let wait = format!("$S[{S_ACT_T}]>={} ", j + 1);
                w(
                    &mut s.act,
                    format_args!(
                        "{}",
                        dma(
                            &wait,
                            S_SPILL,
                            sb(stage),
                            SB_PARTITION_STEP,
                            bytes,
                            var(VAR_VIRTUAL0 + g as u32, 0),
                            VIRTUAL_BYTES / ROWS as u64,
                            bytes,
                            "FP16",
                            "FP16"
                        )
                    ),
                );
            }
        }

        // The blocks: Pool streams y, PE accumulates, DVE or ACT evacuates, Pool writes out.
        let col0 = core * self.cols();
        let yrow = (self.n * 2) as u64;
        let evac_wait = |nb: usize| -> String {
            // The evacuation of block nb done: DVE counts the even blocks' banks, ACT the odd.
            if nb.is_multiple_of(2) {
                format!("$S[{S_DVE_EVAC}]>={}", banks * (nb / 2 + 1))
            } else {
                format!("$S[{S_ACT_EVAC}]>={}", banks * nb.div_ceil(2))
            }
        };
        for nb in 0..blocks {
            let cols = col0 + nb * block;
            for kc in 0..kc_n {
                let st = nb * kc_n + kc;
                let buf = st % 2;
                let wait = if st >= 2 {
                    format!("$S[{S_PE_STEP}]>={} ", st - 1)
                } else {
                    String::new()
                };
                let off = ((kc * CHUNK) as u64 * self.n as u64 + cols as u64) * 2;
                w(
                    &mut s.pool,
                    format_args!(
                        "{}",
                        dma(
                            &wait,
                            S_Y + buf as u32,
                            dge(1, off),
                            yrow,
                            block * 2,
                            sb(l.y[buf]),
                            SB_PARTITION_STEP,
                            block * 2,
                            "FP16",
                            "FP16"
                        )
                    ),
                );

                if nb == 0 && kc % GROUP == 0 {
                    w(
                        &mut s.pe,
                        format_args!(
                            "EVENT_SEMAPHORE $S[{S_REFILL}]>={};",
                            QUEUES as usize * (kc / GROUP + 1)
                        ),
                    );
                }
                if kc == 0 && nb >= 1 {
                    w(
                        &mut s.pe,
                        format_args!("EVENT_SEMAPHORE {};", evac_wait(nb - 1)),
                    );
                }
                let src = l.xt + (kc * CHUNK * 2) as u32 + 0xFE;
                w(
                    &mut s.pe,
                    format_args!(
                        "LDWEIGHTS $S[{}]>={} src=fp16@{src:#x}{reversed} {pe_grid} {groups};",
                        S_Y + buf as u32,
                        QUEUES as usize * (st / 2 + 1)
                    ),
                );
                let flags = match (kc == 0, kc + 1 == kc_n) {
                    (true, true) => "{begin=1 end=1}",
                    (true, false) => "{begin=1}",
                    (false, true) => "{end=1}",
                    (false, false) => "{}",
                };
                for b in 0..banks {
                    let upd = if b + 1 == banks {
                        format!("$S[{S_PE_STEP}]++@complete ")
                    } else {
                        String::new()
                    };
                    w(&mut s.pe, format_args!("MATMUL {upd}src=fp16@{:#x}[1,0,0][{BANK_COLS},1,1] {pe_grid} psum_accumulate_flags={flags} {groups} dst={:#x}[1,0,0][{BANK_COLS},1,1];", l.y[buf] + (b * BANK_COLS * 2) as u32, bank(b)));
                }
            }
            // Evacuate block nb once its last step is done and its staging buffer is free.
            let done = (nb + 1) * kc_n;
            let out_off = cols as u64 * 2;
            // Even blocks: DVE casts to fp16 and the DMA copies; odd blocks: ACT copies the fp32
            // words and the DMA casts. Each engine waits for the output DMA of its previous block
            // before it overwrites that block's buffer.
            let (stream, op, sem, buf, width, dtype) = if nb % 2 == 0 {
                (&mut s.dve, "CAST", S_DVE_EVAC, l.out16, 2, ("fp16", "FP16"))
            } else {
                (&mut s.act, "COPY", S_ACT_EVAC, l.out32, 4, ("fp32", "FP32"))
            };
            if nb >= 2 {
                w(
                    stream,
                    format_args!(
                        "EVENT_SEMAPHORE $S[{S_OUT}]>={};",
                        QUEUES as usize * (nb - 1)
                    ),
                );
            }
            for b in 0..banks {
                let wait = if b == 0 {
                    format!("$S[{S_PE_STEP}]>={done} ")
                } else {
                    String::new()
                };
                w(stream, format_args!("{op} {wait}$S[{sem}]++@complete src=fp32@{:#x}[1,1,1,1][{BANK_COLS},1,1,1] num_active_channels=128 dst={}@{:#x}[1,1,1,1][{BANK_COLS},1,1,1];", bank(b), dtype.0, buf + (b * BANK_COLS * width) as u32));
            }
            let wait = format!("{} ", evac_wait(nb));
            w(
                &mut s.pool,
                format_args!(
                    "{}",
                    dma(
                        &wait,
                        S_OUT,
                        sb(buf),
                        SB_PARTITION_STEP,
                        block * width,
                        dge(2, out_off),
                        yrow,
                        block * 2,
                        dtype.1,
                        "FP16"
                    )
                ),
            );
        }
        w(
            &mut s.pool,
            format_args!("NOP $S[{S_OUT}]>={};", QUEUES as usize * blocks),
        );
        s
    }
}

#[derive(Default)]
struct Streams {
    sp: String,
    act: String,
    pe: String,
    dve: String,
    pool: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_outside_the_layout_are_refused_with_their_reason() {
        assert_eq!(Lnc2Matmul::new(0, 1024).err(), Some(ShapeError::K(0)));
        assert_eq!(Lnc2Matmul::new(384, 1024).err(), Some(ShapeError::K(384)));
        assert_eq!(Lnc2Matmul::new(256, 1536).err(), Some(ShapeError::N(1536)));
        assert!(matches!(
            Lnc2Matmul::new(65536, 1024),
            Err(ShapeError::Sbuf { k: 65536, .. })
        ));
        let large = Lnc2Matmul::large();
        assert!(Lnc2Matmul::new(large.k, large.n).is_ok());
        let c = Lnc2Matmul::new(256, 1024).unwrap().counts();
        assert!(c.pe > 0 && c.sp > 0, "{c:?}");
    }
}
