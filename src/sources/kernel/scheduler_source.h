// The scheduler source: eBPF programs on sched_switch, sched_waking, sched_wakeup_new and
// sched_process_fork (tp_btf, raw_tp where BTF programs cannot attach) that count switches,
// wakeups and run-queue latency in per-CPU maps, system-wide and for the target's tree (whose
// processes the kernel side follows across fork).
#pragma once

#include <memory>
#include <vector>

#include "core/error.h"
#include "core/source.h"

namespace pm {

struct SchedulerTarget {
  bool track_tree = false;  // run/attach: also account the tree's on/off-CPU time
  std::vector<int> tgids;   // the tree's processes now; their future children join in the kernel
};

class SchedulerSource;
// Fails (Errc::kUnavailable / kPermissionDenied) with the reason when the programs cannot load.
Result<std::unique_ptr<SchedulerSource>> make_scheduler_source(const SchedulerTarget& target);

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
