// SPDX-License-Identifier: Apache-2.0
#include "sources/tree/tree_source.h"

#include <algorithm>
#include <limits>

namespace pm {
namespace {

using K = MetricKind;
const MetricDesc kProcesses{
    "process_tree",  "processes", K::kGauge, Unit::kNone, "Live processes in the tree (zombies excluded)",
    "proc_processes"};
const MetricDesc kSeen{"process_tree",
                       "processes_seen",
                       K::kGauge,
                       Unit::kNone,
                       "Processes that have belonged to the tree so far (each fork counted once, whatever its PID)",
                       "proc_processes_seen"};
const MetricDesc kThreads{"process_tree", "threads", K::kGauge, Unit::kNone, "Threads in the tree", "proc_threads"};
const MetricDesc kVmSize{
    "process_tree", "vm_size_bytes", K::kGauge, Unit::kBytes, "Sum of the members' virtual memory sizes",
    "proc_vm_size"};
const MetricDesc kRss{"process_tree",
                      "rss_bytes",
                      K::kGauge,
                      Unit::kBytes,
                      "Sum of the members' RSS (pages shared between members count once per member); its run "
                      "maximum is never below the largest peak RSS of any one member (the kernel's high-water mark)",
                      "proc_rss"};
const MetricDesc kPss{"process_tree",
                      "pss_bytes",
                      K::kGauge,
                      Unit::kBytes,
                      "Sum of the members' PSS: the tree's share of memory, shared pages split fairly",
                      "proc_pss"};
const MetricDesc kShared{"process_tree",
                         "shared_bytes",
                         K::kGauge,
                         Unit::kBytes,
                         "Sum of the members' shared resident pages (Shared_Clean + Shared_Dirty)",
                         "proc_shared"};
const MetricDesc kAnon{
    "process_tree", "anon_bytes", K::kGauge, Unit::kBytes, "Sum of the members' anonymous resident memory",
    "proc_anon"};
const MetricDesc kUser{"process_tree",
                       "cpu_user_seconds",
                       K::kCounter,
                       Unit::kSeconds,
                       "CPU time in user mode, exited members included",
                       "proc_cpu_user_seconds"};
const MetricDesc kSystem{"process_tree",
                         "cpu_system_seconds",
                         K::kCounter,
                         Unit::kSeconds,
                         "CPU time in kernel mode, exited members included",
                         "proc_cpu_system_seconds"};
const MetricDesc kMinflt{
    "process_tree",     "minor_faults", K::kCounter, Unit::kNone, "Minor page faults, exited members included",
    "proc_minor_faults"};
const MetricDesc kMajflt{
    "process_tree",     "major_faults", K::kCounter, Unit::kNone, "Major page faults, exited members included",
    "proc_major_faults"};
const MetricDesc kVcsw{"process_tree",
                       "voluntary_switches",
                       K::kCounter,
                       Unit::kNone,
                       "Voluntary context switches (the task blocked)",
                       "proc_voluntary_switches"};
const MetricDesc kIvcsw{"process_tree",
                        "involuntary_switches",
                        K::kCounter,
                        Unit::kNone,
                        "Involuntary context switches (the task was preempted)",
                        "proc_involuntary_switches"};
const MetricDesc kReadBytes{
    "process_tree",      "io_read_bytes", K::kCounter, Unit::kBytes, "Bytes the tree caused to be read from storage",
    "proc_io_read_bytes"};
const MetricDesc kWriteBytes{
    "process_tree",       "io_write_bytes", K::kCounter, Unit::kBytes, "Bytes the tree caused to be written to storage",
    "proc_io_write_bytes"};
const MetricDesc kRchar{"process_tree",
                        "io_rchar_bytes",
                        K::kCounter,
                        Unit::kBytes,
                        "Bytes the tree read with read()-like calls (cache hits included)",
                        "proc_io_rchar"};
const MetricDesc kWchar{
    "process_tree", "io_wchar_bytes", K::kCounter, Unit::kBytes, "Bytes the tree wrote with write()-like calls",
    "proc_io_wchar"};
const MetricDesc kOnCpu{
    "process_tree",       "on_cpu_seconds", K::kCounter, Unit::kSeconds, "Time the tree's tasks ran (to the ns)",
    "proc_on_cpu_seconds"};
const MetricDesc kRunq{"process_tree",
                       "runq_wait_seconds",
                       K::kCounter,
                       Unit::kSeconds,
                       "Time the tree's tasks were runnable, waiting for a CPU",
                       "proc_runq_wait_seconds"};
const MetricDesc kBlocked{"process_tree",
                          "blocked_seconds",
                          K::kCounter,
                          Unit::kSeconds,
                          "Time the tree's tasks were neither running nor runnable (sleep, I/O, locks, stopped)",
                          "proc_blocked_seconds"};
const MetricDesc kNotFollowed{"process_tree",
                              "tasks_not_followed",
                              K::kCounter,
                              Unit::kNone,
                              "Tasks forked by the tree that the kernel could not follow (out of memory): their "
                              "figures are missing",
                              "proc_tasks_not_followed"};

}  // namespace

void TreeCounters::at_least(const TreeCounters& o) {
  auto up = [](double& a, double b) { a = std::max(a, b); };
  up(user_s, o.user_s);
  up(system_s, o.system_s);
  up(minor_faults, o.minor_faults);
  up(major_faults, o.major_faults);
  up(voluntary, o.voluntary);
  up(involuntary, o.involuntary);
  up(read_bytes, o.read_bytes);
  up(write_bytes, o.write_bytes);
  up(rchar, o.rchar);
  up(wchar, o.wchar);
  up(on_cpu_s, o.on_cpu_s);
  up(runq_s, o.runq_s);
  up(blocked_s, o.blocked_s);
}

void CpuSplit::update(double on_cpu_s, double user_ticks, double system_ticks) {
  if (user_s + system_s >= on_cpu_s) return;  // nothing new to split
  double stime = system_ticks == 0  ? 0
                 : user_ticks == 0 ? on_cpu_s
                                   : on_cpu_s * system_ticks / (user_ticks + system_ticks);
  stime = std::max(stime, system_s);
  double utime = on_cpu_s - stime;
  if (utime < user_s) {
    utime = user_s;
    stime = on_cpu_s - utime;
  }
  user_s = utime;
  system_s = stime;
}

void append_tree_samples(const TreeFigures& f, Samples& out) {
  auto add = [&](const MetricDesc& d, double v) { out.push_back({&d, {}, v}); };
  const TreeCounters& c = f.counters;
  add(kSeen, f.processes_seen);
  // An empty tree (before exec, after the end) has no size: reporting zeros would make every
  // minimum zero.
  if (f.processes > 0) {
    add(kProcesses, f.processes);
    add(kThreads, f.threads);
    add(kVmSize, f.vm_size);
    Sample rss{&kRss, {}, f.rss};
    rss.peak = f.peak_rss;
    out.push_back(std::move(rss));
    if (f.pss) add(kPss, *f.pss);
    if (f.shared) add(kShared, *f.shared);
    if (f.anon) add(kAnon, *f.anon);
  } else if (f.peak_rss > 0) {
    // No member alive to read, but the peaks of those that were raise the run's maximum.
    Sample rss{&kRss, {}, std::numeric_limits<double>::quiet_NaN()};
    rss.peak = f.peak_rss;
    out.push_back(std::move(rss));
  }
  add(kUser, c.user_s);
  add(kSystem, c.system_s);
  add(kMinflt, c.minor_faults);
  add(kMajflt, c.major_faults);
  add(kVcsw, c.voluntary);
  add(kIvcsw, c.involuntary);
  if (f.io_known) {  // partial sums would pass for totals
    add(kReadBytes, c.read_bytes);
    add(kWriteBytes, c.write_bytes);
    add(kRchar, c.rchar);
    add(kWchar, c.wchar);
  }
  if (f.has_times) {
    add(kOnCpu, c.on_cpu_s);
    add(kRunq, c.runq_s);
    add(kBlocked, c.blocked_s);
  }
  if (f.not_followed) add(kNotFollowed, *f.not_followed);
}

}  // namespace pm
