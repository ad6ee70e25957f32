//! The PE (tensor engine) value model: `psum[N, F] (+)= stationary[K, N]ᵀ · moving[K, F]`, K on
//! partitions, as pure functions over dense row-major slices (`stationary[k * N + n]`,
//! `moving[k * F + f]`, `psum[n * F + f]`).
//!
//! **Summation order (fixed).** For every output element the array sums products over `k`
//! sequentially from `k = 0` into an fp32 accumulator that starts at +0.0:
//! `acc = acc + s[k][n] · m[k][f]`, each multiply and each add rounded to fp32 (RNE), no fused
//! multiply-add. Multi-term modes add their terms for one `k` in the order listed by
//! [`PeMode`] before moving to `k + 1`. The instruction's sum then reaches PSUM as one write:
//! START stores it into the freshly zeroed region, otherwise it is added to the value in PSUM
//! (one more fp32 rounding, or a bf16 read-add-round on v4+ with a bf16 destination).
//!
//! The kernel keeps that order while vectorising across `F` (independent outputs), so it is
//! bit-identical to the scalar loop [`matmul_reference`]. Where every product of an instruction
//! is exact in fp32 ([`products_exact`]: finite operands of at most 12 significant bits whose
//! magnitudes keep each product a normal fp32 — fp16, fp8 and in-range bf16 data) a fused
//! multiply-add rounds once, exactly where the unfused pair rounds (the multiply does not round),
//! so the kernel fuses there and gives the same bits in half the instructions.
//!
//! The stationary slices here are in PE column order: LdWeights puts the `j`-th element it reads
//! on a partition into column `n − 1 − j` ([`stationary_column`], applied by
//! [`stationary_from_load`]). With `transpose_mode = 1` the array passes the stationary values
//! through instead of multiplying ([`transpose_pass`]).

use std::ops::Range;

use tpbsim_isa::Gen;

use super::cast::{self, CastPolicy};
use super::mx::{self, MxConfig, MxError, MxShape};
use super::simd::Loop;
use tpbsim_isa::NumFormat;

/// Errors of the PE model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PeError {
    /// Slice lengths do not match the shapes.
    #[error("shape mismatch: {what} has {got} elements, expected {expected}")]
    Shape {
        /// Which operand.
        what: &'static str,
        /// Expected count.
        expected: usize,
        /// Actual count.
        got: usize,
    },
    /// A PSUM accumulate-flags byte outside {0, 1, 2, 3, 4, 6}.
    #[error("psum_accumulate_flags {0:#04x} is illegal (legal: 0, 1, 2, 3, 4, 6)")]
    BadPsumFlags(u8),
    /// A zero-region code outside 0..=3.
    #[error("psum_zero_region {0} is not a ZERO_REGION code (0..=3)")]
    BadZeroRegion(u8),
    /// A zero region that runs past the partition's PSUM.
    #[error("zero region of {len} bytes from byte {start} runs past the {PSUM_PARTITION_BYTES}-byte PSUM partition")]
    ZeroRegionOutOfRange {
        /// Region start (bank-aligned), bytes.
        start: usize,
        /// Region length, bytes.
        len: usize,
    },
    /// A `PE_FP32MODE` byte outside 0..=3.
    #[error("fp32_mode {0} is not a PE_FP32MODE value (0..=3)")]
    BadFp32Mode(u8),
    /// An MX operand that the MX matmul cannot take.
    #[error("MX matmul: {0}")]
    Mx(String),
    /// A transpose (`transpose_mode = 1`) whose moving tensor is not a 0/1 selection: its
    /// column `column` does not hold exactly one 1 with every other element 0.
    #[error("transpose with a non-permutation moving tensor (moving column {column} holds {ones} ones and {others} values other than 0 and 1)")]
    NotPermutation {
        /// The moving column (free index `f`).
        column: usize,
        /// Elements equal to 1.
        ones: usize,
        /// Elements neither 0 nor 1 (NaN included).
        others: usize,
    },
}

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), PeError> {
    if expected == got {
        Ok(())
    } else {
        Err(PeError::Shape {
            what,
            expected,
            got,
        })
    }
}

/// PSUM bytes per partition (all generations).
pub const PSUM_PARTITION_BYTES: usize = 16 * 1024;

