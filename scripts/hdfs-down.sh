#!/usr/bin/env bash
# Stops the HDFS started by scripts/hdfs-up.sh (same PS_HDFS_DIR).
set -u
cd "$(dirname "$0")/.."
STATE=${PS_HDFS_DIR:-$(pwd)/data/hdfs}
for p in datanode namenode namenode2; do
  f=$STATE/run/$p.pid
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null
  rm -f "$f"
done
echo "hdfs stopped ($STATE)"
