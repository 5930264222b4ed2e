// SPDX-License-Identifier: Apache-2.0
#include "sources/kernel/scheduler_source.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/file_reader.h"
#include "sources/kernel/skeleton.h"

#include <linux/types.h>

// clang-format off
#include "scheduler.h"
#include "scheduler.skel.h"
// clang-format on

namespace pm {
namespace {

using K = MetricKind;
constexpr double kMicro = 1e-6;  // run-queue buckets are log2 microseconds

const MetricDesc kSwitches{"scheduler", "context_switches", K::kCounter, Unit::kNone,
                           "Context switches (sched_switch)"};
const MetricDesc kPerCpu{"scheduler", "per_cpu_switches", K::kCounter, Unit::kNone, "Context switches per CPU"};
const MetricDesc kVoluntary{"scheduler", "voluntary_switches", K::kCounter, Unit::kNone,
                            "Switches where the task blocked"};
const MetricDesc kInvoluntary{"scheduler", "involuntary_switches", K::kCounter, Unit::kNone,
                              "Switches where the task was preempted while runnable"};
const MetricDesc kWakeups{"scheduler", "wakeups", K::kCounter, Unit::kNone,
                          "Task wakeups (sched_waking, sched_wakeup_new)"};
const MetricDesc kMisses{"scheduler", "timing_misses", K::kCounter, Unit::kNone,
                         "Events of the target tree counted whose timing was lost (per-task map full)"};
const MetricDesc kRunq{"scheduler",
                       "runq_latency_seconds",
                       K::kHistogram,
                       Unit::kSeconds,
                       "Run-queue latency: from wakeup or preemption to running",
                       {},
                       kMicro};

const MetricDesc kTreeOnCpu{
    "process_tree",       "on_cpu_seconds", K::kCounter, Unit::kSeconds, "Time the tree's tasks ran (scheduler)",
    "proc_on_cpu_seconds"};
const MetricDesc kTreeRunq{"process_tree",
                           "runq_wait_seconds",
                           K::kCounter,
                           Unit::kSeconds,
                           "Time the tree's tasks were runnable, waiting for a CPU",
                           "proc_runq_wait_seconds"};
const MetricDesc kTreeBlocked{"process_tree",
                              "blocked_seconds",
                              K::kCounter,
                              Unit::kSeconds,
                              "Time the tree's tasks were blocked until woken (sleep, I/O, locks)",
                              "proc_blocked_seconds"};
const MetricDesc kTreeSwitches{"process_tree",
                               "sched_switches",
                               K::kCounter,
                               Unit::kNone,
                               "Context switches of the tree's tasks (scheduler)",
                               "proc_sched_switches"};
const MetricDesc kTreeWakeups{
    "process_tree",      "sched_wakeups", K::kCounter, Unit::kNone, "Wakeups of the tree's tasks (scheduler)",
    "proc_sched_wakeups"};
const MetricDesc kTreeRunqHist{"process_tree",
                               "runq_latency_seconds",
                               K::kHistogram,
                               Unit::kSeconds,
                               "Run-queue latency of the tree's tasks",
                               "proc_runq_latency_seconds",
                               kMicro};

}  // namespace

struct SchedulerSource::Impl {
  // The histograms in the configured unit (bucket i below 2^i units).
  MetricDesc runq = kRunq, tree_runq = kTreeRunqHist;
  SkeletonPtr<scheduler_bpf> skel{nullptr, scheduler_bpf::destroy};
  bool btf = true;
  bool track_tree = false;
  int ncpus = libbpf_num_possible_cpus();
  std::vector<pm_sched_counters> per_cpu;
  std::vector<pm_tree_stats> tree;
  std::vector<bool> online;  // per possible CPU: reported per CPU
};

SchedulerSource::SchedulerSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchedulerSource::~SchedulerSource() = default;

const char* SchedulerSource::attach_mode() const { return impl_->btf ? "tp_btf" : "raw_tp"; }

Result<std::unique_ptr<SchedulerSource>> make_scheduler_source(const TreeTarget& target) {
  auto impl = std::make_unique<SchedulerSource::Impl>();
  impl->track_tree = target.track_tree;
  impl->runq.bucket_base = impl->tree_runq.bucket_base = static_cast<double>(target.hist_unit_ns) * 1e-9;
  auto loaded = load_skeleton<scheduler_bpf>("scheduler", target);
  if (!loaded) return loaded.error();
  impl->skel = std::move(loaded->skel);
  impl->btf = loaded->btf;
  impl->per_cpu.resize(static_cast<size_t>(impl->ncpus));
  impl->tree.resize(static_cast<size_t>(impl->ncpus));
  impl->online.resize(static_cast<size_t>(impl->ncpus));
  for (int cpu : online_cpus()) {
    if (cpu < impl->ncpus) impl->online[static_cast<size_t>(cpu)] = true;
  }
  return std::make_unique<SchedulerSource>(std::move(impl));
}

void SchedulerSource::collect(Samples& out) {
  Impl& m = *impl_;
  __u32 zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(m.skel->maps.counters), &zero, m.per_cpu.data()) != 0) return;
  pm_sched_counters sum{};
  std::vector<uint64_t> hist(PM_RUNQ_BUCKETS);
  for (int cpu = 0; cpu < m.ncpus; ++cpu) {
    const pm_sched_counters& c = m.per_cpu[static_cast<size_t>(cpu)];
    sum.switches += c.switches;
    sum.voluntary += c.voluntary;
    sum.involuntary += c.involuntary;
    sum.wakeups += c.wakeups;
    sum.runq_ns += c.runq_ns;
    sum.storage_misses += c.storage_misses;
    for (size_t b = 0; b < PM_RUNQ_BUCKETS; ++b) hist[b] += c.runq_hist[b];
    if (m.online[static_cast<size_t>(cpu)]) {
      out.push_back({&kPerCpu, {{"cpu", std::to_string(cpu)}}, static_cast<double>(c.switches)});
    }
  }
  auto add = [&](const MetricDesc& d, double v) { out.push_back({&d, {}, v}); };
  add(kSwitches, static_cast<double>(sum.switches));
  add(kVoluntary, static_cast<double>(sum.voluntary));
  add(kInvoluntary, static_cast<double>(sum.involuntary));
  add(kWakeups, static_cast<double>(sum.wakeups));
  add(kMisses, static_cast<double>(sum.storage_misses));
  append_bpf_stats(m.skel->obj, out);
  out.push_back({&m.runq, {}, static_cast<double>(sum.runq_ns) / 1e9, std::move(hist)});

  if (!m.track_tree) return;
  if (bpf_map_lookup_elem(bpf_map__fd(m.skel->maps.tree), &zero, m.tree.data()) != 0) return;
  pm_tree_stats t{};
  std::vector<uint64_t> th(PM_RUNQ_BUCKETS);
  for (const pm_tree_stats& s : m.tree) {
    t.on_cpu_ns += s.on_cpu_ns;
    t.runq_ns += s.runq_ns;
    t.blocked_ns += s.blocked_ns;
    t.switches += s.switches;
    t.wakeups += s.wakeups;
    for (size_t b = 0; b < PM_RUNQ_BUCKETS; ++b) th[b] += s.runq_hist[b];
  }
  add(kTreeOnCpu, static_cast<double>(t.on_cpu_ns) / 1e9);
  add(kTreeRunq, static_cast<double>(t.runq_ns) / 1e9);
  add(kTreeBlocked, static_cast<double>(t.blocked_ns) / 1e9);
  add(kTreeSwitches, static_cast<double>(t.switches));
  add(kTreeWakeups, static_cast<double>(t.wakeups));
  out.push_back({&m.tree_runq, {}, static_cast<double>(t.runq_ns) / 1e9, std::move(th)});
}

}  // namespace pm
