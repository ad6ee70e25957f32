//! Slice evaluation of `exp`, `tanh` and `sigmoid` that returns exactly what
//! [`ClosedForm::value`] returns, several times faster.
//!
//! The closed form computes each function in f64 with the C library (`exp`, `tanh`) and rounds
//! the f64 result once to f32. Here the f64 value is approximated instead — `e^x = 2^(k/16) ·
//! e^r` with a 16-entry table of `2^(j/16)` (small enough to sit in registers) and a degree-6
//! polynomial for `e^r − 1` on `|r| ≤ ln 2 / 32` — and rounded to f32 only when the rounding
//! cannot depend on the approximation:
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
//! Each function's approximation is written once ([`Approx::eval`]) over [`Lanes`]: one f64
//! (the portable loop, and the tails of the wider loops) or eight, as one AVX-512F register or
//! two AVX2 registers ([`Block`]). The wider loops ([`Loop::Avx512`], [`Loop::Avx2`]) use fused
//! multiply-adds, the portable loop a multiply and an add ([`MulAdd`]); a fused step only
//! removes a rounding, so either stays within the bounds above, and the guard keeps their
//! different last bits out of the results. The wider loops hold the table in registers and
//! read it with permutes, not gathers: AVX-512F in two registers (one two-source permute),
//! AVX2 in four (a permute within each, then two selections on the index's upper bits).
//!
//! `tests` check the margin against the closed form over dense samples (the approximation's
//! largest difference stays far below it), that the wider loops compute the fused
//! approximation bit for bit, and compare results bit for bit over the classes of input the
//! other tests use, on every loop the host has; an ignored test compares all 2^32 inputs of
//! each function on each loop.

use std::marker::PhantomData;
use std::sync::OnceLock;

use super::{ActFunction, ClosedForm};

/// The loops the evaluator chooses from: the portable loop, then AVX2, then AVX-512F.
pub(crate) use crate::numerics::simd::Loop;

/// The widest [`Loop`] this CPU has, up to `widest`.
#[inline]
fn chosen(widest: Loop) -> Loop {
    [Loop::Avx512, Loop::Avx2]
        .into_iter()
        .find(|&l| l <= widest && l.host_has())
        .unwrap_or(Loop::Portable)
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
/// The coefficients of the polynomial for `(e^r − 1 − r) / r²`, highest degree first.
const POLY: [f64; 5] = [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5];

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
/// The sign bit of an f64.
const SIGN: u64 = 1 << 63;

/// `2^(j/N)` for `j` in `0..N`.
fn table() -> &'static [f64; N] {
    static T: OnceLock<[f64; N]> = OnceLock::new();
    T.get_or_init(|| std::array::from_fn(|j| (j as f64 / N as f64).exp2()))
}

/// The bits of `2^(j/N)` less `j · 2^48`, for the wider loops: `kz = SHIFT + k` has `k` in its
/// low bits and `SHIFT`'s bits times 2^48 vanish mod 2^64, so the bits of entry `k mod N` plus
/// `⌊k / N⌋ · 2^52` (the scale, exponent adjusted) are this entry plus `kz · 2^48` (mod 2^64).
#[cfg(target_arch = "x86_64")]
fn biased_table() -> [u64; N] {
    let t = table();
    std::array::from_fn(|j| t[j].to_bits().wrapping_sub((j as u64) << 48))
}

/// How the approximations compute `a · b + c`.
pub(crate) trait MulAdd {
    /// `a · b + c`.
    fn mad(a: f64, b: f64, c: f64) -> f64;
}

/// One rounding (`fma`), as the wider loops compute (the tests' reference for them).
#[cfg(test)]
pub(crate) struct Fused;

/// Two roundings: a multiply, then an add.
pub(crate) struct Split;

#[cfg(test)]
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

