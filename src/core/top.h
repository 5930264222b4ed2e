// SPDX-License-Identifier: Apache-2.0
// Who is using the machine: the interval's busiest processes and cgroups (and threads), as the
// top source ranks them. Not metrics (a row per process would be unbounded for Prometheus):
// records beside the interval's, which sinks lay out as tables (text), arrays (JSON) or a
// full-screen view (`perf-monitor top`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/task_figures.h"

namespace pm {

enum class TopSort { kCpu, kRunq, kBlocked, kIo, kFaults, kMemory };

// One process's, thread's or cgroup's share of the interval: its task figures' increase (user
// and system time, run-queue wait, blocked time, storage I/O, faults, switches) and its memory now.
struct TopFigures : TaskFigures {
  std::optional<double> rss_bytes;  // now (absent: exited, or no memory of its own); a thread: its process's
  // Whether blocked time and storage I/O could be had (from /proc without root: never blocked
  // time, I/O only of one's own processes); a sum is known only where each part is.
  bool blocked_known = true, io_known = true;
  void add(const TopFigures& o);
  [[nodiscard]] double key(TopSort sort) const;
};

// The interval's figures from two readings of a task's (or process's) running totals: what each
// gained, the on-CPU time split in the ratio of the tick-sampled user and system times (all user
// when no tick fell in it), as the kernel splits it (cputime_adjust).
TopFigures top_delta(const TaskFigures& now, const TaskFigures& then);

struct TopProcess {
  int pid = 0;
  int tid = 0;  // threads view: the thread; else 0
  std::string comm;
  std::string cgroup;  // its cgroup's path, as shown (cut at the depth limit); empty: its cgroup is gone
  bool exited = false;  // ended within the interval: its last figures
  bool kernel = false;  // a kernel thread
  int ppid = 0;         // its parent process (0: not known)
  char state = 0;       // at the reading, as /proc/PID/stat says it (R S D Z T t I ...); 0: not read
  std::optional<uint32_t> uid;  // its real user
  std::string user;     // the uid's name (raw, from the user database), else the number
  std::optional<int> nice;
  std::string command;  // /proc/PID/cmdline, NULs as spaces (raw); empty: none (a kernel thread, gone)
  TopFigures f;
  uint64_t start_ns = 0;  // when it (the thread) began, CLOCK_MONOTONIC: with the PID, its identity
};

struct TopCgroup {
  std::string path;              // "/" for the root
  bool with_descendants = false;  // at the depth limit: its descendants' processes count here
  bool removed = false;           // its directory was gone at the reading (removed in the interval):
                                  // its own files could not be read, and never will be
  int processes = 0;              // with a task alive at the interval's end
  TopFigures f;
  // The cgroup's own files, where it has them (else absent, shown as n/a).
  std::optional<double> cpu_stat_s;        // cpu.stat usage in the interval (descendants always in)
  std::optional<double> cpu_pressure_pct;  // cpu.pressure some avg10
  std::optional<double> io_pressure_pct;
  std::optional<double> memory_pressure_pct;
  std::optional<double> runq_p50_s, runq_p99_s;  // its tasks' run-queue latency (eBPF)
  bool runq_read = false;  // timed: each of its cgroups holds a slot (no quantiles then: no waits)
};

// The interval's rows, every one: the sinks show the first `count` of each list by `sort`
// (top_first), the interactive view sorts them its own way.
struct TopRecord {
  double seconds = 0;  // the interval
  TopSort sort = TopSort::kCpu;
  int count = 10;                     // rows each list shows (<= 0: every one)
  std::vector<TopProcess> processes;  // alive at the reading or ended in the interval
  std::vector<TopProcess> threads;    // when asked for
  std::vector<TopCgroup> cgroups;     // with a process in it
  uint64_t exits_dropped = 0;         // deaths the kernel side had no room for, in the interval
  std::string note;                   // what these lists cannot show here and why (one line), else empty
};

// The first `count` rows by `sort` (<= 0: every row), busiest first; ties in the list's order.
// (A const list gives const rows.)
// Each key is worked out once, and only the first `count` are put in order (a thousand rows, ten
// shown).
template <class Rows>
auto top_first(Rows& rows, TopSort sort, int count) {
  struct Keyed {
    double key;
    size_t at;
    bool operator<(const Keyed& o) const { return key > o.key || (key == o.key && at < o.at); }
  };
  std::vector<Keyed> keyed;
  keyed.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) keyed.push_back({rows[i].f.key(sort), i});
  size_t n = count > 0 ? std::min(keyed.size(), static_cast<size_t>(count)) : keyed.size();
  std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(n), keyed.end());
  std::vector<decltype(&rows[0])> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(&rows[keyed[i].at]);
  return out;
}

const char* to_string(TopSort sort);
std::optional<TopSort> parse_top_sort(std::string_view s);
// Every sort key by name, for messages: "cpu, runq, blocked, io, faults or memory".
std::string top_sort_names();
// Every sort key by name.
std::vector<std::string> top_sort_list();

}  // namespace pm
