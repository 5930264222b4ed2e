// SPDX-License-Identifier: Apache-2.0
#include "sources/top/top_source.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <linux/types.h>

#include <fmt/format.h>

#include "core/aggregator.h"
#include "core/cgroup.h"
#include "core/file_reader.h"
#include "core/output.h"
#include "core/outside_text.h"
#include "core/text.h"
#include "core/text_layout.h"
#include "scheduler.h"
#include "sources/top/cgroup_files.h"
#include "sources/top/proc_top_source.h"
#include "sources/top/top_model.h"

namespace pm {
namespace {

using K = MetricKind;
constexpr double kMicro = 1e-6;  // the default histogram unit; TopSource sets its own (hist_unit_ns)

void top_text(TextBlock& b);

// A top family's descriptor. The cgroups' are shown in each interval by the lists' table.
constexpr MetricDesc top_desc(bool table, MetricDesc d) {
  d.text = top_text;
  d.in_interval_table = table;
  return d;
}

// Per cgroup (label cgroup), and per named process group (label group): running totals.
#define PM_TOP_FAMILY(var, family, what, table)                                                                        \
  const MetricDesc var##User = top_desc(                                                                               \
      table,                                                                                                           \
      {family, "cpu_user_seconds", K::kCounter, Unit::kSeconds, "CPU time in user mode of " what, {}, 0, true});       \
  const MetricDesc var##System = top_desc(                                                                             \
      table,                                                                                                           \
      {family, "cpu_system_seconds", K::kCounter, Unit::kSeconds, "CPU time in kernel mode of " what, {}, 0, true});   \
  const MetricDesc var##Runq = top_desc(table, {family,                                                                \
                                                "runq_wait_seconds",                                                   \
                                                K::kCounter,                                                           \
                                                Unit::kSeconds,                                                        \
                                                "Time runnable, waiting for a CPU, of " what,                          \
                                                {},                                                                    \
                                                0,                                                                     \
                                                true});                                                                \
  const MetricDesc var##Blocked = top_desc(table, {family,                                                             \
                                                   "blocked_seconds",                                                  \
                                                   K::kCounter,                                                        \
                                                   Unit::kSeconds,                                                     \
                                                   "Time neither running nor runnable of " what,                       \
                                                   {},                                                                 \
                                                   0,                                                                  \
                                                   true});                                                             \
  const MetricDesc var##Read = top_desc(                                                                               \
      table, {family, "io_read_bytes", K::kCounter, Unit::kBytes, "Bytes read from storage by " what, {}, 0, true});   \
  const MetricDesc var##Write = top_desc(                                                                              \
      table, {family, "io_write_bytes", K::kCounter, Unit::kBytes, "Bytes written to storage by " what, {}, 0, true}); \
  const MetricDesc var##Faults =                                                                                       \
      top_desc(table, {family, "page_faults", K::kCounter, Unit::kNone, "Page faults of " what, {}, 0, true});         \
  const MetricDesc var##Switches = top_desc(                                                                           \
      table, {family, "context_switches", K::kCounter, Unit::kNone, "Context switches of " what, {}, 0, true});        \
  const MetricDesc var##Procs =                                                                                        \
      top_desc(table, {family, "processes", K::kGauge, Unit::kNone, "Live processes of " what, {}, 0, true});          \
  const MetricDesc var##Rss =                                                                                          \
      top_desc(table, {family, "rss_bytes", K::kGauge, Unit::kBytes, "Resident memory of " what, {}, 0, true});

PM_TOP_FAMILY(kCgroup, "cgroup", "the cgroup's processes (its descendants' too at the depth limit)", true)
PM_TOP_FAMILY(kGroup, "process_group", "the processes of a --prometheus-processes group", false)
#undef PM_TOP_FAMILY

const MetricDesc kCgroupRunqHist =
    top_desc(true, {"cgroup",
                    "runq_latency_seconds",
                    K::kHistogram,
                    Unit::kSeconds,
                    "Run-queue latency of the cgroup's tasks (its descendants' at the depth limit)",
                    {},
                    kMicro,
                    true});
const MetricDesc kDropped =
    shown_by(top_text, {"top", "dropped_series", K::kCounter, Unit::kNone,
                        "Cgroup and process-group rows not exported (over --max-series), each interval's summed"});
const MetricDesc kExitsDropped =
    shown_by(top_text, {"top", "exits_dropped", K::kCounter, Unit::kNone,
                        "Processes that ended without room to keep their last figures (kernel map full)"});
const MetricDesc kCgroupsOver =
    shown_by(top_text, {"top", "runq_cgroups_over", K::kCounter, Unit::kNone,
                        "Switch-ins whose run-queue wait was not timed per cgroup: their cgroup got no slot "
                        "(over 1,024 cgroups in the run)"});
static_assert(PM_MAX_CGROUP_SLOTS == 1024, "the description above says how many");
const MetricDesc kMovesDropped =
    shown_by(top_text, {"top", "moves_dropped", K::kCounter, Unit::kNone,
                        "Cgroup moves of processes not kept (over 4,096 in an interval): their CPU counts where "
                        "the process was at the reading"});
