//! Builds large kernels for measuring simulation at scale.
//!
//! ```sh
//! cargo run -p tpbsim-sim --example build_big_kernels -- KIND [N] OUT.neff
//! cargo run -p tpbsim-sim --example build_big_kernels -- testdata [DIR]
//! ```
//!
//! Kinds:
//!
//! * `adds N`: one DVE stream of `N` one-partition one-element fp32 adds, `acc += one`, with
//!   `acc` and `one` in SBUF partition 0 (no DRAM variables, no DMA): `N` bundle positions that
//!   all hold the same bytes (64·N bytes of stream; not kept in testdata).
//! * `loop-adds N`: the same `N` adds as a loop of three bundles (add, counter increment,
//!   CompareBranch): 3·N executed bundles from a 5-bundle stream; `out` ends at `N`.
//! * `matmul_k64`, `layernorm_1024`, `attention_512`: the looped, double-buffered kernels of
//!   `testdata/kernels/` (`testdata [DIR]` writes all three; references by `make_refs.py`).
//!
//! The three testdata kernels share one pipeline: SP loads tile `t` into buffer `t % 2`
//! (block `t` of queue `in`; the entries increment `LOADED[b]`) once the compute engines have
//! released that buffer (`FREE[b] >= t / 2`), and stores tile `t` (block `t` of queue `out`,
//! incrementing `STORED[b]`) once they have finished it (`DONE[b] >= t / 2 + 1`). The compute
//! engines run a loop over pairs of tiles (buffer A, then buffer B), counting in registers: a
//! wait on a semaphore against a register (`SEM_GE_REG`) takes the place of the growing
//! immediate an unrolled stream would carry, ALU_OP (0xA8) advances counters and register
//! addresses, and CompareBranch (0xA9) closes each loop. Inner loops walk a tile in chunks
//! through operands whose ADDR4 is a register.

use std::path::{Path, PathBuf};

use tpbsim_isa::{
    AccumCmd, ActFunc, Activate, Addr4, AluOp, AluOpInst, BrTargetMode, Bundle, CmpOp,
    CompareBranch, DataSrc, DmaTrigger, Dtype, DtypePair, Engine, Events, F32Bits, Gen, Header,
    ImmSrc, ImmSrcN, LdWeights, LdWeightsV3, Matmul, MatmulV3, NumFormat, Opcode,
    PsumAccumulateFlags, ReadAccumulator, Tensor, TensorReduce, TensorReduceV2, TensorScalar,
    TensorSubdim, TensorTensor, TsReverse, UpdateMode, WaitMode, Wire, ZeroRegion,
};
use tpbsim_neff::{DmaEntry, VarKind, VarRef};
use tpbsim_sim::machine::ops::pe::{compiler_weights_source, ALL_QUADRANTS};
use tpbsim_sim::machine::pack::Package;
use tpbsim_sim::machine::Geometry;

const GEN: Gen = Gen::V3;

// ------------------------------------------------------------------ encoding helpers

fn geo() -> Geometry {
    Geometry::of(GEN)
}

fn sb(offset: u32) -> u32 {
    geo().sbuf_address(0, offset)
}

fn ps(offset: u32) -> u32 {
    geo().psum_address(0, offset)
}

fn tag(f: NumFormat) -> Dtype {
    Dtype(f.wire_tag(GEN).expect("format has a wire tag"))
}

/// The ADDR4 register form: the address is register `r` of the executing engine.
fn reg_addr(r: u8) -> Addr4 {
    Addr4(0x8000_0000 | u32::from(r))
}

/// `n` dense elements per partition from `addr`.
fn dense<const N: usize>(addr: Addr4, n: u16) -> Tensor<N> {
    let mut num = [1u16; N];
    num[0] = n;
    Tensor::new(addr, [1; N], num)
}

fn at<const N: usize>(addr: u32, n: u16) -> Tensor<N> {
    dense(Addr4::imm(addr), n)
}

/// A semaphore wait: `sem >= value` (immediate) or `sem >= register` (`SEM_GE_REG`).
#[derive(Clone, Copy)]
enum Wait {
    None,
    Imm(u8, u32),
    Reg(u8, u8),
}

/// Events of one bundle: an optional wait and an optional `SEM_INC_COMPLETE`.
fn ev(wait: Wait, inc: Option<u8>) -> Events {
    let mut e = Events::default();
    match wait {
        Wait::None => {}
        Wait::Imm(sem, v) => {
            e.wait_mode = WaitMode(0x05);
            e.wait_idx = sem;
            e.semaphore_value = v;
        }
        Wait::Reg(sem, r) => {
            e.wait_mode = WaitMode(0x85);
            e.wait_idx = sem;
            e.semaphore_value = u32::from(r);
        }
    }
    if let Some(sem) = inc {
        e.update_mode = UpdateMode(0x13);
        e.update_idx = sem;
    }
    e
}

/// Register 0 is never written: it reads 0.
const ZERO: u8 = 0;

/// One engine's stream being written, with the loop helpers.
#[derive(Default)]
struct Prog(Vec<Bundle>);

impl Prog {
    fn here(&self) -> usize {
        self.0.len()
    }

    fn put(&mut self, b: Bundle) {
        self.0.push(b);
    }

    /// `dst = src + imm` (uint32).
    fn add(&mut self, dst: u8, src: u8, imm: u32) {
        let u32t = tag(NumFormat::Uint32);
        self.put(
            AluOpInst {
                op: AluOp(0x04),
                dtype: u32t,
                src1_datasrc: DataSrc(1),
                dst_dtype: u32t,
                src0_reg_lo: src,
                dst_reg_lo: dst,
                imm: u64::from(imm),
                ..Default::default()
            }
            .to_bundle(),
        );
    }

    fn set(&mut self, dst: u8, imm: u32) {
        self.add(dst, ZERO, imm);
    }

