#!/usr/bin/env bash
# Runs the whole test suite from a fresh clone: formatting, lints, build, unit, property and
# end-to-end tests (multi-process jobs on 127.0.0.1), including tests against a real single-node
# HDFS (scripts/hdfs-up.sh; needs Java) and against the YARN stand-in built on Hadoop's own server
# code (scripts/yarn-up.sh; needs a JDK), and against a Kerberos KDC with a secure HDFS
# (scripts/kdc-up.sh, installing Debian's krb5 packages when missing), all started and stopped
# here, with the job's tracking page loaded in a headless browser (scripts/browser.sh, installing
# Debian's chromium-headless-shell when missing) and the outputs read with pyarrow and numpy
# (scripts/pyreaders.sh, a venv from PyPI) and mf's model loaded by Spark's own ALSModel
# (scripts/pyspark.sh, PySpark from PyPI), then a short pass of
# every fuzz target (scripts/fuzz.sh). Also builds the portable dist/ binaries (scripts/package.sh:
# zig from PyPI, cargo-zigbuild from crates.io) and checks their glibc version. CI runs exactly this.
# Every test runs: PS_TEST_ALL=1 turns a test's "skipped: needs ..." into a failure.
#
#   scripts/test.sh --quick   formatting, lints, and the tests that need no outside service (they
#                             skip the rest, saying what each needs); no fuzzing, no dist/ build
set -euo pipefail
cd "$(dirname "$0")/.."
quick=false
case "${1:-}" in
  --quick) quick=true ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --release --workspace --all-targets -- -D warnings
cargo build --release --workspace
# A runtime binary with an app of its own (the tests submit it with --runtime-bin).
cargo build --release -p ps-job --example custom_runtime
if $quick; then
  unset PS_TEST_ALL HDFS_URL PS_YARN_CONF PS_SECURE_HDFS_CONF PS_BROWSER PS_PYTHON PS_SPARK_PYTHON
  exec timeout --kill-after=30s 30m cargo test --release --workspace
fi
export PS_TEST_ALL=1
# The portable binaries (glibc 2.17, stripped) that YARN jobs ship; checked there, run by a YARN test.
scripts/package.sh
export PS_HDFS_DIR=${PS_HDFS_DIR:-$(pwd)/data/hdfs-test}
export PS_YARN_DIR=${PS_YARN_DIR:-$(pwd)/data/yarn-test}
export PS_KDC_DIR=${PS_KDC_DIR:-$(pwd)/data/kdc-test}
# Small blocks: the NameNode reserves a whole block of free disk per file being written, and
# the recovery tests leave killed writers' blocks reserved; 128 MB each fills a small CI disk.
export PS_HDFS_BLOCK_SIZE=${PS_HDFS_BLOCK_SIZE:-4194304}
SECURE_HDFS_DIR=${PS_SECURE_HDFS_DIR:-$(pwd)/data/hdfs-secure-test}
SECURE_YARN_DIR=${PS_SECURE_YARN_DIR:-$(pwd)/data/yarn-secure-test}
trap 'scripts/yarn-down.sh >/dev/null 2>&1 || true; scripts/hdfs-down.sh >/dev/null 2>&1 || true
      PS_YARN_DIR=$SECURE_YARN_DIR scripts/yarn-down.sh >/dev/null 2>&1 || true
      PS_HDFS_DIR=$SECURE_HDFS_DIR scripts/hdfs-down.sh >/dev/null 2>&1 || true; scripts/kdc-down.sh >/dev/null 2>&1 || true' EXIT
# A Kerberos KDC (Debian's MIT krb5), a second, secure HDFS that uses it and a secure YARN
# stand-in on that HDFS (tests: secure_hdfs).
eval "$(scripts/kdc-up.sh | grep '^export ')"
# Tokens that expire in 50 s unless renewed and live 150 s at most: a test job outlives them.
PS_SECURE_HDFS_CONF=$(PS_HDFS_DIR=$SECURE_HDFS_DIR PS_HDFS_SECURE=1 PS_HDFS_HA=1 PS_HDFS_TOKEN_RENEW_MS=50000 PS_HDFS_TOKEN_MAX_MS=150000 scripts/hdfs-up.sh | sed -n 's/^export HADOOP_CONF_DIR=//p')
PS_SECURE_YARN_CONF=$(PS_YARN_DIR=$SECURE_YARN_DIR scripts/yarn-up.sh "$PS_SECURE_HDFS_CONF" | sed -n 's/^export HADOOP_CONF_DIR=//p')
export PS_SECURE_HDFS_CONF PS_SECURE_YARN_CONF
eval "$(scripts/hdfs-up.sh | grep '^export ')"
# The stand-in's conf dir (core/hdfs/yarn-site.xml) is for the YARN tests; the rest keep HDFS's.
PS_YARN_CONF=$(scripts/yarn-up.sh "$HADOOP_CONF_DIR" | sed -n 's/^export HADOOP_CONF_DIR=//p')
export PS_YARN_CONF
# The headless browser the tracking-page tests load the job's page in.
PS_BROWSER=$(scripts/browser.sh)
export PS_BROWSER
# pyarrow and numpy, which read the jobs' Parquet and .npy outputs in the tests.
PS_PYTHON=$(scripts/pyreaders.sh)
export PS_PYTHON
# PySpark, whose own ALSModel.load reads mf's Parquet model in a test.
PS_SPARK_PYTHON=$(scripts/pyspark.sh)
export PS_SPARK_PYTHON
# Every test bounds its own waits; this only turns a hang the tests did not foresee into a failure.
timeout --kill-after=30s 60m cargo test --release --workspace
# A short pass of every fuzz target (the long runs: scripts/fuzz.sh 600, recorded in results/fuzz.md).
scripts/fuzz.sh 5
