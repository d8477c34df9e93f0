#!/usr/bin/env bash
# Prints a Python that has PySpark (Apache Spark's own jars; it runs on the JDK the tests use),
# for the test that loads mf's Parquet model with Spark's `ALSModel.load`: $PS_SPARK_PYTHON,
# else a venv in data/.venv-spark (made here from PyPI when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${PS_SPARK_PYTHON:-}" ]; then echo "$PS_SPARK_PYTHON"; exit 0; fi
VENV=data/.venv-spark
if ! "$VENV/bin/python" -c 'import pyspark' >/dev/null 2>&1; then
  echo "pyspark.sh: installing pyspark into $VENV" >&2
  python3 -m venv "$VENV"
  # 3.5 is the newest Spark line that runs on Java 17 and reads Spark 3.x's ML metadata.
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install -q 'pyspark>=3.5,<3.6' >&2
fi
echo "$(pwd)/$VENV/bin/python"