/// f64 lanes with the operations the approximations are written in: one f64 ([`One`]) or
/// eight in the registers of a wider instruction set ([`Block`]). Each operation is the IEEE
/// operation of the same name, lane by lane, so an approximation computes the same bits in
/// every implementation with the same [`MulAdd`] form.
///
/// # Safety
///
/// The methods may use the instructions of the implementation's instruction set: call them
/// only where the CPU has it (they are inlined into functions compiled for it).
trait Lanes: Copy {
    /// The `2^(j/N)` table in the form [`Lanes::scale`] reads.
    type Table;
    unsafe fn table(t: &'static [f64; N]) -> Self::Table;
    unsafe fn splat(v: f64) -> Self;
    unsafe fn add(self, b: Self) -> Self;
    unsafe fn sub(self, b: Self) -> Self;
    unsafe fn mul(self, b: Self) -> Self;
    unsafe fn div(self, b: Self) -> Self;
    /// `self · b + c`.
    unsafe fn mul_add(self, b: Self, c: Self) -> Self;
    /// `c − self · b` (`(−self) · b + c`).
    unsafe fn neg_mul_add(self, b: Self, c: Self) -> Self;
    unsafe fn abs(self) -> Self;
    /// `−|self|`.
    unsafe fn neg_abs(self) -> Self;
    /// `self`'s magnitude with `sign`'s sign.
    unsafe fn copysign(self, sign: Self) -> Self;
    /// `a` where `d ≥ 0`, else `b`.
    unsafe fn select_nonneg(d: Self, a: Self, b: Self) -> Self;
    /// `2^(k/N)` for `kz = d · N / ln 2 + SHIFT` (`k` in its low mantissa bits): the table
    /// entry `k mod N` with `⌊k / N⌋` added to its exponent (wrapping, never a panic).
    unsafe fn scale(t: &Self::Table, kz: Self) -> Self;
}

/// `e^d = s · (1 + m)`: the scale `s = 2^(k/N)` and `m = e^r − 1`, for `|d| ≤ 128`. Any other
/// `d` gives some value, never a panic.
#[inline(always)]
unsafe fn exp_parts<W: Lanes>(t: &W::Table, d: W) -> (W, W) {
    let shift = W::splat(SHIFT);
    let kz = d.mul_add(W::splat(INV_LN2_N), shift);
    let kd = kz.sub(shift);
    // `kd · LN2_N_HI` is exact: the first step is `d − kd · LN2_N_HI` either way.
    let r = kd.neg_mul_add(W::splat(LN2_N_LO), kd.neg_mul_add(W::splat(LN2_N_HI), d));
    let mut p = r.mul_add(W::splat(POLY[0]), W::splat(POLY[1]));
    for &ci in &POLY[2..] {
        p = r.mul_add(p, W::splat(ci));
    }
    let m = r.mul(r).mul_add(p, r);
    (W::scale(t, kz), m)
}

/// The f64 approximation of `e^d`.
#[inline(always)]
unsafe fn exp_lanes<W: Lanes>(t: &W::Table, d: W) -> W {
    let (s, m) = exp_parts(t, d);
    s.mul_add(m, s)
}

/// The f64 approximation of `tanh d`.
#[inline(always)]
unsafe fn tanh_lanes<W: Lanes>(t: &W::Table, d: W) -> W {
    let (s, m) = exp_parts(t, W::splat(2.0).mul(d.abs()));
    // e^2|d| − 1 without cancelling the leading 1 when k = 0 (s = 1).
    let em1 = s.mul_add(m, s.sub(W::splat(1.0)));
    em1.div(em1.add(W::splat(2.0))).copysign(d)
}

/// The f64 approximation of `σ(d)`, in the closed form's two branches (`1 / (1 + e^−d)` for
/// `d ≥ 0`, `e^d / (1 + e^d)` below).
#[inline(always)]
unsafe fn sigmoid_lanes<W: Lanes>(t: &W::Table, d: W) -> W {
    let e = exp_lanes(t, d.neg_abs());
    W::select_nonneg(d, W::splat(1.0), e).div(W::splat(1.0).add(e))
}

/// One function's approximation and the range of inputs it is taken for.
trait Approx {
    const FUNC: ActFunction;
    /// Largest `|x|` taken by the approximation.
    const RANGE: f64;
    /// The approximation of `FUNC(d)` (see [`Lanes`] for the safety contract).
    unsafe fn eval<W: Lanes>(t: &W::Table, d: W) -> W;
}

/// A unit type for one function: its [`ActFunction`], range and approximation.
macro_rules! approx {
    ($(#[$doc:meta])* $name:ident, $func:ident, $range:expr, $eval:ident) => {
        $(#[$doc])*
        struct $name;

        impl Approx for $name {
            const FUNC: ActFunction = ActFunction::$func;
            const RANGE: f64 = $range;
            #[inline(always)]
            unsafe fn eval<W: Lanes>(t: &W::Table, d: W) -> W {
                $eval(t, d)
            }
        }
    };
}

approx!(
    /// `exp`, for `|x| ≤ 87.5` (`e^±87.5` is a normal f32).
    Exp, Exp, 87.5, exp_lanes
);
approx!(
    /// `tanh`, for `|x| ≤ 20` (above it the result is ±1 to far below an f32 ulp).
    Tanh, Tanh, 20.0, tanh_lanes
);
approx!(
    /// `sigmoid`, for `|x| ≤ 87`.
    Sigmoid, Sigmoid, 87.0, sigmoid_lanes
);

/// One f64, its multiply-adds computed as `M` says: no instruction set needed.
struct One<M>(f64, PhantomData<M>);

impl<M> Clone for One<M> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for One<M> {}

impl<M> One<M> {
    #[inline(always)]
    fn new(v: f64) -> Self {
        One(v, PhantomData)
    }
}

impl<M: MulAdd> Lanes for One<M> {
    type Table = &'static [f64; N];
    #[inline(always)]
    unsafe fn table(t: &'static [f64; N]) -> Self::Table {
        t
    }
    #[inline(always)]
    unsafe fn splat(v: f64) -> Self {
        Self::new(v)
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        Self::new(self.0 + b.0)
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        Self::new(self.0 - b.0)
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        Self::new(self.0 * b.0)
    }
    #[inline(always)]
    unsafe fn div(self, b: Self) -> Self {
        Self::new(self.0 / b.0)
    }
    #[inline(always)]
    unsafe fn mul_add(self, b: Self, c: Self) -> Self {
        Self::new(M::mad(self.0, b.0, c.0))
    }
    #[inline(always)]
    unsafe fn neg_mul_add(self, b: Self, c: Self) -> Self {
        Self::new(M::mad(-self.0, b.0, c.0))
    }
    #[inline(always)]
    unsafe fn abs(self) -> Self {
        Self::new(self.0.abs())
    }
    #[inline(always)]
    unsafe fn neg_abs(self) -> Self {
        Self::new(-self.0.abs())
    }
    #[inline(always)]
    unsafe fn copysign(self, sign: Self) -> Self {
        Self::new(self.0.copysign(sign.0))
    }
    #[inline(always)]
    unsafe fn select_nonneg(d: Self, a: Self, b: Self) -> Self {
        if d.0 >= 0.0 {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    unsafe fn scale(t: &Self::Table, kz: Self) -> Self {
        let k = kz.0.to_bits().wrapping_sub(SHIFT.to_bits()) as i64;
        let s = t[(k as usize) & (N - 1)];
        Self::new(f64::from_bits(
            s.to_bits()
                .wrapping_add(((k >> N_BITS) as u64).wrapping_shl(52)),
        ))
    }
}

/// `A`'s approximation of `d` on one f64 with the multiply-adds of `M`.
#[inline(always)]
fn scalar<A: Approx, M: MulAdd>(t: &'static [f64; N], d: f64) -> f64 {
    // SAFETY: `One` needs no instruction set.
    unsafe { A::eval(&t, One::<M>::new(d)).0 }
}

/// The f64 approximation of `e^d`.
#[cfg(test)]
pub(crate) fn exp64<M: MulAdd>(d: f64) -> f64 {
    scalar::<Exp, M>(table(), d)
}

/// The f64 approximation of `tanh d`.
#[cfg(test)]
pub(crate) fn tanh64<M: MulAdd>(d: f64) -> f64 {
    scalar::<Tanh, M>(table(), d)
}

/// The f64 approximation of `σ(d)`.
#[cfg(test)]
pub(crate) fn sigmoid64<M: MulAdd>(d: f64) -> f64 {
    scalar::<Sigmoid, M>(table(), d)
}

/// Whether the f32 rounding of `y` is decided by `y`'s approximation (see the module text).
/// (Signed compares of values below 2^63: they vectorise.)
#[inline(always)]
fn settles(y: f64) -> bool {
    let b = (y.to_bits() & !SIGN) as i64;
    let low = b & LOW as i64;
    let normal = b >= MIN_NORMAL as i64 && b < OVERFLOW as i64;
    let apart = low < (HALF - MARGIN) as i64 || low > (HALF + MARGIN) as i64;
    normal && apart
}

/// `A` over `xs` in place, one f64 at a time with the multiply-adds of `M`: the approximation
/// where `|x| ≤ A::RANGE` and [`settles`], the closed form elsewhere. The closed-form
/// evaluations made. Compiled portably it is the portable loop (auto-vectorised, with
/// [`Split`]); the wider loops run their tails through it with [`Fused`].
#[inline(always)]
fn guarded_loop<A: Approx, M: MulAdd>(xs: &mut [f32]) -> usize {
    const CHUNK: usize = 64;
    let t = table();
    let mut slow = 0;
    for chunk in xs.chunks_mut(CHUNK) {
        let mut keep = [true; CHUNK];
        let mut all = true;
        for (x, k) in chunk.iter_mut().zip(&mut keep) {
            let d = *x as f64;
            let y = scalar::<A, M>(t, d);
            // NaN fails the range test.
            let ok = d.abs() <= A::RANGE && settles(y);
            *x = if ok { y as f32 } else { *x };
            *k = ok;
            all &= ok;
        }
        if !all {
            for (x, _) in chunk.iter_mut().zip(&keep).filter(|(_, &k)| !k) {
                *x = ClosedForm::value(A::FUNC, *x, 0.0);
                slow += 1;
            }
        }
    }
    slow
}

/// Eight f64 lanes of a wider instruction set (fused multiply-adds), widened from and rounded
/// to eight f32 values, with the guard.
trait Block: Lanes {
    /// The eight values, exactly.
    unsafe fn widen(x: &[f32; 8]) -> Self;
    /// Each lane rounded to f32 (to nearest, ties to even: `as f32`).
    unsafe fn narrow(self, out: &mut [f32; 8]);
    /// The lanes, for the tests.
    #[cfg(test)]
    unsafe fn store(self, out: &mut [f64; 8]);
    /// Lanes from f64 values, for the tests.
    #[cfg(test)]
    unsafe fn load(y: &[f64; 8]) -> Self;
    /// Bit `i` set where lane `i` of `y` [`settles`] and `|x_i| ≤ range` (not for NaN), for
    /// `d` the lanes of `x`; `range` is an f32 value.
    unsafe fn keep(y: Self, d: Self, x: &[f32; 8], range: f64) -> u8;
}

/// `A` over one block `b` in place on the lanes of `W` (see [`block_loop`]), the lanes not in
/// `live` left as the approximation made them; the closed-form evaluations made.
#[inline(always)]
unsafe fn block<W: Block, A: Approx>(t: &W::Table, b: &mut [f32; 8], live: u8) -> usize {
    let x = *b;
    let d = W::widen(&x);
    let y = A::eval(t, d);
    let ok = W::keep(y, d, &x, A::RANGE);
    // A whole store (a masked one would hold back the next block's load), then the
    // unsettled lanes from the inputs.
    y.narrow(b);
    let mut slow = 0;
    if ok | !live != 0xFF {
        for (lane, (v, &x)) in b.iter_mut().zip(&x).enumerate() {
            if (ok | !live) >> lane & 1 == 0 {
                *v = ClosedForm::value(A::FUNC, x, 0.0);
                slow += 1;
            }
        }
    }
    slow
}

/// `A` over `xs` in place on the lanes of `W`, eight values at a time (the last `len % 8`
/// padded to a block); the closed-form evaluations made.
///
/// # Safety
///
/// The CPU has `W`'s instruction set and FMA.
#[inline(always)]
unsafe fn block_loop<W: Block, A: Approx>(xs: &mut [f32]) -> usize {
    const { assert!(A::RANGE as f32 as f64 == A::RANGE, "an f32 range") };
    let t = W::table(table());
    let (blocks, rest) = xs.as_chunks_mut::<8>();
    let mut slow = 0;
    for b in blocks.iter_mut() {
        slow += block::<W, A>(&t, b, 0xFF);
    }
    if !rest.is_empty() {
        // The last `len % 8` values as a block padded with zeros.
        let mut b = [0.0; 8];
        b[..rest.len()].copy_from_slice(rest);
        slow += block::<W, A>(&t, &mut b, !(0xFF << rest.len()));
        rest.copy_from_slice(&b[..rest.len()]);
    }
    slow
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Approx, Block, Lanes, HALF, LOW, MARGIN, MIN_NORMAL, N, OVERFLOW, SIGN};

    /// Eight f64 lanes in one AVX-512F register.
    #[derive(Clone, Copy)]
    pub(super) struct Avx512(__m512d);

    /// Eight f64 lanes in two AVX2 registers.
    #[derive(Clone, Copy)]
    pub(super) struct Avx2(__m256d, __m256d);

    /// [`super::block_loop`] on AVX-512F: the closed-form evaluations made.
    #[target_feature(enable = "avx512f,fma")]
    pub(super) fn avx512<A: Approx>(xs: &mut [f32]) -> usize {
        // SAFETY: this function's target features are the CPU's.
        unsafe { super::block_loop::<Avx512, A>(xs) }
    }

    /// [`super::block_loop`] on AVX2: the closed-form evaluations made.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn avx2<A: Approx>(xs: &mut [f32]) -> usize {
        // SAFETY: this function's target features are the CPU's.
        unsafe { super::block_loop::<Avx2, A>(xs) }
    }

    /// The approximations of `A` on `xs` (whole blocks of eight) in the lanes of `W`, whose
    /// instruction set the CPU has.
    #[cfg(test)]
    #[inline(always)]
    unsafe fn approximations<W: Block, A: Approx>(xs: &[f32]) -> Vec<f64> {
        let t = W::table(super::table());
        let mut out = Vec::with_capacity(xs.len());
        for x in xs.as_chunks::<8>().0 {
            let mut y = [0.0; 8];
            A::eval(&t, W::widen(x)).store(&mut y);
            out.extend(y);
        }
        out
    }

    /// The approximations of `A` on `xs` (whole blocks of eight) on `lp`, a wider loop this
    /// CPU has (the tests' callers check it).
    #[cfg(test)]
    pub(super) fn approximations_on<A: Approx>(lp: super::Loop, xs: &[f32]) -> Vec<f64> {
        #[target_feature(enable = "avx512f,fma")]
        fn on_avx512<A: Approx>(xs: &[f32]) -> Vec<f64> {
            // SAFETY: this function's target features are the CPU's.
            unsafe { approximations::<Avx512, A>(xs) }
        }
        #[target_feature(enable = "avx2,fma")]
        fn on_avx2<A: Approx>(xs: &[f32]) -> Vec<f64> {
            // SAFETY: this function's target features are the CPU's.
            unsafe { approximations::<Avx2, A>(xs) }
        }
        assert!(lp.host_has() && lp != super::Loop::Portable, "{lp:?}");
        // SAFETY: the CPU has the loop's instruction set and FMA.
        unsafe {
            if lp == super::Loop::Avx512 {
                on_avx512::<A>(xs)
            } else {
                on_avx2::<A>(xs)
            }
        }
    }

    /// [`Block::keep`] of `W` on the approximations `ys` and inputs `xs` (whole blocks of
    /// eight), lane by lane.
    #[cfg(test)]
    #[inline(always)]
    unsafe fn kept<W: Block>(ys: &[f64], xs: &[f32], range: f64) -> Vec<bool> {
        let mut out = Vec::with_capacity(ys.len());
        for (y, x) in ys.as_chunks::<8>().0.iter().zip(xs.as_chunks::<8>().0) {
            let keep = W::keep(W::load(y), W::widen(x), x, range);
            out.extend((0..8).map(|lane| keep >> lane & 1 == 1));
        }
        out
    }

    /// [`kept`] on `lp`, a wider loop this CPU has (the tests' callers check it).
    #[cfg(test)]
    pub(super) fn kept_on(lp: super::Loop, ys: &[f64], xs: &[f32], range: f64) -> Vec<bool> {
        #[target_feature(enable = "avx512f,fma")]
        fn on_avx512(ys: &[f64], xs: &[f32], range: f64) -> Vec<bool> {
            // SAFETY: this function's target features are the CPU's.
            unsafe { kept::<Avx512>(ys, xs, range) }
        }
        #[target_feature(enable = "avx2,fma")]
        fn on_avx2(ys: &[f64], xs: &[f32], range: f64) -> Vec<bool> {
            // SAFETY: this function's target features are the CPU's.
            unsafe { kept::<Avx2>(ys, xs, range) }
        }
        assert!(lp.host_has() && lp != super::Loop::Portable, "{lp:?}");
        // SAFETY: the CPU has the loop's instruction set and FMA.
        unsafe {
            if lp == super::Loop::Avx512 {
                on_avx512(ys, xs, range)
            } else {
                on_avx2(ys, xs, range)
            }
        }
    }

    /// The register of `a` (and `b`, `c`) through the function `f`.
    macro_rules! whole {
        ($f:path, $a:expr, $b:expr) => {
            Avx512($f($a.0, $b.0))
        };
        ($f:path, $a:expr, $b:expr, $c:expr) => {
            Avx512($f($a.0, $b.0, $c.0))
        };
    }

    /// The two-operand and three-operand arithmetic methods of [`Lanes`], each an intrinsic
    /// applied through `$wrap!` (`whole!` or `halves!`).
    macro_rules! arithmetic {
        ($wrap:ident; $($two:ident: $f2:path),*; $($three:ident: $f3:path),*) => {
            $(
                #[inline(always)]
                unsafe fn $two(self, b: Self) -> Self {
                    $wrap!($f2, self, b)
                }
            )*
            $(
                #[inline(always)]
                unsafe fn $three(self, b: Self, c: Self) -> Self {
                    $wrap!($f3, self, b, c)
                }
            )*
        };
    }

    impl Lanes for Avx512 {
        /// [`super::biased_table`] in two registers.
        type Table = (__m512i, __m512i);
        #[inline(always)]
        unsafe fn table(_: &'static [f64; N]) -> Self::Table {
            let t = super::biased_table();
            let (lo, hi) = t.split_at(8);
            (
                _mm512_loadu_si512(lo.as_ptr().cast()),
                _mm512_loadu_si512(hi.as_ptr().cast()),
            )
        }
        #[inline(always)]
        unsafe fn splat(v: f64) -> Self {
            Avx512(_mm512_set1_pd(v))
        }
        arithmetic!(
            whole;
            add: _mm512_add_pd, sub: _mm512_sub_pd, mul: _mm512_mul_pd, div: _mm512_div_pd;
            mul_add: _mm512_fmadd_pd, neg_mul_add: _mm512_fnmadd_pd
        );
        #[inline(always)]
        unsafe fn abs(self) -> Self {
            Avx512(_mm512_abs_pd(self.0))
        }
        #[inline(always)]
        unsafe fn neg_abs(self) -> Self {
            let sign = _mm512_set1_epi64(SIGN as i64);
            Avx512(_mm512_castsi512_pd(_mm512_or_si512(
                _mm512_castpd_si512(self.0),
                sign,
            )))
        }
        #[inline(always)]
        unsafe fn copysign(self, sign: Self) -> Self {
            let s = _mm512_set1_epi64(SIGN as i64);
            let mag = _mm512_andnot_si512(s, _mm512_castpd_si512(self.0));
            let sign = _mm512_and_si512(s, _mm512_castpd_si512(sign.0));
            Avx512(_mm512_castsi512_pd(_mm512_or_si512(mag, sign)))
        }
        #[inline(always)]
        unsafe fn select_nonneg(d: Self, a: Self, b: Self) -> Self {
            let nonneg = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(d.0, _mm512_setzero_pd());
            Avx512(_mm512_mask_blend_pd(nonneg, b.0, a.0))
        }
        #[inline(always)]
        unsafe fn scale(t: &Self::Table, kz: Self) -> Self {
            let kzi = _mm512_castpd_si512(kz.0);
            // Index bits 0..3 of each lane pick one of the 16 entries.
            let s = _mm512_permutex2var_epi64(t.0, kzi, t.1);
            let e = _mm512_slli_epi64::<48>(kzi);
            Avx512(_mm512_castsi512_pd(_mm512_add_epi64(s, e)))
        }
    }

    impl Block for Avx512 {
        #[inline(always)]
        unsafe fn widen(x: &[f32; 8]) -> Self {
            Avx512(_mm512_cvtps_pd(_mm256_loadu_ps(x.as_ptr())))
        }
        #[inline(always)]
        unsafe fn narrow(self, out: &mut [f32; 8]) {
            _mm256_storeu_ps(out.as_mut_ptr(), _mm512_cvtpd_ps(self.0));
        }
        #[cfg(test)]
        unsafe fn store(self, out: &mut [f64; 8]) {
            _mm512_storeu_pd(out.as_mut_ptr(), self.0);
        }
        #[cfg(test)]
        unsafe fn load(y: &[f64; 8]) -> Self {
            Avx512(_mm512_loadu_pd(y.as_ptr()))
        }
        #[inline(always)]
        unsafe fn keep(y: Self, d: Self, _: &[f32; 8], range: f64) -> u8 {
            let q = |v: u64| _mm512_set1_epi64(v as i64);
            let yb = _mm512_andnot_si512(q(SIGN), _mm512_castpd_si512(y.0));
            let low = _mm512_and_si512(yb, q(LOW));
            // `low` outside [HALF − MARGIN, HALF + MARGIN] ⟺ low − (HALF − MARGIN) > 2·MARGIN
            // (unsigned); `b` normal ⟺ b − MIN_NORMAL < OVERFLOW − MIN_NORMAL (unsigned).
            let apart =
                _mm512_cmpgt_epu64_mask(_mm512_sub_epi64(low, q(HALF - MARGIN)), q(2 * MARGIN));
            let normal = _mm512_cmplt_epu64_mask(
                _mm512_sub_epi64(yb, q(MIN_NORMAL)),
                q(OVERFLOW - MIN_NORMAL),
            );
            let inside =
                _mm512_cmp_pd_mask::<_CMP_LE_OQ>(_mm512_abs_pd(d.0), _mm512_set1_pd(range));
            apart & normal & inside
        }
    }

    /// Both halves of `a` (and `b`, `c`) through the function `f` (a path, not a closure:
    /// a closure would be compiled without the target features).
    macro_rules! halves {
        ($f:path, $a:expr) => {
            Avx2($f($a.0), $f($a.1))
        };
        ($f:path, $a:expr, $b:expr) => {
            Avx2($f($a.0, $b.0), $f($a.1, $b.1))
        };
        ($f:path, $a:expr, $b:expr, $c:expr) => {
            Avx2($f($a.0, $b.0, $c.0), $f($a.1, $b.1, $c.1))
        };
    }

    /// `|a|` on four lanes.
    #[inline(always)]
    unsafe fn abs4(a: __m256d) -> __m256d {
        _mm256_andnot_pd(_mm256_set1_pd(-0.0), a)
    }

    /// `−|a|` on four lanes.
    #[inline(always)]
    unsafe fn neg_abs4(a: __m256d) -> __m256d {
        _mm256_or_pd(_mm256_set1_pd(-0.0), a)
    }

    /// `a`'s magnitude with `b`'s sign on four lanes.
    #[inline(always)]
    unsafe fn copysign4(a: __m256d, b: __m256d) -> __m256d {
        let s = _mm256_set1_pd(-0.0);
        _mm256_or_pd(_mm256_andnot_pd(s, a), _mm256_and_pd(s, b))
    }

    /// `a` where `d ≥ 0`, else `b`, on four lanes.
    #[inline(always)]
    unsafe fn select_nonneg4(d: __m256d, a: __m256d, b: __m256d) -> __m256d {
        _mm256_blendv_pd(b, a, _mm256_cmp_pd::<_CMP_GE_OQ>(d, _mm256_setzero_pd()))
    }

    /// The 32-bit word of `t` (eight words) that bits 0..2 of each word of `idx` name.
    #[inline(always)]
    unsafe fn perm(t: __m256i, idx: __m256i) -> __m256 {
        _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(t, idx))
    }

    /// Two 32-bit words as the 64-bit lane `hi · 2^32 + lo`.
    const fn words(lo: u32, hi: u32) -> i64 {
        ((hi as u64) << 32 | lo as u64) as i64
    }

    /// [`Block::keep`]'s test of `y` on four lanes, in the 32-bit words of each lane: the low
    /// word holds `y`'s low 29 bits (the rounding test), the high word its sign-cleared high
    /// bits (the normal test, whose bounds have zero low words). Offsetting by 2^31 turns the
    /// unsigned range tests into signed compares: the low word's is true where the bits are
    /// apart from the midpoint, the high word's where `|y|` is not normal. The word mask
    /// (`movemask_ps`): lane `i` settles where bit `2i` is set and bit `2i + 1` clear.
    #[inline(always)]
    unsafe fn settles4(y: __m256d) -> u32 {
        const HI_MIN: u32 = (MIN_NORMAL >> 32) as u32;
        const HI_SPAN: u32 = ((OVERFLOW - MIN_NORMAL) >> 32) as u32;
        let bits = _mm256_and_si256(
            _mm256_castpd_si256(y),
            _mm256_set1_epi64x(words(LOW as u32, !(SIGN >> 32) as u32)),
        );
        let offset = words(
            (1u32 << 31).wrapping_sub((HALF - MARGIN) as u32),
            (1u32 << 31).wrapping_sub(HI_MIN),
        );
        let bound = words(
            (i32::MIN + 2 * MARGIN as i32) as u32,
            (i32::MIN + HI_SPAN as i32 - 1) as u32,
        );
        let test = _mm256_cmpgt_epi32(
            _mm256_add_epi32(bits, _mm256_set1_epi64x(offset)),
            _mm256_set1_epi64x(bound),
        );
        _mm256_movemask_ps(_mm256_castsi256_ps(test)) as u32
    }

    impl Lanes for Avx2 {
        /// [`super::biased_table`] as 32-bit words in four registers: the low words of
        /// entries 0..7, their high words, the low words of 8..15, their high words.
        type Table = [__m256i; 4];
        #[inline(always)]
        unsafe fn table(_: &'static [f64; N]) -> Self::Table {
            let t = super::biased_table();
            // Low and high words of entries 0..7, then of 8..15.
            let w: [[u32; 8]; 4] = std::array::from_fn(|r| {
                std::array::from_fn(|i| (t[8 * (r / 2) + i] >> (32 * (r % 2))) as u32)
            });
            [
                _mm256_loadu_si256(w[0].as_ptr().cast()),
                _mm256_loadu_si256(w[1].as_ptr().cast()),
                _mm256_loadu_si256(w[2].as_ptr().cast()),
                _mm256_loadu_si256(w[3].as_ptr().cast()),
            ]
        }
        #[inline(always)]
        unsafe fn splat(v: f64) -> Self {
            Avx2(_mm256_set1_pd(v), _mm256_set1_pd(v))
        }
        arithmetic!(
            halves;
            add: _mm256_add_pd, sub: _mm256_sub_pd, mul: _mm256_mul_pd, div: _mm256_div_pd;
            mul_add: _mm256_fmadd_pd, neg_mul_add: _mm256_fnmadd_pd
        );
        #[inline(always)]
        unsafe fn abs(self) -> Self {
            halves!(abs4, self)
        }
        #[inline(always)]
        unsafe fn neg_abs(self) -> Self {
            halves!(neg_abs4, self)
        }
        #[inline(always)]
        unsafe fn copysign(self, sign: Self) -> Self {
            halves!(copysign4, self, sign)
        }
        #[inline(always)]
        unsafe fn select_nonneg(d: Self, a: Self, b: Self) -> Self {
            halves!(select_nonneg4, d, a, b)
        }
        /// The eight indices (the low words of `kz`) in one register, in the order the
        /// interleaving at the end restores; the low and the high words of the entries each
        /// by two permutes and a blend on index bit 3; `kz · 2^48` added to the high words
        /// (it has no low word).
        #[inline(always)]
        unsafe fn scale(t: &Self::Table, kz: Self) -> Self {
            // Lanes a0..a3 (kz.0), b0..b3 (kz.1): a0 a1 b0 b1 | a2 a3 b2 b3.
            let idx = _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(
                _mm256_castpd_ps(kz.0),
                _mm256_castpd_ps(kz.1),
            ));
            // Bit 3 in the sign bit, which the blends read.
            let bit3 = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(idx));
            let lo = _mm256_blendv_ps(perm(t[0], idx), perm(t[2], idx), bit3);
            let hi = _mm256_blendv_ps(perm(t[1], idx), perm(t[3], idx), bit3);
            let (lo, hi) = (
                _mm256_castps_si256(lo),
                _mm256_add_epi32(_mm256_castps_si256(hi), _mm256_slli_epi32::<16>(idx)),
            );
            // a0 a1 | a2 a3 and b0 b1 | b2 b3, each entry's low word then its high word.
            Avx2(
                _mm256_castsi256_pd(_mm256_unpacklo_epi32(lo, hi)),
                _mm256_castsi256_pd(_mm256_unpackhi_epi32(lo, hi)),
            )
        }
    }

