// SPDX-License-Identifier: Apache-2.0
// Who is using the machine (live mode's top lists, --cgroup) against known workloads in test
// cgroups made under the v2 hierarchy, and against the kernel's own files: a cgroup's cpu.stat,
// a thread's schedstat, what an O_DIRECT writer wrote. Short-lived processes, contention on one
// CPU, a cgroup that appears and one that goes.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/cgroup.h"
#include "integration/harness.h"
#include "integration/prom_harness.h"

namespace pm::test {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

// A test cgroup at the top of the v2 hierarchy, removed (its processes killed) at the end.
class TestCgroup {
 public:
  explicit TestCgroup(const std::string& name) {
    std::string mount = unified_mount();
    if (mount.empty()) return;
    rel_ = "/pm-test-" + std::to_string(::getpid()) + "-" + name;
    dir_ = mount + rel_;
    ::mkdir(dir_.c_str(), 0755);
  }
  ~TestCgroup() {
    if (dir_.empty()) return;
    std::ofstream(dir_ + "/cgroup.kill") << "1";
    for (int i = 0; i < 100 && ::rmdir(dir_.c_str()) != 0; ++i) std::this_thread::sleep_for(milliseconds(20));
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;
  [[nodiscard]] bool ok() const { return !dir_.empty() && fs::exists(dir_ + "/cgroup.procs"); }
  [[nodiscard]] const std::string& path() const { return rel_; }  // as perf-monitor names it
  [[nodiscard]] const std::string& dir() const { return dir_; }
  // Runs argv in this cgroup (it joins before exec), pinned to `cpu` when >= 0.
  pid_t spawn(const std::vector<std::string>& argv, int cpu = -1) const {
    std::vector<char*> args;
    std::vector<std::string> copy = argv;
    for (auto& a : copy) args.push_back(a.data());
    args.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      std::ofstream(dir_ + "/cgroup.procs") << ::getpid() << std::flush;
      if (cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ::sched_setaffinity(0, sizeof one, &one);
      }
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    return pid;
  }
  [[nodiscard]] double cpu_stat_s() const {
    std::ifstream in(dir_ + "/cpu.stat");
    std::string key;
    double v = 0;
    while (in >> key >> v) {
      if (key == "usage_usec") return v * 1e-6;
    }
    return NAN;
  }

 private:
  std::string rel_, dir_;
};

// The `top` object of each interval record.
std::vector<nlohmann::json> tops(const Outcome& o) {
  std::vector<nlohmann::json> out;
  for (const auto& r : o.records) {
    if (r.value("type", "") == "interval" && r.contains("top")) out.push_back(r["top"]);
  }
  return out;
}

// Each interval's length, in the order of tops(o).
std::vector<double> top_seconds(const Outcome& o) {
  std::vector<double> out;
  for (const auto& r : o.records) {
    if (r.value("type", "") == "interval" && r.contains("top")) out.push_back(r["interval_s"].get<double>());
  }
  return out;
}

const nlohmann::json* cgroup_row(const nlohmann::json& top, const std::string& path) {
  for (const auto& c : top["cgroups"]) {
    if (c["cgroup"] == path) return &c;
  }
  return nullptr;
}

// Sum of a process's threads' run delay (schedstat's second field, ns): the per-process file
// covers the main thread only.
double run_delay_s(pid_t pid) {
  double sum = 0;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream in(e.path() / "schedstat");
    double run = 0, delay = 0;
    if (in >> run >> delay) sum += delay;
  }
  return sum * 1e-9;
}

class TopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: eBPF and test cgroups";
    if (unified_mount().empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
  }
};

// Whether the process `pid` holds a BPF program of this name (through a program or link fd:
// /proc/PID/fdinfo says which programs, bpftool's JSON names them); none where bpftool is missing.
std::optional<bool> holds_program(pid_t pid, const std::string& name) {
  std::set<int> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fdinfo", ec)) {
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("prog_id:", 0) == 0) ids.insert(std::atoi(line.c_str() + 8));
    }
  }
  FILE* p = ::popen("bpftool -j prog show 2>/dev/null", "r");
  if (p == nullptr) return std::nullopt;
  std::string text;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  ::pclose(p);
  nlohmann::json progs = nlohmann::json::parse(text, nullptr, false);
  if (!progs.is_array() || progs.empty()) return std::nullopt;
  for (const auto& prog : progs) {
    if (prog.value("name", "") == name && ids.count(prog.value("id", -1)) > 0) return true;
  }
  return false;
}

