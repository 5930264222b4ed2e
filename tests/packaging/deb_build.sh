#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian packages the other packaging tests look at, as a packager would:
#   deb_build.sh BUILD_DIR OUT_DIR   ->  OUT_DIR/perf-monitor_*.deb, perf-monitor-dbgsym_*.ddeb
# (exit 77: skipped, with the reason)
set -eu
build=$1
out=$2
for tool in cpack dpkg-deb dpkg-shlibdeps objcopy; do
  if ! command -v "$tool" >/dev/null; then
    echo "skipped: $tool not installed (cmake, dpkg, dpkg-dev, binutils; scripts/install-deps.sh installs them)"
    exit 77
  fi
done
rm -rf "$out"
mkdir -p "$out"
cd "$build"
if ! cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1; then
  cat "$out/cpack.log"
  exit 1
fi
rm -rf "$out/_CPack_Packages"
ls "$out"/*.deb "$out"/*.ddeb
