#!/usr/bin/env bash
# Implicit feedback against its peers: `mf --implicit` at several shapes, the `implicit`
# package's BPR and ALS and a most-popular list, on the same split (scripts/bench_implicit.py).
# Results in results/bench-implicit.{csv,json,png}.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p ps-job -p ps-client
[ -x data/.venv-peers/bin/python ] || python3 -m venv data/.venv-peers
data/.venv-peers/bin/pip install -q numpy scipy implicit matplotlib
[ -f data/ml-100k/ratings.tsv ] || scripts/fetch-data.sh ml-100k
data/.venv-peers/bin/python scripts/bench_implicit.py "$@"