    impl Block for Avx2 {
        #[inline(always)]
        unsafe fn widen(x: &[f32; 8]) -> Self {
            let (lo, hi) = x.split_at(4);
            Avx2(
                _mm256_cvtps_pd(_mm_loadu_ps(lo.as_ptr())),
                _mm256_cvtps_pd(_mm_loadu_ps(hi.as_ptr())),
            )
        }
        #[inline(always)]
        unsafe fn narrow(self, out: &mut [f32; 8]) {
            let (lo, hi) = out.split_at_mut(4);
            _mm_storeu_ps(lo.as_mut_ptr(), _mm256_cvtpd_ps(self.0));
            _mm_storeu_ps(hi.as_mut_ptr(), _mm256_cvtpd_ps(self.1));
        }
        #[cfg(test)]
        unsafe fn store(self, out: &mut [f64; 8]) {
            let (lo, hi) = out.split_at_mut(4);
            _mm256_storeu_pd(lo.as_mut_ptr(), self.0);
            _mm256_storeu_pd(hi.as_mut_ptr(), self.1);
        }
        #[cfg(test)]
        unsafe fn load(y: &[f64; 8]) -> Self {
            let (lo, hi) = y.split_at(4);
            Avx2(_mm256_loadu_pd(lo.as_ptr()), _mm256_loadu_pd(hi.as_ptr()))
        }
        #[inline(always)]
        unsafe fn keep(y: Self, _: Self, x: &[f32; 8], range: f64) -> u8 {
            let inside = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(
                _mm256_andnot_ps(_mm256_set1_ps(-0.0), _mm256_loadu_ps(x.as_ptr())),
                _mm256_set1_ps(range as f32),
            )) as u32;
            let m = settles4(y.0) | settles4(y.1) << 8;
            let settled = m & !(m >> 1) & 0x5555;
            if settled == 0x5555 {
                return inside as u8;
            }
            // Bits 0, 2, .., 14 to bits 0..7.
            let s = (settled | settled >> 1) & 0x3333;
            let s = (s | s >> 2) & 0x0F0F;
            let s = (s | s >> 4) & 0x00FF;
            (s & inside) as u8
        }
    }
}

