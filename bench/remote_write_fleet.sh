#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prometheus remote write, a fleet simulated on one machine: N perf-monitor instances in live mode,
# each with its own `instance` label, push to one Prometheus (Debian's, remote-write receiver on)
# over loopback for S seconds. Prints per instance CPU, RSS and bytes sent per minute, the
# series each has, whether any instance's series has a gap, and Prometheus's ingestion rate,
# and what that predicts for 1,000 hosts.
#   bench/remote_write_fleet.sh [BUILD_DIR] [INSTANCES] [SECONDS]
set -euo pipefail
build=${1:-build}
n=${2:-20}
secs=${3:-300}
pm="$build/perf-monitor"
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'global:\n  scrape_interval: 5s\nscrape_configs:\n  - job_name: prometheus\n    static_configs:\n      - targets: ["127.0.0.1:%s"]\n' "$port" > "$dir/prometheus.yml"
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" --web.listen-address="127.0.0.1:$port" \
  --web.enable-remote-write-receiver --log.level=warn > "$dir/prometheus.log" 2>&1 &
prom=$!
trap 'kill $prom 2>/dev/null; wait $prom 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/-/ready" > /dev/null && break; sleep 0.2; done
q() { curl -fsG "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(" ".join(x["value"][1] for x in r) if r else "none")'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

pids=()
for i in $(seq 1 "$n"); do
  "$pm" --output /dev/null --duration "${secs}s" --remote-write "http://127.0.0.1:$port/api/v1/write" \
    --remote-write-label "instance=fleet-$i" 2>> "$dir/pm.err" &
  pids+=($!)
done
sleep 5
declare -A t0
for p in "${pids[@]}"; do t0[$p]=$(ticks "$p"); done
start=$(date +%s.%N)
sleep $((secs - 8))
hz=$(getconf CLK_TCK)
elapsed=$(echo "$(date +%s.%N) - $start" | bc -l)
cpu=0 rss=0
for p in "${pids[@]}"; do
  cpu=$(echo "$cpu + ($(ticks "$p") - ${t0[$p]}) / $hz" | bc -l)
  rss=$((rss + $(awk '/VmRSS/ {print $2}' "/proc/$p/status")))
done
prom_rss=$(awk '/VmRSS/ {print $2}' "/proc/$prom/status")
for p in "${pids[@]}"; do wait "$p" || true; done
sleep 2
echo "-- $n instances, ${secs} s, live mode, 1 s intervals, one Prometheus on loopback"
printf 'per instance: CPU %.3f %% of one CPU, RSS %.1f MiB\n' "$(echo "100 * $cpu / $elapsed / $n" | bc -l)" \
  "$(echo "$rss / 1024 / $n" | bc -l)"
echo "per instance, bytes sent per minute (snappy): $(q "avg(rate(perf_monitor_self_export_sent_bytes_total{exporter=\"remote_write\",instance=~\"fleet-.*\"}[${secs}s])) * 60")"
echo "per instance, series: $(q "avg(count by (instance) ({__name__=~\"perf_monitor_.+\",instance=~\"fleet-.*\"}))")"
echo "instances with series: $(q "count(count by (instance) ({__name__=~\"perf_monitor_.+\",instance=~\"fleet-.*\"}))") of $n"
echo "requests per instance (min / max; about one a second expected): $(q "min(max_over_time(perf_monitor_self_export_requests_total{exporter=\"remote_write\",instance=~\"fleet-.*\"}[${secs}s]))") / $(q "max(max_over_time(perf_monitor_self_export_requests_total{exporter=\"remote_write\",instance=~\"fleet-.*\"}[${secs}s]))")"
echo "longest gap between an instance's samples (s): $(q "max(max_over_time((timestamp(perf_monitor_build_info{instance=~\"fleet-.*\"}) - timestamp(perf_monitor_build_info{instance=~\"fleet-.*\"} offset 1s))[${secs}s:1s]))")"
echo "samples not delivered (all instances): $(q "sum(max_over_time(perf_monitor_self_export_items_total{exporter=\"remote_write\",instance=~\"fleet-.*\",outcome!=\"sent\"}[${secs}s]))")"
ingest=$(q "sum(rate(prometheus_tsdb_head_samples_appended_total[$((secs - 10))s]))")
series=$(q "avg(count by (instance) ({__name__=~\"perf_monitor_.+\",instance=~\"fleet-.*\"}))")
bytes=$(q "avg(rate(perf_monitor_self_export_sent_bytes_total{exporter=\"remote_write\",instance=~\"fleet-.*\"}[${secs}s])) * 60")
echo "Prometheus: ingestion $ingest samples/s, RSS $((prom_rss / 1024)) MiB, head series $(q prometheus_tsdb_head_series)"
printf 'for 1,000 hosts: %.0f samples/s into the store, %.0f active series, %.1f MB/min on the wire\n' \
  "$(echo "1000 * $series" | bc -l)" "$(echo "1000 * $series" | bc -l)" "$(echo "$bytes * 1000 / 1000000" | bc -l)"
grep -v "not available here" "$dir/pm.err" | head -5 || true
