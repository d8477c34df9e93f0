#!/usr/bin/env bash
# Runs the whole test suite from a fresh clone: formatting, lints, build, unit, property and
# end-to-end tests (multi-process jobs on 127.0.0.1). CI runs exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -- -D warnings
cargo build --release --workspace
cargo test --release --workspace
