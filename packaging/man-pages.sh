#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Makes the manual pages from the built binary's own --help, so their flags are the binary's:
#   man-pages.sh BINARY OUTDIR
# perf-monitor(1) from `perf-monitor --help`, and perf-monitor-SUB(1) from `perf-monitor SUB
# --help` for every subcommand that --help lists, each gzipped (gzip -9n) into OUTDIR, which is
# emptied first. Needs help2man (Debian package help2man).
#
# help2man makes NAME, SYNOPSIS, the first lines of DESCRIPTION, OPTIONS and (perf-monitor(1))
# SUBCOMMANDS from --help; the rest of each page is written by hand in packaging/man/PAGE.h2m
# (help2man include files): what every figure, column and key means, EXIT STATUS, ENVIRONMENT,
# FILES, EXAMPLES. packaging/man/common.h2m is added to every page. --help's footer (its
# examples, keys and exit status in a few lines) is left to those sections, which say it in full.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BINARY OUTDIR" >&2; exit 2; }
bin=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
pages=$here/man
help2man=$(command -v help2man) || { echo "man-pages: help2man is not installed (apt-get install help2man)" >&2; exit 1; }
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Reproducible: the page's date is that of the last commit when there is one.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)
  export SOURCE_DATE_EPOCH
fi

# What help2man reads: the binary's --help up to the end of its options (and, for perf-monitor
# itself, the list of subcommands, as a section of its own), with the positional arguments moved
# under the options, so that DESCRIPTION begins with what the command is and the hand-written
# text follows it.
mkdir "$tmp/bin"
cat >"$tmp/bin/perf-monitor" <<'EOF'
#!/bin/sh
case " $* " in
  *" --help "*) ;;
  *) exec "$PM_MAN_BINARY" "$@" ;;
esac
"$PM_MAN_BINARY" "$@" | awk '
  function flush_positionals() { if (pos != "") { printf "\n%s", pos; pos = "" } }
  state == 0 && /^Positionals:$/ { state = 1; pos = $0 "\n"; next }
  state == 1 && /^$/ { state = 0; next }
  state == 1 { pos = pos $0 "\n"; next }
  /^Options:$/ { state = 2; print; next }
  # An option whose description begins with a dash and stands on its line (CLI11 puts it there
  # when the flag fits in 28 columns): help2man would read it as part of the flag, so it goes on
  # a line of its own.
  state == 2 && /^  -/ && substr($0, 30, 1) == " " && substr($0, 31, 1) == "-" {
    spec = substr($0, 1, 29); sub(/ +$/, "", spec); print spec; printf "%30s%s\n", "", substr($0, 31); next }
  state == 2 && /^Subcommands:$/ { flush_positionals(); print ""; print "*Subcommands*"; state = 3; next }
  state >= 2 && /^[^ ]/ { exit }
  { print }
  END { flush_positionals() }'
EOF
chmod +x "$tmp/bin/perf-monitor"
PM_MAN_BINARY=$bin
export PM_MAN_BINARY
wrapper=$tmp/bin/perf-monitor

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

# SEE ALSO: the other pages of perf-monitor, then the tools it sits beside.
see_also() {   # see_also PAGE
  list=""
  for p in perf-monitor $(for s in $subcommands; do echo "perf-monitor-$s"; done); do
    [ "$p" = "$1" ] || list="$list${list:+,
}.BR $p (1)"
  done
  printf '[SEE ALSO]\n%s,\n.BR perf (1),\n.BR perf\\-stat (1),\n.BR bpftrace (8),\n.BR top (1),\n.BR htop (1),\n.BR proc (5),\n.BR cgroups (7)\n' "$list"
}
# A page without its own include file still gets one, so that it is made (the tests then say
# which sections it lacks).
include_for() {   # include_for PAGE
  if [ -f "$pages/$1.h2m" ]; then
    echo "$pages/$1.h2m"
  else
    echo "man-pages: warning: no $pages/$1.h2m: $1(1) has only what --help says" >&2
    printf '[DESCRIPTION]\n' >"$tmp/$1.empty.h2m"
    echo "$tmp/$1.empty.h2m"
  fi
}

see_also perf-monitor >"$tmp/perf-monitor.see.h2m"
"$help2man" --no-info --section=1 --name="$what" \
  --include="$(include_for perf-monitor)" --include="$pages/common.h2m" --include="$tmp/perf-monitor.see.h2m" \
  --version-string="perf-monitor $version" --output="$tmp/perf-monitor.1" "$wrapper"

for sub in $subcommands; do
  # The subcommand's one-line description in the main --help, lower-cased for the NAME line.
  sub_what=$(printf '%s\n' "$help" | awk -v s="$sub" '
    tolower($0) ~ /^subcommands:$/ { on = 1; next }
    on && $1 == s { $1 = ""; sub(/^ +/, ""); print tolower(substr($0, 1, 1)) substr($0, 2); exit }')
  see_also "perf-monitor-$sub" >"$tmp/$sub.see.h2m"
  "$help2man" --no-info --section=1 --name="$sub_what" \
    --include="$(include_for "perf-monitor-$sub")" --include="$pages/common.h2m" --include="$tmp/$sub.see.h2m" \
    --help-option="$sub --help" --version-string="perf-monitor-$sub $version" \
    --output="$tmp/perf-monitor-$sub.1" "$wrapper"
done

for page in "$tmp"/*.1; do
  gzip -9n <"$page" >"$out/$(basename "$page").gz"
done
