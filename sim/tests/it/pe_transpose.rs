//! The PE transpose and the LdWeights column rule on the machine.
//!
//! `compiler_matmul_sequence_*` rebuilds, with the project's assembler, the PE / ACT sequence
//! that neuronx-cc 2.23 writes for `x f16[128,256] @ y f16[256,128]` on Trn2 (one core's column
//! half, `docs/numerics.md` §10): two transposing LdWeights/Matmul pairs turn `x` into `xᵀ` in
//! PSUM at fp16 width, an ACT COPY moves both halves as raw int32 words to SBUF, and two
//! LdWeights/Matmul pairs accumulate `x @ y` in fp32 PSUM. Every LdWeights reads its partition
//! last element first (step −1, then −32 per group of 32), as the compiler writes it. The
//! results are checked against an oracle written here: the transpose bit for bit, the product
//! exactly (small integers, exact in fp32).
//!
//! The other tests are the boundaries: partial quadrants, a moving tensor that is not a
//! selection, a transpose without begin and end, unmatched transpose modes, and reversed
//! patterns that leave the partition.

use half::f16;
use tpbsim_isa::text::parse_text;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_sim::machine::{Fault, Geometry, Kernel, Machine, RunOptions, TensorPattern};

const G: Gen = Gen::V3;

/// SBUF layout of the compiler's kernel (per partition): the identity at 0x37b00, `x` row `m` at
/// 0x37c00 (256 fp16), `y` rows 128..255 at 0x37e00 and rows 0..127 at 0x37f00 (64 fp16 each,
/// the core's column half).
const IDENT: u32 = 0x37b00;
const X: u32 = 0x37c00;
const Y_HI: u32 = 0x37e00;
const Y_LO: u32 = 0x37f00;
/// Where ACT's copy of both transposes lands (256 fp16 per partition), and the product.
const XT: u32 = 0x4000;
const OUT: u32 = 0x4200;

/// PE: the compiler's stream without its DMA waits (the inputs are placed before the run).
const PE: &str = "\
LDWEIGHTS src=[0x37cfe step=-1,0,-32 num=32,1,4] in_dtype=FP16 transpose_mode=1 num_active_rows=128 num_active_cols=128 row_grp=15 col_grp=15
MATMUL update_mode=SEM_INC_COMPLETE update_idx=5 src=[0x37b00 step=1,0,0 num=128,1,1] in_dtype=FP16 transpose_mode=1 num_active_rows=128 num_active_cols=128 psum_accumulate_flags={begin=1 end=1} row_grp=15 col_grp=15 dst=[0x2000800 step=1,0,0 num=128,1,1]
LDWEIGHTS src=[0x37dfe step=-1,0,-32 num=32,1,4] in_dtype=FP16 transpose_mode=1 num_active_rows=128 num_active_cols=128 row_grp=15 col_grp=15
MATMUL update_mode=SEM_INC_COMPLETE update_idx=5 src=[0x37b00 step=1,0,0 num=128,1,1] in_dtype=FP16 transpose_mode=1 num_active_rows=128 num_active_cols=128 psum_accumulate_flags={begin=1 end=1} row_grp=15 col_grp=15 dst=[0x2000900 step=1,0,0 num=128,1,1]
LDWEIGHTS wait_mode=SEM_GE_IMM wait_idx=4 semaphore_value=1 src=[0x40fe step=-1,0,-32 num=32,1,4] in_dtype=FP16 num_active_rows=128 num_active_cols=128 row_grp=15 col_grp=15
MATMUL update_mode=SEM_INC_COMPLETE update_idx=5 src=[0x37f00 step=1,0,0 num=64,1,1] in_dtype=FP16 num_active_rows=128 num_active_cols=128 psum_accumulate_flags={begin=1} row_grp=15 col_grp=15 dst=[0x2000000 step=1,0,0 num=64,1,1]
LDWEIGHTS src=[0x41fe step=-1,0,-32 num=32,1,4] in_dtype=FP16 num_active_rows=128 num_active_cols=128 row_grp=15 col_grp=15
MATMUL update_mode=SEM_INC_COMPLETE update_idx=5 src=[0x37e00 step=1,0,0 num=64,1,1] in_dtype=FP16 num_active_rows=128 num_active_cols=128 psum_accumulate_flags={end=1} row_grp=15 col_grp=15 dst=[0x2000000 step=1,0,0 num=64,1,1]
";

