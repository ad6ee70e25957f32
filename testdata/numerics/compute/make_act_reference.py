#!/usr/bin/env python3
"""Correctly rounded fp32 references for the activation closed forms.

For every activation function, a deterministic set of fp32 inputs on the function's valid
range (special values, a dense linear grid, log-spaced magnitudes of both signs, random bit
patterns) and the exact function value rounded once to fp32 (round to nearest even, with
subnormals and overflow), computed with mpmath at 400-bit precision.

Writes act_reference.bin (little-endian u32 pairs: input bits, expected bits) and
act_reference.json (per function: offset and count in pairs, and the Prelu parameter).
Usage: python3 make_act_reference.py   (needs mpmath and numpy)
"""
import json
import os
import struct

import mpmath as mp
import numpy as np

mp.mp.prec = 400  # enough that no reference formula loses bits to cancellation on its range
HERE = os.path.dirname(os.path.abspath(__file__))
FLT_MAX = float(np.finfo(np.float32).max)
NAN_BITS = 0x7FC00000


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


def round_f32(v):
    """Round an mpf (or exact Python number) to the nearest fp32, ties to even."""
    v = mp.mpf(v)
    if mp.isnan(v):
        return NAN_BITS
    if mp.isinf(v):
        return 0x7F800000 if v > 0 else 0xFF800000
    if v == 0:
        return 0x80000000 if mp.sign(v) < 0 else 0
    sign = 0x80000000 if v < 0 else 0
    m = abs(v)
    e = int(mp.floor(mp.log(m, 2)))
    # guard against log rounding at exact powers of two
    if mp.mpf(2) ** e > m:
        e -= 1
    elif mp.mpf(2) ** (e + 1) <= m:
        e += 1
    q_exp = max(e, -126) - 23
    q = m / mp.mpf(2) ** q_exp
    n = int(mp.floor(q))
    frac = q - n
    if frac > 0.5 or (frac == 0.5 and n % 2 == 1):
        n += 1
    val = float(n) * 2.0 ** q_exp  # exact: n < 2^25
    if val > FLT_MAX:
        return sign | 0x7F800000
    return sign | f32_bits(val)


def sig(x):
    return 1 / (1 + mp.exp(-x))


def phi(x):
    return mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)


def Phi(x):
    return mp.erfc(-x / mp.sqrt(2)) / 2


K = mp.mpf("0.044715")
SLOPE = mp.mpf("1.702")
LEAK = mp.mpf("0.01")
PRELU_ALPHA = 0.25

# name -> (exact function of an mpf, valid range (lo, hi) or None for all finite)
FUNCS = {
    "identity": (lambda x: x, None),
    "copy": (lambda x: x, None),
    "square": (lambda x: x * x, None),
    "relu": (lambda x: x if x > 0 else mp.mpf(0), None),
    "leaky_relu": (lambda x: x * LEAK if x <= 0 else x, None),
    "parametric_relu": (lambda x: x * PRELU_ALPHA if x <= 0 else x, None),
    "sigmoid": (sig, (-120.0, 50.0)),
    "tanh": (mp.tanh, (-20.0, 20.0)),
    "exp": (mp.exp, (-104.0, 88.7)),
    "softplus": (lambda x: mp.log(1 + mp.exp(x)), (-104.0, 100.0)),
    "sqrt": (mp.sqrt, (0.0, FLT_MAX)),
    "reciprocal_sqrt": (lambda x: 1 / mp.sqrt(x), (0.0, FLT_MAX)),
    "ln": (mp.log, (0.0, FLT_MAX)),
    "erf": (mp.erf, (-6.0, 6.0)),
    "sin": (mp.sin, (-1000.0, 1000.0)),
    "arctan": (mp.atan, (-1e7, 1e7)),
    "sign": (lambda x: mp.sign(x), None),
    "gelu": (lambda x: x * Phi(x), (-13.0, 20.0)),
    "mish": (lambda x: x * mp.tanh(mp.log(1 + mp.exp(x))), (-100.0, 50.0)),
    "gelu_apprx_tanh": (
        lambda x: x / 2 * (1 + mp.tanh(mp.sqrt(2 / mp.pi) * (x + K * x ** 3))), (-10.0, 20.0)),
    "gelu_apprx_sigmoid": (lambda x: x * sig(SLOPE * x), (-60.0, 60.0)),
    "derivative_gelu_apprx_sigmoid": (
        lambda x: sig(SLOPE * x) * (1 + SLOPE * x * (1 - sig(SLOPE * x))), (-60.0, 60.0)),
    "derivative_gelu": (lambda x: Phi(x) + x * phi(x), (-13.0, 13.0)),
    "derivative_erf": (lambda x: 2 / mp.sqrt(mp.pi) * mp.exp(-x * x), (-9.5, 9.5)),
    "abs": (abs, None),
    "reciprocal": (lambda x: 1 / x, None),
    "abs_reciprocal_sqrt": (lambda x: 1 / mp.sqrt(abs(x)), None),
    "silu": (lambda x: x * sig(x), (-100.0, 100.0)),
    "derivative_silu": (lambda x: sig(x) * (1 + x * (1 - sig(x))), (-100.0, 100.0)),
    "is_finite": (lambda x: mp.mpf(1), None),
    "derivative_relu": (lambda x: mp.mpf(1) if x > 0 else mp.mpf(0), None),
    "derivative_leaky_relu": (lambda x: mp.mpf(1) if x > 0 else LEAK, None),
    "derivative_identity": (lambda x: mp.mpf(1), None),
    "memset_zero": (lambda x: mp.mpf(0), None),
}