/// `A` over `xs` in place on the widest loop this CPU has up to `widest`; the closed-form
/// evaluations made. The results are the same on every loop.
fn evaluate<A: Approx>(xs: &mut [f32], widest: Loop) -> usize {
    match chosen(widest) {
        // SAFETY: `chosen` picks only loops the CPU has (AVX-512F or AVX2, each with FMA).
        #[cfg(target_arch = "x86_64")]
        Loop::Avx512 => unsafe { x86::avx512::<A>(xs) },
        #[cfg(target_arch = "x86_64")]
        Loop::Avx2 => unsafe { x86::avx2::<A>(xs) },
        _ => guarded_loop::<A, Split>(xs),
    }
}

/// `exp` over `xs` in place on the widest loop up to `widest`; the closed-form evaluations made.
pub(crate) fn exp(xs: &mut [f32], widest: Loop) -> usize {
    evaluate::<Exp>(xs, widest)
}

/// `tanh` over `xs` in place on the widest loop up to `widest`; the closed-form evaluations
/// made.
pub(crate) fn tanh(xs: &mut [f32], widest: Loop) -> usize {
    evaluate::<Tanh>(xs, widest)
}

/// `sigmoid` over `xs` in place on the widest loop up to `widest`; the closed-form evaluations
/// made.
pub(crate) fn sigmoid(xs: &mut [f32], widest: Loop) -> usize {
    evaluate::<Sigmoid>(xs, widest)
}

