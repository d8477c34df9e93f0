#!/usr/bin/env bash
# How the user's MF job scales with the data, up to Netflix size (100M ratings): seconds per pass
# and peak RSS per process against the number of ratings. Generates the inputs into data/bench
# once (about 2.3 GB for 100M). Results: results/bench-scale.{csv,json,png}.
#   usage: scripts/bench-scale.sh [--sizes 5,25,50,100 --passes 2 --output-format binary]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
if [ ! -x data/.venv-peers/bin/python ]; then
  python3 -m venv data/.venv-peers
fi
data/.venv-peers/bin/pip install -q matplotlib
exec data/.venv-peers/bin/python scripts/bench_scale.py "$@"
