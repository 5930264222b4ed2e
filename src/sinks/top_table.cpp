// SPDX-License-Identifier: Apache-2.0
#include "sinks/top_table.h"

#include <algorithm>
#include <cmath>

#include <type_traits>

#include <fmt/format.h>

#include "core/outside_text.h"

namespace pm {
namespace {

const std::string kNa = "n/a";

double per_s(double v, double seconds) { return seconds > 0 ? v / seconds : 0; }
std::string pct_of(double v, double seconds) { return short_percent(100 * per_s(v, seconds)); }

const TopFigures& figures(const TopRow& r) { return r.process != nullptr ? r.process->f : r.cgroup->f; }

std::string cpu(const TopRow& r, double s) { return pct_of(figures(r).cpu_s(), s); }
std::string usr(const TopRow& r, double s) { return pct_of(figures(r).user_s(), s); }
std::string sys(const TopRow& r, double s) { return pct_of(figures(r).system_s(), s); }
std::string runq(const TopRow& r, double s) { return pct_of(figures(r).runq_s(), s); }
// n/a where it could not be had (from /proc: never blocked time; others' processes' I/O).
std::string blocked(const TopRow& r, double s) {
  return figures(r).blocked_known ? pct_of(figures(r).blocked_s(), s) : kNa;
}
std::string reads(const TopRow& r, double s) {
  return figures(r).io_known ? short_bytes(per_s(figures(r).read_bytes(), s)) : kNa;
}
std::string writes(const TopRow& r, double s) {
  return figures(r).io_known ? short_bytes(per_s(figures(r).write_bytes(), s)) : kNa;
}
std::string faults(const TopRow& r, double s) { return short_count(per_s(figures(r).faults(), s)); }
std::string switches(const TopRow& r, double s) { return short_count(per_s(figures(r).switches(), s)); }
std::string rss(const TopRow& r, double /*s*/) {
  const auto& v = figures(r).rss_bytes;
  if (!v && r.process != nullptr && r.process->kernel) return "-";  // a kernel thread has no memory of its own
  return v ? short_bytes(*v) : kNa;
}

std::string pid(const TopRow& r, double /*s*/) { return std::to_string(r.process->pid); }
std::string tid(const TopRow& r, double /*s*/) { return std::to_string(r.process->tid); }
// Its state at the reading as ps writes it (R running or runnable, S sleeping, D waiting on a
// device, Z zombie, T stopped, t traced, I idle kernel thread), X: it ended within the interval
// (its last figures); then k for a kernel thread.
std::string process_state(const TopRow& r, double /*s*/) {
  const TopProcess& p = *r.process;
  std::string st(1, p.exited ? 'X' : p.state >= 'A' && p.state <= 'z' ? p.state : '?');
  if (p.kernel) st += 'k';
  return st;
}
std::string user(const TopRow& r, double /*s*/) {
  const TopProcess& p = *r.process;
  if (!p.user.empty()) return printable(p.user);
  return p.uid ? std::to_string(*p.uid) : kNa;
}
std::string nice(const TopRow& r, double /*s*/) {
  return r.process->nice ? std::to_string(*r.process->nice) : kNa;
}
// printable(): a process names itself (prctl, argv), so no escape sequence reaches the terminal.
std::string comm(const TopRow& r, double /*s*/) { return r.tree + printable(r.process->comm); }
std::string command(const TopRow& r, double /*s*/) {
  const TopProcess& p = *r.process;
  return r.tree + printable(p.command.empty() ? (p.kernel ? "[" + p.comm + "]" : p.comm) : p.command);
}
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

// A process's and a thread's: who and what first, then the figures, the names last (the view
// shows COMM or COMMAND, stretched; the text tables both, COMMAND last, in full).
const std::vector<TopColumn> kProcessColumns = {
    {"PID", 7, false, 0, std::nullopt, pid},
    {"USER", 8, true, 1, std::nullopt, user},
    {"S", 2, true, 0, std::nullopt, process_state},
    {"NI", 3, false, 7, std::nullopt, nice},
    PM_TOP_FIGURES,
    {"CGROUP", 16, true, 8, std::nullopt, process_cgroup},
    {"COMM", 15, true, 0, std::nullopt, comm},
    {"COMMAND", 24, true, 0, std::nullopt, command},
};
const std::vector<TopColumn> kThreadColumns = {
    {"TID", 7, false, 0, std::nullopt, tid},
    {"PID", 7, false, 5, std::nullopt, pid},
    {"USER", 8, true, 1, std::nullopt, user},
    {"S", 2, true, 0, std::nullopt, process_state},
    {"NI", 3, false, 7, std::nullopt, nice},
    PM_TOP_FIGURES,
    {"CGROUP", 16, true, 8, std::nullopt, process_cgroup},
    {"COMM", 15, true, 0, std::nullopt, comm},
    {"COMMAND", 24, true, 0, std::nullopt, command},
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
      // A cgroup's path cut keeps its leaf; a name or a command line its start.
      line += fit(text, w, c.left, std::string_view(c.title) == "CGROUP");
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

std::vector<const TopColumn*> fit_top_columns(TopList list, int width, TopSort sort, bool command) {
  const std::vector<TopColumn>& all = top_columns(list);
  std::vector<bool> keep(all.size(), false);
  // One name: the command line or the comm.
  auto skipped = [&](size_t i) { return std::string_view(all[i].title) == (command ? "COMM" : "COMMAND"); };
  int used = 0;
  auto take = [&](size_t i) {
    keep[i] = true;
    used += all[i].width + 1;
  };
  // The identity, the name and the sort key first, then by priority while they fit.
  for (size_t i = 0; i < all.size(); ++i) {
    if (!skipped(i) && (all[i].priority == 0 || all[i].sort == sort)) take(i);
  }
  for (int prio = 1; prio <= 8; ++prio) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (!keep[i] && !skipped(i) && all[i].priority == prio && used + all[i].width + 1 <= width + 1) take(i);
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
  if (b < 0.5) b = 0;
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
  if (n < 0.5) n = 0;
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
  if (pct < 0.05) pct = std::max(pct, 0.0) + 0.0;  // no "-0.0": a rounding error below zero is zero
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
  auto table = [&](TopList list, const char* what, const auto& shown, size_t all) {
    if (shown.empty()) return;
    // One section in the block: "top" heads the first table only.
    s += fmt::format("{:<9}{} by {}", s.empty() ? "top" : "", what, to_string(top.sort));
    if (list == TopList::kProcesses) s += fmt::format(": {} processes, the first {}", all, shown.size());
    s += "\n";
    std::vector<const TopColumn*> cols;
    for (const TopColumn& c : top_columns(list)) cols.push_back(&c);
    s += "         " + top_header(cols, -1) + "\n";
    for (const auto* r : shown) {
      TopRow row;
      if constexpr (std::is_same_v<std::decay_t<decltype(*r)>, TopCgroup>) {
        row.cgroup = r;
      } else {
        row.process = r;
      }
      s += "         " + top_line(cols, row, top.seconds, -1) + "\n";
    }
  };
  table(TopList::kProcesses, "processes", top_first(top.processes, top.sort, top.count), top.processes.size());
  table(TopList::kThreads, "threads", top_first(top.threads, top.sort, top.count), top.threads.size());
  table(TopList::kCgroups, "cgroups", top_first(top.cgroups, top.sort, top.count), top.cgroups.size());
  // What the lists cannot show here (from /proc without root), once under them.
  if (!top.note.empty()) s += fmt::format("{:<9}note: {}\n", s.empty() ? "top" : "", printable(top.note));
  if (top.exits_dropped > 0) {
    s += fmt::format("{:<9}note: {} processes ended in the interval without room to keep their last figures\n",
                     s.empty() ? "top" : "", top.exits_dropped);
  }
  return s;
}

}  // namespace pm
