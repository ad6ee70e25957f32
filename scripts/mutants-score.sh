#!/usr/bin/env bash
# The raw score of one cargo-mutants run: (caught + timeout) / (caught + timeout + missed),
# unviable mutants left out, with its 95 % Wilson score interval; then the survivors.
#
#   scripts/mutants-score.sh mutants.runs/<seed>/isa_src_neff/mutants.out [LABEL [SAMPLE]]
#
# With SAMPLE (the drawn names, one a line), only the drawn mutants are scored: cargo-mutants
# 27 runs its "delete field ... from struct ... expression" mutants whatever `--re` says, so a
# run may test a few mutants that were not drawn; they are listed apart, not scored.
set -euo pipefail
dir=${1:?usage: mutants-score.sh MUTANTS_OUT [LABEL [SAMPLE]]}
label=${2:-$dir}
sample=${3:-}
pick() {
  if [[ ! -f "$dir/$1" ]]; then return 0; fi
  if [[ -n "$sample" ]]; then grep -Fxf "$sample" "$dir/$1" || true; else cat "$dir/$1"; fi
}
count() { pick "$1" | grep -c . || true; }
caught=$(count caught.txt)
missed=$(count missed.txt)
timeout=$(count timeout.txt)
unviable=$(count unviable.txt)
awk -v c="$caught" -v m="$missed" -v t="$timeout" -v u="$unviable" -v label="$label" 'BEGIN {
  n = c + t + m; k = c + t; z = 1.959964
  if (n == 0) { printf "%s: no viable mutants (unviable %d)\n", label, u; exit }
  p = k / n; d = 1 + z * z / n
  centre = (p + z * z / (2 * n)) / d
  half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
  printf "%s: caught %d, timeout %d, missed %d, unviable %d; raw score %d / %d = %.1f %% (95 %% Wilson interval %.1f %% .. %.1f %%)\n",
    label, c, t, m, u, k, n, 100 * p, 100 * (centre - half), 100 * (centre + half)
}'
if [[ -n "$(pick missed.txt)" ]]; then
  echo "survivors:"
  pick missed.txt | sed 's/^/  /'
fi
if [[ -n "$sample" ]]; then
  extra=$(cat "$dir"/{caught,missed,timeout,unviable}.txt 2>/dev/null | grep -vFxf "$sample" || true)
  if [[ -n "$extra" ]]; then
    echo "tested but not drawn (not scored):"
    for f in caught missed timeout unviable; do
      [[ -f "$dir/$f.txt" ]] && grep -vFxf "$sample" "$dir/$f.txt" | sed "s/^/  $f: /" || true
    done
  fi
fi
