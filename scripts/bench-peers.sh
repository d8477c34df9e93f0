#!/usr/bin/env bash
# Peer comparison: our apps through the parameter server (ps-bench apps, 2 processes) and, in the
# same run on the same generated data, PyPI libmf, tomotopy, lda and scipy (2 threads where the
# tool has them); `--spark` adds pyspark ALS. Prints times per pass and ratios; results in
# results/bench-apps.* and results/bench-peers.*.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
./target/release/ps-bench apps --out results
if [ ! -x data/.venv-peers/bin/python ]; then
  python3 -m venv data/.venv-peers
fi
data/.venv-peers/bin/pip install -q numpy scipy libmf tomotopy lda
if [ "${1:-}" = "--spark" ]; then data/.venv-peers/bin/pip install -q pyspark; fi
data/.venv-peers/bin/python scripts/bench_peers.py "$@"
