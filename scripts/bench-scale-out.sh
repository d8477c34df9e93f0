#!/usr/bin/env bash
# Scale-out with workers: `yarn-submit --master local[P] --threads T` for P x T up to N workers
# (default: this machine's cores) on mf, lda and pagerank, beside LIBMF (built from PyPI's
# `libmf` sdist with the flags of LIBMF's Makefile, -O3 -march=native -fopenmp -DUSEOMP -DUSEAVX,
# and scripts/peers/libmf_driver.cpp), tomotopy and scipy at the same thread counts.
# Inputs are generated once into data/bench-scale-out (--size full: 25M ratings in 16 files, a
# 10M-token corpus, a 2M-node graph; --size small fits 2 cores).
# Results: results/bench-scale-out.{csv,json,png}.
#   usage: scripts/bench-scale-out.sh [--max-workers N] [--size tiny|small|full] [--apps mf,lda]
#          [--huge-pages-off] (also 1 x 1 and 1 x N with PS_HUGE_PAGES=0; compare load_s and wall_s)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p ps-job -p ps-client
mkdir -p data/peers
if [ ! -x data/peers/libmf_driver ]; then
  python3 -m pip download -q --no-deps --no-binary :all: -d data/peers libmf==0.9.2
  tar -xzf data/peers/libmf-0.9.2.tar.gz -C data/peers
  src=data/peers/libmf-0.9.2/src_cpp
  g++ -O3 -march=native -std=c++11 -pthread -fopenmp -DUSEOMP -DUSEAVX -I"$src" \
    scripts/peers/libmf_driver.cpp "$src/mf.cpp" -o data/peers/libmf_driver
fi
if [ ! -x data/.venv-peers/bin/python ]; then
  python3 -m venv data/.venv-peers
fi
data/.venv-peers/bin/pip install -q numpy scipy pandas tomotopy matplotlib
exec data/.venv-peers/bin/python scripts/bench_scale_out.py --libmf data/peers/libmf_driver "$@"
