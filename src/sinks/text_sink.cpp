// SPDX-License-Identifier: Apache-2.0
// The text sink: a compact block per interval for people at a terminal, and a readable summary.
// Families it knows get a hand-laid line; any other family is printed generically, so a new
// source shows up without touching this file.
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/text.h"
#include "sinks/format.h"
#include "sinks/sink.h"
#include "sinks/top_table.h"

namespace pm {
namespace {

const std::set<std::string_view> kLaidOut = {"cpu",          "sched", "memory", "pressure",  "numa",    "thermal",
                                             "process_tree", "pmc",   "energy", "scheduler", "block_io", "probe",
                                             // shown as the top tables (top_table.cpp), from the record's lists
                                             "cgroup", "process_group", "top"};

std::string pct(double v) { return fmt::format("{:.1f}%", v); }

// A histogram quantile (an upper bucket bound, in seconds) in microseconds; "-" when empty.
std::string below_us(double seconds) {
  return std::isfinite(seconds) ? fmt::format("< {:.0f} us", seconds * 1e6) : std::string("-");
}

// A time for people: "850 ns", "42 us", "3.1 ms", "182 ms", "2.50 s".
std::string human_time(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  double a = std::fabs(seconds);
  if (a < 1e-6) return fmt::format("{:.0f} ns", seconds * 1e9);
  if (a < 1e-3) return fmt::format("{:.{}f} us", seconds * 1e6, a < 1e-5 ? 1 : 0);
  if (a < 1) return fmt::format("{:.{}f} ms", seconds * 1e3, a < 1e-2 ? 1 : 0);
  return fmt::format("{:.2f} s", seconds);
}
std::string below(double seconds) { return std::isfinite(seconds) ? "< " + human_time(seconds) : std::string("-"); }

template <typename V>
double val(const ValueIndex<V>& ix, std::string_view family, std::string_view name, const Labels& l = {}) {
  const V* v = ix.find(family, name, l);
  return v == nullptr ? 0 : v->value;
}

template <typename V>
double rate_of(const V& v, double seconds);
template <>
double rate_of(const IntervalValue& v, double /*seconds*/) {
  return v.rate;
}
template <>
double rate_of(const SummaryValue& v, double seconds) {
  return seconds > 0 ? v.value / seconds : 0;
}

// Counters as perf stat shows them: each event's count and rate, its share of time on the PMU
// when multiplexed, then the ratios; energy in joules and watts.
template <typename V>
void pmc_lines(std::string& s, const std::vector<V>& values, double seconds) {
  ValueIndex<V> ix(values);
  std::string counts, energy;
  for (const V& v : values) {
    const MetricDesc& d = *v.desc;
    if (d.family != "pmc" || d.kind != MetricKind::kCounter || !v.labels->empty() || d.name == "elapsed_seconds") {
      continue;
    }
    std::string event(d.name);
    double r = rate_of(v, seconds);
    if (d.unit == Unit::kJoules) {
      energy += fmt::format("  {} {:.2f} J ({:.2f} W)", event, v.value, r);
      continue;
    }
    std::string item = d.unit == Unit::kSeconds ? fmt::format("  {} {:.1f} ms", event, v.value * 1e3)
                                                : fmt::format("  {} {:.0f} ({:.0f}/s)", event, v.value, r);
    const V* running = ix.find("pmc", "running_percent", {{"event", event}});
    if (running != nullptr && running->value < 99.95) item += fmt::format(" [{:.1f}% running]", running->value);
    counts += item;
  }
  if (!counts.empty()) s += "pmc     " + counts + "\n";
  std::string ratios;
  for (auto [name, label, fmtstr] : {std::tuple{"ipc", "IPC", "{:.2f}"}, std::tuple{"cpus_utilised", "CPUs", "{:.2f}"},
                                     std::tuple{"cache_miss_percent", "cache miss", "{:.2f}%"},
                                     std::tuple{"branch_miss_percent", "branch miss", "{:.3f}%"}}) {
    if (const V* v = ix.find("pmc", name))
      ratios += fmt::format("  {} ", label) + fmt::format(fmt::runtime(fmtstr), v->value);
  }
  if (!ratios.empty()) s += "pmc     " + ratios + "\n";
  for (const V& v : values) {  // energy read from powercap zones
    if (v.desc->family == "energy" && v.desc->unit == Unit::kJoules && !v.labels->empty()) {
      energy += fmt::format("  {} {:.2f} J ({:.2f} W)", (*v.labels)[0].second, v.value, rate_of(v, seconds));
    }
  }
  if (!energy.empty()) s += "energy  " + energy + "\n";
}

// Lines shared by the interval block and the summary (where rates are over the whole run).
// What the kernel sources say about the target's tree (eBPF: scheduler, block layer).
template <typename V>
void tree_kernel_lines(std::string& s, const ValueIndex<V>& ix) {
  if (const V* on_cpu = ix.find("process_tree", "on_cpu_seconds")) {
    const V* runq = ix.find("process_tree", "runq_latency_seconds");
    s += fmt::format("  sched    on CPU {:.3f} s  run queue {:.3f} s  blocked {:.3f} s", on_cpu->value,
                     val(ix, "process_tree", "runq_wait_seconds"), val(ix, "process_tree", "blocked_seconds"));
    if (ix.find("process_tree", "sched_wakeups") != nullptr)
      s += fmt::format("  wakeups {:.0f}", val(ix, "process_tree", "sched_wakeups"));
    if (runq != nullptr)
      s += fmt::format("  run-queue latency p50 {}  p99 {}", below_us(runq->p50), below_us(runq->p99));
    s += "\n";
  }
  if (ix.find("process_tree", "bio_write_bytes") != nullptr) {
    s += fmt::format("  block    bios read {}  written {}\n", human_bytes(val(ix, "process_tree", "bio_read_bytes")),
                     human_bytes(val(ix, "process_tree", "bio_write_bytes")));
  }
}

// Application probes: one line per function (interval: per second; summary: a table).
void probe_interval_lines(std::string& s, const std::vector<IntervalValue>& values) {
  ValueIndex<IntervalValue> ix(values);
  for (const IntervalValue* calls : ix.all("probe", "calls")) {
    const Labels& l = *calls->labels;
    const IntervalValue* lat = ix.find("probe", "latency_seconds", l);
    double busy = lat != nullptr && lat->value > 0 ? 100 / lat->value : 0;  // shares of the calls' time
    s += fmt::format("probe    {}: {:.0f} calls/s  latency p50 {}  p99 {}  on CPU {}  run queue {}  blocked {}\n",
                     l[0].second, calls->rate, lat ? below(lat->p50) : "-", lat ? below(lat->p99) : "-",
                     pct(busy * val(ix, "probe", "on_cpu_seconds", l)), pct(busy * val(ix, "probe", "runq_seconds", l)),
                     pct(busy * val(ix, "probe", "blocked_seconds", l)));
  }
}

void probe_summary_lines(std::string& s, const std::vector<SummaryValue>& values, const RunInfo& info) {
  ValueIndex<SummaryValue> ix(values);
  auto functions = ix.all("probe", "calls");
  if (functions.empty()) return;
  s += fmt::format("probes   {:<24} {:>8} {:>9} {:>9} {:>9} {:>9}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}\n", "function",
                   "calls", "p50", "p90", "p99", "max", "on CPU", "run queue", "blocked", "switches", "written",
                   "faults");
  s += fmt::format("         {:<24} {:>8} {:>9} {:>9} {:>9} {:>9}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}\n", "",
                   "", "", "", "", "", "per call", "per call", "per call", "per call", "per call", "/call");
  for (const SummaryValue* calls : functions) {
    const Labels& l = *calls->labels;
    const SummaryValue* lat = ix.find("probe", "latency_seconds", l);
    const SummaryValue* max = ix.find("probe", "latency_max_seconds", l);
    double n = calls->value;
    auto per = [&](std::string_view name) { return n > 0 ? val(ix, "probe", name, l) / n : 0.0; };
    s += fmt::format("         {:<24} {:>8.0f} {:>9} {:>9} {:>9} {:>9}  {:>9} {:>9} {:>9} {:>9.1f} {:>9} {:>7.1f}\n",
                     l[0].second, n, lat ? below(lat->p50) : "-", lat ? below(lat->p90) : "-",
                     lat ? below(lat->p99) : "-", max && n > 0 ? human_time(max->value) : "-",
                     human_time(per("on_cpu_seconds")), human_time(per("runq_seconds")),
                     human_time(per("blocked_seconds")), per("voluntary_switches") + per("involuntary_switches"),
                     human_bytes(per("bio_write_bytes")), per("page_faults"));
    double open = val(ix, "probe", "open_at_exit", l) + val(ix, "probe", "in_progress", l);
    if (open > 0) s += fmt::format("         {:<24} {:.0f} calls never returned (thread exited, or still open)\n", "", open);
  }
  for (const Span& r : info.slowest_requests) {
    s += fmt::format(
        "  request {}: {} = {} on CPU + {} blocked + {} run queue; {} written, {} read; {} switches; {} faults ({}, pid "
        "{} tid {})\n",
        r.request_id.value_or(0), human_time(r.seconds), human_time(r.on_cpu_seconds), human_time(r.blocked_seconds),
        human_time(r.runq_seconds), human_bytes(static_cast<double>(r.bio_write_bytes)),
        human_bytes(static_cast<double>(r.bio_read_bytes)), r.voluntary_switches + r.involuntary_switches,
        r.page_faults, r.function, r.pid, r.tid);
  }
  std::string lost;
  for (auto [name, what] : {std::pair{"spans_dropped", "spans dropped (ring buffer full)"},
                            std::pair{"too_deep", "calls nested too deep to time"},
                            std::pair{"untracked_threads", "calls not followed (too many threads)"},
                            std::pair{"unmatched", "returns without their call (begun before attaching)"}}) {
    double v = val(ix, "probe", name);
    if (v > 0) lost += fmt::format("{}{:.0f} {}", lost.empty() ? "" : ", ", v, what);
  }
  if (!lost.empty()) s += "  note: " + lost + "\n";
}

template <typename V>
void system_lines(std::string& s, const std::vector<V>& values, double seconds, bool with_pmc = true) {
  ValueIndex<V> ix(values);
  auto rate = [&](std::string_view f, std::string_view n, const Labels& l = {}) {
    const V* v = ix.find(f, n, l);
    return v == nullptr ? 0.0 : rate_of(*v, seconds);
  };
  if (with_pmc) pmc_lines(s, values, seconds);
  if (ix.find("cpu", "utilisation_percent", {{"cpu", "all"}}) != nullptr) {
    s += "cpu     ";
    for (const char* mode : {"user", "nice", "system", "iowait", "irq", "softirq", "steal", "idle"}) {
      s += fmt::format(" {} {}", mode, pct(val(ix, "cpu", "utilisation_percent", {{"cpu", "all"}, {"mode", mode}})));
    }
    s += "\n        ";
    for (const V* v : ix.all("cpu", "utilisation_percent")) {
      const std::string& cpu = (*v->labels)[0].second;
      if (cpu == "all" || (*v->labels)[1].second != "idle") continue;
      double busy = std::max(0.0, 100 - v->value - val(ix, "cpu", "utilisation_percent", {{"cpu", cpu}, {"mode", "iowait"}}));
      s += fmt::format(" cpu{} {}", cpu, pct(busy));
    }
    s += " busy\n";
  }
  if (const V* runq = ix.find("scheduler", "runq_latency_seconds")) {
    s += fmt::format(
        "sched    (eBPF) switches {:.0f}/s (voluntary {:.0f}/s, preempted {:.0f}/s)  wakeups {:.0f}/s  "
        "run-queue latency p50 {}  p99 {}\n",
        rate("scheduler", "context_switches"), rate("scheduler", "voluntary_switches"),
        rate("scheduler", "involuntary_switches"), rate("scheduler", "wakeups"), below_us(runq->p50),
        below_us(runq->p99));
  }
  for (const V* lat : ix.all("block_io", "request_latency_seconds")) {
    const std::string& dev = (*lat->labels)[0].second;
    const V* depth = ix.find("block_io", "queue_depth", {{"device", dev}});
    s += fmt::format(
        "block    {}: read {}/s  write {}/s  {:.0f} requests/s  latency p50 {}  p99 {}  queue depth p99 {}\n", dev,
        human_bytes(rate("block_io", "bio_bytes", {{"device", dev}, {"op", "read"}})),
        human_bytes(rate("block_io", "bio_bytes", {{"device", dev}, {"op", "write"}})),
        rate("block_io", "requests", {{"device", dev}}), below_us(lat->p50), below_us(lat->p99),
        depth != nullptr && std::isfinite(depth->p99) ? fmt::format("< {:.0f}", depth->p99) : std::string("-"));
  }
  if (ix.find("sched", "context_switches") != nullptr) {
    s += fmt::format("sched    switches {:.0f}/s  forks {:.0f}/s", rate("sched", "context_switches"),
                     rate("sched", "forks"));
    if (ix.find("sched", "load1") != nullptr) {
      s += fmt::format("  running {:.0f}  blocked {:.0f}  load {:.2f} {:.2f} {:.2f}", val(ix, "sched", "procs_running"),
                       val(ix, "sched", "procs_blocked"), val(ix, "sched", "load1"), val(ix, "sched", "load5"),
                       val(ix, "sched", "load15"));
    }
    s += "\n";
  }
  if (ix.find("memory", "used_bytes") != nullptr) {
    double swap_total = val(ix, "memory", "swap_total_bytes");
    s += fmt::format("memory   used {}  cached {}  anon {}  free {}  swap used {} of {}\n",
                     human_bytes(val(ix, "memory", "used_bytes")), human_bytes(val(ix, "memory", "cached_bytes")),
                     human_bytes(val(ix, "memory", "anon_bytes")), human_bytes(val(ix, "memory", "free_bytes")),
                     human_bytes(swap_total - val(ix, "memory", "swap_free_bytes")), human_bytes(swap_total));
    s += fmt::format("paging   faults {:.0f}/s  major {:.0f}/s  swap in {}/s  out {}/s\n",
                     rate("memory", "page_faults"), rate("memory", "major_faults"),
                     human_bytes(rate("memory", "swap_in_bytes")), human_bytes(rate("memory", "swap_out_bytes")));
  }
  if (ix.find("pressure", "stall_seconds") != nullptr) {
    s += "psi     ";
    for (const char* res : {"cpu", "io", "memory"}) {
      for (const char* kind : {"some", "full"}) {
        if (ix.find("pressure", "stall_seconds", {{"resource", res}, {"kind", kind}}) == nullptr) continue;
        s += fmt::format(" {} {} {}", res, kind,
                         pct(100 * rate("pressure", "stall_seconds", {{"resource", res}, {"kind", kind}})));
      }
    }
    s += "\n";
  }
  for (const V* v : ix.all("numa", "free_bytes")) {
    const std::string& node = (*v->labels)[0].second;
    s += fmt::format("numa     node{}: {:.0f}/{:.0f} MiB free\n", node, v->value / (1 << 20),
                     val(ix, "numa", "total_bytes", {{"node", node}}) / (1 << 20));
  }
  for (const V* v : ix.all("thermal", "temp_celsius")) {
    const std::string& zone = (*v->labels)[0].second;
    s += fmt::format("thermal  {}: {:.0f}°C", zone, v->value);
    std::string trips;
    for (const V* t : ix.all("thermal", "trip_celsius")) {
      if ((*t->labels)[0].second == zone) {
        trips += fmt::format("{}{}: {:.0f}°C", trips.empty() ? "" : ", ", (*t->labels)[1].second, t->value);
      }
    }
    s += trips.empty() ? "\n" : " (trip " + trips + ")\n";
  }
}

template <typename V>
void generic_lines(std::string& s, const std::vector<V>& values) {
  std::string family;
  for (const V& v : values) {
    if (kLaidOut.count(v.desc->family) != 0) continue;
    if (v.desc->family != family) {
      if (!family.empty()) s += "\n";
      family = v.desc->family;
      s += fmt::format("{:<8}", family);
    }
    std::string lbl = labels_text(*v.labels);
    s += fmt::format(" {}{}={}", v.desc->name, lbl.empty() ? "" : "{" + lbl + "}",
                     v.desc->unit == Unit::kBytes ? human_bytes(v.value) : fmt::format("{:g}", v.value));
  }
  if (!family.empty()) s += "\n";
}

// One line per reason: six hardware events missing for one cause are one message.
std::vector<std::pair<std::string, std::string>> by_reason(const std::vector<Unavailable>& list) {
  std::vector<std::pair<std::string, std::string>> grouped;  // reason, sources
  for (const Unavailable& u : list) {
    auto it = std::find_if(grouped.begin(), grouped.end(), [&](const auto& g) { return g.first == u.reason; });
    if (it == grouped.end()) {
      grouped.emplace_back(u.reason, u.source);
    } else {
      it->second += ", " + u.source;
    }
  }
  return grouped;
}

class TextSink final : public Sink {
 public:
  explicit TextSink(Output& out) : out_(out) {}

