// SPDX-License-Identifier: Apache-2.0
// The counters source (perf_event_open) against independent truth on the real kernel: pages
// touched, the workload's own rusage, pipe round trips, /proc/stat, and Debian's `perf stat`.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

double page_size() { return static_cast<double>(::sysconf(_SC_PAGESIZE)); }

class CountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: system-wide counters (perf_event_paranoid)";
  }
  // A figure of the summary: a joule-profiler name ("proc_rss_max"), or a path into the
  // sections ("pmc.task_clock_seconds").
  static double num(const Outcome& o, const std::string& key) {
    const nlohmann::json* j = &o.summary;
    for (size_t from = 0; j != nullptr;) {
      size_t dot = key.find('.', from);
      std::string part = key.substr(from, dot - from);
      j = j->is_object() && j->contains(part) ? &(*j)[part] : nullptr;
      if (dot == std::string::npos) break;
      from = dot + 1;
    }
    if (j == nullptr || !j->is_number()) {
      ADD_FAILURE() << "summary has no " << key << ": " << o.summary.dump();
      return NAN;
    }
    return j->get<double>();
  }
  static Outcome run_json(const std::string& events, std::vector<std::string> cmd) {
    std::vector<std::string> args = {"run", "--format", "json", "-e", events, "--"};
    args.insert(args.end(), cmd.begin(), cmd.end());
    Outcome o = run_pm(args);
    EXPECT_FALSE(o.summary.is_null()) << o.err;
    return o;
  }
};

