#!/usr/bin/env bash
# Runs the experiments and draws their plots into results/experiments/ (results/PAPERS.md says
# what each shows against the papers):
#   staleness, stragglers, background, bytes, prefetch: MF (MovieLens-100K), LDA (NYT) and
#     PageRank (a generated 1M-node graph), 4 local processes;
#   essp: SSP vs ESSP on MF and LDA;
#   gaia: LAN vs Gaia's Baseline vs Gaia across an emulated WAN, MF and LDA (about 15 min).
# Everything takes under an hour on a 2-core machine.
#   scripts/experiments.sh [staleness|stragglers|background|bytes|prefetch|essp|gaia|all]
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
case "$which" in
  staleness|stragglers|background|bytes|prefetch|essp|gaia|all) ;;
  *) echo "experiments.sh: unknown experiment '$which' (staleness, stragglers, background, bytes, prefetch, essp, gaia, all)" >&2; exit 2 ;;
esac
scripts/fetch-data.sh ml-100k nyt
cargo build --release --workspace
# PageRank's input: the same generated graph as scripts/bench-e2e.sh (fixed seed).
[ -f data/bench/graph-1000000.tsv ] ||
  ./target/release/ps-runtime gen graph --out data/bench/graph-1000000.tsv --nodes 1000000
# matplotlib in a project-local virtualenv (PyPI), so the system Python stays untouched.
if [ ! -x data/.venv/bin/python ]; then
  python3 -m venv data/.venv
  data/.venv/bin/pip install -q matplotlib
fi
if [ "$which" != gaia ]; then
  ./target/release/ps-bench experiment "$which" --out results/experiments
  data/.venv/bin/python scripts/plot_experiments.py results/experiments
fi
if [ "$which" = gaia ] || [ "$which" = all ]; then
  data/.venv/bin/python scripts/experiment_gaia.py --out results/experiments
fi
