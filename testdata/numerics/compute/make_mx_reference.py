#!/usr/bin/env python3
"""Reference outputs of the MX matmul, computed with numpy + ml_dtypes.

Each case holds two MX operands (x4-packed FP8/FP4 containers + E8M0 block scales, one per
8 partitions x 1 container = 32 values) and the expected PSUM[N, F]:
  - the dequantized contraction matrices [K = 4 * partitions, lanes] with k = 4*p + j
    (element j of a container is byte j for FP8, nibble j for FP4), value = decode(code) *
    2^(scale - 127) rounded once to float32 (np.ldexp), a 0xFF scale making its block NaN;
  - expected_bits: float32 sums over k in order from +0.0 (one float32 multiply and one
    float32 add per step, no FMA), as the bits of each output;
  - reference_f64: the same dot products in float64 (for the accuracy check).
Writes mx_reference.json.  Usage: python3 make_mx_reference.py   (needs numpy, ml_dtypes)
"""
import json
import os

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FORMATS = {
    "float8_e4m3fn_x4": (8, ml_dtypes.float8_e4m3fn),
    "float8_e5m2_x4": (8, ml_dtypes.float8_e5m2),
    "float4_e2m1fn_x4": (4, ml_dtypes.float4_e2m1fn),
}
NAN_CODES = {"float8_e4m3fn_x4": {0x7F, 0xFF},
             "float8_e5m2_x4": set(range(0x7C, 0x80)) | set(range(0xFC, 0x100)),
             "float4_e2m1fn_x4": set()}


def random_operand(rng, fmt, partitions, lanes, scale_lo, scale_hi):
    width, _ = FORMATS[fmt]
    codes = rng.integers(0, 1 << width, size=(partitions, lanes, 4))
    bad = np.isin(codes, list(NAN_CODES[fmt]))
    codes[bad] = 0x30 if width == 8 else 0x3
    data = np.zeros((partitions, lanes), dtype=np.uint64)
    for j in range(4):
        data |= codes[:, :, j].astype(np.uint64) << (width * j)
    scales = rng.integers(scale_lo, scale_hi + 1, size=(partitions // 8, lanes))
    return {"format": fmt, "partitions": partitions, "lanes": lanes,
            "data": [int(v) for v in data.reshape(-1)],
            "scales": [int(v) for v in scales.reshape(-1)]}


def dequantize(op):
    width, dtype = FORMATS[op["format"]]
    p, lanes = op["partitions"], op["lanes"]
    data = np.array(op["data"], dtype=np.uint64).reshape(p, lanes)
    scales = np.array(op["scales"], dtype=np.int64).reshape(p // 8, lanes)
    out = np.zeros((4 * p, lanes), dtype=np.float32)
    mask = (1 << width) - 1
    for j in range(4):
        codes = ((data >> np.uint64(width * j)) & np.uint64(mask)).astype(np.uint8)
        vals = codes.view(dtype).astype(np.float32) if width == 8 else \
            codes.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
        s = np.repeat(scales, 8, axis=0)
        with np.errstate(over="ignore"):
            deq = np.ldexp(vals, (s - 127).astype(np.int32)).astype(np.float32)
        deq[s == 0xFF] = np.float32(np.nan)
        out[j::4, :] = deq
    return out


def sequential_f32(s, m):
    acc = np.zeros((s.shape[1], m.shape[1]), dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(s.shape[0]):
            acc = acc + np.outer(s[k], m[k]).astype(np.float32)
    return acc


def f64_json(v):
    v = float(v)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def main():
    rng = np.random.default_rng(7)
    cases = []
    specs = [
        ("e4m3_p32", "float8_e4m3fn_x4", "float8_e4m3fn_x4", 32, 8, 16, 117, 137),
        ("e5m2_p64", "float8_e5m2_x4", "float8_e5m2_x4", 64, 4, 8, 112, 142),
        ("fp4_p128", "float4_e2m1fn_x4", "float4_e2m1fn_x4", 128, 8, 8, 120, 134),
        ("mixed_p32", "float8_e4m3fn_x4", "float4_e2m1fn_x4", 32, 6, 10, 100, 150),
        ("subnormal_scales_p32", "float8_e4m3fn_x4", "float8_e5m2_x4", 32, 4, 4, 1, 8),
    ]
    for name, fs, fm, p, n, f, lo, hi in specs:
        st = random_operand(rng, fs, p, n, lo, hi)
        mv = random_operand(rng, fm, p, f, lo, hi)
        cases.append((name, st, mv))
    # NaN poisoning: one NaN scale block in the stationary operand, one NaN code in moving.
    st = random_operand(rng, "float8_e4m3fn_x4", 32, 4, 120, 134)
    mv = random_operand(rng, "float8_e4m3fn_x4", 32, 4, 120, 134)
    st["scales"][1] = 0xFF          # block (partitions 0..8, lane 1)
    mv["data"][2 * 4 + 3] = (mv["data"][2 * 4 + 3] & ~0xFF) | 0x7F   # p 2, lane 3, j 0
    cases.append(("nan_poison_p32", st, mv))

    out = []
    for name, st, mv in cases:
        s, m = dequantize(st), dequantize(mv)
        exp = sequential_f32(s, m)
        ref = s.astype(np.float64).T @ m.astype(np.float64)
        out.append({"name": name, "stationary": st, "moving": mv,
                    "expected_bits": [int(v) for v in exp.view(np.uint32).reshape(-1)],
                    "reference_f64": [f64_json(v) for v in ref.reshape(-1)]})
    with open(os.path.join(HERE, "mx_reference.json"), "w") as fh:
        json.dump({"cases": out}, fh, separators=(",", ":"))
        fh.write("\n")


if __name__ == "__main__":
    main()
