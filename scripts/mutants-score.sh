#!/usr/bin/env bash
# The raw score of one cargo-mutants run: (caught + timeout) / (caught + timeout + missed),
# unviable mutants left out, with its 95 % Wilson score interval; then the survivors.
#
#   scripts/mutants-score.sh mutants.runs/<seed>/isa_src_neff/mutants.out [label]
set -euo pipefail
dir=${1:?usage: mutants-score.sh MUTANTS_OUT [LABEL]}
label=${2:-$dir}
count() { if [[ -f "$dir/$1" ]]; then grep -c . "$dir/$1" || true; else echo 0; fi; }
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
if [[ -s "$dir/missed.txt" ]]; then
  echo "survivors:"
  sed 's/^/  /' "$dir/missed.txt"
fi
