// SPDX-License-Identifier: Apache-2.0
// The top lists' arithmetic, apart from the kernel and the files: from the tasks a reading found
// (live, each with its running figures) and those that died or changed cgroup since the reading
// before, every process's, thread's and cgroup's figures in the interval; then, per cgroup row
// and per named process group, the running totals exported as metrics (at most max_series of
// each, the busiest). Pure: tests give it synthetic task vectors (tests/sources/top/).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory_resource>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/metric.h"
#include "core/task_figures.h"
#include "core/top.h"

#include <linux/types.h>

#include "tree.h"  // pm_task, pm_process_key, pm_exited (the kernel side's records)

struct pm_move;

namespace pm {

struct CgroupRunq;

struct TopModelOptions {
  int cgroup_depth = 2;                        // a deeper cgroup's processes count for its ancestor at this depth
  bool threads = false;                        // rows per thread too
  const std::regex* process_groups = nullptr;  // comm patterns summed per group
  int max_series = 1000;                       // cgroup and group rows exported at most (the busiest by `sort`)
  TopSort sort = TopSort::kCpu;
  double hist_base = 1e-6;  // the run-queue histograms' unit, in seconds
};

// One reading's input.
struct TopReading {
  uint64_t read_ns = 0;  // CLOCK_MONOTONIC just before the tasks were read (the tasks' start clock)
  double seconds = 0;    // since the reading before; 0: this is the baseline
  const std::vector<pm_task>* live = nullptr;
  const std::vector<std::pair<pm_process_key, pm_exited>>* exited = nullptr;  // since the reading before
  const std::vector<pm_move>* moves = nullptr;                                // likewise
  const std::vector<CgroupRunq>* runq = nullptr;  // per cgroup id, the kernel's running totals
  bool all_slotted = true;                        // every cgroup seen got a run-queue slot
};

// A cgroup or group row's exported running totals.
struct TopSeries {
  bool cgroup = true;  // else a process group
  std::string_view name;  // label value: clean UTF-8 (names that differ only in other bytes are
                          // one); the model's, valid until its next reading
  Labels labels;          // {cgroup or group: name}, the same object from interval to interval
  TaskFigures total;   // running sums of its intervals' figures
  int processes = 0;   // live at the reading
  std::optional<double> rss_bytes;
  bool timed = false;                    // run-queue latency of its cgroups (all of them hold a slot)
  uint64_t runq_count = 0, runq_ns = 0;  // running, as the histogram
  std::vector<uint64_t> runq_hist;
};

struct TopInterval {
  std::vector<TopProcess> processes;  // every process alive at the reading or ended since the last
  std::vector<TopProcess> threads;    // when asked for
  std::vector<TopCgroup> cgroups;     // every cgroup row with a process in it
  std::vector<TopSeries> series;      // what to export (over max_series left out: `dropped`)
  uint64_t dropped = 0;               // rows left out of the export so far (each interval's summed)
};

class TopModel {
 public:
  // A cgroup id's full path; absent: the cgroup is gone (removed before it could be named).
  using CgroupPath = std::function<std::optional<std::string>(uint64_t id)>;
  // `names_generation`: changes whenever path_of may answer differently (CgroupNames::generation);
  // while it does not, each id is named once, not once per reading. None: once per reading.
  TopModel(TopModelOptions options, CgroupPath path_of, double page_size,
           std::function<uint64_t()> names_generation = {});

  // The interval that ends at this reading. At the baseline (seconds 0) only the state is set,
  // and no rows come out.
  TopInterval read(const TopReading& in);

