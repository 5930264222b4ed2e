// SPDX-License-Identifier: Apache-2.0
// The scheduler source (eBPF on sched_switch, sched_waking, sched_wakeup_new, sched_process_fork)
// and the tree's kernel accounting against workloads of known behaviour and against /proc/stat.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: loading BPF programs";
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
  static Outcome run_json(std::vector<std::string> cmd) {
    std::vector<std::string> args = {"run", "--format", "json", "--"};
    args.insert(args.end(), cmd.begin(), cmd.end());
    Outcome o = run_pm(args);
    EXPECT_FALSE(o.summary.is_null()) << o.err;
    if (o.summary.contains("unavailable") && o.summary["unavailable"].contains("scheduler")) {
      ADD_FAILURE() << "scheduler source unavailable: " << o.summary["unavailable"]["scheduler"];
    }
    return o;
  }
};

TEST_F(SchedulerTest, PipePingPongOfTheTree) {
  constexpr int kTrips = 20000;
  Outcome o = run_json({workload(), "pingpong", std::to_string(kTrips)});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GE(num(o, "proc_voluntary_switches"), 2 * kTrips);
  EXPECT_GE(num(o, "proc_sched_wakeups"), 2 * kTrips);
  ASSERT_TRUE(o.summary.contains("proc_runq_latency_seconds"));
  const auto& h = o.summary["proc_runq_latency_seconds"];
  EXPECT_GE(h["count"].get<double>(), 2 * kTrips);
  double sum = 0;
  for (const auto& b : h["buckets"]) sum += b.get<double>();
  EXPECT_EQ(sum, h["count"].get<double>());
  EXPECT_GT(h["p99"].get<double>(), 0);
}

TEST_F(SchedulerTest, SleepingIsBlockedOffCpuTime) {
  Outcome o = run_json({workload(), "naps", "10", "50"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GE(num(o, "proc_blocked_seconds"), 0.5)
      << "switches " << o.summary.value("proc_voluntary_switches", nlohmann::json()) << ", wakeups "
      << o.summary.value("proc_sched_wakeups", nlohmann::json());
  EXPECT_LT(num(o, "proc_blocked_seconds"), 1.0);
  EXPECT_LT(num(o, "proc_on_cpu_seconds"), 0.1);
}

TEST_F(SchedulerTest, CpuBoundWorkIsOnCpuTime) {
  Outcome o = run_json({workload(), "cputime", "400"});
  EXPECT_GE(num(o, "proc_on_cpu_seconds"), 0.4 * 0.95);
  // Against the command's own getrusage (perf's task clock of the tree fills the same quantity
  // only where the kernel accounting is missing).
  size_t at = o.out.find("cpu_seconds=");
  ASSERT_NE(at, std::string::npos) << o.out;
  double rusage = std::stod(o.out.substr(at + 12));
  EXPECT_NEAR(num(o, "proc_on_cpu_seconds"), rusage, 0.02);
}

TEST_F(SchedulerTest, ForkedChildrenAreFollowedInTheKernel) {
  // Two children that each burn 300 ms: the kernel side adds them at fork.
  Outcome o = run_json({workload(), "children", "2", "8", "0", "300"});
  EXPECT_GE(num(o, "proc_on_cpu_seconds"), 2 * 0.3 * 0.9);
  EXPECT_NEAR(num(o, "proc_cpu_user_seconds") + num(o, "proc_cpu_system_seconds"), num(o, "proc_on_cpu_seconds"),
              2e-6);
}

// /proc/stat's ctxt: every context switch since boot.
TEST_F(SchedulerTest, SystemWideSwitchesAgreeWithProcStat) {
  // eBPF fills scheduler.context_switches (it outranks perf's counter and /proc/stat, which the
  // summary then leaves out): its rate against the rate of /proc/stat's ctxt, read here from
  // when monitoring began to its end, under a load that switches steadily.
  pid_t load = ::fork();
  if (load == 0) {
    ::execl(workload().c_str(), "pm-workload", "pingpong", "40000000", nullptr);  // outlasts the test
    ::_exit(127);
  }
  SwitchWindow w = switches_while_monitoring({"--format", "json", "--interval", "500ms", "--duration", "2s"});
  const Outcome& o = w.o;
  ::kill(load, SIGKILL);
  ::waitpid(load, nullptr, 0);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  ASSERT_TRUE(o.summary["scheduler"]["context_switches"].is_object()) << o.summary.dump();
  double ours = o.summary["scheduler"]["context_switches"]["all"].get<double>();
  double proc_rate = w.proc_switches / w.wall_s, our_rate = ours / o.summary["duration_s"].get<double>();
  EXPECT_GT(w.proc_switches, 10000);
  EXPECT_NEAR(our_rate, proc_rate, proc_rate * 0.1);
  double per_cpu = 0;
  for (const auto& [cpu, v] : o.summary["scheduler"]["context_switches"].items()) {
    if (cpu != "all") per_cpu += v.get<double>();
  }
  EXPECT_NEAR(per_cpu, ours, 1);
}

// BPF programs perf-monitor holds open, from its fd table.
int bpf_progs_of(pid_t pid) {
  int n = 0;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return -1;
  while (dirent* e = ::readdir(d)) {
    char target[256];
    ssize_t len = ::readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = 0;
    if (std::string(target).find("bpf-prog") != std::string::npos ||
        std::string(target).find("bpf_link") != std::string::npos) {
      ++n;
    }
  }
  ::closedir(d);
  return n;
}

// Its BPF programs and links once monitoring has begun (the header is out: every source open).
int progs_while_running(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json", "--interval", "10s"});
  RunningPm pm(args);
  EXPECT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  int n = bpf_progs_of(pm.pid());
  pm.stop(SIGINT);
  return n;
}

TEST_F(SchedulerTest, DisabledMeansNothingAttached) {
  std::string path = scratch_dir() + "/pm-sched-off.toml";
  std::ofstream(path) << "[scheduler]\nenabled = false\n[block_io]\nenabled = false\n[top]\ncount = 0\n";
  EXPECT_EQ(progs_while_running({"--config", path}), 0);
  EXPECT_GT(progs_while_running({}), 0);
}

}  // namespace
}  // namespace pm::test

