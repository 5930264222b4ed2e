// SPDX-License-Identifier: Apache-2.0
// The target's process tree followed through /proc, where eBPF cannot follow it (no BTF, no
// permission to load programs): which processes belong to it (walks of each member's children,
// and fork notifications), and the tree-wide totals of their CPU time, faults, I/O, context
// switches and memory. Sampled: a process that lives and dies between two walks is missed.
//
// Counting without double counting: /proc/PID/stat and /proc/PID/io of a process include the
// children it has reaped (cutime, cmin_flt, and the I/O the kernel folds into the parent at
// wait()). So the tree total is the sum over live members of those inclusive figures, plus, for a
// member that ended without a member reaping it (reaped by perf-monitor, by init or a subreaper
// outside), its final figures. A member whose parent is or was a member was reaped by that
// parent, which holds its figures from then on, even once that parent is gone in turn.
// Context switches are per thread and never folded into a parent: a member's last figures are
// always kept when it ends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/fd.h"
#include "core/file_reader.h"
#include "sources/files/proc_events.h"
#include "sources/tree/pss_sampler.h"
#include "sources/tree/tree_source.h"

namespace pm {

class ProcTree final : public TreeSource {
 public:
  explicit ProcTree(std::string proc_root = "/proc");

  // Walks the tree for new children, reads every member and reports the tree totals.
  void collect(Samples& out) override;
  [[nodiscard]] std::vector<int> pids() override;
  void on_reaping(int pid) override;
  void on_reaped(int pid, const Reaped& usage) override;
  [[nodiscard]] std::string denied() const override;

  // Adds a process (and, on the next walk, its descendants). False when it is not readable.
  bool add_root(int pid);
  // A fork seen by the proc connector: the child joins when its parent is a member.
  void on_fork(int parent_tgid, int child_pid, int child_tgid);
  // A member exited (proc connector): read it while it may still be a zombie.
  void on_exit(int pid);
  // In `run` the monitor is a child subreaper: every child of `pid` besides the root is an
  // orphaned descendant of the tree, found by the walk even without fork notifications.
  void adopt_children_of(int pid) { adopter_ = pid; }
  // Learns of forks and exits the moment they happen (the kernel's proc connector); without it
  // (no CAP_NET_ADMIN, no CONFIG_PROC_EVENTS) only by walks, and the reason is returned.
  Status listen();
  [[nodiscard]] int wake_fd() const override { return events_ ? events_->fd() : -1; }
  void on_wake() override;
  [[nodiscard]] std::optional<Notifications> notifications() const override;

  [[nodiscard]] size_t live() const { return members_.size(); }

 private:
  struct Member {
    int pid = 0;
    int ppid = 0;
    uint64_t starttime = 0;
    bool zombie = false;
    double threads = 0, vm_size = 0, rss = 0, anon = 0;
    UniqueFd stat_fd, io_fd, children_fd;  // kept open: read again every pass
    // What the kernel folds into the reaping parent, children included (CPU time, faults, I/O),
    // and what it does not (context switches: the member's own).
    TaskFigures inc, own;
  };

  enum class ReadResult { kOk, kGone, kSkipped };
  ReadResult read_member(Member& m);
  void read_switches(Member& m, const std::string& base);
  Result<std::string_view> read_kept(UniqueFd& fd, const std::string& path);
  void children_of(Member& m, std::vector<int>& out);
  bool join(int pid, int ppid);
  void retire(const Member& m, bool absorbed_by_parent);
  [[nodiscard]] bool was_member(int pid, uint64_t started_before) const;

  std::string proc_;
  FileReader reader_;
  std::optional<ProcEvents> events_;
  std::unordered_map<int, Member> members_;
  std::unordered_map<int, uint64_t> ever_;  // every member's start time, by PID
  TaskFigures exited_inc_, exited_own_;
  // The totals last reported: a pass is not atomic (a child reaped between the reads of its
  // parent and its own shows in neither), so totals never go below what was reported.
  TaskFigures reported_;
  PssSampler pss_;
  int adopter_ = 0;
  std::string io_denied_;
  uint64_t seen_ = 0;
  double tick_seconds_;
  double page_size_;
  std::vector<int> scratch_;
};

}  // namespace pm
