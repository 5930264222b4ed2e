// SPDX-License-Identifier: Apache-2.0
#include "sources/counters/counter_group.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <limits>

#include "core/file_reader.h"
#include "core/text.h"

namespace pm::counters {

double Reading::scaled() const {
  if (running_ns == 0) return enabled_ns == 0 ? static_cast<double>(raw) : std::numeric_limits<double>::quiet_NaN();
  if (running_ns >= enabled_ns) return static_cast<double>(raw);
  return static_cast<double>(raw) * static_cast<double>(enabled_ns) / static_cast<double>(running_ns);
}

double Reading::running_fraction() const {
  if (enabled_ns == 0) return 1.0;
  return std::min(1.0, static_cast<double>(running_ns) / static_cast<double>(enabled_ns));
}

namespace {

constexpr uint64_t kReadFormat = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;

Error open_error(const EventSpec& e, int err) {
  std::string why;
  switch (err) {
    case ENOENT:
    case EOPNOTSUPP:
      why = e.kind == EventKind::kSoftware ? "not supported by this kernel"
                                           : "not supported: this host has no PMU that counts it (a VM without a "
                                             "virtual PMU, or another CPU model)";
      break;
    case EACCES:
    case EPERM:
      why = "permission denied: run as root or lower /proc/sys/kernel/perf_event_paranoid";
      break;
    case EMFILE:
      why = "too many open files: raise the limit (ulimit -n)";
      break;
    default:
      why = std::string("perf_event_open: ") + std::strerror(err);
  }
  return Error{err == EACCES || err == EPERM ? Errc::kPermissionDenied : Errc::kUnavailable, why};
}

}  // namespace

Result<UniqueFd> open_event(const EventSpec& e, const Scope& scope, int group_fd) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = e.type;
  attr.config = e.config;
  attr.config1 = e.config1;
  attr.config2 = e.config2;
  attr.read_format = kReadFormat;
  attr.inherit = scope.inherit ? 1 : 0;
  // The leader starts disabled and is enabled once its group is complete: a member added to a
  // running group is not scheduled onto the PMU until the group is next scheduled in, which on
  // a CPU context may be never. Members follow their leader.
  bool leader = group_fd < 0;
  attr.disabled = leader ? 1 : 0;
  attr.enable_on_exec = leader && scope.enable_on_exec ? 1 : 0;
  attr.exclude_kernel = scope.user_only ? 1 : 0;
  attr.exclude_hv = scope.user_only ? 1 : 0;
  for (;;) {
    unsigned long flags = PERF_FLAG_FD_CLOEXEC | (scope.cgroup_fd >= 0 ? PERF_FLAG_PID_CGROUP : 0);
    int pid = scope.cgroup_fd >= 0 ? scope.cgroup_fd : scope.pid;
    long fd = ::syscall(SYS_perf_event_open, &attr, pid, scope.cpu, group_fd, flags);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EINTR) return open_error(e, errno);
  }
}

namespace {

// Which group an event joins: the pairs whose ratio is reported share one (so the ratio is of
// counts taken over the same time), software events share one (they never multiplex), and any
// other hardware event counts alone, so one that cannot get onto the PMU takes nothing with it.
std::string group_key(const EventSpec& e, size_t index) {
  if (e.kind == EventKind::kSoftware) return "software";
  for (const auto& [a, b] : {std::pair{"cycles", "instructions"}, std::pair{"cache-references", "cache-misses"},
                             std::pair{"branch-instructions", "branch-misses"}}) {
    if (e.name == a || e.name == b) return a;
  }
  return "alone:" + std::to_string(index);
}

}  // namespace

CounterSet CounterSet::open(const std::vector<EventSpec>& events, const Scope& scope) {
  CounterSet set;
  set.failures_.resize(events.size());
  set.user_only_.resize(events.size());
  std::vector<std::string> group_of;  // key of each group in groups_
  for (size_t i = 0; i < events.size(); ++i) {
    std::string key = group_key(events[i], i);
    Group* g = nullptr;
    for (size_t k = group_of.size(); k-- > 0;) {
      if (group_of[k] == key) {
        g = &set.groups_[k];
        break;
      }
    }
    if (g != nullptr) {
      auto fd = open_event(events[i], scope, g->leader.get());
      if (fd) {
        g->members.push_back(std::move(*fd));
        g->events.push_back(i);
        continue;
      }
    }
    // No group yet, or this event does not fit the current one (full, or another PMU): it
    // leads a new group if it can be opened at all.
    auto fd = open_event(events[i], scope, -1);
    if (!fd && fd.error().code == Errc::kPermissionDenied && !scope.user_only) {
      // perf_event_paranoid may forbid counting the kernel: count user space, as perf stat's
      // ":u" does, and say so.
      Scope user = scope;
      user.user_only = true;
      fd = open_event(events[i], user, -1);
      set.user_only_[i] = fd.ok();
    }
    if (!fd) {
      set.failures_[i] = fd.error();
      continue;
    }
    Group ng;
    ng.leader = std::move(*fd);
    ng.events.push_back(i);
    set.groups_.push_back(std::move(ng));
    group_of.push_back(set.user_only_[i] ? "user:" + std::to_string(i) : key);
  }
  if (!scope.enable_on_exec) {  // else the task's exec enables them
    for (Group& g : set.groups_) ::ioctl(g.leader.get(), PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
  }
  return set;
}

Status CounterSet::read(std::vector<Reading>& readings) {
  for (Group& g : groups_) {
    // nr, time_enabled, time_running, then one value per counter.
    g.buf.resize(3 + g.events.size());
    size_t bytes = g.buf.size() * sizeof(uint64_t);
    ssize_t n;
    do {
      n = ::read(g.leader.get(), g.buf.data(), bytes);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return Error::from_errno(errno, "reading counters");
    if (static_cast<size_t>(n) != bytes || g.buf[0] != g.events.size()) {
      return make_error(Errc::kIo, "reading counters: short group read");
    }
    for (size_t k = 0; k < g.events.size(); ++k) {
      Reading& r = readings[g.events[k]];
      r.enabled_ns = g.buf[1];
      r.running_ns = g.buf[2];
      r.raw = g.buf[3 + k];
    }
  }
  return {};
}

size_t CounterSet::fds() const {
  size_t n = 0;
  for (const Group& g : groups_) n += 1 + g.members.size();
  return n;
}

}  // namespace pm::counters
