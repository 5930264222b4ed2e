// SPDX-License-Identifier: Apache-2.0
#include "sinks/top_table.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/outside_text.h"

namespace pm {
namespace {

const std::string kNa = "n/a";

double per_s(double v, double seconds) { return seconds > 0 ? v / seconds : 0; }
std::string pct_of(double v, double seconds) { return short_percent(100 * per_s(v, seconds)); }

const TopFigures& figures(const TopRow& r) { return r.process != nullptr ? r.process->f : r.cgroup->f; }

std::string cpu(const TopRow& r, double s) { return pct_of(figures(r).cpu_s(), s); }
std::string usr(const TopRow& r, double s) { return pct_of(figures(r).user_s, s); }
std::string sys(const TopRow& r, double s) { return pct_of(figures(r).system_s, s); }
std::string runq(const TopRow& r, double s) { return pct_of(figures(r).runq_s, s); }
std::string blocked(const TopRow& r, double s) { return pct_of(figures(r).blocked_s, s); }
std::string reads(const TopRow& r, double s) { return short_bytes(per_s(figures(r).read_bytes, s)); }
std::string writes(const TopRow& r, double s) { return short_bytes(per_s(figures(r).write_bytes, s)); }
std::string faults(const TopRow& r, double s) { return short_count(per_s(figures(r).faults, s)); }
std::string switches(const TopRow& r, double s) { return short_count(per_s(figures(r).switches, s)); }
std::string rss(const TopRow& r, double /*s*/) {
  const auto& v = figures(r).rss_bytes;
  if (!v && r.process != nullptr && r.process->kernel) return "-";  // a kernel thread has no memory of its own
  return v ? short_bytes(*v) : kNa;
}

std::string pid(const TopRow& r, double /*s*/) { return std::to_string(r.process->pid); }
std::string tid(const TopRow& r, double /*s*/) { return std::to_string(r.process->tid); }
// x: it ended within the interval (its last figures); k: a kernel thread.
std::string process_state(const TopRow& r, double /*s*/) {
  return r.process->exited ? "x" : r.process->kernel ? "k" : "";
}
std::string comm(const TopRow& r, double /*s*/) { return printable(r.process->comm); }
std::string process_cgroup(const TopRow& r, double /*s*/) { return printable(r.process->cgroup); }

std::string procs(const TopRow& r, double /*s*/) { return std::to_string(r.cgroup->processes); }
// +: the row counts its descendants' processes too (it is at the depth limit).
std::string cgroup_state(const TopRow& r, double /*s*/) {
  return r.cgroup->removed ? "x" : r.cgroup->with_descendants ? "+" : "";
}
std::string path(const TopRow& r, double /*s*/) { return printable(r.cgroup->path); }
std::string cpu_stat(const TopRow& r, double s) {
  return r.cgroup->cpu_stat_s ? pct_of(*r.cgroup->cpu_stat_s, s) : kNa;
}
std::string opt_percent(const std::optional<double>& v) { return v ? short_percent(*v) : kNa; }
std::string psi_cpu(const TopRow& r, double /*s*/) { return opt_percent(r.cgroup->cpu_pressure_pct); }
std::string psi_io(const TopRow& r, double /*s*/) { return opt_percent(r.cgroup->io_pressure_pct); }
std::string psi_mem(const TopRow& r, double /*s*/) { return opt_percent(r.cgroup->memory_pressure_pct); }
std::string runq_p99(const TopRow& r, double /*s*/) {
  if (r.cgroup->runq_p99_s) return std::string("<").append(short_time(*r.cgroup->runq_p99_s));
  return r.cgroup->runq_read ? "-" : kNa;  // "-": no task of it waited in the interval
}

using S = TopSort;

// The figures every list has, between its identity and its name.
#define PM_TOP_FIGURES                                                                      \
  {"CPU%", 6, false, 0, S::kCpu, cpu}, {"USR%", 6, false, 6, std::nullopt, usr},            \
      {"SYS%", 6, false, 6, std::nullopt, sys}, {"RUNQ%", 6, false, 1, S::kRunq, runq},     \
      {"BLK%", 6, false, 2, S::kBlocked, blocked}, {"READ/s", 6, false, 3, S::kIo, reads},  \
      {"WRITE/s", 7, false, 3, S::kIo, writes}, {"FLT/s", 6, false, 4, S::kFaults, faults}, \
      {"CSW/s", 6, false, 7, std::nullopt, switches}, {                                     \
    "RSS", 6, false, 2, S::kMemory, rss                                                     \
  }

const std::vector<TopColumn> kProcessColumns = {
    {"PID", 7, false, 0, std::nullopt, pid},
    {"S", 1, true, 5, std::nullopt, process_state},
    {"COMM", 15, true, 0, std::nullopt, comm},
    PM_TOP_FIGURES,
    {"CGROUP", 6, true, 8, std::nullopt, process_cgroup},
};
const std::vector<TopColumn> kThreadColumns = {
    {"TID", 7, false, 0, std::nullopt, tid},
    {"PID", 7, false, 5, std::nullopt, pid},
    {"S", 1, true, 6, std::nullopt, process_state},
    {"COMM", 15, true, 0, std::nullopt, comm},
    PM_TOP_FIGURES,
    {"CGROUP", 6, true, 8, std::nullopt, process_cgroup},
};
// cpu.stat (CG CPU%), pressure (avg10) and run-queue latency come from the cgroup itself.
const std::vector<TopColumn> kCgroupColumns = {
    {"PROCS", 5, false, 0, std::nullopt, procs},     PM_TOP_FIGURES,
    {"CGCPU%", 6, false, 5, std::nullopt, cpu_stat}, {"PSCPU%", 6, false, 5, std::nullopt, psi_cpu},
    {"PSIO%", 6, false, 6, std::nullopt, psi_io},    {"PSMEM%", 6, false, 6, std::nullopt, psi_mem},
    {"RQP99", 7, false, 4, std::nullopt, runq_p99},  {"S", 1, true, 5, std::nullopt, cgroup_state},
    {"CGROUP", 24, true, 0, std::nullopt, path},
};
#undef PM_TOP_FIGURES

// Cut or padded to exactly `width`; a name cut from the left keeps its end (a path's leaf).
std::string fit(std::string s, int width, bool left, bool keep_end = false) {
  auto w = static_cast<size_t>(std::max(width, 0));
  if (s.size() > w) {
    if (keep_end && w > 1) return std::string("<").append(s, s.size() - (w - 1));
    s.resize(w);
    return s;
  }
  return left ? s + std::string(w - s.size(), ' ') : std::string(w - s.size(), ' ') + s;
}

template <typename Cell>
std::string lay_out(const std::vector<const TopColumn*>& cols, int width, Cell cell) {
  std::string line;
  int used = 0;
  for (size_t i = 0; i < cols.size(); ++i) {
    const TopColumn& c = *cols[i];
    bool last = i + 1 == cols.size();
    if (i > 0) {
      line += ' ';
      ++used;
    }
    std::string text = cell(c);
    if (last && (width < 0 || !c.left)) {  // a name in full; a number in its own width
      line += c.left ? text : fit(text, c.width, false);
    } else {
      int w = last ? std::max(width - used, 0) : c.width;
      line += fit(text, w, c.left, last && c.left);
      used += w;
    }
  }
  if (width >= 0) line = fit(line, width, true);
  return line;
}

}  // namespace

const std::vector<TopColumn>& top_columns(TopList list) {
  switch (list) {
    case TopList::kProcesses:
      return kProcessColumns;
    case TopList::kThreads:
      return kThreadColumns;
    case TopList::kCgroups:
      return kCgroupColumns;
  }
  return kProcessColumns;
}

std::vector<const TopColumn*> fit_top_columns(TopList list, int width, TopSort sort) {
  const std::vector<TopColumn>& all = top_columns(list);
  std::vector<bool> keep(all.size(), false);
  int used = 0;
  auto take = [&](size_t i) {
    keep[i] = true;
    used += all[i].width + 1;
  };
  // The identity, the name and the sort key first, then by priority while they fit.
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].priority == 0 || all[i].sort == sort) take(i);
  }
  for (int prio = 1; prio <= 8; ++prio) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (!keep[i] && all[i].priority == prio && used + all[i].width + 1 <= width + 1) take(i);
    }
  }
  std::vector<const TopColumn*> out;
  for (size_t i = 0; i < all.size(); ++i) {
    if (keep[i]) out.push_back(&all[i]);
  }
  return out;
}

