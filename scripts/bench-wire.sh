#!/usr/bin/env bash
# What wire protection costs, in the same run as the unprotected path:
#  1. remote row throughput in-process over loopback per wire_protection (ps-bench runtime);
#  2. MF (rank 100, 5M generated ratings) through `yarn-submit --master local[2] --threads 1`
#     per wire_protection, interleaved and repeated (ps-bench wire).
# Results: results/bench-runtime.{json,csv} and results/bench-wire.{json,csv}.
#   usage: scripts/bench-wire.sh [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
[ -f data/bench/ratings-5m.tsv ] || ./target/release/ps-runtime gen ratings --out data/bench/ratings-5m.tsv
./target/release/ps-bench runtime --procs 2 --clocks 20 --repeat "${1:-3}" --out results
exec ./target/release/ps-bench wire --repeat "${1:-3}" --out results
