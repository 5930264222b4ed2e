#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak of what is kept per name and per cgroup (not CI): perf-monitor live with the Prometheus
# exporter, scraped every second, exporting process groups (--prometheus-processes '^x') while
# 20 processes rename themselves 20 times a second (each replaced by a new one every 30 s) and
# a cgroup is made every half second, given a busy process, and removed 2 s later. Prints, each
# minute, perf-monitor's RSS and the series it exports; fails if RSS grew by more than 4 MiB
# after the first minute.
#   SOAK_SECONDS=1800 SOAK_REPORT_SECONDS=60 bench/name_soak.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
seconds=${SOAK_SECONDS:-1800}
report=${SOAK_REPORT_SECONDS:-60}
pm="$build/perf-monitor"
[[ $(id -u) == 0 ]] || { echo "needs root (eBPF, cgroups)"; exit 2; }
if [[ -e /sys/fs/cgroup/unified/cgroup.procs ]]; then mount=/sys/fs/cgroup/unified
elif [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then mount=/sys/fs/cgroup
else echo "no cgroup v2 hierarchy"; exit 2; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
prefix="$mount/pm-soak-$$"

"$pm" --interval 1s --output /dev/null --prometheus "$port" --prometheus-processes '^x' --cgroup-depth 2 \
  2>/dev/null & pm_pid=$!
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  kill -INT $pm_pid 2>/dev/null || true
  for d in "$prefix"-*; do [[ -d $d ]] && { echo 1 > "$d/cgroup.kill" 2>/dev/null; rmdir "$d" 2>/dev/null; }; done
  true
}
trap cleanup EXIT

# The renamers: every name new ("x<k>-<n>"), each process replaced every 30 s.
python3 - <<'EOF' & pids+=($!)
import ctypes, os, time
libc = ctypes.CDLL(None)
def renamer(k):
    end = time.monotonic() + 30
    n = 0
    while time.monotonic() < end:
        libc.prctl(15, f"x{k}-{os.getpid()}-{n}".encode(), 0, 0, 0)
        n += 1
        time.sleep(0.05)
    os._exit(0)
kids = {}
while True:
    for k in range(20):
        if k not in kids:
            pid = os.fork()
            if pid == 0:
                renamer(k)
            kids[k] = pid
    pid, _ = os.wait()
    kids = {k: p for k, p in kids.items() if p != pid}
EOF

# The cgroup churn: one made every 0.5 s with a process in it (a little busy, then asleep: the
# machine stays usable), removed 2 s later.
(
  i=0
  while :; do
    d="$prefix-$i"
    mkdir "$d"
    ( echo $BASHPID > "$d/cgroup.procs"; for ((j = 0; j < 2000; j++)); do :; done; exec sleep 3 ) &
    ( sleep 2.2; echo 1 > "$d/cgroup.kill"; sleep 0.1; rmdir "$d" ) &
    i=$((i + 1))
    sleep 0.5
  done
) 2>/dev/null & pids+=($!)

scrape() { curl -s --max-time 2 "http://127.0.0.1:$port/metrics" || true; }
rss() { awk '/VmRSS/ {print $2}' /proc/$pm_pid/status; }
state() {
  local text
  text=$(scrape)
  printf '%5ss  rss %6s kB  series %5s (cgroup %4s, process group %4s)\n' "$1" "$(rss)" \
    "$(grep -vc '^#' <<< "$text")" "$(grep -c '^perf_monitor_cgroup_cpu_user_seconds_total' <<< "$text")" \
    "$(grep -c '^perf_monitor_process_group_cpu_user_seconds_total' <<< "$text")"
}

start=$SECONDS
rss_first=""
next=$report
while ((SECONDS - start < seconds)); do
  sleep 1
  scrape > /dev/null
  kill -0 $pm_pid 2>/dev/null || { echo "perf-monitor died"; exit 1; }
  t=$((SECONDS - start))
  if ((t >= next)); then
    state "$t"
    [[ -n $rss_first ]] || rss_first=$(rss)
    next=$((next + report))
  fi
done
rss_last=$(rss)
[[ -n $rss_first ]] || rss_first=$rss_last
echo "after the first report: RSS $rss_first -> $rss_last kB over $((SECONDS - start - report)) s"
((rss_last - rss_first < 4096)) || { echo "RSS grew by more than 4 MiB"; exit 1; }
echo "RSS within 4 MiB of the first report's"
exit 0