/// PSUM bank size in bytes per partition: 16 × 1 KiB on v2 (header), 8 × 2 KiB from v3.
pub fn psum_bank_bytes(gen: Gen) -> usize {
    if gen == Gen::V2 {
        1024
    } else {
        2048
    }
}

/// The PSUM accumulate flags byte (`psum_accumulate_flags`, v2–v4).
///
/// Group modes derived from the header: MULTI_MID 0 and MULTI_END 2 add into PSUM,
/// MULTI_START 1 and SINGLE 3 zero the region first, BEGIN_ACCUM 4 (and 4 | END = 6) opens a
/// group that adds into what PSUM already holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsumFlags {
    /// bit0 BEGIN/START: zero the zero region, then write.
    pub start: bool,
    /// bit1 END/STOP: the group ends (no effect on values).
    pub stop: bool,
    /// bit2 BEGIN_ACCUM/ACCUMULATE: open a group on top of the existing PSUM values.
    pub accumulate: bool,
}

impl PsumFlags {
    /// Decode the byte; 5 (START | ACCUMULATE), 7 and anything above 7 are illegal.
    pub fn from_wire(byte: u8) -> Result<Self, PeError> {
        match byte {
            0..=4 | 6 => Ok(PsumFlags {
                start: byte & 1 != 0,
                stop: byte & 2 != 0,
                accumulate: byte & 4 != 0,
            }),
            _ => Err(PeError::BadPsumFlags(byte)),
        }
    }

    /// v5's `MATMUL_FLAGS.accumulate_flag` (OVERWRITE 0 / ACCUMULATE 1) as flags: OVERWRITE
    /// writes over the destination, ACCUMULATE adds into it.
    pub fn from_accumulate_flag(accumulate: bool) -> Self {
        PsumFlags {
            start: !accumulate,
            stop: false,
            accumulate,
        }
    }

    /// Whether the write replaces the PSUM value (START) rather than adding to it.
    pub fn overwrites(self) -> bool {
        self.start
    }
}

/// `psum_zero_region` (`ZERO_REGION`): SIZE2048 0, SIZE4096 1, SIZE8192 2, SIZE16384 3 —
/// the bytes per partition a START clears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroRegion(u8);

impl ZeroRegion {
    /// Decode the code.
    pub fn from_wire(code: u8) -> Result<Self, PeError> {
        if code <= 3 {
            Ok(ZeroRegion(code))
        } else {
            Err(PeError::BadZeroRegion(code))
        }
    }

    /// Bytes per partition cleared (2048 << code).
    pub fn bytes(self) -> usize {
        2048 << self.0
    }

    /// Banks cleared on `gen` (1/2/4/8 from v3; 2/4/8/16 on v2's 1 KiB banks).
    pub fn banks(self, gen: Gen) -> usize {
        self.bytes() / psum_bank_bytes(gen)
    }

    /// The byte range within a partition's PSUM that a START writing at byte `dst_offset`
    /// clears: `bytes()` long, aligned down to a multiple of its own size.
    pub fn span(self, dst_offset: usize) -> Result<Range<usize>, PeError> {
        let len = self.bytes();
        let start = dst_offset / len * len;
        if start + len > PSUM_PARTITION_BYTES {
            return Err(PeError::ZeroRegionOutOfRange { start, len });
        }
        Ok(start..start + len)
    }
}

/// Zero the START region of one partition's PSUM (`psum_row` = the partition's 16 KiB as
/// fp32 words), for a write at byte `dst_offset`.
pub fn zero_region(
    psum_row: &mut [f32],
    region: ZeroRegion,
    dst_offset: usize,
) -> Result<(), PeError> {
    check_len("psum partition", PSUM_PARTITION_BYTES / 4, psum_row.len())?;
    let span = region.span(dst_offset)?;
    psum_row[span.start / 4..span.end / 4].fill(0.0);
    Ok(())
}

/// `PE_FP32MODE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp32Mode {
    /// 0: not an fp32 input.
    None,
    /// 1: the low (correction) pass.
    Low,
    /// 2: the high pass (also the compiler's single-pass fp32r signature, FP32 + mode 2).
    High,
    /// 3: both passes in one instruction.
    LowHigh,
}