    /// Branch back to bundle `top` while `register < end` (uint32).
    fn loop_while_below(&mut self, r: u8, end: u32, top: usize) {
        let rel = (top as i64 - self.here() as i64) * 64;
        self.put(
            CompareBranch {
                cmp_op: CmpOp::LT_IMM,
                dtype: tag(NumFormat::Uint32),
                target_mode: BrTargetMode(3),
                cmp_imm: end,
                cmp_reg0: r,
                br_immediate: rel as u64,
                ..Default::default()
            }
            .to_bundle(),
        );
    }

    /// A NOP carrying only events.
    fn nop(&mut self, e: Events) {
        let mut b = Bundle::ZERO;
        b.0[0] = 0xA4;
        b.0[1] = tpbsim_isa::INST_WORD_LEN;
        e.write(&mut b.0, 4);
        self.put(b);
    }

    /// The loop over pairs of tiles: `R_PAIR` counts pairs from 1 (the wait value for the
    /// `i`-th pair's loads, `i + 1`); `R_PREV` is `i` (the stores of the previous pair).
    fn pairs(&mut self, pairs: u32, mut body: impl FnMut(&mut Prog, usize)) {
        self.set(R_PAIR, 1);
        self.set(R_PREV, 0);
        let top = self.here();
        body(self, 0);
        body(self, 1);
        self.add(R_PAIR, R_PAIR, 1);
        self.add(R_PREV, R_PREV, 1);
        self.loop_while_below(R_PAIR, pairs + 1, top);
    }
}

/// Loop registers of every compute engine.
const R_PAIR: u8 = 1;
const R_PREV: u8 = 2;
/// Tile counter (from 1) of the engines that hand tiles to each other.
const R_TILE: u8 = 3;

/// Pipeline semaphores, per buffer.
const LOADED: [u8; 2] = [1, 2];
const FREE: [u8; 2] = [3, 4];
const DONE: [u8; 2] = [5, 6];
const STORED: [u8; 2] = [7, 8];
/// The constants (loaded once, before the first tile).
const CONSTS: u8 = 9;

fn trigger(queue: &str, block: u32, wait: Wait) -> Bundle {
    let mut name = [0u8; 36];
    name[..queue.len()].copy_from_slice(queue.as_bytes());
    DmaTrigger {
        events: ev(wait, None),
        queue_name: name,
        block_id: block,
        ..Default::default()
    }
    .to_bundle()
}

/// SP of the pipeline: the constant block (if any), the loads of tiles 0 and 1, then per
/// tile its store (`per_tile_store`) and the load two tiles ahead; with one store at the end
/// instead, that store waits for `DONE[0] >= 1`.
fn sp_pipeline(tiles: u32, consts: bool, per_tile_store: bool) -> Vec<Bundle> {
    let mut sp = Prog::default();
    if consts {
        sp.put(trigger("const", 0, Wait::None));
    }
    for t in 0..tiles.min(2) {
        sp.put(trigger("in", t, Wait::None));
    }
    for t in 0..tiles {
        let b = (t % 2) as usize;
        if per_tile_store {
            sp.put(trigger("out", t, Wait::Imm(DONE[b], t / 2 + 1)));
        }
        if t + 2 < tiles {
            sp.put(trigger("in", t + 2, Wait::Imm(FREE[b], t / 2 + 1)));
        }
    }
    if !per_tile_store {
        sp.put(trigger("out", 0, Wait::Imm(DONE[0], 1)));
    }
    sp.0
}

fn state_buffer() -> VarRef {
    VarRef::Name("state_buffer".into())
}

/// Elements of `f` per SBUF partition stride.
fn stride(f: NumFormat) -> i64 {
    i64::from(geo().sbuf_partition_stride()) / f.container_bytes() as i64
}

/// DRAM `var` → SBUF: `sizes` (outermost first) read with `dram_steps` from element
/// `dram_elem`, written with `sbuf_steps` from SBUF byte `sbuf_off`; increments `sem`.
#[allow(clippy::too_many_arguments)]
fn load(
    var: &str,
    f: NumFormat,
    dram_elem: u64,
    sizes: Vec<u64>,
    dram_steps: Vec<i64>,
    sbuf_off: u32,
    sbuf_steps: Vec<i64>,
    sem: u8,
) -> DmaEntry {
    let mut e = DmaEntry::copy(VarRef::Name(var.into()), state_buffer(), sizes);
    e.from_offset = dram_elem * f.container_bytes() as u64;
    e.from_steps = Some(dram_steps);
    e.to_offset = u64::from(sbuf_off);
    e.to_steps = Some(sbuf_steps);
    e.sem = Some(u32::from(sem));
    e
}

/// SBUF rows (`rows` partitions of `cols` elements from byte `sbuf_off`) → DRAM `var`, a
/// row-major block starting at element `dram_elem` with `row_len` elements per row.
#[allow(clippy::too_many_arguments)]
fn store_rows(
    var: &str,
    f: NumFormat,
    sbuf_off: u32,
    rows: u64,
    cols: u64,
    dram_elem: u64,
    row_len: i64,
    sem: Option<u8>,
) -> DmaEntry {
    let mut e = DmaEntry::copy(state_buffer(), VarRef::Name(var.into()), vec![rows, cols]);
    e.from_offset = u64::from(sbuf_off);
    e.from_steps = Some(vec![stride(f), 1]);
    e.to_offset = dram_elem * f.container_bytes() as u64;
    e.to_steps = Some(vec![row_len, 1]);
    e.sem = sem.map(u32::from);
    e
}

/// DRAM row-major rows → SBUF partitions (row `r` of the block to partition `r`).
#[allow(clippy::too_many_arguments)]
fn load_rows(
    var: &str,
    f: NumFormat,
    dram_elem: u64,
    rows: u64,
    cols: u64,
    row_len: i64,
    sbuf_off: u32,
    sem: u8,
) -> DmaEntry {
    load(
        var,
        f,
        dram_elem,
        vec![rows, cols],
        vec![row_len, 1],
        sbuf_off,
        vec![stride(f), 1],
        sem,
    )
}

