#!/usr/bin/env bash
# Runtime micro-benchmarks (cache-hit get+inc vs Vec/HashMap, remote row throughput); results in
# results/bench-runtime.{json,csv}.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
./target/release/ps-bench runtime --out results
exec ./target/release/ps-bench apps --out results "$@"
