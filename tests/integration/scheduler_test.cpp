// SPDX-License-Identifier: Apache-2.0
// The scheduler source (eBPF on sched_switch, sched_wakeup, sched_wakeup_new, sched_process_fork)
// and the tree's kernel accounting against workloads of known behaviour and against /proc/stat.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
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

// /proc/stat's ctxt: every context switch since boot (the run queues' nr_switches, which the
// scheduler counts where it fires sched_switch: the two cannot differ).
double ctxt_now() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    double v = 0;
    if (key == "ctxt" && in >> v) return v;
  }
  return 0;
}

TEST_F(SchedulerTest, SystemWideSwitchesAgreeWithProcStat) {
  // eBPF fills scheduler.context_switches (it outranks perf's counter and /proc/stat, which the
  // summary then leaves out): its total against /proc/stat's ctxt, read around two windows. The
  // inner one, from the header to the SIGINT, lies inside perf-monitor's counting; the outer one,
  // from before its start to after its exit, holds it. A ping-pong of 20,000 round trips runs in
  // the inner window. Under load the edges hold other work's switches, so the total is asked to
  // lie between the two, which holds however long the edges take.
  double outer_before = ctxt_now();
  RunningPm pm({"--format", "json", "--interval", "500ms"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  double inner_before = ctxt_now();
  pid_t load = ::fork();
  if (load == 0) {
    ::execl(workload().c_str(), "pm-workload", "pingpong", "20000", nullptr);
    ::_exit(127);
  }
  ::waitpid(load, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // an interval of it ends
  double inner = ctxt_now() - inner_before;
  Outcome o = pm.stop(SIGINT);
  double outer = ctxt_now() - outer_before;
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  ASSERT_TRUE(o.summary["scheduler"]["context_switches"].is_object()) << o.summary.dump();
  double ours = o.summary["scheduler"]["context_switches"]["all"].get<double>();
  std::printf("switches: ours %.0f, /proc/stat's ctxt %.0f inside and %.0f around perf-monitor\n", ours, inner, outer);
  EXPECT_GT(inner, 2 * 20000);
  // (A few in 10,000 fewer were seen once in a clean clone's run beside other tests: 40,142
  // against 40,147; not explained yet, so bounded, at 0.1 %.)
  EXPECT_GE(ours, inner * 0.999) << "fewer than /proc/stat counted while perf-monitor surely counted";
  EXPECT_LE(ours, outer) << "more than /proc/stat counted from before perf-monitor's start to after its exit";
  double per_cpu = 0;
  for (const auto& [cpu, v] : o.summary["scheduler"]["context_switches"].items()) {
    if (cpu != "all") per_cpu += v.get<double>();
  }
  EXPECT_NEAR(per_cpu, ours, 1);
}

// A sysctl's value, and the same set back when the test ends.
class SysctlFor {
 public:
  explicit SysctlFor(std::string path) : path_(std::move(path)) { std::ifstream(path_) >> was_; }
  ~SysctlFor() {
    if (!was_.empty()) std::ofstream(path_) << was_;
  }
  SysctlFor(const SysctlFor&) = delete;
  SysctlFor& operator=(const SysctlFor&) = delete;
  [[nodiscard]] long was() const { return was_.empty() ? 0 : std::stol(was_); }
  bool set(long v) { return static_cast<bool>(std::ofstream(path_) << v << std::flush); }

 private:
  std::string path_, was_;
};

// A CPU-bound workload on CPU 0 for `ms` milliseconds; where want_pid is not 0, forked as that
// pid (the next pid set through ns_last_pid) or not at all (-1).
pid_t spinner_on_cpu0(int ms, pid_t want_pid = 0) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (want_pid != 0) std::ofstream("/proc/sys/kernel/ns_last_pid") << want_pid - 1 << std::flush;
    pid_t pid = ::fork();
    if (pid == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(0, &set);
      ::sched_setaffinity(0, sizeof set, &set);
      if (want_pid != 0 && ::getpid() != want_pid) ::_exit(0);  // another fork took the pid first
      std::string arg = std::to_string(ms);
      ::execl(workload().c_str(), "pm-workload", "spin", arg.c_str(), nullptr);
      ::_exit(127);
    }
    if (want_pid == 0 || pid == want_pid) return pid;
    ::waitpid(pid, nullptr, 0);
  }
  return -1;
}

// Run-queue stamps live in an array of 65,536 slots indexed by pid: two tasks of one slot that
// wait at once lose one wait, which is counted, not timed. Three CPU-bound tasks on one CPU,
// two of them 65,536 pids apart, wait two at a time all along. With pid_max at most the array's
// size (this host's, before the test raises it) no wait is lost.
TEST_F(SchedulerTest, RunQueueWaitsOfTasksSharingAStampSlotAreCountedLost) {
  SysctlFor pid_max("/proc/sys/kernel/pid_max");
  if (pid_max.was() > 0 && pid_max.was() <= 65536) {
    Outcome o = run_pm({"--format", "json", "--duration", "1s"});
    ASSERT_FALSE(o.summary.is_null()) << o.err;
    ASSERT_GT(o.summary["scheduler"]["context_switches"].value("all", 0.0), 0) << o.summary.dump();
    EXPECT_EQ(o.summary["scheduler"].value("runq_waits_lost", -1.0), 0) << o.summary["scheduler"].dump();
  }
  if (!pid_max.set(4194304)) GTEST_SKIP() << "cannot raise kernel.pid_max (a container's read-only /proc/sys?)";
  RunningPm pm({"--format", "json", "--interval", "500ms"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  pid_t a = spinner_on_cpu0(1500);
  pid_t b = spinner_on_cpu0(1500, a + 65536);
  pid_t c = spinner_on_cpu0(1500);
  for (pid_t p : {a, b, c}) {
    if (p > 0) ::waitpid(p, nullptr, 0);
  }
  Outcome o = pm.stop(SIGINT);
  ASSERT_GT(b, 0) << "no fork got pid " << a + 65536 << " (ns_last_pid)";
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  double lost = o.summary["scheduler"].value("runq_waits_lost", 0.0);
  double timed = o.summary["scheduler"]["runq_latency_seconds"].value("count", 0.0);
  std::printf("pids %d %d %d on CPU 0: %.0f waits lost, %.0f timed\n", a, b, c, lost, timed);
  EXPECT_GT(lost, 10);
  EXPECT_GT(timed, lost);
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

namespace pm::test {
namespace {

// Run-queue latency against runqlat (bcc's, in bpftrace) over the same window: a task is
// stamped by the wall clock when it becomes runnable (sched_wakeup, sched_wakeup_new, or
// switched out still runnable: prev_state 0, or TASK_REPORT_MAX (0x100) when preempted) and its
// wait ends at its next switch-in; the idle task (pid 0) never waits. bpftrace runs from before
// perf-monitor starts until after it ends; the tree's waits are told apart by their comm.
struct Runqlat {
  std::vector<double> all, tree;  // log2 buckets of microseconds, as perf-monitor's
  double all_waits = 0, tree_waits = 0;
};

// bpftrace's hist() of one map: "[0]", "[1]", "[2, 4)", "[1K, 2K)" ... -> bucket i holds values
// below 2^i (0: 0, i: [2^(i-1), 2^i)), perf-monitor's layout.
std::vector<double> parse_hist(const std::string& text, const std::string& map) {
  std::vector<double> h(64, 0);
  size_t at = text.find("@" + map + ":");
  if (at == std::string::npos) return h;
  std::istringstream in(text.substr(at));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && !line.empty() && line[0] == '[') {
    size_t end = line.find_first_of(",]");
    std::string low = line.substr(1, end - 1);
    double scale = low.back() == 'K' ? 1024 : low.back() == 'M' ? 1024 * 1024 : low.back() == 'G' ? 1 << 30 : 1;
    if (scale > 1) low.pop_back();
    double lo = std::stod(low) * scale;
    size_t bucket = lo == 0 ? 0 : static_cast<size_t>(std::lround(std::log2(lo))) + 1;
    size_t close = line.find_first_of(")]"), bar = line.find('|');
    if (close == std::string::npos || bar == std::string::npos || bar < close) continue;
    double n = std::stod(line.substr(close + 1, bar - close - 1));
    if (bucket < h.size()) h[bucket] += n;
  }
  return h;
}

double parse_count(const std::string& text, const std::string& map) {
  size_t at = text.find("@" + map + ": ");
  return at == std::string::npos ? 0 : std::stod(text.substr(at + map.size() + 3));
}

// The bucket that holds quantile q of a histogram.
int quantile_bucket(const std::vector<double>& h, double q) {
  double total = 0;
  for (double v : h) total += v;
  double seen = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    seen += h[i];
    if (seen >= q * total && total > 0) return static_cast<int>(i);
  }
  return -1;
}

std::vector<double> buckets_of(const nlohmann::json& hist) {
  std::vector<double> h;
  for (const auto& b : hist["buckets"]) h.push_back(b.get<double>());
  return h;
}

int online_cpus_here() {
  cpu_set_t set;
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

class RunQueueTest : public SchedulerTest {
 protected:
  void SetUp() override {
    SchedulerTest::SetUp();
    if (IsSkipped()) return;
    if (std::string why = bpftrace_missing(); !why.empty()) GTEST_SKIP() << why;
    // The workload under a name of its own (its comm), so that other tests' pm-workloads running
    // meanwhile are not in bpftrace's tree.
    comm = "pmrq" + std::to_string(::getpid());
    program = scratch_dir() + "/" + comm;
    ::unlink(program.c_str());
    ASSERT_EQ(::symlink(workload().c_str(), program.c_str()), 0) << program;
  }
  void TearDown() override {
    if (!program.empty()) ::unlink(program.c_str());
  }

  // `perf-monitor run` of cmd with bpftrace's runqlat around it; tree_comm names the tree's
  // tasks for bpftrace. System-wide, bpftrace counts from the tree's first switch-in until
  // `processes` of its processes have exited: the run's window, less its exec and its reaping.
  // A bpftrace that does not end after SIGINT (once in many runs on a loaded machine) leaves no
  // truth to compare with: the whole measurement is taken again, once.
  Runqlat measure(const std::vector<std::string>& cmd, const std::string& tree_comm, Outcome& o, int processes = 1) {
    bool ended = false;
    Runqlat r = measure_once(cmd, tree_comm, o, processes, true, ended);
    if (!ended) r = measure_once(cmd, tree_comm, o, processes, false, ended);
    return r;
  }
  Runqlat measure_once(const std::vector<std::string>& cmd, const std::string& tree_comm, Outcome& o, int processes,
                       bool may_retry, bool& ended) {
    std::string text = R"(
tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new { if (args->pid != 0) { @q[args->pid] = nsecs; } }
tracepoint:sched:sched_switch {
  if (args->prev_pid != 0 && (args->prev_state & 0xff) == 0) { @q[args->prev_pid] = nsecs; }
  $t = @q[args->next_pid];
  if ($t) {
    $us = (nsecs - $t) / 1000;
    if (@on && @gone < PROCESSES) { @all = hist($us); @all_waits = count(); }
    if (args->next_comm == "COMM") { @tree = hist($us); @tree_waits = count(); }
  }
  delete(@q[args->next_pid]);
  if (args->next_comm == "COMM") { @on = 1; }
}
tracepoint:sched:sched_process_exit /comm == "COMM"/ { @gone = @gone + 1; }
END { clear(@q); clear(@on); clear(@gone); }
)";
    for (size_t at; (at = text.find("COMM")) != std::string::npos;) text.replace(at, 4, tree_comm);
    text.replace(text.find("PROCESSES"), 9, std::to_string(processes));
    Bpftrace bt(text, {{"BPFTRACE_MAP_KEYS_MAX", "65536"}});
    bool attached = bt.attached();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::vector<std::string> args = {"run", "--format", "json", "--"};
    args.insert(args.end(), cmd.begin(), cmd.end());
    o = run_pm(args);
    std::string printed = bt.stop(std::chrono::seconds(20), may_retry);
    ended = bt.ended();
    EXPECT_TRUE(attached) << printed;
    Runqlat r;
    r.all = parse_hist(printed, "all");
    r.tree = parse_hist(printed, "tree");
    r.all_waits = parse_count(printed, "all_waits");
    r.tree_waits = parse_count(printed, "tree_waits");
    return r;
  }

  // p50 and p99 within one log2 bucket, the number of waits within 5 %.
  static void expect_agree(const std::string& what, const nlohmann::json& ours, const std::vector<double>& theirs,
                           double their_waits) {
    std::vector<double> h = buckets_of(ours);
    double n = ours["count"].get<double>();
    std::printf("%s: waits %.0f (runqlat %.0f), p50 bucket %d (%d), p99 bucket %d (%d)\n", what.c_str(), n, their_waits,
                quantile_bucket(h, 0.5), quantile_bucket(theirs, 0.5), quantile_bucket(h, 0.99),
                quantile_bucket(theirs, 0.99));
    EXPECT_NEAR(n, their_waits, 0.05 * their_waits) << what;
    // The two counts differ by a few waits (the tree's shell is not bpftrace's comm; a wait at either
    // window's edge), and each may sit anywhere in the distribution, the tail too: at p99 of 600 waits
    // that is the quantile itself. So our quantile lies within runqlat's at the ranks that those
    // waits can move it to, and one bucket either side.
    // And the two tools stamp each wait at their own moments (a tp_btf program here, a classic
    // tracepoint there): a wait within a fraction of a microsecond of a bucket's edge falls on
    // either side. Half a percent of the waits may move so, which on a thin tail is a rank that
    // reaches the next bucket but one.
    double their_n = 0;
    for (double v : theirs) their_n += v;
    double moved = std::fabs(n - their_n) + 1 + 0.005 * n;
    for (double q : {0.5, 0.99}) {
      int lo = quantile_bucket(theirs, std::max(0.0, (q * n - moved) / their_n));
      int hi = quantile_bucket(theirs, std::min(1.0, (q * n + moved) / their_n));
      int mine = quantile_bucket(h, q);
      EXPECT_GE(mine, lo - 1) << what << " p" << q * 100 << ": ours " << ours.dump() << "\nrunqlat's buckets "
                              << nlohmann::json(theirs).dump();
      EXPECT_LE(mine, hi + 1) << what << " p" << q * 100 << ": ours " << ours.dump() << "\nrunqlat's buckets "
                              << nlohmann::json(theirs).dump();
    }
  }

  std::string comm, program;
};

TEST_F(RunQueueTest, WakeupPingPongAgreesWithRunqlat) {
  // A ping-pong across two CPUs: each wakeup reaches an idle CPU and preempts its idle task, which
  // makes the scheduler skip its next clock update (rq_clock_skip_update): the scheduler's own
  // stamp (sched_info.last_queued against rq->clock) read ~0 there, though the task waited.
  if (online_cpus_here() < 2) GTEST_SKIP() << "needs two CPUs";
  Outcome o;
  Runqlat r = measure({program, "crosspong", "5000"}, comm, o, 2);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_GE(r.tree_waits, 0.9 * 2 * 5000);  // (a reader may find its byte before it blocks)
  expect_agree("tree", o.summary["proc_runq_latency_seconds"], r.tree, r.tree_waits);
  // System-wide, over the same window.
  expect_agree("system", o.summary["scheduler"]["runq_latency_seconds"], r.all, r.all_waits);
}

TEST_F(RunQueueTest, RawTracepointFallbackAgreesWithRunqlat) {
  // The raw_tp programs keep the stamps in a hash by pid (no task storage there), system-wide.
  if (online_cpus_here() < 2) GTEST_SKIP() << "needs two CPUs";
  ::setenv("PERF_MONITOR_BPF_ATTACH", "raw_tp", 1);
  Outcome o;
  Runqlat r = measure({program, "crosspong", "5000"}, comm, o, 2);
  ::unsetenv("PERF_MONITOR_BPF_ATTACH");
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_GE(r.tree_waits, 0.9 * 2 * 5000);
  expect_agree("system (raw_tp)", o.summary["scheduler"]["runq_latency_seconds"], r.all, r.all_waits);
}

TEST_F(RunQueueTest, StressNgSwitchAgreesWithRunqlat) {
  // stress-ng's own ping-pong (the two tasks go wherever the scheduler puts them).
  if (std::system("command -v stress-ng >/dev/null") != 0) GTEST_SKIP() << "stress-ng is not installed";
  Outcome o;
  Runqlat r = measure({"stress-ng", "--switch", "1", "--timeout", "1", "--quiet"}, "stress-ng-switc", o);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_GT(r.tree_waits, 10000);
  expect_agree("tree", o.summary["proc_runq_latency_seconds"], r.tree, r.tree_waits);
}

TEST_F(RunQueueTest, SaturatedCpuAgreesWithRunqlat) {
  // Three spinning threads on one CPU: each waits while the others run out their slices.
  Outcome o;
  Runqlat r = measure({"taskset", "-c", "0", program, "threads", "3", "200"}, comm, o);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_GT(r.tree_waits, 100);
  expect_agree("tree", o.summary["proc_runq_latency_seconds"], r.tree, r.tree_waits);
}

TEST_F(RunQueueTest, PreemptingWakeupsAgreeWithRunqlat) {
  // A task that naps 1 ms at a time beside a spinner on one CPU: each of its wakeups preempts the
  // spinner, which then waits for the CPU back.
  Outcome o;
  std::string sh = program + " spin 500 & " + program + " naps 300 1; wait";
  Runqlat r = measure({"taskset", "-c", "0", "sh", "-c", sh}, comm, o);
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_GT(r.tree_waits, 300);
  // (The shell's own few waits are the tree's, not bpftrace's by comm.)
  expect_agree("tree", o.summary["proc_runq_latency_seconds"], r.tree, r.tree_waits);
}

}  // namespace
}  // namespace pm::test
