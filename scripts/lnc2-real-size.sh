#!/usr/bin/env bash
# The compiler-shaped LNC2 matmul at the size of neuronx-cc 2.23's matmul_large
# (x f16[128, 32768] @ y f16[32768, 65536], 550 GFLOP, y 4 GiB), run as a user runs it:
#
#   scripts/lnc2-real-size.sh DIR [K N]
#
# Writes DIR/matmul_KxN.neff with random fp16 inputs unless they are there (`lnc2_matmul_neff`
# example; needs K*N*2 bytes free for y), runs `sim run` under /usr/bin/time -v (wall time, peak RSS), checks a
# sample of output0 against float64 and times numpy's float32 `x @ y` of the same shape right
# after (python3 with numpy; TPBSIM_PYTHON names another interpreter), then prints GFLOP/s of
# both and their ratio, the peak RSS against inputs + outputs, and the CPU.
set -euo pipefail
dir=${1:?usage: scripts/lnc2-real-size.sh DIR [K N]}
k=${2:-32768}
n=${3:-65536}
py=${TPBSIM_PYTHON:-python3}
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$dir"
cargo build --release -q --manifest-path "$here/Cargo.toml" -p tpbsim-cli -p tpbsim-benches --example lnc2_matmul_neff
neff="$dir/matmul_${k}x${n}.neff"
# The inputs are written once (random fp16, fixed seed); a second run reuses them.
if [ ! -f "$neff" ] || [ ! -f "$dir/y.npy" ]; then
    "$here/target/release/examples/lnc2_matmul_neff" "$k" "$n" "$dir" random
fi
/usr/bin/time -v -o "$dir/time.txt" "$here/target/release/sim" run "$neff" \
    --input x="$dir/x.npy" --input y="$dir/y.npy" --out-dir "$dir/out" --json > "$dir/run.json"
"$py" - "$dir" "$k" "$n" <<'EOF'
import json, re, sys, time
import numpy as np
d, k, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = open(f"{d}/time.txt").read()
wall = t.split("Elapsed (wall clock) time (h:mm:ss or m:ss): ")[1].split("\n")[0]
parts = [float(p) for p in wall.split(":")]
wall_s = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) * 1024
run = json.load(open(f"{d}/run.json"))
x = np.load(f"{d}/x.npy", mmap_mode="r")
y = np.load(f"{d}/y.npy", mmap_mode="r")
out = np.load(f"{d}/out/output0.npy")
# A sample of output columns against float64 (fp32 accumulation plus one fp16 rounding).
rng = np.random.default_rng(0)
cols = np.sort(rng.choice(n, 64, replace=False))
ys = np.asarray(y[:, cols], dtype=np.float64)
xs = np.asarray(x, dtype=np.float64)
exact = xs @ ys
mag = np.abs(xs) @ np.abs(ys)
got = out[:, cols].astype(np.float64)
half_ulp = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64) / 2
bound = half_ulp + k * 2.0 ** -24 * mag
worst = float(np.max(np.abs(got - exact) / bound))
flop = 2.0 * 128 * k * n
io = x.nbytes + y.nbytes + out.nbytes
del xs, ys, y
xf = np.asarray(x, dtype=np.float32)
yf = np.random.default_rng(1).random((k, n), dtype=np.float32)
xf @ yf[:, :1024]
best = 1e30
for _ in range(3):
    t0 = time.perf_counter(); xf @ yf; best = min(best, time.perf_counter() - t0)
cpu = [l for l in open("/proc/cpuinfo") if l.startswith("model name")][0].split(":")[1].strip()
print(f"shape x[128,{k}] @ y[{k},{n}]: {flop/1e9:.0f} GFLOP; CPU {cpu}")
print(f"sim run: wall {wall_s:.1f} s, {flop/wall_s/1e9:.1f} GFLOP/s whole process; "
      f"cores {[c.get('subgraph') for c in run.get('cores', [])]}")
print(f"peak RSS {rss/2**30:.2f} GiB; inputs + outputs {io/2**30:.2f} GiB; "
      f"excess {(rss-io)/2**30:.2f} GiB")
print(f"output0 sample: worst error / bound {worst:.3f} (<= 1 passes)")
print(f"numpy float32 x @ y: {best:.2f} s, {flop/best/1e9:.1f} GFLOP/s; "
      f"ratio sim/numpy {best/wall_s:.2f}")
EOF
