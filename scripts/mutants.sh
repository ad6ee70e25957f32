#!/usr/bin/env bash
# Mutation testing (cargo-mutants) over the three areas whose results the test suite must pin:
# the numerics (sim/src/numerics), the machine (sim/src/machine) and the L2 gates
# (validate/src/l2). Not part of CI: a full run builds and tests the workspace once per mutant
# (thousands of them; many hours on two cores). docs/testing.md records the runs made and
# their scores.
#
#   scripts/mutants.sh                       # every mutant of the three areas
#   scripts/mutants.sh --list                # list the mutants only
#   scripts/mutants.sh --shard 0/40          # one fortieth of them
#   AREA=validate/src/l2/formats/pe.rs scripts/mutants.sh   # one file (or glob) instead
#
# Extra arguments go to cargo-mutants. Results land in mutants.out/ (caught.txt, missed.txt,
# timeout.txt, unviable.txt, outcomes.json). By default each mutant is built in a copy of the
# tree (a full first build there); `--in-place` mutates this tree instead and reuses target/
# (one mutant at a time; do not edit the tree meanwhile). The runs recorded in docs/testing.md
# used `--in-place --baseline skip --timeout 300 --test-package tpbsim-sim`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
command -v cargo-nextest >/dev/null || cargo install --locked cargo-nextest
files=()
if [[ -n "${AREA:-}" ]]; then
  files+=(--file "$AREA")
else
  files+=(--file 'sim/src/numerics/**' --file 'sim/src/machine/**' --file 'validate/src/l2/**')
fi
# Tests run with nextest, over the workspace (a mutant in validate/src/l2 is caught by the
# validate, sim or cli tests alike); a mutant that makes the suite run three times longer than
# the unmutated baseline is counted as a timeout.
exec cargo mutants --test-tool nextest --test-workspace=true --timeout-multiplier 3 \
  "${files[@]}" "$@"