// The lists read by their walk of the kernel's task list (the default), or by the BPF task
// iterator (PERF_MONITOR_TOP_WALK=tasks, as on kernels before 6.8): the same truths hold.
void agree_with_the_kernels_own_files(bool iterator) {
  TestCgroup a("A"), b("B"), c("C");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  if (iterator) ::setenv("PERF_MONITOR_TOP_WALK", "tasks", 1);
  RunningPm pm({"--format", "json", "--interval", "1s", "--top", "50", "--cgroup-depth", "1"});
  ::unsetenv("PERF_MONITOR_TOP_WALK");
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  if (std::optional<bool> walk = holds_program(pm.pid(), "top_walk")) {
    EXPECT_EQ(*walk, !iterator) << "the walk is loaded unless the iterator is asked for";
  } else {
    std::printf("not checked: which walk is loaded (no bpftool to name the programs)\n");
  }
  std::this_thread::sleep_for(milliseconds(1200));
  pid_t burner = a.spawn({workload(), "spin", "2500"});
  std::string file = scratch_dir() + "/pm-top-direct-" + std::to_string(::getpid());
  pid_t writer = b.spawn({workload(), "direct", "64", file});
  pid_t sleeper = c.spawn({workload(), "sleep", "4000"});
  ::waitpid(writer, nullptr, 0);
  ::waitpid(burner, nullptr, 0);
  std::this_thread::sleep_for(milliseconds(2200));
  Outcome o = pm.stop(SIGINT);
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  double a_cpu = 0, a_stat_cpu = 0, b_written = 0, burner_cpu = 0;
  std::string writer_rows;
  bool burner_first = false;
  for (const auto& t : tops(o)) {
    // The cgroup's cpu.stat over the interval, where known (not in the row's first interval).
    if (const auto* r = cgroup_row(t, a.path()); r != nullptr && r->contains("cpu_stat_s")) {
      a_cpu += cpu_of(*r);
      a_stat_cpu += (*r)["cpu_stat_s"].get<double>();
      EXPECT_TRUE((*r)["with_descendants"].get<bool>()) << "at the depth limit: its descendants count in it";
    }
    if (const auto* r = cgroup_row(t, b.path())) b_written += (*r)["io_write_bytes"].get<double>();
    for (const auto& p : t["processes"]) {
      if (p["pid"] == writer) writer_rows += p.dump() + "\n";
      if (p["pid"] == burner) {
        burner_cpu += cpu_of(p);
        // First by CPU as far as the machine allows: every row above it used at least as much
        // CPU, so no more of them than the other CPUs hold (another test's spinner may lead).
        const auto& rows = t["processes"];
        size_t rank = 0;
        while (rank < rows.size() && rows[rank]["pid"] != burner) ++rank;
        double cpus = static_cast<double>(::sysconf(_SC_NPROCESSORS_ONLN));
        if (cpu_of(p) > 0.5 && static_cast<double>(rank + 1) * cpu_of(p) <= cpus * 1.05) burner_first = true;
      }
    }
  }
  // A's CPU against its cpu.stat; the burner's against the 2.5 s it was asked to use; B's bytes
  // against what it wrote.
  EXPECT_NEAR(a_cpu, a_stat_cpu, 0.05 * a_stat_cpu);
  EXPECT_NEAR(burner_cpu, 2.5, 0.05 * 2.5 + 0.02);
  EXPECT_TRUE(burner_first) << "the burner leads the processes by CPU\n" << o.out;
  EXPECT_NEAR(b_written, 64 * kMiB, 0.01 * 64 * kMiB) << "the writer's rows:\n" << writer_rows << o.out;
}

TEST_F(TopTest, CgroupsAndProcessesAgreeWithTheKernelsOwnFiles) { agree_with_the_kernels_own_files(false); }

TEST_F(TopTest, CgroupsAndProcessesAgreeWithTheKernelsOwnFilesReadByTheTaskIterator) {
  agree_with_the_kernels_own_files(true);
}

