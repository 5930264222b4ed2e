// SPDX-License-Identifier: Apache-2.0
// The target's process tree as the session sees it, whichever way it is measured: exactly, from
// the kernel's own per-task accounting (kernel_tree.h: eBPF), or, where eBPF cannot follow a
// tree, by walking /proc (proc_tree.h). Both report the same metrics (family process_tree), through
// TreeFigures, so the sinks cannot tell them apart, only the docs and `list` can.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/metric.h"
#include "core/source.h"
#include "core/task_figures.h"

namespace pm {

// A tree's running totals (counters, since it was first followed) and its current size.
struct TreeFigures {
  TaskFigures
      counters;  // exited members included; on-CPU, run-queue and blocked time and migrations only where has_times
  bool has_times = false;  // on-CPU, run-queue and blocked time are known
  bool io_known = true;    // I/O figures could be read for every member
  double processes_seen = 0;
  std::optional<double> not_followed;  // tasks the kernel could not follow (lost figures)
  // The tree now; absent while it has no live process.
  double processes = 0, threads = 0, vm_size = 0, rss = 0;
  std::optional<double> pss, shared, anon;
  // The largest PSS read is only a lower bound: the tree's memory peaked where no PSS pass was.
  bool pss_max_lower_bound = false;
  // The largest RSS any one member has had (kernel high-water marks), a floor for the run's
  // maximum RSS; 0 when unknown.
  double peak_rss = 0;
};

// Appends the figures as the process_tree family's samples.
void append_tree_samples(const TreeFigures& f, Samples& out);

// The tree's time split into user and system the way the kernel splits a task's (cputime_adjust):
// the exact total on-CPU time divided in the ratio of the tick-sampled user and system times, and
// never below what was reported before.
struct CpuSplit {
  double user_s = 0, system_s = 0;
  void update(double on_cpu_s, double user_ticks, double system_ticks);
};

class TreeSource : public Source {
 public:
  [[nodiscard]] std::string_view name() const override { return "process_tree"; }
  // Live processes, to pass a signal on to the whole tree.
  [[nodiscard]] virtual std::vector<int> pids() = 0;
  // A child of perf-monitor (a member) is a zombie about to be reaped: its last chance to be read.
  virtual void on_reaping(int /*pid*/) {}
  // The kernel's own figures of that child, given as it was reaped (wait4's rusage: the process
  // and every child it reaped, CPU time to the microsecond).
  struct Reaped {
    double user_s = 0, system_s = 0, minflt = 0, majflt = 0;
  };
  virtual void on_reaped(int /*pid*/, const Reaped& /*usage*/) {}
  // At the end, before the last reading: waits (briefly) until every task that has exited is
  // accounted for.
  virtual void settle() {}
  // Why some figures are left out (files we may not read), empty when none are.
  [[nodiscard]] virtual std::string denied() const { return {}; }
  // Fork/exit notifications read and dropped (the /proc fallback's proc connector), if any.
  struct Notifications {
    uint64_t read = 0, lost = 0;
  };
  [[nodiscard]] virtual std::optional<Notifications> notifications() const { return std::nullopt; }
  void report(EndReport& r) const override {
    if (!denied().empty()) r.unavailable.push_back({"process_tree", denied()});
    if (auto n = notifications()) r.notifications_lost += n->lost;
  }
};

}  // namespace pm
