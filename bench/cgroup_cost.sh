#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What many cgroups cost the live monitor: N cgroups in the v2 hierarchy, one sleeping process
# each, and perf-monitor's live mode (1 s, top lists on, as by default) beside `--top 0` (the
# lists off) and the lists read by the task iterator, in interleaved rounds of the same length.
# Prints each one's CPU share in its steady state (schedstat): the median of the rounds, and
# their range (how much a shared host moves it); the cost per cgroup per second; the whole run's share with start-up (rusage); and the
# opens and reads per interval (strace -c, a run of its own).
# Goal (issue 26): <= 0.5 % of a CPU with 1,000 cgroups.
#   bench/cgroup_cost.sh [BUILD_DIR] [CGROUPS] [SECONDS] [ROUNDS]     as root
set -euo pipefail
build=${1:-build}
n=${2:-1000}
secs=${3:-20}
rounds=${4:-3}
pm=$(realpath "$build/perf-monitor")
[ "$(id -u)" -eq 0 ] || { echo "cgroup_cost: run as root (it makes cgroups)" >&2; exit 1; }
mount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$mount" ] || { echo "cgroup_cost: no cgroup v2 hierarchy mounted" >&2; exit 1; }
top="$mount/pm-cgroup-cost-$$"
pids=()
cleanup() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  for d in "$top"/cg*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
  rmdir "$top" 2>/dev/null || true
}
trap cleanup EXIT
mkdir "$top"
for i in $(seq 1 "$n"); do
  mkdir "$top/cg$i"
  sh -c "echo \$\$ > '$top/cg$i/cgroup.procs' && exec sleep 100000" &
  pids+=($!)
done
sleep 2

# CPU share of perf-monitor in its steady state: from 4 s after its start (the programs loaded,
# the baseline read) to the end of the window, from the scheduler's own accounting of each of
# its threads (/proc/PID/task/*/schedstat, nanoseconds on a CPU). Then its whole run's CPU
# (start-up included) from the kernel's rusage when it is reaped.
warm=4
steady() {
  "$pm" -q --interval 1s "$@" >/dev/null 2>&1 &
  local pid=$! a b
  sleep "$warm"
  a=$(cat /proc/$pid/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s }')
  sleep "$secs"
  b=$(cat /proc/$pid/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s }')
  kill -INT $pid; wait $pid 2>/dev/null || true
  awk -v a="$a" -v b="$b" -v s="$secs" 'BEGIN { printf "%.3f", 100 * (b - a) / 1e9 / s }'
}
cpu_of() {
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime)' "$@"
}
share() { awk -v t="$1" -v s="$2" 'BEGIN { printf "%.3f", 100 * t / s }'; }
ons=() offs=() iters=()
for _ in $(seq 1 "$rounds"); do
  ons+=("$(steady)")
  offs+=("$(steady --top 0)")
  iters+=("$(PERF_MONITOR_TOP_WALK=tasks steady)")
done
# The median of the rounds, then "(min-max)".
median_range() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.3f (rounds %.3f-%.3f)", m, v[1], v[NR] }'
}
on=$(median_range "${ons[@]}" | cut -d' ' -f1)
off=$(median_range "${offs[@]}" | cut -d' ' -f1)
whole=$(cpu_of "$pm" -q --interval 1s --duration "$((secs + warm))s")
echo "cgroup_cost: $n cgroups, one sleeping process each, live mode at 1 s, steady state over $secs s, median of $rounds interleaved rounds"
echo "  top lists on (default): $(median_range "${ons[@]}") % of one CPU   (goal: <= 0.5 %)"
echo "  --top 0:                $(median_range "${offs[@]}") % of one CPU"
echo "  lists on, read by the BPF task iterator (PERF_MONITOR_TOP_WALK=tasks, as where the kernel cannot load the walk): $(median_range "${iters[@]}") % of one CPU"
awk -v on="$on" -v off="$off" -v n="$n" \
  'BEGIN { printf "  per cgroup per second:  %.2f us (the lists on less off)\n", 1e4 * (on - off) / n }'
echo "  whole run of $((secs + warm)) s, start-up included, lists on: $(share "$whole" $((secs + warm))) % of one CPU"
if command -v strace >/dev/null; then
  sum=$(mktemp)
  # Two runs, 3 s and 8 s: the difference is 5 intervals of the steady state, without start-up.
  strace -f -c -o "$sum.3" -e trace=openat,read,pread64,close "$pm" -q --interval 1s --duration 3s >/dev/null 2>&1 || true
  strace -f -c -o "$sum.8" -e trace=openat,read,pread64,close "$pm" -q --interval 1s --duration 8s >/dev/null 2>&1 || true
  for call in openat close read pread64; do
    awk -v c="$call" -v f="$sum.3" '$NF == c { if (FILENAME == f) a = $4; else b = $4 } END { printf "  %-8s %8.0f per interval\n", c, (b - a) / 5 }' "$sum.3" "$sum.8"
  done
  rm -f "$sum" "$sum.3" "$sum.8"
fi
