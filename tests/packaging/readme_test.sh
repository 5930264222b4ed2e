#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The README stays short (at most 25,000 bytes) and every command of its tour runs as shown:
# each `$ ` line of its console blocks is run from a scratch directory whose build/ is the build
# under test, with that build's perf-monitor first on PATH, as the README tells a reader to do.
# A command exits 0, except the --fail-on comparison, which the README shows exiting 3.
#   readme_test.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
build=$(cd "$2" && pwd)
readme=$src/README.md
size=$(wc -c <"$readme")
if [ "$size" -gt 25000 ]; then
  echo "README.md is $size bytes, more than 25,000: move the long parts to docs/"
  exit 1
fi
echo "README.md: $size bytes (at most 25,000)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$build" "$work/build"
# The commands of the tour: the `$ ` lines inside ```console blocks.
awk '/^```console/ { on = 1; next } /^```/ { on = 0 } on && /^\$ / { print substr($0, 3) }' "$readme" >"$work/commands"
count=$(wc -l <"$work/commands")
[ "$count" -ge 5 ] || { echo "README.md's tour has only $count commands"; exit 1; }

status=0
n=0
while IFS= read -r cmd; do
  n=$((n + 1))
  want=0
  case $cmd in *--fail-on*) want=3 ;; esac
  rc=0
  (cd "$work" && PATH="$build:$PATH" sh -c "$cmd") >"$work/out.$n" 2>&1 </dev/null || rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "README command $n exited $rc, not $want: $cmd"
    tail -n 20 "$work/out.$n"
    status=1
  else
    echo "README command $n exited $rc as shown: $cmd"
  fi
done <"$work/commands"
exit $status
