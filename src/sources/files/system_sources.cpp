// SPDX-License-Identifier: Apache-2.0
#include "sources/files/system_sources.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/file_reader.h"
#include "core/labels.h"
#include "core/text.h"
#include "core/text_layout.h"
#include "sources/files/system_parsers.h"

namespace pm {
namespace {

using K = MetricKind;

// --- cpu and scheduler: /proc/stat, /proc/loadavg ---------------------------------------------

void cpu_text(TextBlock& b);
void sched_text(TextBlock& b);

const MetricDesc kCpuTime =
    shown_by(cpu_text, {"cpu", "time_seconds", K::kCounter, Unit::kSeconds,
                        "CPU time spent in each mode, per CPU (cpu=\"all\": the whole system)"});
const MetricDesc kCpuTotal = denominator_only({"cpu", "total_seconds", K::kCounter, Unit::kSeconds,
                                               "CPU time in all modes, per CPU: the denominator of utilisation"});
const MetricDesc kCpuUtil =
    system_figure(SystemFigure::kCpuUtilisation,
                  shown_by(cpu_text, {"cpu", "utilisation_percent", K::kGauge, Unit::kPercent,
                                      "Share of CPU time spent in each mode over the interval, per CPU"}));
// The scheduler's figures that /proc/stat and /proc/loadavg give. Context switches are the last
// resort: the eBPF scheduler source (rank 2) and perf's software counter (rank 1) count them per CPU.
const MetricDesc kCtxt = shown_by(
    sched_text, {"scheduler", "context_switches", K::kCounter, Unit::kNone, "Context switches (/proc/stat ctxt)"});
const MetricDesc kForks = shown_by(sched_text, {"scheduler", "forks", K::kCounter, Unit::kNone,
                                                "Processes and threads created (/proc/stat processes)"});
const MetricDesc kRunning =
    system_figure(SystemFigure::kProcsRunning,
                  shown_by(sched_text, {"scheduler", "procs_running", K::kGauge, Unit::kNone, "Runnable tasks"}));
const MetricDesc kBlocked = system_figure(
    SystemFigure::kProcsBlocked,
    shown_by(sched_text, {"scheduler", "procs_blocked", K::kGauge, Unit::kNone, "Tasks blocked waiting for I/O"}));
const MetricDesc kLoad1 =
    system_figure(SystemFigure::kLoad1,
                  shown_by(sched_text, {"scheduler", "load1", K::kGauge, Unit::kNone, "Load average over 1 minute"}));
const MetricDesc kLoad5 =
    system_figure(SystemFigure::kLoad5,
                  shown_by(sched_text, {"scheduler", "load5", K::kGauge, Unit::kNone, "Load average over 5 minutes"}));
const MetricDesc kLoad15 = system_figure(
    SystemFigure::kLoad15,
    shown_by(sched_text, {"scheduler", "load15", K::kGauge, Unit::kNone, "Load average over 15 minutes"}));

constexpr const char* kModes[] = {"user", "nice", "system", "iowait", "irq", "softirq", "steal", "idle"};

// cpu      user 3.1%  nice 0.0%  system 1.2%  ...  idle 95.6%
//          busy: cpu0 5.0%  cpu1 3.8%
void cpu_text(TextBlock& b) {
  std::string all;
  for (const char* mode : kModes) {
    if (const Shown* v = b.take(kCpuUtil, {{"cpu", std::string(kAllLabel)}, {"mode", mode}})) {
      all += fmt::format("{}{} {}", all.empty() ? "" : "  ", mode, percent(v->value));
    }
  }
  if (!all.empty()) b.item(text_order::kCpu, "cpu", all);
  // Each CPU: busy is neither idle nor waiting for I/O.
  std::vector<const Shown*> per_cpu = b.take_all(kCpuUtil);
  std::string busy;
  for (const Shown* idle : per_cpu) {
    if (label_of(*idle, "mode") != "idle") continue;
    double waiting = 0;
    for (const Shown* v : per_cpu) {
      if (label_of(*v, "cpu") == label_of(*idle, "cpu") && label_of(*v, "mode") == "iowait") waiting = v->value;
    }
    busy += fmt::format(" cpu{} {}", label_of(*idle, "cpu"), percent(std::max(0.0, 100 - idle->value - waiting)));
  }
  if (!busy.empty()) b.line(text_order::kCpu + 1, "cpu", "busy:" + busy);
  b.take_all(kCpuTime);  // the times behind the shares above
}

// sched    switches 1150/s  forks 50/s  running 5  blocked 0  load 4.08 4.22 4.28
void sched_text(TextBlock& b) {
  using text_order::kSched;
  // Switches from the best source: the eBPF scheduler's layout runs first and takes them itself.
  if (const Shown* v = b.take(kCtxt, {{"cpu", std::string(kAllLabel)}})) {
    b.item(kSched, "sched", "switches " + counted(b, *v));
  }
  b.take_all(kCtxt);  // per CPU (perf's counter): in JSON and Prometheus
  if (const Shown* v = b.take(kForks)) b.item(kSched + 30, "sched", "forks " + counted(b, *v));
  if (const Shown* v = b.take(kRunning)) b.item(kSched + 31, "sched", "running " + level(b, *v, human_count));
  if (const Shown* v = b.take(kBlocked)) b.item(kSched + 32, "sched", "blocked " + level(b, *v, human_count));
  const Shown* l1 = b.take(kLoad1);
  const Shown* l5 = b.take(kLoad5);
  const Shown* l15 = b.take(kLoad15);
  if (l1 != nullptr && l5 != nullptr && l15 != nullptr) {
    b.item(kSched + 33, "sched", fmt::format("load {:.2f} {:.2f} {:.2f}", l1->value, l5->value, l15->value));
  }
}

class CpuSource final : public Source {
 public:
  explicit CpuSource(const FsRoots& roots)
      : stat_path_(roots.proc + "/stat"),
        loadavg_path_(roots.proc + "/loadavg"),
        tick_seconds_(1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK))) {}
  [[nodiscard]] std::string_view name() const override { return "cpu"; }
  [[nodiscard]] std::vector<RatioRule> ratios() const override { return {{&kCpuUtil, &kCpuTime, &kCpuTotal, 100.0}}; }

