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
#include "core/text.h"
#include "sources/top/cgroup_files.h"
#include "sources/top/proc_top_source.h"

namespace pm {
namespace {

using K = MetricKind;
constexpr double kMicro = 1e-6;  // the default histogram unit; TopSource sets its own (hist_unit_ns)
// Readings a process with neither a live task nor a death seen is kept for: its last task may be
// between its exit and its final switch (the iterator skips it, its figures are not in the exited
// map yet), or have died between the taking of the deaths and the iterator; its death then comes
// with the next reading, and its figures count from the last ones seen, not from zero.
constexpr int kAbsentReadings = 2;

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
    int absent = 0;  // readings in a row with neither a live task nor a death of it
    std::string comm;
    uint64_t cgroup_id = 0;
    uint64_t cgroup_before = 0;  // its cgroup at the reading before (where a move this interval left)
  };
  std::map<ProcessKey, Process> processes;
  // Per task: its last blocked time (a runnable task's is as of its last sleep), its last totals
  // (threads view).
  // Its blocked time as the kernel last gave it exactly (at a reading where it slept), and as
  // the intervals were given it (each at most the interval's room: see collect()).
  struct Task {
    double kernel_blocked = 0, blocked = 0;
    Totals last;
  };
  std::map<ProcessKey, Task> tasks;  // keyed by (tid, start)
  // Per cgroup row (path at the depth limit): running totals for the metrics.
  struct Row {
    Totals total;  // running sums of the interval figures
    double user = 0, system = 0;
  };
  std::map<std::string, Row> cgroup_rows, group_rows;
  CgroupFiles cgroup_files;  // the rows' own files, kept open
  // Run-queue latency: per cgroup id, the kernel's running totals at the last reading; per row,
  // running sums of the ids' increases (monotonic: a removed cgroup takes nothing back).
  struct Runq {
    uint64_t count = 0, ns = 0;
    std::vector<uint64_t> hist;
  };
  std::map<uint64_t, Runq> runq_ids;
  std::map<std::string, Runq> runq_rows;
  std::vector<pm_task> live;
  std::vector<std::pair<pm_process_key, pm_exited>> exited;  // taken, not yet counted
  std::vector<std::pair<pm_process_key, pm_exited>> taken;
  std::vector<pm_move> moves, moves_taken;  // cgroup moves taken, not yet counted
  std::vector<std::pair<uint64_t, std::string>> made;  // cgroups made since the last reading
  FileReader reader;
  ProcDetails details;  // state, user, nice and command line of the rows, from /proc
  MonoClock::time_point last_read{};
  // CLOCK_MONOTONIC (the kernel's start_time clock) before each of the last two reads.
  uint64_t last_read_ns = 0, read_ns_before = 0;
  uint64_t readings = 0;      // successful readings so far
  bool read_failed = false;   // said once
  std::shared_ptr<TopRecord> record;
  uint64_t dropped = 0;
  uint64_t exits_dropped_last = 0;
  MetricDesc runq_hist = kCgroupRunqHist;  // in the configured unit
  explicit State(std::string mount) : names(std::move(mount)) {}
};

TopSource::TopSource(std::shared_ptr<SchedObject> object, TopOptions options, std::string mount)
    : object_(std::move(object)), opts_(std::move(options)), state_(std::make_unique<State>(std::move(mount))) {
  state_->runq_hist.bucket_base = static_cast<double>(opts_.hist_unit_ns) * 1e-9;
}
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

static uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

