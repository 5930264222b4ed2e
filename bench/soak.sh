#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak: perf-monitor live at a 100 ms interval with the Prometheus exporter scraped every second
# and a fork storm on the machine, for a long stretch (default 30 minutes). Prints its RSS, open
# files and missed ticks at the start (after a warm-up) and at the end, and fails if they grew.
#   bench/soak.sh [BUILD_DIR] [MINUTES]
set -euo pipefail
build=${1:-build}
minutes=${2:-30}
pm="$build/perf-monitor"
workload="$build/tests/pm-workload"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$pm" --interval 100ms --output /dev/null --prometheus "$port" 2>/dev/null & pm_pid=$!
trap 'kill $pm_pid $storm_pid 2>/dev/null || true' EXIT
# The storm: processes forked and exited as fast as the machine goes, PIDs reused many times over.
( while :; do "$workload" forks 2000 >/dev/null 2>&1; done ) & storm_pid=$!

scrape() { curl -s --max-time 2 "http://127.0.0.1:$port/metrics" || true; }
missed() { scrape | awk '/^perf_monitor_self_missed_ticks_total/ {print $2}'; }
state() {
  printf 'rss %s kB, open files %s, missed ticks %s, scrapes %s\n' \
    "$(awk '/VmRSS/ {print $2}' /proc/$pm_pid/status)" "$(ls /proc/$pm_pid/fd | wc -l)" "$(missed)" "$1"
}

sleep 10  # warm-up: sources loaded, buffers grown
rss0=$(awk '/VmRSS/ {print $2}' /proc/$pm_pid/status)
fds0=$(ls /proc/$pm_pid/fd | wc -l)
echo "start:  $(state 0)"
end=$((SECONDS + minutes * 60))
n=0
while ((SECONDS < end)); do
  scrape > /dev/null
  n=$((n + 1))
  sleep 1
  kill -0 $pm_pid 2>/dev/null || { echo "perf-monitor died"; exit 1; }
done
echo "end:    $(state $n)"
rss1=$(awk '/VmRSS/ {print $2}' /proc/$pm_pid/status)
fds1=$(ls /proc/$pm_pid/fd | wc -l)
kill -INT $pm_pid
wait $pm_pid || true
echo "over $minutes min: RSS $rss0 -> $rss1 kB, open files $fds0 -> $fds1"
((fds1 == fds0)) || { echo "open files grew"; exit 1; }
((rss1 - rss0 < 4096)) || { echo "RSS grew by more than 4 MiB"; exit 1; }