  void collect(Samples& out) override {
    if (auto text = reader_.read(stat_path_)) {
      if (auto st = procfs::parse_proc_stat(*text)) {
        add_cpu(out, std::string(kAllLabel), st->all);
        for (const auto& c : st->cpus) add_cpu(out, std::to_string(c.cpu), c);
        out.push_back({&kCtxt, {{"cpu", std::string(kAllLabel)}}, static_cast<double>(st->ctxt)});
        out.push_back({&kForks, {}, static_cast<double>(st->processes)});
        out.push_back({&kRunning, {}, static_cast<double>(st->procs_running)});
        out.push_back({&kBlocked, {}, static_cast<double>(st->procs_blocked)});
      }
    }
    if (auto text = reader_.read(loadavg_path_)) {
      if (auto la = procfs::parse_loadavg(*text)) {
        out.push_back({&kLoad1, {}, la->load1});
        out.push_back({&kLoad5, {}, la->load5});
        out.push_back({&kLoad15, {}, la->load15});
      }
    }
  }

 private:
  void add_cpu(Samples& out, const std::string& cpu, const procfs::CpuTimes& t) {
    const std::array<std::pair<const char*, uint64_t>, 8> modes{{{"user", t.user},
                                                                 {"nice", t.nice},
                                                                 {"system", t.system},
                                                                 {"idle", t.idle},
                                                                 {"iowait", t.iowait},
                                                                 {"irq", t.irq},
                                                                 {"softirq", t.softirq},
                                                                 {"steal", t.steal}}};
    for (const auto& [mode, ticks] : modes) {
      out.push_back({&kCpuTime, {{"cpu", cpu}, {"mode", mode}}, static_cast<double>(ticks) * tick_seconds_});
    }
    out.push_back({&kCpuTotal, {{"cpu", cpu}}, static_cast<double>(t.total()) * tick_seconds_});
  }

  std::string stat_path_, loadavg_path_;
  double tick_seconds_;
  FileReader reader_;
};

// --- memory and paging: /proc/meminfo, /proc/vmstat --------------------------------------------

void memory_text(TextBlock& b);

const MetricDesc kMemTotal = system_figure(
    SystemFigure::kMemTotal, shown_by(memory_text, {"memory", "total_bytes", K::kGauge, Unit::kBytes, "MemTotal"}));
const MetricDesc kMemUsed = system_figure(
    SystemFigure::kMemUsed, shown_by(memory_text, {"memory", "used_bytes", K::kGauge, Unit::kBytes,
                                                   "Memory in use: MemTotal - MemAvailable", "global_mem_used"}));