std::string top_header(const std::vector<const TopColumn*>& cols, int width) {
  return lay_out(cols, width, [](const TopColumn& c) { return std::string(c.title); });
}

std::string top_line(const std::vector<const TopColumn*>& cols, const TopRow& row, double seconds, int width) {
  return lay_out(cols, width, [&](const TopColumn& c) { return c.cell(row, seconds); });
}

std::string short_bytes(double b) {
  if (!std::isfinite(b)) return kNa;
  if (b < 1024) return fmt::format("{:.0f}", b);
  const char* units = "KMGTPE";
  double v = b / 1024;
  int u = 0;
  while (v >= 1023.95 && u < 5) {
    v /= 1024;
    ++u;
  }
  return v < 9.95 ? fmt::format("{:.1f}{}", v, units[u]) : fmt::format("{:.0f}{}", v, units[u]);
}

std::string short_count(double n) {
  if (!std::isfinite(n)) return kNa;
  if (n < 999.5) return fmt::format("{:.0f}", n);
  const char* units = "kMGT";
  double v = n / 1000;
  int u = 0;
  while (v >= 999.5 && u < 3) {
    v /= 1000;
    ++u;
  }
  return v < 9.95 ? fmt::format("{:.1f}{}", v, units[u]) : fmt::format("{:.0f}{}", v, units[u]);
}

