#!/usr/bin/env python3
"""Reference outputs for the testdata kernels, computed independently of tpbsim.

For every `<kernel>.neff` in this directory the script reads the kernel's inputs from the
NEFF's own `.npy` members (the NEFF is a 1024-byte header followed by a tar archive), computes
the outputs with numpy + ml_dtypes, and writes `<kernel>.ref/<output>.npy` and
`<kernel>.ref/tolerance.json`. `sim run <kernel>.neff` compares against that directory.

    pip install numpy ml_dtypes
    python3 testdata/kernels/make_refs.py           # write every reference
    python3 testdata/kernels/make_refs.py --time    # also time each computation (best of N)

Only numpy and ml_dtypes are used; nothing here calls tpbsim.
"""

import argparse
import io
import json
import os
import sys
import tarfile
import time

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn


def neff_members(path):
    """Every member of a NEFF archive, by path without a leading './'."""
    with open(path, "rb") as f:
        f.seek(1024)
        data = f.read()
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for m in tar.getmembers():
            if m.isfile():
                out[m.name.lstrip("./")] = tar.extractfile(m).read()
    return out


def neff_inputs(path):
    """The def.json variables of the NEFF and the arrays of its `.npy` members, by variable name."""
    members = neff_members(path)
    defs = [k for k in members if k.endswith("def.json")]
    if len(defs) != 1:
        raise SystemExit(f"{path}: expected one def.json, found {defs}")
    d = json.loads(members[defs[0]])
    base = os.path.dirname(defs[0])
    arrays = {}
    variables = d.get("var", [])
    if isinstance(variables, dict):  # the runtime layout keys the variables by name
        variables = [dict(v, name=v.get("name", k)) for k, v in variables.items()]
    for v in variables:
        f = v.get("file_name") or v.get("file")
        if not f:
            continue
        raw = np.load(io.BytesIO(members[os.path.join(base, f) if base else f]))
        dtype = {"bfloat16": BF16, "float8_e4m3fn": E4M3, "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu}.get(
            v.get("dtype"), None
        )
        arrays[v["name"]] = raw.view(dtype) if dtype is not None and raw.dtype.kind == "V" else raw
    return d, arrays


# ---------------------------------------------------------------------------- the kernels
# Each takes the input arrays and returns {output name: array}. Constants match the builder.


def vadd(a):
    return {"out": (a["x"].astype(np.float32) + a["y"].astype(np.float32)).astype(np.float32)}


def counter_join(a):
    # ACT copies x (identity activation), DVE adds the copy to x.
    x = a["x"].astype(np.float32)
    return {"out": (x + x).astype(np.float32)}


def credit_handoff(a):
    # DVE: out = tile + y with the tile = x (ACT's first copy), then out = tile + out with the
    # tile = y (ACT's second copy, after DVE's decrement hands the credit back).
    x, y = a["x"].astype(np.float32), a["y"].astype(np.float32)
    first = (x + y).astype(np.float32)
    return {"out": (y + first).astype(np.float32)}


def iadd_pool(a):
    # int32 add with two's-complement wrap-around (numpy int32 arithmetic wraps).
    with np.errstate(over="ignore"):
        return {"out": (a["x"].astype(np.int32) + a["y"].astype(np.int32)).astype(np.int32)}


def softmax(a):
    x = a["x"].astype(np.float32)
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m, dtype=np.float32)
    s = e.sum(axis=1, keepdims=True, dtype=np.float32)
    return {"out": (e * (np.float32(1) / s)).astype(np.float32)}


RMS_EPS = np.float32(1e-6)


def rmsnorm(a):
    x = a["x"].astype(np.float32)
    w = a["w"].astype(np.float32)
    ms = (x * x).sum(axis=1, keepdims=True, dtype=np.float32) / np.float32(x.shape[1])
    r = np.float32(1) / np.sqrt(ms + RMS_EPS, dtype=np.float32)
    return {"out": (x * r * w).astype(np.float32)}


def matmul_bf16(a):
    # out[M, N] = w[K, M]^T @ x[K, N], bf16 operands, fp32 accumulation.
    w = a["w"].astype(np.float32)
    x = a["x"].astype(np.float32)
    return {"out": (w.T.astype(np.float64) @ x.astype(np.float64)).astype(np.float32)}


E4M3_MAX = np.float32(448.0)
E4M3_EMAX = 8  # largest normal exponent of float8_e4m3fn
MX_BLOCK = 32  # consecutive contraction rows sharing one E8M0 scale