const MetricDesc kMemFree = shown_by(memory_text, {"memory", "free_bytes", K::kGauge, Unit::kBytes, "MemFree"});
const MetricDesc kMemAvail =
    system_figure(SystemFigure::kMemAvailable,
                  shown_by(memory_text, {"memory", "available_bytes", K::kGauge, Unit::kBytes, "MemAvailable"}));
const MetricDesc kMemCached = system_figure(
    SystemFigure::kMemCached, shown_by(memory_text, {"memory", "cached_bytes", K::kGauge, Unit::kBytes,
                                                     "Page cache (Cached, includes shmem)", "global_cached"}));
const MetricDesc kMemBuffers = shown_by(memory_text, {"memory", "buffers_bytes", K::kGauge, Unit::kBytes, "Buffers"});
const MetricDesc kMemAnon = shown_by(
    memory_text, {"memory", "anon_bytes", K::kGauge, Unit::kBytes, "Anonymous memory (AnonPages)", "global_anon"});
const MetricDesc kSwapTotal =
    system_figure(SystemFigure::kSwapTotal,
                  shown_by(memory_text, {"memory", "swap_total_bytes", K::kGauge, Unit::kBytes, "SwapTotal"}));
const MetricDesc kSwapFree = system_figure(
    SystemFigure::kSwapFree,
    shown_by(memory_text, {"memory", "swap_free_bytes", K::kGauge, Unit::kBytes, "SwapFree", "global_swap_free"}));
// Page faults: vmstat (rank 1) before perf's software counters of the same faults (rank 0).
const MetricDesc kPgFault = shown_by(memory_text, ranked(1, {"memory", "page_faults", K::kCounter, Unit::kNone,
                                                             "Page faults, minor and major (vmstat pgfault)"}));
const MetricDesc kPgMajFault =
    shown_by(memory_text, ranked(1, {"memory", "major_faults", K::kCounter, Unit::kNone,
                                     "Major page faults, that needed I/O (vmstat pgmajfault)"}));
const MetricDesc kSwapIn =
    shown_by(memory_text, {"memory", "swap_in_bytes", K::kCounter, Unit::kBytes, "Bytes swapped in (vmstat pswpin)"});
const MetricDesc kSwapOut = shown_by(
    memory_text, {"memory", "swap_out_bytes", K::kCounter, Unit::kBytes, "Bytes swapped out (vmstat pswpout)"});

// memory   used 1.2 GiB of 23.5 GiB  available 22.3 GiB  cached 4.0 GiB  ...  swap used 0 B of 0 B
// paging   faults 71989/s  major 0/s  swap in 0 B/s  out 0 B/s
void memory_text(TextBlock& b) {
  using text_order::kMemory;
  using text_order::kPaging;
  auto bytes = [&](const Shown* v) { return level(b, *v, human_bytes); };
  const Shown* total = b.take(kMemTotal);
  if (const Shown* v = b.take(kMemUsed)) {
    b.item(kMemory, "memory", "used " + bytes(v) + (total != nullptr ? " of " + human_bytes(total->value) : ""));
  } else if (total != nullptr) {
    b.item(kMemory, "memory", "total " + human_bytes(total->value));
  }
  int at = kMemory + 1;
  for (auto [desc, words] :
       {std::pair{&kMemAvail, "available"}, std::pair{&kMemCached, "cached"}, std::pair{&kMemBuffers, "buffers"},
        std::pair{&kMemAnon, "anon"}, std::pair{&kMemFree, "free"}}) {
    if (const Shown* v = b.take(*desc)) b.item(at, "memory", std::string(words) + " " + bytes(v));
    ++at;
  }
  const Shown* swap_total = b.take(kSwapTotal);
  const Shown* swap_free = b.take(kSwapFree);
  if (swap_total != nullptr && swap_free != nullptr) {
    b.item(kMemory + 10, "memory",
           fmt::format("swap used {} of {}", human_bytes(swap_total->value - swap_free->value),
                       human_bytes(swap_total->value)));
  }
  if (const Shown* v = b.take(kPgFault)) b.item(kPaging, "paging", "faults " + counted(b, *v));
  if (const Shown* v = b.take(kPgMajFault)) b.item(kPaging + 1, "paging", "major " + counted(b, *v));
  if (const Shown* v = b.take(kSwapIn)) b.item(kPaging + 2, "paging", "swap in " + counted(b, *v, true));
  if (const Shown* v = b.take(kSwapOut)) b.item(kPaging + 3, "paging", "swap out " + counted(b, *v, true));
  b.take_all(kPgFault);  // perf's page-fault counters, outranked by vmstat's where both are read
  b.take_all(kPgMajFault);
}

