#!/usr/bin/env bash
# Soak test (scripts/soak.py): demo on 4 processes under BSP, SSP and ESSP for at least 1,000
# clocks each, with random delays and jitter and random SIGSTOP/SIGCONT of one process for less
# than the peer timeout; checks for hangs, consistency violations and memory growth. Results:
# results/soak.{csv,json,png}. A few minutes.
#   usage: scripts/soak.sh [--clocks N] [--modes bsp,ssp,essp]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --workspace
# matplotlib in a project-local virtualenv (PyPI), so the system Python stays untouched.
if [ ! -x data/.venv/bin/python ]; then
  python3 -m venv data/.venv
  data/.venv/bin/pip install -q matplotlib
fi
exec data/.venv/bin/python scripts/soak.py "$@"
