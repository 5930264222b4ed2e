// SPDX-License-Identifier: Apache-2.0
// How perf-monitor and its command begin and end, whatever happens to either: signals of every
// kind, a stopped command, a command that ignores SIGTERM, perf-monitor killed outright, a
// report that cannot be written, a file the kernel cannot execute. Each test is one of the
// ways this went wrong before, kept as a regression test.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Processes whose command line starts with `marker` (a command with a unique argument).
int processes_with(const std::string& marker) {
  int n = 0;
  DIR* d = ::opendir("/proc");
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    // slurp: a process that exits while it is read fails the read (ESRCH), which must not throw.
    std::string cmd = slurp(std::string("/proc/") + e->d_name + "/cmdline");
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    if (cmd.rfind(marker, 0) == 0) ++n;  // the command itself, not a shell that names it
  }
  ::closedir(d);
  return n;
}

// Waits until no process carries the marker; false if some still do after `limit`.
bool all_gone(const std::string& marker, milliseconds limit = milliseconds(3000)) {
  auto start = Clock::now();
  while (processes_with(marker) > 0) {
    if (Clock::now() - start > limit) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

// A sleep whose length is unique to this test run, so its processes can be told apart.
std::string unique_sleep() {
  return std::to_string(200000 + (::getpid() % 1000) * 10 + static_cast<int>(Clock::now().time_since_epoch().count() % 7));
}

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the command's cgroup and the eBPF sources";
  }
};

TEST_F(LifecycleTest, StoppedCommandEndsAtDuration) {
  // SIGTERM to a stopped process waits for SIGCONT: perf-monitor sends both, as timeout(1) does.
  // It ends soon after the duration (a hang would meet run_pm's 20 s timeout): monitoring lasted
  // about 1 s, whatever start-up took.
  Outcome o = run_pm({"--duration", "1s", "--format", "json", "run", "--", "sh", "-c", "kill -STOP $$"},
                     {.sigint_after = std::nullopt, .timeout = seconds(20)});
  EXPECT_EQ(o.exit_code, 128 + SIGTERM) << o.err;
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_EQ(o.summary["end_reason"], "duration");
  EXPECT_LT(o.summary["duration_s"].get<double>(), 2.0) << o.summary.dump();
}

TEST_F(LifecycleTest, CommandIgnoringTermIsKilledAfterTheGrace) {
  std::string s = unique_sleep();
  auto start = Clock::now();
  Outcome o = run_pm({"--duration", "300ms", "--format", "json", "run", "--", "sh", "-c",
                      "trap '' TERM; sleep " + s + " & wait"},
                     {.sigint_after = std::nullopt, .timeout = seconds(30)});
  EXPECT_GE(since(start), 5.0);  // the grace
  EXPECT_LT(since(start), 10.0);
  EXPECT_EQ(o.exit_code, 128 + SIGKILL) << o.err;
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_EQ(o.summary["signal"], SIGKILL);
  EXPECT_TRUE(all_gone("sleep " + s)) << "the command's child outlived it";
}

TEST_F(LifecycleTest, SecondSignalKillsTheWholeTreeAndSaysHowItEnded) {
  std::string s = unique_sleep();
  RunningPm pm({"--format", "json", "run", "--", "sh", "-c", "trap '' TERM INT; sleep " + s + " & wait"});
  // Once its sleep runs, the shell has set its traps (start-up is slow in a sanitizer build).
  for (auto start = Clock::now(); processes_with("sleep " + s) == 0 && since(start) < 30;) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(processes_with("sleep " + s), 1) << pm.err_so_far();
  ::kill(pm.pid(), SIGTERM);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(pm.running()) << "the first signal goes to the command, which ignores it";
  Outcome o = pm.stop(SIGTERM);
  EXPECT_EQ(o.exit_code, 128 + SIGKILL) << o.err;
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_EQ(o.summary["exit_code"], 128 + SIGKILL);  // its real status, not 143
  EXPECT_EQ(o.summary["end_reason"], "interrupted");
  EXPECT_TRUE(all_gone("sleep " + s));
}

TEST_F(LifecycleTest, HangupAndQuitEndWithTheSummary) {
  for (int sig : {SIGHUP, SIGQUIT, SIGTERM, SIGINT}) {
    // Signalled once it runs (its header written): before that, a loaded machine may still be
    // starting it, and a signal then is the default action's, as for any program.
    RunningPm pm({"--format", "json", "run", "--", workload(), "sleep", "30000"});
    ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
    std::this_thread::sleep_for(milliseconds(500));
    Outcome o = pm.stop(sig);
    EXPECT_EQ(o.exit_code, 128 + sig) << strsignal(sig) << ": " << o.err;
    ASSERT_FALSE(o.summary.is_null()) << strsignal(sig) << ": " << o.err;
    EXPECT_EQ(o.summary["signal"], sig);
    // In live mode the same signal ends monitoring, with the summary.
    RunningPm live({"--format", "json", "--interval", "200ms"});
    ASSERT_TRUE(live.wait_for_output("\"header\"")) << live.err_so_far();
    std::this_thread::sleep_for(milliseconds(500));
    Outcome l = live.stop(sig);
    EXPECT_EQ(l.exit_code, 0) << strsignal(sig) << ": " << l.err;
    EXPECT_FALSE(l.summary.is_null()) << strsignal(sig);
  }
}

