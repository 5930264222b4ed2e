// SPDX-License-Identifier: Apache-2.0
#include "sources/tree/pss_sampler.h"

#include <time.h>

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

bool PssSampler::due(const std::vector<Member>& members, Clock::time_point now) const {
  // Memory beyond what any kept pass saw is the run's maximum in the making: it gets a pass (one
  // per 100 ms at most) whatever the budget, or a short peak would be missed.
  if (have_ && rss_sum(members) > 1.05 * max_rss_ && now - last_pass_ >= std::chrono::milliseconds(100)) return true;
  if (now < next_allowed_) return false;
  if (!have_ || now - last_pass_ >= std::chrono::seconds(1)) return true;
  return fingerprint(members) != last_members_ || !same_memory(rss_sum(members), last_rss_);
}

void PssSampler::update(const std::vector<Member>& members, Clock::time_point now) {
  if (!denied_.empty() || !due(members, now)) return;
  auto t0 = thread_cpu();
  double pss = 0, shared = 0, rss = 0;
  for (const Member& m : members) {
    auto text = reader_.read(proc_ + "/" + std::to_string(m.pid) + "/smaps_rollup");
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
  auto t1 = thread_cpu();
  ++passes_;
  // The budget: this pass's cost spread over the time until the next one.
  next_allowed_ = now + std::chrono::duration_cast<Clock::duration>((t1 - t0) / budget_);
  cpu_ += t1 - t0;
  last_pass_ = now;
  last_members_ = fingerprint(members);
  last_rss_ = rss_sum(members);
  if (!same_memory(rss, last_rss_)) {
    ++discarded_;  // memory moved while the pass ran: its members are not of one moment
    return;
  }
  pss_ = pss;
  shared_ = shared;
  have_ = true;
  max_rss_ = std::max(max_rss_, rss);
}

}  // namespace pm
