#!/usr/bin/env bash
# What an emulated WAN between two data centers costs MF, per consistency model (Gaia's Baseline
# and Gaia (ASP) against one data center); results/bench-gaia.{csv,json,png}. Options: scripts/bench_gaia.py.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
if [ ! -x data/.venv-peers/bin/python ]; then
  python3 -m venv data/.venv-peers
fi
data/.venv-peers/bin/pip install -q matplotlib
exec data/.venv-peers/bin/python scripts/bench_gaia.py "$@"