class MemorySource final : public Source {
 public:
  explicit MemorySource(const FsRoots& roots)
      : meminfo_path_(roots.proc + "/meminfo"),
        vmstat_path_(roots.proc + "/vmstat"),
        page_size_(static_cast<double>(::sysconf(_SC_PAGESIZE))) {}
  [[nodiscard]] std::string_view name() const override { return "memory"; }

  void collect(Samples& out) override {
    if (auto text = reader_.read(meminfo_path_)) {
      if (auto m = procfs::parse_meminfo(*text)) {
        uint64_t avail = m->mem_available.value_or(m->mem_free + m->buffers + m->cached);
        auto add = [&](const MetricDesc& d, uint64_t v) { out.push_back({&d, {}, static_cast<double>(v)}); };
        add(kMemTotal, m->mem_total);
        add(kMemUsed, m->mem_total > avail ? m->mem_total - avail : 0);
        add(kMemFree, m->mem_free);
        add(kMemAvail, avail);
        add(kMemCached, m->cached);
        add(kMemBuffers, m->buffers);
        add(kMemAnon, m->anon_pages);
        add(kSwapTotal, m->swap_total);
        add(kSwapFree, m->swap_free);
      }
    }
    if (auto text = reader_.read(vmstat_path_)) {
      if (auto v = procfs::parse_vmstat(*text)) {
        out.push_back({&kPgFault, {}, static_cast<double>(v->pgfault)});
        out.push_back({&kPgMajFault, {}, static_cast<double>(v->pgmajfault)});
        out.push_back({&kSwapIn, {}, static_cast<double>(v->pswpin) * page_size_});
        out.push_back({&kSwapOut, {}, static_cast<double>(v->pswpout) * page_size_});
      }
    }
  }

 private:
  std::string meminfo_path_, vmstat_path_;
  double page_size_;
  FileReader reader_;
};

// --- pressure stall information: /proc/pressure/{cpu,io,memory} --------------------------------

void pressure_text(TextBlock& b);

const MetricDesc kPsiStall = system_figure(
    SystemFigure::kPressureStall,
    shown_by(pressure_text, {"pressure", "stall_seconds", K::kCounter, Unit::kSeconds,
                             "Time some (or all: kind=full) runnable tasks were stalled on the resource"}));
const MetricDesc kPsiAvg10 = shown_by(pressure_text, {"pressure", "avg10_percent", K::kGauge, Unit::kPercent,
                                                      "The kernel's 10 s running average of the stall share"});

// psi      cpu some 71.9% full 0.0%  io some 4.0% full 0.5%  memory some 0.0% full 0.0%
// (the share of the interval, or of the run, that tasks were stalled: at most 100 %, though the
// kernel's totals, aggregated lazily per CPU, can move a little more than the wall clock over a
// short interval)
void pressure_text(TextBlock& b) {
  int at = text_order::kPressure;
  for (const char* res : {"cpu", "io", "memory"}) {
    std::string item;
    for (const char* kind : {"some", "full"}) {
      if (const Shown* v = b.take(kPsiStall, {{"resource", res}, {"kind", kind}})) {
        item += fmt::format("{}{} {}", item.empty() ? std::string(res) + " " : " ", kind, percent(std::clamp(100 * v->rate, 0.0, 100.0)));
      }
    }
    if (!item.empty()) b.item(at++, "psi", item);
  }
  b.take_all(kPsiAvg10);  // the kernel's own 10 s average: the shares above are exact
}

class PressureSource final : public Source {
 public:
  explicit PressureSource(const FsRoots& roots) : dir_(roots.proc + "/pressure/") {}
  [[nodiscard]] std::string_view name() const override { return "pressure"; }

  void collect(Samples& out) override {
    for (const char* res : {"cpu", "io", "memory"}) {
      auto text = reader_.read(dir_ + res);
      if (!text) continue;
      auto p = procfs::parse_pressure(*text);
      if (!p) continue;
      add(out, res, "some", p->some);
      if (p->full) add(out, res, "full", *p->full);
    }
  }

 private:
  static void add(Samples& out, const char* res, const char* kind, const procfs::PressureLine& l) {
    out.push_back({&kPsiStall, {{"resource", res}, {"kind", kind}}, static_cast<double>(l.total_us) / 1e6});
    out.push_back({&kPsiAvg10, {{"resource", res}, {"kind", kind}}, l.avg10});
  }
  std::string dir_;
  FileReader reader_;
};

