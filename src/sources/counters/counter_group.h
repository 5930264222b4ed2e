// SPDX-License-Identifier: Apache-2.0
// perf_event_open counters, opened in groups so that ratios between them are consistent, and read
// with one read() per group (PERF_FORMAT_GROUP). Values are scaled by enabled/running time when
// the PMU multiplexes, as perf stat does.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/fd.h"
#include "sources/counters/event_catalogue.h"

namespace pm::counters {

// One counter's cumulative reading.
struct Reading {
  uint64_t raw = 0;
  uint64_t enabled_ns = 0, running_ns = 0;
  // The estimate of the full count: raw * enabled / running (raw when it ran all the time).
  // NaN when it never ran (the PMU had no room for it yet): unknown, not zero.
  [[nodiscard]] double scaled() const;
  [[nodiscard]] double running_fraction() const;
};

// What happened between two readings of one counter: scaling this (not the cumulative reading)
// gives each interval its own estimate, as perf stat -I does.
inline Reading operator-(const Reading& now, const Reading& before) {
  return {now.raw - before.raw, now.enabled_ns - before.enabled_ns, now.running_ns - before.running_ns};
}

// Where counters count.
struct Scope {
  int pid = -1;                 // -1: every task (system-wide, per CPU); else a task
  int cpu = -1;                 // -1: wherever the task runs; else this CPU
  bool inherit = false;         // follow the task's future children and threads
  bool enable_on_exec = false;  // count from the task's next exec (a held child of `run`)
  bool user_only = false;       // exclude the kernel (when perf_event_paranoid forbids it)
  int cgroup_fd = -1;           // >= 0: every task of this cgroup (PERF_FLAG_PID_CGROUP; needs a cpu)
};

// The counters of a list of events for one scope. Events that cannot be opened (no PMU, not
// permitted) are reported per event; the others are grouped: a member that does not fit in the
// current group starts a new one.
class CounterSet {
 public:
  static CounterSet open(const std::vector<EventSpec>& events, const Scope& scope);

  // Why event i could not be opened; nullopt when it counts.
  [[nodiscard]] const std::optional<Error>& failure(size_t i) const { return failures_[i]; }
  // Event i counts user space only: the kernel refused counting kernel code.
  [[nodiscard]] bool user_only(size_t i) const { return user_only_[i]; }
  [[nodiscard]] bool any_open() const { return !groups_.empty(); }
  // Reads every group; readings[i] is left untouched for events that failed. Errors only for
  // a failed read() of an open group.
  Status read(std::vector<Reading>& readings);
  [[nodiscard]] size_t fds() const;

 private:
  struct Group {
    UniqueFd leader;
    std::vector<UniqueFd> members;  // besides the leader
    std::vector<size_t> events;     // event index of the leader, then of each member, in order
    std::vector<uint64_t> buf;
  };
  std::vector<Group> groups_;
  std::vector<std::optional<Error>> failures_;
  std::vector<bool> user_only_;
};

// Opens one event (group_fd -1 for a new group). Exposed for `list`.
Result<UniqueFd> open_event(const EventSpec& e, const Scope& scope, int group_fd);

}  // namespace pm::counters
