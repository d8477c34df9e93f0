#!/usr/bin/env bash
# Takes results/tracking-page.png: the live page of a local MF job (`yarn-submit --ui`) in the
# headless browser, after one of its processes was killed and the job restarted from a checkpoint,
# so every section of the page has something to show. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ps-job -p ps-client
BROWSER=$(scripts/browser.sh)
D=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$D"' EXIT
target/release/ps-runtime gen ratings --ratings 400000 --users 8000 --items 1500 --rank 4 --out "$D/r.tsv" >/dev/null
target/release/yarn-submit --master 'local[2]' --ui --job-dir "$D/job" --stats "$D/stats.json" \
  --checkpoint "$D/ck" --checkpoint-every 40 --restarts 1 \
  mf --input "$D/r.tsv" --passes 150 --lr 0.005 --test-fraction 0.1 \
  --straggler random --straggler-p 1 --straggler-delay 0.03 >"$D/out" 2>"$D/err" &
status() { curl -sf "${URL}status.json" | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"; }
until URL=$(sed -n 's/^job page: //p' "$D/out") && [ -n "$URL" ]; do sleep 0.2; done
until [ "$(status "s['clock'] or 0")" -ge 120 ] 2>/dev/null; do sleep 0.5; done
pkill -KILL -f "$D/job/job.json --id 1"
until [ "$(status "s['attempt']")" = 1 ] 2>/dev/null && [ "$(status "s['clock'] or 0")" -ge 220 ] 2>/dev/null; do sleep 0.5; done
"$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1750 \
  --screenshot="$(pwd)/results/tracking-page.png" "$URL" 2>/dev/null
echo "results/tracking-page.png written"
