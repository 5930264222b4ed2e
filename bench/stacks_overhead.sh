#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What --stacks costs, side by side in one run:
#   1. on-CPU sampling at 99 Hz: perf-monitor's own CPU in live mode for SECONDS while both CPUs
#      are busy (so every sample is of a program and is unwound), with --stacks=cpu and without;
#      the difference is what the sampling costs, in % of one CPU (rusage of the real binary).
#   2. off-CPU stacks on the pinned ping-pong (context_bench pingpong: two processes pinned to one
#      CPU, two switches a trip), interleaved rounds, medians of us per trip:
#        bare       nothing attached
#        run        under `perf-monitor run` (eBPF sources, no stacks)
#        run-off    under `perf-monitor run --stacks=off`: every switch of the tree's threads
#        offcputime libbpf-tools' offcputime -u (bcc's CO-RE port; bcc's Python offcputime needs
#                   kernel headers this kernel has no package of) running beside bare
#        perf       perf record -e sched:sched_switch -g (every switch with its call chain)
#   bench/stacks_overhead.sh [BUILD_DIR] [SECONDS] [LOOPS] [ROUNDS]
# (PM_BENCH_ONCPU_ONLY=1: the first part alone; PM_BENCH_OFFCPU_ONLY=1: the second alone)
set -euo pipefail
build=${1:-build}
seconds=${2:-20}
loops=${3:-200000}
rounds=${4:-5}
pm="$build/perf-monitor"
cb="$build/bench/context_bench"
burner="$build/tests/pm-stack-cpu"
printf '[pmc]\nenabled = false\n' > /tmp/pm-bench-kernel.toml
ncpu=$(nproc)

if [ -z "${PM_BENCH_OFFCPU_ONLY:-}" ]; then
echo "-- on-CPU sampling at 99 Hz: perf-monitor's CPU in live mode, ${seconds} s, ${ncpu} CPUs busy"
pids=()
for ((c = 0; c < ncpu; c++)); do
  taskset -c "$c" "$burner" $((seconds * 3 + 20)) > /dev/null &
  pids+=($!)
done
# perf-monitor's own CPU (user + system, s) between its 3rd second (once started: loading the
# programs, reading kallsyms) and 3 + SECONDS; and what starting took.
tick=$(getconf CLK_TCK)
cpu_of() {
  "$pm" --config /tmp/pm-bench-kernel.toml "$@" --duration "$((seconds + 5))s" -o /dev/null -q 2>/dev/null &
  local p=$! a b
  sleep 3
  a=$(awk '{print $14 + $15}' /proc/$p/stat)
  sleep "$seconds"
  b=$(awk '{print $14 + $15}' /proc/$p/stat)
  wait "$p" || true
  awk -v a="$a" -v b="$b" -v t="$tick" 'BEGIN {printf "%.3f %.3f\n", (b - a) / t, a / t}'
}
read -r without start0 <<< "$(cpu_of)"
read -r with start1 <<< "$(cpu_of --stacks=cpu)"
read -r with_file start2 <<< "$(cpu_of --stacks-out /tmp/pm-bench-stacks.folded)"
kill "${pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true
samples=$(awk '{n += $NF} END {print n + 0}' /tmp/pm-bench-stacks.folded)
awk -v a="$without" -v b="$with" -v c="$with_file" -v s="$seconds" -v n="$samples" -v s0="$start0" -v s1="$start1" \
  -v total="$((seconds + 5))" 'BEGIN {
  printf "without stacks:        %.2f %% of one CPU (its first 3 s: %.2f s of CPU)\n", 100 * a / s, s0
  printf "--stacks=cpu:          %.2f %% of one CPU, sampling +%.2f %% (its first 3 s: %.2f s of CPU)\n", 100 * b / s,
         100 * (b - a) / s, s1
  printf "--stacks-out (folded): %.2f %% of one CPU, sampling +%.2f %%; %d samples in %d s, %.1f us each\n", 100 * c / s,
         100 * (c - a) / s, n, total, (n > 0 ? 1e6 * (c - a) / (n * s / total) : 0) }'

fi
[ -n "${PM_BENCH_ONCPU_ONLY:-}" ] && exit 0
echo "-- off-CPU stacks: pinned ping-pong, ${loops} trips, median of ${rounds} interleaved rounds (us/trip)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
us() { awk '/usecs\/op/ {print $1}'; }
declare -A results
for ((r = 0; r < rounds; r++)); do
  results[bare]+="$("$cb" pingpong "$loops" 0 | us) "
  results[run]+="$("$pm" --config /tmp/pm-bench-kernel.toml run --output /dev/null -- "$cb" pingpong "$loops" 0 | us) "
  results[run-off]+="$("$pm" --config /tmp/pm-bench-kernel.toml run --stacks=off --output /dev/null -- "$cb" pingpong "$loops" 0 | us) "
  if command -v offcputime > /dev/null; then
    offcputime -u > /dev/null 2>&1 &
    oc=$!
    sleep 2  # loaded and attached
    results[offcputime]+="$("$cb" pingpong "$loops" 0 | us) "
    kill -INT "$oc" 2>/dev/null || true
    wait "$oc" 2>/dev/null || true
  fi
  if command -v perf > /dev/null; then
    results[perf]+="$(perf record -q -e sched:sched_switch -g -o /tmp/pm-bench-perf.data -- "$cb" pingpong "$loops" 0 2>/dev/null | us) "
  fi
done
bare=$(tr ' ' '\n' <<< "${results[bare]}" | grep . | median)
# Also the median of each round's own ratio (its figure over the same round's bare): a host whose
# speed drifts between rounds moves that less than the ratio of the medians.
by_round() { paste <(tr ' ' '\n' <<< "$1" | grep .) <(tr ' ' '\n' <<< "$2" | grep .) | awk '{print $1 / $2}' | median; }
for k in bare run run-off offcputime perf; do
  [ -n "${results[$k]:-}" ] || { echo "$k: not run (tool missing)"; continue; }
  m=$(tr ' ' '\n' <<< "${results[$k]}" | grep . | median)
  rr=$(by_round "${results[$k]}" "${results[bare]}")
  awk -v k="$k" -v m="$m" -v b="$bare" -v rr="$rr" -v all="${results[$k]}" \
    'BEGIN {printf "%-11s %7.3f us/trip  %.3f x bare  (by round %.3f)   (%s)\n", k, m, m / b, rr, all}'
done
rm -f /tmp/pm-bench-perf.data /tmp/pm-bench-stacks.folded
