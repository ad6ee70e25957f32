//! Kernels built in memory for the small- and big-tile benchmark (`benches/small_tiles.rs`) and
//! for `benches/numpy_baseline.py`, on v3, fp32, no DRAM variables and no DMA: the inputs are
//! written into SBUF before the run ([`init_sbuf`]).
//!
//! * [`mixed`]: `n` bundles on `[128 × 8]` tiles spread over three engines running at once —
//!   DVE `TensorTensor` add (`dve[i] = a[i] + b[i + 3]`), ACT `Activate` exp
//!   (`act[i] = exp(a[i])`, scale 1, bias 0) and POOL `TensorScalar` multiply
//!   (`pool[i] = b[i] × 0.5`), tile slots `i mod 8` of each region.
//! * [`big_adds`]: `n` DVE adds `c = a + b` on `[128 × 2048]` tiles.
//! * [`mixed_neff`]: the mixed kernel as `sim run` reads it — a NEFF whose SP queue loads the
//!   inputs from a DRAM variable and stores the three result regions to output variables.

use tpbsim_isa::{
    ActFunc, Activate, Addr4, AluOp, Bundle, DtypePair, Engine, F32Bits, Gen, Header, ImmSrc,
    ImmSrcN, NumFormat, Opcode, Tensor, TensorScalar, TensorTensor,
};
use tpbsim_isa::{DmaTrigger, Events, UpdateMode, WaitMode};
use tpbsim_neff::{DmaEntry, VarKind, VarRef};
use tpbsim_sim::machine::pack::{PackError, Package};
use tpbsim_sim::machine::{Geometry, Kernel, Machine, Space};

/// Generation of the kernels.
pub const GEN: Gen = Gen::V3;
/// Partitions of every tile.
pub const PARTITIONS: u32 = 128;
/// Elements per partition of a small tile.
pub const SMALL: u32 = 8;
/// Elements per partition of a big tile.
pub const BIG: u32 = 2048;
/// Tile slots per region of the mixed kernel.
pub const SLOTS: u32 = 8;
/// The POOL multiplier of the mixed kernel.
pub const POOL_SCALE: f32 = 0.5;

/// Per-partition byte offsets of the mixed kernel's regions (each `SLOTS` small tiles).
pub mod region {
    /// Input `a` (read by DVE and ACT).
    pub const A: u32 = 0;
    /// Input `b` (read by DVE and POOL).
    pub const B: u32 = 256;
    /// DVE results.
    pub const DVE: u32 = 512;
    /// ACT results.
    pub const ACT: u32 = 768;
    /// POOL results.
    pub const POOL: u32 = 1024;
    /// Bytes per partition the mixed kernel uses.
    pub const END: u32 = 1280;
}

/// Per-partition byte offsets of the big-tile kernel's `a`, `b` and `c`.
pub const BIG_A: u32 = 0;
/// See [`BIG_A`].
pub const BIG_B: u32 = 4 * BIG;
/// See [`BIG_A`].
pub const BIG_C: u32 = 8 * BIG;

fn f32_tag() -> tpbsim_isa::Dtype {
    tpbsim_isa::Dtype(NumFormat::Float32.wire_tag(GEN).expect("fp32 tag"))
}

/// A dense `[128 × n]` fp32 tile at per-partition byte offset `offset`.
fn tile(offset: u32, n: u32) -> Tensor<3> {
    let addr = Addr4::imm(Geometry::of(GEN).sbuf_address(0, offset));
    Tensor::new(addr, [1; 3], [n as u16, 1, 1])
}

/// DVE/POOL `TensorTensor` add (0x41) of `n`-element tiles: `dst = src0 + src1`.
pub fn add(src0: u32, src1: u32, dst: u32, n: u32) -> Bundle {
    add_ev(src0, src1, dst, n, Events::default())
}

fn add_ev(src0: u32, src1: u32, dst: u32, n: u32, events: Events) -> Bundle {
    TensorTensor {
        events,
        in_dtypes: DtypePair::new(f32_tag(), f32_tag()),
        out_dtype: f32_tag(),
        op: AluOp(0x04),
        num_active_partitions: PARTITIONS as u8,
        src0: tile(src0, n),
        src1: tile(src1, n),
        dst: tile(dst, n),
        ..Default::default()
    }
    .to_bundle()
}

/// ACT `Activate` (0x21) exp of a small tile, scale 1, immediate bias 0.
pub fn exp(src: u32, dst: u32) -> Bundle {
    exp_ev(src, dst, Events::default())
}

fn exp_ev(src: u32, dst: u32, events: Events) -> Bundle {
    Activate {
        events,
        imm_src: ImmSrc(0),
        scale_src: ImmSrc(0),
        bias_src_n: ImmSrcN(1),
        src: tile(src, SMALL),
        in_bias_dtypes: DtypePair::new(f32_tag(), f32_tag()),
        out_dtype: f32_tag(),
        num_active_partitions: PARTITIONS as u8,
        activation_func: ActFunc(7),
        scale_value: F32Bits::from_f32(1.0),
        bias: 0f32.to_bits(),
        dst: tile(dst, SMALL),
        ..Default::default()
    }
    .to_bundle()
}

