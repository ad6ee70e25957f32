#!/usr/bin/env bash
# Mutation testing (cargo-mutants) that measures: each run draws a FRESH random sample of the
# mutants of each area, with a seed that changes per run (printed, so a run can be repeated),
# and tests each sampled mutant against the whole test suite of the area's own package.
# docs/testing.md records each run's raw score (caught + timeout over viable mutants) with
# its 95 % Wilson interval, the survivors, and which were killed afterwards. Not part of CI.
#
#   scripts/mutants.sh                         # 200 mutants from each of the five areas
#   N=40 AREAS='neff/src isa/src/text' scripts/mutants.sh
#   SEED=1733322000 scripts/mutants.sh         # repeat an earlier draw
#   scripts/mutants.sh --list                  # print the sample, run nothing
#
# Environment:
#   N          mutants drawn per area (default 200; an area with fewer is taken whole)
#   AREAS      space-separated source directories (default: sim/src/numerics
#              sim/src/machine validate/src/l2 neff/src isa/src/text)
#   SEED       the sample's seed (default: the current time in seconds)
#   JOBS       cargo-mutants --jobs (default 1: the development machine has two cores)
#   TIMEOUT    seconds a mutant's tests may run (default 300); BUILD_TIMEOUT (default 900)
#   WORKSPACE  1: test every mutant against the whole workspace instead of its own package
#   OUT        output directory (default mutants.runs/<seed>); one mutants.out per area
#   (CARGO_TARGET_DIR is ignored: each of cargo-mutants' copies builds in its own target
#   directory. A target directory shared by copies that build at once, whether the jobs of
#   one run or two runs side by side, shares their artifacts too: a workspace member's
#   artifacts are named the same whatever copy it was built from, so one copy's tests could
#   run another copy's mutant. The cost is one full build per job and area.)
#
# cargo-mutants 27 also runs its "delete field ... from struct ... expression" mutants of the
# area whatever `--re` says; the score counts the drawn mutants only (mutants-score.sh).
#
# Extra arguments go to cargo-mutants. cargo-mutants copies the tree for each run (it never
# edits this one), so the tree may be edited while a run goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
command -v cargo-nextest >/dev/null || cargo install --locked cargo-nextest

N=${N:-200}
AREAS=${AREAS:-"sim/src/numerics sim/src/machine validate/src/l2 neff/src isa/src/text"}
SEED=${SEED:-$(date +%s)}
JOBS=${JOBS:-1}
TIMEOUT=${TIMEOUT:-300}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-900}
OUT=${OUT:-mutants.runs/$SEED}
unset CARGO_TARGET_DIR
LIST_ONLY=0
if [[ "${1:-}" == "--list" ]]; then
  LIST_ONLY=1
  shift
fi

# A reproducible stream of random bytes from the seed, for shuf.
random_source() {
  openssl enc -aes-256-ctr -pass "pass:tpbsim-mutants-$1" -nosalt </dev/zero 2>/dev/null
}

# The package whose tests judge a mutant of an area.
package_of() {
  case "$1" in
    sim/*) echo tpbsim-sim ;;
    validate/*) echo tpbsim-validate ;;
    isa/*) echo tpbsim-isa ;;
    neff/*) echo tpbsim-neff ;;
    cli/*) echo tpbsim-cli ;;
    *) echo "no package known for $1" >&2; return 1 ;;
  esac
}

# A cargo-mutants name as an anchored regex (the names hold `(`, `[`, `*`, `+`, `|`, ...).
anchored() {
  printf '^%s$' "$(printf '%s' "$1" | sed -e 's/[][\\.+*?(){}|^$#&~-]/\\&/g')"
}

mkdir -p "$OUT"
# cargo-mutants builds and tests a copy of the tree in a directory of its own under $TMPDIR.
# The tests read the compiler's NEFFs from `../shared/real/` beside the tree, so that
# directory gets a `shared` beside the copies; without it those tests would fail for every
# mutant and count it as caught.
# (`--gitignore true` keeps $OUT, which is ignored, out of the copies.)
if [[ -d ../shared ]]; then
  export TMPDIR="$PWD/$OUT/tmp"
  mkdir -p "$TMPDIR"
  ln -sfn "$(cd ../shared && pwd)" "$TMPDIR/shared"
fi
echo "seed $SEED, $N mutants per area, output $OUT"
echo "$SEED" >"$OUT/seed"
for area in $AREAS; do
  tag=${area//\//_}
  all=$(cargo mutants --list --file "$area/**" 2>/dev/null)
  total=$(printf '%s\n' "$all" | grep -c . || true)
  printf '%s\n' "$all" | shuf -n "$N" --random-source=<(random_source "$SEED-$area") \
    >"$OUT/$tag.sample"
  drawn=$(wc -l <"$OUT/$tag.sample")
  echo "$area: $drawn of $total mutants drawn -> $OUT/$tag.sample"
  if [[ $LIST_ONLY == 1 ]]; then
    cat "$OUT/$tag.sample"
    continue
  fi
  res=()
  while IFS= read -r name; do
    res+=(--re "$(anchored "$name")")
  done <"$OUT/$tag.sample"
  if [[ "${WORKSPACE:-0}" == 1 ]]; then
    tests=(--test-workspace=true)
  else
    tests=(--test-package "$(package_of "$area")")
  fi
  # The unmutated copy's suite runs first (the baseline): a suite that fails there, for
  # example on a missing `../shared`, stops the run instead of counting every mutant as
  # caught. The explicit timeouts replace the ones cargo-mutants would derive from it. The
  # drawn mutants run in a random order, so a run stopped early has tested a random part.
  cargo mutants --test-tool nextest "${tests[@]}" --file "$area/**" "${res[@]}" \
    --shuffle --gitignore true --jobs "$JOBS" --timeout "$TIMEOUT" \
    --build-timeout "$BUILD_TIMEOUT" --output "$OUT/$tag" "$@" || true
  scripts/mutants-score.sh "$OUT/$tag/mutants.out" "$area" "$OUT/$tag.sample" |
    tee "$OUT/$tag.score"
done
