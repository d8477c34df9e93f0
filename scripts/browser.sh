#!/usr/bin/env bash
# Prints the headless browser the tracking-page tests load the job's page in: $PS_BROWSER, else
# Debian's chromium-headless-shell (installed here when missing and apt can, as root).
set -euo pipefail
if [ -n "${PS_BROWSER:-}" ]; then echo "$PS_BROWSER"; exit 0; fi
for b in chromium-headless-shell chromium; do
  if command -v "$b" >/dev/null; then command -v "$b"; exit 0; fi
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "browser.sh: installing chromium-headless-shell" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium-headless-shell >/dev/null 2>&1 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium-headless-shell >/dev/null 2>&1; } ||
    { echo "browser.sh: installing chromium-headless-shell failed" >&2; exit 1; }
  command -v chromium-headless-shell
else
  echo "browser.sh: a headless browser is needed (Debian: chromium-headless-shell), or set PS_BROWSER" >&2
  exit 1
fi