impl Fp32Mode {
    /// Decode the byte.
    pub fn from_wire(byte: u8) -> Result<Self, PeError> {
        Ok(match byte {
            0 => Fp32Mode::None,
            1 => Fp32Mode::Low,
            2 => Fp32Mode::High,
            3 => Fp32Mode::LowHigh,
            _ => return Err(PeError::BadFp32Mode(byte)),
        })
    }
}

/// How the array multiplies the operands (all values already widened to fp32).
///
/// fp32 operands are split as `x = hi(x) + lo(x)` with `hi` = the fp32r rounding of the cast
/// engine (11 explicit mantissa bits, RNE) and `lo = x − hi` (exact); every product of parts is
/// exact in fp32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeMode {
    /// Narrow inputs (bf16, fp16, fp8, …) widened exactly: `s · m`.
    Plain,
    /// fp32 inputs by `PE_FP32MODE`: High = `hi·hi` (the fp32r single pass), Low =
    /// `hi(s)·lo(m)` then `lo(s)·hi(m)`, Low_High = `hi·hi`, `hi(s)·lo(m)`, `lo(s)·hi(m)`; the
    /// `lo·lo` term (below 2^-22 relative) is never computed. Mode None on fp32 multiplies the
    /// unsplit values.
    Fp32(Fp32Mode),
}

/// fp32 → fp32r through the cast engine (mantissa RNE to 11 explicit bits).
fn fp32r(x: f32) -> f32 {
    f32::from_bits(cast::from_f32(NumFormat::Float32r, x, &CastPolicy::REFERENCE) as u32)
}

/// Sequential-order matmul, the specification the fast kernel must equal bit for bit:
/// `out[n][f] = Σ_{k=0..K} s[k][n]·m[k][f]`, summed left to right from +0.0 in fp32.
pub fn matmul_reference(s: &[f32], m: &[f32], k: usize, n: usize, f: usize, out: &mut [f32]) {
    for nn in 0..n {
        for ff in 0..f {
            let mut acc = 0.0f32;
            for kk in 0..k {
                acc += s[kk * n + nn] * m[kk * f + ff];
            }
            out[nn * f + ff] = acc;
        }
    }
}

/// Register tile of the kernel: `NB` output rows × `FB` columns stay in registers while `k`
/// runs; per output element the adds keep `k` order (then term order within one `k`).
#[inline(always)]
fn gemm_tile<const T: usize, const NB: usize, const FB: usize>(
    terms: &[(&[f32], &[f32]); T],
    k: usize,
    n: usize,
    f: usize,
    n0: usize,
    f0: usize,
    out: &mut [f32],
) {
    let mut acc = [[0.0f32; FB]; NB];
    for kk in 0..k {
        for (s, m) in terms.iter() {
            let mrow: &[f32; FB] = m[kk * f + f0..][..FB].try_into().expect("tile width");
            let srow: &[f32; NB] = s[kk * n + n0..][..NB].try_into().expect("tile height");
            for (row, &sv) in acc.iter_mut().zip(srow) {
                axpy_row(row, sv, mrow);
            }
        }
    }
    for (j, row) in acc.iter().enumerate() {
        out[(n0 + j) * f + f0..][..FB].copy_from_slice(row);
    }
}

/// `row[x] = row[x] + sv · m[x]` (one fp32 multiply, one fp32 add per element).
#[inline(always)]
fn axpy_row<const FB: usize>(row: &mut [f32; FB], sv: f32, m: &[f32; FB]) {
    for (r, &v) in row.iter_mut().zip(m) {
        *r += sv * v;
    }
}

/// Edge outputs (partial tiles): the same order, one element at a time.
fn gemm_edge<const T: usize>(
    terms: &[(&[f32], &[f32]); T],
    k: usize,
    n: usize,
    f: usize,
    rows: Range<usize>,
    cols: Range<usize>,
    out: &mut [f32],
) {
    for nn in rows {
        for ff in cols.clone() {
            let mut acc = 0.0f32;
            for kk in 0..k {
                for (s, m) in terms.iter() {
                    acc += s[kk * n + nn] * m[kk * f + ff];
                }
            }
            out[nn * f + ff] = acc;
        }
    }
}

