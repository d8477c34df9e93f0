#!/usr/bin/env bash
# Runs the five experiments on MovieLens-100K (4 local processes) and draws their plots:
# results/experiments/{staleness,stragglers,bytes,prefetch,essp}.{csv,png}. About 5 minutes.
#   scripts/experiments.sh [staleness|stragglers|bytes|prefetch|essp|all]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-data.sh ml-100k
cargo build --release --workspace
./target/release/ps-bench experiment "${1:-all}" --out results/experiments
# matplotlib in a project-local virtualenv (PyPI), so the system Python stays untouched.
if [ ! -x data/.venv/bin/python ]; then
  python3 -m venv data/.venv
  data/.venv/bin/pip install -q matplotlib
fi
data/.venv/bin/python scripts/plot_experiments.py results/experiments
