//! Slice evaluation of `exp`, `tanh` and `sigmoid` that returns exactly what
//! [`ClosedForm::value`] returns, several times faster.
//!
//! The closed form computes each function in f64 with the C library (`exp`, `tanh`) and rounds
//! the f64 result once to f32. Here the f64 value is approximated instead — `e^x = 2^(k/16) ·
//! e^r` with a 16-entry table of `2^(j/16)` (small enough to sit in two AVX-512 registers) and a
//! degree-6 polynomial for `e^r − 1` on `|r| ≤ ln 2 / 32` — and rounded to f32 only when the
//! rounding cannot depend on the approximation:
//!
//! * the approximation is within 2^−48 (relative) of the exact value for `exp` and `sigmoid`
//!   (table entries and reduction to within a few f64 ulps, polynomial truncation below
//!   2^−51, a few roundings in the combination) and within 2^−42 for `tanh` (its difference
//!   `e^2|x| − 1` is at least 0.021 whenever the table index is not 0, which costs at most 6
//!   bits); the C library's f64 results are within a few f64 ulps (2^−50) of the exact value,
//!   so the two f64 values differ by less than 2^−41 relative;
//! * an f64 value rounds to f32 by its low 29 mantissa bits; the approximation is kept only
//!   when those bits are at least [`MARGIN`] f64 ulps (2^−37 relative) away from the rounding
//!   midpoint `2^28`, and its magnitude is a normal f32 (no subnormal rounding, no overflow).
//!   Every f64 value within 2^−37 of it then rounds to the same f32 — in particular the closed
//!   form's;
//! * every other input (outside the fast range, NaN, ±∞, a result near a midpoint or outside
//!   the normal range — about one in 4000 of the inputs in range) is evaluated by the closed
//!   form itself.
//!
//! The wider loops (AVX-512F, AVX2) are compiled with fused multiply-adds, the portable loop
//! with a multiply and an add ([`MulAdd`]); a fused step only removes a rounding, so either stays
//! within the bounds above, and the guard keeps their different last bits out of the results.
//! On AVX-512F, `exp` runs [`exp_avx512`]: the same fused approximation and guard written with
//! the instruction set's intrinsics, the 16-entry table in two registers (a permute, no gather).
//!
//! `tests` check the margin against the closed form over dense samples (the approximation's
//! largest difference stays far below it) and compare results bit for bit over the classes of
//! input the other tests use; an ignored test compares all 2^32 inputs of each function.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use super::{ActFunction, ClosedForm};

/// The loops [`guarded`] may choose from: the portable loop, then AVX2, then AVX-512F.
pub(crate) use crate::numerics::simd::Loop;

/// The widest [`Loop`] that [`guarded`] may use (where the CPU has it); lowered only by tests,
/// which so check every loop on one host.
static WIDEST: AtomicU8 = AtomicU8::new(Loop::Avx512 as u8);

/// The widest [`Loop`] this CPU has, within [`WIDEST`].
#[inline]
fn best_loop() -> Loop {
    let widest = WIDEST.load(Ordering::Relaxed);
    [Loop::Avx512, Loop::Avx2]
        .into_iter()
        .find(|&l| widest >= l as u8 && l.host_has())
        .unwrap_or(Loop::Portable)
}

/// Let [`guarded`] use loops up to `widest` (tests).
#[cfg(test)]
pub(crate) fn set_widest(widest: Loop) {
    WIDEST.store(widest as u8, Ordering::Relaxed);
}

/// Index bits of the `2^(j/N)` table.
const N_BITS: u32 = 4;
/// Entries of the `2^(j/N)` table.
const N: usize = 1 << N_BITS;
/// `N / ln 2`.
const INV_LN2_N: f64 = N as f64 / std::f64::consts::LN_2;
/// `ln 2 / N` in two parts: the high part has 32 significant bits, so `k · LN2_N_HI` is exact
/// for every `|k| < 2^21` (fdlibm's `ln2_hi` / `ln2_lo`, scaled by 1/16).
const LN2_N_HI: f64 = 6.931_471_803_691_238e-1 / N as f64;
const LN2_N_LO: f64 = 1.908_214_929_270_587_7e-10 / N as f64;
/// `1.5 · 2^52`: adding it rounds an f64 below 2^51 to an integer held in the low mantissa bits.
const SHIFT: f64 = 6_755_399_441_055_744.0;

