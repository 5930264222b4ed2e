#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Debian's own checker accepts the packages: lintian on the .deb and on the debug-symbols
# package reports no error and no warning. (An override would have to be in the package's
# usr/share/lintian/overrides/ with a comment saying why; --show-overrides prints any.)
#   lintian_test.sh DEB_DIR      (exit 77: skipped, with the reason)
set -eu
debs=$1
command -v lintian >/dev/null || { echo "skipped: lintian not installed (scripts/install-deps.sh installs it)"; exit 77; }
deb=$(ls "$debs"/perf-monitor_*.deb 2>/dev/null) || { echo "no .deb in $debs (deb_build.sh failed)"; exit 1; }
ddeb=$(ls "$debs"/perf-monitor-dbgsym_*.ddeb 2>/dev/null) || { echo "no debug-symbols package in $debs"; exit 1; }
lintian --version
# --allow-root: CI runs as root; lintian only reads the packages.
rc=0
out=$(lintian --allow-root --show-overrides --display-level '>=warning' --fail-on error,warning "$deb" "$ddeb" 2>&1) || rc=$?
echo "$out"
errors=$(printf '%s\n' "$out" | grep -c '^E: ' || true)
warnings=$(printf '%s\n' "$out" | grep -c '^W: ' || true)
echo "lintian: $errors errors, $warnings warnings (exit status $rc)"
[ "$rc" -eq 0 ] && [ "$errors" -eq 0 ] && [ "$warnings" -eq 0 ]
