// SPDX-License-Identifier: Apache-2.0
// The top lists' arithmetic on synthetic task vectors: what the kernel side would report for a
// few processes over a few readings, and the figures that must come out (deltas, dead threads,
// ended processes, cgroup moves, roll-up at the depth limit, series caps, run-queue quantiles).
#include "sources/top/top_model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>

#include "scheduler.h"
#include "sources/kernel/sched_object.h"

namespace pm {
namespace {

constexpr uint64_t kS = 1000000000ULL;  // a second in ns

pm_task task(uint32_t pid, uint32_t tgid, uint64_t start_s, const char* comm, uint64_t cgroup) {
  pm_task t{};
  t.pid = pid;
  t.tgid = tgid;
  t.start_ns = start_s * kS;
  t.leader_start_ns = start_s * kS;
  t.cgroup_id = cgroup;
  t.flags = PM_TASK_HAS_MM;
  t.rss_pages[PM_RSS_ANON] = 256;
  std::strncpy(t.comm, comm, sizeof t.comm - 1);
  return t;
}

// Its running figures: on-CPU time (split 3:1 user:system by its ticks), run-queue wait, faults.
void ran(pm_task& t, double cpu_s, double runq_s, uint64_t faults) {
  t.fig[PM_T_ON_CPU_NS] = static_cast<uint64_t>(cpu_s * 1e9);
  t.fig[PM_T_USER_NS] = static_cast<uint64_t>(cpu_s * 0.75e9);
  t.fig[PM_T_SYSTEM_NS] = static_cast<uint64_t>(cpu_s * 0.25e9);
  t.fig[PM_T_RUNQ_NS] = static_cast<uint64_t>(runq_s * 1e9);
  t.fig[PM_T_MINOR_FAULTS] = faults;
  t.fig[PM_T_VOLUNTARY] = faults;
}

struct Harness {
  std::map<uint64_t, std::string> paths{{1, "/"}, {2, "/a"}, {3, "/a/b/c"}, {4, "/z"}};
  TopModelOptions opts;
  std::unique_ptr<TopModel> model;
  std::vector<pm_task> live;
  std::vector<std::pair<pm_process_key, pm_exited>> exited;
  std::vector<pm_move> moves;
  std::vector<CgroupRunq> runq;
  uint64_t now_s = 100;
  int asked = 0;            // names asked for
  uint64_t generation = 0;  // the names' (with_generation)

