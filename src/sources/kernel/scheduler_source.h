// SPDX-License-Identifier: Apache-2.0
// The scheduler source: eBPF programs on sched_switch, sched_wakeup and sched_wakeup_new (tp_btf,
// raw_tp where BTF programs cannot attach) that count switches, wakeups and run-queue latency in
// per-CPU maps, system-wide and, for the target's tree, its wakeups and run-queue latency (the
// tree's times and switches come from its exact per-task accounting: kernel/tree_source.h).
#pragma once

#include <memory>
#include <vector>

#include "core/error.h"
#include "core/source.h"
#include "sources/kernel/sched_object.h"

namespace pm {

class SchedulerSource;
// Reads the loaded object (loaded with count_system). The tree's figures come when it follows a
// tree.
std::unique_ptr<SchedulerSource> make_scheduler_source(std::shared_ptr<SchedObject> object, uint64_t hist_unit_ns);
// System-wide only, with an object of its own. Fails (Errc::kUnavailable / kPermissionDenied)
// with the reason when the programs cannot load.
Result<std::unique_ptr<SchedulerSource>> make_scheduler_source(uint64_t hist_unit_ns = 1000);

class SchedulerSource final : public Source {
 public:
  ~SchedulerSource() override;
  [[nodiscard]] std::string_view name() const override { return "scheduler"; }
  void collect(Samples& out) override;

  struct Impl;
  explicit SchedulerSource(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pm
