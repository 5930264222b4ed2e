// SPDX-License-Identifier: Apache-2.0
// Who is using the machine (live mode): every process's and cgroup's CPU by mode, run-queue
// wait, blocked time, storage I/O, faults, switches and RSS in each interval, from the kernel's
// own per-task counters — read for every live task by a BPF task iterator, and captured at the
// last switch of every task that dies, so a process that started and ended within the interval
// is still named (its name taken in the kernel, not looked up in /proc after it is gone).
//
// The busiest processes and cgroups (TopRecord) go beside the interval's record; per cgroup (to
// the depth limit) and per named process group, the figures are also metrics (families `cgroup`
// and `process_group`, bounded by --max-series), for Prometheus.
#pragma once

#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/source.h"
#include "core/top.h"
#include "sources/kernel/sched_object.h"
#include "sources/top/cgroup_names.h"

namespace pm {

struct TopInterval;

struct TopOptions {
  int count = 10;  // rows each list shows (the record has every row); <= 0: every row
  TopSort sort = TopSort::kCpu;
  int cgroup_depth = 2;     // cgroups deeper than this count for their ancestor at this depth
  bool threads = false;     // a threads list too
  std::optional<std::regex> process_groups;  // comm patterns exported per group (Prometheus)
  int max_series = 1000;    // cgroup and process-group rows exported at most
  uint64_t hist_unit_ns = 1000;  // the run-queue histograms' unit ([scheduler] histogram_unit)
};

class TopSource final : public Source {
 public:
  static Result<std::unique_ptr<TopSource>> create(std::shared_ptr<SchedObject> object, TopOptions options);
  ~TopSource() override;
  [[nodiscard]] std::string_view name() const override { return "top"; }
  void collect(Samples& out) override;
  void annotate(IntervalRecord& rec) override;

  struct State;
  TopSource(std::shared_ptr<SchedObject> object, TopOptions options, std::string mount);

 private:
  void add_details(TopRecord& rec);
  void append_series(const TopInterval& iv, Samples& out) const;

  std::shared_ptr<SchedObject> object_;
  TopOptions opts_;
  std::unique_ptr<State> state_;
};

}  // namespace pm