/// ACT: the compiler's two copies (raw int32 words of both fp16 transposes; the fp32 product).
const ACT: &str = "\
COPY wait_mode=SEM_GE_IMM wait_idx=5 update_mode=SEM_INC_COMPLETE update_idx=4 semaphore_value=2 src=[0x2000800 step=1,1,1,1 num=128,1,1,1] in_dtype=INT32 out_dtype=INT32 num_active_channels=128 dst=[0x4000 step=1,1,1,1 num=128,1,1,1]
COPY wait_mode=SEM_GE_IMM wait_idx=5 update_mode=SEM_INC_COMPLETE update_idx=4 semaphore_value=4 src=[0x2000000 step=1,1,1,1 num=64,1,1,1] in_dtype=FP32 out_dtype=FP32 num_active_channels=128 dst=[0x4200 step=1,1,1,1 num=64,1,1,1]
";

fn asm(text: &str) -> Vec<Bundle> {
    parse_text(text, G).unwrap_or_else(|(line, e)| panic!("line {line}: {}", e.message))
}

fn kernel(pe: Vec<Bundle>, act: Vec<Bundle>) -> Kernel {
    let mut k = Kernel {
        gen: Some(G),
        ..Default::default()
    };
    k.streams[Engine::Pe as usize] = pe;
    k.streams[Engine::Act as usize] = act;
    k
}

/// Write `row(p)` at byte `off` of every partition `p < n`.
fn put_rows(m: &mut Machine<'_>, off: u32, n: u32, row: impl Fn(u32) -> Vec<u8>) {
    let g = Geometry::of(G);
    for p in 0..n {
        let bytes = row(p);
        let t = TensorPattern::dense(g.sbuf_address(p, off), 1, 1, bytes.len() as u32);
        let r = m.chip.resolve(&t).expect("in bounds");
        m.chip.scatter(&r, &bytes);
    }
}

/// `len` bytes at byte `off` of partition `p` (SBUF, or PSUM with `psum`).
fn get(m: &Machine<'_>, psum: bool, p: u32, off: u32, len: u32) -> Vec<u8> {
    let g = Geometry::of(G);
    let addr = if psum {
        g.psum_address(p, off)
    } else {
        g.sbuf_address(p, off)
    };
    let r = m
        .chip
        .resolve(&TensorPattern::dense(addr, 1, 1, len))
        .expect("in bounds");
    m.chip.gather(&r)
}

fn f16_bytes(v: impl IntoIterator<Item = f16>) -> Vec<u8> {
    v.into_iter().flat_map(f16::to_le_bytes).collect()
}

fn f16_bits(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Small integers in −2..=2 (xorshift), so every product and sum is exact in fp32 and the
/// largest |x @ y| (256 · 4 = 1024) is exact in fp16 too.
fn small_ints(n: usize, seed: u64) -> Vec<i32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 5) as i32 - 2
        })
        .collect()
}

fn f16_of(v: i32) -> f16 {
    f16::from_f32(v as f32)
}

/// Place `x` (row-major `[128, 256]`), `y` (row-major `[256, 64]`, the core's column half) and
/// the identity where the compiler's kernel has them.
fn place_inputs(m: &mut Machine<'_>, x: &[u16], y: &[i32]) {
    put_rows(m, X, 128, |p| {
        x[p as usize * 256..][..256]
            .iter()
            .flat_map(|b| b.to_le_bytes())
            .collect()
    });
    put_rows(m, IDENT, 128, |p| {
        f16_bytes((0..128).map(|i| f16::from_f32(if i == p { 1.0 } else { 0.0 })))
    });
    for (off, first) in [(Y_LO, 0usize), (Y_HI, 128)] {
        put_rows(m, off, 128, |p| {
            f16_bytes(
                y[(first + p as usize) * 64..][..64]
                    .iter()
                    .map(|&v| f16_of(v)),
            )
        });
    }
}

fn run_sequence(x: &[u16], y: &[i32]) -> Result<Machine<'static>, Fault> {
    let k: &'static Kernel = Box::leak(Box::new(kernel(asm(PE), asm(ACT))));
    let mut m = Machine::new(k, G).expect("machine");
    place_inputs(&mut m, x, y);
    m.run(&RunOptions::default(), &mut |_| {})?;
    Ok(m)
}

