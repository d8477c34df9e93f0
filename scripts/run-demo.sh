#!/usr/bin/env bash
# Builds everything and runs the demo job locally: 2 processes x 2 worker threads, SSP-push
# (ESSP) with staleness 2; every read is checked against the consistency guarantee. The job's
# merged stats go to results/demo-stats.json. Extra arguments are passed to the demo app.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
mkdir -p results
exec ./target/release/yarn-submit --master 'local[2]' --threads 2 --consistency essp --staleness 2 \
  --stats results/demo-stats.json demo --clocks 200 --delay-ms 2 --jitter-ms 3 "$@"