TEST_F(CountersTest, PageFaultsOfTouchedPages) {
  // 256 MiB touched once each: 65536 faults, plus the few hundred of starting a program.
  Outcome o = run_json("page-faults,minor-faults,major-faults", {workload(), "touch", "256", "0"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  double pages = 256 * kMiB / page_size();
  EXPECT_GE(num(o, "pmc.page_faults"), pages);
  EXPECT_LE(num(o, "pmc.page_faults"), pages * 1.02);
  // perf's minor and major faults of the tree fill the tree's own figures (which outrank them):
  // their sum against perf's page faults, two sources of one count. The tree's accounting also
  // holds the few faults of the held child between fork and exec, which perf (enabled at exec)
  // does not count.
  EXPECT_NEAR(num(o, "proc_minor_faults") + num(o, "proc_major_faults"), num(o, "pmc.page_faults"), 20);
}

TEST_F(CountersTest, TaskClockMatchesTheCommandsOwnRusage) {
  Outcome o = run_json("task-clock", {workload(), "cputime", "600"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  size_t at = o.out.find("cpu_seconds=");
  ASSERT_NE(at, std::string::npos) << o.out;
  double rusage = std::stod(o.out.substr(at + 12));
  // The tree's on-CPU time (the kernel's accounting, or perf's task clock where that is missing).
  EXPECT_NEAR(num(o, "proc_on_cpu_seconds"), rusage, rusage * 0.05);
}

TEST_F(CountersTest, PipePingPongSwitchesAtLeastTwicePerRoundTrip) {
  constexpr int kTrips = 20000;
  Outcome o = run_json("context-switches,task-clock", {workload(), "pingpong", std::to_string(kTrips)});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GE(num(o, "pmc.context_switches"), 2 * kTrips);
  EXPECT_LE(num(o, "pmc.context_switches"), 2.2 * kTrips);
}

TEST_F(CountersTest, CountingStartsAtExec) {
  // The held child's fork and wait before exec are not counted: a command that touches no
  // memory shows only the page faults of starting a program.
  Outcome o = run_json("page-faults", {workload(), "exit", "0"});
  EXPECT_GT(num(o, "pmc.page_faults"), 0);
  EXPECT_LT(num(o, "pmc.page_faults"), 2000);
}

// /proc/stat's ctxt: every context switch since boot.
TEST_F(CountersTest, SystemWideSwitchesAgreeWithProcStat) {
  // A load that switches a lot, and perf-monitor system-wide with the eBPF scheduler off: perf's
  // counter then fills scheduler.context_switches (it outranks /proc/stat). Its rate against the
  // rate of /proc/stat's ctxt, read here from when monitoring began to its end, within 10%.
  std::string config = scratch_dir() + "/pm-no-ebpf-sched.toml";
  std::ofstream(config) << "[scheduler]\nenabled = false\n";
  pid_t load = ::fork();
  if (load == 0) {
    ::execl(workload().c_str(), "pm-workload", "pingpong", "40000000", nullptr);  // outlasts the test
    ::_exit(127);
  }
  SwitchWindow w = switches_while_monitoring(
      {"--config", config, "--format", "json", "-e", "context-switches", "--interval", "500ms", "--duration", "2s"});
  const Outcome& o = w.o;
  ::kill(load, SIGKILL);
  ::waitpid(load, nullptr, 0);
  ::unlink(config.c_str());
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  ASSERT_TRUE(o.summary["scheduler"]["context_switches"].is_object()) << o.summary.dump();
  const nlohmann::json& ours = o.summary["scheduler"]["context_switches"];
  EXPECT_GT(ours.size(), 2u) << "perf's counter has a series per CPU: " << ours.dump();
  double proc_rate = w.proc_switches / w.wall_s,
         our_rate = ours["all"].get<double>() / o.summary["duration_s"].get<double>();
  EXPECT_GT(w.proc_switches, 10000);
  EXPECT_NEAR(our_rate, proc_rate, proc_rate * 0.1);
  // Per CPU values add up to the total.
  double sum = 0;
  for (const auto& [cpu, v] : ours.items()) {
    if (cpu != "all") sum += v.get<double>();
  }
  EXPECT_NEAR(sum, ours["all"].get<double>(), 1);
}

// `perf stat -x,` lines: value,unit,event,...
std::map<std::string, double> perf_stat(const std::vector<std::string>& cmd, const std::string& events) {
  std::string line = "perf stat -x, -e " + events + " --";
  for (const auto& a : cmd) line += " " + a;
  line += " 2>&1 >/dev/null";
  std::map<std::string, double> out;
  FILE* p = ::popen(line.c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    std::stringstream ss(buf);
    std::string value, unit, event;
    std::getline(ss, value, ',');
    std::getline(ss, unit, ',');
    std::getline(ss, event, ',');
    try {
      out[event] = std::stod(value) * (unit == "msec" ? 1e-3 : 1.0);
    } catch (...) {
    }
  }
  ::pclose(p);
  return out;
}

TEST_F(CountersTest, SoftwareEventsAgreeWithPerfStat) {
  if (std::system("perf --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "perf (Debian linux-perf) not installed";
  const std::string events = "task-clock,context-switches,cpu-migrations,page-faults,minor-faults,major-faults";
  std::map<std::string, std::string> key = {
      // A tree's task clock, migrations and minor and major faults fill its own figures (one name per
      // quantity): perf stat's counts against the kernel's own accounting per task.
      {"task-clock", "proc_on_cpu_seconds"},    {"context-switches", "pmc.context_switches"},
      {"cpu-migrations", "proc_cpu_migrations"}, {"page-faults", "pmc.page_faults"},
      {"minor-faults", "proc_minor_faults"},    {"major-faults", "proc_major_faults"}};
  // Workloads whose counts repeat from run to run: CPU time, pipe round trips (two processes),
  // pages touched. Each pinned to the last CPU: where the load balancer moves a task depends on
  // whatever else runs, so only a pinned command's migrations repeat (none).
  std::string last_cpu = std::to_string(::sysconf(_SC_NPROCESSORS_ONLN) - 1);
  for (std::vector<std::string> cmd : {std::vector<std::string>{workload(), "cputime", "300"},
                                       std::vector<std::string>{workload(), "pingpong", "5000"},
                                       std::vector<std::string>{workload(), "touch", "64", "0"}}) {
    const std::string what = cmd[1];
    cmd.insert(cmd.begin(), {"taskset", "-c", last_cpu});
    auto theirs = perf_stat(cmd, events);
    ASSERT_EQ(theirs.size(), 6u) << "perf stat printed no counts";
    Outcome o = run_json(events, cmd);
    for (const auto& [event, k] : key) {
      // Compare an event where the workload decides its count: task-clock where the work is CPU
      // time (a ping-pong's time depends on where it was scheduled), switches where they are
      // voluntary: the ping-pong's (a spinner's or a page toucher's are preemptions, which depend
      // on whatever else runs).
      if (event == "task-clock" && what != "cputime") continue;
      if (event == "context-switches" && what != "pingpong") continue;
      double ours = num(o, k), ref = theirs[event];
      // 5%, with slack where the counts are small: a few milliseconds of task-clock, and ten
      // switches or migrations — perf-monitor wakes every 100 ms to read the tree, and on two
      // CPUs a wake-up can preempt the command; perf stat does not wake at all.
      double slack = event == "task-clock" ? 0.005 : 10.0;
      // perf-monitor's own code in the command's process between fork and exec faults more when
      // it is a sanitizer build's (perf stat's child does not run it).
      if (sanitized() && event.find("faults") != std::string::npos) slack = 24;
      EXPECT_NEAR(ours, ref, std::max(ref * 0.05, slack)) << event << " of " << what;
    }
  }
}

TEST_F(CountersTest, HardwareEventsWhereThereIsAPmu) {
  if (std::system("perf stat -e instructions true 2>&1 | grep -q 'not supported'") == 0 ||
      std::system("perf --version >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no hardware PMU on this host (perf stat: instructions <not supported>): hardware events are "
                    "reported as not supported, which CliCounters.HardwareEventsSayNotSupported checks";
  }
  Outcome o = run_json("cycles,instructions", {workload(), "cputime", "200"});
  EXPECT_GT(num(o, "pmc.cycles"), 1e8);
  EXPECT_GT(num(o, "pmc.instructions"), 1e8);
  EXPECT_GT(num(o, "pmc.ipc"), 0.1);
}

TEST_F(CountersTest, EnergyWhereThereIsAPowerPmu) {
  if (::access("/sys/bus/event_source/devices/power/events", F_OK) != 0) {
    GTEST_SKIP() << "no power PMU on this host (/sys/bus/event_source/devices/power is absent)";
  }
  // Some VMs expose a power PMU whose counters never move: perf stat, the independent reading,
  // then says 0.00 Joules too, and there is nothing to compare.
  if (std::system("ev=$(ls /sys/bus/event_source/devices/power/events | grep -v '[.]' | sed 's|.*|power/&/|' | "
                  "paste -sd, -); perf stat -a -e \"$ev\" sleep 0.5 2>&1 | grep -E '^ +[0-9.,]+ Joules' | "
                  "grep -qv '^ *0[.,]00 Joules'") != 0) {
    GTEST_SKIP() << "the power PMU's energy counters do not move on this host (perf stat reads 0.00 Joules)";
  }
  Outcome o = run_pm({"--format", "json", "--interval", "500ms", "--duration", "1500ms"});
  ASSERT_FALSE(o.summary.is_null());
  bool joules = false, watts = false;
  for (const auto& [k, v] : o.summary["pmc"].items()) {
    if (k.rfind("power_energy", 0) != 0) continue;
    joules = joules || k.ends_with("_joules");
    watts = watts || k.ends_with("_watts");
    EXPECT_GT(v.get<double>(), 0) << k;
  }
  EXPECT_TRUE(joules && watts) << o.summary.dump();
}

TEST_F(CountersTest, PmuAliasFromSysfsCountsWithItsOwnPmu) {
  // msr/tsc/ (an alias in /sys/bus/event_source/devices/msr/events) counts TSC ticks while the
  // task runs: over its task-clock, that is the TSC frequency, which /proc/cpuinfo states.
  if (::access("/sys/bus/event_source/devices/msr/events/tsc", F_OK) != 0) {
    GTEST_SKIP() << "no msr PMU with a tsc event on this host";
  }
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  ASSERT_NE(f, nullptr);
  double mhz = 0;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "cpu MHz : %lf", &mhz) == 1) break;
  }
  std::fclose(f);
  if (mhz <= 0) GTEST_SKIP() << "/proc/cpuinfo states no cpu MHz";
  // A second of CPU: the command's CPU time also holds its moments before exec, which the counter
  // (enabled at exec) does not see; a sanitizer build's are ~10 ms, 3 % of the 300 ms it was.
  Outcome o = run_json("msr/tsc/,task-clock", {workload(), "cputime", "1000"});
  double hz = num(o, "pmc.msr_tsc") / num(o, "proc_on_cpu_seconds");
  EXPECT_NEAR(hz, mhz * 1e6, mhz * 1e6 * 0.03);
}

TEST_F(CountersTest, AttachCountsARunningTree) {
  AttachedRun a = attach_to_workload({"children", "2", "8", "0", "2000"}, {"--format", "json", "-e", "task-clock,page-faults"});
  const Outcome& o = a.o;
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  // Counted from the moment of attaching: the tree's CPU but what can have passed before, never
  // more than the tree's own.
  double cpu = num(o, "proc_on_cpu_seconds");
  EXPECT_LE(cpu, a.tree_cpu_s + 0.02);
  EXPECT_GE(cpu, a.tree_cpu_s - a.before_attach_max_s - 0.02) << "tree " << a.tree_cpu_s << " s";
  EXPECT_GE(cpu, 0.25 * a.tree_cpu_s) << "tree " << a.tree_cpu_s << " s";
}

TEST(CliCounters, HardwareEventsSayNotSupported) {
  if (std::system("perf stat -e instructions true 2>&1 | grep -q 'not supported'") != 0) {
    GTEST_SKIP() << "this host has a hardware PMU (or no perf): nothing to report as unsupported";
  }
  Outcome o = run_pm({"run", "--format", "json", "-e", "cycles,task-clock", "--", workload(), "exit", "0"});
  EXPECT_EQ(o.exit_code, 0);
  ASSERT_FALSE(o.summary.is_null());
  EXPECT_TRUE(o.summary["unavailable"].contains("pmc.cycles")) << o.summary.dump();
  EXPECT_FALSE(o.summary["pmc"].contains("cycles"));       // never a silent zero
  EXPECT_TRUE(o.summary.contains("proc_on_cpu_seconds"));  // task-clock: the tree's on-CPU time
}

TEST(CliCounters, BadEventNamesAreUsageErrors) {
  for (const char* bad : {"cyclez", "rxyz", "nosuchpmu/event=1/", "cycles,,task-clock"}) {
    Outcome o = run_pm({"-e", bad, "--duration", "1s"});
    EXPECT_EQ(o.exit_code, 2) << bad;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
  Outcome o = run_pm({"-e", "cyclez"});
  EXPECT_NE(o.err.find("cycles"), std::string::npos) << o.err;  // the closest name is suggested
}

TEST(CliCounters, ListShowsEventsWithAvailability) {
  Outcome o = run_pm({"list"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("task-clock"), std::string::npos);
  EXPECT_NE(o.out.find("L1-dcache-load-misses"), std::string::npos);
}

}  // namespace
}  // namespace pm::test