#[test]
fn compiler_matmul_sequence_bundles_pass_l2() {
    // The PE bundles are legal as the project's validator reads them (the compiler's own
    // output is). The ACT COPY is not checked here: the v3 engine gate of the L2 validator
    // does not yet admit 0x46 on ACT, which the compiler emits.
    for (i, b) in asm(PE).iter().enumerate() {
        let f = tpbsim_validate::l2::cascade::check_collect(G, Engine::Pe, b);
        assert!(f.is_empty(), "PE bundle {i}: {f:?}");
    }
}

#[test]
fn compiler_matmul_sequence_transposes_x_then_computes_x_at_y() {
    let xi = small_ints(128 * 256, 7);
    let y = small_ints(256 * 64, 11);
    let x: Vec<u16> = xi.iter().map(|&v| f16_of(v).to_bits()).collect();
    let m = run_sequence(&x, &y).expect("run");
    // 1. PSUM partition k holds xᵀ row k at 0x800 (k < 128) and row k + 128 at 0x900, as fp16
    //    bits: both transposes, 2 bytes per element, side by side in one bank.
    for k in 0..128u32 {
        let psum = f16_bits(&get(&m, true, k, 0x800, 512));
        let want: Vec<u16> = (0..256)
            .map(|i| {
                let (col, row) = (k as usize + 128 * (i / 128), i % 128);
                x[row * 256 + col]
            })
            .collect();
        assert_eq!(psum, want, "PSUM partition {k}: xᵀ");
        // 2. ACT's int32 copy moved the same bits to SBUF.
        assert_eq!(f16_bits(&get(&m, false, k, XT, 512)), want, "SBUF {k}");
    }
    // 3. PSUM partition m (the stationary column) holds out[m][n] = Σ_k x[m][k] · y[k][n] in
    //    fp32, copied to SBUF at 0x4200.
    for mm in 0..128u32 {
        let want: Vec<f32> = (0..64)
            .map(|n| {
                (0..256)
                    .map(|kk| xi[mm as usize * 256 + kk] * y[kk * 64 + n])
                    .sum::<i32>() as f32
            })
            .collect();
        assert_eq!(
            f32s(&get(&m, true, mm, 0, 256)),
            want,
            "PSUM partition {mm}"
        );
        assert_eq!(f32s(&get(&m, false, mm, OUT, 256)), want, "SBUF {mm}");
        // The compiler's last step (a DMA FP32 → FP16, RNE) is exact for these values.
        assert!(want
            .iter()
            .all(|&v| f16::from_f32(v).to_f32() == v && v.abs() <= 1024.0));
    }
}

#[test]
fn the_transpose_keeps_special_fp16_bits() {
    // −0.0, NaNs with payloads, subnormals and infinities pass through the transpose and the
    // raw ACT copy unchanged.
    let specials = [
        0x8000u16, 0x7E01, 0x7C01, 0xFE55, 0x0001, 0x83FF, 0x7C00, 0xFC00,
    ];
    let x: Vec<u16> = (0..128 * 256)
        .map(|i| specials[(i * 7 + i / 256) % specials.len()])
        .collect();
    let y = vec![0; 256 * 64];
    let m = run_sequence(&x, &y).expect("run");
    for k in 0..128u32 {
        let want: Vec<u16> = (0..256)
            .map(|i| x[(i % 128) * 256 + k as usize + 128 * (i / 128)])
            .collect();
        assert_eq!(f16_bits(&get(&m, true, k, 0x800, 512)), want, "{k}");
        assert_eq!(f16_bits(&get(&m, false, k, XT, 512)), want, "{k}");
    }
}

/// The first transposing pair of [`PE`] with `edit` applied to its text.
fn transpose_pair(edit: impl Fn(&str) -> String) -> Result<Machine<'static>, Fault> {
    let pe: String = PE.lines().take(2).map(|l| edit(l) + "\n").collect();
    let k: &'static Kernel = Box::leak(Box::new(kernel(asm(&pe), vec![])));
    let mut m = Machine::new(k, G).expect("machine");
    let x: Vec<u16> = (0..128 * 256).map(|i| (i % 0x7000) as u16).collect();
    place_inputs(&mut m, &x, &vec![0; 256 * 64]);
    m.run(&RunOptions::default(), &mut |_| {})?;
    Ok(m)
}

