#!/usr/bin/env bash
# Prints a Python that has PySpark (Apache Spark's own jars; it runs on the JDK the tests use),
# for the test that loads mf's Parquet model with Spark's `ALSModel.load`: $PS_SPARK_PYTHON,
# else a venv in data/.venv-spark (made here from PyPI when missing). 3.5 is the newest Spark
# line that runs on Java 17 and reads Spark 3.x's ML metadata; pyspark.ml needs numpy.
exec "$(dirname "$0")/venv.sh" PS_SPARK_PYTHON data/.venv-spark "pyspark numpy pyspark.ml" 'pyspark>=3.5,<3.6' numpy
