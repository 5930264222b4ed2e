// SPDX-License-Identifier: Apache-2.0
#include "sources/top/top_source.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <linux/types.h>

#include <fmt/format.h>

#include "core/aggregator.h"
#include "core/cgroup.h"
#include "core/file_reader.h"
#include "core/text.h"
#include "core/text_layout.h"
#include "scheduler.h"

namespace pm {
namespace {

using K = MetricKind;
constexpr double kMicro = 1e-6;

void top_text(TextBlock& b);

// Per cgroup (label cgroup), and per named process group (label group): running totals.
#define PM_TOP_FAMILY(var, family, what)                                                                               \
  const MetricDesc var##User = shown_by(                                                                               \
      top_text,                                                                                                        \
      {family, "cpu_user_seconds", K::kCounter, Unit::kSeconds, "CPU time in user mode of " what, {}, 0, true});       \
  const MetricDesc var##System = shown_by(                                                                             \
      top_text,                                                                                                        \
      {family, "cpu_system_seconds", K::kCounter, Unit::kSeconds, "CPU time in kernel mode of " what, {}, 0, true});   \
  const MetricDesc var##Runq = shown_by(top_text, {family,                                                             \
                                                   "runq_wait_seconds",                                                \
                                                   K::kCounter,                                                        \
                                                   Unit::kSeconds,                                                     \
                                                   "Time runnable, waiting for a CPU, of " what,                       \
                                                   {},                                                                 \
                                                   0,                                                                  \
                                                   true});                                                             \
  const MetricDesc var##Blocked = shown_by(top_text, {family,                                                          \
                                                      "blocked_seconds",                                               \
                                                      K::kCounter,                                                     \
                                                      Unit::kSeconds,                                                  \
                                                      "Time neither running nor runnable of " what,                    \
                                                      {},                                                              \
                                                      0,                                                               \
                                                      true});                                                          \
  const MetricDesc var##Read =                                                                                         \
      shown_by(top_text,                                                                                               \
               {family, "io_read_bytes", K::kCounter, Unit::kBytes, "Bytes read from storage by " what, {}, 0, true}); \
  const MetricDesc var##Write = shown_by(                                                                              \
      top_text,                                                                                                        \
      {family, "io_write_bytes", K::kCounter, Unit::kBytes, "Bytes written to storage by " what, {}, 0, true});        \
  const MetricDesc var##Faults =                                                                                       \
      shown_by(top_text, {family, "page_faults", K::kCounter, Unit::kNone, "Page faults of " what, {}, 0, true});      \
  const MetricDesc var##Switches = shown_by(                                                                           \
      top_text, {family, "context_switches", K::kCounter, Unit::kNone, "Context switches of " what, {}, 0, true});     \
  const MetricDesc var##Procs =                                                                                        \
      shown_by(top_text, {family, "processes", K::kGauge, Unit::kNone, "Live processes of " what, {}, 0, true});       \
  const MetricDesc var##Rss =                                                                                          \
      shown_by(top_text, {family, "rss_bytes", K::kGauge, Unit::kBytes, "Resident memory of " what, {}, 0, true});

PM_TOP_FAMILY(kCgroup, "cgroup", "the cgroup's processes (its descendants' too at the depth limit)")
PM_TOP_FAMILY(kGroup, "process_group", "the processes of a --prometheus-processes group")
#undef PM_TOP_FAMILY

const MetricDesc kCgroupRunqHist =
    shown_by(top_text, {"cgroup",
                        "runq_latency_seconds",
                        K::kHistogram,
                        Unit::kSeconds,
                        "Run-queue latency of the cgroup's tasks (its descendants' at the depth limit)",
                        {},
                        kMicro,
                        true});
const MetricDesc kDropped = shown_by(top_text, {"top", "dropped_series", K::kCounter, Unit::kNone,
                                                "Cgroup and process-group rows not exported: over --max-series"});
const MetricDesc kExitsDropped =
    shown_by(top_text, {"top", "exits_dropped", K::kCounter, Unit::kNone,
                        "Processes that ended without room to keep their last figures (kernel map full)"});

