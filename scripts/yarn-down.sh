#!/usr/bin/env bash
# Stops the YARN stand-in started by scripts/yarn-up.sh (same PS_YARN_DIR); its containers die with it.
set -u
cd "$(dirname "$0")/.."
STATE=${PS_YARN_DIR:-$(pwd)/data/yarn}
f=$STATE/run/standin.pid
if [ -f "$f" ]; then
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null
  rm -f "$f"
fi
echo "yarn stand-in stopped ($STATE)"
