#!/usr/bin/env bash
# Runs the whole test suite from a fresh clone: formatting, lints, build, unit, property and
# end-to-end tests (multi-process jobs on 127.0.0.1), including tests against a real single-node
# HDFS that this script starts (scripts/hdfs-up.sh; needs Java) and stops. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -- -D warnings
cargo build --release --workspace
export PS_HDFS_DIR=${PS_HDFS_DIR:-$(pwd)/data/hdfs-test}
trap 'scripts/hdfs-down.sh >/dev/null 2>&1 || true' EXIT
eval "$(scripts/hdfs-up.sh | grep '^export ')"
cargo test --release --workspace