  void unavailable(const std::vector<Unavailable>& list) override {
    for (const auto& [reason, sources] : by_reason(list)) {
      say(fmt::format("{}: not available: {}", sources, reason));
    }
  }

  void interval(const IntervalRecord& rec) override {
    std::string s = fmt::format("--- {} ({:.2f} s)\n", iso8601(rec.timestamp), rec.seconds);
    ValueIndex<IntervalValue> ix(rec.values);
    if (ix.find("process_tree", "processes") != nullptr) {
      auto rate = [&](std::string_view n) {
        const IntervalValue* v = ix.find("process_tree", n);
        return v == nullptr ? 0.0 : v->rate;
      };
      s += fmt::format(
          "tree     {:.0f} procs {:.0f} threads  cpu {} (user {} sys {})  rss {}  pss {}  read {}/s  write {}/s  "
          "switches {:.0f}/s\n",
          val(ix, "process_tree", "processes"), val(ix, "process_tree", "threads"),
          pct(100 * (rate("cpu_user_seconds") + rate("cpu_system_seconds"))), pct(100 * rate("cpu_user_seconds")),
          pct(100 * rate("cpu_system_seconds")), human_bytes(val(ix, "process_tree", "rss_bytes")),
          human_bytes(val(ix, "process_tree", "pss_bytes")), human_bytes(rate("io_read_bytes")),
          human_bytes(rate("io_write_bytes")), rate("voluntary_switches") + rate("involuntary_switches"));
    }
    probe_interval_lines(s, rec.values);
    system_lines(s, rec.values, rec.seconds);
    generic_lines(s, rec.values);
    if (rec.top) s += top_tables_text(*rec.top);
    write(s);
  }

