// SPDX-License-Identifier: Apache-2.0
// The scheduler's BPF object (bpf/scheduler.bpf.c), loaded once per session and shared by the
// sources that read it: the scheduler source (system-wide switches, wakeups, run-queue latency)
// and the kernel process tree (the target tree's exact accounting). Its task-storage map is the
// tree's membership, which the block I/O and probe objects reuse.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <linux/types.h>

#include "core/error.h"
#include "core/fd.h"
#include "core/task_figures.h"
#include "sources/kernel/bpf_load_options.h"

struct bpf_object;
struct pm_sched_counters;
struct pm_tree_stats;
struct pm_task;
struct pm_move;
struct pm_process_key;
struct pm_exited;

namespace pm {

// A kernel record's figures (pm_task.fig, pm_exited.fig, in ns and counts) in seconds and counts.
TaskFigures task_figures(const __u64* fig);

// One cgroup's run-queue latency, summed over the CPUs (log2 buckets in the histogram unit).
struct CgroupRunq {
  uint64_t cgroup_id = 0;
  uint64_t count = 0, ns = 0;
  std::vector<uint64_t> hist;
};

class SchedObject {
 public:
  // Fails (kUnavailable / kPermissionDenied) with the reason when the programs cannot load.
  static Result<std::shared_ptr<SchedObject>> load(const BpfLoadOptions& options);
  ~SchedObject();
  SchedObject(const SchedObject&) = delete;
  SchedObject& operator=(const SchedObject&) = delete;

  [[nodiscard]] bool btf() const;
  // It follows the target tree: asked for, and the typed programs loaded.
  [[nodiscard]] bool follows_tree() const;
  [[nodiscard]] int members_fd() const;
  // The typed programs' run-queue stamps (pm_runq_stamp by pid slot); -1 without them.
  [[nodiscard]] int runq_stamps_fd() const;
  // The clock as its switch program read it at the last switch, per CPU (pm_switch_clock).
  [[nodiscard]] int switch_clock_fd() const;
  // The programs its typed switch program ends in (bpf/switch_chain.bpf.h), else -1.
  [[nodiscard]] int switch_chain_fd() const;
  [[nodiscard]] bpf_object* object() const;

  // Makes every task of these processes a member, and the children they fork from now on.
  // Returns how many of the processes were found and marked.
  Result<size_t> seed(const std::vector<int>& tgids);
  // The live members, one record per task, read through the task iterator.
  Status read_live(std::vector<pm_task>& out);
  // Every live task (track_all), one record each.
  Status read_all(std::vector<pm_task>& out);
  // The final figures of the processes whose tasks died since the last call, per process (taken:
  // each death is handed over once).
  void take_exited(std::vector<std::pair<pm_process_key, pm_exited>>& out);
  // The v2 cgroups made since the last call: id and path (taken).
  void take_made_cgroups(std::vector<std::pair<uint64_t, std::string>>& out);
  // The processes moved between v2 cgroups since the last call, in the order they moved (taken).
  void take_moves(std::vector<pm_move>& out);
  // Run-queue latency per cgroup (cgroup_depth), running totals, one entry per cgroup that holds
  // a slot. Returns whether every cgroup seen so far got one (else those without are not timed:
  // their switch-ins count in top_losses().second).
  bool read_cgroup_runq(std::vector<CgroupRunq>& out) const;
  // Deaths that found no room in the exited map, and switch-ins of cgroups beyond the slots.
  [[nodiscard]] std::pair<uint64_t, uint64_t> top_losses() const;
  // Cgroup moves that found no room in the kernel's queue (their CPU then counts where the
  // process is at the reading).
  [[nodiscard]] uint64_t moves_dropped() const;
  [[nodiscard]] bool tracks_all() const;
  // Per-CPU slots (sized to the possible CPUs).
  bool read_counters(std::vector<pm_sched_counters>& per_cpu) const;
  bool read_tree(std::vector<pm_tree_stats>& per_cpu) const;
  // What the seeding passes marked so far, and the tasks they could not mark (no memory).
  [[nodiscard]] uint64_t seeded_tasks() const;
  [[nodiscard]] uint64_t seeded_processes() const;
  [[nodiscard]] uint64_t seed_failures() const;

  struct Impl;
  explicit SchedObject(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pm