/// Tile `t`'s blocks: its load (block `t` of queue `in`) and its store (block `t` of `out`).
fn tile_io(p: &mut Package, t: u32, load: Vec<DmaEntry>, store: Option<DmaEntry>) {
    p.block(Engine::Sp, "in", u64::from(t), load);
    if let Some(st) = store {
        p.block(Engine::Sp, "out", u64::from(t), vec![st]);
    }
}

// ------------------------------------------------------------------ data

/// Deterministic inputs: splitmix64 and a sum of uniforms (roughly normal, unit variance).
struct Gen64(u64);

impl Gen64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn normals(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|_| {
                let s: f64 = (0..3)
                    .map(|_| (self.next() >> 11) as f64 / 2f64.powi(53))
                    .sum();
                ((s - 1.5) * 2.0) as f32 * scale
            })
            .collect()
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// fp32 → bf16 with round-to-nearest-even (finite inputs).
fn bf16_bytes(v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| {
            let b = x.to_bits();
            let r = b.wrapping_add(0x7FFF + ((b >> 16) & 1));
            ((r >> 16) as u16).to_le_bytes()
        })
        .collect()
}

fn input(p: &mut Package, name: &str, f: NumFormat, shape: &[u64], data: &[u8]) {
    p.var(name, VarKind::Input, f, shape, Some(data))
        .expect("input variable");
}

fn output(p: &mut Package, name: &str, f: NumFormat, shape: &[u64]) {
    p.var(name, VarKind::Output, f, shape, None)
        .expect("output variable");
}

fn pipeline_package(name: &str) -> Package {
    let mut p = Package::new(name, GEN);
    p.onchip();
    for q in ["const", "in", "out"] {
        p.queue(q, None);
    }
    p
}

// ------------------------------------------------------------------ matmul_k64

const BF16: NumFormat = NumFormat::Bfloat16;
const F32: NumFormat = NumFormat::Float32;

/// `out[64, 64] = wᵀ · x` with `w`, `x` `[2048, 64]` bf16: the contraction in 64 tiles of 32
/// rows, accumulated in PSUM (fp32). Tile `t` (32 rows of `w` and of `x`) lands in buffer
/// `t % 2`; per tile PE loads four 16-column blocks of `w` as weights (LdWeights) and, for each,
/// runs an inner loop of 16 Matmuls over 4-column chunks of `x` (register addresses) into the
/// block's PSUM region. The very first Matmul starts the accumulation (flags START, which
/// zeroes the PSUM bank of all four regions); every other one adds. ACT
/// copies PSUM to SBUF once every tile is in, and SP stores it.
fn matmul_k64() -> Package {
    const TILES: u32 = 64;
    const KT: u64 = 32;
    const M: u64 = 64;
    const N: u64 = 64;
    const MB: u32 = 16; // weight columns per block
    const NC: u32 = 4; // moving columns per Matmul
    let (w_off, x_off) = ([0u32, 256], [512u32, 768]);
    let out_off = 4096u32;
    let mut g = Gen64(11);
    let mut p = pipeline_package("matmul_k64");
    let k = KT * u64::from(TILES);
    input(
        &mut p,
        "w",
        BF16,
        &[k, M],
        &bf16_bytes(&g.normals((k * M) as usize, 1.0)),
    );
    input(
        &mut p,
        "x",
        BF16,
        &[k, N],
        &bf16_bytes(&g.normals((k * N) as usize, 1.0)),
    );
    output(&mut p, "out", F32, &[M, N]);
    for t in 0..TILES {
        let b = (t % 2) as usize;
        let row = u64::from(t) * KT;
        tile_io(
            &mut p,
            t,
            vec![
                load_rows("w", BF16, row * M, KT, M, M as i64, w_off[b], LOADED[b]),
                load_rows("x", BF16, row * N, KT, N, N as i64, x_off[b], LOADED[b]),
            ],
            None,
        );
    }
    // PSUM partition c of block m holds out row 16m + c: out[16m + c, n] ← SBUF c, element 64m + n.
    let mut st = DmaEntry::copy(
        state_buffer(),
        VarRef::Name("out".into()),
        vec![M / u64::from(MB), u64::from(MB), N],
    );
    st.from_offset = u64::from(out_off);
    st.from_steps = Some(vec![N as i64, stride(F32), 1]);
    st.to_steps = Some(vec![i64::from(MB) * N as i64, N as i64, 1]);
    p.block(Engine::Sp, "out", 0, vec![st]);

    let bft = tag(BF16);
    const R_SRC: u8 = 4;
    const R_DST: u8 = 5;
    // One tile from buffer `b`; `wait` guards its first bundle; `start` begins the accumulation.
    let tile = |pe: &mut Prog, b: usize, wait: Wait, start: bool| {
        for m in 0..(M as u32 / MB) {
            pe.put(
                LdWeights::V3(LdWeightsV3 {
                    header: Header::new(Opcode(0x01)),
                    events: ev(if m == 0 { wait } else { Wait::None }, None),
                    // Block m's MB weight columns, read last to first (column c = element c).
                    src: compiler_weights_source(sb(w_off[b] + 2 * MB * m), MB as u16, 2),
                    in_dtype: bft,
                    num_active_rows: KT as u8,
                    num_active_cols: MB as u8,
                    row_grp: ALL_QUADRANTS,
                    col_grp: ALL_QUADRANTS,
                    ..Default::default()
                })
                .to_bundle(),
            );
            let region = ps(4 * N as u32 * m);
            let matmul = |src: Addr4, dst: Addr4, start: bool| {
                Matmul::V3(MatmulV3 {
                    header: Header::new(Opcode(0x02)),
                    src: dense(src, NC as u16),
                    in_dtype: bft,
                    out_dtype: tag(F32),
                    num_active_rows: KT as u8,
                    num_active_cols: MB as u8,
                    // START zeroes the 2 KiB bank holding every block's region, then writes.
                    psum_accumulate_flags: PsumAccumulateFlags::from_bits(u8::from(start)),
                    row_grp: ALL_QUADRANTS,
                    col_grp: ALL_QUADRANTS,
                    psum_zero_region: ZeroRegion(0),
                    dst: dense(dst, NC as u16),
                    ..Default::default()
                })
                .to_bundle()
            };
            let peel = start && m == 0;
            if peel {
                pe.put(matmul(Addr4::imm(sb(x_off[b])), Addr4::imm(region), true));
            }
            pe.set(R_SRC, sb(x_off[b]) + if peel { 2 * NC } else { 0 });
            pe.set(R_DST, region + if peel { 4 * NC } else { 0 });
            let top = pe.here();
            pe.put(matmul(reg_addr(R_SRC), reg_addr(R_DST), false));
            pe.add(R_SRC, R_SRC, 2 * NC);
            pe.add(R_DST, R_DST, 4 * NC);
            pe.loop_while_below(R_DST, region + 4 * N as u32, top);
        }
        // Both operands of buffer b are read: SP may refill it.
        pe.nop(ev(Wait::None, Some(FREE[b])));
    };
    let mut pe = Prog::default();
    tile(&mut pe, 0, Wait::Imm(LOADED[0], 2), true);
    tile(&mut pe, 1, Wait::Imm(LOADED[1], 2), false);
    // Pairs 1..32: the loads of pair i have raised LOADED[b] to 2(i + 1).
    const R_LOADS: u8 = 6;
    pe.set(R_LOADS, 4);
    let top = pe.here();
    tile(&mut pe, 0, Wait::Reg(LOADED[0], R_LOADS), false);
    tile(&mut pe, 1, Wait::Reg(LOADED[1], R_LOADS), false);
    pe.add(R_LOADS, R_LOADS, 2);
    pe.loop_while_below(R_LOADS, 2 * (TILES / 2) + 1, top);
    const ACC_DONE: u8 = 10;
    pe.nop(ev(Wait::None, Some(ACC_DONE)));
    p.streams[Engine::Pe as usize] = pe.0;
    p.streams[Engine::Act as usize] = vec![activate(
        ev(Wait::Imm(ACC_DONE, 1), Some(DONE[0])),
        1, // identity
        Bias::Imm(0.0),
        1.0,
        AccumCmd(0),
        MB as u8,
        (at(ps(0), (M as u16 / MB as u16) * N as u16), F32),
        (at(sb(out_off), (M as u16 / MB as u16) * N as u16), F32),
    )];
    p.streams[Engine::Sp as usize] = sp_pipeline(TILES, false, false);
    p
}