  void make(bool with_generation = false) {
    std::function<uint64_t()> gen;
    if (with_generation) gen = [this] { return generation; };
    model = std::make_unique<TopModel>(
        opts,
        [this](uint64_t id) -> std::optional<std::string> {
          ++asked;
          auto it = paths.find(id);
          if (it == paths.end()) return std::nullopt;
          return it->second;
        },
        4096, gen);
  }
  TopInterval read(double seconds) {
    now_s += static_cast<uint64_t>(seconds);
    TopInterval iv = model->read({now_s * kS, seconds, &live, &exited, &moves, &runq, true});
    exited.clear();
    moves.clear();
    return iv;
  }
  void died(const pm_task& t, bool leader) {
    pm_process_key k{};
    k.tgid = t.tgid;
    k.leader_start_ns = t.leader_start_ns;
    pm_exited e{};
    std::memcpy(e.fig, t.fig, sizeof e.fig);
    e.cgroup_id = t.cgroup_id;
    e.leader_dead = leader ? 1 : 0;
    std::memcpy(e.comm, t.comm, sizeof e.comm);
    exited.emplace_back(k, e);
  }
};

const TopProcess* row(const TopInterval& iv, int pid) {
  for (const TopProcess& p : iv.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}
const TopCgroup* cgroup(const TopInterval& iv, const std::string& path) {
  for (const TopCgroup& c : iv.cgroups) {
    if (c.path == path) return &c;
  }
  return nullptr;
}
const TopSeries* series(const TopInterval& iv, const std::string& name) {
  for (const TopSeries& s : iv.series) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(TopModel, TheBaselineGivesNoRowsAndTheNextIntervalItsIncrease) {
  Harness h;
  h.make();
  pm_task a = task(10, 10, 1, "burner", 2);
  ran(a, 5.0, 0.5, 100);
  h.live = {a};
  TopInterval base = h.read(0);
  EXPECT_TRUE(base.processes.empty());
  EXPECT_TRUE(base.series.empty());

  ran(h.live[0], 5.8, 0.6, 150);  // 0.8 s of CPU, 0.1 s waiting, 50 faults in the interval
  TopInterval iv = h.read(1);
  const TopProcess* r = row(iv, 10);
  ASSERT_NE(r, nullptr);
  EXPECT_NEAR(r->f.cpu_s(), 0.8, 1e-9);
  EXPECT_NEAR(r->f.user_s(), 0.6, 1e-9);  // the tick ratio, 3:1
  EXPECT_NEAR(r->f.runq_s(), 0.1, 1e-9);
  EXPECT_DOUBLE_EQ(r->f.faults(), 50);
  EXPECT_DOUBLE_EQ(r->f.rss_bytes.value_or(0), 256 * 4096.0);
  EXPECT_EQ(r->cgroup, "/a");
  EXPECT_EQ(r->start_ns, 1 * kS);
  const TopCgroup* c = cgroup(iv, "/a");
  ASSERT_NE(c, nullptr);
  EXPECT_NEAR(c->f.cpu_s(), 0.8, 1e-9);
  EXPECT_EQ(c->processes, 1);
  // The exported series are running totals of the intervals.
  ran(h.live[0], 6.0, 0.6, 150);
  iv = h.read(1);
  const TopSeries* s = series(iv, "/a");
  ASSERT_NE(s, nullptr);
  EXPECT_NEAR(s->total.cpu_s(), 1.0, 1e-9);
  EXPECT_NEAR(s->total.runq_s(), 0.1, 1e-9);
}

// A cgroup is named once while the names stand, however many processes and readings, and again
// once they change (a rename found by a walk); without a generation, once per reading.
TEST(TopModel, ACgroupIsNamedOnceWhileTheNamesStand) {
  Harness h;
  h.make(/*with_generation=*/true);
  h.live = {task(10, 10, 1, "a", 2), task(11, 11, 1, "b", 2), task(12, 12, 1, "c", 2)};
  h.read(0);
  for (int i = 0; i < 3; ++i) {
    TopInterval iv = h.read(1);
    ASSERT_NE(cgroup(iv, "/a"), nullptr);
    EXPECT_EQ(cgroup(iv, "/a")->processes, 3);
  }
  EXPECT_EQ(h.asked, 1);
  h.paths[2] = "/renamed";
  ++h.generation;
  TopInterval iv = h.read(1);
  EXPECT_EQ(cgroup(iv, "/a"), nullptr);
  ASSERT_NE(cgroup(iv, "/renamed"), nullptr);
  EXPECT_EQ(row(iv, 11)->cgroup, "/renamed");
  EXPECT_EQ(h.asked, 2);

  Harness each;
  each.make();
  each.live = h.live;
  each.read(0);  // the baseline makes no rows: nothing named
  each.read(1);
  each.read(1);
  EXPECT_EQ(each.asked, 2) << "once per reading without a generation";
}

TEST(TopModel, ADeadThreadKeepsCountingAndAnEndedProcessHasItsLastRow) {
  Harness h;
  h.make();
  pm_task leader = task(10, 10, 1, "app", 2), worker = task(11, 10, 2, "app-w", 2);
  worker.leader_start_ns = leader.start_ns;
  ran(leader, 1.0, 0, 0);
  ran(worker, 2.0, 0, 0);
  h.live = {leader, worker};
  h.read(0);
  // The worker runs 0.5 s more and dies: its figures come with its death, not from the live list.
  ran(worker, 2.5, 0, 0);
  h.died(worker, false);
  ran(leader, 1.25, 0, 0);
  h.live = {leader};
  TopInterval iv = h.read(1);
  const TopProcess* r = row(iv, 10);
  ASSERT_NE(r, nullptr);
  EXPECT_NEAR(r->f.cpu_s(), 0.75, 1e-9) << "the leader's 0.25 s and the dead worker's 0.5 s";
  EXPECT_FALSE(r->exited);
  // Now the leader ends too: one last row, marked, with what it ran since.
  ran(leader, 1.5, 0, 0);
  h.died(leader, true);
  h.live = {};
  iv = h.read(1);
  r = row(iv, 10);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->exited);
  EXPECT_NEAR(r->f.cpu_s(), 0.25, 1e-9);
  EXPECT_EQ(cgroup(iv, "/a")->processes, 0) << "an ended process is no live one of its cgroup";
  // And then it is gone.
  iv = h.read(1);
  EXPECT_EQ(row(iv, 10), nullptr);
}

TEST(TopModel, AProcessBornInTheIntervalCountsFromZeroOneMissedHasNoRow) {
  Harness h;
  h.make();
  h.live = {};
  h.read(0);                                      // at 100 s
  pm_task fresh = task(20, 20, 100, "fresh", 2);  // began at the baseline's reading: counts from 0
  ran(fresh, 0.3, 0, 0);
  pm_task old = task(30, 30, 50, "old", 2);  // began long before, never seen: no baseline
  ran(old, 40, 0, 0);
  h.live = {fresh, old};
  TopInterval iv = h.read(1);
  ASSERT_NE(row(iv, 20), nullptr);
  EXPECT_NEAR(row(iv, 20)->f.cpu_s(), 0.3, 1e-9);
  EXPECT_EQ(row(iv, 30), nullptr) << "what it did before it was seen is not this interval's";
  ran(h.live[1], 40.2, 0, 0);
  iv = h.read(1);
  ASSERT_NE(row(iv, 30), nullptr);
  EXPECT_NEAR(row(iv, 30)->f.cpu_s(), 0.2, 1e-9);
}

TEST(TopModel, AMoveCreditsTheCgroupItLeftWithTheCpuItRanThere) {
  Harness h;
  h.make();
  pm_task t = task(10, 10, 1, "mover", 2);
  ran(t, 1.0, 0, 0);
  h.live = {t};
  h.read(0);
  // 0.4 s in /a, then moved to /z, then 0.6 s there.
  pm_move m{};
  m.tgid = 10;
  m.leader_start_ns = t.leader_start_ns;
  m.cgroup_id = 4;
  m.on_cpu_ns = static_cast<uint64_t>(1.4e9);
  m.at_ns = 1;
  h.moves = {m};
  h.live[0].cgroup_id = 4;
  ran(h.live[0], 2.0, 0, 0);
  TopInterval iv = h.read(1);
  ASSERT_NE(cgroup(iv, "/a"), nullptr);
  ASSERT_NE(cgroup(iv, "/z"), nullptr);
  EXPECT_NEAR(cgroup(iv, "/a")->f.cpu_s(), 0.4, 1e-9);
  EXPECT_NEAR(cgroup(iv, "/z")->f.cpu_s(), 0.6, 1e-9);
  EXPECT_NEAR(row(iv, 10)->f.cpu_s(), 1.0, 1e-9) << "the process's own row has all of it";
  EXPECT_EQ(row(iv, 10)->cgroup, "/z");
}

TEST(TopModel, DeepCgroupsRollUpAtTheDepthLimitAndSeriesAreCapped) {
  Harness h;
  h.opts.cgroup_depth = 2;
  h.opts.max_series = 1;
  h.make();
  pm_task deep = task(10, 10, 1, "deep", 3), top = task(20, 20, 1, "top", 4);
  h.live = {deep, top};
  h.read(0);
  ran(h.live[0], 0.9, 0, 0);
  ran(h.live[1], 0.1, 0, 0);
  TopInterval iv = h.read(1);
  const TopCgroup* c = cgroup(iv, "/a/b");
  ASSERT_NE(c, nullptr) << "/a/b/c counts for /a/b at depth 2";
  EXPECT_TRUE(c->with_descendants);
  EXPECT_EQ(row(iv, 10)->cgroup, "/a/b");
  ASSERT_EQ(iv.series.size(), 1u) << "max_series 1: the busiest only";
  EXPECT_EQ(iv.series[0].name, "/a/b");
  EXPECT_EQ(iv.dropped, 1u);
}

TEST(TopModel, NamesThatDifferOnlyInControlBytesAreOneSeriesAndGroupsSumTheirProcesses) {
  Harness h;
  std::regex groups("^app");
  h.opts.process_groups = &groups;
  h.paths[5] = "/x\x1b";
  h.paths[6] = "/x\x07";
  h.make();
  pm_task a = task(10, 10, 1, "app", 5), b = task(20, 20, 1, "app", 6), c = task(30, 30, 1, "other", 6);
  h.live = {a, b, c};
  h.read(0);
  for (pm_task& t : h.live) ran(t, 0.5, 0, 0);
  TopInterval iv = h.read(1);
  int cgroup_series = 0;
  for (const TopSeries& s : iv.series) {
    if (s.cgroup) ++cgroup_series;
    for (unsigned char ch : s.name) EXPECT_GE(ch, 0x20) << "a label value has no control bytes";
  }
  EXPECT_EQ(cgroup_series, 1) << "the two cgroup names clean to one label value";
  ASSERT_NE(series(iv, "/x\xEF\xBF\xBD"), nullptr);
  EXPECT_EQ(series(iv, "/x\xEF\xBF\xBD")->processes, 3);
  const TopSeries* g = nullptr;
  for (const TopSeries& s : iv.series) {
    if (!s.cgroup) g = &s;
  }
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->name, "app");
  EXPECT_EQ(g->processes, 2);
  EXPECT_NEAR(g->total.cpu_s(), 1.0, 1e-9);
}

TEST(TopModel, RunQueueQuantilesAreTheIntervalsIncreaseOnly) {
  Harness h;
  h.opts.hist_base = 1e-6;
  h.make();
  pm_task t = task(10, 10, 1, "w", 2);
  h.live = {t};
  // Before: 1000 waits in bucket 10 (about 1 ms); in the interval: 100 more in bucket 3 (8 us).
  std::vector<uint64_t> hist(16, 0);
  hist[10] = 1000;
  h.runq = {{2, 1000, 1000000000, hist}};
  h.read(0);
  hist[3] = 100;
  h.runq = {{2, 1100, 1000800000, hist}};
  ran(h.live[0], 0.1, 0, 0);
  TopInterval iv = h.read(1);
  const TopCgroup* c = cgroup(iv, "/a");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->runq_read);
  ASSERT_TRUE(c->runq_p99_s.has_value());
  EXPECT_LE(*c->runq_p99_s, 8e-6) << "the interval's waits were all in the 8 us bucket";
  const TopSeries* s = series(iv, "/a");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->timed);
  EXPECT_EQ(s->runq_count, 100u) << "the series counts from the first interval, not the kernel's boot";
}

TEST(TopModel, TaskFiguresAreIndexedAsTheKernelSidesInSeconds) {
  __u64 fig[PM_T_FIGURES] = {};
  fig[PM_T_ON_CPU_NS] = 1500000000;
  fig[PM_T_READ_BYTES] = 4096;
  fig[PM_T_INVOLUNTARY] = 7;
  TaskFigures f = task_figures(fig);
  EXPECT_DOUBLE_EQ(f.on_cpu_s(), 1.5);
  EXPECT_DOUBLE_EQ(f.read_bytes(), 4096);
  EXPECT_DOUBLE_EQ(f[TaskFig::kInvoluntary], 7);
  EXPECT_DOUBLE_EQ(f.switches(), 7);
}

}  // namespace
}  // namespace pm
