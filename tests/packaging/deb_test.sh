#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What the .deb that `cpack -G DEB` builds (deb_build.sh) holds: the binary, stripped, with its
# debug symbols in perf-monitor-dbgsym under its build ID; the systemd unit; the documentation,
# examples, copyright file and the changelog made from CHANGELOG.md; the manual pages; the
# completions where bash-completion and zsh look; dependencies on the libraries it links; and
# a binary that runs and names this build's version and git commit.
#   deb_test.sh BUILD_DIR DEB_DIR SOURCE_DIR      (exit 77: skipped, with the reason)
set -eu
build=$1
debs=$2
src=$3
deb=$(ls "$debs"/perf-monitor_*.deb 2>/dev/null) || { echo "no .deb in $debs (deb_build.sh failed)"; exit 1; }
ddeb=$(ls "$debs"/perf-monitor-dbgsym_*.ddeb 2>/dev/null) || { echo "no debug-symbols package in $debs"; exit 1; }
echo "built $(basename "$deb") and $(basename "$ddeb")"
fail() { echo "$*"; exit 1; }
tmp=$(mktemp -d "$build/deb-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/perf-monitor ./usr/lib/systemd/system/perf-monitor.service \
         ./usr/share/doc/perf-monitor/README.md ./usr/share/doc/perf-monitor/metrics.md \
         ./usr/share/doc/perf-monitor/examples/prometheus.yml \
         ./usr/share/doc/perf-monitor/examples/grafana-dashboard.json \
         ./usr/share/doc/perf-monitor/copyright ./usr/share/doc/perf-monitor/changelog.gz \
         ./usr/share/bash-completion/completions/perf-monitor \
         ./usr/share/zsh/vendor-completions/_perf-monitor \
         ./usr/share/man/man1/perf-monitor.1.gz; do
  if ! echo "$contents" | grep -q " $f\$"; then
    echo "$deb lacks $f; it holds:"
    echo "$contents"
    exit 1
  fi
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
if echo "$depends" | grep -q libcpp-httplib; then fail "Depends names libcpp-httplib, which is not linked"; fi
echo "$depends" | grep -q libbpf || fail "Depends lacks libbpf"

dpkg-deb -x "$deb" "$tmp/root"
dpkg-deb -x "$ddeb" "$tmp/dbg"
bin=$tmp/root/usr/bin/perf-monitor

# A manual page for every subcommand --help lists.
for sub in $("$bin" --help | awk 'tolower($0) ~ /^subcommands:$/ { on = 1; next } on && /^  [a-z]/ { print $1; next } on { exit }'); do
  [ -f "$tmp/root/usr/share/man/man1/perf-monitor-$sub.1.gz" ] || fail "no manual page perf-monitor-$sub(1) for the subcommand $sub"
done

# Stripped, and its debug symbols are in the dbgsym package under its build ID.
LC_ALL=C file "$bin" | grep -q ', stripped' || fail "the packaged binary is not stripped: $(file "$bin")"
build_id=$(LC_ALL=C readelf -n "$bin" 2>/dev/null | awk '/Build ID:/ { print $3 }')
[ -n "$build_id" ] || fail "the packaged binary has no build ID"
debug=$tmp/dbg/usr/lib/debug/.build-id/$(echo "$build_id" | cut -c1-2)/$(echo "$build_id" | cut -c3-).debug
[ -f "$debug" ] || fail "perf-monitor-dbgsym lacks $debug; it holds: $(dpkg-deb -c "$ddeb")"
LC_ALL=C readelf -S "$debug" | grep -q '\.debug_info' || fail "$debug has no .debug_info"
objcopy --dump-section .gnu_debuglink="$tmp/debuglink" "$bin" 2>/dev/null || fail "the packaged binary has no .gnu_debuglink"
grep -q "$(basename "$debug")" "$tmp/debuglink" || fail ".gnu_debuglink does not name $(basename "$debug")"
echo "stripped; debug symbols in $(basename "$ddeb") at ${debug#"$tmp/dbg"}"

# It runs, and says this build's version and commit.
version=$("$bin" --version)
echo "$version"
[ "$version" = "$("$build/perf-monitor" --version)" ] || fail "packaged binary says '$version'"
release=$(dpkg-deb -f "$deb" Version)
echo "$version" | grep -Eq "^perf-monitor $release( \(git [0-9a-f]{12}(-dirty)?\))?\$" || fail "--version '$version' is not 'perf-monitor $release (git COMMIT)'"
if head=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then
  echo "$version" | grep -q "(git $head" || fail "--version '$version' does not name the commit $head it was built from"
fi
"$bin" list >/dev/null || fail "the packaged binary's 'list' failed"

# The package's changelog is CHANGELOG.md's, for the package's version.
zcat "$tmp/root/usr/share/doc/perf-monitor/changelog.gz" >"$tmp/changelog"
[ "$(dpkg-parsechangelog -l "$tmp/changelog" -S Version)" = "$release" ] || fail "changelog.gz's newest entry is not $release"
newest=$(sed -n 's/^## \[\([0-9][^]]*\)\].*/\1/p' "$src/CHANGELOG.md" | head -n1)
if [ "$newest" = "$release" ]; then
  # Every item of that release is in the package's changelog (its first words, Markdown removed).
  awk -v v="$release" '/^## \[/ { on = index($0, "[" v "]") > 0; next } on && /^- / { print }' "$src/CHANGELOG.md" |
    sed 's/^- //; s/[`*]//g' | cut -c1-30 | while read -r item; do
      tr '\n' ' ' <"$tmp/changelog" | tr -s ' ' | grep -qF -- "$item" || fail "changelog.gz lacks the CHANGELOG.md item '$item'"
    done
fi
echo "changelog.gz: $(dpkg-parsechangelog -l "$tmp/changelog" -S Version) $(dpkg-parsechangelog -l "$tmp/changelog" -S Distribution)"
