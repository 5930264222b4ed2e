#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cost per probed call, side by side in one run: a function called N times (bench/probe_target)
#   bare       nothing attached
#   floor      an empty uprobe + uretprobe pair on it (bpf_floor --probe)
#   probe      perf-monitor run --probe on it (probes only: counters and kernel sources off)
#   json       the same with --format json -o FILE (a JSON line per call: its spans_dropped is
#              reported, which must be 0)
#   all        perf-monitor run --probe, everything else on as well
#   export     the same as probe, with every span also exported (--otlp, to a local receiver
#              that takes every request) and the metrics pushed (--remote-write)
#   bpftrace   an equivalent bpftrace script: entry time per thread, latency histogram on return
# Each configuration runs ROUNDS times, interleaved; the median ns/call is reported, the cost a
# configuration adds per call (minus bare), and that cost over the floor's.
#   bench/probe_overhead.sh [BUILD_DIR] [CALLS] [ROUNDS]
set -euo pipefail
build=${1:-build}
calls=${2:-200000}
rounds=${3:-5}
pm="$build/perf-monitor"
floor="$build/bench/bpf_floor"
target="$(realpath "$build/bench/probe_target")"
fn=pm_bench_call

. "$(dirname "$0")/lib.sh"  # stop
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ulimit -l unlimited 2>/dev/null || true
printf '[pmc]\nenabled = false\n[scheduler]\nenabled = false\n[block_io]\nenabled = false\n' > /tmp/pm-probe-only.toml

jsonl="$(realpath "$build")/probe-overhead.jsonl"
# A receiver for the export row: reads each request whole, answers 200 (OTLP) or 204 (remote write).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$(dirname "$0")/push_receiver.py" "$port" &
receiver=$!
trap 'rm -f "$jsonl"; kill $receiver 2>/dev/null' EXIT
declare -A results
dropped=""
for ((r = 0; r < rounds; r++)); do
  results[bare]+="$("$target" "$calls") "

  "$floor" --probe "$target:$fn" > /dev/null & fpid=$!; sleep 1
  results[floor]+="$("$target" "$calls") "
  stop $fpid

  results[probe]+="$("$pm" --config /tmp/pm-probe-only.toml -o /dev/null run --probe "$target:$fn" -- "$target" "$calls" 2>/dev/null) "
  results[json]+="$("$pm" --config /tmp/pm-probe-only.toml --format json -o "$jsonl" run --probe "$target:$fn" -- "$target" "$calls" 2>/dev/null) "
  dropped+="$(tail -n 1 "$jsonl" | grep -o '"spans_dropped":[0-9]*' | cut -d: -f2) "
  results[all]+="$("$pm" -o /dev/null run --probe "$target:$fn" -- "$target" "$calls" 2>/dev/null) "
  results[export]+="$("$pm" --config /tmp/pm-probe-only.toml -o /dev/null --otlp "http://127.0.0.1:$port" \
    --remote-write "http://127.0.0.1:$port/api/v1/write" run --probe "$target:$fn" -- "$target" "$calls" 2>/dev/null) "

  if command -v bpftrace > /dev/null; then
    bpftrace -e "uprobe:$target:$fn { @s[tid] = nsecs; } uretprobe:$target:$fn /@s[tid]/ { @ns = hist(nsecs - @s[tid]); delete(@s[tid]); }" > /dev/null 2>&1 & bpid=$!
    sleep 4
    if kill -0 $bpid 2> /dev/null; then
      results[bpftrace]+="$("$target" "$calls") "
      stop $bpid
    fi
  fi
done

bare=$(echo ${results[bare]} | tr ' ' '\n' | median)
floor_m=$(echo ${results[floor]} | tr ' ' '\n' | median)
floor_cost=$(echo "$floor_m - $bare" | bc -l)
printf '%-10s %10s %14s %14s\n' config ns/call "added ns/call" "x floor"
for c in bare floor probe json all export bpftrace; do
  [ -n "${results[$c]:-}" ] || continue
  m=$(echo ${results[$c]} | tr ' ' '\n' | median)
  added=$(echo "$m - $bare" | bc -l)
  printf '%-10s %10.1f %14.1f %14.2f\n' "$c" "$m" "$added" "$(echo "$added / $floor_cost" | bc -l)"
done
echo "json: spans dropped per round: ${dropped% } (of $calls calls each)"
