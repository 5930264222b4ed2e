#include "sources/kernel/scheduler_source.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/file_reader.h"

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
                         "Events counted whose timing was lost (task storage busy on that CPU)"};
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

bool have_kernel_btf() { return ::access("/sys/kernel/btf/vmlinux", R_OK) == 0; }

using Skeleton = std::unique_ptr<scheduler_bpf, void (*)(scheduler_bpf*)>;

// Opens, loads and attaches with one family of programs (tp_btf or raw_tp).
Result<Skeleton> load(bool btf, const SchedulerTarget& target) {
  Skeleton skel(scheduler_bpf::open(), scheduler_bpf::destroy);
  if (!skel) return Error::from_errno(errno, "opening the scheduler BPF programs");
  skel->rodata->track_tree = target.track_tree;
  for (bpf_program* p :
       {skel->progs.btf_switch, skel->progs.btf_wakeup, skel->progs.btf_wakeup_new, skel->progs.btf_fork}) {
    bpf_program__set_autoload(p, btf);
  }
  for (bpf_program* p :
       {skel->progs.raw_switch, skel->progs.raw_wakeup, skel->progs.raw_wakeup_new, skel->progs.raw_fork}) {
    bpf_program__set_autoload(p, !btf);
  }
  if (!target.track_tree) {  // nothing to follow: the fork hook is not loaded at all
    bpf_program__set_autoload(skel->progs.btf_fork, false);
    bpf_program__set_autoload(skel->progs.raw_fork, false);
  }
  if (int err = scheduler_bpf::load(skel.get()); err != 0) {
    // EACCES from a load is the verifier's refusal, EPERM a missing capability.
    if (err == -EACCES) return make_error(Errc::kUnavailable, "the kernel's verifier refused the scheduler programs");
    return Error::from_errno(-err, "loading the scheduler BPF programs");
  }
  __u8 one = 1;
  for (int tgid : target.tgids) {
    auto key = static_cast<__u32>(tgid);
    bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &key, &one, BPF_ANY);
  }
  if (int err = scheduler_bpf::attach(skel.get()); err != 0) {
    return Error::from_errno(-err, "attaching the scheduler BPF programs");
  }
  return skel;
}

}  // namespace

struct SchedulerSource::Impl {
  Skeleton skel{nullptr, scheduler_bpf::destroy};
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

Result<std::unique_ptr<SchedulerSource>> make_scheduler_source(const SchedulerTarget& target) {
  auto impl = std::make_unique<SchedulerSource::Impl>();
  impl->track_tree = target.track_tree;
  libbpf_set_print(nullptr);  // libbpf's own chatter would break the one-line error rule
  bool btf = have_kernel_btf();
  auto skel = load(btf, target);
  if (!skel && btf) {
    btf = false;  // tp_btf refused (an old kernel, a restricted one): raw tracepoints
    skel = load(false, target);
  }
  if (!skel) {
    Error e = skel.error();
    if (e.code == Errc::kPermissionDenied) e.message += " (run as root: loading BPF needs CAP_BPF and CAP_PERFMON)";
    return e;
  }
  impl->skel = std::move(*skel);
  impl->btf = btf;
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
  out.push_back({&kRunq, {}, static_cast<double>(sum.runq_ns) / 1e9, std::move(hist)});

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
  out.push_back({&kTreeRunqHist, {}, static_cast<double>(t.runq_ns) / 1e9, std::move(th)});
}

}  // namespace pm