/// Distance, in f64 ulps, that the low 29 mantissa bits of an approximation must keep from the
/// f32 rounding midpoint (2^16 ulps = 2^−36 of the binade, at least 2^−37 of the value).
pub(crate) const MARGIN: u64 = 1 << 16;
/// The mantissa bits an f64 → f32 rounding drops.
const LOW: u64 = (1 << 29) - 1;
/// The rounding midpoint in those bits.
const HALF: u64 = 1 << 28;
/// Bits of the f64 2^−126 (the smallest normal f32) and of 2^128 (where f32 overflows).
const MIN_NORMAL: u64 = (1023 - 126) << 52;
const OVERFLOW: u64 = (1023 + 128) << 52;

/// Largest `|x|` taken by the fast `exp` (`e^±87.5` is a normal f32).
const EXP_RANGE: f64 = 87.5;
/// Largest `|x|` taken by the fast `tanh` (above it the result is ±1 to far below an f32 ulp).
const TANH_RANGE: f64 = 20.0;
/// Largest `|x|` taken by the fast `sigmoid`.
const SIGMOID_RANGE: f64 = 87.0;

/// `2^(j/N)` for `j` in `0..N`.
fn table() -> &'static [f64; N] {
    static T: OnceLock<[f64; N]> = OnceLock::new();
    T.get_or_init(|| std::array::from_fn(|j| (j as f64 / N as f64).exp2()))
}

/// How the approximations compute `a · b + c`.
pub(crate) trait MulAdd {
    /// `a · b + c`.
    fn mad(a: f64, b: f64, c: f64) -> f64;
}

/// One rounding (`fma`): for code compiled where the CPU has FMA.
pub(crate) struct Fused;

/// Two roundings: a multiply, then an add.
pub(crate) struct Split;

