// SPDX-License-Identifier: Apache-2.0
// The scheduler source: eBPF programs on sched_switch, sched_waking, sched_wakeup_new and
// sched_process_fork (tp_btf, raw_tp where BTF programs cannot attach) that count switches,
// wakeups and run-queue latency in per-CPU maps, system-wide and for the target's tree (whose
// processes the kernel side follows across fork).
#pragma once

#include <memory>
#include <vector>

#include "core/error.h"
#include "core/source.h"
#include "sources/kernel/skeleton.h"

namespace pm {

class SchedulerSource;
// Fails (Errc::kUnavailable / kPermissionDenied) with the reason when the programs cannot load.
// With target.track_tree (run/attach) it also accounts the tree's on/off-CPU time.
Result<std::unique_ptr<SchedulerSource>> make_scheduler_source(const TreeTarget& target);

class SchedulerSource final : public Source {
 public:
  ~SchedulerSource() override;
  [[nodiscard]] std::string_view name() const override { return "scheduler"; }
  void collect(Samples& out) override;
  // Which attachment is in use: "tp_btf" or "raw_tp".
  [[nodiscard]] const char* attach_mode() const;

  struct Impl;
  explicit SchedulerSource(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pm
