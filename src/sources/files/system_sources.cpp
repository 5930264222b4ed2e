// SPDX-License-Identifier: Apache-2.0
#include "sources/files/system_sources.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/file_reader.h"
#include "core/labels.h"
#include "core/text.h"
#include "sources/files/system_parsers.h"

namespace pm {
namespace {

using K = MetricKind;

// --- cpu and scheduler: /proc/stat, /proc/loadavg ---------------------------------------------

const MetricDesc kCpuTime{"cpu", "time_seconds", K::kCounter, Unit::kSeconds,
                          "CPU time spent in each mode, per CPU (cpu=\"all\" for the whole system)"};
const MetricDesc kCpuTotal{"cpu", "total_seconds", K::kCounter, Unit::kSeconds,
                           "CPU time in all modes, per CPU: the denominator of utilisation"};
const MetricDesc kCpuUtil{"cpu", "utilisation_percent", K::kGauge, Unit::kPercent,
                          "Share of CPU time spent in each mode over the interval, per CPU"};
const MetricDesc kCtxt{"sched", "context_switches", K::kCounter, Unit::kNone,
                       "Context switches on all CPUs (/proc/stat ctxt)"};
const MetricDesc kForks{"sched", "forks", K::kCounter, Unit::kNone,
                        "Processes and threads created (/proc/stat processes)"};
const MetricDesc kRunning{"sched", "procs_running", K::kGauge, Unit::kNone, "Runnable tasks"};
const MetricDesc kBlocked{"sched", "procs_blocked", K::kGauge, Unit::kNone, "Tasks blocked waiting for I/O"};
const MetricDesc kLoad1{"sched", "load1", K::kGauge, Unit::kNone, "Load average over 1 minute"};
const MetricDesc kLoad5{"sched", "load5", K::kGauge, Unit::kNone, "Load average over 5 minutes"};
const MetricDesc kLoad15{"sched", "load15", K::kGauge, Unit::kNone, "Load average over 15 minutes"};

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
        add_cpu(out, "all", st->all);
        for (const auto& c : st->cpus) add_cpu(out, std::to_string(c.cpu), c);
        out.push_back({&kCtxt, {}, static_cast<double>(st->ctxt)});
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

const MetricDesc kMemTotal{"memory", "total_bytes", K::kGauge, Unit::kBytes, "MemTotal"};
const MetricDesc kMemUsed{
    "memory", "used_bytes", K::kGauge, Unit::kBytes, "Memory in use: MemTotal - MemAvailable", "global_mem_used"};
const MetricDesc kMemFree{"memory", "free_bytes", K::kGauge, Unit::kBytes, "MemFree"};
const MetricDesc kMemAvail{"memory", "available_bytes", K::kGauge, Unit::kBytes, "MemAvailable"};
const MetricDesc kMemCached{
    "memory", "cached_bytes", K::kGauge, Unit::kBytes, "Page cache (Cached, includes shmem)", "global_cached"};
const MetricDesc kMemBuffers{"memory", "buffers_bytes", K::kGauge, Unit::kBytes, "Buffers"};
const MetricDesc kMemAnon{"memory",     "anon_bytes", K::kGauge, Unit::kBytes, "Anonymous memory (AnonPages)",
                          "global_anon"};
const MetricDesc kSwapTotal{"memory", "swap_total_bytes", K::kGauge, Unit::kBytes, "SwapTotal"};
const MetricDesc kSwapFree{"memory", "swap_free_bytes", K::kGauge, Unit::kBytes, "SwapFree", "global_swap_free"};
const MetricDesc kPgFault{"memory", "page_faults", K::kCounter, Unit::kNone,
                          "Page faults, minor and major (vmstat pgfault)"};
const MetricDesc kPgMajFault{"memory", "major_faults", K::kCounter, Unit::kNone,
                             "Major page faults, that needed I/O (vmstat pgmajfault)"};
const MetricDesc kSwapIn{"memory", "swap_in_bytes", K::kCounter, Unit::kBytes, "Bytes swapped in (vmstat pswpin)"};
const MetricDesc kSwapOut{"memory", "swap_out_bytes", K::kCounter, Unit::kBytes, "Bytes swapped out (vmstat pswpout)"};

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

const MetricDesc kPsiStall{"pressure", "stall_seconds", K::kCounter, Unit::kSeconds,
                           "Time some (or all: kind=full) runnable tasks were stalled on the resource"};
const MetricDesc kPsiAvg10{"pressure", "avg10_percent", K::kGauge, Unit::kPercent,
                           "The kernel's 10 s running average of the stall share"};

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

const MetricDesc kNodeTotal{"numa", "total_bytes", K::kGauge, Unit::kBytes, "Memory of the NUMA node"};
const MetricDesc kNodeFree{"numa", "free_bytes", K::kGauge, Unit::kBytes, "Free memory of the NUMA node"};
const MetricDesc kNodeUsed{"numa", "used_bytes", K::kGauge, Unit::kBytes, "Used memory of the NUMA node"};

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

const MetricDesc kZoneTemp{"thermal", "temp_celsius", K::kGauge, Unit::kCelsius, "Temperature of the thermal zone"};
const MetricDesc kZoneTrip{"thermal", "trip_celsius", K::kGauge, Unit::kCelsius,
                           "Trip point of the thermal zone (type: passive, hot, critical, ...)"};

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
