#!/usr/bin/env bash
# The main job on the local default: fetches MovieLens 100K if needed, builds, and runs matrix
# factorization (rank 20, 40 passes, 20% held out) as 2 local processes x 2 threads with SSP-push.
# Prints RMSE as it falls; writes factors to results/mf-ml100k/ and stats to results/mf-ml100k.json.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-data.sh ml-100k
cargo build --release --workspace
mkdir -p results
exec ./target/release/yarn-submit --master 'local[2]' --threads 2 --consistency essp --staleness 1 \
  --stats results/mf-ml100k.json \
  mf --input data/ml-100k/ratings.tsv --output results/mf-ml100k --overwrite \
     --rank 20 --passes 40 --test-fraction 0.2 "$@"
