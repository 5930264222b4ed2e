// SPDX-License-Identifier: Apache-2.0
#include "sources/tree/pss_sampler.h"

#include <fcntl.h>
#include <time.h>

#include <cerrno>

#include <algorithm>
#include <cmath>

#include "sources/files/proc_parsers.h"

namespace pm {
namespace {

// The same set of processes, in any order, gives the same fingerprint.
uint64_t fingerprint(const std::vector<PssSampler::Member>& members) {
  uint64_t f = members.size();
  for (const auto& m : members) {
    uint64_t x = static_cast<uint64_t>(m.pid) * 0x9E3779B97F4A7C15ULL;
    f += x ^ (x >> 29);
  }
  return f;
}

// While the tree's memory is at a new maximum, passes may cost this many times the budget.
constexpr double kPeakBudgets = 10;

double rss_sum(const std::vector<PssSampler::Member>& members) {
  double sum = 0;
  for (const auto& m : members) sum += m.rss_bytes;
  return sum;
}

// The calling thread's CPU time: what a pass costs the monitor (its wall time would count the
// time it was preempted, on a busy machine the larger part).
std::chrono::nanoseconds thread_cpu() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// Two RSS totals that differ by less than this are the same memory.
bool same_memory(double a, double b) { return std::abs(a - b) <= std::max(1024.0 * 1024.0, 0.02 * std::max(a, b)); }

}  // namespace

PssSampler::PssSampler(std::string proc_root, double cpu_budget) : proc_(std::move(proc_root)), budget_(cpu_budget) {}

Result<std::string_view> PssSampler::read_rollup(int pid) {
  // At most this many files stay open (a tree of tens of thousands reads the rest by path).
  constexpr size_t kKeptOpen = 4096;
  std::string path = proc_ + "/" + std::to_string(pid) + "/smaps_rollup";
  auto it = rollups_.find(pid);
  if (it == rollups_.end()) {
    if (rollups_.size() >= kKeptOpen) return reader_.read(path);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error::from_errno(errno, path);
    it = rollups_.emplace(pid, UniqueFd(fd)).first;
  }
  auto text = reader_.reread(it->second.get(), path.c_str());
  if (!text) rollups_.erase(it);  // gone: its PID may come back as another process
  return text;
}

bool PssSampler::due(const std::vector<Member>& members, Clock::time_point now) const {
  // Memory beyond what any kept pass saw is the run's maximum in the making: it gets a pass sooner
  // (within kPeakBudgets × the budget, one per 100 ms at most), or a short peak would be missed —
  // and so would the last few percent of one: a pass kept while 250 of 256 MiB were touched
  // would otherwise stand for the peak. Beyond the kernel counters' noise (their per-CPU
  // pending pages), 1 MiB or 0.5 %, is beyond it.
  double rss = rss_sum(members);
  if (have_ && rss > max_rss_ + std::max(1024.0 * 1024.0, 0.005 * max_rss_) && now >= next_allowed_peak_ &&
      now - last_pass_ >= std::chrono::milliseconds(100)) {
    return true;
  }
  if (now < next_allowed_) return false;
  if (!have_ || now - last_pass_ >= std::chrono::seconds(1)) return true;
  return fingerprint(members) != last_members_ || !same_memory(rss, last_rss_);
}

void PssSampler::update(const std::vector<Member>& members, Clock::time_point now) {
  if (!denied_.empty()) return;
  // The pass before: kept if its members and their memory are as they were when it began.
  if (pending_) {
    if (fingerprint(members) == last_members_ && same_memory(rss_sum(members), last_rss_)) {
      pss_ = pending_->pss;
      shared_ = pending_->shared;
      have_ = true;
      max_rss_ = std::max(max_rss_, last_rss_);
    } else {
      ++discarded_;  // memory moved while the pass ran: its members are not of one moment
    }
    pending_.reset();
  }
  if (!due(members, now)) return;
  auto t0 = thread_cpu();
  double pss = 0, shared = 0, rss = 0;
  for (const Member& m : members) {
    auto text = read_rollup(m.pid);
    if (!text) {
      if (text.error().code == Errc::kPermissionDenied) {
        denied_ = text.error().message + ": PSS and shared memory left out (run as root or with CAP_SYS_PTRACE)";
        return;
      }
      rss += m.rss_bytes;  // gone meanwhile: it would have counted what it had
      continue;
    }
    auto sm = procfs::parse_smaps_rollup(*text);
    if (!sm) continue;
    pss += static_cast<double>(sm->pss);
    shared += static_cast<double>(sm->shared());
    rss += static_cast<double>(sm->rss);
  }
  // Files of processes that are no longer members are closed.
  if (rollups_.size() > members.size()) {
    std::unordered_map<int, bool> member;
    for (const Member& m : members) member[m.pid] = true;
    for (auto it = rollups_.begin(); it != rollups_.end();) it = member.count(it->first) ? std::next(it) : rollups_.erase(it);
  }
  auto t1 = thread_cpu();
  ++passes_;
  // The budget: this pass's cost spread over the time until the next one.
  next_allowed_ = now + std::chrono::duration_cast<Clock::duration>((t1 - t0) / budget_);
  next_allowed_peak_ = now + std::chrono::duration_cast<Clock::duration>((t1 - t0) / (kPeakBudgets * budget_));
  cpu_ += t1 - t0;
  last_pass_ = now;
  last_members_ = fingerprint(members);
  last_rss_ = rss_sum(members);
  // Kept at once when smaps' own Rss agrees with the kernel's figures of just before (a small
  // tree, whose counters' pending pages are within the margin); else when the next update finds
  // the kernel's figures as they were.
  if (same_memory(rss, last_rss_)) {
    pss_ = pss;
    shared_ = shared;
    have_ = true;
    max_rss_ = std::max(max_rss_, last_rss_);
    return;
  }
  pending_ = Pending{pss, shared};
}

}  // namespace pm
