#!/usr/bin/env bash
# Prints a Python that has pyarrow and numpy, for the tests that read the jobs' Parquet and .npy
# outputs with those tools' own readers: $PS_PYTHON, else a venv in data/.venv-readers (made here
# from PyPI when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${PS_PYTHON:-}" ]; then echo "$PS_PYTHON"; exit 0; fi
VENV=data/.venv-readers
if ! "$VENV/bin/python" -c 'import pyarrow, numpy' >/dev/null 2>&1; then
  echo "pyreaders.sh: installing pyarrow and numpy into $VENV" >&2
  python3 -m venv "$VENV"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install -q pyarrow numpy >&2
fi
echo "$(pwd)/$VENV/bin/python"
