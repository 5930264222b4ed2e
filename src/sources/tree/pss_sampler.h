// SPDX-License-Identifier: Apache-2.0
// The tree's proportional set size and shared memory, from every member's smaps_rollup.
//
// smaps_rollup walks page tables under the mmap lock (26 ms for a 4 GiB process here), so it is
// read in passes within a CPU budget: after a pass that cost t of CPU, the next waits t / budget;
// a tree at a new maximum of memory gets passes sooner, within 10 × the budget.
//
// A pass reads every member together and keeps each one's figures. A reading between passes
// (every tree pass, with the kernel's RSS of each member just read) is the sum over the members
// alive now of their PSS and shared memory as of the last pass, each never above the member's
// RSS now: a member that freed memory since shows no more than it has left, one that is gone
// shows nothing, one new since shows nothing until the next pass. So PSS is never above RSS in
// a reading, and may lag behind a tree that grows.
//
// A PSS that peaked between passes is missed: the largest reading is then a lower bound, and
// says so (pss_max_lower_bound) whenever the tree's largest RSS — sampled, or a member's kernel
// high-water mark — was never seen by a pass. The true peak PSS lies between that reading and
// the largest RSS (PSS is never above RSS).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/fd.h"
#include "core/file_reader.h"

namespace pm {

class PssSampler {
 public:
  using Clock = std::chrono::steady_clock;
  struct Member {
    int pid;
    double rss_bytes;  // as the kernel reported it just before the pass
    // Its address space's size: a change (an exec, a new mapping) is a new process for PSS.
    double vm_bytes = 0;
  };

  explicit PssSampler(std::string proc_root = "/proc", double cpu_budget = 0.005);
  // Reads a new pass when one is due (members or their RSS changed, or a second went by) and the
  // budget allows, then the reading for these members. `peak_rss`: the most RSS the tree is
  // known to have had between readings (kernel high-water marks), 0 when unknown.
  void update(const std::vector<Member>& members, Clock::time_point now, double peak_rss = 0);
  // The reading; absent before the first pass, or when a member's file may not be read.
  [[nodiscard]] std::optional<double> pss() const { return valid() ? std::optional(pss_) : std::nullopt; }
  [[nodiscard]] std::optional<double> shared() const { return valid() ? std::optional(shared_) : std::nullopt; }
  // The tree's largest RSS so far was not seen by any pass: the largest PSS is a lower bound.
  [[nodiscard]] bool max_lower_bound() const;
  // Why PSS is left out, empty when it is not.
  [[nodiscard]] const std::string& denied() const { return denied_; }
  // Passes read (for the benchmarks).
  [[nodiscard]] uint64_t passes() const { return passes_; }
  [[nodiscard]] std::chrono::nanoseconds cpu() const { return cpu_; }

 private:
  [[nodiscard]] bool valid() const { return have_ && denied_.empty(); }
  bool due(const std::vector<Member>& members, Clock::time_point now) const;
  void pass(const std::vector<Member>& members, Clock::time_point now);
  // A member's smaps_rollup, read through a file kept open from pass to pass (no path lookup,
  // no open; one whose process is gone answers ESRCH even if its PID is reused).
  Result<std::string_view> read_rollup(int pid);

  std::string proc_;
  double budget_;
  FileReader reader_;
  std::unordered_map<int, UniqueFd> rollups_;  // by PID, for the members of the last pass
  struct Figures {
    double pss = 0, shared = 0;
  };
  std::unordered_map<int, Figures> last_;  // by PID, each member's figures in the last pass
  uint64_t last_members_ = 0;              // which processes the last pass read (an order-free fingerprint)
  double last_rss_ = 0;                    // their RSS (the kernel's figures) just before it
  double max_rss_ = 0;                     // the most RSS (the kernel's figures) a pass has seen
  double run_max_rss_ = 0;                 // the most RSS the tree has had, as far as is known
  Clock::time_point last_pass_{}, next_allowed_{}, next_allowed_peak_{};
  double pss_ = 0, shared_ = 0;
  bool have_ = false;
  std::string denied_;
  uint64_t passes_ = 0;
  std::chrono::nanoseconds cpu_{0};
};

}  // namespace pm
