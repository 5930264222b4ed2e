#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The manual pages show every flag --help shows: for perf-monitor(1) every flag of
# `perf-monitor --help`, and for every subcommand --help lists, its page perf-monitor-SUB(1)
# has every flag of `perf-monitor SUB --help`. Pages rendered by man -l, as a reader sees them.
#   man_test.sh BUILD_DIR      (exit 77: skipped, with the reason)
set -eu
build=$1
bin=$build/perf-monitor
if [ ! -f "$build/man/perf-monitor.1.gz" ]; then
  echo "skipped: no manual pages were built (help2man not installed; scripts/install-deps.sh installs it)"
  exit 77
fi
command -v man >/dev/null || { echo "skipped: man (man-db) not installed"; exit 77; }

# The flag names of a --help text: the first column of its option lines (-f,--format TEXT ...).
flags_of() {
  awk '/^  -/ { spec = substr($0, 3); sub(/ .*/, "", spec); n = split(spec, f, ","); for (i = 1; i <= n; i++) print f[i] }'
}
status=0
check() {   # check PAGE HELP_ARGS...
  page=$1
  shift
  text=$(MANWIDTH=250 LC_ALL=C man -l "$build/man/$page.1.gz" 2>/dev/null | col -bx)
  flags=$("$bin" "$@" --help | flags_of)
  [ -n "$flags" ] || { echo "'perf-monitor ${*:+$* }--help' shows no flags"; status=1; return; }
  missing=""
  for f in $flags; do
    # The flag as a word of its own: not the start of a longer flag (--interval in --tree-interval).
    printf '%s\n' "$text" | grep -Eq -- "(^|[^A-Za-z0-9-])$f([^A-Za-z0-9-]|\$)" || missing="$missing $f"
  done
  if [ -n "$missing" ]; then
    echo "$page(1) lacks$missing, which 'perf-monitor ${*:+$* }--help' shows"
    status=1
  else
    echo "$page(1): all $(echo $flags | wc -w) flags of 'perf-monitor ${*:+$* }--help':" $flags
  fi
}
check perf-monitor
# Its NAME line is what the first line of --help says perf-monitor is.
what=$("$bin" --help | head -n1 | sed 's/^perf-monitor [^ ]* - //')
name=$(MANWIDTH=250 LC_ALL=C man -l "$build/man/perf-monitor.1.gz" 2>/dev/null | col -bx | sed -n '/^NAME/{n;p;q}' | sed 's/^ *//')
if [ "$name" != "perf-monitor - $what" ]; then
  echo "perf-monitor(1)'s NAME is '$name', not 'perf-monitor - $what'"
  status=1
fi
for sub in $("$bin" --help | awk 'tolower($0) ~ /^subcommands:$/ { on = 1; next } on && /^  [a-z]/ { print $1; next } on { exit }'); do
  if [ ! -f "$build/man/perf-monitor-$sub.1.gz" ]; then
    echo "no manual page perf-monitor-$sub(1) for the subcommand $sub"
    status=1
    continue
  fi
  check "perf-monitor-$sub" "$sub"
done
exit $status