enum Bias {
    Imm(f32),
    Column(u32),
}

/// Activate: `dst = f(src × scale + bias)`, fp32 arithmetic, with an accumulator command.
#[allow(clippy::too_many_arguments)]
fn activate(
    events: Events,
    func: u8,
    bias: Bias,
    scale: f32,
    acc: AccumCmd,
    partitions: u8,
    src: (Tensor<3>, NumFormat),
    dst: (Tensor<3>, NumFormat),
) -> Bundle {
    let (bias_src_n, bias) = match bias {
        Bias::Imm(v) => (ImmSrcN(1), v.to_bits()),
        Bias::Column(a) => (ImmSrcN(0), a),
    };
    Activate {
        events,
        imm_src: ImmSrc(0),
        scale_src: ImmSrc(0),
        accumulator_cmd: acc,
        bias_src_n,
        src: src.0,
        in_bias_dtypes: DtypePair::new(tag(src.1), tag(F32)),
        out_dtype: tag(dst.1),
        num_active_partitions: partitions,
        activation_func: ActFunc(func),
        scale_value: F32Bits::from_f32(scale),
        bias,
        imm: 0,
        dst: dst.0,
        ..Default::default()
    }
    .to_bundle()
}

fn read_acc(events: Events, partitions: u8, dst: u32) -> Bundle {
    ReadAccumulator {
        events,
        dst_element_count: 1,
        dtype: tag(F32),
        negated: 0,
        num_active_partitions: partitions,
        dst: at(dst, 1),
        ..Default::default()
    }
    .to_bundle()
}

/// fp32 TensorScalar `dst = (src op0 s0) op1 s1`, each scalar a per-partition column
/// (POINTER) at the given address.
fn ts_columns(
    events: Events,
    partitions: u8,
    src: Tensor<3>,
    dst: Tensor<3>,
    (op0, col0): (u8, u32),
    (op1, col1): (u8, u32),
) -> Bundle {
    TensorScalar {
        header: Header::new(Opcode(0x43)),
        events,
        accumulator_cmd: AccumCmd(0),
        src,
        in_dtype: tag(F32),
        out_dtype: tag(F32),
        num_active_partitions: partitions,
        imm0_src: ImmSrc(1),
        op0: AluOp(op0),
        op1: AluOp(op1),
        reverse: TsReverse::from_bits(0),
        imm1_src: ImmSrc(1),
        imm0: col0,
        imm1: col1,
        dst,
        ..Default::default()
    }
    .to_bundle()
}

fn tt(events: Events, partitions: u8, op: u8, a: Tensor<3>, b: Tensor<3>, d: Tensor<3>) -> Bundle {
    let f = tag(F32);
    TensorTensor {
        events,
        in_dtypes: DtypePair::new(f, f),
        out_dtype: f,
        op: AluOp(op),
        num_active_partitions: partitions,
        src0: a,
        src1: b,
        dst: d,
        ..Default::default()
    }
    .to_bundle()
}

/// S4D4_TR (TensorReduce 0x42 / Reciprocal 0x48) over fp32 rows of `n` elements.
#[allow(clippy::too_many_arguments)]
fn tr(
    opcode: u8,
    events: Events,
    partitions: u8,
    op: u8,
    negated: u8,
    src: u32,
    n: u16,
    dst: u32,
) -> Bundle {
    TensorReduce::V2(TensorReduceV2 {
        header: Header::new(Opcode(opcode)),
        events,
        src: at(src, n),
        in_dtype: tag(F32),
        out_dtype: tag(F32),
        num_active_channels: partitions,
        negated,
        op: AluOp(op),
        op_dim: TensorSubdim(u8::from(opcode == 0x42)),
        dst: at(dst, 1),
        ..Default::default()
    })
    .to_bundle()
}

