// SPDX-License-Identifier: Apache-2.0
#include "sources/files/system_parsers.h"

#include <array>
#include <cstddef>
#include <limits>

#include "core/text.h"
#include "sources/files/key_value.h"

namespace pm::procfs {
namespace {

// /proc/stat "cpu" or "cpuN" line (label already split off). Kernels before 2.6.33 print fewer
// columns, so only user..idle are required; missing trailing columns stay 0.
Result<CpuTimes> parse_cpu_line(std::string_view label, std::string_view rest) {
  constexpr std::string_view kFile = "/proc/stat";
  CpuTimes t;
  if (label.size() > 3) {
    std::optional<uint64_t> n = parse_u64(label.substr(3));
    if (!n || *n > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      return parse_error(kFile, "bad cpu label '" + std::string(label) + "'");
    }
    t.cpu = static_cast<int>(*n);
  }
  std::array<uint64_t*, 10> cols{&t.user, &t.nice,    &t.system, &t.idle,  &t.iowait,
                                 &t.irq,  &t.softirq, &t.steal,  &t.guest, &t.guest_nice};
  size_t n = 0;
  for (std::string_view f = next_field(rest); !f.empty() && n < cols.size(); f = next_field(rest)) {
    std::optional<uint64_t> v = parse_u64(f);
    if (!v) return bad_value(kFile, label, f);
    *cols[n++] = *v;
  }
  if (n < 4) return parse_error(kFile, std::string(label) + " line has fewer than 4 columns");
  return t;
}

// Shared by /proc/meminfo and nodeN/meminfo; `node` strips the "Node N " prefix first.
Result<MemInfo> parse_meminfo_impl(std::string_view text, bool node) {
  static constexpr std::array<KeyField<MemInfo>, 19> kFields{{
      {"MemTotal", &MemInfo::mem_total, true},
      {"MemFree", &MemInfo::mem_free, true},
      {"MemAvailable", &MemInfo::mem_available},
      {"MemUsed", &MemInfo::mem_used},
      {"Buffers", &MemInfo::buffers},
      {"Cached", &MemInfo::cached},
      {"SwapCached", &MemInfo::swap_cached},
      {"Active", &MemInfo::active},
      {"Inactive", &MemInfo::inactive},
      {"AnonPages", &MemInfo::anon_pages},
      {"Mapped", &MemInfo::mapped},
      {"Shmem", &MemInfo::shmem},
      {"Slab", &MemInfo::slab},
      {"SReclaimable", &MemInfo::s_reclaimable},
      {"Dirty", &MemInfo::dirty},
      {"Writeback", &MemInfo::writeback},
      {"SwapTotal", &MemInfo::swap_total},
      {"SwapFree", &MemInfo::swap_free},
      {"FilePages", &MemInfo::file_pages},
  }};
  MemInfo m;
  KeyValueFormat format{node ? "nodeN/meminfo" : "/proc/meminfo", ':', node ? "Node" : ""};
  if (Status s = parse_key_values(text, format, kFields, m); !s) return s.error();
  return m;
}

// One "some ..." / "full ..." line of a pressure file, label already split off.
Result<PressureLine> parse_pressure_line(std::string_view label, std::string_view rest) {
  constexpr std::string_view kFile = "/proc/pressure";
  PressureLine p;
  bool a10 = false, a60 = false, a300 = false, tot = false;
  for (std::string_view f = next_field(rest); !f.empty(); f = next_field(rest)) {
    size_t eq = f.find('=');
    if (eq == std::string_view::npos) return bad_value(kFile, label, f);
    std::string_view k = f.substr(0, eq), v = f.substr(eq + 1);
    bool ok = true;
    if (k == "total") {
      std::optional<uint64_t> n = parse_u64(v);
      ok = n.has_value();
      p.total_us = n.value_or(0);
      tot = ok;
    } else if (k == "avg10" || k == "avg60" || k == "avg300") {
      std::optional<double> d = parse_double(v);
      ok = d.has_value();
      double& dst = k == "avg10" ? p.avg10 : k == "avg60" ? p.avg60 : p.avg300;
      bool& seen = k == "avg10" ? a10 : k == "avg60" ? a60 : a300;
      dst = d.value_or(0);
      seen = ok;
    }
    if (!ok) return bad_value(kFile, label, f);
  }
  if (!a10 || !a60 || !a300 || !tot) {
    return parse_error(kFile, std::string(label) + " line lacks avg10/avg60/avg300/total");
  }
  return p;
}

}  // namespace

Result<ProcStat> parse_proc_stat(std::string_view text) {
  constexpr std::string_view kFile = "/proc/stat";
  ProcStat st;
  bool have_cpu = false;
  // These have been printed by every 2.6+ kernel; a missing one means we misread the file.
  struct Counter {
    std::string_view key;
    uint64_t ProcStat::*member;
    bool seen;
  };
  std::array<Counter, 5> counters{{{"ctxt", &ProcStat::ctxt, false},
                                   {"btime", &ProcStat::btime, false},
                                   {"processes", &ProcStat::processes, false},
                                   {"procs_running", &ProcStat::procs_running, false},
                                   {"procs_blocked", &ProcStat::procs_blocked, false}}};
  std::optional<Error> err;
  for_each_line(text, [&](std::string_view line) {
    if (err) return;
    std::string_view rest = line;
    std::string_view label = next_field(rest);
    // Only "cpu" and "cpuN" are CPU lines; any other label is skipped like an unknown key.
    if (label.substr(0, 3) == "cpu" && label.find_first_not_of("0123456789", 3) == std::string_view::npos) {
      Result<CpuTimes> t = parse_cpu_line(label, rest);
      if (!t) {
        err = t.error();
      } else if (t->cpu < 0) {
        st.all = *t;
        have_cpu = true;
      } else {
        st.cpus.push_back(*t);
      }
      return;
    }
    for (Counter& c : counters) {
      if (c.key != label) continue;
      std::string_view f = next_field(rest);
      std::optional<uint64_t> v = parse_u64(f);
      if (!v) {
        err = bad_value(kFile, label, f);
        return;
      }
      st.*c.member = *v;
      c.seen = true;
    }
  });
  if (err) return *err;
  if (!have_cpu) return parse_error(kFile, "missing aggregate cpu line");
  for (const Counter& c : counters) {
    if (!c.seen) return parse_error(kFile, "missing " + std::string(c.key));
  }
  return st;
}

Result<MemInfo> parse_meminfo(std::string_view text) { return parse_meminfo_impl(text, false); }
Result<MemInfo> parse_node_meminfo(std::string_view text) { return parse_meminfo_impl(text, true); }

Result<VmStat> parse_vmstat(std::string_view text) {
  // oom_kill (4.13+) and the swap counters may be absent; the fault counters never are.
  static constexpr std::array<KeyField<VmStat>, 7> kFields{{{"pgfault", &VmStat::pgfault, true},
                                                             {"pgmajfault", &VmStat::pgmajfault, true},
                                                             {"pswpin", &VmStat::pswpin},
                                                             {"pswpout", &VmStat::pswpout},
                                                             {"pgpgin", &VmStat::pgpgin},
                                                             {"pgpgout", &VmStat::pgpgout},
                                                             {"oom_kill", &VmStat::oom_kill}}};
  VmStat vm;
  if (Status s = parse_key_values(text, {"/proc/vmstat", ' '}, kFields, vm); !s) return s.error();
  return vm;
}

Result<Pressure> parse_pressure(std::string_view text) {
  Pressure p;
  bool have_some = false;
  std::optional<Error> err;
  for_each_line(text, [&](std::string_view line) {
    if (err) return;
    std::string_view rest = line;
    std::string_view label = next_field(rest);
    if (label != "some" && label != "full") return;
    Result<PressureLine> l = parse_pressure_line(label, rest);
    if (!l) {
      err = l.error();
    } else if (label == "some") {
      p.some = *l;
      have_some = true;
    } else {
      p.full = *l;
    }
  });
  if (err) return *err;
  if (!have_some) return parse_error("/proc/pressure", "missing some line");
  return p;
}

Result<LoadAvg> parse_loadavg(std::string_view text) {
  constexpr std::string_view kFile = "/proc/loadavg";
  // Format: "0.02 0.04 0.01 1/82 2685" (the last field, the newest pid, is not used).
  LoadAvg la;
  std::string_view rest = text;
  std::array<double*, 3> loads{&la.load1, &la.load5, &la.load15};
  for (double* d : loads) {
    std::string_view f = next_field(rest);
    std::optional<double> v = parse_double(f);
    if (!v) return f.empty() ? parse_error(kFile, "fewer than 4 fields") : bad_value(kFile, "load", f);
    *d = *v;
  }
  std::string_view tasks = next_field(rest);
  size_t slash = tasks.find('/');
  if (slash == std::string_view::npos) return parse_error(kFile, "missing runnable/total field");
  std::optional<uint64_t> run = parse_u64(tasks.substr(0, slash));
  std::optional<uint64_t> total = parse_u64(tasks.substr(slash + 1));
  if (!run || !total) return bad_value(kFile, "runnable/total", tasks);
  la.runnable = *run;
  la.total_tasks = *total;
  return la;
}

Result<double> parse_millicelsius(std::string_view text) {
  // Signed: sensors below freezing (outdoor, some ACPI zones) report negative millidegrees.
  std::optional<int64_t> v = parse_i64(trim(text));
  if (!v) return bad_value("thermal_zone", "temp", trim(text));
  return static_cast<double>(*v) / 1000.0;
}

}  // namespace pm::procfs