#[inline(always)]
fn gemm_body<const T: usize, const NB: usize, const FB: usize>(
    terms: &[(&[f32], &[f32]); T],
    k: usize,
    n: usize,
    f: usize,
    out: &mut [f32],
) {
    let (nf, ff) = (n / NB * NB, f / FB * FB);
    for n0 in (0..nf).step_by(NB) {
        for f0 in (0..ff).step_by(FB) {
            gemm_tile::<T, NB, FB>(terms, k, n, f, n0, f0, out);
        }
    }
    gemm_edge(terms, k, n, f, 0..nf, ff..f, out);
    gemm_edge(terms, k, n, f, nf..n, 0..f, out);
}

/// Significand bits of an operand beyond which a product of two could round in fp32: at most
/// 12 significant bits each keeps every product within fp32's 24.
const EXACT_LOW_BITS: u32 = (1 << 12) - 1;
/// Magnitudes outside `[2^-60, 2^60]` (zero aside) could make a product subnormal or overflow.
const EXACT_MIN: f32 = 8.673_617e-19; // 2^-60
const EXACT_MAX: f32 = 1.152_921_5e18; // 2^60

/// Whether every value is finite, zero or of magnitude in `[2^-60, 2^60]`, with at most 12
/// significant bits: then the product of any two such values is exact in fp32. (Branch-free over
/// blocks, so that the check costs a small fraction of the multiply it guards.)
fn exact_operand(x: &[f32]) -> bool {
    let (lo, hi) = (EXACT_MIN.to_bits(), EXACT_MAX.to_bits());
    x.chunks(1024).all(|block| {
        let bad = block.iter().fold(0u32, |bad, &v| {
            // Magnitude bits order like the magnitudes; NaN and infinity lie above `hi`.
            let m = v.to_bits() & 0x7FFF_FFFF;
            let ok = m == 0 || ((lo..=hi).contains(&m) && m & EXACT_LOW_BITS == 0);
            bad | u32::from(!ok)
        });
        bad == 0
    })
}

/// Whether every product `s · m` is exact in fp32, so that `acc + s·m` rounds once whether or not
/// the multiply-add is fused (true for fp16 and fp8 data, and bf16 data within `2^±60`).
pub fn products_exact(stationary: &[f32], moving: &[f32]) -> bool {
    exact_operand(stationary) && exact_operand(moving)
}

/// The AVX-512F kernel: 8 × 32 output tiles in sixteen zmm accumulators, `k` (then term) order
/// per element. Unfused (`FUSED = false`): one `vmulps` and one `vaddps` per 16 products. Fused:
/// one `vfmadd231ps`, used only when [`products_exact`] holds, where it rounds identically.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn gemm_avx512<const T: usize, const FUSED: bool>(
    terms: &[(&[f32], &[f32]); T],
    k: usize,
    n: usize,
    f: usize,
    out: &mut [f32],
) {
    use std::arch::x86_64::{_mm512_add_ps, _mm512_loadu_ps, _mm512_mul_ps, _mm512_set1_ps};
    use std::arch::x86_64::{_mm512_fmadd_ps, _mm512_setzero_ps, _mm512_storeu_ps};
    const NB: usize = 8;
    const FB: usize = 32;
    let (nf, ff) = (n / NB * NB, f / FB * FB);
    for n0 in (0..nf).step_by(NB) {
        for f0 in (0..ff).step_by(FB) {
            let mut acc = [[_mm512_setzero_ps(); 2]; NB];
            for kk in 0..k {
                for (s, m) in terms.iter() {
                    let mrow = &m[kk * f + f0..][..FB];
                    let srow = &s[kk * n + n0..][..NB];
                    // SAFETY: `mrow` holds FB = 32 floats, so both 16-float loads are in bounds.
                    let (m0, m1) = unsafe {
                        (
                            _mm512_loadu_ps(mrow.as_ptr()),
                            _mm512_loadu_ps(mrow[16..].as_ptr()),
                        )
                    };
                    for (a, &sv) in acc.iter_mut().zip(srow) {
                        let b = _mm512_set1_ps(sv);
                        if FUSED {
                            a[0] = _mm512_fmadd_ps(b, m0, a[0]);
                            a[1] = _mm512_fmadd_ps(b, m1, a[1]);
                        } else {
                            a[0] = _mm512_add_ps(a[0], _mm512_mul_ps(b, m0));
                            a[1] = _mm512_add_ps(a[1], _mm512_mul_ps(b, m1));
                        }
                    }
                }
            }
            for (j, a) in acc.iter().enumerate() {
                let dst = &mut out[(n0 + j) * f + f0..][..FB];
                // SAFETY: `dst` holds FB = 32 floats, so both 16-float stores are in bounds.
                unsafe {
                    _mm512_storeu_ps(dst.as_mut_ptr(), a[0]);
                    _mm512_storeu_ps(dst[16..].as_mut_ptr(), a[1]);
                }
            }
        }
    }
    gemm_edge(terms, k, n, f, 0..nf, ff..f, out);
    gemm_edge(terms, k, n, f, nf..n, 0..f, out);
}