static_assert(PM_MAX_MOVES == 4096, "the description above says how many");

// One line per cgroup and per process group, what its tasks did:
// cgroup   /system.slice: CPU 12.3% (user 10.1%, system 2.2%)  run queue 3 ms/s  blocked 1.20 s/s  ...
// group    postgres: ...
// and, when rows, exits or run-queue waits could not be kept, a note under "top".
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
    // printable(): a process names itself (prctl), and so do cgroups: no escape sequences through.
    std::string s = fmt::format("{}: CPU {} (user {}, system {})", printable(name), percent(100 * (u->rate + sys_rate)),
                                percent(100 * u->rate), sy != nullptr ? percent(100 * sy->rate) : "n/a");
    if (rq != nullptr && bl != nullptr) {
      s += fmt::format("  run queue {} tasks  blocked {} tasks", tasks_on_average(rq->rate), tasks_on_average(bl->rate));
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
  // Each interval prints the cgroups as a table with the processes (sinks/top_table.cpp), from
  // the same figures: their series are not in an interval's block (in_interval_table). The run's
  // summary has no table: a line each.
  top_rows(b, "cgroup", "cgroup", kCgroupUser, kCgroupSystem, kCgroupRunq, kCgroupBlocked, kCgroupRead, kCgroupWrite,
           kCgroupFaults, kCgroupSwitches, kCgroupProcs, kCgroupRss, &kCgroupRunqHist, kSelf - 60);
  top_rows(b, "group", "group", kGroupUser, kGroupSystem, kGroupRunq, kGroupBlocked, kGroupRead, kGroupWrite,
           kGroupFaults, kGroupSwitches, kGroupProcs, kGroupRss, nullptr, kSelf - 30);
  const Shown* dropped = b.take(kDropped);
  // An interval's dropped exits are in its tables' note (sinks/top_table.cpp), with the same
  // number (the interval's): said once. The summary has no tables.
  const Shown* exits = b.take(kExitsDropped);
  if (!b.summary()) exits = nullptr;
  const Shown* over = b.take(kCgroupsOver);
  const Shown* moves = b.take(kMovesDropped);
  std::string note;
  auto add = [&](const std::string& part) { note += (note.empty() ? "" : ", ") + part; };
  if (dropped != nullptr && dropped->value > 0) {
    // A row left out in several intervals counts in each (the summary's figure sums them).
    add(human_count(dropped->value) + (b.summary() ? " row-intervals" : " rows") + " over --max-series left out");
  }
  if (exits != nullptr && exits->value > 0) {
    add(human_count(exits->value) + " ended processes without room for their figures");
  }
  if (over != nullptr && over->value > 0) {
    add(human_count(over->value) + " switch-ins of cgroups beyond the 1,024 timed per cgroup not timed");
  }
  if (moves != nullptr && moves->value > 0) {
    add(human_count(moves->value) + " cgroup moves not kept (their CPU counts where the process was at the reading)");
  }
  if (!note.empty()) b.item(kSelf - 5, "top", "note: " + note);
}

}  // namespace

struct TopSource::State {
  explicit State(std::string mount, const TopOptions& o)
      : names(std::move(mount)),
        model(
            {o.cgroup_depth, o.threads, o.process_groups ? &*o.process_groups : nullptr, o.max_series, o.sort,
             static_cast<double>(o.hist_unit_ns) * 1e-9},
            [this](uint64_t id) { return names.path(id); }, static_cast<double>(::sysconf(_SC_PAGESIZE)),
            [this] { return names.generation(); }) {
    runq_hist.bucket_base = static_cast<double>(o.hist_unit_ns) * 1e-9;
  }
  CgroupNames names;
  TopModel model;
  CgroupFiles cgroup_files;  // the rows' own files, kept open
  ProcDetails details;       // state, user, nice and command line of the rows, from /proc
  // What the kernel gave since the last reading: deaths and cgroup moves are kept until a reading
  // succeeds (a failed one loses none, and its interval joins the next, whose figures are
  // divided by both).
  std::vector<pm_task> live;
  std::vector<std::pair<pm_process_key, pm_exited>> exited, taken;
  std::vector<pm_move> moves, moves_taken;
  std::vector<std::pair<uint64_t, std::string>> made;  // cgroups made since the last reading
  std::vector<CgroupRunq> runq;
  MonoClock::time_point last_read{};
  bool read_failed = false;  // said once
  uint64_t exits_dropped_last = 0;
  std::shared_ptr<TopRecord> record;
  MetricDesc runq_hist = kCgroupRunqHist;  // in the configured unit
};

TopSource::TopSource(std::shared_ptr<SchedObject> object, TopOptions options, std::string mount)
    : object_(std::move(object)), opts_(std::move(options)), state_(std::make_unique<State>(std::move(mount), opts_)) {}
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

static uint64_t monotonic_now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

