#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What exporting costs perf-monitor, side by side in one run: a run whose thread context makes
# RATE requests a second per CPU for S seconds (bench/context_bench rate), each a span, under
# `perf-monitor run --format json` alone, with --otlp (spans and metrics to a local receiver that
# takes every request) and with --remote-write; perf-monitor's own CPU time (user + system, from
# its rusage), and the export's extra per 1,000 spans. Median of ROUNDS interleaved rounds.
#   bench/export_cost.sh [BUILD_DIR] [RATE] [SECONDS] [ROUNDS]
set -euo pipefail
build=${1:-build}
rate=${2:-20000}
secs=${3:-5}
rounds=${4:-3}
pm="$build/perf-monitor"
cb="$build/bench/context_bench"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A receiver that reads each request whole and answers 200 (OTLP) or 204 (remote write).
python3 "$(dirname "$0")/push_receiver.py" "$port" &
receiver=$!
trap 'kill $receiver 2>/dev/null' EXIT
sleep 0.5
cpu_of() {  # perf-monitor's own CPU seconds for one run: its rusage (which takes in the command
            # it reaped) less the command's, as perf-monitor's own summary counts it
  local out json
  out=$(mktemp)
  json=$(mktemp)
  /usr/bin/time -f '%U %S' -o "$out" "$pm" run --format json --output "$json" "$@" -- "$cb" rate "$rate" "$secs" > /dev/null 2>&1
  python3 - "$out" "$json" <<'PY'
import json, sys
total = sum(float(x) for x in open(sys.argv[1]).read().split()[-2:])
tree = 0.0
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r.get("type") == "summary":
        t = r.get("process_tree", {})
        tree = t.get("cpu_user_seconds", 0) + t.get("cpu_system_seconds", 0)
print(f"{total - tree:.3f}")
PY
  rm -f "$out" "$json"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A r
for ((i = 0; i < rounds; i++)); do
  r[none]+="$(cpu_of) "
  r[otlp]+="$(cpu_of --otlp "http://127.0.0.1:$port") "
  r[remote]+="$(cpu_of --remote-write "http://127.0.0.1:$port/api/v1/write") "
done
spans=$(python3 -c "import os; print($rate * $secs * (os.cpu_count() or 1))")
echo "-- $spans spans ($rate requests/s per CPU for $secs s), perf-monitor's CPU seconds (user + system, its command's excluded), median of $rounds"
none=$(echo ${r[none]} | tr ' ' '\n' | median)
for c in none otlp remote; do
  m=$(echo ${r[$c]} | tr ' ' '\n' | median)
  printf '%-8s %8.3f s   extra per 1,000 spans: %7.1f us\n' "$c" "$m" "$(echo "($m - $none) * 1000000 * 1000 / $spans" | bc -l)"
done
