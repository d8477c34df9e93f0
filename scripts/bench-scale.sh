#!/usr/bin/env bash
# How the user's job scales with the data: seconds per pass and peak RSS per process against the
# size of the input. MF up to Netflix's 100M ratings (results/bench-scale.*), or with --app lda
# up to NYTimes' ~100M tokens (results/bench-scale-lda.*). Generates the inputs into data/bench
# once (about 2.3 GB of ratings for 100M).
#   usage: scripts/bench-scale.sh [--app mf|lda --sizes 5,25,50,100 --passes 2 --output-format binary]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
if [ ! -x data/.venv-peers/bin/python ]; then
  python3 -m venv data/.venv-peers
fi
data/.venv-peers/bin/pip install -q matplotlib
exec data/.venv-peers/bin/python scripts/bench_scale.py "$@"
