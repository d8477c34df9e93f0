#!/usr/bin/env bash
# Coverage-guided fuzzing of every decoder of untrusted bytes (fuzz/: wire frames and row
# payloads, handshake, rendezvous lines, SASL challenges, credentials files, Hadoop IPC responses,
# hostfile, job.json, snapshot shards/states/manifests, input readers). libFuzzer through the
# libfuzzer-sys crate, on stable Rust: the targets are built with LLVM's sanitizer-coverage
# instrumentation (-Cpasses=sancov-module), with overflow checks and debug assertions on.
#
# Each target runs SECONDS (default 60) from the seeds in fuzz/corpus/<target> plus the corpus
# grown by earlier runs (data/fuzz/corpus/<target>), two targets at a time. A panic, an input
# that takes over 10 s, more than 2 GB of memory or a single allocation over 256 MB is a finding:
# the script fails and the input is kept in data/fuzz/artifacts/<target>/. A summary of every
# target (executions, coverage, corpus) goes to data/fuzz/summary.tsv.
#   usage: scripts/fuzz.sh [SECONDS] [TARGET...]        (JOBS=N to run N targets at a time)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS < <(sed -n 's/^name = "\(.*\)"/\1/p' fuzz/Cargo.toml | grep -v '^ps-fuzz$')
fi
# --target keeps the instrumentation away from build scripts and proc macros (host code).
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing" \
  cargo build --release --manifest-path fuzz/Cargo.toml --target "$TRIPLE" --target-dir fuzz/target
BIN=fuzz/target/$TRIPLE/release
OUT=data/fuzz
mkdir -p "$OUT/logs"

run_one() {
  local t=$1 secs=$2 bin=$3 out=$4
  mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
  "$bin/$t" "$out/corpus/$t" "fuzz/corpus/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=256 -max_len=16384 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" \
    >"$out/logs/$t.log" 2>&1
  local rc=$?
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/logs/$t.log")
  cov=$(grep -o 'cov: [0-9]*' "$out/logs/$t.log" | tail -1 | cut -d' ' -f2)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$secs" "${runs:-0}" "${cov:-0}" "$(find "$out/corpus/$t" -type f | wc -l)" \
    "$([ $rc -eq 0 ] && echo ok || echo "FAILED (see $out/logs/$t.log)")"
  return $rc
}
export -f run_one

printf 'target\tseconds\texecutions\tcoverage\tcorpus\tresult\n' >"$OUT/summary.tsv"
status=0
printf '%s\n' "${TARGETS[@]}" | xargs -P "${JOBS:-2}" -I{} bash -c 'run_one "$@"' _ {} "$SECONDS_EACH" "$BIN" "$OUT" \
  >>"$OUT/summary.tsv" || status=1
column -t -s $'\t' "$OUT/summary.tsv"
exit $status