// ------------------------------------------------------------------ layernorm_1024

/// Layer normalisation of `x[1024, 128]` fp32 over each row, `out = (x − mean) ·
/// rsqrt(var + 1e-5) · gamma + beta`, in 32 tiles of 32 rows. ACT computes each tile's
/// statistics in two passes over 4-column chunks (register addresses): the row sums
/// accumulated by an identity Activate, then `negmean = −sum / 128`, then the sums of
/// `(x − mean)²` accumulated by Square with the `negmean` column as bias, then
/// `rstd = rsqrt(ssd / 128 + eps)`. DVE then normalises chunk by chunk: `(x + negmean) · rstd`
/// (TensorScalar with two column pointers), `· gamma`, `+ beta` (TensorTensor against the
/// broadcast constant tiles) into the tile's output buffer.
fn layernorm_1024() -> Package {
    const ROWS: u64 = 1024;
    const D: u32 = 128;
    const P: u32 = 32; // rows per tile
    const C: u32 = 4; // columns per chunk
    const TILES: u32 = (ROWS / P as u64) as u32;
    const EPS: f32 = 1e-5;
    let row_bytes = 4 * D;
    let x_off = [0, row_bytes];
    let o_off = [2 * row_bytes, 3 * row_bytes];
    let (g_off, b_off) = (4 * row_bytes, 5 * row_bytes);
    let junk = 6 * row_bytes;
    // Per-buffer statistic columns: sum, negmean, ssd, rstd.
    let col = |b: usize, i: u32| 6 * row_bytes + 64 + 64 * b as u32 + 4 * i;
    const STATS: [u8; 2] = [10, 11];
    let mut g = Gen64(12);
    let mut p = pipeline_package("layernorm_1024");
    let x: Vec<f32> = g
        .normals((ROWS * u64::from(D)) as usize, 1.5)
        .iter()
        .enumerate()
        .map(|(i, v)| v + ((i / D as usize) % 7) as f32 * 0.25)
        .collect();
    let gamma: Vec<f32> = g.normals(D as usize, 0.3).iter().map(|v| 1.0 + v).collect();
    let beta = g.normals(D as usize, 0.2);
    let d = u64::from(D);
    input(&mut p, "x", F32, &[ROWS, d], &f32_bytes(&x));
    input(&mut p, "gamma", F32, &[d], &f32_bytes(&gamma));
    input(&mut p, "beta", F32, &[d], &f32_bytes(&beta));
    output(&mut p, "out", F32, &[ROWS, d]);
    let bcast = |var: &str, off: u32| {
        load(
            var,
            F32,
            0,
            vec![u64::from(P), d],
            vec![0, 1],
            off,
            vec![stride(F32), 1],
            CONSTS,
        )
    };
    p.block(
        Engine::Sp,
        "const",
        0,
        vec![bcast("gamma", g_off), bcast("beta", b_off)],
    );
    for t in 0..TILES {
        let b = (t % 2) as usize;
        let first = u64::from(t * P) * d;
        tile_io(
            &mut p,
            t,
            vec![load_rows(
                "x",
                F32,
                first,
                u64::from(P),
                d,
                d as i64,
                x_off[b],
                LOADED[b],
            )],
            Some(store_rows(
                "out",
                F32,
                o_off[b],
                u64::from(P),
                d,
                first,
                d as i64,
                Some(STORED[b]),
            )),
        );
    }
    let pp = P as u8;
    let chunk = |addr: Addr4| (dense(addr, C as u16), F32);
    let junk_t = (at(sb(junk), C as u16), F32);
    const R_X: u8 = 4;
    // ACT: one pass accumulating f(x + bias) over the chunks of buffer b.
    let pass = |act: &mut Prog, b: usize, func: u8, bias: &dyn Fn() -> Bias, wait: Wait| {
        act.put(activate(
            ev(wait, None),
            func,
            bias(),
            1.0,
            AccumCmd::ZERO_ACCUMULATE,
            pp,
            chunk(Addr4::imm(sb(x_off[b]))),
            junk_t,
        ));
        act.set(R_X, sb(x_off[b] + 4 * C));
        let top = act.here();
        act.put(activate(
            Events::default(),
            func,
            bias(),
            1.0,
            AccumCmd::ACCUMULATE,
            pp,
            chunk(reg_addr(R_X)),
            junk_t,
        ));
        act.add(R_X, R_X, 4 * C);
        act.loop_while_below(R_X, sb(x_off[b] + row_bytes), top);
    };
    let mut act = Prog::default();
    act.pairs(TILES / 2, |act, b| {
        let column = |i: u32| (at(sb(col(b, i)), 1), F32);
        pass(act, b, 1, &|| Bias::Imm(0.0), Wait::Reg(LOADED[b], R_PAIR));
        act.put(read_acc(Events::default(), pp, sb(col(b, 0))));
        act.put(activate(
            Events::default(),
            1,
            Bias::Imm(0.0),
            -1.0 / D as f32,
            AccumCmd::IDLE,
            pp,
            column(0),
            column(1),
        ));
        pass(act, b, 30, &|| Bias::Column(sb(col(b, 1))), Wait::None);
        act.put(read_acc(Events::default(), pp, sb(col(b, 2))));
        act.put(activate(
            ev(Wait::None, Some(STATS[b])),
            29,
            Bias::Imm(EPS),
            1.0 / D as f32,
            AccumCmd::IDLE,
            pp,
            column(2),
            column(3),
        ));
    });
    p.streams[Engine::Act as usize] = act.0;

    const R_O: u8 = 5;
    const R_G: u8 = 6;
    const R_B: u8 = 7;
    let mut dve = Prog::default();
    dve.nop(ev(Wait::Imm(CONSTS, 2), None));
    dve.pairs(TILES / 2, |dve, b| {
        dve.nop(ev(Wait::Reg(STORED[b], R_PREV), None));
        dve.nop(ev(Wait::Reg(STATS[b], R_PAIR), None));
        for (r, off) in [(R_X, x_off[b]), (R_O, o_off[b]), (R_G, g_off), (R_B, b_off)] {
            dve.set(r, sb(off));
        }
        let top = dve.here();
        let t = |r: u8| dense(reg_addr(r), C as u16);
        dve.put(ts_columns(
            Events::default(),
            pp,
            t(R_X),
            t(R_O),
            (0x04, sb(col(b, 1))),
            (0x06, sb(col(b, 3))),
        ));
        dve.put(tt(Events::default(), pp, 0x06, t(R_O), t(R_G), t(R_O)));
        dve.put(tt(Events::default(), pp, 0x04, t(R_O), t(R_B), t(R_O)));
        for r in [R_X, R_O, R_G, R_B] {
            dve.add(r, r, 4 * C);
        }
        dve.loop_while_below(R_X, sb(x_off[b] + row_bytes), top);
        dve.nop(ev(Wait::None, Some(FREE[b])));
        dve.nop(ev(Wait::None, Some(DONE[b])));
    });
    p.streams[Engine::Dve as usize] = dve.0;
    p.streams[Engine::Sp as usize] = sp_pipeline(TILES, true, true);
    p
}

