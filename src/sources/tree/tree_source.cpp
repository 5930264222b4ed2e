// SPDX-License-Identifier: Apache-2.0
#include "sources/tree/tree_source.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/text_layout.h"

namespace pm {
namespace {

using K = MetricKind;

void tree_text(TextBlock& b);

// Faults and on-CPU time rank 1: perf's software counters of the tree count them too (rank 0).

const MetricDesc kProcesses = shown_by(tree_text, {"process_tree", "processes", K::kGauge, Unit::kNone,
                                                   "Live processes in the tree (zombies excluded)", "proc_processes"});
const MetricDesc kSeen =
    shown_by(tree_text, {"process_tree", "processes_seen", K::kGauge, Unit::kNone,
                         "Processes that have belonged to the tree so far (each fork counted once, whatever its PID)",
                         "proc_processes_seen"});
const MetricDesc kThreads =
    shown_by(tree_text, {"process_tree", "threads", K::kGauge, Unit::kNone, "Threads in the tree", "proc_threads"});
const MetricDesc kVmSize = shown_by(tree_text, {"process_tree", "vm_size_bytes", K::kGauge, Unit::kBytes,
                                                "Sum of the members' virtual memory sizes", "proc_vm_size"});
const MetricDesc kRss =
    shown_by(tree_text, {"process_tree", "rss_bytes", K::kGauge, Unit::kBytes,
                         "Sum of the members' RSS (pages shared between members count once per member); its run "
                         "maximum is never below the largest peak RSS of any one member (the kernel's high-water mark)",
                         "proc_rss"});
const MetricDesc kPss =
    shown_by(tree_text, {"process_tree", "pss_bytes", K::kGauge, Unit::kBytes,
                         "Sum of the members' PSS: the tree's share of memory, shared pages split fairly", "proc_pss"});
const MetricDesc kShared =
    shown_by(tree_text, {"process_tree", "shared_bytes", K::kGauge, Unit::kBytes,
                         "Sum of the members' shared resident pages (Shared_Clean + Shared_Dirty)", "proc_shared"});
const MetricDesc kAnon = shown_by(tree_text, {"process_tree", "anon_bytes", K::kGauge, Unit::kBytes,
                                              "Sum of the members' anonymous resident memory", "proc_anon"});
const MetricDesc kUser =
    shown_by(tree_text, {"process_tree", "cpu_user_seconds", K::kCounter, Unit::kSeconds,
                         "CPU time in user mode, exited members included", "proc_cpu_user_seconds"});
const MetricDesc kSystem =
    shown_by(tree_text, {"process_tree", "cpu_system_seconds", K::kCounter, Unit::kSeconds,
                         "CPU time in kernel mode, exited members included", "proc_cpu_system_seconds"});
const MetricDesc kMinflt =
    shown_by(tree_text, ranked(1, {"process_tree", "minor_faults", K::kCounter, Unit::kNone,
                                   "Minor page faults, exited members included", "proc_minor_faults"}));
const MetricDesc kMajflt =
    shown_by(tree_text, ranked(1, {"process_tree", "major_faults", K::kCounter, Unit::kNone,
                                   "Major page faults, exited members included", "proc_major_faults"}));
const MetricDesc kVcsw =
    shown_by(tree_text, {"process_tree", "voluntary_switches", K::kCounter, Unit::kNone,
                         "Voluntary context switches (the task blocked)", "proc_voluntary_switches"});
const MetricDesc kIvcsw =
    shown_by(tree_text, {"process_tree", "involuntary_switches", K::kCounter, Unit::kNone,
                         "Involuntary context switches (the task was preempted)", "proc_involuntary_switches"});
// The kernel's own count per task (se.nr_migrations), where the tree is followed in the kernel;
// perf's inherited cpu-migrations counter fills the same quantity otherwise (when counted).
const MetricDesc kMigrations = shown_by(
    tree_text, ranked(1, {"process_tree", "cpu_migrations", K::kCounter, Unit::kNone,
                          "Moves of the tree's tasks to another CPU, exited members included", "proc_cpu_migrations"}));
const MetricDesc kReadBytes =
    shown_by(tree_text, {"process_tree", "io_read_bytes", K::kCounter, Unit::kBytes,
                         "Bytes the tree caused to be read from storage", "proc_io_read_bytes"});
const MetricDesc kWriteBytes =
    shown_by(tree_text, {"process_tree", "io_write_bytes", K::kCounter, Unit::kBytes,
                         "Bytes the tree caused to be written to storage", "proc_io_write_bytes"});
const MetricDesc kRchar =
    shown_by(tree_text, {"process_tree", "io_rchar_bytes", K::kCounter, Unit::kBytes,
                         "Bytes the tree read with read()-like calls (cache hits included)", "proc_io_rchar"});
const MetricDesc kWchar = shown_by(tree_text, {"process_tree", "io_wchar_bytes", K::kCounter, Unit::kBytes,
                                               "Bytes the tree wrote with write()-like calls", "proc_io_wchar"});
const MetricDesc kOnCpu =
    shown_by(tree_text, ranked(1, {"process_tree", "on_cpu_seconds", K::kCounter, Unit::kSeconds,
                                   "Time the tree's tasks ran (to the ns)", "proc_on_cpu_seconds"}));
const MetricDesc kRunq =
    shown_by(tree_text, {"process_tree", "runq_wait_seconds", K::kCounter, Unit::kSeconds,
                         "Time the tree's tasks were runnable, waiting for a CPU", "proc_runq_wait_seconds"});
const MetricDesc kBlocked =
    shown_by(tree_text, {"process_tree", "blocked_seconds", K::kCounter, Unit::kSeconds,
                         "Time the tree's tasks were neither running nor runnable (sleep, I/O, locks, stopped)",
                         "proc_blocked_seconds"});
const MetricDesc kNotFollowed =
    shown_by(tree_text, {"process_tree", "tasks_not_followed", K::kCounter, Unit::kNone,
                         "Tasks forked by the tree that the kernel could not follow (out of memory): their "
                         "figures are missing",
                         "proc_tasks_not_followed"});

// Interval: tree     2 processes  5 threads  CPU 75.0% (user 50.0%, system 25.0%)  RSS 2.0 MiB ...
// Summary:  tree     3 processes seen, at most 2 at once, at most 5 threads
//                    cpu      user 1.000 s  system 0.500 s  (75.0% of one CPU)
//                    RSS      max    3.0 MiB  min    1.0 MiB   (one line per memory figure)
//                    ...
// A figure that was not read (PSS of another user's process, I/O without permission) is "n/a".
void tree_text(TextBlock& b) {
  using text_order::kTree;
  const Shown* user = b.take(kUser);
  const Shown* sys = b.take(kSystem);
  const Shown* vcsw = b.take(kVcsw);
  const Shown* ivcsw = b.take(kIvcsw);
  const Shown* migrations = b.take(kMigrations);
  const Shown* seen = b.take(kSeen);
  const Shown* procs = b.take(kProcesses);
  const Shown* threads = b.take(kThreads);
  const Shown* read = b.take(kReadBytes);
  const Shown* write = b.take(kWriteBytes);
  const Shown* rchar = b.take(kRchar);
  const Shown* wchar = b.take(kWchar);
  const Shown* minflt = b.take(kMinflt);
  const Shown* majflt = b.take(kMajflt);
  const Shown* on_cpu = b.take(kOnCpu);
  const Shown* runq = b.take(kRunq);
  const Shown* blocked = b.take(kBlocked);
  const Shown* not_followed = b.take(kNotFollowed);
  std::pair<const MetricDesc*, const char*> memory[] = {
      {&kRss, "RSS"}, {&kPss, "PSS"}, {&kShared, "shared"}, {&kAnon, "anon"}, {&kVmSize, "virtual"}};
  const Shown* mem[std::size(memory)];
  for (size_t i = 0; i < std::size(memory); ++i) mem[i] = b.take(*memory[i].first);
  auto value = [](const Shown* v) { return v != nullptr ? v->value : std::nan(""); };

  if (!b.summary()) {
    if (procs == nullptr && user == nullptr) return;  // nothing of the tree read yet
    // No live member (before exec, after the end): no size to show, only what the tree did.
    std::string s = procs != nullptr ? fmt::format("{} {}  {} threads", human_count(procs->value),
                                                   procs->value == 1 ? "process" : "processes",
                                                   human_count(value(threads)))
                                     : std::string("no live process");
    if (user != nullptr && sys != nullptr) {
      s += fmt::format("  CPU {} (user {}, system {})", percent(100 * (user->rate + sys->rate)),
                       percent(100 * user->rate), percent(100 * sys->rate));
    }
    if (runq != nullptr && blocked != nullptr) {
      // Time per second in a state: how many of the tree's tasks were in it, on average.
      s += fmt::format("  run queue {} tasks  blocked {} tasks", tasks_on_average(runq->rate),
                       tasks_on_average(blocked->rate));
    }
    for (size_t i = 0; i < 2; ++i) {  // RSS, PSS: the others are in the summary
      if (mem[i] != nullptr) s += fmt::format("  {} {}", memory[i].second, human_bytes(mem[i]->value));
    }
    if (read != nullptr && write != nullptr) {
      s += fmt::format("  storage read {}  write {}", bytes_per_s(read->rate), bytes_per_s(write->rate));
    }
    if (vcsw != nullptr && ivcsw != nullptr) s += "  switches " + per_s(vcsw->rate + ivcsw->rate);
    if (minflt != nullptr && majflt != nullptr) s += "  faults " + per_s(minflt->rate + majflt->rate);
    b.item(kTree, "tree", s);
    // Left for the summary: processes seen, syscall I/O, on-CPU time (the CPU above), not followed.
    return;
  }

  auto max_of = [](const Shown* v) { return v != nullptr ? v->max : std::nan(""); };
  // "1 process seen, at most 1 at once, at most 3 threads"; a peak never read is left out.
  auto things = [](double n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", human_count(n), n == 1 ? one : many);
  };
  std::string line = things(max_of(seen), "process seen", "processes seen");
  if (!std::isnan(max_of(procs))) line += fmt::format(", at most {} at once", human_count(max_of(procs)));
  if (!std::isnan(max_of(threads))) line += ", at most " + things(max_of(threads), "thread", "threads");
  b.item(kTree, "tree", line);
  if (user != nullptr && sys != nullptr) {
    double seconds = b.seconds();
    b.line(kTree + 1, "tree",
           fmt::format("{:<8} user {:.3f} s  system {:.3f} s  ({} of one CPU)", "cpu", user->value, sys->value,
                       percent(seconds > 0 ? 100 * (user->value + sys->value) / seconds : std::nan(""))));
  }
  if (on_cpu != nullptr) {
    b.line(kTree + 2, "tree",
           fmt::format("{:<8} on CPU {}  run queue {}  blocked {}", "time", human_time(on_cpu->value),
                       human_time(value(runq)), human_time(value(blocked))));
  }
  for (size_t i = 0; i < std::size(memory); ++i) {
    // A sampled maximum that may have missed the peak is a lower bound: "≥".
    bool at_least = mem[i] != nullptr && mem[i]->max_lower_bound && !std::isnan(mem[i]->max);
    b.line(kTree + 3 + static_cast<int>(i), "tree",
           fmt::format("{:<8} max {:>10}  min {:>10}", memory[i].second,
                       (at_least ? "≥ " : "") + human_bytes(max_of(mem[i])),
                       human_bytes(mem[i] != nullptr ? mem[i]->min : std::nan(""))));
  }
  b.line(kTree + 10, "tree",
         fmt::format("{:<8} storage read {}  write {} (when dirtied)   read() {}  write() {}", "io",
                     human_bytes(value(read)),
                     human_bytes(value(write)), human_bytes(value(rchar)), human_bytes(value(wchar))));
  b.line(kTree + 11, "tree",
         fmt::format("{:<8} minor {}  major {}", "faults", human_count(value(minflt)), human_count(value(majflt))));
  b.line(kTree + 12, "tree",
         fmt::format("{:<8} voluntary {}  involuntary {}{}", "switches", human_count(value(vcsw)),
                     human_count(value(ivcsw)),
                     migrations != nullptr ? "  CPU migrations " + human_count(migrations->value) : ""));
  if (not_followed != nullptr && not_followed->value > 0) {
    b.line(kTree + 19, "tree",
           fmt::format("note: {} tasks the kernel could not follow (out of memory): their figures are missing",
                       human_count(not_followed->value)));
  }
}
}  // namespace

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
  const TaskFigures& c = f.counters;
  using F = TaskFig;
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
    // Not read yet (the first pass is kept once the next reading says memory held still), or
    // not readable: NaN, shown as n/a and null, never as 0.
    Sample pss{&kPss, {}, f.pss.value_or(std::numeric_limits<double>::quiet_NaN())};
    pss.max_lower_bound = f.pss_max_lower_bound;
    out.push_back(std::move(pss));
    add(kShared, f.shared.value_or(std::numeric_limits<double>::quiet_NaN()));
    if (f.anon) add(kAnon, *f.anon);
  } else if (f.peak_rss > 0) {
    // No member alive to read, but the peaks of those that were raise the run's maximum.
    Sample rss{&kRss, {}, std::numeric_limits<double>::quiet_NaN()};
    rss.peak = f.peak_rss;
    out.push_back(std::move(rss));
    // ... and may say that no PSS pass saw that much memory.
    Sample pss{&kPss, {}, std::numeric_limits<double>::quiet_NaN()};
    pss.max_lower_bound = f.pss_max_lower_bound;
    out.push_back(std::move(pss));
  }
  add(kUser, c[F::kUser]);
  add(kSystem, c[F::kSystem]);
  add(kMinflt, c[F::kMinorFaults]);
  add(kMajflt, c[F::kMajorFaults]);
  add(kVcsw, c[F::kVoluntary]);
  add(kIvcsw, c[F::kInvoluntary]);
  if (f.io_known) {  // partial sums would pass for totals
    add(kReadBytes, c[F::kReadBytes]);
    add(kWriteBytes, c[F::kWriteBytes]);
    add(kRchar, c[F::kRchar]);
    add(kWchar, c[F::kWchar]);
  }
  if (f.has_times) {
    add(kOnCpu, c[F::kOnCpu]);
    add(kRunq, c[F::kRunq]);
    add(kBlocked, c[F::kBlocked]);
    add(kMigrations, c[F::kMigrations]);
  }
  if (f.not_followed) add(kNotFollowed, *f.not_followed);
}

}  // namespace pm