TEST_F(TopTest, RunQueueWaitPerProcessAgreesWithSchedstat) {
  // Two burners pinned to one CPU: each waits about half the time. The truth, its threads'
  // schedstat run delay, is read the moment each interval's record appears, so both cover the
  // same stretches of time (within milliseconds).
  TestCgroup e("E");
  ASSERT_TRUE(e.ok());
  pid_t one = e.spawn({workload(), "spin", "20000"}, 0);
  pid_t two = e.spawn({workload(), "spin", "20000"}, 0);
  RunningPm pm({"--format", "json", "--interval", "1s", "--top", "50", "--cgroup-depth", "1"});
  std::vector<double> truth;  // run delay when each interval record appeared
  size_t seen = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (truth.size() < 5 && std::chrono::steady_clock::now() < deadline) {
    std::string out = pm.out_so_far();
    size_t n = 0;
    for (size_t at = out.find("\"type\":\"interval\""); at != std::string::npos;
         at = out.find("\"type\":\"interval\"", at + 1)) {
      ++n;
    }
    if (n > seen) {
      truth.push_back(run_delay_s(one));
      seen = n;
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  Outcome o = pm.stop(SIGINT);
  ::kill(one, SIGKILL);
  ::kill(two, SIGKILL);
  ::waitpid(one, nullptr, 0);
  ::waitpid(two, nullptr, 0);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  ASSERT_GE(truth.size(), 4u) << "too few intervals";
  auto all = tops(o);
  auto secs = top_seconds(o);
  ASSERT_GE(all.size(), truth.size());
  // Intervals 2..last seen: ours summed, against the run delay between their records.
  double ours = 0, span = 0;
  for (size_t i = 1; i < truth.size(); ++i) {
    for (const auto& p : all[i]["processes"]) {
      if (p["pid"] == one) ours += p["runq_s"].get<double>();
    }
    span += secs[i];
    // Contention: the cgroup's two burners wait at least 40 % of their time, each (an interval
    // after a late tick is shorter: the ticks keep their grid).
    if (const auto* r = cgroup_row(all[i], e.path())) {
      EXPECT_GE((*r)["runq_s"].get<double>(), 2 * 0.4 * secs[i]) << r->dump();
    }
  }
  double expected = truth.back() - truth.front();
  EXPECT_NEAR(ours, expected, 0.05 * expected);
  EXPECT_GE(ours / span, 0.4);
}

TEST_F(TopTest, ShortLivedProcessesAreCountedAndNamed) {
  // 1,000 processes of a millisecond each, started within about a second, in a cgroup of their
  // own: counted, named in the kernel, and their CPU attributed to that name and cgroup.
  TestCgroup d("D");
  ASSERT_TRUE(d.ok());
  RunningPm pm({"--format", "json", "--interval", "1s", "--top", "100000", "--cgroup-depth", "1"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  std::this_thread::sleep_for(milliseconds(1200));
  double stat0 = d.cpu_stat_s();
  pid_t storm = d.spawn({workload(), "shortlived", "1000", "1", "pm-short"});
  ::waitpid(storm, nullptr, 0);
  double stat1 = d.cpu_stat_s();
  std::this_thread::sleep_for(milliseconds(2200));
  Outcome o = pm.stop(SIGINT);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  std::set<int> counted;  // a process that spans two intervals is a row in each
  double cpu = 0, parent = 0, cgroup = 0;
  for (const auto& t : tops(o)) {
    for (const auto& p : t["processes"]) {
      if (p.value("cgroup", "") != d.path()) continue;
      if (p["comm"] == "pm-short") {
        counted.insert(p["pid"].get<int>());
        cpu += cpu_of(p);
      } else if (p["pid"] == storm) {
        parent += cpu_of(p);
      }
    }
    if (const auto* r = cgroup_row(t, d.path())) cgroup += cpu_of(*r);
  }
  EXPECT_GE(counted.size(), 990u);
  EXPECT_LE(counted.size(), 1000u);
  // The cgroup's CPU against its cpu.stat; of it, all but the parent's (the forks) is the
  // children's, attributed to their name.
  double truth = stat1 - stat0;
  EXPECT_NEAR(cgroup, truth, 0.05 * truth) << "cpu.stat delta " << truth;
  EXPECT_GE(cpu, 0.95 * (truth - parent)) << "cpu.stat delta " << truth << ", the parent's " << parent;
}

TEST_F(TopTest, ProcessesThatLiveAcrossReadingsAreCountedOnce) {
  // 40 processes of 150 ms of CPU each, two at a time, read every 100 ms: each lives across
  // readings and dies between two, some of them while a reading is under way. No row may hold
  // more than the interval's worth of one thread's CPU (a life counted again in one interval
  // would), no process more than it spun over its rows, and the cgroup's rows sum to its
  // cpu.stat.
  TestCgroup d("L");
  ASSERT_TRUE(d.ok());
  RunningPm pm({"--format", "json", "--interval", "100ms", "--top", "100000", "--cgroup-depth", "1"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  std::this_thread::sleep_for(milliseconds(500));
  double stat0 = d.cpu_stat_s();
  pid_t storm = d.spawn({workload(), "shortlived", "40", "150", "pm-life"});
  ::waitpid(storm, nullptr, 0);
  double stat1 = d.cpu_stat_s();
  std::this_thread::sleep_for(milliseconds(500));
  Outcome o = pm.stop(SIGINT);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  std::map<int, double> per_pid;
  double cgroup = 0;
  for (const auto& rec : o.records) {
    if (rec.value("type", "") != "interval" || !rec.contains("top")) continue;
    const auto& t = rec["top"];
    double seconds = rec["interval_s"];
    for (const auto& p : t["processes"]) {
      if (p["comm"] != "pm-life") continue;
      per_pid[p["pid"].get<int>()] += cpu_of(p);
      // One thread: no more than the interval's CPU, to the jitter of when the reading is taken
      // (a life counted twice would be 150 ms more).
      EXPECT_LE(cpu_of(p), seconds + 0.04) << "one thread, more than the interval's CPU: " << p.dump();
    }
    if (const auto* r = cgroup_row(t, d.path())) cgroup += cpu_of(*r);
  }
  EXPECT_GE(per_pid.size(), 38u);
  for (const auto& [pid, cpu] : per_pid) EXPECT_LE(cpu, 0.15 * 1.05 + 0.01) << "pid " << pid;
  double truth = stat1 - stat0;
  EXPECT_NEAR(cgroup, truth, 0.05 * truth) << "cpu.stat delta " << truth;
}

TEST_F(TopTest, ANewCgroupsProcessesAreNeverCountedInTheRoot) {
  // Cgroups made one after another while monitoring runs, a process in each at once: its rows
  // name its own cgroup (the names are walked again when an id is new), never "/".
  RunningPm pm({"--format", "json", "--interval", "200ms", "--top", "100000", "--cgroup-depth", "1"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  std::this_thread::sleep_for(milliseconds(500));
  std::vector<std::unique_ptr<TestCgroup>> made;
  std::map<int, std::string> cgroup_of;
  for (int i = 0; i < 6; ++i) {
    made.push_back(std::make_unique<TestCgroup>("new" + std::to_string(i)));
    ASSERT_TRUE(made.back()->ok());
    pid_t pid = made.back()->spawn({workload(), "spin", "250"});
    cgroup_of[pid] = made.back()->path();
    std::this_thread::sleep_for(milliseconds(150));
  }
  for (const auto& [pid, path] : cgroup_of) ::waitpid(pid, nullptr, 0);
  std::this_thread::sleep_for(milliseconds(400));
  Outcome o = pm.stop(SIGINT);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  std::set<int> seen;
  for (const auto& t : tops(o)) {
    for (const auto& p : t["processes"]) {
      auto it = cgroup_of.find(p["pid"].get<int>());
      if (it == cgroup_of.end() || p.value("comm", "") != "pm-workload") continue;
      seen.insert(it->first);
      EXPECT_EQ(p.value("cgroup", ""), it->second) << p.dump();
    }
  }
  EXPECT_EQ(seen.size(), cgroup_of.size());
}

TEST_F(TopTest, AProcessThatMovesAndExecsBeforeItExitsCountsWhereItEnded) {
  // Seen for a reading as a shell in cgroup M, then it moves itself to N, execs the workload,
  // writes 16 MiB with O_DIRECT and exits before the next reading: its last row and N's bytes
  // name where and what it was when it died, not what it was when last seen.
  TestCgroup m("M"), n("N");
  ASSERT_TRUE(m.ok() && n.ok());
  RunningPm pm({"--format", "json", "--interval", "1s", "--top", "100000", "--cgroup-depth", "1"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  std::this_thread::sleep_for(milliseconds(500));
  std::string file = scratch_dir() + "/pm-top-moved-" + std::to_string(::getpid());
  pid_t mover = m.spawn({"/bin/sh", "-c",
                         "sleep 1.6; echo $$ > " + n.dir() + "/cgroup.procs && exec " + workload() + " direct 16 " + file});
  int status = 0;
  ::waitpid(mover, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::this_thread::sleep_for(milliseconds(1500));
  Outcome o = pm.stop(SIGINT);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  double n_written = 0, m_written = 0;
  std::string rows, last_comm, last_cgroup;
  for (const auto& t : tops(o)) {
    if (const auto* r = cgroup_row(t, n.path())) n_written += (*r)["io_write_bytes"].get<double>();
    if (const auto* r = cgroup_row(t, m.path())) m_written += (*r)["io_write_bytes"].get<double>();
    for (const auto& p : t["processes"]) {
      if (p["pid"] != mover) continue;
      rows += p.dump() + "\n";
      last_comm = p.value("comm", "");
      last_cgroup = p.value("cgroup", "");
    }
  }
  EXPECT_NE(rows.find("\"comm\":\"sh\""), std::string::npos) << "seen as the shell first:\n" << rows;
  EXPECT_EQ(last_comm, "pm-workload") << rows;
  EXPECT_EQ(last_cgroup, n.path()) << rows;
  EXPECT_NEAR(n_written, 16 * kMiB, 0.01 * 16 * kMiB) << rows;
  EXPECT_EQ(m_written, 0) << rows;
}

TEST_F(TopTest, CgroupRunQueueQuantilesAreInTheConfiguredUnit) {
  // histogram_unit = "ms": two burners pinned to one CPU wait milliseconds. The cgroup row's
  // p99 (an upper bucket bound) is at least the mean wait the kernel measured (the histogram's
  // sum over its count, in ns whatever the unit), and its histogram says millisecond buckets, as
  // the system's does.
  std::string conf = scratch_dir() + "/pm-top-unit-" + std::to_string(::getpid()) + ".toml";
  std::ofstream(conf) << "[scheduler]\nhistogram_unit = \"ms\"\n";
  TestCgroup e("U");
  ASSERT_TRUE(e.ok());
  pid_t one = e.spawn({workload(), "spin", "20000"}, 0);
  pid_t two = e.spawn({workload(), "spin", "20000"}, 0);
  Outcome o = run_pm({"--config", conf, "--format", "json", "--interval", "1s", "--duration", "3500ms", "--top",
                      "100000", "--cgroup-depth", "1"});
  ::kill(one, SIGKILL);
  ::kill(two, SIGKILL);
  ::waitpid(one, nullptr, 0);
  ::waitpid(two, nullptr, 0);
  ::unlink(conf.c_str());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  int checked = 0;
  for (const auto& r : o.records) {
    if (r.value("type", "") != "interval" || !r.contains("top")) continue;
    EXPECT_DOUBLE_EQ(r["scheduler"]["runq_latency_seconds"]["bucket_base"].get<double>(), 1e-3);
    const auto* row = cgroup_row(r["top"], e.path());
    if (row == nullptr || !r["cgroup"]["runq_latency_seconds"].contains(e.path())) continue;
    const auto& h = r["cgroup"]["runq_latency_seconds"][e.path()];
    EXPECT_DOUBLE_EQ(h["bucket_base"].get<double>(), 1e-3);
    double count = h["count"], sum = h["sum"];
    if (count < 10 || !row->contains("runq_p99_s")) continue;
    EXPECT_GE((*row)["runq_p99_s"].get<double>(), sum / count) << row->dump() << " " << h.dump();
    EXPECT_DOUBLE_EQ((*row)["runq_p99_s"].get<double>(), h["p99"].get<double>());
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST_F(TopTest, ThreadsShowTheirProcessRssAndCgroup) {
  TestCgroup e("W");
  ASSERT_TRUE(e.ok());
  pid_t proc = e.spawn({workload(), "threads", "3", "1500"});
  Outcome o = run_pm({"--format", "json", "--interval", "500ms", "--duration", "1600ms", "--top", "100000",
                      "--threads", "--cgroup-depth", "1"});
  ::kill(proc, SIGKILL);
  ::waitpid(proc, nullptr, 0);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  int threads = 0;
  for (const auto& t : tops(o)) {
    double rss = NAN;
    for (const auto& p : t["processes"]) {
      if (p["pid"] == proc && p.contains("rss_bytes")) rss = p["rss_bytes"];
    }
    if (!t.contains("threads")) continue;
    for (const auto& th : t["threads"]) {
      if (th["pid"] != proc) continue;
      ++threads;
      EXPECT_EQ(th.value("cgroup", ""), e.path()) << th.dump();
      ASSERT_TRUE(th.contains("rss_bytes")) << th.dump();
      if (!std::isnan(rss)) {
        EXPECT_EQ(th["rss_bytes"].get<double>(), rss) << th.dump();
      }
    }
  }
  EXPECT_GE(threads, 3);
}

TEST_F(TopTest, NamesReachTheTerminalPrintable) {
  // A process names itself with an escape sequence; so does a cgroup: the text output has none.
  TestCgroup e("esc\x1b[2J");
  ASSERT_TRUE(e.ok());
  // Longer than monitoring, however slow its start (a sanitizer build on a loaded machine): ended
  // once monitoring has.
  pid_t storm = e.spawn({workload(), "shortlived", "1000", "50", "pm-\x1b[2Jx"});
  Outcome o = run_pm({"--format", "text", "--interval", "500ms", "--duration", "1600ms", "--top", "100000",
                      "--cgroup-depth", "1", "--prometheus-processes", "^pm-"});
  ::kill(storm, SIGKILL);
  ::waitpid(storm, nullptr, 0);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("pm-?[2Jx"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find('\x1b'), std::string::npos) << o.out;
}

TEST_F(TopTest, IdleCgroupShowsNoRunQueueWait) {
  TestCgroup s("S");
  ASSERT_TRUE(s.ok());
  pid_t sleeper = s.spawn({workload(), "naps", "40", "50"});
  Outcome o = run_pm({"--format", "json", "--interval", "1s", "--duration", "3500ms", "--top", "100000",
                      "--cgroup-depth", "1"});
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  for (const auto& t : tops(o)) {
    // It wakes 20 times a second and runs for microseconds: its waits for a CPU are short even on a
    // busy machine, nowhere near the 40 % of two burners sharing a CPU.
    if (const auto* r = cgroup_row(t, s.path())) {
      EXPECT_LT((*r)["runq_s"].get<double>(), 0.1) << r->dump();
    }
  }
}

TEST_F(TopTest, CgroupTargetFollowsItsProcessesOnly) {
  TestCgroup a("T");
  ASSERT_TRUE(a.ok());
  pid_t before = a.spawn({workload(), "spin", "1500"});
  RunningPm pm({"--format", "json", "--interval", "500ms", "--cgroup", a.path()});
  // Monitoring has begun once the header is out (a sanitizer build starts slowly).
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  std::this_thread::sleep_for(milliseconds(300));
  // One that joins after monitoring began, and one outside the cgroup.
  pid_t after = a.spawn({workload(), "spin", "400"});
  pid_t outside = ::fork();
  if (outside == 0) {
    ::execl(workload().c_str(), "pm-workload", "spin", "500", nullptr);
    ::_exit(127);
  }
  // The truth: each child's own CPU, from the kernel at reap.
  double before_cpu = reap_cpu_s(before), after_cpu = reap_cpu_s(after);
  reap_cpu_s(outside);
  std::this_thread::sleep_for(milliseconds(600));
  Outcome o = pm.stop(SIGINT);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_EQ(o.summary["mode"], "cgroup");
  double cpu = o.summary.value("proc_cpu_user_seconds", 0.0) + o.summary.value("proc_cpu_system_seconds", 0.0);
  // The late one all of its CPU, the early one part of its own; nothing of the one outside.
  EXPECT_GE(cpu, after_cpu * 0.95) << "before " << before_cpu << " s, after " << after_cpu << " s";
  EXPECT_LE(cpu, (before_cpu + after_cpu) * 1.05 + 0.01) << "before " << before_cpu << " s, after " << after_cpu << " s";
  EXPECT_GE(o.summary.value("proc_processes_seen_max", 0.0), 2);
}

TEST_F(TopTest, CgroupTargetInsideACgroupNamespaceFollowsProcessesThatJoin) {
  // As in a container: perf-monitor in a cgroup namespace rooted at cgroup NS, with the v2
  // hierarchy mounted anew (its paths start at NS), given --cgroup /T; a process joins NS/T after
  // monitoring began. The truth: the joiner's own CPU, from the kernel at reap.
  if (std::system("command -v unshare > /dev/null") != 0) GTEST_SKIP() << "no unshare(1) (util-linux)";
  TestCgroup ns("NS");
  ASSERT_TRUE(ns.ok());
  std::string t_dir = ns.dir() + "/T";
  ASSERT_EQ(::mkdir(t_dir.c_str(), 0755), 0);
  std::string mount = unified_mount(), base = temp_base();
  std::string inside = "umount -l " + mount + " && mount -t cgroup2 none " + mount + " && exec " + binary() +
                       " --format json --interval 200ms --cgroup /T > " + base + ".out 2> " + base + ".err";
  pid_t pm = ::fork();
  if (pm == 0) {
    ::setpgid(0, 0);
    std::ofstream(ns.dir() + "/cgroup.procs") << ::getpid() << std::flush;
    ::execl("/usr/bin/unshare", "unshare", "--cgroup", "--mount", "--propagation", "private", "/bin/sh", "-c",
            inside.c_str(), nullptr);
    ::_exit(127);
  }
  ASSERT_TRUE(wait_for_text(base + ".out", "\"header\"", std::chrono::seconds(30))) << slurp(base + ".err");
  pid_t joiner = ::fork();
  if (joiner == 0) {
    std::ofstream(t_dir + "/cgroup.procs") << ::getpid() << std::flush;
    ::execl(workload().c_str(), "pm-workload", "spin", "500", nullptr);
    ::_exit(127);
  }
  double truth = reap_cpu_s(joiner);
  std::this_thread::sleep_for(milliseconds(500));
  ::kill(pm, SIGINT);
  int status = 0;
  ::waitpid(pm, &status, 0);
  Outcome o;
  o.out = slurp(base + ".out");
  o.err = slurp(base + ".err");
  parse_records(o);
  ::unlink((base + ".out").c_str());
  ::unlink((base + ".err").c_str());
  ::rmdir(t_dir.c_str());
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  double cpu = o.summary.value("proc_cpu_user_seconds", 0.0) + o.summary.value("proc_cpu_system_seconds", 0.0);
  EXPECT_NEAR(cpu, truth, 0.05 * truth + 0.01) << o.summary.dump();
  EXPECT_GE(o.summary.value("proc_processes_seen_max", 0.0), 1) << o.summary.dump();
}

// The cgroup label values of the perf_monitor_cgroup_* series of a scrape.
std::set<std::string> exported_cgroups(const std::string& text) {
  std::set<std::string> out;
  for (const auto& [series, value] : parse_exposition(text)) {
    if (series.rfind("perf_monitor_cgroup_", 0) != 0) continue;
    auto at = series.find("cgroup=\"");
    if (at == std::string::npos) continue;
    at += 8;
    out.insert(series.substr(at, series.find('"', at) - at));
  }
  return out;
}

TEST_F(TopTest, CgroupTargetCountsChildrenForkedIntoItFromOutside) {
  // A parent outside the cgroup forks children straight into it (clone3's CLONE_INTO_CGROUP, as
  // a service manager starts a service), one after the other: each is the cgroup's while it
  // lives and its figures stay when it ends. The truth: the cgroup's own cpu.stat.
  TestCgroup a("F");
  ASSERT_TRUE(a.ok());
  RunningPm pm({"--format", "json", "--interval", "200ms", "--cgroup", a.path()});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  std::this_thread::sleep_for(milliseconds(300));
  double stat0 = a.cpu_stat_s();
  std::string w = workload();
  pid_t parent = ::fork();
  if (parent == 0) {
    std::string cmd = w + " cloneinto " + a.dir() + " 400; " + w + " cloneinto " + a.dir() + " 400";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(parent, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  double truth = a.cpu_stat_s() - stat0;
  std::this_thread::sleep_for(milliseconds(500));
  Outcome o = pm.stop(SIGINT);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  double cpu = o.summary.value("proc_cpu_user_seconds", 0.0) + o.summary.value("proc_cpu_system_seconds", 0.0);
  EXPECT_GE(truth, 0.8);
  EXPECT_NEAR(cpu, truth, 0.05 * truth + 0.01);
  EXPECT_GE(o.summary.value("proc_processes_seen_max", 0.0), 2);
}

TEST_F(TopTest, ManyCgroupsStayWithinTheDepthAndSeriesBounds) {
  // 500 cgroups two levels down, a process in each: at most --max-series rows exported, none
  // deeper than the depth limit, the rest counted as dropped; promtool clean; no PID labels.
  TestCgroup parent("many");
  ASSERT_TRUE(parent.ok());
  std::ofstream(parent.dir() + "/cgroup.subtree_control") << "";  // no controllers: no internal-process rule
  std::vector<pid_t> sleepers;
  for (int i = 0; i < 500; ++i) {
    std::string dir = parent.dir() + "/c" + std::to_string(i);
    ::mkdir(dir.c_str(), 0755);
    pid_t pid = ::fork();
    if (pid == 0) {
      std::ofstream(dir + "/cgroup.procs") << ::getpid() << std::flush;
      ::execl(workload().c_str(), "pm-workload", "sleep", "30000", nullptr);
      ::_exit(127);
    }
    sleepers.push_back(pid);
  }
  int port = free_port();
  RunningPm pm({"--interval", "1s", "--output", "/dev/null", "--prometheus", std::to_string(port), "--cgroup-depth",
                "2", "--max-series", "100", "--prometheus-processes", "^pm-work"});
  std::string text = scrape_when_ready(port, "perf_monitor_top_dropped_series_total");
  std::this_thread::sleep_for(milliseconds(1500));
  text = http_get(port, "/metrics").body;
  Outcome o = pm.stop(SIGINT);
  for (pid_t p : sleepers) ::kill(p, SIGKILL);
  for (pid_t p : sleepers) ::waitpid(p, nullptr, 0);
  for (int i = 0; i < 500; ++i) ::rmdir((parent.dir() + "/c" + std::to_string(i)).c_str());
  ASSERT_FALSE(text.empty()) << o.err;
  std::set<std::string> cgroups = exported_cgroups(text);
  EXPECT_LE(cgroups.size(), 100u);
  EXPECT_GT(cgroups.size(), 0u);
  for (const std::string& c : cgroups) {
    int depth = 0;
    for (char ch : c) depth += ch == '/';
    EXPECT_LE(depth, 2) << c;
  }
  auto values = parse_exposition(text);
  EXPECT_GT(values["perf_monitor_top_dropped_series_total"], 0);
  EXPECT_EQ(values.count("perf_monitor_top_runq_cgroups_over_total"), 1u) << "counted, if none so far";
  // The run-queue histograms too: only the rows kept.
  std::set<std::string> with_hist;
  for (const auto& [series, value] : values) {
    if (series.rfind("perf_monitor_cgroup_runq_latency_seconds_count{", 0) != 0) continue;
    auto at = series.find("cgroup=\"") + 8;
    with_hist.insert(series.substr(at, series.find('"', at) - at));
  }
  EXPECT_LE(with_hist.size(), 100u);
  EXPECT_NE(text.find("group=\"pm-workload\""), std::string::npos) << "the opted-in process group";
  EXPECT_EQ(text.find("pid=\""), std::string::npos) << "a PID label";
  std::string report;
  EXPECT_EQ(promtool_check(text, &report), 0) << report;
}

TEST_F(TopTest, DeletedCgroupsSeriesDisappearWithinTwoScrapes) {
  int port = free_port();
  auto* x = new TestCgroup("gone");
  ASSERT_TRUE(x->ok());
  std::string path = x->path();
  pid_t burner = x->spawn({workload(), "spin", "30000"});
  RunningPm pm({"--interval", "1s", "--output", "/dev/null", "--prometheus", std::to_string(port), "--cgroup-depth",
                "1"});
  std::string text = scrape_when_ready(port, "perf_monitor_cgroup_cpu_user_seconds_total{cgroup=\"" + path);
  ASSERT_FALSE(text.empty()) << pm.err_so_far();
  ::kill(burner, SIGKILL);
  ::waitpid(burner, nullptr, 0);
  delete x;  // the cgroup is removed
  // Scrapes a second apart: gone by the second.
  bool gone = false;
  for (int scrape = 0; scrape < 3 && !gone; ++scrape) {
    std::this_thread::sleep_for(milliseconds(1100));
    gone = exported_cgroups(http_get(port, "/metrics").body).count(path) == 0;
  }
  EXPECT_TRUE(gone);
  pm.stop(SIGINT);
}

TEST_F(TopTest, CgroupTargetThatDoesNotExistIsAUsageError) {
  Outcome o = run_pm({"--cgroup", "/pm-no-such-cgroup-anywhere", "--duration", "1s"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("no such cgroup"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace pm::test