/// An edit of the lines starting with `prefix` only: `from` becomes `to`.
fn on(prefix: &'static str, from: &'static str, to: &'static str) -> impl Fn(&str) -> String {
    move |l| {
        if l.starts_with(prefix) {
            l.replace(from, to)
        } else {
            l.to_string()
        }
    }
}

fn not_simulated(r: Result<Machine<'static>, Fault>, needle: &str) {
    match r {
        Err(f @ Fault::NotSimulated { .. }) => {
            assert!(f.to_string().contains(needle), "{f}")
        }
        Err(f) => panic!("expected a not-simulated fault naming `{needle}`, got {f}"),
        Ok(_) => panic!("expected a not-simulated fault naming `{needle}`, the run passed"),
    }
}

#[test]
fn row_and_column_groups_other_than_all_quadrants_are_not_simulated() {
    assert!(transpose_pair(str::to_string).is_ok());
    for (from, to) in [
        ("row_grp=15", "row_grp=14"),
        ("col_grp=15", "col_grp=14"),
        ("row_grp=15", "row_grp=1"),
    ] {
        // On the LdWeights alone, then on the Matmul alone.
        not_simulated(
            transpose_pair(on("LDWEIGHTS", from, to)),
            &format!("{} 0x{:02x}", &from[..7], to[8..].parse::<u8>().unwrap()),
        );
        not_simulated(
            transpose_pair(on("MATMUL", from, to)),
            "partial PE quadrants",
        );
    }
}

#[test]
fn a_moving_tensor_that_is_not_a_selection_is_not_simulated() {
    // The identity read one element late: moving column 127 holds no 1 (it reads x's first
    // element).
    let r = transpose_pair(|l| l.replace("src=[0x37b00 ", "src=[0x37b02 "));
    not_simulated(r, "transpose with a non-permutation moving tensor");
    // The moving tensor read from x itself (values other than 0 and 1).
    let r = transpose_pair(|l| l.replace("src=[0x37b00 ", "src=[0x37c00 "));
    not_simulated(r, "transpose with a non-permutation moving tensor");
}

#[test]
fn a_transpose_must_begin_and_end_its_group() {
    for flags in ["{begin=1}", "{end=1}", "{}"] {
        let r = transpose_pair(|l| l.replace("{begin=1 end=1}", flags));
        not_simulated(r, "transposing Matmul with psum_accumulate_flags");
    }
}

#[test]
fn transpose_modes_of_ldweights_and_matmul_must_agree() {
    let r = transpose_pair(on("LDWEIGHTS", " transpose_mode=1", ""));
    not_simulated(r, "transpose_mode 1 on weights loaded without");
    let r = transpose_pair(on("MATMUL", " transpose_mode=1", ""));
    not_simulated(r, "transpose_mode 0 on weights loaded with");
    let r = transpose_pair(|l| l.replace("transpose_mode=1", "transpose_mode=2"));
    not_simulated(r, "transpose_mode 2");
}

#[test]
fn reversed_patterns_are_bounds_checked_by_the_signs_of_their_steps() {
    // The reversed read starting at byte 0xFE reaches byte 0 exactly: in bounds.
    assert!(transpose_pair(|l| l.replace("0x37cfe", "0xfe")).is_ok());
    // One element earlier it would read bytes −2..: out of bounds, named.
    match transpose_pair(|l| l.replace("0x37cfe", "0xfc")) {
        Err(f @ Fault::OutOfBounds { .. }) => {
            assert!(f.to_string().contains("bytes -2..254"), "{f}")
        }
        Err(f) => panic!("expected an out-of-bounds fault, got {f}"),
        Ok(_) => panic!("expected an out-of-bounds fault, the run passed"),
    }
}

#[test]
fn ldweights_must_read_as_many_elements_as_its_active_columns() {
    let r = transpose_pair(on("LDWEIGHTS", "num_active_cols=128", "num_active_cols=64"));
    not_simulated(
        r,
        "reading 128 elements per partition into num_active_cols 64",
    );
}
