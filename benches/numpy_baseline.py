#!/usr/bin/env python3
"""numpy baseline of the small/big-tile benchmark (benches/benches/small_tiles.rs).

A per-instruction interpreter: the benchmark's own bundles, written by the
`small_tiles_streams` example and decoded by `sim decode --json`, are executed as one numpy
call each on a [128 x words] float32 array standing for SBUF, in the engines' round-robin
order. Two timings of the same program:

* interpreted: per bundle, dispatch on its opcode, read its decoded fields, build the
  operand views, make the numpy call (what an interpreter such as nki.simulate does per
  instruction; the decoding to fields is done once, as the simulator decodes each distinct
  bundle once);
* replayed: the views built ahead, only the numpy calls timed (a floor for any numpy
  interpreter of these bundles).

With --whole-process, the mixed kernel is also run as a user runs it: `sim run mixed.neff`
(the same bundles in a NEFF whose SP queue loads the inputs and stores the results; see
`small_tiles::mixed_neff`), timed as a whole process (start, load, L2, run, output write)
--whole-process times; its outputs are checked bit for bit against the in-process run, and
its best time is compared with the interpreter's and the replay's.

Prints bundles/s for the mixed [128 x 8] kernel and bytes/s for the
[128 x 2048] adds (two tiles read, one written per add) beside numpy's copy of one tile (read
and written), and checks the final SBUF against the simulator's.

    python3 benches/numpy_baseline.py [--sim PATH] [--streams PATH] [--repeat N] [--mixed N] [--big N]
                                      [--whole-process N]

Without --sim, `sim` is run through `cargo run -q -p tpbsim-cli --`; without --streams, the
example through `cargo run -q -p tpbsim-benches --example small_tiles_streams` (only numpy is
timed).
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTITIONS = 128
ENGINES = ["dve", "act", "pool"]


def run(cmd):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def f32_field(fields, name):
    """A float-valued field: its bits when the JSON gives them, else the integer as bits."""
    if f"{name}_bits" in fields:
        bits = fields[f"{name}_bits"]
    else:
        bits = fields[name]
    if isinstance(bits, float):
        return np.float32(bits)
    return np.frombuffer(struct.pack("<I", bits), dtype=np.float32)[0]


def tile(sbuf, pattern, partitions, where):
    """The numpy view of a dense one-row-per-partition fp32 access pattern."""
    addr = pattern["addr"]
    if addr.get("region") != "sbuf":
        sys.exit(f"{where}: only SBUF operands are interpreted")
    num, step = pattern["num"], pattern["step"]
    if any(n != 1 for n in num[1:]) or step[0] != 1 or addr["offset"] % 4:
        sys.exit(f"{where}: only dense fp32 rows are interpreted ({pattern})")
    p0, w0 = addr["partition"], addr["offset"] // 4
    return sbuf[p0 : p0 + partitions, w0 : w0 + num[0]]


def compile_bundle(sbuf, b, where):
    """One bundle as (numpy function, args, kwargs)."""
    f = b["fields"]
    parts = f["num_active_partitions"]
    m = b["mnemonic"]
    if b["opcode"] in (0x41, 0x51):
        if f["op"] != 0x04:
            sys.exit(f"{where}: TensorTensor op {f['op']} is not interpreted")
        a, c, d = (tile(sbuf, f[k], parts, where) for k in ("src0", "src1", "dst"))
        return np.add, (a, c), {"out": d}
    if b["opcode"] == 0x21:
        if f["activation_func"] != 7:
            sys.exit(f"{where}: activation function {f['activation_func']} is not interpreted")
        scale, bias = f32_field(f, "scale_value"), f32_field(f, "bias")
        if scale != 1 or bias != 0 or f["bias_src_n"] != 1:
            sys.exit(f"{where}: only exp(x) with scale 1 and immediate bias 0 is interpreted")
        s, d = tile(sbuf, f["src"], parts, where), tile(sbuf, f["dst"], parts, where)
        return np.exp, (s,), {"out": d}
    if b["opcode"] in (0x43, 0x53):
        if (f["op0"], f["op1"], f["imm0_src"]) != (0x06, 0x00, 0):
            sys.exit(f"{where}: only TensorScalar multiply by an immediate is interpreted")
        s, d = tile(sbuf, f["src"], parts, where), tile(sbuf, f["dst"], parts, where)
        return np.multiply, (s, f32_field(f, "imm0")), {"out": d}
    sys.exit(f"{where}: {m} is not interpreted")


def load(dirname, sim):
    """The SBUF array with the inputs, the program in round-robin order, the simulator's SBUF."""
    raw = np.fromfile(os.path.join(dirname, "inputs.f32"), dtype="<f4")
    result = np.fromfile(os.path.join(dirname, "result.f32"), dtype="<f4")
    words = result.size // PARTITIONS
    sbuf = np.zeros((PARTITIONS, words), dtype=np.float32)
    inputs = raw.reshape(PARTITIONS, -1)
    sbuf[:, : inputs.shape[1]] = inputs
    streams = []
    for e in ENGINES:
        path = os.path.join(dirname, f"{e}.bin")
        if not os.path.exists(path):
            continue
        lines = run(sim + ["decode", path, "--arch", "v3", "--json"]).splitlines()
        streams.append([(json.loads(l), f"{e}.bin bundle {i}") for i, l in enumerate(lines)])
    decoded = []
    for i in range(max(len(s) for s in streams)):
        decoded.extend(s[i] for s in streams if i < len(s))
    return sbuf, inputs, decoded, result.reshape(PARTITIONS, words)