/// The AVX2 kernel (with FMA where [`products_exact`] holds): 6 × 16 output tiles in twelve ymm
/// accumulators, the same per-element order as [`gemm_avx512`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn gemm_avx2<const T: usize, const FUSED: bool>(
    terms: &[(&[f32], &[f32]); T],
    k: usize,
    n: usize,
    f: usize,
    out: &mut [f32],
) {
    use std::arch::x86_64::{_mm256_add_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_mul_ps};
    use std::arch::x86_64::{_mm256_set1_ps, _mm256_setzero_ps, _mm256_storeu_ps};
    const NB: usize = 6;
    const FB: usize = 16;
    let (nf, ff) = (n / NB * NB, f / FB * FB);
    for n0 in (0..nf).step_by(NB) {
        for f0 in (0..ff).step_by(FB) {
            let mut acc = [[_mm256_setzero_ps(); 2]; NB];
            for kk in 0..k {
                for (s, m) in terms.iter() {
                    let mrow = &m[kk * f + f0..][..FB];
                    let srow = &s[kk * n + n0..][..NB];
                    // SAFETY: `mrow` holds FB = 16 floats, so both 8-float loads are in bounds.
                    let (m0, m1) = unsafe {
                        (
                            _mm256_loadu_ps(mrow.as_ptr()),
                            _mm256_loadu_ps(mrow[8..].as_ptr()),
                        )
                    };
                    for (a, &sv) in acc.iter_mut().zip(srow) {
                        let b = _mm256_set1_ps(sv);
                        if FUSED {
                            a[0] = _mm256_fmadd_ps(b, m0, a[0]);
                            a[1] = _mm256_fmadd_ps(b, m1, a[1]);
                        } else {
                            a[0] = _mm256_add_ps(a[0], _mm256_mul_ps(b, m0));
                            a[1] = _mm256_add_ps(a[1], _mm256_mul_ps(b, m1));
                        }
                    }
                }
            }
            for (j, a) in acc.iter().enumerate() {
                let dst = &mut out[(n0 + j) * f + f0..][..FB];
                // SAFETY: `dst` holds FB = 16 floats, so both 8-float stores are in bounds.
                unsafe {
                    _mm256_storeu_ps(dst.as_mut_ptr(), a[0]);
                    _mm256_storeu_ps(dst[8..].as_mut_ptr(), a[1]);
                }
            }
        }
    }
    gemm_edge(terms, k, n, f, 0..nf, ff..f, out);
    gemm_edge(terms, k, n, f, nf..n, 0..f, out);
}

/// [`matmul`]'s sum through one named loop (`None` when the host cannot run it): every loop gives
/// the same bits as [`matmul_reference`]; tests force each loop the host has.
#[cfg(test)]
pub(crate) fn matmul_with(
    lp: Loop,
    stationary: &[f32],
    moving: &[f32],
    k: usize,
    n: usize,
    f: usize,
    out: &mut [f32],
) -> Option<Result<(), PeError>> {
    if !lp.host_has() {
        return None;
    }
    if let Err(e) = check_shapes(stationary, moving, out, k, n, f) {
        return Some(Err(e));
    }
    gemm_on(lp, &[(stationary, moving)], k, n, f, out);
    Some(Ok(()))
}