TEST_F(LifecycleTest, OtherSignalsAreIgnoredOrPassedOn) {
  // Live mode: they do not end perf-monitor.
  RunningPm live({"--format", "json", "--interval", "200ms"});
  ASSERT_TRUE(live.wait_for_output("\"header\"")) << live.err_so_far();
  std::this_thread::sleep_for(milliseconds(400));
  for (int sig : {SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH, SIGPIPE, SIGCHLD, SIGCONT}) ::kill(live.pid(), sig);
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_TRUE(live.running());
  Outcome l = live.stop(SIGINT);
  EXPECT_EQ(l.exit_code, 0) << l.err;
  EXPECT_FALSE(l.summary.is_null());
  // run: passed on to the command (which dies of SIGUSR1, the default action).
  RunningPm run({"--format", "json", "run", "--", workload(), "sleep", "30000"});
  ASSERT_TRUE(run.wait_for_output("\"header\"")) << run.err_so_far();
  std::this_thread::sleep_for(milliseconds(500));
  Outcome r = run.stop(SIGUSR1);
  EXPECT_EQ(r.exit_code, 128 + SIGUSR1) << r.err;
  EXPECT_FALSE(r.summary.is_null());
}

TEST_F(LifecycleTest, KilledMonitorLeavesNothingRunning) {
  std::string s = unique_sleep();
  std::string marker = "sleep " + s;
  pid_t pid = start_pm({"--output", "/dev/null", "run", "--", "sh", "-c",
                        marker + " & " + marker + " & (setsid " + marker + " &) ; wait"},
                       "/dev/null", "/dev/null");
  // (Up to 30 s: a start under the sanitizers on a loaded machine.)
  for (int i = 0; i < 1500 && processes_with(marker) < 3; ++i) std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(processes_with(marker), 3);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  // The command, its children, and one that left the session: all ended by the watchdog.
  EXPECT_TRUE(all_gone(marker)) << processes_with(marker) << " left running";
  // Its cgroup is gone too, once the last of them is reaped.
  auto cgroup_left = [&] {
    for (const char* root : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      std::string dir = std::string(root) + "/perf-monitor-run-" + std::to_string(pid);
      if (::access(dir.c_str(), F_OK) == 0) return true;
    }
    return false;
  };
  for (int i = 0; i < 100 && cgroup_left(); ++i) std::this_thread::sleep_for(milliseconds(30));
  EXPECT_FALSE(cgroup_left());
}

// At a normal end the command's cgroup is gone by the time perf-monitor exits: whether the
// command left a process running (it goes back to perf-monitor's cgroup), or its last processes
// were still on their way out as it ended (rmdir says EBUSY until they have left).
TEST_F(LifecycleTest, RunLeavesNoCgroupBehind) {
  std::string root = ::access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0 ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
  if (::access((root + "/cgroup.procs").c_str(), F_OK) != 0) {
    GTEST_SKIP() << "no cgroup v2 hierarchy here: run makes no cgroup of its own";
  }
  std::string w = workload();
  std::vector<std::string> commands = {"sleep 0.3 & exit 0", "true & true & true & exit 0",
                                       w + " forks 20 & " + w + " forks 20 & exit 0"};
  for (const std::string& cmd : commands) {
    for (int i = 0; i < 8; ++i) {
      pid_t pid = start_pm({"--output", "/dev/null", "run", "--", "sh", "-c", cmd}, "/dev/null", "/dev/null");
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
      std::string dir = root + "/perf-monitor-run-" + std::to_string(pid);
      EXPECT_NE(::access(dir.c_str(), F_OK), 0) << dir << " left behind by: " << cmd;
      ::rmdir(dir.c_str());
    }
  }
  std::this_thread::sleep_for(milliseconds(400));  // the sleeps left running end
}

TEST_F(LifecycleTest, KilledByCommandLineLeavesNothingRunning) {
  // `pkill -9 -f 'perf-monitor …'` matches every process whose command line says so: the watchdog
  // must not be one of them, or it dies with perf-monitor and the tree outlives both.
  std::string s = unique_sleep();
  std::string marker = "sleep " + s;
  std::string out = "/tmp/pm-killed-by-name-" + s;  // only perf-monitor's own command line names it
  pid_t pid = start_pm({"--output", out, "run", "--", "sh", "-c", marker + " & " + marker + "; wait"}, "/dev/null",
                       "/dev/null");
  // (Up to 30 s: a start under the sanitizers on a loaded machine.)
  for (int i = 0; i < 1500 && processes_with(marker) < 2; ++i) std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(processes_with(marker), 2);
  // "[-]-output" matches perf-monitor's "--output" but not the shell that runs pkill.
  ASSERT_EQ(std::system(("pkill -KILL -f '[-]-output " + out + "'").c_str()), 0);
  ::waitpid(pid, nullptr, 0);
  EXPECT_TRUE(all_gone(marker)) << processes_with(marker) << " left running";
  ::unlink(out.c_str());
  // Killed, perf-monitor could not remove the temporary file it wrote beside the output.
  EXPECT_EQ(std::system(("rm -f /tmp/.pm-killed-by-name-" + s + ".*").c_str()), 0);
}