def interpreted(sbuf, decoded):
    """The program as an interpreter runs it: each bundle compiled when it is reached."""
    return [(run_bundle, (sbuf, b, where), {}) for b, where in decoded]


def run_bundle(sbuf, b, where):
    fn, args, kw = compile_bundle(sbuf, b, where)
    fn(*args, **kw)


def best_time(prog, repeat):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for fn, args, kw in prog:
            fn(*args, **kw)
        best = min(best, time.perf_counter() - t)
    return best


def ulps(a, b):
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def whole_process(sim, dirname, repeat, want):
    """Best and median wall time of `sim run mixed.neff` as a process; its outputs checked."""
    neff = os.path.join(dirname, "mixed.neff")
    times = []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(repeat):
            t = time.perf_counter()
            r = subprocess.run(sim + ["run", neff, "--out-dir", out], capture_output=True)
            times.append(time.perf_counter() - t)
            if r.returncode != 0:
                sys.exit(f"sim run {neff} failed ({r.returncode}):\n{r.stderr.decode()}")
        for name, region in (("dve", 512), ("act", 768), ("pool", 1024)):
            got = np.load(os.path.join(out, f"{name}.npy"))
            w0 = region // 4
            exp = want[:, w0 : w0 + got.shape[1]]
            if got.dtype != np.float32 or not np.array_equal(got.view(np.int32), exp.view(np.int32)):
                sys.exit(f"sim run's `{name}` differs from the in-process run")
    times.sort()
    return times[0], times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sim", help="path of the sim binary")
    ap.add_argument("--streams", help="path of the small_tiles_streams example binary")
    ap.add_argument("--repeat", type=int, default=5, help="timed passes (best is kept)")
    ap.add_argument("--mixed", type=int, default=30000, help="bundles of the mixed kernel")
    ap.add_argument("--big", type=int, default=400, help="adds of the big-tile kernel")
    ap.add_argument("--whole-process", type=int, default=0, metavar="N",
                    help="also time `sim run` of the mixed kernel's NEFF N times (needs --sim)")
    a = ap.parse_args()
    sim = [a.sim] if a.sim else ["cargo", "run", "-q", "-p", "tpbsim-cli", "--"]
    with tempfile.TemporaryDirectory() as tmp:
        dump = [a.streams] if a.streams else [
            "cargo", "run", "-q", "-p", "tpbsim-benches", "--example", "small_tiles_streams", "--"]
        run(dump + [tmp, str(a.mixed), str(a.big)])
        for name in ("mixed", "big"):
            sbuf, inputs, decoded, want = load(os.path.join(tmp, name), sim)
            prog = [compile_bundle(sbuf, b, where) for b, where in decoded]
            t = best_time(prog, a.repeat)
            ti = best_time(interpreted(sbuf, decoded), a.repeat)
            written = slice(inputs.shape[1], None)
            d = ulps(sbuf[:, written], want[:, written])
            if name == "mixed":
                for how, tt in (("interpreted", ti), ("replayed", t)):
                    print(f"mixed [128 x 8] {how}: {len(prog)} bundles, best of {a.repeat}: "
                          f"{tt * 1e3:.2f} ms, {len(prog) / tt / 1e6:.3f} M bundles/s "
                          f"({tt / len(prog) * 1e6:.2f} us/bundle)")
                if a.whole_process:
                    if not a.sim:
                        sys.exit("--whole-process needs --sim (a release build of sim)")
                    best, median = whole_process(sim, os.path.join(tmp, name), a.whole_process, want)
                    print(f"mixed [128 x 8] `sim run` whole process: best of {a.whole_process}: "
                          f"{best * 1e3:.2f} ms (median {median * 1e3:.2f} ms); "
                          f"interpreted / sim run {ti / best:.2f}x, replayed / sim run {t / best:.2f}x")
            else:
                tile_bytes = PARTITIONS * 2048 * 4
                for how, tt in (("interpreted", ti), ("replayed", t)):
                    print(f"big [128 x 2048] adds {how}: {len(prog)} adds, best of {a.repeat}: "
                          f"{tt * 1e3:.2f} ms, {3 * tile_bytes * len(prog) / tt / 2**30:.2f} GiB/s moved")
                src = np.ones((PARTITIONS, 2048), dtype=np.float32)
                dst = np.empty_like(src)
                copies = [(np.copyto, (dst, src), {})] * len(prog)
                tc = best_time(copies, a.repeat)
                print(f"numpy copy of one tile x {len(prog)}: {tc * 1e3:.2f} ms, "
                      f"{2 * tile_bytes * len(prog) / tc / 2**30:.2f} GiB/s moved")
            print(f"  final SBUF against the simulator: max {d.max()} ulp, "
                  f"{int((d != 0).sum())} of {d.size} words differ")
            # numpy's float32 exp is within a few ulp; adds and products are exact in both.
            if d.max() > 4:
                sys.exit("the interpreter and the simulator disagree by more than 4 ulp")


if __name__ == "__main__":
    main()