// One line per cgroup and per process group, what its tasks did:
// cgroup   /system.slice: CPU 12.3% (user 10.1%, system 2.2%)  run queue 3 ms/s  blocked 1.20 s/s  ...
// group    postgres: ...
// and, when rows or exits could not be kept, a note under "top".
void top_rows(TextBlock& b, const char* section, const char* key, const MetricDesc& user, const MetricDesc& system,
              const MetricDesc& runq, const MetricDesc& blocked, const MetricDesc& read, const MetricDesc& write,
              const MetricDesc& faults, const MetricDesc& switches, const MetricDesc& procs, const MetricDesc& rss,
              const MetricDesc* hist, int at) {
  for (const Shown* u : b.take_all(user)) {
    std::string name(label_of(*u, key));
    Labels l{{key, name}};
    const Shown* sy = b.take(system, l);
    const Shown* rq = b.take(runq, l);
    const Shown* bl = b.take(blocked, l);
    const Shown* rd = b.take(read, l);
    const Shown* wr = b.take(write, l);
    const Shown* fl = b.take(faults, l);
    const Shown* sw = b.take(switches, l);
    const Shown* pr = b.take(procs, l);
    const Shown* rs = b.take(rss, l);
    const Shown* h = hist != nullptr ? b.take(*hist, l) : nullptr;
    double sys_rate = sy != nullptr ? sy->rate : 0;
    std::string s = fmt::format("{}: CPU {} (user {}, system {})", name, percent(100 * (u->rate + sys_rate)),
                                percent(100 * u->rate), sy != nullptr ? percent(100 * sy->rate) : "n/a");
    if (rq != nullptr && bl != nullptr) {
      s += fmt::format("  run queue {}/s  blocked {}/s", human_time(rq->rate), human_time(bl->rate));
    }
    if (rd != nullptr && wr != nullptr) {
      s += fmt::format("  storage read {}  write {}", counted(b, *rd, true), counted(b, *wr, true));
    }
    if (fl != nullptr) s += "  faults " + counted(b, *fl);
    if (sw != nullptr) s += "  switches " + counted(b, *sw);
    if (pr != nullptr) s += fmt::format("  {} processes", human_count(pr->value));
    if (rs != nullptr && std::isfinite(rs->value)) s += "  RSS " + human_bytes(rs->value);
    if (h != nullptr) s += fmt::format("  run-queue latency p50 {}  p99 {}", below_time(h->p50), below_time(h->p99));
    b.line(at++, section, s);
  }
}

void top_text(TextBlock& b) {
  using text_order::kSelf;
  if (!b.summary()) {
    // Each interval prints the cgroups as a table with the processes (sinks/top_table.cpp), from
    // the same figures: one line each here would say it twice. The run's summary has no table.
    for (const MetricDesc* d : {&kCgroupUser, &kCgroupSystem, &kCgroupRunq, &kCgroupBlocked, &kCgroupRead, &kCgroupWrite,
                                &kCgroupFaults, &kCgroupSwitches, &kCgroupProcs, &kCgroupRss, &kCgroupRunqHist}) {
      b.take_all(*d);
    }
  }
  top_rows(b, "cgroup", "cgroup", kCgroupUser, kCgroupSystem, kCgroupRunq, kCgroupBlocked, kCgroupRead, kCgroupWrite,
           kCgroupFaults, kCgroupSwitches, kCgroupProcs, kCgroupRss, &kCgroupRunqHist, kSelf - 60);
  top_rows(b, "group", "group", kGroupUser, kGroupSystem, kGroupRunq, kGroupBlocked, kGroupRead, kGroupWrite,
           kGroupFaults, kGroupSwitches, kGroupProcs, kGroupRss, nullptr, kSelf - 30);
  const Shown* dropped = b.take(kDropped);
  const Shown* exits = b.take(kExitsDropped);
  std::string note;
  if (dropped != nullptr && dropped->value > 0)
    note += human_count(dropped->value) + " rows over --max-series left out";
  if (exits != nullptr && exits->value > 0) {
    note += (note.empty() ? "" : ", ") + human_count(exits->value) + " ended processes without room for their figures";
  }
  if (!note.empty()) b.item(kSelf - 5, "top", "note: " + note);
}

