// SPDX-License-Identifier: Apache-2.0
#include "sources/top/top_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "core/metric.h"
#include "core/text.h"
#include "scheduler.h"
#include "sources/kernel/sched_object.h"
#include "sources/top/cgroup_names.h"

namespace pm {
namespace {

// Readings a process with neither a live task nor a death seen is kept for: its last task may be
// between its exit and its final switch (the iterator skips it, its figures are not in the exited
// map yet), or have died between the taking of the deaths and the iterator; its death then comes
// with the next reading, and its figures count from the last ones seen, not from zero.
constexpr int kAbsentReadings = 2;

std::string comm_of(const char (&comm)[16]) { return {comm, strnlen(comm, sizeof comm)}; }

}  // namespace

void TopModel::Runq::add(const Runq& o) {
  count += o.count;
  ns += o.ns;
  hist.resize(std::max(hist.size(), o.hist.size()));
  for (size_t b = 0; b < o.hist.size(); ++b) hist[b] += o.hist[b];
}

TopModel::TopModel(TopModelOptions options, CgroupPath path_of, double page_size,
                   std::function<uint64_t()> names_generation)
    : opts_(options),
      path_of_(std::move(path_of)),
      page_size_(page_size),
      names_generation_(std::move(names_generation)) {}

std::optional<std::string> TopModel::cgroup_of(uint64_t id) const {
  auto full = path_of_(id);
  if (!full) return std::nullopt;  // gone (removed since): the row is no cgroup's, never the root's
  return cut_cgroup_path(*full, opts_.cgroup_depth);
}

double TopModel::rss_of(const pm_task& t) const {
  return static_cast<double>(t.rss_pages[PM_RSS_FILE] + t.rss_pages[PM_RSS_ANON] + t.rss_pages[PM_RSS_SHMEM]) *
         page_size_;
}

TopInterval TopModel::read(const TopReading& in) {
  Pass p(in, &pool_);
  ++passes_;
  uint64_t names = names_generation_ ? names_generation_() : passes_;
  if (names != names_seen_) {
    cut_paths_.clear();
    names_seen_ = names;
  }
  // A process that began after the reading before the last one could not have been counted yet
  // unless it has state (kept for kAbsentReadings readings after it was last seen).
  // (Right after the baseline: the baseline, what began before it is not the run's.)
  p.never_counted_after = read_ns_before_ != 0 ? read_ns_before_ : last_read_ns_;
  read_ns_before_ = last_read_ns_;
  last_read_ns_ = in.read_ns;
  tasks(p);
  deaths(p);
  processes(p);
  p.by_path.reserve(p.cgroups.size());
  for (auto& [path, c] : p.cgroups) p.by_path.emplace_back(path, &c);
  std::sort(p.by_path.begin(), p.by_path.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  forget_absent();
  runq_latency(p);
  export_series(p);
  if (in.seconds == 0) return {};  // the baseline: state only
  p.out.cgroups.reserve(p.cgroups.size());
  for (auto& [path, c] : p.by_path) p.out.cgroups.push_back(std::move(c->row));
  // A thread's user and command line are its process's (set where the details are read).
  return std::move(p.out);
}

// Live tasks, per process; a runnable task's blocked time is the one it had when it last slept.
void TopModel::tasks(Pass& p) {
  tasks_now_.clear();
  bool ascending = true;  // as the kernel's iterator gives them, by tid
  auto cursor = tasks_.begin();  // while they ascend, each one's last figures are at or after the last one's
  auto by_key = [](const auto& e, const ProcessKey& k) { return e.first < k; };
  for (const pm_task& t : *p.in.live) {
    ProcessKey pk{t.tgid, t.leader_start_ns}, tk{t.pid, t.start_ns};
    TaskFigures tt = task_figures(t.fig);
    ascending = ascending && (tasks_now_.empty() || tasks_now_.back().first < tk);
    Task& task = tasks_now_.emplace_back(tk, Task{}).second;
    // (A few steps forward from the cursor, then a search: a pass's tasks are mostly the last one's.)
    auto from = ascending ? cursor : tasks_.begin();
    for (int step = 0; step < 8 && from != tasks_.end() && from->first < tk; ++step) ++from;
    auto at = from != tasks_.end() && from->first < tk ? std::lower_bound(from, tasks_.end(), tk, by_key) : from;
    cursor = at;
    auto prev = at != tasks_.end() && !(tk < at->first) ? at : tasks_.end();
    // A runnable task's blocked time is not read (the kernel has no figure as of its last
    // wakeup here): its last exact one stands, and the sleep it woke from comes with the next
    // reading where it sleeps, an interval late. What an interval is given is at most what its
    // life in the interval leaves beside its time on a CPU and on the run queue (life = on-CPU +
    // runnable + blocked): a thread's share never passes 100 %, and a sleep that belonged to the
    // interval before is not counted again in this one.
    bool runnable = (t.flags & PM_TASK_RUNNABLE) != 0;
    double kernel_blocked = runnable ? (prev != tasks_.end() ? prev->second.kernel_blocked : 0) : tt[TaskFig::kBlocked];
    double blocked = kernel_blocked;
    if (prev != tasks_.end()) {
      const Task& was = prev->second;
      double life = p.in.read_ns > t.start_ns ? static_cast<double>(p.in.read_ns - t.start_ns) * 1e-9 : 0;
      double room = std::min(p.in.seconds, life) - std::max(0.0, tt.on_cpu_s() - was.last.on_cpu_s()) -
                    std::max(0.0, tt.runq_s() - was.last.runq_s());
      blocked = was.blocked + std::clamp(kernel_blocked - was.kernel_blocked, 0.0, std::max(room, 0.0));
    }
    tt[TaskFig::kBlocked] = blocked;
    task.kernel_blocked = kernel_blocked;
    task.blocked = blocked;
    if (opts_.threads && prev != tasks_.end()) {
      TopProcess row{static_cast<int>(t.tgid), static_cast<int>(t.pid), comm_of(t.comm)};
      row.f = top_delta(tt, prev->second.last);
      row.start_ns = t.start_ns;
      row.kernel = (t.flags & PM_TASK_KTHREAD) != 0;
      row.ppid = static_cast<int>(t.ppid);
      if (runnable) row.state = 'R';
      // A thread's memory is its process's (one mm): its RSS is the process's, set below.
      if (t.flags & PM_TASK_HAS_MM) row.f.rss_bytes = rss_of(t);
      row.cgroup = cut_path_of(t.cgroup_id).value_or("");
      p.out.threads.push_back(std::move(row));
      p.thread_process.push_back(pk);
    }
    task.last = tt;
    // Keys mostly ascend with the tids (a process's first task is its main thread): appended at
    // the end, no search down the tree.
    auto last = p.live.empty() ? p.live.end() : std::prev(p.live.end());
    Live& live = last != p.live.end() && last->first == pk   ? last->second
                 : last == p.live.end() || last->first < pk ? p.live.emplace_hint(p.live.end(), pk, Live{})->second
                                                             : p.live[pk];
    live.totals.add(tt);
    // The leader's figures are summed over the CPUs (bpf/core_fixes.bpf.h): they win.
    if ((t.flags & PM_TASK_HAS_MM) && (!live.rss || t.pid == t.tgid)) live.rss = rss_of(t);
    if (t.pid == t.tgid || live.leader == nullptr) live.leader = &t;
  }
  if (!ascending) {
    std::sort(tasks_now_.begin(), tasks_now_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  std::swap(tasks_, tasks_now_);
  for (size_t i = 0; i < p.out.threads.size(); ++i) {
    TopProcess& row = p.out.threads[i];
    if (auto it = p.live.find(p.thread_process[i]); it != p.live.end() && it->second.rss && row.f.rss_bytes) {
      row.f.rss_bytes = *it->second.rss;
    }
  }
}

// Deaths: a live process's dead threads add to its `dead`; a process with no live task left has
// ended, and this is its last interval (a thread of it that dies later adds a row of its own).
void TopModel::deaths(Pass& p) {
  for (const auto& [k, e] : *p.in.exited) {
    ProcessKey pk{k.tgid, k.leader_start_ns};
    Process& proc = processes_[pk];
    proc.dead.add(task_figures(e.fig));
    // Its name and cgroup as they were when its task died (it may have exec'd or moved since it
    // was last seen); a live process's are set from its main thread below.
    if (e.comm[0] != 0) proc.comm = comm_of(e.comm);
    if (e.cgroup_id != 0) proc.cgroup_id = e.cgroup_id;
    if (p.live.count(pk) == 0) p.ended.insert(pk);
  }
}

const std::optional<std::string>& TopModel::cut_path_of(uint64_t id) {
  auto [it, fresh] = cut_paths_.try_emplace(id);
  if (fresh) it->second = cgroup_of(id);
  return it->second;
}

TopCgroup& TopModel::cgroup_row(Pass& p, uint64_t id, std::string_view path) {
  auto [it, fresh] = p.cgroups.try_emplace(path, Pass::Cgroup{{}, std::pmr::vector<uint64_t>(&pool_)});
  TopCgroup& c = it->second.row;
  if (fresh) {
    c.path = path;
    c.with_descendants = cgroup_depth_of(c.path) >= opts_.cgroup_depth;
  }
  auto& ids = it->second.ids;
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return c;
}

TopCgroup* TopModel::cgroup_row(Pass& p, uint64_t id) {
  auto [it, fresh] = p.row_of_id.try_emplace(id, nullptr);
  if (fresh) {
    if (const auto& path = cut_path_of(id)) it->second = &cgroup_row(p, id, *path);
  }
  return it->second;
}

// A process that moved within the interval: what it ran before each move ran in the cgroup it
// left (the kernel's cpu.stat says so too). Its on-CPU time at each move splits the interval's;
// each part is user and system time in the interval's ratio. Returns the CPU so credited.
double TopModel::credit_moves(Pass& p, const ProcessKey& pk, uint64_t from, double last_cpu, double now_cpu,
                              const TopFigures& f) {
  auto it = p.moved.find(pk);
  double cpu = f.cpu_s();
  if (it == p.moved.end() || cpu <= 0 || from == 0) return 0;
  double dead_cpu = processes_[pk].dead.on_cpu_s();
  double at = last_cpu, credited = 0;
  for (const pm_move* m : it->second) {
    // Its live threads' time at the move, and the dead ones' (most of them died before it).
    double upto = std::clamp(static_cast<double>(m->on_cpu_ns) * 1e-9 + dead_cpu, at, now_cpu);
    TopCgroup* row = upto > at ? cgroup_row(p, from) : nullptr;
    if (row != nullptr) {
      double share = (upto - at) / cpu;
      TopCgroup& c = *row;
      c.f[TaskFig::kUser] += f.user_s() * share;
      c.f[TaskFig::kSystem] += f.system_s() * share;
      credited += upto - at;
    }
    at = upto;
    from = m->cgroup_id;
  }
  return std::min(credited, cpu);
}

// A process's row for the interval, and what it adds to its cgroup's and its group's.
TopProcess* TopModel::add_row(Pass& p, const ProcessKey& pk, Process& proc, const Live* live, const TaskFigures& now,
                              bool gone) {
  // A process not seen before counts from zero only when it began after the reading before
  // the last: none of its figures counted yet (a reading that saw it left state, still kept).
  // One that began earlier was there, unseen, or forgotten: what it did before is unknown here,
  // so no row for this interval, its figures from now on.
  bool known = proc.seen || pk.start >= p.never_counted_after;
  bool had = proc.seen;
  double last_cpu = proc.last.on_cpu_s();
  TopFigures f = top_delta(now, proc.seen ? proc.last : TaskFigures{});
  if (proc.seen) {
    proc.last.at_least(now);
  } else {
    proc.last = now;
  }
  proc.seen = true;
  proc.absent = 0;
  if (live != nullptr && live->rss) f.rss_bytes = *live->rss;
  uint64_t before = std::exchange(proc.cgroup_before, proc.cgroup_id);
  if (p.in.seconds == 0 || !known) return nullptr;  // the baseline reading, or no baseline for it
  TopProcess row{static_cast<int>(pk.tgid), 0, proc.comm};
  row.start_ns = pk.start;
  row.exited = gone;
  row.kernel = proc.kernel;
  row.ppid = static_cast<int>(proc.ppid);
  row.f = f;
  TopFigures here = f;  // what its cgroup now gets: all but the CPU it ran elsewhere
  if (had) {
    if (double elsewhere = credit_moves(p, pk, before, last_cpu, now.on_cpu_s(), f); elsewhere > 0) {
      double cpu = f.cpu_s();
      here[TaskFig::kUser] -= f.user_s() * elsewhere / cpu;
      here[TaskFig::kSystem] -= f.system_s() * elsewhere / cpu;
    }
  }
  if (TopCgroup* c = cgroup_row(p, proc.cgroup_id)) {
    row.cgroup = c->path;
    c->f.add(here);
    if (!gone) ++c->processes;
  }
  if (opts_.process_groups != nullptr && std::regex_search(proc.comm, *opts_.process_groups)) {
    p.groups[proc.comm].add(f);
    if (!gone) ++p.group_procs[proc.comm];
  }
  p.out.processes.push_back(std::move(row));
  return &p.out.processes.back();
}

// Per process: the interval's figures, and the rows they add to (its cgroup at the depth limit,
// its named group).
void TopModel::processes(Pass& p) {
  p.out.processes.reserve(p.live.size() + p.ended.size());
  for (const pm_move& m : *p.in.moves) p.moved[{m.tgid, m.leader_start_ns}].push_back(&m);
  for (auto& [pk, list] : p.moved) {
    std::stable_sort(list.begin(), list.end(), [](const pm_move* a, const pm_move* b) { return a->at_ns < b->at_ns; });
  }
  for (auto& [pk, live] : p.live) {
    Process& proc = processes_[pk];
    proc.pass = passes_;
    if (const pm_task* l = live.leader) {
      proc.comm = comm_of(l->comm);
      proc.cgroup_id = l->cgroup_id;
      proc.ppid = l->ppid;
      if (l->flags & PM_TASK_KTHREAD) proc.kernel = true;
    }
    TaskFigures now = live.totals;
    now.add(proc.dead);
    add_row(p, pk, proc, &live, now, false);
  }
  for (const ProcessKey& pk : p.ended) {
    Process& proc = processes_[pk];
    proc.pass = passes_;
    add_row(p, pk, proc, nullptr, proc.dead, true);
  }
}

// Processes with neither a live task nor a death this reading: ended earlier (a thread of it
// may still be on its way out), or its last task is; kept a while, then forgotten.
void TopModel::forget_absent() {
  for (auto it = processes_.begin(); it != processes_.end();) {
    bool here = it->second.pass == passes_;
    it = !here && ++it->second.absent > kAbsentReadings ? processes_.erase(it) : std::next(it);
  }
}

// Run-queue latency per cgroup: the kernel keeps it per cgroup (a slot each, while slots last),
// a row is its cgroup and, at the depth limit, its descendants. Per id, the increase since the
// last reading; per row, their sum: the interval's quantiles.
void TopModel::runq_latency(Pass& p) {
  std::pmr::unordered_set<uint64_t> slotted(&pool_);
  auto up = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  for (const CgroupRunq& r : *p.in.runq) {
    const auto& path = cut_path_of(r.cgroup_id);
    if (!path) continue;  // removed: what it had is counted already, and it gets no more
    slotted.insert(r.cgroup_id);
    auto [last, fresh] = runq_ids_.try_emplace(r.cgroup_id);
    Runq& was = last->second;
    if (auto row = p.cgroups.find(*path); row != p.cgroups.end()) {  // else no process of it: no row
      row->second.runq_seen = true;
      Runq& d = row->second.runq;
      d.count += up(r.count, was.count);
      d.ns += up(r.ns, was.ns);
      d.hist.resize(std::max(d.hist.size(), r.hist.size()));
      for (size_t b = 0; b < r.hist.size(); ++b) d.hist[b] += up(r.hist[b], b < was.hist.size() ? was.hist[b] : 0);
    }
    was.count = r.count;
    was.ns = r.ns;
    was.hist.assign(r.hist.begin(), r.hist.end());
  }
  std::erase_if(runq_ids_, [&](const auto& kv) { return slotted.count(kv.first) == 0; });
  for (auto& [path, acc] : p.cgroups) {
    TopCgroup& c = acc.row;
    // Read when each of its cgroups holds a slot, or none was refused one (then a cgroup without
    // a slot had no task switch in): no quantiles then means no waits ("-"), else n/a.
    const auto& ids = acc.ids;
    c.runq_read =
        p.in.all_slotted || std::all_of(ids.begin(), ids.end(), [&](uint64_t id) { return slotted.count(id) != 0; });
    if (!c.runq_read || !acc.runq_seen) continue;
    double p50 = log2_quantile(acc.runq.hist, 0.5, opts_.hist_base);
    double p99 = log2_quantile(acc.runq.hist, 0.99, opts_.hist_base);
    if (!std::isnan(p50)) c.runq_p50_s = p50;
    if (!std::isnan(p99)) c.runq_p99_s = p99;
  }
}

// Per cgroup and per group, each bounded by max_series (the busiest first), the running totals.
void TopModel::export_series(Pass& p) {
  struct Row {
    const std::string* raw;
    const TopFigures* f;
    const Pass::Cgroup* c;  // a cgroup row's
    size_t at;              // its place in name order
  };
  for (bool cgroup : {true, false}) {
    // In name order (rows by path, groups by name): the order the series go out in.
    std::vector<Row> list;
    if (cgroup) {
      for (const auto& [path, c] : p.by_path) list.push_back({&c->row.path, &c->row.f, c, list.size()});
    } else {
      for (const auto& [name, f] : p.groups) list.push_back({&name, &f, nullptr, list.size()});
    }
    if (static_cast<int>(list.size()) > opts_.max_series) {
      std::stable_sort(list.begin(), list.end(),
                       [&](const Row& a, const Row& b) { return a.f->key(opts_.sort) > b.f->key(opts_.sort); });
      dropped_ += list.size() - static_cast<size_t>(opts_.max_series);
      list.resize(static_cast<size_t>(opts_.max_series));
      std::sort(list.begin(), list.end(), [](const Row& a, const Row& b) { return a.at < b.at; });
    }
    // A label value is the name made valid UTF-8 without control characters (clean_utf8): names
    // that differ only in such bytes are one series, the sum of their rows. Each name is made
    // clean once while its row is exported, and finds its running totals without a lookup.
    auto& totals = kept_[cgroup];
    auto& names = named_[cgroup];
    struct Exported {
      KeptRow* kept;
      TopFigures f;
      int procs = 0;
      bool timed = false;
      Runq runq;
    };
    std::vector<Exported> out;
    out.reserve(list.size());
    for (const Row& r : list) {
      auto [it, fresh] = names.try_emplace(*r.raw);
      Named& n = it->second;
      if (fresh) n.kept = &*totals.try_emplace(clean_utf8(*r.raw)).first;
      n.pass = passes_;
      out.push_back({n.kept, *r.f, cgroup ? r.c->row.processes : p.group_procs[*r.raw]});
      Exported& e = out.back();
      if (cgroup && r.c->row.runq_read && r.c->runq_seen) {
        e.timed = true;
        e.runq = r.c->runq;
      }
    }
    // Clean names keep the rows' order unless a name had bytes replaced; rows of one name merge.
    auto by_name = [](const Exported& a, const Exported& b) { return a.kept->first < b.kept->first; };
    if (!std::is_sorted(out.begin(), out.end(), by_name)) std::stable_sort(out.begin(), out.end(), by_name);
    for (size_t i = 0; i < out.size();) {
      Exported e = std::move(out[i]);
      for (++i; i < out.size() && out[i].kept == e.kept; ++i) {
        e.f.add(out[i].f);
        e.procs += out[i].procs;
        if (out[i].timed) {
          e.timed = true;
          e.runq.add(out[i].runq);
        }
      }
      const std::string& name = e.kept->first;
      Kept& k = e.kept->second;
      if (k.labels.empty()) k.labels = Labels{{cgroup ? "cgroup" : "group", name}};
      k.total.add(e.f);
      k.pass = passes_;
      TopSeries s{cgroup, name, k.labels, k.total, e.procs, e.f.rss_bytes};
      // The row's run-queue histogram: a running sum of its intervals, as its other counters;
      // a row not timed in an interval starts it again.
      if (!e.timed) {
        k.runq = {};
      } else {
        k.runq.add(e.runq);
        s.timed = true;
        s.runq_count = k.runq.count;
        s.runq_ns = k.runq.ns;
        s.runq_hist = k.runq.hist;
      }
      p.out.series.push_back(std::move(s));
    }
    // A row not exported this interval (its cgroup removed, its processes gone or renamed, or
    // over --max-series) is forgotten: what is kept is bounded by what is alive. Its last
    // interval went out with the reading before; should it come back, its series start again
    // from zero (a counter reset, which Prometheus's rate() expects). (A name kept is exported,
    // so is the row its Named points at: no pointer outlives its row.)
    std::erase_if(names, [&](const auto& kv) { return kv.second.pass != passes_; });
    std::erase_if(totals, [&](const auto& kv) { return kv.second.pass != passes_; });
  }
  p.out.dropped = dropped_;
}

}  // namespace pm