// ------------------------------------------------------------------ attention_512

/// One attention head, `out = softmax(q · kᵀ) · v` over 512 tokens (no scaling, no mask),
/// `q`, `k`, `v` `[512, 32]` bf16, `out` fp32, in 32 query tiles of 16. Kᵀ `[32, 512]`, V (keys
/// on partitions, four 128-key tiles) and a 16 × 16 identity are loaded once; the query tiles
/// (as Qᵀ) stream through two buffers. Per tile:
///
/// 1. PE: Qᵀ as weights; an inner loop of 64 Matmuls over 8-key chunks of Kᵀ writes the scores
///    `S[16, 512]` to PSUM.
/// 2. DVE: `negmax = −max_k S` per query (TensorReduce, negated).
/// 3. ACT: `P = exp(S + negmax)` chunk by chunk (bias column; the row sums accumulated), `P`
///    written as bf16; the sums read out.
/// 4. PE: `Pᵀ` by four transposes through the identity (LdWeights P's 128-key block, Matmul of
///    the identity); ACT copies `Pᵀ` to SBUF (bf16).
/// 5. PE: `O = Σ_kt Pᵀ_ktᵀ · V_kt`, accumulated over the four key tiles in PSUM.
/// 6. DVE: `out = O · (1 / sum)` into the tile's output buffer; SP stores it.
fn attention_512() -> Package {
    const T: u64 = 512;
    const DH: u64 = 32;
    const QT: u32 = 16; // queries per tile
    const KC: u32 = 8; // keys per score Matmul / exp chunk
    const TILES: u32 = (T / QT as u64) as u32;
    // SBUF layout (bytes per partition).
    let kt_off = 0u32; // Kᵀ: 512 bf16
    let v_off = 1024u32; // V: 4 key tiles × 32 bf16
    let id_off = 1280u32; // identity: 16 bf16
    let q_off = [1536u32, 1600]; // Qᵀ tiles: 16 bf16
    let p_off = 2048u32; // P: 512 bf16
    let pt_off = 3072u32; // Pᵀ: 4 key tiles × 16 bf16
    let (nm_off, sum_off, rc_off) = (3328u32, 3344u32, 3360u32);
    let o_off = [3456u32, 3584]; // out tiles: 32 fp32
                                 // PSUM layout.
    let (s_ps, pt_ps, o_ps) = (ps(0), ps(2048), ps(4096));
    // Stage semaphores (counted per tile).
    const S_READY: u8 = 10;
    const NEGMAX_READY: u8 = 11;
    const P_READY: u8 = 12;
    const PT_READY: u8 = 13;
    const PT_COPIED: u8 = 14;
    const O_READY: u8 = 15;

    let mut g = Gen64(13);
    let mut p = pipeline_package("attention_512");
    let q = bf16_bytes(&g.normals((T * DH) as usize, 0.5));
    let k = bf16_bytes(&g.normals((T * DH) as usize, 0.5));
    let v = bf16_bytes(&g.normals((T * DH) as usize, 1.0));
    let ident: Vec<f32> = (0..QT * QT)
        .map(|i| if i / QT == i % QT { 1.0 } else { 0.0 })
        .collect();
    input(&mut p, "q", BF16, &[T, DH], &q);
    input(&mut p, "k", BF16, &[T, DH], &k);
    input(&mut p, "v", BF16, &[T, DH], &v);
    input(
        &mut p,
        "ident",
        BF16,
        &[u64::from(QT), u64::from(QT)],
        &bf16_bytes(&ident),
    );
    output(&mut p, "out", F32, &[T, DH]);
    let sbf = stride(BF16);
    let dh = DH as i64;
    p.block(
        Engine::Sp,
        "const",
        0,
        vec![
            // Kᵀ: k[j, d] → partition d, element j.
            load(
                "k",
                BF16,
                0,
                vec![DH, T],
                vec![1, dh],
                kt_off,
                vec![sbf, 1],
                CONSTS,
            ),
            // V: v[128 kt + r, d] → partition r, element 32 kt + d.
            load(
                "v",
                BF16,
                0,
                vec![4, 128, DH],
                vec![128 * dh, dh, 1],
                v_off,
                vec![dh, sbf, 1],
                CONSTS,
            ),
            load_rows(
                "ident",
                BF16,
                0,
                u64::from(QT),
                u64::from(QT),
                i64::from(QT),
                id_off,
                CONSTS,
            ),
        ],
    );
    for t in 0..TILES {
        let b = (t % 2) as usize;
        let first = u64::from(t * QT) * DH;
        // Qᵀ tile: q[16 t + j, d] → partition d, element j.
        tile_io(
            &mut p,
            t,
            vec![load(
                "q",
                BF16,
                first,
                vec![DH, u64::from(QT)],
                vec![1, dh],
                q_off[b],
                vec![sbf, 1],
                LOADED[b],
            )],
            Some(store_rows(
                "out",
                F32,
                o_off[b],
                u64::from(QT),
                DH,
                first,
                dh,
                Some(STORED[b]),
            )),
        );
    }

    let (bft, f32t) = (tag(BF16), tag(F32));
    // `cols` bf16 weights per partition from `addr`, read last to first (column c = element c).
    let ldw = |events: Events, addr: u32, rows: u8, cols: u8| {
        LdWeights::V3(LdWeightsV3 {
            header: Header::new(Opcode(0x01)),
            events,
            src: compiler_weights_source(addr, u16::from(cols), 2),
            in_dtype: bft,
            num_active_rows: rows,
            num_active_cols: cols,
            row_grp: ALL_QUADRANTS,
            col_grp: ALL_QUADRANTS,
            ..Default::default()
        })
        .to_bundle()
    };
    let mm = |events: Events, src: Tensor<3>, rows: u8, cols: u8, start: bool, dst: Tensor<3>| {
        Matmul::V3(MatmulV3 {
            header: Header::new(Opcode(0x02)),
            events,
            src,
            in_dtype: bft,
            out_dtype: f32t,
            num_active_rows: rows,
            num_active_cols: cols,
            psum_accumulate_flags: PsumAccumulateFlags::from_bits(u8::from(start)),
            row_grp: ALL_QUADRANTS,
            col_grp: ALL_QUADRANTS,
            psum_zero_region: ZeroRegion(0),
            dst,
            ..Default::default()
        })
        .to_bundle()
    };
    const R_S: u8 = 4;
    const R_D: u8 = 5;
    let (qt, dhu) = (QT as u8, DH as u8);
    let mut pe = Prog::default();
    pe.nop(ev(Wait::Imm(CONSTS, 3), None));
    pe.set(R_TILE, 1);
    pe.pairs(TILES / 2, |pe, b| {
        // 1. Scores; the Qᵀ buffer is free once its weights are loaded.
        pe.put(ldw(
            ev(Wait::Reg(LOADED[b], R_PAIR), Some(FREE[b])),
            sb(q_off[b]),
            dhu,
            qt,
        ));
        // The first chunk starts the group (START zeroes the 2 KiB bank S fills); the others add.
        pe.put(mm(
            Events::default(),
            at(sb(kt_off), KC as u16),
            dhu,
            qt,
            true,
            at(s_ps, KC as u16),
        ));
        pe.set(R_S, sb(kt_off + 2 * KC));
        pe.set(R_D, s_ps + 4 * KC);
        let top = pe.here();
        pe.put(mm(
            Events::default(),
            dense(reg_addr(R_S), KC as u16),
            dhu,
            qt,
            false,
            dense(reg_addr(R_D), KC as u16),
        ));
        pe.add(R_S, R_S, 2 * KC);
        pe.add(R_D, R_D, 4 * KC);
        pe.loop_while_below(R_D, s_ps + 4 * T as u32, top);
        pe.nop(ev(Wait::None, Some(S_READY)));
        // 4. Pᵀ, key tile by key tile: psum[r][j] = Σ_i P[i][128 kt + r] · I[i][j].
        for kt in 0..4u32 {
            let w = if kt == 0 {
                Wait::Reg(P_READY, R_TILE)
            } else {
                Wait::None
            };
            pe.put(ldw(ev(w, None), sb(p_off + 256 * kt), qt, 128));
            let upd = (kt == 3).then_some(PT_READY);
            // The first transpose zeroes the bank; the others add onto zeros.
            pe.put(mm(
                ev(Wait::None, upd),
                at(sb(id_off), QT as u16),
                qt,
                128,
                kt == 0,
                at(pt_ps + 4 * QT * kt, QT as u16),
            ));
        }
        // 5. O[j][d] = Σ_kt Σ_r Pᵀ[r][kt, j] · V[r][kt, d].
        for kt in 0..4u32 {
            let w = if kt == 0 {
                Wait::Reg(PT_COPIED, R_TILE)
            } else {
                Wait::None
            };
            pe.put(ldw(ev(w, None), sb(pt_off + 2 * QT * kt), 128, qt));
            let upd = (kt == 3).then_some(O_READY);
            pe.put(mm(
                ev(Wait::None, upd),
                at(sb(v_off + 2 * DH as u32 * kt), DH as u16),
                128,
                qt,
                kt == 0,
                at(o_ps, DH as u16),
            ));
        }
        pe.add(R_TILE, R_TILE, 1);
    });
    p.streams[Engine::Pe as usize] = pe.0;

    let mut act = Prog::default();
    act.set(R_TILE, 1);
    act.pairs(TILES / 2, |act, _| {
        // 3. P = exp(S + negmax), row sums accumulated.
        let chunk = |addr: Addr4, f: NumFormat| (dense(addr, KC as u16), f);
        act.put(activate(
            ev(Wait::Reg(NEGMAX_READY, R_TILE), None),
            7,
            Bias::Column(sb(nm_off)),
            1.0,
            AccumCmd::ZERO_ACCUMULATE,
            qt,
            chunk(Addr4::imm(s_ps), F32),
            chunk(Addr4::imm(sb(p_off)), BF16),
        ));
        act.set(R_S, s_ps + 4 * KC);
        act.set(R_D, sb(p_off + 2 * KC));
        let top = act.here();
        act.put(activate(
            Events::default(),
            7,
            Bias::Column(sb(nm_off)),
            1.0,
            AccumCmd::ACCUMULATE,
            qt,
            chunk(reg_addr(R_S), F32),
            chunk(reg_addr(R_D), BF16),
        ));
        act.add(R_S, R_S, 4 * KC);
        act.add(R_D, R_D, 2 * KC);
        act.loop_while_below(R_S, s_ps + 4 * T as u32, top);
        act.put(read_acc(ev(Wait::None, Some(P_READY)), qt, sb(sum_off)));
        // 4. Pᵀ from PSUM to SBUF (bf16; the values are bf16 already, so exact).
        act.put(activate(
            ev(Wait::Reg(PT_READY, R_TILE), Some(PT_COPIED)),
            1,
            Bias::Imm(0.0),
            1.0,
            AccumCmd::IDLE,
            128,
            (at(pt_ps, 4 * QT as u16), F32),
            (at(sb(pt_off), 4 * QT as u16), BF16),
        ));
        act.add(R_TILE, R_TILE, 1);
    });
    p.streams[Engine::Act as usize] = act.0;

    let mut dve = Prog::default();
    dve.set(R_TILE, 1);
    dve.pairs(TILES / 2, |dve, b| {
        // 2. negmax = −max_k S.
        dve.put(tr(
            0x42,
            ev(Wait::Reg(S_READY, R_TILE), Some(NEGMAX_READY)),
            qt,
            0x08,
            1,
            s_ps,
            T as u16,
            sb(nm_off),
        ));
        // 6. out = O · (1 / sum) once the store of this buffer's previous tile is done.
        dve.put(tr(
            0x48,
            ev(Wait::Reg(P_READY, R_TILE), None),
            qt,
            0,
            0,
            sb(sum_off),
            1,
            sb(rc_off),
        ));
        dve.nop(ev(Wait::Reg(STORED[b], R_PREV), None));
        dve.put(
            TensorScalar {
                header: Header::new(Opcode(0x43)),
                events: ev(Wait::Reg(O_READY, R_TILE), Some(DONE[b])),
                src: at(o_ps, DH as u16),
                in_dtype: f32t,
                out_dtype: f32t,
                num_active_partitions: qt,
                imm0_src: ImmSrc(1),
                op0: AluOp(0x06),
                op1: AluOp(0),
                reverse: TsReverse::from_bits(0),
                imm1_src: ImmSrc(0),
                imm0: sb(rc_off),
                imm1: 0,
                dst: at(sb(o_off[b]), DH as u16),
                ..Default::default()
            }
            .to_bundle(),
        );
        dve.add(R_TILE, R_TILE, 1);
    });
    p.streams[Engine::Dve as usize] = dve.0;
    p.streams[Engine::Sp as usize] = sp_pipeline(TILES, true, true);
    p
}

