// SPDX-License-Identifier: Apache-2.0
// Starting the command of `run` without a race: the child is forked and held before exec until
// the monitor has registered its PID, then released.
#pragma once

#include <signal.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/fd.h"

namespace pm {

// What the command gets back of the state perf-monitor changed for itself.
struct ExecState {
  sigset_t mask;  // signal mask (the monitor blocks the signals it reads by signalfd)
  rlimit nofile;  // open-files limit (the monitor raises its own for large trees)
};

class HeldChild {
 public:
  // Forks a child that waits, then execs argv (searched in PATH) with `exec` restored and
  // SIGPIPE back to its default.
  static Result<HeldChild> spawn(const std::vector<std::string>& argv, const ExecState& exec);
  [[nodiscard]] int pid() const { return pid_; }
  // Lets the child exec. An error (kNotFound / kPermissionDenied) when exec failed; the child has
  // then exited with 127 and must still be reaped.
  Status release();

 private:
  HeldChild(int pid, UniqueFd go, UniqueFd err) : pid_(pid), go_(std::move(go)), err_(std::move(err)) {}
  int pid_;
  UniqueFd go_, err_;
};

// A pidfd: readable once the process has exited. Works for processes that are not our children.
Result<UniqueFd> open_pidfd(int pid);

}  // namespace pm
