#!/usr/bin/env bash
# Quality and speed of the user-written app examples/logreg (yarn-submit --runtime-bin
# logreg-runtime, local[2] x 2 threads, default settings, load included) against scikit-learn's
# LogisticRegression (lbfgs, C=1) and SGDClassifier (log loss) on the same train/test splits:
#   - heart_scale (LIBSVM's, real; 270 examples), 5 folds, accuracy over all held-out examples;
#   - generated sparse data with a known separating vector (100K examples, 20K features).
# Results: results/bench-logreg.{csv,json}.   usage: scripts/bench-logreg.sh [bench_logreg.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
scripts/fetch-data.sh heart
if [ ! -x data/.venv-peers/bin/python ]; then
  python3 -m venv data/.venv-peers
fi
data/.venv-peers/bin/pip install -q numpy scipy scikit-learn
exec data/.venv-peers/bin/python scripts/bench_logreg.py "$@"