// --- NUMA nodes: /sys/devices/system/node/nodeN/meminfo ----------------------------------------

void numa_text(TextBlock& b);

const MetricDesc kNodeTotal =
    shown_by(numa_text, {"numa", "total_bytes", K::kGauge, Unit::kBytes, "Memory of the NUMA node"});
const MetricDesc kNodeFree =
    shown_by(numa_text, {"numa", "free_bytes", K::kGauge, Unit::kBytes, "Free memory of the NUMA node"});
const MetricDesc kNodeUsed =
    shown_by(numa_text, {"numa", "used_bytes", K::kGauge, Unit::kBytes, "Used memory of the NUMA node"});

// numa     node0: used 3.8 GiB of 10.5 GiB  free 6.7 GiB      (the units and order of the memory line)
//          node1: ...
void numa_text(TextBlock& b) {
  int at = text_order::kNuma;
  for (const Shown* free : b.take_all(kNodeFree)) {
    std::string node(label_of(*free, "node"));
    const Shown* total = b.take(kNodeTotal, {{"node", node}});
    const Shown* used = b.take(kNodeUsed, {{"node", node}});
    b.line(at++, "numa",
           fmt::format("node{}: used {} of {}  free {}", node, used != nullptr ? human_bytes(used->value) : "n/a",
                       total != nullptr ? human_bytes(total->value) : "n/a", human_bytes(free->value)));
  }
}

class NumaSource final : public Source {
 public:
  NumaSource(std::string dir, std::vector<std::string> nodes) : dir_(std::move(dir)), nodes_(std::move(nodes)) {}
  [[nodiscard]] std::string_view name() const override { return "numa"; }

  void collect(Samples& out) override {
    for (const std::string& node : nodes_) {
      auto text = reader_.read(dir_ + node + "/meminfo");
      if (!text) continue;
      auto m = procfs::parse_node_meminfo(*text);
      if (!m) continue;
      Labels l{{"node", node.substr(4)}};
      uint64_t used = m->mem_used.value_or(m->mem_total - m->mem_free);
      out.push_back({&kNodeTotal, l, static_cast<double>(m->mem_total)});
      out.push_back({&kNodeFree, l, static_cast<double>(m->mem_free)});
      out.push_back({&kNodeUsed, std::move(l), static_cast<double>(used)});
    }
  }

 private:
  std::string dir_;
  std::vector<std::string> nodes_;
  FileReader reader_;
};

// --- thermal zones: /sys/class/thermal/thermal_zoneN --------------------------------------------

void thermal_text(TextBlock& b);

const MetricDesc kZoneTemp =
    shown_by(thermal_text, {"thermal", "temp_celsius", K::kGauge, Unit::kCelsius, "Temperature of the thermal zone"});
const MetricDesc kZoneTrip =
    shown_by(thermal_text, {"thermal", "trip_celsius", K::kGauge, Unit::kCelsius,
                            "Trip point of the thermal zone (type: passive, hot, critical, ...)"});

// thermal  x86_pkg_temp: 67°C (trip passive: 95°C, critical: 105°C)
void thermal_text(TextBlock& b) {
  int at = text_order::kThermal;
  for (const Shown* v : b.take_all(kZoneTemp)) {
    std::string zone(label_of(*v, "zone"));
    std::string s = fmt::format("{}: {:.0f}°C", zone, v->value);
    if (b.summary() && std::isfinite(v->max)) s += fmt::format(" (max {:.0f}°C)", v->max);
    std::string trips;
    while (const Shown* t = b.take(kZoneTrip, {{"zone", zone}})) {
      trips += fmt::format("{}{}: {:.0f}°C", trips.empty() ? "" : ", ", label_of(*t, "type"), t->value);
    }
    b.line(at++, "thermal", trips.empty() ? s : s + " (trip " + trips + ")");
  }
}

// Zones and trips are labelled by their type ("x86_pkg_temp", "critical"); a type that occurs
// more than once gets its number appended ("acpitz.1", "active.0") so series never merge.
class ThermalSource final : public Source {
 public:
  ThermalSource(std::string dir, const std::vector<std::string>& zones) : dir_(std::move(dir)) {
    std::vector<std::string> types, numbers;
    for (const std::string& zone : zones) {
      auto type = reader_.read(dir_ + zone + "/type");
      types.emplace_back(type ? trim(*type) : std::string_view("unknown"));
      numbers.push_back(zone.substr(std::string_view("thermal_zone").size()));
    }
    std::vector<std::string> labels = unique_labels(types, numbers);
    for (size_t i = 0; i < zones.size(); ++i) zones_.push_back({zones[i], labels[i]});
  }
  [[nodiscard]] std::string_view name() const override { return "thermal"; }

