#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Overhead of the eBPF kernel sources on the scheduler's hottest path, side by side in one run:
# a pipe ping-pong pinned to one CPU (perf bench sched pipe: every op is 2 switches, 2 wakeups)
#   bare       nothing attached
#   floor      empty programs on the same hooks (bench/bpf_floor)
#   clock      the floor with one clock read per switch and per wakeup (bpf_floor --clock): the
#              least that timing run-queue waits on the wall clock costs, as runqlat and
#              perf-monitor do (the kernel's clock read is dear on some VMs: compare with it)
#   kernel     perf-monitor, live system-wide, eBPF sources only (scheduler + block I/O)
#   monitor    perf-monitor, live system-wide, everything on (adds perf counters on every CPU)
#   run        perf-monitor run -- the ping-pong: the tree followed exactly in the kernel
#              (eBPF sources only: membership checks, exit capture, the tree's run-queue waits)
#   run-all    the same with the defaults (the counters perf-monitor opens for a tree: where eBPF
#              follows it, only those its figures lack, e.g. cpu-migrations)
#   bpftrace   an equivalent bpftrace script: switches per CPU, wakeups, run-queue histogram
#   kernel-base, run-base, run-all-base   with BASE=OTHER_PERF_MONITOR: those for that binary (an
#              earlier build), interleaved with the rest, to compare two versions in one run
# Each configuration runs ROUNDS times, interleaved; the median usecs/op is reported with its
# slowdown against bare. For perf-monitor also its own CPU during the storm, and its peak RSS.
#   bench/sched_overhead.sh [BUILD_DIR] [LOOPS] [ROUNDS]
set -euo pipefail
build=${1:-build}
loops=${2:-200000}
rounds=${3:-5}
pm="$build/perf-monitor"
floor="$build/bench/bpf_floor"

# bpftrace's tracepoint probes need tracefs.
if ! mountpoint -q /sys/kernel/tracing; then mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true; fi
ulimit -l unlimited 2>/dev/null || true

pipe_us() { taskset -c 0 perf bench sched pipe -l "$loops" 2>/dev/null | awk '/usecs\/op/ {print $1}'; }
# The ping-pong as perf-monitor's command (run mode); the monitor's own output goes to /dev/null.
run_us() {
  "${bin:-$pm}" "$@" run --output /dev/null -- taskset -c 0 perf bench sched pipe -l "$loops" 2>/dev/null |
    awk '/usecs\/op/ {print $1}'
}
. "$(dirname "$0")/lib.sh"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

cat > /tmp/pm-bench.bt <<'BT'
tracepoint:sched:sched_switch {
  @switches[cpu] = count();
  if ((args->prev_state & 0xff) == 0) { @qtime[args->prev_pid] = nsecs; }
  if (@qtime[args->next_pid]) {
    @runq_us = hist((nsecs - @qtime[args->next_pid]) / 1000);
    delete(@qtime[args->next_pid]);
  }
}
tracepoint:sched:sched_wakeup { @wakeups = count(); @qtime[args->pid] = nsecs; }
tracepoint:sched:sched_wakeup_new { @wakeups = count(); @qtime[args->pid] = nsecs; }
BT