// ------------------------------------------------------------------ adds

fn one_element(off: u32) -> Tensor<3> {
    at(sb(off), 1)
}

fn add_bundle() -> Bundle {
    let f = tag(F32);
    TensorTensor {
        in_dtypes: DtypePair::new(f, f),
        out_dtype: f,
        op: AluOp(0x04),
        num_active_partitions: 1,
        src0: one_element(0),
        src1: one_element(4),
        dst: one_element(0),
        ..Default::default()
    }
    .to_bundle()
}

fn adds(n: usize) -> Package {
    let mut p = Package::new(format!("adds_{n}"), GEN);
    p.streams[Engine::Dve as usize] = vec![add_bundle(); n];
    p
}

/// `acc = Σ 1.0` over `n` loop iterations; `out` (one fp32) receives `acc`.
fn loop_adds(n: u32) -> Package {
    let mut p = Package::new(format!("loop_adds_{n}"), GEN);
    p.onchip();
    p.queue("out", None);
    output(&mut p, "out", F32, &[1]);
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![store_rows("out", F32, 0, 1, 1, 0, 1, None)],
    );
    let mut dve = Prog::default();
    dve.put(
        TensorScalar {
            header: Header::new(Opcode(0x43)),
            accumulator_cmd: AccumCmd(0),
            src: one_element(0),
            in_dtype: tag(F32),
            out_dtype: tag(F32),
            num_active_partitions: 1,
            imm0_src: ImmSrc(0),
            op0: AluOp(0x04), // 0 + 1 = 1.0 into `one` (SBUF is zero at the start)
            op1: AluOp(0),
            reverse: TsReverse::from_bits(0),
            imm1_src: ImmSrc(0),
            imm0: 1f32.to_bits(),
            imm1: 0,
            dst: one_element(4),
            ..Default::default()
        }
        .to_bundle(),
    );
    let top = dve.here();
    dve.put(add_bundle());
    dve.add(R_PAIR, R_PAIR, 1);
    dve.loop_while_below(R_PAIR, n, top);
    dve.nop(ev(Wait::None, Some(DONE[0])));
    p.streams[Engine::Dve as usize] = dve.0;
    p.streams[Engine::Sp as usize] = vec![trigger("out", 0, Wait::Imm(DONE[0], 1))];
    p
}

