#!/usr/bin/env bash
# Compares the WAN emulator with Linux tc shaping between two network namespaces (needs root);
# writes results/wan-validation.{csv,json}. Options: see scripts/wan_validate.py (--mbps 10,40 ...).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
exec python3 scripts/wan_validate.py "$@"
