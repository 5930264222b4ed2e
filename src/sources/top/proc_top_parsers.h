// SPDX-License-Identifier: Apache-2.0
// Pure parsers for the per-task /proc files the top lists read without eBPF (proc_top_source.h),
// and for a cgroup's cpu.stat: string_view in, struct or error out, so tests feed them captured
// files and the fuzzers anything (fuzz/proc_parsers_fuzz.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace pm {

// /proc/PID/stat and status: procfs::parse_pid_stat and parse_pid_status (sources/files).

// /proc/PID/schedstat: the task's time on a CPU and waiting on a run queue (ns), its timeslices.
// A task's only (for /proc/PID: the main thread's), never its process's.
struct TaskSchedstat {
  uint64_t on_cpu_ns = 0, runq_ns = 0, timeslices = 0;
};
Result<TaskSchedstat> parse_task_schedstat(std::string_view text);

// /proc/PID/statm: resident pages (the second field).
std::optional<uint64_t> parse_statm_resident(std::string_view text);

// /proc/PID/cmdline: arguments separated by NULs, shown separated by spaces (trailing NULs and
// spaces dropped). Raw bytes: sanitized where shown. Empty for a kernel thread or a zombie.
std::string command_line(std::string_view raw);

// /proc/PID/cgroup: the unified hierarchy's path (the "0::" line), if any.
std::optional<std::string> unified_cgroup_of(std::string_view text);

// A cgroup's cpu.stat: usage_usec, in seconds.
std::optional<double> cpu_stat_usage_s(std::string_view text);

}  // namespace pm
