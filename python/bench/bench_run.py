"""Time ``tpbsim.run`` on a small kernel from Python against the Rust library call it makes.

    python python/bench/bench_run.py [KERNEL.neff] [ITERATIONS]

The Python side passes the NEFF as bytes and every input as a numpy array, and receives the
outputs as numpy arrays; the Rust side (``sim/examples/api_run.rs``, run here with cargo in
the profile the extension module was built with) reads the same bytes, loads the kernel and
calls ``sim::api::run_kernel`` with the inputs as bytes. Rounds alternate the two sides; prints each round's medians and the ratio of the medians.
"""

import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

import tpbsim

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def python_times(neff, inputs, iters):
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        tpbsim.run(neff, inputs)
        times.append(time.perf_counter() - t)
    return times


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "testdata/kernels/vadd.neff")
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    neff = open(path, "rb").read()
    # Every input, with the byte pattern the Rust example gives.
    inputs = {
        v["name"]: np.full(v["size"], 0x3C, np.uint8).view(v["dtype"]).reshape(v["shape"])
        for v in tpbsim.variables(neff)
        if v["kind"] == "input"
    }
    python_times(neff, inputs, 10)  # warm-up
    # Rounds alternate the two sides so that both see the same machine load.
    subprocess.run(["cargo", "build", "-q", "-p", "tpbsim-sim", "--example", "api_run"],
                   cwd=ROOT, check=True)
    rounds = 5
    py, rust = [], []
    for _ in range(rounds):
        py.append(statistics.median(python_times(neff, inputs, iters)))
        out = subprocess.run(
            ["cargo", "run", "-q", "-p", "tpbsim-sim", "--example", "api_run", "--", path,
             str(iters)],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
        rust.append(float(re.search(r"median ([0-9.]+) us", out).group(1)) * 1e-6)
    for i, (p, r) in enumerate(zip(py, rust)):
        print(f"round {i}: tpbsim.run {p * 1e6:.1f} us, library call {r * 1e6:.1f} us, "
              f"ratio {p / r:.2f}")
    p, r = statistics.median(py), statistics.median(rust)
    print(f"{path}: medians of {rounds} rounds of {iters}: tpbsim.run {p * 1e6:.1f} us, "
          f"library call {r * 1e6:.1f} us, ratio Python / Rust {p / r:.2f}")


if __name__ == "__main__":
    main()