# Special inputs whose results every exact or total function defines.
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-45, -1e-45, 1.1754944e-38,
           -1.1754944e-38, FLT_MAX, -FLT_MAX]


def inputs(rng, lo, hi):
    xs = []
    grid = np.linspace(lo, hi, 700)
    xs.extend(float(np.float32(v)) for v in grid)
    mags = np.logspace(-30, np.log10(max(abs(lo), abs(hi))), 300)
    for m in mags:
        for s in (1.0, -1.0):
            v = float(np.float32(s * m))
            if lo <= v <= hi:
                xs.append(v)
    while len(xs) < 1500:
        b = int(rng.integers(0, 1 << 32))
        v = bits_f32(b)
        if np.isfinite(v) and lo <= v <= hi:
            xs.append(v)
        elif np.isfinite(v):
            xs.append(float(np.float32(lo + (hi - lo) * rng.random())))
    xs.extend(float(np.float32(v)) for v in SPECIAL if lo <= v <= hi)
    return xs


def main():
    rng = np.random.default_rng(20240531)
    index = {}
    out = bytearray()
    for name, (fn, rng_) in FUNCS.items():
        lo, hi = rng_ if rng_ else (-FLT_MAX, FLT_MAX)
        xs = inputs(rng, lo, hi)
        if rng_ is None:
            xs += [float("inf"), float("-inf"), float("nan")]
        if name in ("sqrt", "reciprocal_sqrt", "ln"):
            xs = [x for x in xs if x > 0 or (name == "sqrt" and x == 0)]
        if name in ("reciprocal", "abs_reciprocal_sqrt"):
            xs = [x for x in xs if x != 0]
        offset = len(out) // 8
        for x in xs:
            xb = f32_bits(x)
            if x != x:
                eb = NAN_BITS if name not in ("is_finite", "derivative_identity", "memset_zero",
                                              "relu", "sign", "derivative_relu",
                                              "derivative_leaky_relu") else None
                if eb is None:
                    eb = {"is_finite": f32_bits(0.0), "derivative_identity": f32_bits(1.0),
                          "memset_zero": 0, "relu": 0, "sign": 0, "derivative_relu": 0,
                          "derivative_leaky_relu": f32_bits(float(np.float32(0.01)))}[name]
            elif x in (float("inf"), float("-inf")):
                eb = inf_result(name, x)
            else:
                eb = round_f32(fn(mp.mpf(x)))
            out += struct.pack("<II", xb, eb)
        index[name] = {"offset": offset, "count": len(xs)}
    index["parametric_relu"]["alpha"] = PRELU_ALPHA
    with open(os.path.join(HERE, "act_reference.bin"), "wb") as f:
        f.write(out)
    with open(os.path.join(HERE, "act_reference.json"), "w") as f:
        json.dump({"pairs_file": "act_reference.bin", "functions": index}, f, indent=1,
                  sort_keys=True)
        f.write("\n")


def inf_result(name, x):
    """Results at ±inf of the functions sampled over every input."""
    pos = x > 0
    table = {
        "identity": x, "copy": x, "square": float("inf"), "relu": x if pos else 0.0,
        "leaky_relu": x, "parametric_relu": x, "sign": 1.0 if pos else -1.0, "abs": float("inf"),
        "reciprocal": 0.0 if pos else -0.0, "abs_reciprocal_sqrt": 0.0, "is_finite": 0.0,
        "derivative_relu": 1.0 if pos else 0.0,
        "derivative_leaky_relu": 1.0 if pos else float(np.float32(0.01)),
        "derivative_identity": 1.0, "memset_zero": 0.0,
    }
    return f32_bits(table[name])


if __name__ == "__main__":
    main()
