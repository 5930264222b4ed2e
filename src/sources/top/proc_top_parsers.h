// SPDX-License-Identifier: Apache-2.0
// Pure parsers for the per-task /proc files the top lists read without eBPF (proc_top_source.h):
// string_view in, struct or error out, so tests feed them captured files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace pm {

// /proc/PID/stat or /proc/PID/task/TID/stat: what the top lists need of it. comm runs from the
// first '(' to the LAST ')' (a process names itself: spaces and ')' included).
struct TaskStat {
  std::string comm;
  char state = '?';
  int ppid = 0;
  uint64_t flags = 0;               // PF_* (PF_KTHREAD: a kernel thread)
  uint64_t minflt = 0, majflt = 0;  // a process's: all its threads', live and dead
  uint64_t utime = 0, stime = 0;    // clock ticks (USER_HZ), likewise
  int nice = 0;
  int64_t num_threads = 0;
  uint64_t starttime = 0;  // clock ticks after boot: with the PID, the task's identity
  [[nodiscard]] bool kernel_thread() const { return (flags & 0x00200000) != 0; }  // PF_KTHREAD
};
Result<TaskStat> parse_task_stat(std::string_view text);

// /proc/PID/schedstat: the task's time on a CPU and waiting on a run queue (ns), its timeslices.
// A task's only (for /proc/PID: the main thread's), never its process's.
struct TaskSchedstat {
  uint64_t on_cpu_ns = 0, runq_ns = 0, timeslices = 0;
};
Result<TaskSchedstat> parse_task_schedstat(std::string_view text);

// /proc/PID/status: the real uid and the task's own context switches (the main thread's for
// /proc/PID).
struct TaskStatus {
  std::optional<uint32_t> uid;
  uint64_t voluntary = 0, nonvoluntary = 0;
};
Result<TaskStatus> parse_task_status(std::string_view text);

// /proc/PID/statm: resident pages (the second field).
std::optional<uint64_t> parse_statm_resident(std::string_view text);

// /proc/PID/cmdline: arguments separated by NULs, shown separated by spaces (trailing NULs and
// spaces dropped). Raw bytes: sanitized where shown. Empty for a kernel thread or a zombie.
std::string command_line(std::string_view raw);

// /proc/PID/cgroup: the unified hierarchy's path (the "0::" line), if any.
std::optional<std::string> unified_cgroup_of(std::string_view text);

}  // namespace pm
