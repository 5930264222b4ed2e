// SPDX-License-Identifier: Apache-2.0
// A cgroup v2 of its own for the command of `run`, so its whole tree can be ended at once
// (cgroup.kill) — by perf-monitor on a second Ctrl-C, or by a watchdog process when perf-monitor
// itself is killed (SIGKILL), so the tree never outlives it by accident.
//
// It is made below perf-monitor's own cgroup (its limits and accounting still apply to the
// command), on the unified hierarchy wherever it is mounted (/sys/fs/cgroup on a pure v2 host,
// /sys/fs/cgroup/unified on a hybrid one). Where there is none, or cgroup.kill is missing
// (Linux < 5.14), `run` works without it: then only the command itself (PR_SET_PDEATHSIG), not
// its descendants, ends with a killed perf-monitor.
#pragma once

#include <string>

#include "core/error.h"
#include "core/fd.h"

namespace pm {

class RunCgroup {
 public:
  static Result<RunCgroup> create();
  RunCgroup(RunCgroup&&) noexcept = default;
  RunCgroup& operator=(RunCgroup&&) noexcept = default;
  ~RunCgroup();

  [[nodiscard]] const std::string& path() const { return dir_; }
  // Moves a process into it (before it runs anything of its own).
  Status add(int pid) const;
  // Kills every process in it, those forking meanwhile included.
  Status kill() const;
  // At a normal end: processes the command left running (daemons, background jobs) go back to
  // perf-monitor's cgroup, and this one is removed.
  void dissolve();

  // Starts the watchdog: a process outside the tree that kills this cgroup if perf-monitor dies
  // without calling release(). Call before the command runs.
  Status watch();
  // perf-monitor ends normally: the watchdog leaves without killing anything.
  void release();

 private:
  RunCgroup(std::string dir, std::string parent) : dir_(std::move(dir)), parent_(std::move(parent)) {}
  std::string dir_, parent_;
  UniqueFd watchdog_;  // write end of the watchdog's pipe
};

}  // namespace pm
