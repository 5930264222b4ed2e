// SPDX-License-Identifier: Apache-2.0
// The counters source: perf_event_open counters for the whole system (one group set per CPU,
// totals and per CPU) or for the target's process tree (inherited by every child; in `run`
// enabled at exec), plus package-wide events such as energy, which always count system-wide.
#pragma once

#include <memory>
#include <vector>

#include "core/error.h"
#include "core/source.h"
#include "sources/counters/event_catalogue.h"

namespace pm::counters {

struct CountersTarget {
  // Empty: system-wide on every online CPU. Else the tasks to follow (a held child of `run`,
  // or every thread of an attached tree), each counted with inherit.
  std::vector<int> tids;
  bool enable_on_exec = false;
  // A cgroup directory (v2): every task in it, present and future, counted per CPU
  // (PERF_FLAG_PID_CGROUP); where the kernel refuses it, `tids` are counted instead.
  std::string cgroup_dir;
};

class CountersSource;

// Opens the counters. Fails (Errc::kUnavailable) only when no event at all can count; events
// that cannot are listed by unsupported().
Result<std::unique_ptr<CountersSource>> make_counters_source(const std::vector<EventSpec>& events,
                                                             const CountersTarget& target);

class CountersSource final : public Source {
 public:
  ~CountersSource() override;
  [[nodiscard]] std::string_view name() const override { return "pmc"; }
  void collect(Samples& out) override;
  [[nodiscard]] std::vector<RatioRule> ratios() const override;
  // Events that do not count on this host, each with the reason ("pmc.cycles": "...").
  [[nodiscard]] std::vector<Unavailable> unsupported() const;
  // Events that opened but never got onto the PMU so far (checked at the end of a run).
  [[nodiscard]] std::vector<Unavailable> not_counted() const;
  void report(EndReport& r) const override {
    for (Unavailable& u : not_counted()) r.unavailable.push_back(std::move(u));
  }
  // Whether an energy event counts (else powercap may stand in).
  [[nodiscard]] bool counts_energy() const;
  [[nodiscard]] size_t fds() const;

  struct Impl;
  explicit CountersSource(std::unique_ptr<Impl> impl);

 private:
  [[nodiscard]] bool never_counted(size_t i) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pm::counters
