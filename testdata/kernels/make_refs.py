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
    for v in d.get("var", []):
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


def mx_dequant(data, scale, block_rows=8, block_cols=4):
    """FP8 values [P, F] and E8M0 scales [P/8, F/4] → fp32 (value × 2^(e − 127))."""
    v = data.astype(np.float32)
    e = scale.view(np.uint8).astype(np.int32)
    s = np.ldexp(np.float32(1), e - 127).astype(np.float32)
    s = np.repeat(np.repeat(s, block_rows, axis=0), block_cols, axis=1)
    return v * s


def matmul_mx(a):
    w = mx_dequant(a["w"], a["w_scale"])
    x = mx_dequant(a["x"], a["x_scale"])
    return {"out": (w.T.astype(np.float64) @ x.astype(np.float64)).astype(np.float32)}


KERNELS = {
    "vadd": (vadd, {"default": {"ulp": 0}}),
    "iadd_pool": (iadd_pool, {"default": {"ulp": 0}}),
    "softmax": (softmax, {"default": {"rtol": 1e-5, "atol": 1e-7}}),
    "rmsnorm": (rmsnorm, {"default": {"rtol": 1e-5, "atol": 1e-6}}),
    "matmul_bf16": (matmul_bf16, {"default": {"rtol": 1e-5, "atol": 1e-4}}),
    "matmul_mx": (matmul_mx, {"default": {"rtol": 1e-5, "atol": 1e-4}}),
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
