#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What thread context (include/perf-monitor/annotate.h) costs, side by side in one run:
#   1. the application's side: ns per perf_monitor_poll_begin/end pair, bare and under
#      `perf-monitor run` (which reads the records), beside the USDT request pair (a trap each);
#   2. the kernel's side: a ping-pong of two processes pinned to one CPU (as perf bench sched
#      pipe) whose every trip is a poll (it blocks inside it: each switch reads its record),
#      interleaved rounds, medians:
#        bare       not annotated, nothing attached
#        bare-ctx   annotated, nothing attached (the pair's own cost)
#        run        not annotated, under `perf-monitor run` (eBPF sources only)
#        run-ctx    annotated, under `perf-monitor run`: the programs read the record at each switch
#        otel       each trip an OpenTelemetry span (OTEP 4947, bench/otel_pingpong.c), nothing attached
#        run-otel   the same under `perf-monitor run`: the programs read the span at each switch
#   3. requests at 100,000 a second per CPU for 5 s under `perf-monitor run --format json`: how
#      many were reported, and how many polls were lost.
#   bench/context_overhead.sh [BUILD_DIR] [LOOPS] [ROUNDS]
set -euo pipefail
build=${1:-build}
loops=${2:-200000}
rounds=${3:-5}
pm="$build/perf-monitor"
cb="$build/bench/context_bench"
op="$build/bench/otel_pingpong"
printf '[pmc]\nenabled = false\n' > /tmp/pm-bench-kernel.toml

echo "-- the annotation pair, ns (10,000,000 each)"
echo "bare:      $("$cb" pairs 10000000 | paste -sd' ')"
echo "attached:  $("$pm" --config /tmp/pm-bench-kernel.toml run --output /dev/null -- "$cb" pairs 10000000 | paste -sd' ')"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
us() { awk '/usecs\/op/ {print $1}'; }
declare -A results
for ((r = 0; r < rounds; r++)); do
  results[bare]+="$("$cb" pingpong "$loops" 0 | us) "
  results[bare-ctx]+="$("$cb" pingpong "$loops" 1 | us) "
  results[run]+="$("$pm" --config /tmp/pm-bench-kernel.toml run --output /dev/null -- "$cb" pingpong "$loops" 0 | us) "
  results[run-ctx]+="$("$pm" --config /tmp/pm-bench-kernel.toml run --output /dev/null -- "$cb" pingpong "$loops" 1 | us) "
  results[otel]+="$("$op" "$loops" 1 | us) "
  results[run-otel]+="$("$pm" --config /tmp/pm-bench-kernel.toml run --output /dev/null -- "$op" "$loops" 1 | us) "
done
echo "-- a ping-pong on one CPU whose every trip is a poll ($loops trips, median of $rounds)"
bare=$(echo ${results[bare]} | tr ' ' '\n' | median)
printf '%-10s %10s %10s\n' config usecs/op slowdown
for c in bare bare-ctx run run-ctx otel run-otel; do
  m=$(echo ${results[$c]} | tr ' ' '\n' | median)
  printf '%-10s %10s %10.3f\n' "$c" "$m" "$(echo "$m / $bare" | bc -l)"
done

echo "-- 100,000 requests a second per CPU for 5 s"
out=$(mktemp)
"$pm" --config /tmp/pm-bench-kernel.toml run --format json --output "$out" -- "$cb" rate 100000 5
python3 - "$out" <<'PY'
import json, sys
spans = polls = lost = dropped = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "span" and "polls" in r:
        spans += 1
    if r.get("type") == "summary":
        p = r.get("probe", {})
        polls, lost, dropped = p.get("context_polls", 0), p.get("context_polls_lost", 0), p.get("context_events_dropped", 0)
print(f"requests reported {spans}, polls read {polls:.0f}, polls lost {lost:.0f}, kernel events dropped {dropped:.0f}")
PY
rm -f "$out"