impl MulAdd for Fused {
    #[inline(always)]
    fn mad(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

impl MulAdd for Split {
    #[inline(always)]
    fn mad(a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
}

/// `e^d = s · (1 + m)`: the scale `s = 2^(k/N)` (from the table, exponent adjusted) and
/// `m = e^r − 1`, for `|d| ≤ 128`. Any other `d` gives some value, never a panic.
#[inline(always)]
fn exp_parts<M: MulAdd>(t: &[f64; N], d: f64) -> (f64, f64) {
    let kz = M::mad(d, INV_LN2_N, SHIFT);
    let k = kz.to_bits().wrapping_sub(SHIFT.to_bits()) as i64;
    let kd = kz - SHIFT;
    // `kd · LN2_N_HI` is exact: the first step is `d − kd · LN2_N_HI` either way.
    let r = M::mad(-kd, LN2_N_LO, M::mad(-kd, LN2_N_HI, d));
    let p = M::mad(r, 1.0 / 720.0, 1.0 / 120.0);
    let p = M::mad(r, p, 1.0 / 24.0);
    let p = M::mad(r, p, 1.0 / 6.0);
    let p = M::mad(r, p, 0.5);
    let m = M::mad(r * r, p, r);
    let s = t[(k as usize) & (N - 1)];
    let s = f64::from_bits(
        s.to_bits()
            .wrapping_add(((k >> N_BITS) as u64).wrapping_shl(52)),
    );
    (s, m)
}

/// Whether the f32 rounding of `y` is decided by `y`'s approximation (see the module text).
/// (Signed compares of values below 2^63: they vectorise.)
#[inline(always)]
fn settles(y: f64) -> bool {
    let b = (y.to_bits() & !(1u64 << 63)) as i64;
    let low = b & LOW as i64;
    let normal = b >= MIN_NORMAL as i64 && b < OVERFLOW as i64;
    let apart = low < (HALF - MARGIN) as i64 || low > (HALF + MARGIN) as i64;
    normal && apart
}

/// The f64 approximation of `e^d`.
#[inline(always)]
pub(crate) fn exp64<M: MulAdd>(t: &[f64; N], d: f64) -> f64 {
    let (s, m) = exp_parts::<M>(t, d);
    M::mad(s, m, s)
}

/// The f64 approximation of `tanh d`.
#[inline(always)]
pub(crate) fn tanh64<M: MulAdd>(t: &[f64; N], d: f64) -> f64 {
    let (s, m) = exp_parts::<M>(t, 2.0 * d.abs());
    // e^2|d| − 1 without cancelling the leading 1 when k = 0 (s = 1).
    let em1 = M::mad(s, m, s - 1.0);
    (em1 / (em1 + 2.0)).copysign(d)
}

/// The f64 approximation of `σ(d)`, in the closed form's two branches.
#[inline(always)]
pub(crate) fn sigmoid64<M: MulAdd>(t: &[f64; N], d: f64) -> f64 {
    let e = exp64::<M>(t, -d.abs());
    if d >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    }
}

/// Evaluate `func` over `xs` in place with the approximation inside `|x| ≤ range`, the closed
/// form elsewhere and wherever the rounding is not settled. Returns the number of closed-form
/// evaluations. The fast pass is compiled for AVX-512F and AVX2 (each with FMA, using `fused`)
/// as well as portably (using `split`), chosen at run time; the results do not depend on it
/// (only the approximation's last bits can differ, and the guard keeps them from the result).
#[inline(always)]
fn guarded(
    func: ActFunction,
    xs: &mut [f32],
    range: f64,
    fused: impl Fn(&[f64; N], f64) -> f64,
    split: impl Fn(&[f64; N], f64) -> f64,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // The same loop compiled for a wider instruction set.
        macro_rules! wider {
            ($name:ident, $feature:literal) => {
                #[target_feature(enable = $feature)]
                fn $name(
                    func: ActFunction,
                    xs: &mut [f32],
                    range: f64,
                    fast: impl Fn(&[f64; N], f64) -> f64,
                ) -> usize {
                    guarded_loop(func, xs, range, fast)
                }
            };
        }
        wider!(avx512, "avx512f,fma");
        wider!(avx2, "avx2,fma");
        match best_loop() {
            // SAFETY: the CPU has AVX-512F and FMA.
            Loop::Avx512 => return unsafe { avx512(func, xs, range, fused) },
            // SAFETY: the CPU has AVX2 and FMA.
            Loop::Avx2 => return unsafe { avx2(func, xs, range, fused) },
            Loop::Portable => {}
        }
    }
    let _ = &fused;
    guarded_loop(func, xs, range, split)
}

#[inline(always)]
fn guarded_loop(
    func: ActFunction,
    xs: &mut [f32],
    range: f64,
    fast: impl Fn(&[f64; N], f64) -> f64,
) -> usize {
    const CHUNK: usize = 64;
    let t = table();
    let mut slow = 0;
    for chunk in xs.chunks_mut(CHUNK) {
        let mut keep = [true; CHUNK];
        let mut all = true;
        for (x, k) in chunk.iter_mut().zip(&mut keep) {
            let d = *x as f64;
            let y = fast(t, d);
            // NaN fails the range test.
            let ok = d.abs() <= range && settles(y);
            *x = if ok { y as f32 } else { *x };
            *k = ok;
            all &= ok;
        }
        if !all {
            for (x, _) in chunk.iter_mut().zip(&keep).filter(|(_, &k)| !k) {
                *x = ClosedForm::value(func, *x, 0.0);
                slow += 1;
            }
        }
    }
    slow
}

/// `exp` over `xs` in place; the closed-form evaluations made.
pub(crate) fn exp(xs: &mut [f32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if best_loop() == Loop::Avx512 {
        // SAFETY: the CPU has AVX-512F and FMA.
        return unsafe { exp_avx512(xs) };
    }
    guarded(
        ActFunction::Exp,
        xs,
        EXP_RANGE,
        exp64::<Fused>,
        exp64::<Split>,
    )
}

/// [`exp`] with AVX-512F and FMA: [`exp64::<Fused>`] on eight values at a time with the table
/// in two registers (a permute, no gather) and the guard of [`guarded_loop`]; the last
/// `len % 8` values through [`guarded_loop`] itself. The closed-form evaluations made.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn exp_avx512(xs: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let t = table();
    let (blocks, rest) = xs.as_chunks_mut::<8>();
    let mut slow = 0;
    // SAFETY: this function's target features are the CPU's; every load and store is of a
    // whole `[f64; 8]` half of the table or a whole `[f32; 8]` block.
    unsafe {
        let (t_lo, t_hi) = (
            _mm512_loadu_pd(t.as_ptr()),
            _mm512_loadu_pd(t.as_ptr().add(8)),
        );
        let pd = |v: f64| _mm512_set1_pd(v);
        let (inv, shift) = (pd(INV_LN2_N), pd(SHIFT));
        let (hi, lo) = (pd(LN2_N_HI), pd(LN2_N_LO));
        let c = [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5].map(pd);
        let q = |v: u64| _mm512_set1_epi64(v as i64);
        let (abs, low_bits) = (q(!(1u64 << 63)), q(LOW));
        // `low` outside [HALF − MARGIN, HALF + MARGIN] ⟺ low − (HALF − MARGIN) > 2·MARGIN
        // (unsigned); `b` normal ⟺ b − MIN_NORMAL < OVERFLOW − MIN_NORMAL (unsigned).
        let (near, width) = (q(HALF - MARGIN), q(2 * MARGIN));
        let (min_normal, normal_span) = (q(MIN_NORMAL), q(OVERFLOW - MIN_NORMAL));
        let range = pd(EXP_RANGE);
        for b in blocks.iter_mut() {
            let x = _mm256_loadu_ps(b.as_ptr());
            let d = _mm512_cvtps_pd(x);
            let kz = _mm512_fmadd_pd(d, inv, shift);
            let kd = _mm512_sub_pd(kz, shift);
            let k = _mm512_sub_epi64(_mm512_castpd_si512(kz), _mm512_castpd_si512(shift));
            let r = _mm512_fnmadd_pd(kd, lo, _mm512_fnmadd_pd(kd, hi, d));
            let mut p = _mm512_fmadd_pd(r, c[0], c[1]);
            for &ci in &c[2..] {
                p = _mm512_fmadd_pd(r, p, ci);
            }
            let m = _mm512_fmadd_pd(_mm512_mul_pd(r, r), p, r);
            // Index bits 0..3 of each lane pick one of the 16 entries.
            let s = _mm512_castpd_si512(_mm512_permutex2var_pd(t_lo, k, t_hi));
            let e = _mm512_slli_epi64::<52>(_mm512_srai_epi64::<N_BITS>(k));
            let s = _mm512_castsi512_pd(_mm512_add_epi64(s, e));
            let y = _mm512_fmadd_pd(s, m, s);
            let yb = _mm512_and_si512(_mm512_castpd_si512(y), abs);
            let low = _mm512_and_si512(yb, low_bits);
            let apart = _mm512_cmpgt_epu64_mask(_mm512_sub_epi64(low, near), width);
            let normal = _mm512_cmplt_epu64_mask(_mm512_sub_epi64(yb, min_normal), normal_span);
            let inside = _mm512_cmp_pd_mask::<_CMP_LE_OQ>(_mm512_abs_pd(d), range);
            let ok = apart & normal & inside;
            // A whole store (a masked one would hold back the next block's load), then the
            // unsettled lanes from the inputs.
            _mm256_storeu_ps(b.as_mut_ptr(), _mm512_cvtpd_ps(y));
            if ok != 0xFF {
                let mut inputs = [0f32; 8];
                _mm256_storeu_ps(inputs.as_mut_ptr(), x);
                for (lane, (v, &x)) in b.iter_mut().zip(&inputs).enumerate() {
                    if ok >> lane & 1 == 0 {
                        *v = ClosedForm::value(ActFunction::Exp, x, 0.0);
                        slow += 1;
                    }
                }
            }
        }
    }
    slow + guarded_loop(ActFunction::Exp, rest, EXP_RANGE, exp64::<Fused>)
}

/// `tanh` over `xs` in place; the closed-form evaluations made.
pub(crate) fn tanh(xs: &mut [f32]) -> usize {
    guarded(
        ActFunction::Tanh,
        xs,
        TANH_RANGE,
        tanh64::<Fused>,
        tanh64::<Split>,
    )
}

/// `sigmoid` over `xs` in place; the closed-form evaluations made.
pub(crate) fn sigmoid(xs: &mut [f32]) -> usize {
    guarded(
        ActFunction::Sigmoid,
        xs,
        SIGMOID_RANGE,
        sigmoid64::<Fused>,
        sigmoid64::<Split>,
    )
}

/// The table, for the tests' direct use of the approximations.
#[cfg(test)]
pub(crate) fn test_table() -> &'static [f64; N] {
    table()
}
