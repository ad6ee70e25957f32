#!/usr/bin/env python3
"""Build small PWP activation tables (tpbsim-pwp/1 JSON) from closed forms.

Per IEEE-754 octave [2^e, 2^(e+1)) of the covered input range the octave is cut into
2^extract_size equal buckets (the smallest extract_size whose fit meets the target), and each
bucket gets a least-squares cubic in t = x - x0 about its left edge x0, fitted in float64 on
Chebyshev nodes and stored as fp32; the fit error is measured relative to max(|f|, floor)
(floor 1 for sigmoid: absolute error; tiny for tanh: relative error). Inputs below the covered range use a Taylor cubic about 0
(the low saturation section); inputs above it use a constant (the high saturation section).

Writes pwp_sigmoid.json (asymmetric, both sign regions, saturating to 1 and 0) and
pwp_tanh.json (odd: one region plus the symmetry fold).
Usage: python3 make_pwp_table.py   (needs numpy)
"""
import json
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
F32 = np.float32


def f32(v):
    """JSON value of an fp32: an exact decimal, or a string for non-finite values."""
    v = float(F32(v))
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def bits(v):
    return int(np.array(v, dtype=np.float32).view(np.uint32))


def fit_bucket(fn, a, b, floor):
    nodes = 48
    k = np.arange(nodes)
    xs = (a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * nodes))
    ys = np.array([fn(x) for x in xs])
    t = xs - a
    coef = np.polynomial.polynomial.polyfit(t, ys, 3)
    approx = np.polynomial.polynomial.polyval(t, coef)
    scale = np.maximum(np.abs(ys), floor)
    return coef, float(np.max(np.abs(approx - ys) / scale))


def octave(fn, sign, e, target, floor):
    """Buckets of the octave [2^e, 2^(e+1)) on the side of `sign`."""
    lo = 2.0 ** e
    for size in range(0, 9):
        n = 1 << size
        width = lo / n
        sections, worst = [], 0.0
        for i in range(n):
            a = sign * (lo + i * width)
            b = sign * (lo + (i + 1) * width)
            coef, err = fit_bucket(fn, a, b, floor)
            worst = max(worst, err)
            sections.append([f32(a)] + [f32(c) for c in coef])
        if worst < target or size == 8:
            return {"exponent": e, "extract_size": size, "sections": sections}


def sat(x, section):
    b = bits(abs(x))
    return {"exponent": b >> 23, "mantissa": b & 0x7FFFFF, "section": [f32(c) for c in section]}


def table(name, fn, pos_exps, neg_exps, low, high, neg_low, neg_high, symmetry, results,
          floor, target=2e-8):
    """A table whose fit error, relative to max(|f|, floor), stays below target."""
    return {
        "format": "tpbsim-pwp/1",
        "function": name,
        "symmetry": symmetry,
        "results": results,
        "saturation": {"pos_high": high, "pos_low": low, "neg_high": neg_high,
                       "neg_low": neg_low},
        "pos_regions": [octave(fn, 1.0, e, target, floor) for e in pos_exps],
        "neg_regions": [octave(fn, -1.0, e, target, floor) for e in neg_exps],
    }


NO_SYM = {"enabled": False, "invert_sign": False, "use_neg_region": False, "point": 0.0}
# A clamp no input reaches (used for the unused sign of a symmetric table).
NEVER_HIGH = {"exponent": 255, "mantissa": 0x7FFFFF, "section": [0.0, "nan", 0.0, 0.0, 0.0]}
NEVER_LOW = {"exponent": 0, "mantissa": 0, "section": [0.0, "nan", 0.0, 0.0, 0.0]}


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def main():
    lo_e = -16
    tables = {
        "pwp_sigmoid.json": table(
            "sigmoid", sigmoid, range(lo_e, 5), range(lo_e, 7),
            low=sat(2.0 ** lo_e, [0.0, 0.5, 0.25, 0.0, -1.0 / 48]),
            high=sat(32.0, [0.0, 1.0, 0.0, 0.0, 0.0]),
            neg_low=sat(2.0 ** lo_e, [0.0, 0.5, 0.25, 0.0, -1.0 / 48]),
            neg_high=sat(128.0, [0.0, 0.0, 0.0, 0.0, 0.0]),
            symmetry=NO_SYM,
            results={"zero": 0.5, "nan": "nan", "pos_inf": 1.0, "neg_inf": 0.0},
            floor=1.0),
        "pwp_tanh.json": table(
            "tanh", math.tanh, range(-12, 4), [],
            low=sat(2.0 ** -12, [0.0, 0.0, 1.0, 0.0, -1.0 / 3]),
            high=sat(16.0, [0.0, 1.0, 0.0, 0.0, 0.0]),
            neg_low=NEVER_LOW, neg_high=NEVER_HIGH,
            symmetry={"enabled": True, "invert_sign": True, "use_neg_region": False,
                      "point": 0.0},
            results={"zero": 0.0, "nan": "nan", "pos_inf": 1.0, "neg_inf": -1.0},
            floor=1e-30),
    }
    for fname, t in tables.items():
        with open(os.path.join(HERE, fname), "w") as f:
            json.dump(t, f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