declare -A results
monitor_cpu=()
monitor_rss=0
monitor_hwm=0
printf '[pmc]\nenabled = false\n' > /tmp/pm-bench-kernel.toml
for ((r = 0; r < rounds; r++)); do
  results[bare]+="$(pipe_us) "

  "$floor" > /dev/null & fpid=$!; sleep 1
  results[floor]+="$(pipe_us) "
  kill -INT $fpid; wait $fpid || true

  "$floor" --clock > /dev/null & fpid=$!; sleep 1
  results[clock]+="$(pipe_us) "
  kill -INT $fpid; wait $fpid || true

  "$pm" --config /tmp/pm-bench-kernel.toml --output /dev/null 2>/dev/null & kpid=$!; sleep 1.5
  results[kernel]+="$(pipe_us) "
  kill -INT $kpid; wait $kpid || true

  "$pm" --output /dev/null 2>/dev/null & mpid=$!; sleep 1.5
  t0=$(ticks $mpid); s0=$(date +%s.%N)
  results[monitor]+="$(pipe_us) "
  t1=$(ticks $mpid); s1=$(date +%s.%N)
  monitor_cpu+=("$(echo "($t1 - $t0) / $(getconf CLK_TCK) / ($s1 - $s0) * 100" | bc -l)")
  rss=$(awk '/VmRSS/ {print $2}' /proc/$mpid/status)
  hwm=$(awk '/VmHWM/ {print $2}' /proc/$mpid/status)
  ((rss > monitor_rss)) && monitor_rss=$rss
  ((hwm > monitor_hwm)) && monitor_hwm=$hwm
  kill -INT $mpid; wait $mpid || true

  results[run]+="$(run_us --config /tmp/pm-bench-kernel.toml) "
  if [ -n "${BASE:-}" ]; then
    "$BASE" --config /tmp/pm-bench-kernel.toml --output /dev/null 2>/dev/null & kpid=$!; sleep 1.5
    results[kernel-base]+="$(pipe_us) "
    kill -INT $kpid; wait $kpid || true
    results[run-base]+="$(bin=$BASE run_us --config /tmp/pm-bench-kernel.toml) "
  fi
  results[run-all]+="$(run_us) "
  [ -n "${BASE:-}" ] && results[run-all-base]+="$(bin=$BASE run_us) "

  if command -v bpftrace > /dev/null; then
    bpftrace /tmp/pm-bench.bt > /dev/null 2>&1 & bpid=$!; sleep 4
    if kill -0 $bpid 2> /dev/null; then
      results[bpftrace]+="$(pipe_us) "
      stop $bpid
    fi
  fi
done

bare=$(echo ${results[bare]} | tr ' ' '\n' | median)
printf '%-10s %10s %10s\n' config usecs/op slowdown
for c in bare floor clock kernel kernel-base monitor run run-base run-all run-all-base bpftrace; do
  [ -n "${results[$c]:-}" ] || continue
  m=$(echo ${results[$c]} | tr ' ' '\n' | median)
  printf '%-10s %10s %10.3f\n' "$c" "$m" "$(echo "$m / $bare" | bc -l)"
done
cpu=$(printf '%s\n' "${monitor_cpu[@]}" | median)
printf 'perf-monitor during the storm (%s ops/s = %.0f switches/s): %.2f%% of one CPU, RSS %d KiB ' \
  "$(echo "1000000 / $bare" | bc)" "$(echo "2000000 / $bare" | bc -l)" "$cpu" "$monitor_rss"
printf '(peak %d KiB, while libbpf parses the kernel BTF at start-up)\n' "$monitor_hwm"

# What each program costs per run by the kernel's own count (kernel.bpf_stats_enabled:
# run_time_ns / run_cnt, as bpftop shows), over one pinned ping-pong each: far steadier than the
# ratios above, which the host moves by several per cent between runs.
prog_stats() {
  bpftool prog show 2> /dev/null | awk '/ name / {
    n = ""; t = 0; c = 0
    for (i = 1; i <= NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
    if (n ~ /switch|wakeup|waking/) print $1, n, t, c }' | sort
}
ns_per_run() {  # LABEL COMMAND...
  local label=$1; shift
  "$@" > /dev/null 2>&1 & local p=$!; sleep 1.5
  prog_stats > /tmp/pm-bench-stats.a
  pipe_us > /dev/null
  prog_stats > /tmp/pm-bench-stats.b
  kill -INT $p; wait $p || true
  join /tmp/pm-bench-stats.a /tmp/pm-bench-stats.b |
    awk -v l="$label" '$7 - $4 > 1000 {printf "  %-7s %-18s %7.1f\n", l, $2, ($6 - $3) / ($7 - $4)}'
}
stats_were=$(sysctl -n kernel.bpf_stats_enabled 2> /dev/null || echo 0)
if sysctl -qw kernel.bpf_stats_enabled=1 2> /dev/null; then
  echo "ns per run of each program over one pinned ping-pong (bpf_stats; the clock's own reads included):"
  ns_per_run floor "$floor"
  ns_per_run clock "$floor" --clock
  ns_per_run kernel "$pm" --config /tmp/pm-bench-kernel.toml --output /dev/null
  # What each part a switch program can be made of costs here, on top of the clock floor's
  # switch program (bpf_floor --part; floor.bpf.c says what each does).
  echo "ns per run of the clock floor's switch program doing one part more (part_switch less clock_switch: the part):"
  for part in task array regs user ring kstack; do
    ns_per_run "$part" "$floor" --part "$part" | grep part_switch || true
  done
  sysctl -qw kernel.bpf_stats_enabled="$stats_were"
fi