fn write(p: &Package, out: &Path) {
    match p
        .to_neff()
        .and_then(|neff| neff.write_to(out).map_err(Into::into))
    {
        Ok(()) => println!("wrote {}", out.display()),
        Err(e) => {
            eprintln!("{}: {e}", out.display());
            std::process::exit(1);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: build_big_kernels adds|loop-adds N OUT.neff | \
                 matmul_k64|layernorm_1024|attention_512 OUT.neff | testdata [DIR]";
    let fail = || -> ! {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let named = |k: &str| match k {
        "matmul_k64" => Some(matmul_k64()),
        "layernorm_1024" => Some(layernorm_1024()),
        "attention_512" => Some(attention_512()),
        _ => None,
    };
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["testdata", rest @ ..] if rest.len() <= 1 => {
            let dir = rest
                .first()
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("testdata/kernels"));
            if let Err(e) = std::fs::create_dir_all(&dir) {
                eprintln!("{}: {e}", dir.display());
                std::process::exit(1);
            }
            for p in [matmul_k64(), layernorm_1024(), attention_512()] {
                write(&p, &dir.join(format!("{}.neff", p.name)));
            }
        }
        [kind, n, out] => {
            let Ok(n) = n.parse::<u32>() else { fail() };
            let p = match *kind {
                "adds" => adds(n as usize),
                "loop-adds" => loop_adds(n),
                _ => fail(),
            };
            write(&p, Path::new(out));
        }
        [kind, out] => match named(kind) {
            Some(p) => write(&p, Path::new(out)),
            None => fail(),
        },
        _ => fail(),
    }
}