TEST_F(LifecycleTest, EarlySignalStillGivesTheSummary) {
  // SIGINT the moment perf-monitor's code first runs: it waits for the session, which then ends
  // at once with its summary. (Before that, in the dynamic loader's ~1 ms, nothing of
  // perf-monitor runs yet to catch a signal.)
  for (int i = 0; i < 5; ++i) {
    std::string base = temp_base();
    pid_t pid = start_pm({"--format", "json", "run", "--", workload(), "sleep", "5000"}, base + ".out", base + ".err");
    while (!blocks_signal(pid, SIGINT)) std::this_thread::yield();
    ::kill(pid, SIGINT);
    int status = 0;
    ::waitpid(pid, &status, 0);
    Outcome o;
    o.out = slurp(base + ".out");
    o.err = slurp(base + ".err");  // run reports there
    parse_records(o);
    ::unlink((base + ".out").c_str());
    ::unlink((base + ".err").c_str());
    EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_FALSE(o.summary.is_null()) << "attempt " << i << ": " << o.err;
  }
}

TEST_F(LifecycleTest, ReportThatCannotBeWrittenIsAnError) {
  // A full device: one line, exit 1.
  Outcome full = run_pm({"--duration", "600ms", "--interval", "200ms", "-o", "/dev/full"});
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
  // `list` too.
  EXPECT_NE(std::system((binary() + " list >/dev/full 2>/dev/null").c_str()), 0);
  EXPECT_EQ(WEXITSTATUS(std::system((binary() + " list >/dev/full 2>/dev/null").c_str())), 1);
  // Standard output closed before perf-monitor started: an error, not a write into whatever
  // file took descriptor 1.
  int closed = std::system((binary() + " --duration 300ms >&- 2>/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(closed), 1);
  // `| head -1`: it ends at once when the reader is gone.
  auto start = Clock::now();
  int head = std::system((binary() + " --format json --interval 200ms 2>/dev/null | head -1 >/dev/null").c_str());
  EXPECT_LT(since(start), 5.0);
  EXPECT_EQ(WEXITSTATUS(head), 0);  // head's status; perf-monitor ended too, or system() would not return
}

TEST_F(LifecycleTest, StderrThatCannotBeWrittenIsNoCrash) {
  for (const char* redirect : {"2>&-", "2>/dev/full"}) {
    int ok = std::system((binary() + " --duration 400ms --interval 200ms >/dev/null " + redirect).c_str());
    EXPECT_TRUE(WIFEXITED(ok)) << redirect;
    EXPECT_EQ(WEXITSTATUS(ok), 0) << redirect;
    int usage = std::system((binary() + " --interval x >/dev/null " + redirect).c_str());
    EXPECT_EQ(WEXITSTATUS(usage), 2) << redirect;
    int help = std::system((binary() + " --help >/dev/full " + redirect).c_str());
    EXPECT_EQ(WEXITSTATUS(help), 1) << redirect;
  }
}

TEST_F(LifecycleTest, OutputThatWouldBlockOrIsNotAFileIsAUsageError) {
  std::string fifo = temp_base() + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto start = Clock::now();
  Outcome o = run_pm({"-o", fifo, "--duration", "300ms"}, {.sigint_after = std::nullopt, .timeout = seconds(10)});
  EXPECT_LT(since(start), 5.0);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("FIFO"), std::string::npos) << o.err;
  ::unlink(fifo.c_str());
  Outcome dir = run_pm({"-o", scratch_dir(), "--duration", "300ms"});
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_NE(dir.err.find("directory"), std::string::npos) << dir.err;
}

TEST_F(LifecycleTest, FileTheKernelCannotExecuteIsNeverRunByTheShell) {
  // A script without #! (execvp would hand it to /bin/sh) and a corrupt ELF: 126, not run.
  std::string marker = temp_base() + ".ran";
  std::string script = temp_base() + "-script";
  std::ofstream(script) << "touch " << marker << "\n";
  ::chmod(script.c_str(), 0755);
  Outcome o = run_pm({"run", "--", script});
  EXPECT_EQ(o.exit_code, 126) << o.err;
  EXPECT_NE(o.err.find("Exec format error"), std::string::npos) << o.err;
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the shell ran it";
  std::string elf = temp_base() + "-elf";
  std::ofstream(elf) << "\x7f" "ELF\x02\x01\x01 not really";
  ::chmod(elf.c_str(), 0755);
  Outcome e = run_pm({"run", "--", elf});
  EXPECT_EQ(e.exit_code, 126) << e.err;
  Outcome missing = run_pm({"run", "--", "pm-no-such-command-anywhere"});
  EXPECT_EQ(missing.exit_code, 127) << missing.err;
  ::unlink(script.c_str());
  ::unlink(elf.c_str());
}

}  // namespace
}  // namespace pm::test
