// SPDX-License-Identifier: Apache-2.0
#include "sources/kernel/scheduler_source.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/file_reader.h"
#include "core/text_layout.h"
#include "sources/kernel/skeleton.h"

#include <linux/types.h>

#include "scheduler.h"

namespace pm {
namespace {

using K = MetricKind;
constexpr double kMicro = 1e-6;  // run-queue buckets are log2 microseconds

void scheduler_text(TextBlock& b);
void tree_sched_text(TextBlock& b);

// Rank 2: the best of the three sources that count context switches (perf's software counter is
// 1, /proc/stat 0), with the voluntary/preempted split.
const MetricDesc kSwitches = shown_by(
    scheduler_text,
    ranked(2, {"scheduler", "context_switches", K::kCounter, Unit::kNone, "Context switches (sched_switch), per CPU"}));
const MetricDesc kVoluntary = shown_by(
    scheduler_text, {"scheduler", "voluntary_switches", K::kCounter, Unit::kNone, "Switches where the task blocked"});
const MetricDesc kInvoluntary = shown_by(scheduler_text, {"scheduler", "involuntary_switches", K::kCounter, Unit::kNone,
                                                          "Switches where the task was preempted while runnable"});
const MetricDesc kWakeups = shown_by(scheduler_text, {"scheduler", "wakeups", K::kCounter, Unit::kNone,
                                                      "Task wakeups (sched_wakeup, sched_wakeup_new)"});
const MetricDesc kRunq = shown_by(scheduler_text, {"scheduler",
                                                   "runq_latency_seconds",
                                                   K::kHistogram,
                                                   Unit::kSeconds,
                                                   "Run-queue latency: from wakeup or preemption to running",
                                                   {},
                                                   kMicro});
// Zero where pid_max is at most the stamp array's size (PM_RUNQ_STAMP_SLOTS): a pid has a slot
// of its own.
const MetricDesc kRunqLost = shown_by(
    scheduler_text, {"scheduler", "runq_waits_lost", K::kCounter, Unit::kNone,
                     "Run-queue waits not timed: another task of the same stamp slot (pid modulo 65536) was "
                     "stamped runnable before this one ran"});

const MetricDesc kTreeWakeups =
    shown_by(tree_sched_text, {"process_tree", "sched_wakeups", K::kCounter, Unit::kNone,
                               "Wakeups of the tree's tasks (scheduler)", "proc_sched_wakeups"});
const MetricDesc kTreeRunqHist =
    shown_by(tree_sched_text, {"process_tree", "runq_latency_seconds", K::kHistogram, Unit::kSeconds,
                               "Run-queue latency of the tree's tasks", "proc_runq_latency_seconds", kMicro});

std::string latency(const Shown& h) {
  return fmt::format("run-queue latency p50 {}  p99 {}", below_time(h.p50), below_time(h.p99));
}

// sched    switches 972/s (voluntary 428/s, preempted 544/s)  wakeups 434/s  ...  run-queue latency p50 < 64 us
// (forks, running, blocked and load come from /proc/stat's layout, on the same line)
void scheduler_text(TextBlock& b) {
  using text_order::kSched;
  const std::string all(kAllLabel);
  if (const Shown* v = b.take(kSwitches, {{"cpu", all}})) {
    std::string s = "switches " + counted(b, *v);
    const Shown* vol = b.take(kVoluntary);
    const Shown* invol = b.take(kInvoluntary);
    if (vol != nullptr && invol != nullptr) {
      s += b.summary() ? fmt::format(", voluntary {}, preempted {}", human_count(vol->value), human_count(invol->value))
                       : fmt::format(" (voluntary {}, preempted {})", per_s(vol->rate), per_s(invol->rate));
    }
    b.item(kSched, "sched", s);
  }
  b.take_all(kSwitches);  // per CPU: in JSON and Prometheus
  if (const Shown* v = b.take(kWakeups)) b.item(kSched + 10, "sched", "wakeups " + counted(b, *v));
  const Shown* lost = b.take(kRunqLost);
  if (const Shown* h = b.take(kRunq)) {
    std::string s = latency(*h);
    if (lost != nullptr && lost->value > 0) s += fmt::format(" ({} waits not timed)", human_count(lost->value));
    b.item(kSched + 40, "sched", s);
  }
}

// The tree's wakeups and run-queue latency, with the tree's figures.
void tree_sched_text(TextBlock& b) {
  const Shown* wakeups = b.take(kTreeWakeups);
  const Shown* runq = b.take(kTreeRunqHist);
  if (wakeups == nullptr && runq == nullptr) return;
  std::string s;
  if (wakeups != nullptr) s = "wakeups " + (b.summary() ? human_count(wakeups->value) : per_s(wakeups->rate));
  if (runq != nullptr) s += (s.empty() ? "" : "  ") + latency(*runq);
  if (b.summary()) {
    b.line(text_order::kTree + 13, "tree", fmt::format("{:<8} {}", "sched", s));
  } else {
    b.item(text_order::kTree + 5, "tree", s);
  }
}

}  // namespace

struct SchedulerSource::Impl {
  // The histograms in the configured unit (bucket i below 2^i units).
  MetricDesc runq = kRunq, tree_runq = kTreeRunqHist;
  std::shared_ptr<SchedObject> object;
  int ncpus = libbpf_num_possible_cpus();
  std::vector<pm_sched_counters> per_cpu;
  std::vector<pm_tree_stats> tree;
  std::vector<bool> online;  // per possible CPU: reported per CPU
};

SchedulerSource::SchedulerSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchedulerSource::~SchedulerSource() = default;


std::unique_ptr<SchedulerSource> make_scheduler_source(std::shared_ptr<SchedObject> object, uint64_t hist_unit_ns) {
  auto impl = std::make_unique<SchedulerSource::Impl>();
  impl->object = std::move(object);
  impl->runq.bucket_base = impl->tree_runq.bucket_base = static_cast<double>(hist_unit_ns) * 1e-9;
  impl->online.resize(static_cast<size_t>(impl->ncpus));
  for (int cpu : online_cpus()) {
    if (cpu < impl->ncpus) impl->online[static_cast<size_t>(cpu)] = true;
  }
  return std::make_unique<SchedulerSource>(std::move(impl));
}

Result<std::unique_ptr<SchedulerSource>> make_scheduler_source(uint64_t hist_unit_ns) {
  auto object = SchedObject::load({.hist_unit_ns = hist_unit_ns});
  if (!object) return object.error();
  return make_scheduler_source(std::move(*object), hist_unit_ns);
}

void SchedulerSource::collect(Samples& out) {
  Impl& m = *impl_;
  if (!m.object->read_counters(m.per_cpu)) return;
  pm_sched_counters sum{};
  std::vector<uint64_t> hist(PM_RUNQ_BUCKETS);
  for (size_t cpu = 0; cpu < m.per_cpu.size(); ++cpu) {
    const pm_sched_counters& c = m.per_cpu[cpu];
    sum.switches += c.switches;
    sum.voluntary += c.voluntary;
    sum.involuntary += c.involuntary;
    sum.wakeups += c.wakeups;
    sum.runq_ns += c.runq_ns;
    sum.runq_lost += c.runq_lost;
    for (size_t b = 0; b < PM_RUNQ_BUCKETS; ++b) hist[b] += c.runq_hist[b];
    if (cpu < m.online.size() && m.online[cpu]) {
      out.push_back({&kSwitches, {{"cpu", std::to_string(cpu)}}, static_cast<double>(c.switches)});
    }
  }
  auto add = [&](const MetricDesc& d, double v) { out.push_back({&d, {}, v}); };
  out.push_back({&kSwitches, {{"cpu", std::string(kAllLabel)}}, static_cast<double>(sum.switches)});
  add(kVoluntary, static_cast<double>(sum.voluntary));
  add(kInvoluntary, static_cast<double>(sum.involuntary));
  add(kWakeups, static_cast<double>(sum.wakeups));
  add(kRunqLost, static_cast<double>(sum.runq_lost));
  append_bpf_stats(m.object->object(), out);
  out.push_back({&m.runq, {}, static_cast<double>(sum.runq_ns) / 1e9, std::move(hist)});

  if (!m.object->follows_tree() || !m.object->read_tree(m.tree)) return;
  uint64_t wakeups = 0, runq_ns = 0;
  std::vector<uint64_t> th(PM_RUNQ_BUCKETS);
  for (const pm_tree_stats& s : m.tree) {
    wakeups += s.wakeups;
    runq_ns += s.runq_ns;
    for (size_t b = 0; b < PM_RUNQ_BUCKETS; ++b) th[b] += s.runq_hist[b];
  }
  add(kTreeWakeups, static_cast<double>(wakeups));
  out.push_back({&m.tree_runq, {}, static_cast<double>(runq_ns) / 1e9, std::move(th)});
}

}  // namespace pm
