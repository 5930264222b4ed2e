#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Makes the manual pages from the built binary's own --help, so they say what the binary does:
#   man-pages.sh BINARY OUTDIR
# perf-monitor(1) from `perf-monitor --help`, and perf-monitor-SUB(1) from `perf-monitor SUB
# --help` for every subcommand that --help lists, each gzipped (gzip -9n) into OUTDIR, which is
# emptied first. Needs help2man (Debian package help2man).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BINARY OUTDIR" >&2; exit 2; }
bin=$1
out=$2
help2man=$(command -v help2man) || { echo "man-pages: help2man is not installed (apt-get install help2man)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Reproducible: the page's date is that of the last commit when there is one.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$(dirname "$0")" log -1 --format=%ct 2>/dev/null || date +%s)
  export SOURCE_DATE_EPOCH
fi

help=$("$bin" --help)
# "perf-monitor 0.1.0 (git 0123456789ab)": the release goes in each page's footer.
version=$("$bin" --version | head -n1 | awk '{ print $2 }')
# The first line of --help is "perf-monitor VERSION - what it is".
what=$(printf '%s\n' "$help" | head -n1 | sed 's/^perf-monitor [^ ]* - //')
# The subcommands, as CLI11 lists them: "Subcommands:" then "  NAME   Description".
subcommands=$(printf '%s\n' "$help" | awk '
  tolower($0) ~ /^subcommands:$/ { on = 1; next }
  on && /^  [a-z]/ { print $1; next }
  on { exit }')

see_also=""
for sub in $subcommands; do
  see_also="$see_also${see_also:+,
}.BR perf-monitor-$sub (1)"
done
license='perf-monitor is free software under the Apache License 2.0; its eBPF programs are
dual-licensed GPL-2.0-only or BSD-2-Clause. See /usr/share/doc/perf-monitor/copyright.'

cat >"$tmp/main.h2m" <<EOF
[FILES]
.TP
.I /etc/default/perf-monitor
Settings of perf-monitor.service (PERF_MONITOR_LISTEN, PERF_MONITOR_OPTS).
.TP
.I /usr/share/doc/perf-monitor/
README.md (usage, the configuration file, Prometheus), metrics.md, json-schema.md, and
examples: a Prometheus scrape configuration and a Grafana dashboard.
[COPYRIGHT]
$license
[SEE ALSO]
$see_also
EOF
"$help2man" --no-info --section=1 --name="$what" --include="$tmp/main.h2m" \
  --version-string="perf-monitor $version" --output="$tmp/perf-monitor.1" "$bin"

for sub in $subcommands; do
  # The subcommand's one-line description in the main --help, lower-cased for the NAME line.
  sub_what=$(printf '%s\n' "$help" | awk -v s="$sub" '
    tolower($0) ~ /^subcommands:$/ { on = 1; next }
    on && $1 == s { $1 = ""; sub(/^ +/, ""); print tolower(substr($0, 1, 1)) substr($0, 2); exit }')
  cat >"$tmp/$sub.h2m" <<EOF
[COPYRIGHT]
$license
[SEE ALSO]
.BR perf-monitor (1)
EOF
  "$help2man" --no-info --section=1 --name="$sub_what" --include="$tmp/$sub.h2m" \
    --help-option="$sub --help" --version-string="perf-monitor-$sub $version" \
    --output="$tmp/perf-monitor-$sub.1" "$bin"
done

for page in "$tmp"/*.1; do
  gzip -9n <"$page" >"$out/$(basename "$page").gz"
done
