// SPDX-License-Identifier: Apache-2.0
#include "sources/tree/kernel_tree.h"

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <unordered_map>

#include <linux/types.h>

#include "scheduler.h"

namespace pm {

struct KernelTree::Reading {
  __u64 fig[PM_T_FIGURES] = {};
  uint64_t processes_seen = 0, threads_seen = 0, not_followed = 0, tasks_exited = 0;
  uint64_t peak_pages = 0;
};

KernelTree::KernelTree(std::shared_ptr<SchedObject> object, bool new_tree, std::string proc_root)
    : object_(std::move(object)),
      pss_(std::move(proc_root)),
      new_tree_(new_tree),
      page_size_(static_cast<double>(::sysconf(_SC_PAGESIZE))) {}

KernelTree::~KernelTree() = default;

Result<std::unique_ptr<KernelTree>> KernelTree::create(std::shared_ptr<SchedObject> object,
                                                       const std::vector<int>& roots, bool new_tree, bool may_be_empty,
                                                       std::string proc_root) {
  if (!object->follows_tree()) {
    return make_error(Errc::kUnavailable, "the scheduler programs could not load as tp_btf (task storage)");
  }
  auto tree = std::make_unique<KernelTree>(std::move(object), new_tree, std::move(proc_root));
  auto marked = tree->add(roots);
  if (!marked) return marked.error();
  if (*marked == 0 && !may_be_empty) return make_error(Errc::kNotFound, "none of the processes to follow exists");
  return tree;
}

Result<size_t> KernelTree::add(const std::vector<int>& tgids) { return object_->seed(tgids); }

// The exited totals are read before the live tasks: a task that dies in between is then
// missing from this reading (and in the next), never counted twice.
bool KernelTree::read(Reading& r) {
  std::vector<pm_tree_stats> per_cpu;
  if (!object_->read_tree(per_cpu)) return false;
  for (const pm_tree_stats& s : per_cpu) {
    const pm_tree_totals& t = s.totals;
    r.processes_seen += t.processes_seen;
    r.threads_seen += t.threads_seen;
    r.not_followed += t.not_followed;
    r.tasks_exited += t.tasks_exited;
    for (int i = 0; i < PM_T_FIGURES; ++i) r.fig[i] += t.exited[i];
    r.peak_pages = std::max<uint64_t>(r.peak_pages, t.exited_peak_rss_pages);
  }
  if (!object_->read_live(live_)) return false;
  for (const pm_task& t : live_) {
    for (int i = 0; i < PM_T_FIGURES; ++i) r.fig[i] += t.fig[i];
    r.peak_pages = std::max<uint64_t>(r.peak_pages, t.peak_rss_pages);
  }
  return true;
}

void KernelTree::collect(Samples& out) {
  Reading r;
  if (!read(r)) return;
  // User and system time: the exact on-CPU time split in the ratio of the tick-sampled ones.
  TaskFigures now = task_figures(r.fig);
  reported_.at_least(now);
  split_.update(reported_.on_cpu_s(), now[TaskFig::kUser], now[TaskFig::kSystem]);
  reported_[TaskFig::kUser] = split_.user_s;
  reported_[TaskFig::kSystem] = split_.system_s;

  TreeFigures f;
  f.counters = reported_;
  f.has_times = true;
  f.processes_seen = static_cast<double>(object_->seeded_processes() + r.processes_seen);
  f.not_followed = static_cast<double>(r.not_followed + object_->seed_failures());
  // Memory is per process (its mm, shared by its threads): one record of each, one that still
  // has the mm (a leader that exited while its threads run has none), the leader's if it has
  // one (its counters are the ones summed over the CPUs).
  std::unordered_map<uint32_t, const pm_task*> process;
  for (const pm_task& t : live_) {
    auto [it, inserted] = process.try_emplace(t.tgid, &t);
    bool has_mm = (t.flags & PM_TASK_HAS_MM) != 0;
    if (!inserted && has_mm && ((it->second->flags & PM_TASK_HAS_MM) == 0 || t.pid == t.tgid)) it->second = &t;
  }
  std::vector<PssSampler::Member> members;
  double anon = 0;
  for (const auto& [tgid, t] : process) {
    if ((t->flags & PM_TASK_HAS_MM) == 0) continue;
    auto pages = [&](__u64 p) { return static_cast<double>(p) * page_size_; };
    double rss = pages(t->rss_pages[PM_RSS_FILE] + t->rss_pages[PM_RSS_ANON] + t->rss_pages[PM_RSS_SHMEM]);
    f.rss += rss;
    f.vm_size += pages(t->vm_pages);
    anon += pages(t->rss_pages[PM_RSS_ANON]);
    members.push_back({static_cast<int>(tgid), rss, pages(t->vm_pages)});
  }
  f.processes = static_cast<double>(process.size());
  f.threads = static_cast<double>(live_.size());
  f.anon = anon;
  if (new_tree_) f.peak_rss = static_cast<double>(r.peak_pages) * page_size_;
  pss_.update(members, PssSampler::Clock::now(), f.peak_rss);
  f.pss = pss_.pss();
  f.shared = pss_.shared();
  f.pss_max_lower_bound = pss_.max_lower_bound();
  append_tree_samples(f, out);
}

std::vector<int> KernelTree::pids() {
  Reading r;
  read(r);
  std::vector<int> out;
  for (const pm_task& t : live_) {
    if (std::find(out.begin(), out.end(), static_cast<int>(t.tgid)) == out.end()) out.push_back(static_cast<int>(t.tgid));
  }
  return out;
}

void KernelTree::settle() {
  // A task that exited is reaped before its very last switch, where its figures are taken: give
  // the ones in between a moment (they are on their way off a CPU).
  for (int i = 0; i < 200; ++i) {
    Reading r;
    if (!read(r)) return;
    uint64_t seen = object_->seeded_tasks() + r.processes_seen + r.threads_seen;
    if (r.tasks_exited + live_.size() >= seen) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace pm