/// The approximations of `func` (one of exp, tanh, sigmoid) on `xs` (whole blocks of eight)
/// as the loop `lp` computes them (the portable loop's with [`Split`]), for the tests.
#[cfg(test)]
pub(crate) fn test_approximations(func: ActFunction, lp: Loop, xs: &[f32]) -> Vec<f64> {
    fn on<A: Approx>(lp: Loop, xs: &[f32]) -> Vec<f64> {
        match lp {
            #[cfg(target_arch = "x86_64")]
            Loop::Avx512 | Loop::Avx2 => x86::approximations_on::<A>(lp, xs),
            _ => xs
                .iter()
                .map(|&x| scalar::<A, Split>(table(), x as f64))
                .collect(),
        }
    }
    match func {
        ActFunction::Exp => on::<Exp>(lp, xs),
        ActFunction::Tanh => on::<Tanh>(lp, xs),
        ActFunction::Sigmoid => on::<Sigmoid>(lp, xs),
        _ => panic!("{func} has no fast evaluation"),
    }
}

/// Which approximations `ys` of inputs `xs` (whole blocks of eight) the loop `lp` keeps, for
/// the tests: the portable loop's test is `|x| ≤ range` and [`settles`].
#[cfg(test)]
pub(crate) fn test_kept(lp: Loop, ys: &[f64], xs: &[f32], range: f64) -> Vec<bool> {
    match lp {
        #[cfg(target_arch = "x86_64")]
        Loop::Avx512 | Loop::Avx2 => x86::kept_on(lp, ys, xs, range),
        _ => ys
            .iter()
            .zip(xs)
            .take(ys.len().min(xs.len()) / 8 * 8)
            .map(|(&y, &x)| f64::from(x).abs() <= range && settles(y))
            .collect(),
    }
}
