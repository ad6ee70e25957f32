#!/usr/bin/env python3
"""Inputs and numpy references of the example kernels (docs/asm.md).

Writes each example's input `.npy` files into `<example>/pack/sg00/` and the expected outputs
into `<example>/ref/` (with `tolerance.json`). Needs numpy only; the files it writes are
committed, so `run_all.sh` does not need numpy.

    python3 examples/make_data.py
"""

import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def bf16(a):
    """Round fp32 to bfloat16 (nearest even); returns (uint16 bits, fp32 values)."""
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return r, (r.astype(np.uint32) << 16).view(np.float32)


def save_bf16(path, bits):
    # numpy has no bfloat16: store the raw 2-byte values as void, which the NEFF reader
    # accepts for a bfloat16 variable (docs/neff.md, ".npy").
    np.save(path, bits.view(np.dtype("V2")))


def write(example, inputs, refs, tol):
    sg = os.path.join(HERE, example, "pack", "sg00")
    ref = os.path.join(HERE, example, "ref")
    os.makedirs(ref, exist_ok=True)
    for name, a in inputs.items():
        if isinstance(a, tuple):
            save_bf16(os.path.join(sg, name + ".npy"), a[0])
        else:
            np.save(os.path.join(sg, name + ".npy"), a)
    for name, a in refs.items():
        np.save(os.path.join(ref, name + ".npy"), a.astype(np.float32))
    with open(os.path.join(ref, "tolerance.json"), "w") as f:
        json.dump({"default": tol}, f, indent=2)
        f.write("\n")


def main():
    rng = np.random.default_rng(17)

    x = rng.standard_normal((128, 512)).astype(np.float32)
    write("1_dve_affine", {"x": x},
          {"out": x * np.float32(2.5) + np.float32(1.0)}, {"atol": 0.0, "rtol": 0.0})

    x = rng.standard_normal((128, 512)).astype(np.float32)
    y = np.exp(np.float32(0.5) * x - np.float32(1.0), dtype=np.float32)
    write("2_act_bias_accumulate", {"x": x},
          {"y": y, "s": y.sum(axis=1, keepdims=True, dtype=np.float32)},
          {"atol": 1e-5, "rtol": 1e-5})

    wb, wf = bf16(rng.standard_normal((256, 128)))
    xb, xf = bf16(rng.standard_normal((256, 128)))
    out = (wf.T.astype(np.float64) @ xf.astype(np.float64)).astype(np.float32)
    write("3_pe_matmul_psum", {"w": (wb, wf), "x": (xb, xf)}, {"out": out},
          {"atol": 1e-4, "rtol": 1e-5})

    x = rng.standard_normal((512, 256)).astype(np.float32)
    write("4_double_buffer", {"x": x},
          {"out": x * np.float32(3.0) + np.float32(-0.5)}, {"atol": 0.0, "rtol": 0.0})


if __name__ == "__main__":
    main()
