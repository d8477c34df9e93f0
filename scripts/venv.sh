#!/usr/bin/env bash
# Prints a Python that can `import MODULES`: the value of $VAR when set, else the venv DIR (made
# here from PyPI with PACKAGES when it lacks one of them). The shared part of scripts/pyreaders.sh
# and scripts/pyspark.sh.
#   scripts/venv.sh VAR DIR "MODULES" PACKAGES...
set -euo pipefail
cd "$(dirname "$0")/.."
var=$1 venv=$2 modules=$3
shift 3
if [ -n "${!var:-}" ]; then echo "${!var}"; exit 0; fi
if ! "$venv/bin/python" -c "import ${modules// /, }" >/dev/null 2>&1; then
  echo "venv.sh: installing $* into $venv" >&2
  python3 -m venv "$venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install -q "$@" >&2
fi
echo "$(pwd)/$venv/bin/python"