  void collect(Samples& out) override {
    for (const Zone& zone : zones_) {
      std::string base = dir_ + zone.dir + "/";
      auto temp_text = reader_.read(base + "temp");
      if (!temp_text) continue;  // some zones refuse reads while their device sleeps
      auto temp = procfs::parse_millicelsius(*temp_text);
      if (!temp) continue;
      out.push_back({&kZoneTemp, {{"zone", zone.label}}, *temp});
      std::vector<std::string> trip_types;
      std::vector<double> trip_temps;
      for (int i = 0;; ++i) {
        std::string trip = base + "trip_point_" + std::to_string(i) + "_";
        auto ttext = reader_.read(trip + "temp");
        if (!ttext) break;
        auto ttemp = procfs::parse_millicelsius(*ttext);
        auto ttype = reader_.read(trip + "type");
        trip_types.emplace_back(ttype ? trim(*ttype) : std::string_view("unknown"));
        trip_temps.push_back(ttemp ? *ttemp : std::numeric_limits<double>::quiet_NaN());
      }
      std::vector<std::string> numbers;
      for (size_t i = 0; i < trip_types.size(); ++i) numbers.push_back(std::to_string(i));
      std::vector<std::string> trip_labels = unique_labels(trip_types, numbers);
      for (size_t i = 0; i < trip_types.size(); ++i) {
        if (std::isnan(trip_temps[i])) continue;
        out.push_back({&kZoneTrip, {{"zone", zone.label}, {"type", trip_labels[i]}}, trip_temps[i]});
      }
    }
  }

 private:
  struct Zone {
    std::string dir, label;
  };
  std::string dir_;
  std::vector<Zone> zones_;
  FileReader reader_;
};

template <typename S>
Result<std::unique_ptr<Source>> probe(std::unique_ptr<S> s, const std::string& what) {
  Samples out;
  s->collect(out);
  if (out.empty()) return make_error(Errc::kUnavailable, "cannot read " + what);
  return std::unique_ptr<Source>(std::move(s));
}

Result<std::vector<std::string>> sorted_entries(const std::string& dir, std::string_view prefix,
                                                const std::string& none_reason) {
  auto names = list_dir(dir, prefix);
  if (!names || names->empty()) return make_error(Errc::kUnavailable, none_reason);
  // node10 after node9: numeric order of the suffix.
  std::sort(names->begin(), names->end(), [&](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return names;
}

}  // namespace

Result<std::unique_ptr<Source>> make_cpu_source(const FsRoots& roots) {
  return probe(std::make_unique<CpuSource>(roots), roots.proc + "/stat");
}

Result<std::unique_ptr<Source>> make_memory_source(const FsRoots& roots) {
  return probe(std::make_unique<MemorySource>(roots), roots.proc + "/meminfo");
}

Result<std::unique_ptr<Source>> make_pressure_source(const FsRoots& roots) {
  FileReader r;
  auto text = r.read(roots.proc + "/pressure/cpu");
  if (!text) {
    return make_error(Errc::kUnavailable, text.error().code == Errc::kNotFound
                                              ? "no " + roots.proc + "/pressure (kernel without CONFIG_PSI)"
                                              : text.error().message + " (boot with psi=1 to enable PSI)");
  }
  return probe(std::make_unique<PressureSource>(roots), roots.proc + "/pressure");
}

Result<std::unique_ptr<Source>> make_numa_source(const FsRoots& roots) {
  std::string dir = roots.sys + "/devices/system/node/";
  auto nodes = sorted_entries(dir, "node", "no NUMA nodes under " + dir);
  if (!nodes) return nodes.error();
  return probe(std::make_unique<NumaSource>(dir, std::move(*nodes)), dir + "node*/meminfo");
}

Result<std::unique_ptr<Source>> make_thermal_source(const FsRoots& roots) {
  std::string dir = roots.sys + "/class/thermal/";
  auto zones = sorted_entries(dir, "thermal_zone", "no thermal zones under " + dir + " (usual in a VM)");
  if (!zones) return zones.error();
  return probe(std::make_unique<ThermalSource>(dir, std::move(*zones)), dir + "thermal_zone*/temp");
}

}  // namespace pm
