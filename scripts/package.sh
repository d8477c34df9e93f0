#!/usr/bin/env bash
# Builds the binaries shipped to a cluster into dist/ (yarn-submit, ps-app-master, ps-runtime):
# for glibc >= 2.17 (RHEL/CentOS 7 and 8, Amazon Linux 2, Ubuntu 14.04 on), with cargo-zigbuild and
# the zig toolchain from PyPI's `ziglang` (both installed under data/tools on first use); still
# dynamically linked, so GSSAPI (Kerberos) can be loaded at run time; stripped (profile `dist`).
# Then checks each binary: highest GLIBC_ symbol version <= 2.17 and size < 25 MB.
# Run dist/yarn-submit to submit with them (it ships the binaries next to it).
#   PS_DIST_GLIBC  oldest glibc to support (default 2.17)
set -euo pipefail
cd "$(dirname "$0")/.."
ZIG_VERSION=0.13.0
ZIGBUILD_VERSION=0.24.1
GLIBC=${PS_DIST_GLIBC:-2.17}
MAX_BYTES=$((25 * 1024 * 1024))
TOOLS=$(pwd)/data/tools
TARGET=$(uname -m)-unknown-linux-gnu
if [ ! -x "$TOOLS/venv/bin/python-zig" ]; then
  python3 -m venv "$TOOLS/venv"
  "$TOOLS/venv/bin/pip" install -q "ziglang==$ZIG_VERSION"
fi
if [ "$("$TOOLS/cargo/bin/cargo-zigbuild" --version 2>/dev/null)" != "cargo-zigbuild $ZIGBUILD_VERSION" ]; then
  cargo install -q cargo-zigbuild --version "$ZIGBUILD_VERSION" --locked --root "$TOOLS/cargo"
fi
export PATH=$TOOLS/venv/bin:$TOOLS/cargo/bin:$PATH
cargo zigbuild -q --profile dist --target "$TARGET.$GLIBC" -p ps-client -p ps-app-master -p ps-job --bins
mkdir -p dist
status=0
for b in yarn-submit ps-app-master ps-runtime; do
  cp "target/$TARGET/dist/$b" "dist/.$b.tmp" && mv "dist/.$b.tmp" "dist/$b"
  need=$(objdump -T "dist/$b" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1)
  size=$(stat -c %s "dist/$b")
  printf '%-14s %6.1f MB  needs glibc %s\n' "$b" "$(awk -v s="$size" 'BEGIN { print s / 1048576 }')" "$need"
  if [ "$(printf '%s\n%s\n' "$need" "$GLIBC" | sort -t. -k1,1n -k2,2n -k3,3n | tail -1)" != "$GLIBC" ]; then
    echo "package.sh: dist/$b needs glibc $need, newer than $GLIBC" >&2; status=1
  fi
  if [ "$size" -ge "$MAX_BYTES" ]; then
    echo "package.sh: dist/$b is $size bytes, over 25 MB" >&2; status=1
  fi
done
exit $status
