// SPDX-License-Identifier: Apache-2.0
// The tree's proportional set size and shared memory, from every member's smaps_rollup.
//
// A member's PSS changes when any other process maps or unmaps the pages it shares, so members
// are never read one at a time as their own RSS moves (their stale values would add up to more
// than the tree has): a pass reads all of them together, and is kept at once if smaps' own Rss
// agrees with the kernel's RSS figures of just before it, else if the same members have the same
// RSS at the next update after it — the kernel's figures compared with the kernel's (the mm
// counters leave out each CPU's pending pages, a few hundred KiB a process: for a large tree of
// small processes they never agree with smaps' Rss) — else the last good pass stands.
// smaps_rollup walks page tables under the mmap lock (26 ms for a 4 GiB process here), so passes
// run within a CPU budget: after a pass that cost t of CPU, the next waits t / budget; a tree at
// a new maximum of memory gets passes sooner, within 10 × the budget.
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
  };

  explicit PssSampler(std::string proc_root = "/proc", double cpu_budget = 0.005);
  // Reads a new pass when one is due (members or their RSS changed, or a second went by) and the
  // budget allows.
  void update(const std::vector<Member>& members, Clock::time_point now);
  // The last coherent pass; absent before the first, or when a member's file may not be read.
  [[nodiscard]] std::optional<double> pss() const { return valid() ? std::optional(pss_) : std::nullopt; }
  [[nodiscard]] std::optional<double> shared() const { return valid() ? std::optional(shared_) : std::nullopt; }
  // Why PSS is left out, empty when it is not.
  [[nodiscard]] const std::string& denied() const { return denied_; }
  // Passes read and passes discarded because memory moved during them (for the benchmarks).
  [[nodiscard]] uint64_t passes() const { return passes_; }
  [[nodiscard]] uint64_t discarded() const { return discarded_; }
  [[nodiscard]] std::chrono::nanoseconds cpu() const { return cpu_; }

 private:
  [[nodiscard]] bool valid() const { return have_ && denied_.empty(); }
  bool due(const std::vector<Member>& members, Clock::time_point now) const;
  // A member's smaps_rollup, read through a file kept open from pass to pass (no path lookup,
  // no open; one whose process is gone answers ESRCH even if its PID is reused).
  Result<std::string_view> read_rollup(int pid);

  std::string proc_;
  double budget_;
  FileReader reader_;
  std::unordered_map<int, UniqueFd> rollups_;  // by PID, for the members of the last pass
  uint64_t last_members_ = 0;  // which processes the last pass read (an order-free fingerprint)
  double last_rss_ = 0;        // their RSS (the kernel's figures) just before it
  double max_rss_ = 0;  // the most RSS (the kernel's figures) of a kept pass: more is worth a pass soon
  // A pass read, waiting for the next update to say that memory did not move meanwhile.
  struct Pending {
    double pss = 0, shared = 0;
  };
  std::optional<Pending> pending_;
  Clock::time_point last_pass_{}, next_allowed_{}, next_allowed_peak_{};
  double pss_ = 0, shared_ = 0;
  bool have_ = false;
  std::string denied_;
  uint64_t passes_ = 0, discarded_ = 0;
  std::chrono::nanoseconds cpu_{0};
};

}  // namespace pm