/// `TensorScalar` (0x43) multiply of a small tile by an immediate: `dst = src × k`.
pub fn mul(src: u32, dst: u32, k: f32) -> Bundle {
    mul_ev(src, dst, k, Events::default())
}

fn mul_ev(src: u32, dst: u32, k: f32, events: Events) -> Bundle {
    TensorScalar {
        events,
        header: Header::new(Opcode(0x43)),
        src: tile(src, SMALL),
        in_dtype: f32_tag(),
        out_dtype: f32_tag(),
        num_active_partitions: PARTITIONS as u8,
        imm0_src: ImmSrc(0),
        op0: AluOp(0x06),
        op1: AluOp(0x00),
        imm1_src: ImmSrc(0),
        imm0: k.to_bits(),
        dst: tile(dst, SMALL),
        ..Default::default()
    }
    .to_bundle()
}

fn kernel(streams: [(Engine, Vec<Bundle>); 3]) -> Kernel {
    let mut k = Kernel {
        gen: Some(GEN),
        world: 1,
        ..Default::default()
    };
    for (e, s) in streams {
        k.streams[e as usize] = s;
    }
    k
}

/// The mixed kernel: `n` bundles (a third per engine, rounded down).
pub fn mixed(n: usize) -> Kernel {
    kernel(mixed_streams(n, Events::default(), Events::default()))
}

/// The mixed kernel's streams, each engine's first bundle with events `first` and its last
/// with `last` (a one-bundle stream takes `last`).
fn mixed_streams(n: usize, first: Events, last: Events) -> [(Engine, Vec<Bundle>); 3] {
    let per = n / 3;
    let ev = |i: usize| match i {
        _ if i + 1 == per => last,
        0 => first,
        _ => Events::default(),
    };
    let slot = |base: u32, i: usize| base + 4 * SMALL * (i as u32 % SLOTS);
    let dve = (0..per)
        .map(|i| {
            add_ev(
                slot(region::A, i),
                slot(region::B, i + 3),
                slot(region::DVE, i),
                SMALL,
                ev(i),
            )
        })
        .collect();
    let act = (0..per)
        .map(|i| exp_ev(slot(region::A, i), slot(region::ACT, i), ev(i)))
        .collect();
    let pool = (0..per)
        .map(|i| mul_ev(slot(region::B, i), slot(region::POOL, i), POOL_SCALE, ev(i)))
        .collect();
    [(Engine::Dve, dve), (Engine::Act, act), (Engine::Pool, pool)]
}

/// `n` DVE adds `c = a + b` on `[128 × 2048]` tiles.
pub fn big_adds(n: usize) -> Kernel {
    let b = add(BIG_A, BIG_B, BIG_C, BIG);
    kernel([
        (Engine::Dve, vec![b; n]),
        (Engine::Act, Vec::new()),
        (Engine::Pool, Vec::new()),
    ])
}

/// The fp32 inputs, per partition: `words` values from a fixed seed, uniform in `[-4, 4)`.
pub fn inputs(words: usize) -> Vec<f32> {
    crate::pseudo_random_bytes(PARTITIONS as usize * words * 4, 0x7115)
        .chunks_exact(4)
        .map(|w| {
            let u = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            (u >> 8) as f32 / (1u32 << 24) as f32 * 8.0 - 4.0
        })
        .collect()
}

/// Write the inputs ([`inputs`]`(words)`) into the first `4 × words` bytes of every SBUF
/// partition.
pub fn init_sbuf(m: &mut Machine<'_>, words: usize) {
    let v = inputs(words);
    for (p, row) in v.chunks_exact(words).enumerate() {
        let addr = m.chip.geom.sbuf_address(p as u32, 0);
        let part = m.chip.write_flat(addr, 4 * words).expect("inside SBUF");
        for (d, x) in part.chunks_exact_mut(4).zip(row) {
            d.copy_from_slice(&x.to_le_bytes());
        }
    }
}

/// Input words per partition of the mixed kernel (regions `a` and `b`).
pub const MIXED_INPUT_WORDS: usize = (region::DVE / 4) as usize;
/// Input words per partition of the big-tile kernel (`a` and `b`).
pub const BIG_INPUT_WORDS: usize = (BIG_C / 4) as usize;

/// Run `k` as `sim run` does (machine set-up, L2 validation, the scheduler, execution) with
/// `words` input words per partition; the machine after the run.
pub fn run<'k>(k: &'k Kernel, words: usize) -> Machine<'k> {
    let mut m = Machine::new(k, GEN).expect("machine");
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    init_sbuf(&mut m, words);
    m.run(&tpbsim_sim::machine::RunOptions::default(), &mut |_| {})
        .expect("run");
    m
}