void TopSource::collect(Samples& out) {
  State& s = *state_;
  // The dead first, then the living: a task that dies in between is counted in the next reading.
  object_->take_exited(s.taken);
  s.exited.insert(s.exited.end(), s.taken.begin(), s.taken.end());
  object_->take_made_cgroups(s.made);
  for (auto& [id, path] : s.made) s.names.made(id, std::move(path));
  object_->take_moves(s.moves_taken);
  s.moves.insert(s.moves.end(), s.moves_taken.begin(), s.moves_taken.end());
  uint64_t read_ns = monotonic_now_ns();
  if (auto st = object_->read_all(s.live); !st) {
    if (!s.read_failed) say("the top lists could not read the tasks (" + st.error().message + "); trying again");
    s.read_failed = true;
    return;
  }
  auto now = MonoClock::now();
  double seconds = s.last_read == MonoClock::time_point{} ? 0 : std::chrono::duration<double>(now - s.last_read).count();
  s.last_read = now;
  s.names.next_reading();
  bool all_slotted = object_->read_cgroup_runq(s.runq);
  TopInterval iv = s.model.read({read_ns, seconds, &s.live, &s.exited, &s.moves, &s.runq, all_slotted});
  s.exited.clear();
  s.moves.clear();
  append_series(iv, out);
  auto [exits_dropped, cgroups_over] = object_->top_losses();
  out.push_back({&kDropped, {}, static_cast<double>(iv.dropped)});
  out.push_back({&kExitsDropped, {}, static_cast<double>(exits_dropped)});
  out.push_back({&kCgroupsOver, {}, static_cast<double>(cgroups_over)});
  out.push_back({&kMovesDropped, {}, static_cast<double>(object_->moves_dropped())});
  uint64_t exits_in_interval = exits_dropped - std::min(exits_dropped, s.exits_dropped_last);
  s.exits_dropped_last = exits_dropped;
  if (seconds == 0) return;
  auto rec = std::make_shared<TopRecord>();
  rec->seconds = seconds;
  rec->sort = opts_.sort;
  rec->count = opts_.count;
  rec->exits_dropped = exits_in_interval;
  rec->processes = std::move(iv.processes);
  rec->threads = std::move(iv.threads);
  rec->cgroups = std::move(iv.cgroups);
  add_details(*rec);
  s.record = std::move(rec);
}

// The details of the rows the lists show (every row for the interactive view, which sorts and
// filters them itself) from /proc, a file or two per row: reading them for a thousand rows no one
// sees would be most of what the lists cost. The cgroups' own files: cpu.stat's increase for
// every row (it needs the reading before), pressure for the rows shown.
void TopSource::add_details(TopRecord& rec) {
  State& s = *state_;
  std::vector<TopProcess*> threads = top_first(rec.threads, rec.sort, rec.count);
  for (TopProcess* t : threads) s.details.fill(*t, t->start_ns, /*with_command=*/false);
  s.details.next_reading();
  std::vector<TopProcess*> shown = top_first(rec.processes, rec.sort, rec.count);
  std::map<int, TopProcess*> process_of;
  if (!threads.empty()) {
    for (TopProcess& r : rec.processes) process_of[r.pid] = &r;
  }
  // A thread's user and command line are its process's: its process's details are read too.
  std::set<TopProcess*> filled;
  auto fill = [&](TopProcess* r) {
    if (!r->exited && filled.insert(r).second) s.details.fill(*r, r->start_ns);
  };
  for (TopProcess* r : shown) fill(r);
  for (TopProcess* t : threads) {
    auto it = process_of.find(t->pid);
    if (it == process_of.end()) continue;
    fill(it->second);
    t->uid = it->second->uid;
    t->user = it->second->user;
    t->command = it->second->command;
  }
  s.cgroup_files.read(s.names.mount(), rec);
}

// Per cgroup row and per process group, the running totals as metrics.
void TopSource::append_series(const TopInterval& iv, Samples& out) const {
  for (const TopSeries& e : iv.series) {
    const Labels& l = e.labels;
    auto add = [&](const MetricDesc& c, const MetricDesc& g, double v) { out.push_back({e.cgroup ? &c : &g, l, v}); };
    const TaskFigures& t = e.total;
    add(kCgroupUser, kGroupUser, t.user_s());
    add(kCgroupSystem, kGroupSystem, t.system_s());
    add(kCgroupRunq, kGroupRunq, t.runq_s());
    add(kCgroupBlocked, kGroupBlocked, t.blocked_s());
    add(kCgroupRead, kGroupRead, t.read_bytes());
    add(kCgroupWrite, kGroupWrite, t.write_bytes());
    add(kCgroupFaults, kGroupFaults, t.faults());
    add(kCgroupSwitches, kGroupSwitches, t.switches());
    add(kCgroupProcs, kGroupProcs, e.processes);
    if (e.rss_bytes) add(kCgroupRss, kGroupRss, *e.rss_bytes);
    if (e.timed) out.push_back({&state_->runq_hist, l, static_cast<double>(e.runq_ns) * 1e-9, e.runq_hist});
  }
}

void TopSource::annotate(IntervalRecord& rec) {
  if (state_->record) rec.top = std::move(state_->record);
}

}  // namespace pm