  void summary(const SummaryRecord& rec, const RunInfo& info, const std::vector<Unavailable>& list) override {
    std::string s = "=== perf-monitor summary\n";
    if (info.mode == "run") {
      std::string cmd;
      for (const auto& a : info.command) cmd += (cmd.empty() ? "" : " ") + a;
      s += fmt::format("command  {} (pid {}) ", cmd, info.pid);
      if (info.signal)
        s += fmt::format("killed by signal {}", *info.signal);
      else if (info.exit_code)
        s += fmt::format("exited with status {}", *info.exit_code);
      else
        s += "still running";
    } else if (info.mode == "attach") {
      s += fmt::format("pid      {} ", info.pid);
    } else {
      s += "system  ";
    }
    s += fmt::format(" after {:.2f} s ({})\n", rec.seconds, info.end_reason);
    ValueIndex<SummaryValue> ix(rec.values);
    if (const SummaryValue* seen = ix.find("process_tree", "processes_seen")) {
      auto max_of = [&](std::string_view n) {
        const SummaryValue* v = ix.find("process_tree", n);
        return v == nullptr ? 0.0 : v->max;
      };
      auto min_of = [&](std::string_view n) {
        const SummaryValue* v = ix.find("process_tree", n);
        return v == nullptr ? 0.0 : v->min;
      };
      double user = val(ix, "process_tree", "cpu_user_seconds"), sys = val(ix, "process_tree", "cpu_system_seconds");
      auto count = [](double v) { return std::isfinite(v) ? fmt::format("{:.0f}", v) : std::string("n/a"); };
      s += fmt::format("tree     {} processes seen, at most {} at once, at most {} threads\n", count(seen->max),
                       count(max_of("processes")), count(max_of("threads")));
      s += fmt::format("  cpu      user {:.3f} s  system {:.3f} s  ({} of one CPU)\n", user, sys,
                       pct(rec.seconds > 0 ? 100 * (user + sys) / rec.seconds : 0));
      for (std::string_view n : {"rss_bytes", "pss_bytes", "shared_bytes", "anon_bytes", "vm_size_bytes"}) {
        s += fmt::format("  {:<8} max {:>10}  min {:>10}\n", n.substr(0, n.size() - 6), human_bytes(max_of(n)),
                         human_bytes(min_of(n)));
      }
      s += fmt::format("  io       storage read {}  write {}   read() {}  write() {}\n",
                       human_bytes(val(ix, "process_tree", "io_read_bytes")),
                       human_bytes(val(ix, "process_tree", "io_write_bytes")),
                       human_bytes(val(ix, "process_tree", "io_rchar_bytes")),
                       human_bytes(val(ix, "process_tree", "io_wchar_bytes")));
      s += fmt::format("  faults   minor {:.0f}  major {:.0f}\n", val(ix, "process_tree", "minor_faults"),
                       val(ix, "process_tree", "major_faults"));
      s += fmt::format("  switches voluntary {:.0f}  involuntary {:.0f}\n",
                       val(ix, "process_tree", "voluntary_switches"), val(ix, "process_tree", "involuntary_switches"));
      tree_kernel_lines(s, ix);
      // In run and attach the counters count the tree: they are shown with it (energy, which
      // counts system-wide, comes along).
      std::string pmc;
      pmc_lines(pmc, rec.values, rec.seconds);
      for_each_line(pmc, [&](std::string_view l) { s += "  " + std::string(l) + "\n"; });
    }
    probe_summary_lines(s, rec.values, info);
    if (ix.find("process_tree", "processes_seen") != nullptr) s += "system over the run:\n";
    system_lines(s, rec.values, rec.seconds, ix.find("process_tree", "processes_seen") == nullptr);
    generic_lines(s, rec.values);
    for (const auto& [reason, sources] : by_reason(list)) s += fmt::format("not available: {}: {}\n", sources, reason);
    if (info.missed_ticks != 0) s += fmt::format("note: {} sampling ticks were served late\n", info.missed_ticks);
    if (info.proc_event_overruns != 0) {
      s += fmt::format("note: the kernel dropped {} fork/exit notifications; /proc walks covered them\n",
                       info.proc_event_overruns);
    }
    write(s);
  }

 private:
  void write(const std::string& s) {
    out_.write(s);
  }
  Output& out_;
};

}  // namespace

std::unique_ptr<Sink> make_text_sink(Output& out) { return std::make_unique<TextSink>(out); }

}  // namespace pm
