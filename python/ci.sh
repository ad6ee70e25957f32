#!/usr/bin/env bash
# Build the Python package in a fresh virtual environment and run its pytest suite.
#   python/ci.sh [VENV_DIR]        (default: a temporary directory, removed afterwards)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-}"
if [ -z "$venv" ]; then
    venv="$(mktemp -d)/venv"
    trap 'rm -rf "$(dirname "$venv")"' EXIT
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet maturin numpy pytest ml_dtypes
# Build with the workspace's target directory so the Rust crates are not compiled twice.
(cd "$here" && CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/../target}" \
    VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --quiet)
set +e
"$venv/bin/python" -m pytest -q "$here/tests"
rc=$?
set -e
# pytest exit 5: no tests were collected, which is a failure of this suite.
if [ "$rc" -eq 5 ]; then
    echo "python/ci.sh: pytest collected no tests" >&2
fi
exit "$rc"