fn gemm_on<const T: usize>(
    lp: Loop,
    terms: &[(&[f32], &[f32]); T],
    k: usize,
    n: usize,
    f: usize,
    out: &mut [f32],
) {
    let fused = T == 1 && products_exact(terms[0].0, terms[0].1);
    match lp {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: callers pass a loop the host has (`Loop::host_has`), so the CPU has AVX-512F.
        Loop::Avx512 => unsafe {
            if fused {
                gemm_avx512::<T, true>(terms, k, n, f, out)
            } else {
                gemm_avx512::<T, false>(terms, k, n, f, out)
            }
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above (AVX2 and FMA).
        Loop::Avx2 => unsafe {
            if fused {
                gemm_avx2::<T, true>(terms, k, n, f, out)
            } else {
                gemm_avx2::<T, false>(terms, k, n, f, out)
            }
        },
        _ => gemm_body::<T, 4, 16>(terms, k, n, f, out),
    }
}

/// `out[n][f] = Σ_k Σ_terms s_t[k][n]·m_t[k][f]` in the fixed order, vectorised across `f`.
fn gemm<const T: usize>(
    terms: &[(&[f32], &[f32]); T],
    k: usize,
    n: usize,
    f: usize,
    out: &mut [f32],
) {
    static BEST: std::sync::OnceLock<Loop> = std::sync::OnceLock::new();
    let lp = *BEST.get_or_init(|| Loop::available()[0]);
    gemm_on(lp, terms, k, n, f, out)
}

fn split(x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let hi: Vec<f32> = x.iter().map(|&v| fp32r(v)).collect();
    let lo = x
        .iter()
        .zip(&hi)
        .map(|(&v, &h)| if h.is_finite() { v - h } else { 0.0 })
        .collect();
    (hi, lo)
}

/// The array's sum for one instruction: `out[N, F] = stationary[K, N]ᵀ · moving[K, F]` in the
/// fixed order, with the operand treatment of `mode`.
pub fn matmul(
    mode: PeMode,
    stationary: &[f32],
    moving: &[f32],
    k: usize,
    n: usize,
    f: usize,
    out: &mut [f32],
) -> Result<(), PeError> {
    check_shapes(stationary, moving, out, k, n, f)?;
    match mode {
        PeMode::Plain | PeMode::Fp32(Fp32Mode::None) => {
            gemm(&[(stationary, moving)], k, n, f, out);
        }
        PeMode::Fp32(m) => {
            let (sh, sl) = split(stationary);
            let (mh, ml) = split(moving);
            let (hh, hl, lh) = ((&sh[..], &mh[..]), (&sh[..], &ml[..]), (&sl[..], &mh[..]));
            match m {
                Fp32Mode::High => gemm(&[hh], k, n, f, out),
                Fp32Mode::Low => gemm(&[hl, lh], k, n, f, out),
                _ => gemm(&[hh, hl, lh], k, n, f, out),
            }
        }
    }
    Ok(())
}

/// The operand and sum lengths of a `k × n` by `k × f` product.
fn check_shapes(
    stationary: &[f32],
    moving: &[f32],
    out: &[f32],
    k: usize,
    n: usize,
    f: usize,
) -> Result<(), PeError> {
    check_len("stationary", k * n, stationary.len())?;
    check_len("moving", k * f, moving.len())?;
    check_len("psum", n * f, out.len())
}

/// Write an instruction's sum into an fp32 PSUM destination under `flags`: START stores it
/// (the region was zeroed), otherwise `psum = psum + sum`.
pub fn psum_write_f32(flags: PsumFlags, sum: &[f32], psum: &mut [f32]) -> Result<(), PeError> {
    check_len("psum", sum.len(), psum.len())?;
    if flags.overwrites() {
        psum.copy_from_slice(sum);
    } else {
        for (p, &s) in psum.iter_mut().zip(sum) {
            *p += s;
        }
    }
    Ok(())
}

/// Write an instruction's sum into a bf16 PSUM destination (v4+): the existing bf16 value is
/// widened to fp32, the sum added in fp32, the result rounded to bf16 by the cast engine (RNE,
/// NaN → `0x7FC0`) on write; START rounds the sum alone.
pub fn psum_write_bf16(flags: PsumFlags, sum: &[f32], psum: &mut [u16]) -> Result<(), PeError> {
    check_len("psum", sum.len(), psum.len())?;
    for (p, &s) in psum.iter_mut().zip(sum) {
        let v = if flags.overwrites() {
            s
        } else {
            cast::to_f32(NumFormat::Bfloat16, u64::from(*p)) + s
        };
        *p = cast::from_f32(NumFormat::Bfloat16, v, &CastPolicy::REFERENCE) as u16;
    }
    Ok(())
}

/// PE transpose: `dst[c][r] = src[r][c]` for a `rows × cols` tile, bit-exact for any element
/// type.
pub fn transpose<T: Copy>(
    src: &[T],
    rows: usize,
    cols: usize,
    dst: &mut [T],
) -> Result<(), PeError> {
    check_len("src", rows * cols, src.len())?;
    check_len("dst", rows * cols, dst.len())?;
    for r in 0..rows {
        for c in 0..cols {
            dst[c * rows + r] = src[r * cols + c];
        }
    }
    Ok(())
}

/// **The LdWeights column rule.** The `j`-th of the `n` elements LdWeights (and LdWeightsMx, one
/// ×4 container per element) reads on a partition, in access-pattern order, lands in PE column
/// `n − 1 − j`: the weights are shifted into the array, so the first value read ends in the
/// farthest column. A reversed read (step −1 from the last element, as the compiler writes
/// every LdWeights) therefore loads column `c` with element `c`. The column is the PSUM
/// partition (offset from the destination's first) a Matmul writes: `psum[c][f] =
/// Σ_p W[p][c]·M[p][f]`. Evidence: the neuronx-cc 2.23 Trn2 stream computes `x @ y` only under
/// this reading (`docs/numerics.md` §10); the MX form follows it by inference (the same array).
///
/// `j < n` (the callers iterate `j` over `0..n`).
pub const fn stationary_column(j: usize, n: usize) -> usize {
    n - 1 - j
}

/// A tile as LdWeights read it — rows (partitions) of `n` elements of `width` items each, in
/// access-pattern order — rearranged into stationary column order by [`stationary_column`]:
/// element `j` of a row moves to column `n − 1 − j`, its `width` items kept in order (one
/// widened value per element, the element's bytes, or an MX container's bytes).
pub fn stationary_from_load<T: Copy>(
    loaded: &[T],
    n: usize,
    width: usize,
) -> Result<Vec<T>, PeError> {
    let row = n * width;
    if loaded.is_empty() {
        return Ok(Vec::new());
    }
    if row == 0 || !loaded.len().is_multiple_of(row) {
        return Err(PeError::Shape {
            what: "loaded weights (whole rows of n elements)",
            expected: loaded.len().checked_div(row).unwrap_or(0) * row,
            got: loaded.len(),
        });
    }
    let mut out = Vec::with_capacity(loaded.len());
    for r in loaded.chunks_exact(row) {
        out.extend((0..n).flat_map(|c| {
            let j = stationary_column(c, n); // the column map is its own inverse
            r[j * width..(j + 1) * width].iter().copied()
        }));
    }
    Ok(out)
}

/// The PE transpose pass-through (`transpose_mode = 1` on LdWeights and Matmul): the stationary
/// values reach PSUM unchanged, `psum[c][f]` = the `elem` bytes of `W[p][c]` for the one `p`
/// with `M[p][f] = 1`. No conversion, no multiply, no accumulation, so −0.0, NaN payloads and
/// subnormals keep their bits, and the result has the input's width.
///
/// `stationary` is `[k][n]` elements of `elem` bytes in column order, `moving` the `[k][f]`
/// moving values (exactly widened); `out` receives `[n][f]` elements of `elem` bytes. The
/// moving tensor must be a 0/1 selection — every column exactly one 1 (the identity of a
/// transpose is one) and every other value ±0 — otherwise [`PeError::NotPermutation`]: what
/// the array passes through for any other moving tensor is not public.
pub fn transpose_pass(
    stationary: &[u8],
    elem: usize,
    moving: &[f32],
    k: usize,
    n: usize,
    f: usize,
    out: &mut [u8],
) -> Result<(), PeError> {
    check_len("stationary", k * n * elem, stationary.len())?;
    check_len("moving", k * f, moving.len())?;
    check_len("psum", n * f * elem, out.len())?;
    for ff in 0..f {
        let (mut one, mut ones, mut others) = (0, 0, 0);
        for p in 0..k {
            let v = moving[p * f + ff];
            if v == 1.0 {
                one = p;
                ones += 1;
            } else if v != 0.0 {
                // ±0 is a zero; anything else (NaN included) is neither 0 nor 1.
                others += 1;
            }
        }
        if ones != 1 || others != 0 {
            return Err(PeError::NotPermutation {
                column: ff,
                ones,
                others,
            });
        }
        for c in 0..n {
            let s = (one * n + c) * elem;
            let d = (c * f + ff) * elem;
            out[d..d + elem].copy_from_slice(&stationary[s..s + elem]);
        }
    }
    Ok(())
}

/// One MX operand as it sits in SBUF: `partitions` partitions × `lanes` ×4 containers (four
/// consecutive contraction values each; FP8 lane `j` = byte `j` of a little-endian 4-byte
/// container, FP4 lane `j` = nibble `j` of a 2-byte container) and the E8M0 scale buffer, one
/// byte per 8 partitions × 1 container, rows interleaved by quadrant ([`mx::scale_slot`]).
#[derive(Clone, Copy, Debug)]
pub struct MxOperand<'a> {
    /// `Float8E4m3fnX4`, `Float8E5m2X4` or `Float4E2m1fnX4`.
    pub format: NumFormat,
    /// Partitions (32, 64 or 128).
    pub partitions: usize,
    /// Containers per partition.
    pub lanes: usize,
    /// `partitions × lanes` containers, partition-major, little-endian.
    pub data: &'a [u8],
    /// The interleaved scale buffer ([`MxShape::scale_buffer_bytes`] bytes at least).
    pub scales: &'a [u8],
}