namespace pm::test {
namespace {

TEST_F(SchedulerTest, DirectWritesCountForTheTreeAndTheDevice) {
  // 64 MiB with O_DIRECT: every byte is a bio the workload submits itself.
  constexpr double kBytes = 64 * kMiB;
  Outcome o = run_json({workload(), "direct", "64", scratch_dir() + "/pm-direct-test"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  if (o.summary["unavailable"].contains("block_io")) GTEST_FAIL() << o.summary["unavailable"]["block_io"];
  EXPECT_NEAR(num(o, "proc_bio_write_bytes"), kBytes, kBytes * 0.01);
  // The device that took the writes: the one with the most written.
  std::string device;
  double most = -1;
  for (const auto& [dev, ops] : o.summary["block_io"]["bio_bytes"].items()) {
    if (dev != "all" && ops["write"].get<double>() > most) {
      most = ops["write"].get<double>();
      device = dev;
    }
  }
  EXPECT_NEAR(most, kBytes, kBytes * 0.01) << device;
  EXPECT_GT(o.summary["block_io"]["request_latency_seconds"][device]["count"].get<double>(), 0);
  EXPECT_GT(o.summary["block_io"]["queue_depth"][device]["count"].get<double>(), 0);
  // /proc/PID/io agrees: the same bytes reached storage.
  EXPECT_NEAR(num(o, "proc_io_write_bytes"), kBytes, kBytes * 0.01);
}

TEST_F(SchedulerTest, BlockDisabledMeansNothingAttached) {
  std::string path = scratch_dir() + "/pm-kernel-off.toml";
  std::ofstream(path) << "[scheduler]\nenabled = false\n[block_io]\nenabled = false\n";
  Outcome o = run_pm({"--config", path, "--format", "json", "--duration", "300ms"});
  ASSERT_FALSE(o.summary.is_null());
  EXPECT_FALSE(o.summary.contains("block_io"));
  EXPECT_FALSE(o.summary.contains("block_io_bio_bytes"));
}

}  // namespace
}  // namespace pm::test

namespace pm::test {
namespace {

TEST(KernelSources, RawTracepointFallbackCountsTheSame) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: loading BPF programs";
  // The raw_tp programs, used where tp_btf cannot attach, forced here on a kernel that has BTF.
  // They count system-wide as the typed ones do; the tree, which only typed programs can follow
  // (task storage), is then sampled from /proc, and the summary says so.
  ::setenv("PERF_MONITOR_BPF_ATTACH", "raw_tp", 1);
  constexpr int kTrips = 5000;
  Outcome o = run_pm({"run", "--format", "json", "--", workload(), "pingpong", std::to_string(kTrips)});
  Outcome d = run_pm({"run", "--format", "json", "--", workload(), "direct", "8", scratch_dir() + "/pm-raw-direct"});
  ::unsetenv("PERF_MONITOR_BPF_ATTACH");
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_FALSE(o.summary["unavailable"].contains("scheduler")) << o.summary["unavailable"];
  const nlohmann::json& sched = o.summary["scheduler"];
  EXPECT_GE(sched["context_switches"].value("all", 0.0), 2 * kTrips) << sched.dump();
  EXPECT_GE(sched.value("wakeups", 0.0), 2 * kTrips);
  EXPECT_GE(sched["runq_latency_seconds"]["count"].get<double>(), 2 * kTrips);
  EXPECT_NE(o.summary["unavailable"].value("process_tree", "").find("sampled from /proc"), std::string::npos)
      << o.summary["unavailable"];
  EXPECT_GT(o.summary.value("proc_cpu_user_seconds", 0.0) + o.summary.value("proc_cpu_system_seconds", 0.0), 0);
  ASSERT_FALSE(d.summary.is_null()) << d.err;
  double device_written = 0;
  for (const auto& [dev, ops] : d.summary["block_io"]["bio_bytes"].items()) {
    if (dev != "all") device_written += ops["write"].get<double>();
  }
  EXPECT_GE(device_written, 8 * kMiB);
  EXPECT_NE(d.summary["unavailable"].value("block_io.tree", "").find("tp_btf"), std::string::npos)
      << d.summary["unavailable"];
}

TEST(KernelSources, WithoutPrivilegeEachPartSaysWhyAndTheRestRuns) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop to another user (setpriv)";
  if (std::system("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "setpriv (util-linux) not installed";
  std::string out = scratch_dir() + "/pm-unprivileged.jsonl";
  std::string cmd = "setpriv --reuid=65534 --regid=65534 --clear-groups " + binary() +
                    " --format json --duration 600ms > " + out + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(out);
  std::string line, last;
  while (std::getline(in, line)) last = line;
  auto summary = nlohmann::json::parse(last, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << last;
  for (const char* part : {"scheduler", "block_io"}) {
    ASSERT_TRUE(summary["unavailable"].contains(part)) << summary["unavailable"].dump();
    EXPECT_NE(summary["unavailable"][part].get<std::string>().find("CAP_BPF"), std::string::npos);
  }
  // The /proc sources carry on.
  EXPECT_TRUE(summary.contains("global_mem_used_max"));
  EXPECT_TRUE(summary.contains("cpu"));
  ::unlink(out.c_str());
}

}  // namespace
}  // namespace pm::test
