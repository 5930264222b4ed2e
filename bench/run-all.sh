#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every benchmark and prints its figures: bench/run-all.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
build=${1:-build}
seconds=${2:-30}
echo "== sampling cost per pass (Google Benchmark)"
"$build/bench/sampling_bench" --benchmark_min_time=0.5
echo
echo "== Prometheus export: render one interval, serve one scrape (Google Benchmark)"
"$build/bench/prometheus_bench" --benchmark_min_time=0.5
echo
echo "== CPU of the whole perf-monitor process (rusage), ${seconds} s each"
"$build/bench/monitor_cpu" "$build/perf-monitor" "$build/tests/pm-workload" "$seconds"
echo
echo "== eBPF overhead on a pinned pipe ping-pong"
"$(dirname "$0")/sched_overhead.sh" "$build" 200000 5

echo
echo "== cost per probed call (uprobe + uretprobe), side by side"
"$(dirname "$0")/probe_overhead.sh" "$build" 200000 5

echo
echo "== thread context: the annotation pair, a ping-pong whose every trip is a poll, 100,000 requests/s per CPU"
"$(dirname "$0")/context_overhead.sh" "$build" 200000 5

echo
echo "== stacks: on-CPU sampling at 99 Hz (monitor CPU), off-CPU stacks on the ping-pong beside offcputime and perf record"
"$(dirname "$0")/stacks_overhead.sh" "$build" 20 100000 5

echo
echo "== Prometheus remote write: 20 instances pushing to one Prometheus for 5 minutes"
"$(dirname "$0")/remote_write_fleet.sh" "$build" 20 300

echo
echo "== export cost: perf-monitor's CPU per 1,000 spans with --otlp and --remote-write"
"$(dirname "$0")/export_cost.sh" "$build" 20000 5 3

echo
echo "== perf-monitor report: an hour of live recording at 1 s (3,600 intervals)"
"$build/bench/report_bench" "$build/perf-monitor" 10

echo
echo "== the end of a run with 62 probes: summary and exit after the command's"
"$build/bench/probe_end" "$build/perf-monitor" "$build/tests/pm-many-functions" 62 3

echo
echo "== --probe start-up: a 1,000-function Rust binary (both manglings) against a 1-function C one"
"$(dirname "$0")/probe_startup.sh" "$build" 7

echo
echo "== start-up: run -- true and list beside perf stat and bpftrace"
"$(dirname "$0")/startup.sh" "$build" 20

echo
echo "== live mode with 1,000 cgroups, one process each, beside --top 0"
"$(dirname "$0")/cgroup_cost.sh" "$build" 1000 10 5

# bench/first_run.sh (make run on a bare Debian 12 chroot, about 2 minutes, needs the Debian
# mirror) and bench/name_soak.sh (30 minutes) are run on their own.
