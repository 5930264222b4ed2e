#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start-up, side by side in one run: the wall time of `perf-monitor run -- true` (everything a run
# loads — the scheduler, block, probe and counter objects, the tree's cgroup — then the summary),
# `perf-monitor list`, `perf stat -- true` and bpftrace following the same command on one
# tracepoint. hyperfine times them (warm-up 2, RUNS runs each) when it is installed, else a loop
# of RUNS runs prints the median. Goal: `run -- true` <= 150 ms on an idle machine.
#   bench/startup.sh [BUILD_DIR] [RUNS]
set -euo pipefail
build=${1:-build}
runs=${2:-20}
pm="$(realpath "$build/perf-monitor")"
cases=(
  "$pm run -- true"
  "$pm list"
  "perf stat -e task-clock -- true"
  "bpftrace -q -e 'tracepoint:sched:sched_switch { @n = count(); }' -c /usr/bin/true"
)
have() { command -v "$1" >/dev/null; }
keep=()
for c in "${cases[@]}"; do
  first=${c%% *}
  if [ "$first" = "$pm" ] || have "$first"; then keep+=("$c"); else echo "startup: $first is not installed: left out" >&2; fi
done
if have hyperfine; then
  table=$(mktemp)
  trap 'rm -f "$table"' EXIT
  hyperfine -N --style basic --warmup 2 --runs "$runs" --export-markdown "$table" "${keep[@]}" | sed "s#$pm#perf-monitor#g"
  echo
  sed "s#$pm#perf-monitor#g" "$table"
  exit 0
fi
echo "startup: hyperfine is not installed (apt-get install hyperfine): timing with a loop" >&2
for c in "${keep[@]}"; do
  times=()
  for _ in $(seq "$runs"); do
    t0=$(date +%s%N)
    sh -c "$c" >/dev/null 2>&1 || true
    times+=($((($(date +%s%N) - t0) / 1000000)))
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  printf '%-70s median %5d ms over %d runs\n' "${c//$pm/perf-monitor}" "$median" "$runs"
done
