#!/usr/bin/env bash
# Storage benchmark against a private real HDFS: split reader vs plain hdfs-native read throughput,
# snapshot write time per GB. Results in results/bench-storage.{json,csv}. Extra args go to
# `ps-bench storage` (e.g. --mb 512).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
export PS_HDFS_DIR=$(pwd)/data/hdfs-bench
trap 'scripts/hdfs-down.sh >/dev/null' EXIT
eval "$(scripts/hdfs-up.sh | grep '^export')"
target/release/ps-bench storage "$@"
