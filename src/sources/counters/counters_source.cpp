// SPDX-License-Identifier: Apache-2.0
#include "sources/counters/counters_source.h"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "core/file_reader.h"
#include "core/text_layout.h"
#include "sources/counters/counter_group.h"

namespace pm::counters {
namespace {

using K = MetricKind;

void pmc_text(TextBlock& b);

const MetricDesc kElapsed =
    denominator_only({"pmc", "elapsed_seconds", K::kCounter, Unit::kSeconds,
                      "Wall-clock time the counters have been open: the denominator of CPUs utilised and watts"});
const MetricDesc kEnabled = shown_by(pmc_text, {"pmc", "enabled_seconds", K::kCounter, Unit::kSeconds,
                                                "Time each event was enabled (summed over CPUs or tasks)"});
const MetricDesc kRunning = shown_by(pmc_text, {"pmc", "running_seconds", K::kCounter, Unit::kSeconds,
                                                "Time each event was actually counting on the PMU (summed over CPUs "
                                                "or tasks)"});
const MetricDesc kRunningPct =
    shown_by(pmc_text, {"pmc", "running_percent", K::kGauge, Unit::kPercent,
                        "Share of the enabled time an event was on the PMU; below 100 the value is scaled "
                        "from a sample, as perf stat does"});
const MetricDesc kIpc = shown_by(pmc_text, {"pmc", "ipc", K::kGauge, Unit::kNone, "Instructions per cycle"});
const MetricDesc kCacheMiss =
    shown_by(pmc_text, {"pmc", "cache_miss_percent", K::kGauge, Unit::kPercent, "cache-misses / cache-references"});
const MetricDesc kBranchMiss = shown_by(pmc_text, {"pmc", "branch_miss_percent", K::kGauge, Unit::kPercent,
                                                   "branch-misses / branch-instructions (not / instructions)"});
const MetricDesc kCpusUtilised =
    shown_by(pmc_text, {"pmc", "cpus_utilised", K::kGauge, Unit::kNone,
                        "task-clock / wall-clock time: how many CPUs were busy on average"});

// perf's software counters of switches, faults and CPU time count what other sources count too:
// they fill the same quantity, ranked, so each is shown once. System-wide: switches (eBPF 2 >
// perf 1 > /proc/stat 0) and faults (vmstat 1 > perf 0). For a tree: its faults and on-CPU time
// (the tree's own figures 1 > perf 0; where the tree is sampled from /proc, which has no on-CPU
// time, perf's task clock fills it). The tree's switches and page faults have no other name: they
// stay in pmc.
struct SharedQuantity {
  bool system_wide;
  std::string_view event, family, name, summary_key;
  int rank;
};
constexpr SharedQuantity kShared[] = {
    {true, "context-switches", "scheduler", "context_switches", {}, 1},
    {true, "page-faults", "memory", "page_faults", {}, 0},
    {true, "major-faults", "memory", "major_faults", {}, 0},
    {false, "minor-faults", "process_tree", "minor_faults", "proc_minor_faults", 0},
    {false, "major-faults", "process_tree", "major_faults", "proc_major_faults", 0},
    {false, "task-clock", "process_tree", "on_cpu_seconds", "proc_on_cpu_seconds", 0},
    {false, "cpu-migrations", "process_tree", "cpu_migrations", "proc_cpu_migrations", 0},
};

// An event's name in words: task_clock_seconds -> "task clock", l1_dcache_load_misses -> "l1 dcache
// load misses", power_energy_pkg_joules -> "pkg".
std::string words_of(std::string_view name) {
  if (name.starts_with("power_energy_")) name.remove_prefix(13);  // shown under "energy": "pkg", "psys"
  for (std::string_view unit : {"_seconds", "_joules", "_watts"}) {
    if (name.ends_with(unit)) name.remove_suffix(unit.size());
  }
  std::string s(name);
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

// Counters as perf stat shows them, in words: each event's rate (interval) or count and rate
// (run), its share of time on the PMU when multiplexed; task clock as CPUs busy; then the ratios.
// pmc      task clock 2.00 s (2.0 CPUs)  cpu migrations 28/s  minor faults 56724/s
//          IPC 1.84  cache miss 3.20%  branch miss 0.412%
// energy   power energy pkg 12.50 J (12.5 W)
void pmc_text(TextBlock& b) {
  using text_order::kPmc;
  int at = kPmc;
  int energy_at = text_order::kEnergy;
  // Another source's quantity (a switch or fault counter system-wide) is its family's to show.
  std::vector<const Shown*> mine = b.take_all(pmc_text, "pmc");
  std::vector<const Shown*> watts;
  for (const Shown* v : mine) {
    if (v->desc->family == "pmc" && v->desc->kind == K::kGauge && v->derived && v->desc->name.ends_with("_watts")) {
      watts.push_back(v);
    }
  }
  // Shown by another source of the block from the kernel's own accounting: the tree's switches,
  // faults and CPU share (run, attach), the system's faults (paging, from vmstat). perf's count of
  // the same thing is left out of the text (JSON and Prometheus keep it).
  const bool tree_switches = b.has(MetricDesc{.family = "process_tree", .name = "voluntary_switches"});
  const bool tree_cpu = b.has(MetricDesc{.family = "process_tree", .name = "cpu_user_seconds"});
  const bool faults_shown = b.has(MetricDesc{.family = "process_tree", .name = "minor_faults"}) ||
                            b.has(MetricDesc{.family = "memory", .name = "page_faults"});
  auto shown_elsewhere = [&](std::string_view name) {
    if (name == "context_switches" || name == "cs") return tree_switches;
    return faults_shown && (name == "page_faults" || name == "faults" || name == "minor_faults" || name == "major_faults");
  };
  for (const Shown* v : mine) {
    const MetricDesc& d = *v->desc;
    if (d.kind != K::kCounter || &d == &kEnabled || &d == &kRunning) continue;
    if (shown_elsewhere(d.name)) continue;
    std::string_view cpu = label_of(*v, "cpu");
    if (!cpu.empty() && cpu != kAllLabel) continue;  // per CPU: in JSON and Prometheus
    std::string words = words_of(d.name);
    if (d.unit == Unit::kJoules) {
      std::string item = fmt::format("{} {:.2f} J", words, v->value);
      std::string w = std::string(d.name.substr(0, d.name.size() - 7)) + "_watts";
      for (const Shown* x : watts) {
        if (x->desc->name == w) item += fmt::format(" ({:.2f} W)", x->value);
      }
      b.item(energy_at++, "energy", item);
      continue;
    }
    std::string item = d.unit == Unit::kSeconds
                           ? fmt::format("{} {} ({:.1f} CPUs)", words, human_time(v->value), v->rate)
                           : words + " " + counted(b, *v);
    for (const Shown* r : mine) {
      if (r->desc == &kRunningPct && label_of(*r, "event") == d.name && r->value < 99.95) {
        item += fmt::format(" [{:.1f}% running]", r->value);
      }
    }
    b.item(at++, "pmc", item);
  }
  std::string ratios;
  for (auto [desc, words, fmtstr] :
       {std::tuple{&kIpc, "IPC", "{:.2f}"}, std::tuple{&kCpusUtilised, "CPUs busy", "{:.2f}"},
        std::tuple{&kCacheMiss, "cache miss", "{:.2f}%"}, std::tuple{&kBranchMiss, "branch miss", "{:.3f}%"}}) {
    if (desc == &kCpusUtilised && tree_cpu) continue;  // the tree's CPU share says it
    for (const Shown* r : mine) {
      if (r->desc == desc)
        ratios += fmt::format("{}{} ", ratios.empty() ? "" : "  ", words) + fmt::format(fmt::runtime(fmtstr), r->value);
    }
  }
  if (!ratios.empty()) b.line(kPmc + 80, "pmc", ratios);
  // Shown above with their events: enabled and running time (as "% running"), CPUs utilised (as
  // the task clock's CPUs), watts (with the joules).
}

Unit unit_of(const EventSpec& e) {
  if (e.unit == "seconds") return Unit::kSeconds;
  if (e.unit == "Joules" || e.unit == "joules") return Unit::kJoules;
  return Unit::kNone;
}

// Package-wide events (energy) count once per package, on the CPUs their PMU names.
bool is_package_event(const EventSpec& e) { return e.kind == EventKind::kPmu && !e.cpus.empty(); }

}  // namespace

struct CountersSource::Impl {
  struct OwnedDesc {
    std::string name, help;
    MetricDesc desc;
  };
  struct Target {
    CounterSet set;
    std::vector<size_t> events;  // event index of each entry the set was opened with
    std::string cpu;             // per-CPU label when system-wide, else empty
    std::vector<Reading> last;   // the previous reading of each entry
    std::vector<double> total;   // each entry's running total, scaled interval by interval
  };

