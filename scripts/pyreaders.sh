#!/usr/bin/env bash
# Prints a Python that has pyarrow and numpy, for the tests that read the jobs' Parquet and .npy
# outputs with those tools' own readers: $PS_PYTHON, else a venv in data/.venv-readers (made here
# from PyPI when missing).
exec "$(dirname "$0")/venv.sh" PS_PYTHON data/.venv-readers "pyarrow numpy" pyarrow numpy