/// The fp32 words `offset / 4 .. offset / 4 + words` of every SBUF partition, partition-major.
pub fn sbuf_words(m: &Machine<'_>, offset: u32, words: usize) -> Vec<f32> {
    (0..PARTITIONS)
        .flat_map(|p| {
            let part = m.chip.partition(Space::Sbuf, p);
            part[offset as usize..offset as usize + 4 * words]
                .chunks_exact(4)
                .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The mixed kernel's input variable (`[128 × MIXED_INPUT_WORDS]`, regions `a` and `b`).
pub const MIXED_INPUT: &str = "ab";
/// The mixed kernel's output variables and the regions they hold (`[128 × SLOTS·SMALL]` each).
pub const MIXED_OUTPUTS: [(&str, u32); 3] = [
    ("dve", region::DVE),
    ("act", region::ACT),
    ("pool", region::POOL),
];

/// `SEM_GE_IMM` wait on `sem` for `value` and/or `SEM_INC_COMPLETE` of `inc`.
fn sem_events(wait: Option<(u8, u32)>, inc: Option<u8>) -> Events {
    let mut e = Events::default();
    if let Some((sem, value)) = wait {
        e.wait_mode = WaitMode(5);
        e.wait_idx = sem;
        e.semaphore_value = value;
    }
    if let Some(sem) = inc {
        e.update_mode = UpdateMode(0x13);
        e.update_idx = sem;
    }
    e
}

/// One DMA entry between DRAM variable `var` (`[128 × words]` fp32, row-major) and the
/// `words`-word rows at per-partition byte `offset` of SBUF.
fn sbuf_rows(var: &str, offset: u32, words: u64, to_sbuf: bool, sem: Option<u32>) -> DmaEntry {
    let geom = Geometry::of(GEN);
    let per_partition = (geom.sbuf_partition_stride() / 4) as i64;
    let (sb, dram) = (
        VarRef::Name("state_buffer".into()),
        VarRef::Name(var.into()),
    );
    let shape = vec![PARTITIONS as u64, words];
    let mut e = if to_sbuf {
        let mut e = DmaEntry::copy(dram, sb, shape);
        e.to_offset = offset as u64;
        e.to_steps = Some(vec![per_partition, 1]);
        e
    } else {
        let mut e = DmaEntry::copy(sb, dram, shape);
        e.from_offset = offset as u64;
        e.from_steps = Some(vec![per_partition, 1]);
        e
    };
    e.sem = sem;
    e
}

/// A DMA trigger of block 0 of SP queue `queue`.
fn trigger(queue: &str, ev: Events) -> Bundle {
    let mut name = [0u8; 36];
    name[..queue.len()].copy_from_slice(queue.as_bytes());
    DmaTrigger {
        events: ev,
        queue_name: name,
        block_id: 0,
        ..Default::default()
    }
    .to_bundle()
}

/// Why [`mixed_neff`] cannot write its NEFF.
#[derive(Debug, thiserror::Error)]
pub enum MixedNeffError {
    /// Fewer than one bundle per engine.
    #[error("{0} bundles give the three engines no bundle each")]
    Empty(usize),
    /// The packer refused the kernel.
    #[error(transparent)]
    Pack(#[from] PackError),
}

/// [`mixed`]`(n)` as a NEFF in the runtime layout, as `sim run` reads it: SP loads
/// [`MIXED_INPUT`] (the [`inputs`] of [`MIXED_INPUT_WORDS`] words per partition) into the
/// regions `a` and `b` (incrementing semaphore 1); each engine's first bundle waits for it and
/// its last increments semaphore 2; SP then stores each result region to its variable of
/// [`MIXED_OUTPUTS`]. The engines' bundles are otherwise [`mixed`]'s.
pub fn mixed_neff(n: usize) -> Result<tpbsim_neff::Neff, MixedNeffError> {
    let mut p = Package::new("mixed_128x8", GEN);
    p.onchip();
    p.queue("in", None);
    p.queue("out", None);
    let x: Vec<u8> = inputs(MIXED_INPUT_WORDS)
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let words = MIXED_INPUT_WORDS as u64;
    p.var(
        MIXED_INPUT,
        VarKind::Input,
        NumFormat::Float32,
        &[PARTITIONS as u64, words],
        Some(&x),
    )?;
    let out_words = (SLOTS * SMALL) as u64;
    for (name, _) in MIXED_OUTPUTS {
        p.var(
            name,
            VarKind::Output,
            NumFormat::Float32,
            &[PARTITIONS as u64, out_words],
            None,
        )?;
    }
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![sbuf_rows(MIXED_INPUT, region::A, words, true, Some(1))],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        MIXED_OUTPUTS
            .iter()
            .map(|&(name, at)| sbuf_rows(name, at, out_words, false, None))
            .collect(),
    );
    if n / 3 == 0 {
        return Err(MixedNeffError::Empty(n));
    }
    // A one-bundle stream waits and signals in the same bundle.
    let wait = sem_events(Some((1, 1)), None);
    let last = sem_events((n / 3 == 1).then_some((1, 1)), Some(2));
    for (e, s) in mixed_streams(n, wait, last) {
        p.streams[e as usize] = s;
    }
    let engines = 3;
    p.streams[Engine::Sp as usize] = vec![
        trigger("in", Events::default()),
        trigger("out", sem_events(Some((2, engines)), None)),
    ];
    Ok(p.to_neff()?)
}