void TopSource::collect(Samples& out) {
  State& s = *state_;
  // The dead first, then the living: a task that dies in between is counted in the next reading.
  // Deaths taken are kept until a reading succeeds: a failed one loses none, and its interval
  // joins the next (whose figures are divided by both).
  object_->take_exited(s.taken);
  s.exited.insert(s.exited.end(), s.taken.begin(), s.taken.end());
  object_->take_made_cgroups(s.made);
  for (auto& [id, path] : s.made) s.names.made(id, std::move(path));
  object_->take_moves(s.moves_taken);
  s.moves.insert(s.moves.end(), s.moves_taken.begin(), s.moves_taken.end());
  uint64_t read_ns = monotonic_ns();
  if (auto st = object_->read_all(s.live); !st) {
    if (!s.read_failed) say("the top lists could not read the tasks (" + st.error().message + "); trying again");
    s.read_failed = true;
    return;
  }
  auto now = MonoClock::now();
  double seconds = s.last_read == MonoClock::time_point{} ? 0 : std::chrono::duration<double>(now - s.last_read).count();
  s.last_read = now;
  // A process that began after the reading before the last one could not have been counted yet
  // unless it has state (kept for kAbsentReadings readings after it was last seen).
  // (Right after the baseline: the baseline, what began before it is not the run's.)
  uint64_t never_counted_after = s.read_ns_before != 0 ? s.read_ns_before : s.last_read_ns;
  s.read_ns_before = s.last_read_ns;
  s.last_read_ns = read_ns;
  ++s.readings;
  s.names.next_reading();

  auto rec = std::make_shared<TopRecord>();
  rec->seconds = seconds;
  rec->sort = opts_.sort;
  auto cgroup_of = [&](uint64_t id) -> std::optional<std::string> {
    auto full = s.names.path(id);
    if (!full) return std::nullopt;  // gone (removed since): the row is no cgroup's, never the root's
    return cut_cgroup_path(*full, opts_.cgroup_depth);
  };

  // Live tasks, per process; a runnable task's blocked time is the one it had when it last slept.
  std::map<ProcessKey, Totals> live_totals;
  std::map<ProcessKey, double> rss;
  std::map<ProcessKey, const pm_task*> leader;
  std::map<ProcessKey, State::Task> tasks_now;
  std::vector<TopProcess> threads;
  std::vector<ProcessKey> thread_process;  // each thread row's process
  auto rss_of = [&](const pm_task& t) {
    return static_cast<double>(t.rss_pages[PM_RSS_FILE] + t.rss_pages[PM_RSS_ANON] + t.rss_pages[PM_RSS_SHMEM]) *
           s.page_size;
  };
  for (const pm_task& t : s.live) {
    ProcessKey pk{t.tgid, t.leader_start_ns}, tk{t.pid, t.start_ns};
    Totals tt;
    tt.add(t.fig);
    State::Task& task = tasks_now[tk];
    auto prev = s.tasks.find(tk);
    // A runnable task's blocked time is not read (the kernel has no figure as of its last
    // wakeup here): its last exact one stands, and the sleep it woke from comes with the next
    // reading where it sleeps, an interval late. What an interval is given is at most what its
    // life in the interval leaves beside its time on a CPU and on the run queue (life = on-CPU +
    // runnable + blocked): a thread's share never passes 100 %, and a sleep that belonged to the
    // interval before is not counted again in this one.
    bool runnable = (t.flags & PM_TASK_RUNNABLE) != 0;
    double kernel_blocked = runnable ? (prev != s.tasks.end() ? prev->second.kernel_blocked : 0) : tt.blocked;
    double blocked = kernel_blocked;
    if (prev != s.tasks.end()) {
      const State::Task& was = prev->second;
      double life = read_ns > t.start_ns ? static_cast<double>(read_ns - t.start_ns) * 1e-9 : 0;
      double room = std::min(seconds, life) - std::max(0.0, tt.on_cpu - was.last.on_cpu) -
                    std::max(0.0, tt.runq - was.last.runq);
      blocked = was.blocked + std::clamp(kernel_blocked - was.kernel_blocked, 0.0, std::max(room, 0.0));
    }
    tt.blocked = blocked;
    task.kernel_blocked = kernel_blocked;
    task.blocked = blocked;
    task.last = tt;
    if (opts_.threads && prev != s.tasks.end()) {
      TopProcess row{static_cast<int>(t.tgid), static_cast<int>(t.pid), std::string(t.comm, strnlen(t.comm, 16))};
      row.f = delta(tt, prev->second.last);
      row.kernel = (t.flags & PM_TASK_KTHREAD) != 0;
      row.ppid = static_cast<int>(t.ppid);
      if (runnable) row.state = 'R';
      s.details.fill(row, t.start_ns, /*with_command=*/false);
      // A thread's memory is its process's (one mm): its RSS is the process's, set below.
      if (t.flags & PM_TASK_HAS_MM) row.f.rss_bytes = rss_of(t);
      row.cgroup = cgroup_of(t.cgroup_id).value_or("");
      threads.push_back(std::move(row));
      thread_process.push_back(pk);
    }
    live_totals[pk].add(tt);
    // The leader's figures are summed over the CPUs (bpf/core_fixes.bpf.h): they win.
    if ((t.flags & PM_TASK_HAS_MM) && (rss.count(pk) == 0 || t.pid == t.tgid)) rss[pk] = rss_of(t);
    if (t.pid == t.tgid || leader.count(pk) == 0) leader[pk] = &t;
  }
  s.tasks = std::move(tasks_now);
  for (size_t i = 0; i < threads.size(); ++i) {
    if (auto it = rss.find(thread_process[i]); it != rss.end() && threads[i].f.rss_bytes)
      threads[i].f.rss_bytes = it->second;
  }
  s.details.next_reading();

  // Deaths: a live process's dead threads add to its `dead`; a process with no live task left has
  // ended, and this is its last interval (a thread of it that dies later adds a row of its own).
  std::set<ProcessKey> ended;
  for (const auto& [k, e] : s.exited) {
    ProcessKey pk{k.tgid, k.leader_start_ns};
    State::Process& p = s.processes[pk];
    Totals d;
    d.add(e.fig);
    p.dead.add(d);
    // Its name and cgroup as they were when its task died (it may have exec'd or moved since it
    // was last seen); a live process's are set from its main thread below.
    if (e.comm[0] != 0) p.comm = std::string(e.comm, strnlen(e.comm, 16));
    if (e.cgroup_id != 0) p.cgroup_id = e.cgroup_id;
    if (live_totals.count(pk) == 0) ended.insert(pk);
  }
  s.exited.clear();

  // Per process: the interval's figures, and the rows they add to (its cgroup at the depth limit,
  // its named group).
  std::vector<TopProcess> rows;
  std::map<std::string, TopCgroup> cgroups;
  std::map<std::string, std::set<uint64_t>> cgroup_ids;  // the cgroups whose processes a row holds
  std::map<std::string, TopFigures> groups;
  std::map<std::string, int> group_procs;
  std::map<ProcessKey, std::vector<const pm_move*>> moved;
  for (const pm_move& m : s.moves) moved[{m.tgid, m.leader_start_ns}].push_back(&m);
  for (auto& [pk, list] : moved) {
    std::stable_sort(list.begin(), list.end(), [](const pm_move* a, const pm_move* b) { return a->at_ns < b->at_ns; });
  }
  auto add_cgroup = [&](uint64_t id, const std::string& path) -> TopCgroup& {
    TopCgroup& c = cgroups[path];
    c.path = path;
    c.with_descendants = cgroup_depth_of(path) >= opts_.cgroup_depth;
    cgroup_ids[path].insert(id);
    return c;
  };
  // A process that moved within the interval: what it ran before each move ran in the cgroup it
  // left (the kernel's cpu.stat says so too). Its on-CPU time at each move splits the interval's;
  // each part is user and system time in the interval's ratio. Returns the CPU so credited.
  auto credit_moves = [&](const ProcessKey& pk, uint64_t from, double dead_cpu, double last_cpu, double now_cpu,
                          const TopFigures& f) -> double {
    auto it = moved.find(pk);
    double cpu = f.cpu_s();
    if (it == moved.end() || cpu <= 0 || from == 0) return 0;
    double at = last_cpu, credited = 0;
    for (const pm_move* m : it->second) {
      // Its live threads' time at the move, and the dead ones' (most of them died before it).
      double upto = std::clamp(static_cast<double>(m->on_cpu_ns) * 1e-9 + dead_cpu, at, now_cpu);
      auto path = cgroup_of(from);
      if (upto > at && path) {
        double share = (upto - at) / cpu;
        TopCgroup& c = add_cgroup(from, *path);
        c.f.user_s += f.user_s * share;
        c.f.system_s += f.system_s * share;
        credited += upto - at;
      }
      at = upto;
      from = m->cgroup_id;
    }
    return std::min(credited, cpu);
  };
  auto add_row = [&](const ProcessKey& pk, State::Process& p, const Totals& now_totals, bool gone) -> TopProcess* {
    // A process not seen before counts from zero only when it began after the reading before
    // the last: none of its figures counted yet (a reading that saw it left state, still kept).
    // One that began earlier was there, unseen, or forgotten: what it did before is unknown here,
    // so no row for this interval, its figures from now on.
    bool known = p.seen || pk.start >= never_counted_after;
    bool had = p.seen;
    double last_cpu = p.last.on_cpu;
    TopFigures f = delta(now_totals, p.seen ? p.last : Totals{});
    if (p.seen) {
      p.last.at_least(now_totals);
    } else {
      p.last = now_totals;
    }
    p.seen = true;
    p.absent = 0;
    if (auto r = rss.find(pk); r != rss.end()) f.rss_bytes = r->second;
    uint64_t before = std::exchange(p.cgroup_before, p.cgroup_id);
    if (seconds == 0 || !known) return nullptr;  // the baseline reading, or no baseline for it
    TopProcess row{static_cast<int>(pk.tgid), 0, p.comm};
    row.exited = gone;
    row.f = f;
    TopFigures here = f;  // what its cgroup now gets: all but the CPU it ran elsewhere
    if (had) {
      if (double elsewhere = credit_moves(pk, before, p.dead.on_cpu, last_cpu, now_totals.on_cpu, f); elsewhere > 0) {
        double cpu = f.cpu_s();
        here.user_s -= f.user_s * elsewhere / cpu;
        here.system_s -= f.system_s * elsewhere / cpu;
      }
    }
    if (auto path = cgroup_of(p.cgroup_id)) {
      row.cgroup = *path;
      TopCgroup& c = add_cgroup(p.cgroup_id, row.cgroup);
      c.f.add(here);
      if (!gone) ++c.processes;
    }
    if (opts_.process_groups && std::regex_search(p.comm, *opts_.process_groups)) {
      groups[p.comm].add(f);
      if (!gone) ++group_procs[p.comm];
    }
    rows.push_back(std::move(row));
    return &rows.back();
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
    if (TopProcess* row = add_row(pk, p, now_totals, false)) {
      row->kernel = p.kernel;
      if (const pm_task* l = leader[pk]) row->ppid = static_cast<int>(l->ppid);
      s.details.fill(*row, pk.start);
    }
  }
  for (const ProcessKey& pk : ended) {
    State::Process& p = s.processes[pk];
    add_row(pk, p, p.dead, true);
  }
  s.moves.clear();
  // Processes with neither a live task nor a death this reading: ended earlier (a thread of it
  // may still be on its way out), or its last task is; kept a while, then forgotten.
  for (auto it = s.processes.begin(); it != s.processes.end();) {
    bool here = live_totals.count(it->first) != 0 || ended.count(it->first) != 0;
    if (!here && ++it->second.absent > kAbsentReadings) {
      it = s.processes.erase(it);
    } else {
      ++it;
    }
  }

  // The cgroups' own files (kept open): cpu.stat's increase only over this interval, from the
  // reading just before (a row absent meanwhile has no figure this time); pressure below, for
  // the rows shown.
  s.cgroup_files.read(s.names.mount(), cgroups);

  // Run-queue latency per cgroup: the kernel keeps it per cgroup (a slot each, while slots last),
  // a row is its cgroup and, at the depth limit, its descendants. Per id, the increase since the
  // last reading; per row, their sum: the interval's quantiles.
  std::vector<CgroupRunq> runq;
  bool all_slotted = object_->read_cgroup_runq(runq);
  std::map<std::string, State::Runq> runq_iv;
  std::set<uint64_t> slotted;
  std::map<uint64_t, State::Runq> ids_now;
  for (const CgroupRunq& r : runq) {
    auto path = cgroup_of(r.cgroup_id);
    if (!path) continue;  // removed: what it had is counted already, and it gets no more
    slotted.insert(r.cgroup_id);
    State::Runq& now_id = ids_now[r.cgroup_id];
    now_id = {r.count, r.ns, r.hist};
    auto last = s.runq_ids.find(r.cgroup_id);
    State::Runq& iv = runq_iv[*path];
    iv.hist.resize(r.hist.size());
    auto up = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    bool had = last != s.runq_ids.end();
    iv.count += up(r.count, had ? last->second.count : 0);
    iv.ns += up(r.ns, had ? last->second.ns : 0);
    for (size_t b = 0; b < r.hist.size(); ++b) {
      iv.hist[b] += up(r.hist[b], had && b < last->second.hist.size() ? last->second.hist[b] : 0);
    }
  }
  s.runq_ids = std::move(ids_now);
  for (auto& [path, c] : cgroups) {
    // Read when each of its cgroups holds a slot, or none was refused one (then a cgroup without
    // a slot had no task switch in): no quantiles then means no waits ("-"), else n/a.
    c.runq_read = all_slotted || std::all_of(cgroup_ids[path].begin(), cgroup_ids[path].end(),
                                             [&](uint64_t id) { return slotted.count(id) != 0; });
    auto it = runq_iv.find(path);
    if (!c.runq_read || it == runq_iv.end()) continue;
    double p50 = log2_quantile(it->second.hist, 0.5, s.runq_hist.bucket_base);
    double p99 = log2_quantile(it->second.hist, 0.99, s.runq_hist.bucket_base);
    if (!std::isnan(p50)) c.runq_p50_s = p50;
    if (!std::isnan(p99)) c.runq_p99_s = p99;
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
  // A label value is the name made valid UTF-8 without control characters (clean_utf8): names
  // that differ only in such bytes are one series, the sum of their rows.
  struct Exported {
    TopFigures f;
    int procs = 0;
    bool timed = false;  // a run-queue histogram for it (a cgroup row whose cgroups were timed)
    State::Runq runq;
  };
  std::map<std::string, Exported> cgroup_out, group_out;
  for (const auto& [key, f] : series) {
    bool is_cgroup = key[0] == 'c';
    std::string raw = key.substr(1);
    Exported& e = (is_cgroup ? cgroup_out : group_out)[clean_utf8(raw)];
    e.f.add(*f);
    e.procs += is_cgroup ? cgroups[raw].processes : group_procs[raw];
    auto iv = runq_iv.find(raw);
    if (!is_cgroup || iv == runq_iv.end() || !cgroups[raw].runq_read) continue;
    e.timed = true;
    e.runq.count += iv->second.count;
    e.runq.ns += iv->second.ns;
    e.runq.hist.resize(std::max(e.runq.hist.size(), iv->second.hist.size()));
    for (size_t b = 0; b < iv->second.hist.size(); ++b) e.runq.hist[b] += iv->second.hist[b];
  }
  for (bool is_cgroup : {true, false}) {
    auto& exported = is_cgroup ? cgroup_out : group_out;
    auto& rows_kept = is_cgroup ? s.cgroup_rows : s.group_rows;
    for (const auto& [name, e] : exported) {
      const TopFigures* f = &e.f;
      State::Row& row = rows_kept[name];
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
      add(kCgroupProcs, kGroupProcs, e.procs);
      if (f->rss_bytes) add(kCgroupRss, kGroupRss, *f->rss_bytes);
      // The row's run-queue histogram: a running sum of its intervals, as its other counters.
      if (!e.timed) continue;
      State::Runq& total = s.runq_rows[name];
      total.count += e.runq.count;
      total.ns += e.runq.ns;
      total.hist.resize(std::max(total.hist.size(), e.runq.hist.size()));
      for (size_t b = 0; b < e.runq.hist.size(); ++b) total.hist[b] += e.runq.hist[b];
      out.push_back({&s.runq_hist, l, static_cast<double>(total.ns) * 1e-9, total.hist});
    }
    // A row not exported this interval (its cgroup removed, its processes gone or renamed, or
    // over --max-series) is forgotten: what is kept is bounded by what is alive. Its last
    // interval went out with the reading before; should it come back, its series start again
    // from zero (a counter reset, which Prometheus's rate() expects).
    for (auto it = rows_kept.begin(); it != rows_kept.end();) {
      it = exported.count(it->first) == 0 ? rows_kept.erase(it) : std::next(it);
    }
  }
  for (auto it = s.runq_rows.begin(); it != s.runq_rows.end();) {
    auto e = cgroup_out.find(it->first);
    it = e == cgroup_out.end() || !e->second.timed ? s.runq_rows.erase(it) : std::next(it);
  }
  auto [exits_dropped, cgroups_over] = object_->top_losses();
  out.push_back({&kDropped, {}, static_cast<double>(s.dropped)});
  out.push_back({&kExitsDropped, {}, static_cast<double>(exits_dropped)});
  out.push_back({&kCgroupsOver, {}, static_cast<double>(cgroups_over)});
  out.push_back({&kMovesDropped, {}, static_cast<double>(object_->moves_dropped())});
  uint64_t exits_in_interval = exits_dropped - std::min(exits_dropped, s.exits_dropped_last);
  s.exits_dropped_last = exits_dropped;

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
  s.cgroup_files.read_pressure(rec->cgroups);
  // A thread's user and command line are its process's.
  std::map<int, const TopProcess*> process_of;
  for (const TopProcess& r : rows) process_of[r.pid] = &r;
  for (TopProcess& t : threads) {
    if (auto it = process_of.find(t.pid); it != process_of.end()) {
      t.uid = it->second->uid;
      t.user = it->second->user;
      t.command = it->second->command;
    }
  }
  std::sort(threads.begin(), threads.end(), by_key);
  if (opts_.count > 0 && static_cast<int>(threads.size()) > opts_.count) threads.resize(static_cast<size_t>(opts_.count));
  rec->threads = std::move(threads);
  rec->exits_dropped = exits_in_interval;
  s.record = std::move(rec);
}

void TopSource::annotate(IntervalRecord& rec) {
  if (state_->record) rec.top = std::move(state_->record);
}

}  // namespace pm
