#!/usr/bin/env bash
# Build and run every example kernel of docs/asm.md: assemble each `src/*.s` (lint warnings
# are errors), pack it with `pack/` into a NEFF, validate the NEFF (L2 + kernel-scope lint),
# run it against the numpy reference in `ref/`, and check it for races.
#
#   examples/run_all.sh                 # uses `cargo run --release -q --bin sim --`
#   SIM=target/debug/sim examples/run_all.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -n "${SIM:-}" ]; then
  sim() { "$SIM" "$@"; }
else
  sim() { cargo run --release -q --manifest-path "$here/../Cargo.toml" --bin sim -- "$@"; }
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for ex in "$here"/*/; do
  name="$(basename "$ex")"
  echo "== $name"
  cp -r "$ex/pack" "$work/$name"
  for s in "$ex"/src/*.s; do
    engine="$(basename "$s" .s)"
    sim asm "$s" -o "$work/$name/sg00/$engine.bin" --arch v3 --deny-warnings
  done
  sim neff pack "$work/$name" -o "$work/$name.neff"
  sim validate "$work/$name.neff" --arch v3 --deny-warnings
  sim run "$work/$name.neff" --ref-dir "$ex/ref" --out-dir "$work/$name.out"
  sim check "$work/$name.neff" --ref-dir "$ex/ref"
done
echo "all examples passed"
