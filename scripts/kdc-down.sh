#!/usr/bin/env bash
# Stops the test KDC started by scripts/kdc-up.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
STATE=${PS_KDC_DIR:-$(pwd)/data/kdc}
if [ -f "$STATE/run/kdc.pid" ]; then
  kill "$(cat "$STATE/run/kdc.pid")" 2>/dev/null
  rm -f "$STATE/run/kdc.pid"
fi