  std::vector<EventSpec> events;
  std::vector<Target> targets;
  std::deque<OwnedDesc> descs;  // stable addresses: samples point at them
  std::vector<const MetricDesc*> total, per_cpu;
  std::vector<std::string> event_label;  // each event's metric name, the label of its enabled/running time
  std::vector<std::optional<Error>> failure;
  std::vector<bool> opened, user_only;
  std::vector<double> enabled_s, running_s;  // per event, summed over its targets
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  std::vector<RatioRule> watts;  // energy events: joules over wall time
  bool system_wide = true;

  const MetricDesc* own_desc(std::string name, std::string help, const EventSpec& e, MetricKind kind = K::kCounter) {
    OwnedDesc& d = descs.emplace_back();
    d.name = std::move(name);
    d.help = std::move(help);
    d.desc = shown_by(pmc_text, {"pmc", d.name, kind, kind == K::kCounter ? unit_of(e) : Unit::kNone, d.help});
    for (const SharedQuantity& q : kShared) {
      if (kind != K::kCounter || e.name != q.event || q.system_wide != system_wide) continue;
      d.desc.family = q.family;
      d.desc.name = q.name;
      d.desc.summary_key = q.summary_key;
      d.desc.rank = q.rank;
    }
    return &d.desc;
  }

