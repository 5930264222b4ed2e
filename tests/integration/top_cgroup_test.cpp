// SPDX-License-Identifier: Apache-2.0
// Cgroup rows against the kernel's own cpu.stat when things move: a process moved between two
// cgroups within intervals has its CPU credited to the cgroup it ran in, and busy cgroups removed
// one after another each keep their last interval.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/cgroup.h"
#include "integration/harness.h"

namespace pm::test {
namespace {

using std::chrono::milliseconds;

std::string make_cgroup(const std::string& name) {
  std::string rel = "/pm-test-" + std::to_string(::getpid()) + "-" + name;
  ::mkdir((unified_mount() + rel).c_str(), 0755);
  return rel;
}

void remove_cgroup(const std::string& rel) {
  std::string dir = unified_mount() + rel;
  std::ofstream(dir + "/cgroup.kill") << "1";
  for (int i = 0; i < 100 && ::rmdir(dir.c_str()) != 0; ++i) std::this_thread::sleep_for(milliseconds(10));
}

double usage_s(const std::string& rel) {
  std::ifstream in(unified_mount() + rel + "/cpu.stat");
  std::string key;
  double v = 0;
  while (in >> key >> v) {
    if (key == "usage_usec") return v * 1e-6;
  }
  return NAN;
}

// A reaped task's cgroup figure once it has settled: the parent may reap a task before its final
// switch, which charges what it ran since its last tick (a stalled vCPU here stretches that to
// tens of ms; this VM reports no steal time), while the monitor takes its figures at that switch.
double settled_usage_s(const std::string& rel) {
  double was = usage_s(rel);
  for (int same = 0, i = 0; same < 3 && i < 50; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    double now = usage_s(rel);
    same = now == was ? same + 1 : 0;
    was = now;
  }
  return was;
}

void move_to(const std::string& rel, pid_t pid) { std::ofstream(unified_mount() + rel + "/cgroup.procs") << pid; }

pid_t spinner(const std::string& rel) {
  pid_t pid = ::fork();
  if (pid == 0) {
    move_to(rel, ::getpid());
    volatile unsigned long spins = 0;
    for (;;) spins = spins + 1;
  }
  return pid;
}

class TopCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: eBPF and test cgroups";
    if (unified_mount().empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
  }
};

TEST_F(TopCgroupTest, AMovedProcessesCpuIsCreditedToTheCgroupItRanIn) {
  // A spinning process moved between A and B every 450 ms (moves inside every 1 s interval):
  // each interval's row of each cgroup within 5 % of that cgroup's cpu.stat increase. (Were all
  // of an interval's CPU credited to where the process is at the reading, one would be off by
  // about half of it.)
  std::string a = make_cgroup("mvA"), b = make_cgroup("mvB");
  RunningPm pm({"--interval", "1s", "--format", "json", "--cgroup-depth", "1", "--top", "100000"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  pid_t spin = spinner(a);
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(milliseconds(450));
    move_to(i % 2 == 0 ? b : a, spin);
  }
  Outcome o = pm.stop(SIGINT);
  ::kill(spin, SIGKILL);
  ::waitpid(spin, nullptr, 0);
  remove_cgroup(a);
  remove_cgroup(b);
  int compared = 0;
  for (const auto& r : o.records) {
    if (r.value("type", "") != "interval" || !r.contains("top")) continue;
    for (const auto& c : r["top"]["cgroups"]) {
      std::string path = c.value("cgroup", "");
      if (path != a && path != b) continue;
      if (!c.contains("cpu_stat_s") || !c["cpu_stat_s"].is_number()) continue;
      double truth = c["cpu_stat_s"].get<double>();
      if (truth < 0.05) continue;  // the interval it began or ended in, or a starved one
      ++compared;
      // (10 ms more: cpu.stat is read a moment after the tasks, which a loaded machine stretches.)
      EXPECT_NEAR(cpu_of(c), truth, 0.05 * truth + 0.01) << path << " " << c.dump();
    }
  }
  EXPECT_GE(compared, 4) << o.out;
}

TEST_F(TopCgroupTest, RemovedBusyCgroupsKeepTheirLastInterval) {
  // Twenty busy cgroups, two at a time, each removed 350 ms after it began (intervals of 250
  // ms): each one's rows add up to its cpu.stat at removal, and no row of its process lacks it.
  RunningPm pm({"--interval", "250ms", "--format", "json", "--cgroup-depth", "1", "--top", "100000"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  std::map<std::string, double> truth;
  std::map<int, std::string> cgroup_of_pid;
  for (int round = 0; round < 10; ++round) {
    std::vector<std::pair<std::string, pid_t>> busy;
    for (int k = 0; k < 2; ++k) {
      std::string rel = make_cgroup("rm" + std::to_string(round) + "-" + std::to_string(k));
      pid_t pid = spinner(rel);
      busy.emplace_back(rel, pid);
      cgroup_of_pid[pid] = rel;
    }
    std::this_thread::sleep_for(milliseconds(350));
    for (auto& [rel, pid] : busy) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      truth[rel] = settled_usage_s(rel);
      remove_cgroup(rel);
    }
  }
  std::this_thread::sleep_for(milliseconds(600));  // the last removals' interval
  Outcome o = pm.stop(SIGINT);
  std::map<std::string, double> shown;
  for (const auto& r : o.records) {
    if (r.value("type", "") != "interval" || !r.contains("top")) continue;
    for (const auto& c : r["top"]["cgroups"]) {
      std::string path = c.value("cgroup", "");
      if (truth.count(path) != 0) shown[path] += cpu_of(c);
    }
    for (const auto& p : r["top"]["processes"]) {
      auto it = cgroup_of_pid.find(p.value("pid", 0));
      if (it == cgroup_of_pid.end()) continue;
      // (Its first row may show the cgroup it was forked in, before it joined its own.)
      EXPECT_NE(p.value("cgroup", ""), "") << "a row of a removed cgroup's process with no cgroup: " << p.dump();
    }
  }
  for (const auto& [path, t] : truth) {
    EXPECT_GT(t, 0.0) << path;
    EXPECT_NEAR(shown[path], t, 0.05 * t + 0.005) << path;
  }
}

TEST_F(TopCgroupTest, ASleepingProcessMovedOrReparentedShowsItsNewCgroupAndParent) {
  // A process that never runs (it waits on a pipe) is moved to another cgroup and its parent
  // exits (it goes to this test, a subreaper): its rows follow both, as /proc says, though
  // nothing about it changed but those two.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  std::string dest = make_cgroup("sleeper");
  int hold[2], told[2], gone[2];
  ASSERT_EQ(::pipe2(hold, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(told, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(gone, O_CLOEXEC), 0);
  pid_t parent = ::fork();
  if (parent == 0) {
    ::close(hold[1]);
    ::close(told[0]);
    ::close(gone[1]);
    pid_t sleeper = ::fork();
    if (sleeper == 0) {
      ::close(told[1]);
      ::close(gone[0]);
      char c;
      while (::read(hold[0], &c, 1) != 0) {
      }
      ::_exit(0);
    }
    ::close(hold[0]);
    (void)!::write(told[1], &sleeper, sizeof sleeper);
    char c;
    while (::read(gone[0], &c, 1) != 0) {
    }
    ::_exit(0);
  }
  ::close(hold[0]);
  ::close(told[1]);
  ::close(gone[0]);
  pid_t sleeper = 0;
  ASSERT_EQ(::read(told[0], &sleeper, sizeof sleeper), static_cast<ssize_t>(sizeof sleeper));
  RunningPm pm({"--interval", "250ms", "--format", "json", "--cgroup-depth", "1", "--top", "100000"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  std::this_thread::sleep_for(milliseconds(800));  // rows with the first parent and cgroup
  move_to(dest, sleeper);
  ::close(gone[1]);
  ::waitpid(parent, nullptr, 0);
  std::string truth = slurp("/proc/" + std::to_string(sleeper) + "/stat");
  std::this_thread::sleep_for(milliseconds(800));
  Outcome o = pm.stop(SIGINT);
  ::close(hold[1]);
  ::waitpid(sleeper, nullptr, 0);
  remove_cgroup(dest);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  // /proc/PID/stat: "pid (comm) state ppid ...": its parent now is this test.
  std::istringstream fields(truth.substr(truth.rfind(')') + 2));
  std::string state;
  int ppid = 0;
  fields >> state >> ppid;
  ASSERT_EQ(ppid, ::getpid()) << truth;
  std::vector<nlohmann::json> rows;
  for (const auto& r : o.records) {
    if (r.value("type", "") != "interval" || !r.contains("top")) continue;
    for (const auto& p : r["top"]["processes"]) {
      if (p.value("pid", 0) == sleeper) rows.push_back(p);
    }
  }
  ASSERT_GE(rows.size(), 4U) << o.out;
  EXPECT_EQ(rows.front().value("ppid", 0), parent) << rows.front().dump();
  EXPECT_NE(rows.front().value("cgroup", ""), dest) << rows.front().dump();
  EXPECT_EQ(rows.back().value("ppid", 0), ::getpid()) << rows.back().dump();
  EXPECT_EQ(rows.back().value("cgroup", ""), dest) << rows.back().dump();
  EXPECT_EQ(rows.back().value("context_switches", -1), 0) << "it should not have run: " << rows.back().dump();
}

}  // namespace
}  // namespace pm::test