 private:
  struct ProcessKey {
    uint32_t tgid;
    uint64_t start;
    bool operator<(const ProcessKey& o) const { return std::tie(tgid, start) < std::tie(o.tgid, o.start); }
    bool operator==(const ProcessKey& o) const = default;
  };
  struct ProcessKeyHash {
    size_t operator()(const ProcessKey& k) const { return std::hash<uint64_t>{}(k.start ^ (uint64_t{k.tgid} << 40)); }
  };
  struct Process {
    TaskFigures dead;  // threads that died, summed
    TaskFigures last;  // the totals at the previous reading
    bool seen = false;
    bool kernel = false;
    int absent = 0;     // readings in a row with neither a live task nor a death of it
    uint64_t pass = 0;  // the last reading that had a live task or a death of it
    std::string comm;
    uint32_t ppid = 0;
    uint64_t cgroup_id = 0;
    uint64_t cgroup_before = 0;  // its cgroup at the reading before (where a move this interval left)
  };
  // Its blocked time as the kernel last gave it exactly (at a reading where it slept), and as
  // the intervals were given it (each at most the interval's room); its last totals.
  struct Task {
    double kernel_blocked = 0, blocked = 0;
    TaskFigures last;
  };
  struct Runq {
    uint64_t count = 0, ns = 0;
    std::vector<uint64_t> hist;
    void add(const Runq& o);
  };
  // A process with live tasks at this reading.
  struct Live {
    TaskFigures totals;  // its live tasks' summed
    std::optional<double> rss;
    const pm_task* leader = nullptr;  // its main thread, else the first of its tasks
  };
  // What one reading works on, from step to step. Its per-process containers allocate from the
  // model's pool, which keeps the memory from pass to pass (a thousand processes' nodes are not
  // asked of malloc and freed again every interval).
  struct Pass {
    Pass(const TopReading& reading, std::pmr::memory_resource* pool)
        : in(reading), live(pool), ended(pool), cgroups(pool), row_of_id(pool), moved(pool) {}
    const TopReading& in;
    std::pmr::map<ProcessKey, Live> live;
    std::vector<ProcessKey> thread_process;  // each thread row's process
    std::pmr::set<ProcessKey> ended;
    uint64_t never_counted_after = 0;
    struct Cgroup {
      TopCgroup row;
      std::pmr::vector<uint64_t> ids;  // the cgroups whose processes the row holds (a few at most)
      Runq runq;                  // the interval's run-queue waits of those cgroups
      bool runq_seen = false;     // any of them has its waits kept by the kernel
    };
    // By path: a view of the model's cut_paths_ (named once while the names stand, and not
    // forgotten within a reading), so a reading copies no path to find a row.
    std::pmr::unordered_map<std::string_view, Cgroup> cgroups;
    std::vector<std::pair<std::string_view, Cgroup*>> by_path;  // the rows in path order, once made
    // Per cgroup id, its row once it has one.
    std::pmr::unordered_map<uint64_t, TopCgroup*> row_of_id;
    std::map<std::string, TopFigures> groups;
    std::map<std::string, int> group_procs;
    std::pmr::map<ProcessKey, std::vector<const pm_move*>> moved;
    TopInterval out;
  };

  void tasks(Pass& p);
  void deaths(Pass& p);
  void processes(Pass& p);
  TopProcess* add_row(Pass& p, const ProcessKey& pk, Process& proc, const Live* live, const TaskFigures& now,
                      bool gone);
  double credit_moves(Pass& p, const ProcessKey& pk, uint64_t from, double last_cpu, double now_cpu,
                      const TopFigures& f);
  TopCgroup& cgroup_row(Pass& p, uint64_t id, std::string_view path);
  TopCgroup* cgroup_row(Pass& p, uint64_t id);  // nullptr: the cgroup is gone
  const std::optional<std::string>& cut_path_of(uint64_t id);
  void forget_absent();
  void runq_latency(Pass& p);
  void export_series(Pass& p);
  std::optional<std::string> cgroup_of(uint64_t id) const;
  double rss_of(const pm_task& t) const;

  TopModelOptions opts_;
  CgroupPath path_of_;
  double page_size_;
  std::function<uint64_t()> names_generation_;
  // Per cgroup id, its row's path (absent: the cgroup is gone): each id is named and cut to the
  // depth limit once while the names stand, not once per process.
  std::unordered_map<uint64_t, std::optional<std::string>> cut_paths_;
  uint64_t names_seen_ = 0;  // the generation cut_paths_ holds
  // Looked up once or twice per process and reading: hashed, so ten thousand cost what a
  // thousand do, each.
  std::unordered_map<ProcessKey, Process, ProcessKeyHash> processes_;
  uint64_t passes_ = 0;
  std::vector<std::pair<ProcessKey, Task>> tasks_, tasks_now_;  // by (tid, start), ascending
  std::pmr::unsynchronized_pool_resource pool_;                 // the passes' containers
  std::map<uint64_t, Runq> runq_ids_;  // per cgroup id, the kernel's totals at the last reading
  // An exported row's running totals (and its run-queue histogram's, when timed), by label
  // value; `pass`: the last reading that exported it.
  struct Kept {
    Labels labels;  // made once per row, shared by its samples
    TaskFigures total;
    Runq runq;
    uint64_t pass = 0;
  };
  std::unordered_map<std::string, Kept> kept_[2];  // [cgroup]: process groups, cgroups
  using KeptRow = std::pair<const std::string, Kept>;
  // Per row name as the kernel or a process gave it: its exported name's running totals.
  struct Named {
    KeptRow* kept = nullptr;
    uint64_t pass = 0;
  };
  std::unordered_map<std::string, Named> named_[2];
  uint64_t last_read_ns_ = 0, read_ns_before_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace pm
