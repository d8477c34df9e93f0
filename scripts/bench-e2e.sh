#!/usr/bin/env bash
# End-to-end speed of what users run, against the plain loop and the peers, in one run:
#   yarn-submit --master local[2] --threads 1 {mf,lda,pagerank} (default consistency, staleness,
#   clocks per pass; load and output included) vs `ps-bench plain` (one thread, no PS) vs
#   PyPI libmf (2 threads), tomotopy (2 workers), scipy CSR mat-vec; 3 interleaved rounds per
#   app, medians reported (--repeat R).
# Inputs are generated once into data/bench (5M Netflix-shaped ratings, a 10K-document
# NYTimes-shaped corpus of ~3M tokens, a 1M-node power-law graph).
# Then issue 11's whole-job measure: a 10-pass MF job with text and with binary output, its wall
# time split into training, loading, evaluation and output (stats load_s, eval_s, output_s).
# Results: results/bench-e2e.{csv,json,png} and results/bench-e2e-job.{csv,json}.
#   usage: scripts/bench-e2e.sh [bench_e2e.py options, e.g. --only mf --mf-passes 10]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
bin=./target/release
mkdir -p data/bench
[ -f data/bench/ratings-5m.tsv ] || $bin/ps-runtime gen ratings --out data/bench/ratings-5m.tsv --ratings 5000000
[ -f data/bench/nyt-10000/docword.synth.txt ] ||
  $bin/ps-runtime gen corpus --out data/bench/nyt-10000 --docs 10000 --vocab 20000 --topics 100 --doc-len 300
[ -f data/bench/graph-1000000.tsv ] || $bin/ps-runtime gen graph --out data/bench/graph-1000000.tsv --nodes 1000000
if [ ! -x data/.venv-peers/bin/python ]; then
  python3 -m venv data/.venv-peers
fi
data/.venv-peers/bin/pip install -q numpy scipy libmf tomotopy lda matplotlib
exec data/.venv-peers/bin/python scripts/bench_e2e.py "$@"
