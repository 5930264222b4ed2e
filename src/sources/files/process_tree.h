// SPDX-License-Identifier: Apache-2.0
// The target's whole process tree, followed through /proc: which processes belong to it, and the
// tree-wide totals of their CPU time, faults, I/O, context switches and memory.
//
// Counting without loss or double counting: /proc/PID/stat and /proc/PID/io of a process include
// the children it has reaped (cutime, cmin_flt, and the I/O the kernel folds into the parent at
// wait()). So the tree total is the sum over live members of those inclusive figures, plus, for a
// member that ended without a live member reaping it (reaped by us, by init or a subreaper), its
// final figures. A member whose parent is alive in the tree is absorbed by that parent.
// Context switches are per thread and never folded into a parent: a member's last figures are
// always kept when it ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/fd.h"
#include "core/file_reader.h"
#include "core/source.h"

namespace pm {

class ProcessTree final : public Source {
 public:
  explicit ProcessTree(std::string proc_root = "/proc");

  [[nodiscard]] std::string_view name() const override { return "process_tree"; }
  // Walks the tree for new children, reads every member and reports the tree totals.
  void collect(Samples& out) override;

  // Adds a process (and, on the next walk, its descendants). False when it is not readable.
  bool add_root(int pid);
  // A fork seen by the proc connector: the child joins when its parent is a member.
  void on_fork(int parent_tgid, int child_pid, int child_tgid);
  // A member is about to be reaped by us (it is a zombie): take its final figures now.
  void on_reaping(int pid);
  // A member exited (proc connector): read it while it may still be a zombie.
  void on_exit(int pid);
  // In `run` the monitor is a child subreaper: every child of `pid` besides the root is an
  // orphaned descendant of the tree, found by the walk even without fork notifications.
  void adopt_children_of(int pid) { adopter_ = pid; }

  // Live members, to pass a signal on to the whole tree.
  [[nodiscard]] std::vector<int> pids() const;
  // Why some figures are left out (files we may not read), empty when none are.
  [[nodiscard]] const std::string& denied() const { return denied_; }

  [[nodiscard]] size_t live() const { return members_.size(); }

 private:
  // Figures the kernel folds into the reaping parent (seconds and counts, inclusive of children).
  struct Inclusive {
    double user = 0, system = 0;
    double minflt = 0, majflt = 0;
    double rchar = 0, wchar = 0, read_bytes = 0, write_bytes = 0;
    void add(const Inclusive& o);
    void at_least(const Inclusive& o);
  };
  struct Own {
    double voluntary = 0, involuntary = 0;
  };
  struct Memory {
    double vm_size = 0, rss = 0, pss = 0, shared = 0, anon = 0, threads = 0;
  };
  struct Member {
    int pid = 0;
    int ppid = 0;
    uint64_t starttime = 0;
    bool zombie = false;
    // The costly files (smaps_rollup walks page tables: ~40 us) are read when the cheap RSS
    // from stat moved, and at least once a second; stat and io every pass.
    double rss_at_detail = -1;
    std::chrono::steady_clock::time_point detail_at;
    UniqueFd stat_fd, io_fd, children_fd;  // kept open: read again every pass
    Inclusive inc;
    Own own;
    Memory mem;
  };

  enum class ReadResult { kOk, kGone, kSkipped };
  enum class Detail { kIfChanged, kAlways };
  ReadResult read_member(Member& m, Detail detail = Detail::kAlways);
  void read_detail(Member& m, const std::string& base, int64_t threads);
  Result<std::string_view> read_kept(UniqueFd& fd, const std::string& path);
  void note_denied(const Error& e, const char* what);
  void children_of(Member& m, std::vector<int>& out);
  bool join(int pid, int ppid);
  void retire(const Member& m, bool absorbed_by_parent);

  std::string proc_;
  FileReader reader_;
  std::unordered_map<int, Member> members_;
  Inclusive exited_inc_;
  Own exited_own_;
  // The totals last reported: a pass is not atomic (a child reaped between the reads of its
  // parent and its own shows in neither), so totals never go below what was reported.
  Inclusive reported_inc_;
  Own reported_own_;
  int adopter_ = 0;
  std::string denied_;
  bool io_denied_ = false, smaps_denied_ = false;
  uint64_t seen_ = 0;
  double tick_seconds_;
  double page_size_;
  std::vector<int> scratch_;
};

}  // namespace pm