impl From<MxError> for PeError {
    fn from(e: MxError) -> Self {
        PeError::Mx(e.to_string())
    }
}

/// Dequantize an MX operand (the MX module's dequantize: `x · 2^(scale − 127)` rounded once to
/// fp32, a NaN scale poisoning its block) into the contraction matrix `[K = 4·partitions,
/// lanes]`, row `k = 4·p + j` holding lane `j` of every container of partition `p`.
pub fn mx_dequantize(op: &MxOperand<'_>) -> Result<Vec<f32>, PeError> {
    if !matches!(op.partitions, 32 | 64 | 128) {
        return Err(PeError::Mx(format!(
            "{} partitions (legal: 32, 64, 128)",
            op.partitions
        )));
    }
    let shape = MxShape {
        partitions: op.partitions,
        free: 4 * op.lanes,
    };
    let mut tile = vec![0.0f32; shape.elements()];
    mx::dequantize(
        op.data,
        op.format,
        op.scales,
        shape,
        &mut tile,
        &MxConfig::default(),
    )?;
    let mut out = vec![0.0f32; tile.len()];
    for (p, row) in tile.chunks_exact(shape.free).enumerate() {
        for (lane, quad) in row.chunks_exact(4).enumerate() {
            for (j, &v) in quad.iter().enumerate() {
                out[(4 * p + j) * op.lanes + lane] = v;
            }
        }
    }
    Ok(out)
}

/// MX matmul (MatmulMx 0x0A): both operands dequantized ([`mx_dequantize`]), then
/// `out[N = stationary.lanes, F = moving.lanes]` summed over `K = 4 × partitions` in the fixed
/// order (`k = 4·p + j`, partition-major).
pub fn mx_matmul(
    stationary: &MxOperand<'_>,
    moving: &MxOperand<'_>,
    out: &mut [f32],
) -> Result<(), PeError> {
    if stationary.partitions != moving.partitions {
        return Err(PeError::Mx(format!(
            "stationary has {} partitions, moving {}",
            stationary.partitions, moving.partitions
        )));
    }
    let s = mx_dequantize(stationary)?;
    let m = mx_dequantize(moving)?;
    let k = 4 * stationary.partitions;
    matmul(
        PeMode::Plain,
        &s,
        &m,
        k,
        stationary.lanes,
        moving.lanes,
        out,
    )
}

#[cfg(test)]
mod tests;