def mx_quantize_k(x):
    """OCP MX quantization of x[K, F] (fp32) along K: per block of 32 rows of a column, the E8M0
    scale byte is max(1, maxExp − EMAX) from the largest biased fp32 exponent field of the block;
    every element is multiplied by 2^(127 − scale) and narrowed to float8_e4m3fn with RNE and
    saturation (clip to ±448 before the cast)."""
    k, f = x.shape
    xb = np.ascontiguousarray(x, dtype=np.float32).reshape(k // MX_BLOCK, MX_BLOCK, f)
    exp = ((xb.view(np.uint32) >> 23) & 0xFF).astype(np.int32).max(axis=1)
    scale = np.where(exp > E4M3_EMAX, exp - E4M3_EMAX, 1)
    mul = np.ldexp(np.float32(1), (127 - scale).astype(np.int32)).astype(np.float32)
    y = (xb * mul[:, None, :]).astype(np.float32)
    q = np.clip(y, -E4M3_MAX, E4M3_MAX).astype(E4M3)
    return q.reshape(k, f), scale.astype(np.uint8)


def mx_dequant_k(q, scale):
    """float8 data q[K, F] and E8M0 scales [K/32, F] → fp32: value × 2^(scale − 127)."""
    e = np.asarray(scale).view(np.uint8).astype(np.int32)
    s = np.ldexp(np.float32(1), e - 127).astype(np.float32)
    return q.astype(np.float32) * np.repeat(s, MX_BLOCK, axis=0)


def mx_matmul(a):
    # out[N, F] = relu(w[K, N]^T @ x[K, F] + b), w pre-quantized (MX e4m3fn, E8M0 per 32 rows),
    # x quantized the same way here, products summed in float64 then rounded to fp32 (the
    # machine sums in fp32 in its own order: the tolerance covers that).
    xq, xs = mx_quantize_k(a["x"].astype(np.float32))
    xd = mx_dequant_k(xq, xs)
    wd = mx_dequant_k(a["w_q"], a["w_scale"])
    acc = (wd.T.astype(np.float64) @ xd.astype(np.float64)).astype(np.float32)
    y = (acc + a["b"].astype(np.float32)[:, None]).astype(np.float32)
    return {"out": np.maximum(y, np.float32(0))}


def range_select(a):
    # RangeSelect: keep x where lo[p] <= x < 1.5, else -FLT_MAX; the row maximum of the result
    # (the MAX fold of the DVE accumulators, read back by DveReadAccumulator).
    x = a["x"].astype(np.float32)
    lo = a["lo"].astype(np.float32).reshape(-1, 1)
    keep = (x >= lo) & (x < np.float32(1.5))
    out = np.where(keep, x, -np.finfo(np.float32).max).astype(np.float32)
    return {"out": out, "rowmax": out.max(axis=1, keepdims=True)}


def matmul_k64(a):
    # out[64, 64] = w[2048, 64]^T @ x[2048, 64], bf16 operands, summed in float64 and rounded
    # once (the machine sums each 32-row tile in fp32 and adds the 64 tile sums in PSUM).
    w = a["w"].astype(np.float64)
    x = a["x"].astype(np.float64)
    return {"out": (w.T @ x).astype(np.float32)}


LN_EPS = np.float32(1e-5)


def layernorm_1024(a):
    # Two-pass statistics per row in fp32: mean = sum / D, ssd = sum((x - mean)^2),
    # rstd = 1 / sqrt(ssd / D + eps); out = (x - mean) * rstd * gamma + beta.
    x = a["x"].astype(np.float32)
    d = np.float32(x.shape[1])
    mean = x.sum(axis=1, keepdims=True, dtype=np.float32) / d
    xc = (x - mean).astype(np.float32)
    ssd = (xc * xc).sum(axis=1, keepdims=True, dtype=np.float32)
    rstd = np.float32(1) / np.sqrt(ssd / d + LN_EPS, dtype=np.float32)
    y = (xc * rstd).astype(np.float32) * a["gamma"].astype(np.float32)
    return {"out": (y + a["beta"].astype(np.float32)).astype(np.float32)}


def attention_512(a):
    # out = softmax(q k^T) v for one head: scores in fp32 from bf16 q, k; P = exp(s - max) in
    # fp32, its row sums in fp32; P rounded to bf16 for the P v product (the machine's PE
    # operands are bf16), that product summed in float64 and rounded to fp32; then scaled by
    # 1 / sum. The `ident` input is the kernel's transpose helper, checked here.
    assert np.array_equal(a["ident"].astype(np.float32), np.eye(a["ident"].shape[0], dtype=np.float32))
    q = a["q"].astype(np.float64)
    k = a["k"].astype(np.float64)
    v = a["v"].astype(np.float64)
    s = (q @ k.T).astype(np.float32)
    e = np.exp(s - s.max(axis=1, keepdims=True), dtype=np.float32)
    total = e.sum(axis=1, keepdims=True, dtype=np.float32)
    o = (e.astype(BF16).astype(np.float64) @ v).astype(np.float32)
    return {"out": (o * (np.float32(1) / total)).astype(np.float32)}


U32 = 2.0**-24  # unit roundoff of fp32 (round to nearest)


def matmul_k64_tol(a):
    # Rigorous bound: every product of two bf16 values is exact in fp32; each output sums 2048
    # of them through at most 96 fp32 roundings on any product's path (31 adds inside a 32-row
    # tile, then 64 PSUM adds, plus one), so |machine - exact| <= 96 u sum_k |w_kc| |x_kf|.
    bound = (np.abs(a["w"].astype(np.float64)).T @ np.abs(a["x"].astype(np.float64))).max()
    return {"default": {"atol": float(96 * U32 * bound), "rtol": 0.0}}


def attention_512_tol(a):
    # P is rounded to bf16 before the P v product on both sides; exp here and in the machine
    # are each within 1 ulp (docs/numerics.md section 9), and the fp32 scores may differ in
    # their last bit (32-term sums in different orders), so a P element may round to the
    # neighbouring bf16 value: at most 2^-8 relative each. If every element did,
    # |out error| <= 2^-8 max|v| (P / sum <= 1 summed over the keys); the fp32 sums add
    # 1e-5 relative.
    return {"default": {"atol": float(2.0**-8 * np.abs(a["v"].astype(np.float64)).max()), "rtol": 1e-5}}


def layernorm_1024_tol(a):
    # The row sums here and in the machine are fp32 sums of 128 terms in different orders:
    # the mean may differ by at most 128 u max|x|, which reaches the output times rstd and
    # |gamma| (atol). The sum of squares (positive terms) differs by at most 128 u relative, so
    # rstd by 64 u, and rsqrt is within 1 ulp against numpy's 1/sqrt (two roundings); with the
    # four roundings of the normalisation, rtol 1e-5 covers it.
    x = a["x"].astype(np.float64)
    xc = x - x.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt((xc * xc).mean(axis=1) + float(LN_EPS))
    g = np.abs(a["gamma"].astype(np.float64)).max()
    return {"default": {"atol": float(128 * U32 * np.abs(x).max() * rstd.max() * g), "rtol": 1e-5}}


KERNELS = {
    "vadd": (vadd, {"default": {"ulp": 0}}),
    "iadd_pool": (iadd_pool, {"default": {"ulp": 0}}),
    "counter_join": (counter_join, {"default": {"ulp": 0}}),
    "credit_handoff": (credit_handoff, {"default": {"ulp": 0}}),
    "softmax": (softmax, {"default": {"rtol": 1e-5, "atol": 1e-7}}),
    "rmsnorm": (rmsnorm, {"default": {"rtol": 1e-5, "atol": 1e-6}}),
    "matmul_bf16": (matmul_bf16, {"default": {"rtol": 1e-5, "atol": 1e-4}}),
    "mx_matmul": (mx_matmul, {"default": {"rtol": 1e-5, "atol": 1e-4}}),
    "range_select": (range_select, {"default": {"ulp": 0}}),
    "matmul_k64": (matmul_k64, matmul_k64_tol),
    "layernorm_1024": (layernorm_1024, layernorm_1024_tol),
    "attention_512": (attention_512, attention_512_tol),
}


def save(path, arr):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, arr)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", action="store_true", help="time each reference computation")
    ap.add_argument("--repeat", type=int, default=20, help="timing repetitions (best is kept)")
    ap.add_argument("kernels", nargs="*", help="kernels to process (default: all present)")
    args = ap.parse_args()
    names = args.kernels or [k for k in KERNELS if os.path.exists(os.path.join(HERE, k + ".neff"))]
    timings = {}
    for name in names:
        fn, tol = KERNELS[name]
        neff = os.path.join(HERE, name + ".neff")
        _, inputs = neff_inputs(neff)
        if callable(tol):  # a bound computed from the inputs
            tol = tol(inputs)
        outs = fn(inputs)
        ref_dir = os.path.join(HERE, name + ".ref")
        os.makedirs(ref_dir, exist_ok=True)
        for out_name, arr in outs.items():
            save(os.path.join(ref_dir, out_name + ".npy"), arr)
        with open(os.path.join(ref_dir, "tolerance.json"), "w") as f:
            json.dump(tol, f, indent=2, sort_keys=True)
            f.write("\n")
        line = f"{name}: " + ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in outs.items())
        if args.time:
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                fn(inputs)
                best = min(best, time.perf_counter() - t0)
            timings[name] = best
            line += f"  numpy {best * 1e6:.1f} us"
        print(line)
    if args.time:
        print(json.dumps({"numpy_seconds": timings}, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
