//! Shared helpers for the criterion benchmarks (stream synthesis, temporary files).

pub mod lnc2_matmul;

/// Build a pseudo-random byte buffer of `len` bytes with a fixed seed (xorshift64*).
pub fn pseudo_random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        out.extend_from_slice(&s.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The valid fixtures of `testdata/l2/fixtures.txt` for `gen` that pass `engine`'s L2 checks
/// completely (no error, nothing left unchecked): the mix of the L2 benchmarks.
pub fn l2_valid_mix(gen: tpbsim_isa::Gen, engine: tpbsim_isa::Engine) -> Vec<tpbsim_isa::Bundle> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/l2/fixtures.txt"
    ))
    .expect("fixtures");
    let gen_name = gen.to_string();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 6 && f[0] == gen_name && f[2] == "valid")
                .then(|| tpbsim_isa::Bundle::from_hex(f[5]).expect("hex"))
        })
        .filter(|b| L2_MIX_OPCODES.contains(&b.0[0]))
        .filter(|b| {
            let s = tpbsim_validate::l2::check_silent(gen, engine, b);
            !s.failed && !s.unchecked
        })
        .collect()
}

/// The opcodes of the validate benchmark's mix (TensorTensor, TensorScalar, Copy, RangeSelect,
/// EventSemaphore), fixed so that fixtures added for other gates do not change what it measures.
pub const L2_MIX_OPCODES: [u8; 5] = [0x41, 0x43, 0x46, 0xBC, 0xA0];

/// The clean testdata kernels, smallest first.
pub const KERNELS: [&str; 7] = [
    "vadd",
    "iadd_pool",
    "range_select",
    "softmax",
    "rmsnorm",
    "matmul_bf16",
    "mx_matmul",
];

/// Path of `testdata/kernels/NAME.neff`.
/// The shortest of `runs` timings of `f`.
pub fn best_of(runs: usize, mut f: impl FnMut()) -> std::time::Duration {
    (0..runs)
        .map(|_| {
            let t = std::time::Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

pub fn kernel_path(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../testdata/kernels/{name}.neff"))
}

/// Read `testdata/kernels/NAME.neff` into a kernel and its target generation.
pub fn load_kernel(name: &str) -> (tpbsim_sim::machine::kernel::Kernel, tpbsim_isa::Gen) {
    let n = tpbsim_neff::Neff::read(kernel_path(name), &tpbsim_neff::ReadOptions::default())
        .expect("read the kernel");
    let k = tpbsim_sim::machine::load::kernel_from_neff(&n).expect("load the kernel");
    let gen = k.gen.expect("target generation");
    (k, gen)
}

pub mod small_tiles;

/// Kernels built in memory for the per-bundle (dispatch) benchmark: one DVE stream of `n`
/// bundles, no DRAM variables, no DMA, on v3.
pub mod dispatch {
    use tpbsim_isa::NumFormat;
    use tpbsim_isa::{Addr4, AluOp, Bundle, DtypePair, Engine, Gen, Tensor, TensorTensor};
    use tpbsim_sim::machine::{Geometry, Kernel};

    /// Generation of the dispatch kernels.
    pub const GEN: Gen = Gen::V3;

    /// A NOP (0xA4, the control form: no operands, no events).
    pub fn nop() -> Bundle {
        let mut b = Bundle::ZERO;
        b.set_u8(0, 0xA4);
        b.set_u8(1, 0x10);
        b
    }

    /// One-partition, one-element fp32 `dst = src0 + src1` on DVE: `src0` at SBUF partition 0
    /// byte `a`, `src1` at `b`, `dst` at `d`.
    pub fn add_one(a: u32, b: u32, d: u32) -> Bundle {
        let g = Geometry::of(GEN);
        let f32t = tpbsim_isa::Dtype(NumFormat::Float32.wire_tag(GEN).expect("fp32 tag"));
        let t = |off: u32| Tensor::<3>::new(Addr4::imm(g.sbuf_address(0, off)), [1; 3], [1; 3]);
        TensorTensor {
            in_dtypes: DtypePair::new(f32t, f32t),
            out_dtype: f32t,
            op: AluOp(0x04),
            num_active_partitions: 1,
            src0: t(a),
            src1: t(b),
            dst: t(d),
            ..Default::default()
        }
        .to_bundle()
    }

    /// A kernel whose DVE stream is `stream`.
    pub fn dve_kernel(stream: Vec<Bundle>) -> Kernel {
        let mut k = Kernel {
            gen: Some(GEN),
            world: 1,
            ..Default::default()
        };
        k.streams[Engine::Dve as usize] = stream;
        k
    }

    /// `n` NOPs on DVE.
    pub fn nops(n: usize) -> Kernel {
        dve_kernel(vec![nop(); n])
    }

    /// `n` one-element adds on DVE accumulating into one word: `acc += one` (SBUF partition
    /// 0: `acc` at byte 0, `one` at byte 4), each bundle distinct by its position only. With
    /// `one` = 1.0 the final `acc` is `n` (exact below 2^24).
    pub fn adds(n: usize) -> Kernel {
        dve_kernel(vec![add_one(0, 4, 0); n])
    }
}