// A task's counters as the kernel reports them (tree.h), as doubles in seconds and counts.
struct Totals {
  double user_ticks = 0, system_ticks = 0, on_cpu = 0, runq = 0, blocked = 0;
  double read = 0, write = 0, faults = 0, switches = 0;
  void add(const __u64* fig) {
    on_cpu += static_cast<double>(fig[PM_T_ON_CPU_NS]) * 1e-9;
    user_ticks += static_cast<double>(fig[PM_T_USER_NS]);
    system_ticks += static_cast<double>(fig[PM_T_SYSTEM_NS]);
    runq += static_cast<double>(fig[PM_T_RUNQ_NS]) * 1e-9;
    blocked += static_cast<double>(fig[PM_T_BLOCKED_NS]) * 1e-9;
    read += static_cast<double>(fig[PM_T_READ_BYTES]);
    write += static_cast<double>(fig[PM_T_WRITE_BYTES]);
    faults += static_cast<double>(fig[PM_T_MINOR_FAULTS] + fig[PM_T_MAJOR_FAULTS]);
    switches += static_cast<double>(fig[PM_T_VOLUNTARY] + fig[PM_T_INVOLUNTARY]);
  }
  // Each figure at least o's: a reading that missed a task on its way out (it is in the next
  // one, among the dead) never makes a total go back, nor counts twice what it had.
  void at_least(const Totals& o) {
    auto up = [](double& a, double b) { a = std::max(a, b); };
    up(user_ticks, o.user_ticks);
    up(system_ticks, o.system_ticks);
    up(on_cpu, o.on_cpu);
    up(runq, o.runq);
    up(blocked, o.blocked);
    up(read, o.read);
    up(write, o.write);
    up(faults, o.faults);
    up(switches, o.switches);
  }
  void add(const Totals& o) {
    user_ticks += o.user_ticks;
    system_ticks += o.system_ticks;
    on_cpu += o.on_cpu;
    runq += o.runq;
    blocked += o.blocked;
    read += o.read;
    write += o.write;
    faults += o.faults;
    switches += o.switches;
  }
};

// The difference of two readings as an interval's figures: on-CPU time split in the ratio of the
// tick-sampled user and system times (all user when no tick fell in it), nothing negative.
TopFigures delta(const Totals& now, const Totals& then) {
  auto d = [](double a, double b) { return a > b ? a - b : 0.0; };
  TopFigures f;
  double cpu = d(now.on_cpu, then.on_cpu);
  double u = d(now.user_ticks, then.user_ticks), s = d(now.system_ticks, then.system_ticks);
  f.system_s = u + s > 0 ? cpu * s / (u + s) : 0;
  f.user_s = cpu - f.system_s;
  f.runq_s = d(now.runq, then.runq);
  f.blocked_s = d(now.blocked, then.blocked);
  f.read_bytes = d(now.read, then.read);
  f.write_bytes = d(now.write, then.write);
  f.faults = d(now.faults, then.faults);
  f.switches = d(now.switches, then.switches);
  return f;
}

struct ProcessKey {
  uint32_t tgid;
  uint64_t start;
  bool operator<(const ProcessKey& o) const { return std::tie(tgid, start) < std::tie(o.tgid, o.start); }
};

}  // namespace

struct TopSource::State {
  CgroupNames names;
  double page_size = static_cast<double>(::sysconf(_SC_PAGESIZE));
  // Per process: what its dead threads left (kept while it lives), its last totals.
  struct Process {
    Totals dead;   // threads that died, summed
    Totals last;   // the totals at the previous reading
    bool seen = false;
    bool kernel = false;
    std::string comm;
    uint64_t cgroup_id = 0;
  };
  std::map<ProcessKey, Process> processes;
  // Per task: its last blocked time (a runnable task's is as of its last sleep), its last totals
  // (threads view).
  struct Task {
    double blocked = 0;
    Totals last;
  };
  std::map<ProcessKey, Task> tasks;  // keyed by (tid, start)
  // Per cgroup row (path at the depth limit): running totals for the metrics.
  struct Row {
    Totals total;  // running sums of the interval figures
    double user = 0, system = 0;
  };
  std::map<std::string, Row> cgroup_rows, group_rows;
  std::map<std::string, double> cpu_stat_last;  // cgroup path -> cpu.stat usage_usec at the last reading
  std::map<std::string, std::vector<uint64_t>> runq_last;  // row -> histogram at the last interval
  std::vector<pm_task> live;
  std::vector<std::pair<pm_process_key, pm_exited>> exited;
  FileReader reader;
  MonoClock::time_point last_read{};
  std::shared_ptr<TopRecord> record;
  uint64_t dropped = 0;
  explicit State(std::string mount) : names(std::move(mount)) {}
};

TopSource::TopSource(std::shared_ptr<SchedObject> object, TopOptions options, std::string mount)
    : object_(std::move(object)), opts_(std::move(options)), state_(std::make_unique<State>(std::move(mount))) {}
