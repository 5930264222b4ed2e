// SPDX-License-Identifier: Apache-2.0
// The target tree measured exactly, from the kernel's own per-task accounting (eBPF, see
// bpf/scheduler.bpf.c): every task of the tree is marked when it is forked, its final figures
// are captured at its last switch, and the live ones are read through a task iterator. The
// tree's totals are the sum over its tasks, dead and alive, of their own figures: a process is
// never counted together with the children it reaped, a PID reused outside the tree is never a
// member, a thread that exits leaves its figures, and a process that lives 1 ms is counted.
// Memory: RSS and sizes from each process's mm (as statm); PSS from smaps_rollup (PssSampler).
#pragma once

#include <memory>
#include <vector>

#include "sources/kernel/sched_object.h"
#include "sources/tree/pss_sampler.h"
#include "sources/tree/tree_source.h"

struct pm_task;

namespace pm {

class KernelTree final : public TreeSource {
 public:
  // Seeds the tree with these processes (their tasks, and what they fork from now on). Fails
  // when none of them could be marked (all gone), or the object does not follow a tree.
  // With `new_tree` (run: the roots start with monitoring), the members' peak RSS bounds the
  // run's maximum RSS from below; attached to a running tree, their peaks may be older.
  // `may_be_empty`: a tree defined by its cgroup may have no process yet.
  static Result<std::unique_ptr<KernelTree>> create(std::shared_ptr<SchedObject> object, const std::vector<int>& roots,
                                                    bool new_tree, bool may_be_empty = false,
                                                    std::string proc_root = "/proc");
  ~KernelTree() override;

  void collect(Samples& out) override;
  [[nodiscard]] std::vector<int> pids() override;
  void settle() override;
  [[nodiscard]] std::string denied() const override { return pss_.denied(); }
  // Adds processes to the tree (attach: ones found after the first seeding).
  Result<size_t> add(const std::vector<int>& tgids);

  KernelTree(std::shared_ptr<SchedObject> object, bool new_tree, std::string proc_root);

 private:
  struct Reading;
  bool read(Reading& r);

  std::shared_ptr<SchedObject> object_;
  PssSampler pss_;
  bool new_tree_;
  std::vector<pm_task> live_;
  TaskFigures reported_;
  CpuSplit split_;
  double page_size_;
};

}  // namespace pm
