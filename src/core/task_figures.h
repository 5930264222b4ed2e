// SPDX-License-Identifier: Apache-2.0
// A task's figures, or a process's, a cgroup's or a tree's (their sum): the one type every source
// keeps them in, indexed like the kernel side's (bpf/tree.h, pm_task_figure), times in seconds,
// bytes and counts as they are. sources/kernel/sched_object.h converts the kernel's records.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

namespace pm {

// The same order as pm_task_figure (a static_assert where both are seen keeps them so).
enum class TaskFig : int {
  kOnCpu,  // time it ran (the kernel's exact sum_exec_runtime)
  kUser,   // user and system time: tick-sampled, or the on-CPU time split in their ratio
  kSystem,
  kRunq,       // runnable, waiting for a CPU
  kBlocked,    // neither running nor runnable
  kVoluntary,  // context switches: it blocked, it was preempted
  kInvoluntary,
  kMinorFaults,
  kMajorFaults,
  kRchar,  // bytes through read()- and write()-like calls (cache hits included)
  kWchar,
  kSyscr,  // read()- and write()-like calls
  kSyscw,
  kReadBytes,  // bytes it caused to be read from, written to storage
  kWriteBytes,
  kCancelledWriteBytes,
  kMigrations,  // moves to another CPU
  kTaskFigs
};

struct TaskFigures {
  std::array<double, static_cast<size_t>(TaskFig::kTaskFigs)> v{};

  double& operator[](TaskFig i) { return v[static_cast<size_t>(i)]; }
  double operator[](TaskFig i) const { return v[static_cast<size_t>(i)]; }

  void add(const TaskFigures& o) {
    for (size_t i = 0; i < v.size(); ++i) v[i] += o.v[i];
  }
  // Each figure at least o's: a running total never goes back (a reading that missed a task on
  // its way out, or a pass over /proc that is not atomic, never makes one smaller).
  void at_least(const TaskFigures& o) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::max(v[i], o.v[i]);
  }
  // What each figure gained since `then` (never negative).
  [[nodiscard]] TaskFigures since(const TaskFigures& then) const {
    TaskFigures d;
    for (size_t i = 0; i < v.size(); ++i) d.v[i] = v[i] > then.v[i] ? v[i] - then.v[i] : 0.0;
    return d;
  }
  void scale(double k) {
    for (double& x : v) x *= k;
  }

  [[nodiscard]] double user_s() const { return (*this)[TaskFig::kUser]; }
  [[nodiscard]] double system_s() const { return (*this)[TaskFig::kSystem]; }
  [[nodiscard]] double on_cpu_s() const { return (*this)[TaskFig::kOnCpu]; }
  [[nodiscard]] double runq_s() const { return (*this)[TaskFig::kRunq]; }
  [[nodiscard]] double blocked_s() const { return (*this)[TaskFig::kBlocked]; }
  [[nodiscard]] double read_bytes() const { return (*this)[TaskFig::kReadBytes]; }
  [[nodiscard]] double write_bytes() const { return (*this)[TaskFig::kWriteBytes]; }
  [[nodiscard]] double cpu_s() const { return (*this)[TaskFig::kUser] + (*this)[TaskFig::kSystem]; }
  [[nodiscard]] double faults() const { return (*this)[TaskFig::kMinorFaults] + (*this)[TaskFig::kMajorFaults]; }
  [[nodiscard]] double switches() const { return (*this)[TaskFig::kVoluntary] + (*this)[TaskFig::kInvoluntary]; }
  [[nodiscard]] double io_bytes() const { return (*this)[TaskFig::kReadBytes] + (*this)[TaskFig::kWriteBytes]; }
};

}  // namespace pm
