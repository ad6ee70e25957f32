#!/usr/bin/env python3
"""Inputs and reference outputs of the collective kernels, computed independently of tpbsim.

The kernels (`<kernel>.neff`, written by `cargo run -p tpbsim-sim --example build_kernels`)
run as a world of 4 ranks. For each kernel this script writes

* `<kernel>.in/<input>.npy`: every rank's input stacked along a leading rank axis
  (`sim run --input x=<kernel>.in/x.npy` gives rank r the slice `[r]`);
* `<kernel>.ref/rank<r>/<output>.npy` (and `tolerance.json` where the reference is not
  bit-exact): rank r's expected outputs, which `sim run --ref-dir <kernel>.ref` compares.

Reductions follow the reference model of docs/collectives.md: every contribution widened to
fp32 and folded in replica order (rank 0, 1, 2, 3), the result rounded once to the element
type (round to nearest even).

    pip install numpy ml_dtypes
    python3 testdata/collectives/make_refs.py

Only numpy and ml_dtypes are used; nothing here calls tpbsim.
"""

import json
import os

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 4
BF16 = ml_dtypes.bfloat16


def fold(xs):
    """The replica-order fp32 sum of the ranks' arrays."""
    acc = xs[0].astype(np.float32)
    for x in xs[1:]:
        acc = acc + x.astype(np.float32)
    return acc


def write(kernel, inputs, refs, tolerance=None):
    """`inputs`: {name: [array per rank]}; `refs`: [{name: array} per rank]."""
    din = os.path.join(HERE, kernel + ".in")
    os.makedirs(din, exist_ok=True)
    for name, per_rank in inputs.items():
        np.save(os.path.join(din, name + ".npy"), np.stack(per_rank))
    for r, outs in enumerate(refs):
        d = os.path.join(HERE, kernel + ".ref", "rank%d" % r)
        os.makedirs(d, exist_ok=True)
        for name, a in outs.items():
            np.save(os.path.join(d, name + ".npy"), a)
        if tolerance is not None:
            with open(os.path.join(d, "tolerance.json"), "w") as f:
                json.dump({"default": tolerance}, f, indent=2)
                f.write("\n")


def main():
    rng = np.random.default_rng(2026)

    # Row-parallel matmul: rank r holds rows 128r.. of w and x; y = sum_r w_r^T x_r.
    ws = [rng.standard_normal((128, 128)).astype(BF16) for _ in range(RANKS)]
    xs = [rng.standard_normal((128, 128)).astype(BF16) for _ in range(RANKS)]
    # Each partial product is exact in float64 then rounded to fp32; the PE's accumulation
    # order over the 128 rows is not numpy's, hence the tolerance.
    partials = [
        (w.astype(np.float64).T @ x.astype(np.float64)).astype(np.float32)
        for w, x in zip(ws, xs)
    ]
    y = fold(partials)
    write("tp_matmul_allreduce", {"w": ws, "x": xs}, [{"y": y}] * RANKS,
          {"atol": 1e-4, "rtol": 1e-5})

    # Reduce-scatter then all-gather in bf16: block r of the fp32 sum, rounded once.
    xs = [(rng.standard_normal(1024) * 8).astype(BF16) for _ in range(RANKS)]
    total = fold(xs).astype(BF16)
    block = 1024 // RANKS
    write("reduce_scatter_all_gather", {"x": xs},
          [{"part": total[r * block:(r + 1) * block], "y": total} for r in range(RANKS)])

    # Permute round the ring: rank r receives rank r - 1's x.
    xs = [rng.standard_normal(512).astype(np.float32) for _ in range(RANKS)]
    write("permute_ring", {"x": xs}, [{"y": xs[(r - 1) % RANKS]} for r in range(RANKS)])

    # All-to-all: block q of rank p's x lands in block p of rank q's y.
    xs = [rng.standard_normal((RANKS, 64)).astype(np.float16) for _ in range(RANKS)]
    write("all_to_all", {"x": xs},
          [{"y": np.stack([xs[p][q] for p in range(RANKS)])} for q in range(RANKS)])


if __name__ == "__main__":
    main()