std::string short_percent(double pct) {
  if (!std::isfinite(pct)) return kNa;
  return pct < 999.95 ? fmt::format("{:.1f}", pct) : fmt::format("{:.0f}", pct);
}

std::string short_time(double s) {
  if (!std::isfinite(s)) return kNa;
  if (s < 1e-6) return fmt::format("{:.0f}ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.0f}us", s * 1e6);
  if (s < 1) return fmt::format("{:.{}f}ms", s * 1e3, s < 1e-2 ? 1 : 0);
  return fmt::format("{:.1f}s", s);
}

std::string top_tables_text(const TopRecord& top) {
  std::string s;
  auto table = [&](TopList list, const char* what, size_t rows, auto row_of) {
    if (rows == 0) return;
    // One section in the block: "top" heads the first table only.
    s += fmt::format("{:<9}{} by {}", s.empty() ? "top" : "", what, to_string(top.sort));
    if (list == TopList::kProcesses) s += fmt::format(": {} processes, the first {}", top.processes_seen, rows);
    s += "\n";
    std::vector<const TopColumn*> cols;
    for (const TopColumn& c : top_columns(list)) cols.push_back(&c);
    s += "         " + top_header(cols, -1) + "\n";
    for (size_t i = 0; i < rows; ++i) s += "         " + top_line(cols, row_of(i), top.seconds, -1) + "\n";
  };
  table(TopList::kProcesses, "processes", top.processes.size(), [&](size_t i) {
    return TopRow{&top.processes[i], nullptr};
  });
  table(TopList::kThreads, "threads", top.threads.size(), [&](size_t i) { return TopRow{&top.threads[i], nullptr}; });
  table(TopList::kCgroups, "cgroups", top.cgroups.size(), [&](size_t i) { return TopRow{nullptr, &top.cgroups[i]}; });
  if (top.exits_dropped > 0) {
    s += fmt::format("{:<9}note: {} processes ended in the interval without room to keep their last figures\n",
                     s.empty() ? "top" : "", top.exits_dropped);
  }
  return s;
}

}  // namespace pm