TopSource::~TopSource() = default;

Result<std::unique_ptr<TopSource>> TopSource::create(std::shared_ptr<SchedObject> object, TopOptions options) {
  if (!object->tracks_all()) {
    return make_error(Errc::kUnavailable, "the scheduler programs could not load as tp_btf (every task's figures)");
  }
  std::string mount = unified_mount();
  auto src = std::make_unique<TopSource>(std::move(object), std::move(options), mount);
  // The first reading is the baseline: what processes did before monitoring began is not this
  // interval's.
  Samples ignored;
  src->collect(ignored);
  src->state_->record.reset();
  return src;
}

namespace {

// "some avg10=1.23 avg60=..." -> 1.23
std::optional<double> pressure_avg10(std::string_view text) {
  for_each_line(text, [](std::string_view) {});
  size_t at = text.find("some avg10=");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 11);
  return parse_double(next_field(rest));
}

std::optional<double> cpu_stat_usage_s(std::string_view text) {
  size_t at = text.find("usage_usec ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 11);
  auto v = parse_u64(next_field(rest));
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * 1e-6;
}

}  // namespace

void TopSource::collect(Samples& out) {
  State& s = *state_;
  auto now = MonoClock::now();
  double seconds = s.last_read == MonoClock::time_point{} ? 0 : std::chrono::duration<double>(now - s.last_read).count();
  s.last_read = now;
  // The dead first, then the living: a task that dies in between is counted in the next reading.
  object_->take_exited(s.exited);
  if (!object_->read_all(s.live)) return;

  auto rec = std::make_shared<TopRecord>();
  rec->seconds = seconds;
  rec->sort = opts_.sort;

  // Live tasks, per process; a runnable task's blocked time is the one it had when it last slept.
  std::map<ProcessKey, Totals> live_totals;
  std::map<ProcessKey, double> rss;
  std::map<ProcessKey, const pm_task*> leader;
  std::map<ProcessKey, State::Task> tasks_now;
  std::vector<TopProcess> threads;
  for (const pm_task& t : s.live) {
    ProcessKey pk{t.tgid, t.leader_start_ns}, tk{t.pid, t.start_ns};
    Totals tt;
    tt.add(t.fig);
    State::Task& task = tasks_now[tk];
    auto prev = s.tasks.find(tk);
    if (t.flags & PM_TASK_RUNNABLE) tt.blocked = prev != s.tasks.end() ? prev->second.blocked : 0;
    task.blocked = tt.blocked;
    task.last = tt;
    if (opts_.threads && prev != s.tasks.end()) {
      TopProcess row{static_cast<int>(t.tgid), static_cast<int>(t.pid), std::string(t.comm, strnlen(t.comm, 16))};
      row.f = delta(tt, prev->second.last);
      row.kernel = (t.flags & PM_TASK_KTHREAD) != 0;
      threads.push_back(std::move(row));
    }
    live_totals[pk].add(tt);
    if ((t.flags & PM_TASK_HAS_MM) && rss.count(pk) == 0) {
      rss[pk] = static_cast<double>(t.rss_pages[PM_RSS_FILE] + t.rss_pages[PM_RSS_ANON] + t.rss_pages[PM_RSS_SHMEM]) *
                s.page_size;
    }
    if (t.pid == t.tgid || leader.count(pk) == 0) leader[pk] = &t;
  }
  s.tasks = std::move(tasks_now);

  // Deaths: a live process's dead threads add to its `dead`; a process with no live task left has
  // ended, and this is its last interval.
  std::map<ProcessKey, Totals> ended;
  for (const auto& [k, e] : s.exited) {
    ProcessKey pk{k.tgid, k.leader_start_ns};
    State::Process& p = s.processes[pk];
    Totals d;
    d.add(e.fig);
    p.dead.add(d);
    if (p.comm.empty()) p.comm = std::string(e.comm, strnlen(e.comm, 16));
    if (p.cgroup_id == 0) p.cgroup_id = e.cgroup_id;
    if (live_totals.count(pk) == 0) ended[pk] = p.dead;
  }

  // Per process: the interval's figures, and the rows they add to (its cgroup at the depth limit,
  // its named group).
  std::vector<TopProcess> rows;
  std::map<std::string, TopCgroup> cgroups;
  std::map<std::string, TopFigures> groups;
  std::map<std::string, int> group_procs;
  auto add_row = [&](const ProcessKey& pk, State::Process& p, const Totals& now_totals, bool gone) {
    TopFigures f = delta(now_totals, p.seen ? p.last : Totals{});
    if (p.seen) {
      p.last.at_least(now_totals);
    } else {
      p.last = now_totals;
    }
    p.seen = true;
    if (auto r = rss.find(pk); r != rss.end()) f.rss_bytes = r->second;
    if (seconds == 0) return;  // the baseline reading
    TopProcess row{static_cast<int>(pk.tgid), 0, p.comm};
    row.exited = gone;
    row.f = f;
    row.cgroup = cut_cgroup_path(s.names.path(p.cgroup_id).value_or("/"), opts_.cgroup_depth);
    TopCgroup& c = cgroups[row.cgroup];
    c.path = row.cgroup;
    c.with_descendants = cgroup_depth_of(row.cgroup) >= opts_.cgroup_depth;
    c.f.add(f);
    if (!gone) ++c.processes;
    if (opts_.process_groups && std::regex_search(p.comm, *opts_.process_groups)) {
      groups[p.comm].add(f);
      if (!gone) ++group_procs[p.comm];
    }
    rows.push_back(std::move(row));
  };
  for (auto& [pk, totals] : live_totals) {
    State::Process& p = s.processes[pk];
    if (const pm_task* l = leader[pk]) {
      p.comm = std::string(l->comm, strnlen(l->comm, 16));
      p.cgroup_id = l->cgroup_id;
      if (l->flags & PM_TASK_KTHREAD) p.kernel = true;
    }
    Totals now_totals = totals;
    now_totals.add(p.dead);
    add_row(pk, p, now_totals, false);
    if (!rows.empty()) rows.back().kernel = p.kernel;
  }
  for (auto& [pk, totals] : ended) {
    add_row(pk, s.processes[pk], totals, true);
    s.processes.erase(pk);
  }
  // Processes that vanished without a death seen (the kernel map was full): forget them.
  for (auto it = s.processes.begin(); it != s.processes.end();) {
    it = live_totals.count(it->first) == 0 ? s.processes.erase(it) : std::next(it);
  }

  // The cgroups' own files.
  const std::string& mount = s.names.mount();
  for (auto& [path, c] : cgroups) {
    std::string dir = mount + (path == "/" ? "" : path);
    if (auto text = s.reader.read(dir + "/cpu.stat")) {
      if (auto usage = cpu_stat_usage_s(*text)) {
        auto last = s.cpu_stat_last.find(path);
        if (last != s.cpu_stat_last.end()) c.cpu_stat_s = std::max(0.0, *usage - last->second);
        s.cpu_stat_last[path] = *usage;
      }
    }
    if (auto t = s.reader.read(dir + "/cpu.pressure")) c.cpu_pressure_pct = pressure_avg10(*t);
    if (auto t = s.reader.read(dir + "/io.pressure")) c.io_pressure_pct = pressure_avg10(*t);
    if (auto t = s.reader.read(dir + "/memory.pressure")) c.memory_pressure_pct = pressure_avg10(*t);
  }
  // Run-queue latency per cgroup: the kernel keeps it per cgroup, a row is its cgroup and, at the
  // depth limit, its descendants. Running totals per row, and the interval's quantiles.
  std::vector<CgroupRunq> runq;
  object_->read_cgroup_runq(runq);
  for (auto& [path, c] : cgroups) c.runq_read = true;
  std::map<std::string, CgroupRunq> runq_rows;
  for (const CgroupRunq& r : runq) {
    auto full = s.names.path(r.cgroup_id);
    if (!full) continue;
    std::string path = cut_cgroup_path(*full, opts_.cgroup_depth);
    if (path != *full && cgroup_depth_of(path) < opts_.cgroup_depth) continue;  // a row of its own would hold it
    CgroupRunq& row = runq_rows[path];
    row.hist.resize(r.hist.size());
    row.count += r.count;
    row.ns += r.ns;
    for (size_t b = 0; b < r.hist.size(); ++b) row.hist[b] += r.hist[b];
  }
  for (auto& [path, r] : runq_rows) {
    auto& last = s.runq_last[path];
    std::vector<uint64_t> iv(r.hist.size());
    for (size_t b = 0; b < r.hist.size(); ++b) iv[b] = r.hist[b] - (b < last.size() ? std::min(last[b], r.hist[b]) : 0);
    last = r.hist;
    auto it = cgroups.find(path);
    if (it != cgroups.end()) {
      double p50 = log2_quantile(iv, 0.5, kMicro), p99 = log2_quantile(iv, 0.99, kMicro);
      if (!std::isnan(p50)) it->second.runq_p50_s = p50;
      if (!std::isnan(p99)) it->second.runq_p99_s = p99;
    }
  }

  // Metrics: per cgroup and per group, each bounded by --max-series (the busiest first).
  std::vector<std::pair<std::string, const TopFigures*>> series, cgroup_series, group_series;
  for (const auto& [path, c] : cgroups) cgroup_series.emplace_back("c" + path, &c.f);
  for (const auto& [name, f] : groups) group_series.emplace_back("g" + name, &f);
  for (auto* list : {&cgroup_series, &group_series}) {
    std::sort(list->begin(), list->end(),
              [&](const auto& a, const auto& b) { return a.second->key(opts_.sort) > b.second->key(opts_.sort); });
    if (static_cast<int>(list->size()) > opts_.max_series) {
      s.dropped += list->size() - static_cast<size_t>(opts_.max_series);
      list->resize(static_cast<size_t>(opts_.max_series));
    }
    series.insert(series.end(), list->begin(), list->end());
  }
  for (const auto& [key, f] : series) {
    bool is_cgroup = key[0] == 'c';
    std::string name = key.substr(1);
    State::Row& row = (is_cgroup ? s.cgroup_rows : s.group_rows)[name];
    row.user += f->user_s;
    row.system += f->system_s;
    row.total.runq += f->runq_s;
    row.total.blocked += f->blocked_s;
    row.total.read += f->read_bytes;
    row.total.write += f->write_bytes;
    row.total.faults += f->faults;
    row.total.switches += f->switches;
    Labels l{{is_cgroup ? "cgroup" : "group", name}};
    auto add = [&](const MetricDesc& c, const MetricDesc& g, double v) {
      out.push_back({is_cgroup ? &c : &g, l, v});
    };
    add(kCgroupUser, kGroupUser, row.user);
    add(kCgroupSystem, kGroupSystem, row.system);
    add(kCgroupRunq, kGroupRunq, row.total.runq);
    add(kCgroupBlocked, kGroupBlocked, row.total.blocked);
    add(kCgroupRead, kGroupRead, row.total.read);
    add(kCgroupWrite, kGroupWrite, row.total.write);
    add(kCgroupFaults, kGroupFaults, row.total.faults);
    add(kCgroupSwitches, kGroupSwitches, row.total.switches);
    int procs = is_cgroup ? cgroups[name].processes : group_procs[name];
    add(kCgroupProcs, kGroupProcs, procs);
    if (f->rss_bytes) add(kCgroupRss, kGroupRss, *f->rss_bytes);
  }
  for (const auto& [path, r] : runq_rows) {
    if (cgroups.count(path) == 0) continue;
    out.push_back({&kCgroupRunqHist, {{"cgroup", path}}, static_cast<double>(r.ns) * 1e-9, r.hist});
  }
  out.push_back({&kDropped, {}, static_cast<double>(s.dropped)});
  out.push_back({&kExitsDropped, {}, static_cast<double>(object_->top_losses().first)});

  if (seconds == 0) return;
  // The lists: the first N by the sort key.
  auto by_key = [&](const auto& a, const auto& b) { return a.f.key(opts_.sort) > b.f.key(opts_.sort); };
  rec->processes_seen = rows.size();
  std::sort(rows.begin(), rows.end(), by_key);
  if (opts_.count > 0 && static_cast<int>(rows.size()) > opts_.count) rows.resize(static_cast<size_t>(opts_.count));
  rec->processes = std::move(rows);
  for (auto& [path, c] : cgroups) rec->cgroups.push_back(std::move(c));
  std::sort(rec->cgroups.begin(), rec->cgroups.end(), by_key);
  if (opts_.count > 0 && static_cast<int>(rec->cgroups.size()) > opts_.count) rec->cgroups.resize(static_cast<size_t>(opts_.count));
  std::sort(threads.begin(), threads.end(), by_key);
  if (opts_.count > 0 && static_cast<int>(threads.size()) > opts_.count) threads.resize(static_cast<size_t>(opts_.count));
  rec->threads = std::move(threads);
  rec->exits_dropped = object_->top_losses().first;
  s.record = std::move(rec);
}

void TopSource::annotate(IntervalRecord& rec) {
  if (state_->record) rec.top = std::move(state_->record);
}

}  // namespace pm
