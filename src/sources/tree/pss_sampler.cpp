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

// The same set of processes, in any order, gives the same fingerprint (an exec makes another).
uint64_t fingerprint(const std::vector<PssSampler::Member>& members) {
  uint64_t f = members.size();
  for (const auto& m : members) {
    uint64_t x = (static_cast<uint64_t>(m.pid) ^ (static_cast<uint64_t>(m.vm_bytes) << 20)) * 0x9E3779B97F4A7C15ULL;
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
  if (it != rollups_.end()) {
    auto text = reader_.reread(it->second.get(), path.c_str());
    if (text && !text->empty()) return text;
    // Gone (its PID may come back as another process), or the file holds the mm it was opened
    // on, which an exec replaced (the command, once perf-monitor's held child): that one reads
    // as an error or nothing. Whatever has the PID now is opened anew.
    rollups_.erase(it);
  }
  if (rollups_.size() >= kKeptOpen) return reader_.read(path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::from_errno(errno, path);
  it = rollups_.emplace(pid, UniqueFd(fd)).first;
  return reader_.reread(it->second.get(), path.c_str());
}

bool PssSampler::due(const std::vector<Member>& members, Clock::time_point now) const {
  // Memory beyond what any pass saw is the run's maximum in the making: it gets a pass sooner
  // (within kPeakBudgets × the budget, one per 100 ms at most), or a short peak would be missed —
  // and so would the last few percent of one: a pass made while 250 of 256 MiB were touched
  // would otherwise stand for the peak. 1 MiB or 0.5 % is beyond it.
  double rss = rss_sum(members);
  if (have_ && rss > max_rss_ + std::max(1024.0 * 1024.0, 0.005 * max_rss_) && now >= next_allowed_peak_ &&
      now - last_pass_ >= std::chrono::milliseconds(100)) {
    return true;
  }
  if (now < next_allowed_) return false;
  if (!have_ || now - last_pass_ >= std::chrono::seconds(1)) return true;
  return fingerprint(members) != last_members_ || !same_memory(rss, last_rss_);
}

void PssSampler::pass(const std::vector<Member>& members, Clock::time_point now) {
  auto t0 = thread_cpu();
  last_.clear();
  for (const Member& m : members) {
    auto text = read_rollup(m.pid);
    if (!text) {
      if (text.error().code == Errc::kPermissionDenied) {
        denied_ = text.error().message + ": PSS and shared memory left out (run as root or with CAP_SYS_PTRACE)";
        return;
      }
      continue;  // gone meanwhile: it has no memory left to count
    }
    auto sm = procfs::parse_smaps_rollup(*text);
    if (!sm) continue;
    last_[m.pid] = {static_cast<double>(sm->pss), static_cast<double>(sm->shared())};
  }
  // Files of processes that are no longer members are closed.
  if (rollups_.size() > members.size()) {
    for (auto it = rollups_.begin(); it != rollups_.end();)
      it = last_.count(it->first) ? std::next(it) : rollups_.erase(it);
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
  max_rss_ = std::max(max_rss_, last_rss_);
  have_ = true;
}

void PssSampler::update(const std::vector<Member>& members, Clock::time_point now, double peak_rss) {
  if (!denied_.empty()) return;
  run_max_rss_ = std::max({run_max_rss_, rss_sum(members), peak_rss});
  if (due(members, now)) pass(members, now);
  if (!valid()) return;
  // Each member as of the last pass, never above what it has now (the kernel's RSS, read just
  // before): PSS and shared memory are parts of RSS.
  pss_ = shared_ = 0;
  for (const Member& m : members) {
    auto it = last_.find(m.pid);
    if (it == last_.end()) continue;
    pss_ += std::min(it->second.pss, m.rss_bytes);
    shared_ += std::min(it->second.shared, m.rss_bytes);
  }
}

bool PssSampler::max_lower_bound() const {
  return !have_ || (run_max_rss_ > max_rss_ && !same_memory(run_max_rss_, max_rss_));
}

}  // namespace pm