  void open(const std::vector<size_t>& which, const Scope& scope, std::string cpu_label) {
    std::vector<EventSpec> specs;
    for (size_t i : which) specs.push_back(events[i]);
    Target t{CounterSet::open(specs, scope), which, std::move(cpu_label)};
    t.last.resize(which.size());
    t.total.resize(which.size());
    for (size_t k = 0; k < which.size(); ++k) {
      size_t i = which[k];
      if (t.set.failure(k)) {
        if (!opened[i] && !failure[i]) failure[i] = t.set.failure(k);
      } else {
        opened[i] = true;
        failure[i].reset();
        if (t.set.user_only(k)) user_only[i] = true;
      }
    }
    if (t.set.any_open()) targets.push_back(std::move(t));
  }
};

CountersSource::CountersSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CountersSource::~CountersSource() = default;

Result<std::unique_ptr<CountersSource>> make_counters_source(const std::vector<EventSpec>& events,
                                                             const CountersTarget& target) {
  auto impl = std::make_unique<CountersSource::Impl>();
  impl->events = events;
  impl->failure.resize(events.size());
  impl->opened.resize(events.size());
  impl->user_only.resize(events.size());
  impl->enabled_s.resize(events.size());
  impl->running_s.resize(events.size());

  std::vector<size_t> scoped;
  std::map<std::vector<int>, std::vector<size_t>> package;  // by the CPUs they count on
  for (size_t i = 0; i < events.size(); ++i) {
    if (is_package_event(events[i])) {
      package[events[i].cpus].push_back(i);
    } else {
      scoped.push_back(i);
    }
  }
  bool system_wide = target.tids.empty() && target.cgroup_dir.empty();
  impl->system_wide = system_wide;
  UniqueFd cgroup;
  if (!target.cgroup_dir.empty()) cgroup.reset(::open(target.cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!scoped.empty()) {
    bool by_cgroup = false;
    if (cgroup) {
      // The cgroup's tasks, on every CPU; its own fd is kept by the counters opened with it.
      size_t before = impl->targets.size();
      for (int cpu : online_cpus()) impl->open(scoped, Scope{-1, cpu, false, false, false, cgroup.get()}, "");
      by_cgroup = impl->targets.size() > before;
    }
    if (by_cgroup) {
    } else if (system_wide) {
      for (int cpu : online_cpus()) impl->open(scoped, Scope{-1, cpu, false, false}, std::to_string(cpu));
    } else {
      for (int tid : target.tids) impl->open(scoped, Scope{tid, -1, true, target.enable_on_exec}, "");
    }
  }
  for (const auto& [cpus, which] : package) {
    for (int cpu : cpus) impl->open(which, Scope{-1, cpu, false, false}, "");
  }

  for (size_t i = 0; i < events.size(); ++i) {
    std::string name = metric_name(events[i]);
    if (events[i].unit == "seconds" && !name.ends_with("_seconds")) name += "_seconds";
    if (unit_of(events[i]) == Unit::kJoules && !name.ends_with("_joules")) name += "_joules";
    std::string help =
        events[i].name + (system_wide || is_package_event(events[i]) ? ", whole system" : ", the target's tree");
    impl->event_label.push_back(name);
    impl->total.push_back(impl->own_desc(name, help, events[i]));
    if (unit_of(events[i]) == Unit::kJoules) {
      std::string watts = name.substr(0, name.size() - std::string_view("_joules").size()) + "_watts";
      impl->watts.push_back({impl->own_desc(watts, events[i].name + ", average power", events[i], K::kGauge),
                             impl->total.back(), &kElapsed, 1.0});
    }
    // Per CPU: the same metric, labelled (cpu="all" is the whole system).
    impl->per_cpu.push_back(system_wide && !is_package_event(events[i]) ? impl->total.back() : nullptr);
  }
  if (impl->targets.empty()) {
    std::string why = "no events selected";
    for (const auto& f : impl->failure) {
      if (f) why = f->message;
    }
    return make_error(Errc::kUnavailable, "no counter could be opened: " + why);
  }
  return std::make_unique<CountersSource>(std::move(impl));
}

void CountersSource::collect(Samples& out) {
  Impl& m = *impl_;
  // Read everything first: a tick with a failed read is skipped whole, so no total dips.
  std::vector<std::vector<Reading>> now(m.targets.size());
  for (size_t t = 0; t < m.targets.size(); ++t) {
    now[t].resize(m.targets[t].events.size());
    if (!m.targets[t].set.read(now[t])) return;
  }
  size_t n = m.events.size();
  std::vector<double> total(n, 0.0);
  for (size_t t = 0; t < m.targets.size(); ++t) {
    Impl::Target& tg = m.targets[t];
    for (size_t k = 0; k < tg.events.size(); ++k) {
      if (tg.set.failure(k)) continue;
      size_t i = tg.events[k];
      const Reading& cur = now[t][k];
      // Scaled interval by interval, as perf stat -I does: a multiplexed event's estimate for
      // this interval is its count times the share of the interval it was off the PMU.
      Reading delta = cur - tg.last[k];
      tg.last[k] = cur;
      double v = delta.scaled();
      if (!std::isnan(v)) tg.total[k] += v * m.events[i].scale;  // NaN: not on the PMU this interval
      m.enabled_s[i] += static_cast<double>(delta.enabled_ns) / 1e9;
      m.running_s[i] += static_cast<double>(delta.running_ns) / 1e9;
      total[i] += tg.total[k];
      if (!tg.cpu.empty() && m.per_cpu[i] != nullptr) out.push_back({m.per_cpu[i], {{"cpu", tg.cpu}}, tg.total[k]});
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (!m.opened[i] || never_counted(i)) continue;  // "not counted", never a zero
    if (m.per_cpu[i] != nullptr) {
      out.push_back({m.total[i], {{"cpu", std::string(kAllLabel)}}, total[i]});
    } else {
      out.push_back({m.total[i], {}, total[i]});
    }
    Labels l{{"event", m.event_label[i]}};
    out.push_back({&kEnabled, l, m.enabled_s[i]});
    out.push_back({&kRunning, std::move(l), m.running_s[i]});
  }
  out.push_back({&kElapsed, {}, std::chrono::duration<double>(std::chrono::steady_clock::now() - m.start).count()});
}

bool CountersSource::never_counted(size_t i) const { return impl_->enabled_s[i] > 0 && impl_->running_s[i] == 0; }

std::vector<Unavailable> CountersSource::not_counted() const {
  std::vector<Unavailable> out;
  for (size_t i = 0; i < impl_->events.size(); ++i) {
    if (impl_->opened[i] && never_counted(i)) {
      out.push_back({"pmc." + impl_->events[i].name,
                     "opened but never on the PMU: every counter was busy (the NMI watchdog holds one: "
                     "echo 0 > /proc/sys/kernel/nmi_watchdog, or count fewer events)"});
    }
  }
  return out;
}

std::vector<RatioRule> CountersSource::ratios() const {
  auto find = [&](std::string_view name) -> const MetricDesc* {
    for (size_t i = 0; i < impl_->events.size(); ++i) {
      if (impl_->events[i].name == name && impl_->opened[i]) return impl_->total[i];
    }
    return nullptr;
  };
  std::vector<RatioRule> rules{{&kRunningPct, &kRunning, &kEnabled, 100.0}};
  auto add = [&](const MetricDesc* out, std::string_view num, std::string_view den, double scale) {
    const MetricDesc* n = find(num);
    const MetricDesc* d = den.empty() ? &kElapsed : find(den);
    if (n != nullptr && d != nullptr) rules.push_back({out, n, d, scale});
  };
  add(&kIpc, "instructions", "cycles", 1.0);
  add(&kCacheMiss, "cache-misses", "cache-references", 100.0);
  add(&kBranchMiss, "branch-misses", "branch-instructions", 100.0);
  // System-wide, task-clock advances with every CPU's clock, idle included: the ratio would only
  // count the CPUs.
  if (!impl_->system_wide) add(&kCpusUtilised, "task-clock", "", 1.0);
  for (size_t i = 0; i < impl_->watts.size(); ++i) rules.push_back(impl_->watts[i]);
  return rules;
}

std::vector<Unavailable> CountersSource::unsupported() const {
  std::vector<Unavailable> out;
  for (size_t i = 0; i < impl_->events.size(); ++i) {
    if (!impl_->opened[i] && impl_->failure[i]) {
      out.push_back({"pmc." + impl_->events[i].name, impl_->failure[i]->message});
    }
    if (impl_->user_only[i]) {
      out.push_back({"pmc." + impl_->events[i].name + ":kernel",
                     "counts user space only: /proc/sys/kernel/perf_event_paranoid forbids counting the kernel "
                     "(run as root, or lower it)"});
    }
  }
  return out;
}

size_t CountersSource::fds() const {
  size_t n = 0;
  for (const auto& t : impl_->targets) n += t.set.fds();
  return n;
}

}  // namespace pm::counters

namespace pm::counters {

bool CountersSource::counts_energy() const {
  for (size_t i = 0; i < impl_->events.size(); ++i) {
    if (impl_->opened[i] && unit_of(impl_->events[i]) == Unit::kJoules) return true;
  }
  return false;
}

}  // namespace pm::counters
