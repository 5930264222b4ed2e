#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The manual pages show every flag --help shows: for perf-monitor(1) every flag of
# `perf-monitor --help`, and for every subcommand --help lists, its page perf-monitor-SUB(1)
# has every flag of `perf-monitor SUB --help`. Each page has the sections a reader looks for
# (DESCRIPTION, OPTIONS, EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES, SEE ALSO; top's KEYS, one
# key per paragraph), every label of the live block the binary prints is explained in
# perf-monitor(1), every label of run's report in perf-monitor-run(1), and every column of the
# process, thread and cgroup tables in perf-monitor-top(1). Pages rendered by man -l, as a
# reader sees them.
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
render() {   # render PAGE: the page as man shows it, without bold and underline
  MANWIDTH=250 LC_ALL=C man -l "$build/man/$1.1.gz" 2>/dev/null | col -bx
}
# Every section heading a page must have (man puts them at the start of a line, upper case).
sections() {   # sections PAGE SECTION...
  page=$1
  shift
  text=$(render "$page")
  for s in "$@"; do
    printf '%s\n' "$text" | grep -qx -- "$s" || { echo "$page(1) has no $s section"; status=1; }
  done
}
# Every word given appears in the page as a word of its own (RUNQ% not only in RUNQP99).
explains() {   # explains PAGE WHAT WORD...
  page=$1
  what=$2
  shift 2
  text=$(render "$page")
  missing=""
  for w in "$@"; do
    q=$(printf '%s' "$w" | sed 's/[][\.*^$%/]/\\&/g')
    printf '%s\n' "$text" | grep -Eq -- "(^|[^A-Za-z0-9%/_-])$q([^A-Za-z0-9%/_-]|\$)" || missing="$missing $w"
  done
  if [ -n "$missing" ]; then
    echo "$page(1) does not explain$missing ($what)"
    status=1
  else
    echo "$page(1) explains every $what:" "$@"
  fi
}
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
what=$("$bin" --help | sed -n 1p | sed 's/^perf-monitor [^ ]* - //')
name=$(MANWIDTH=250 LC_ALL=C man -l "$build/man/perf-monitor.1.gz" 2>/dev/null | col -bx | sed -n '/^NAME/{n;p;q}' | sed 's/^ *//')
if [ "$name" != "perf-monitor - $what" ]; then
  echo "perf-monitor(1)'s NAME is '$name', not 'perf-monitor - $what'"
  status=1
fi
for sub in $("$bin" --help | awk 'tolower($0) ~ /^subcommands:$/ { on = 1; next } on && /^  [a-z]/ { print $1; next } { on = 0 }'); do
  if [ ! -f "$build/man/perf-monitor-$sub.1.gz" ]; then
    echo "no manual page perf-monitor-$sub(1) for the subcommand $sub"
    status=1
    continue
  fi
  check "perf-monitor-$sub" "$sub"
  sections "perf-monitor-$sub" DESCRIPTION OPTIONS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"
done
sections perf-monitor DESCRIPTION OPTIONS SUBCOMMANDS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"
sections perf-monitor-top KEYS

# top's keys: each key of the help's key table starts a paragraph of its own in KEYS (the
# first word of a paragraph's tag), not run together on one line.
keys_text=$(render perf-monitor-top | awk '/^KEYS$/ { on = 1; next } on && /^[A-Z]/ { exit } on')
for key in P R B I F M p g H t c Enter / k r space h q; do
  printf '%s\n' "$keys_text" | grep -Eq "^       ([^ ].*[ ,])?$(printf '%s' "$key" | sed 's|/|\\/|')([ ,]|\$)" ||
    { echo "perf-monitor-top(1): key $key has no paragraph of its own under KEYS"; status=1; }
done

# What the binary prints: a live block, run's report and top's tables, as text. The labels are
# the first word of each line that starts at column 0; the columns the words of each table's
# header row.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" --quiet --interval 300ms --duration 700ms --threads >"$out/live" 2>&1 || true
"$bin" run --quiet --interval 200ms -- sh -c 'dd if=/dev/zero of=/dev/null bs=1M count=200 2>/dev/null; sleep 0.3' \
  >/dev/null 2>"$out/run" || true
"$bin" top --quiet --interval 300ms --duration 700ms --threads >"$out/top" 2>&1 || true
labels_of() {   # the section labels of a text output
  grep -E '^[a-z]' "$1" | grep -v '^perf-monitor: ' | awk '{ print $1 }' | sort -u
}
tree_labels_of() {   # the labels of the lines under the tree line of run's summary (cpu, time, RSS ...)
  awk '/^tree / { on = 1; next } /^[^ ]/ { on = 0 } on && /^         [A-Za-z]/ { print $1 }' "$1" | sort -u
}
columns_of() {   # the column names of its tables' header rows (the row that begins with PID, TID or PROCS)
  grep -E '^ +(PID|TID|PROCS) ' "$1" | tr -s ' ' '\n' | grep -v '^$' | sort -u
}
[ -n "$(labels_of "$out/live")" ] || { echo "the live mode printed no block:"; cat "$out/live"; status=1; }
[ -n "$(columns_of "$out/top")" ] || { echo "top printed no table:"; cat "$out/top"; status=1; }
explains perf-monitor "label of the live block" $(labels_of "$out/live")
# run's system lines are the live block's, which perf-monitor-run(1) leaves to perf-monitor(1).
labels_of "$out/live" >"$out/live.labels"
explains perf-monitor-run "label of run's report that live mode lacks" \
  $(labels_of "$out/run" | comm -23 - "$out/live.labels") $(tree_labels_of "$out/run")
explains perf-monitor-top "column of top's tables" $( { columns_of "$out/top"; columns_of "$out/live"; } | sort -u)
exit $status
