// SPDX-License-Identifier: Apache-2.0
// A signal at any moment of perf-monitor's start-up ends the run with its summary, in every mode:
// SIGINT, SIGTERM, SIGQUIT or SIGHUP sent at a random moment in the first 50 ms after
// perf-monitor's own code first ran (its preinit function blocks the signals; before that, in
// the dynamic loader's millisecond or two, nothing of perf-monitor runs to catch one). Also as
// a script's background job starts it, with SIGINT and SIGQUIT ignored (inherited by the
// command, which then gets SIGTERM instead).
//   PM_SIGNAL_TRIES=200: tries per mode (default: a few, to keep CI fast); PM_SIGNAL_SEED.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string status_lines(pid_t pid) {
  std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("Sig", 0) == 0 || line.rfind("ShdPnd", 0) == 0) out += line + "; ";
  }
  return out + "wchan " + slurp("/proc/" + std::to_string(pid) + "/wchan");
}

// perf-monitor with stdout and stderr to files, in a process group of its own (a signal sent to
// it alone, as `kill` does), without core dumps (SIGQUIT's), and optionally ignoring SIGINT and
// SIGQUIT as a non-interactive shell's `&` makes a job.
pid_t spawn(const std::vector<std::string>& args, const std::string& base, bool background_job) {
  std::vector<std::string> all = {binary()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string out = base + ".out", err = base + ".err";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 1);
    ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 2);
    ::setpgid(0, 0);
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    if (background_job) {
      ::signal(SIGINT, SIG_IGN);
      ::signal(SIGQUIT, SIG_IGN);
    }
    ::execv(argv[0], argv.data());
    ::_exit(126);
  }
  return pid;
}

struct TryMode {
  std::string name;
  std::vector<std::string> args;
  bool json = true;
  bool run = false;
  bool background_job = false;
};

class SignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the eBPF sources and the command's cgroup";
    for (const char* mount : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      struct stat st {};
      if (::stat((std::string(mount) + "/cgroup.procs").c_str(), &st) == 0) {
        cgroup_ = std::string(mount) + "/pm-signal-test-" + std::to_string(::getpid());
        break;
      }
    }
    // A tree to attach to, in a cgroup to watch.
    sleeper_ = ::fork();
    if (sleeper_ == 0) {
      ::execl(workload().c_str(), workload().c_str(), "sleep", "600000", nullptr);
      ::_exit(127);
    }
    if (!cgroup_.empty() && ::mkdir(cgroup_.c_str(), 0755) == 0) {
      std::FILE* f = std::fopen((cgroup_ + "/cgroup.procs").c_str(), "w");
      if (f != nullptr) {
        std::fprintf(f, "%d\n", sleeper_);
        std::fclose(f);
      }
    } else {
      cgroup_.clear();
    }
  }
  void TearDown() override {
    if (sleeper_ > 0) {
      ::kill(sleeper_, SIGKILL);
      ::waitpid(sleeper_, nullptr, 0);
    }
    for (int i = 0; !cgroup_.empty() && ::rmdir(cgroup_.c_str()) != 0 && i < 100; ++i) {
      std::this_thread::sleep_for(milliseconds(10));  // the sleeper leaves when reaped
    }
  }
  pid_t sleeper_ = -1;
  std::string cgroup_;
};

TEST_F(SignalTest, SignalInTheFirstMillisecondsEndsEveryModeWithItsSummary) {
  const char* tries_env = std::getenv("PM_SIGNAL_TRIES");
  int per_mode = tries_env != nullptr ? std::atoi(tries_env) : 1;
  const char* seed_env = std::getenv("PM_SIGNAL_SEED");
  unsigned seed =
      seed_env != nullptr ? static_cast<unsigned>(std::strtoul(seed_env, nullptr, 10)) : std::random_device{}();
  std::mt19937 rng(seed);
  std::vector<TryMode> modes = {
      {"live", {"--format", "json"}},
      {"live, text", {}, false},
      {"run", {"--format", "json", "run", "--", workload(), "sleep", "100000"}, true, true},
      {"attach", {"--format", "json", "attach", "--pid", std::to_string(sleeper_)}},
      {"run, as a script's background job",
       {"--format", "json", "run", "--", workload(), "sleep", "100000"},
       true,
       true,
       true},
  };
  if (!cgroup_.empty()) modes.push_back({"cgroup", {"--format", "json", "--cgroup", cgroup_}});
  const std::vector<int> signals = {SIGINT, SIGTERM, SIGQUIT, SIGHUP};
  int failures = 0;
  for (int i = 0; i < per_mode && failures < 3; ++i) {
    for (const TryMode& m : modes) {
      int sig = signals[rng() % signals.size()];
      auto delay = std::chrono::microseconds(rng() % 50'000);
      SCOPED_TRACE(m.name + ", " + sigabbrev_np(sig) + " " + std::to_string(delay.count()) +
                   " us after start, PM_SIGNAL_SEED=" + std::to_string(seed));
      std::string base = temp_base();
      pid_t pid = spawn(m.args, base, m.background_job);
      ASSERT_GT(pid, 0);
      for (auto t0 = Clock::now(); !blocks_signal(pid, SIGQUIT) && Clock::now() - t0 < std::chrono::seconds(10);) {
        std::this_thread::yield();
      }
      std::this_thread::sleep_for(delay);
      ::kill(pid, sig);
      int status = 0;
      bool ended = false;
      // Start-up goes on to its end before the signal is read: slow in a sanitizer build.
      for (auto t0 = Clock::now(); Clock::now() - t0 < std::chrono::seconds(30);) {
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          ended = true;
          break;
        }
        std::this_thread::sleep_for(milliseconds(2));
      }
      std::string why;
      if (!ended) {
        why = "still running 30 s after the signal: " + status_lines(pid);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
      }
      std::string out = slurp(base + ".out"), err = slurp(base + ".err");
      ::unlink((base + ".out").c_str());
      ::unlink((base + ".err").c_str());
      bool ok = ended && WIFEXITED(status);
      EXPECT_TRUE(ok) << (ended ? "killed by signal " + std::to_string(WTERMSIG(status)) : why) << "\n" << err;
      // (run and attach report on standard error)
      std::string report = out + err;
      bool summary = report.find(m.json ? "\"type\":\"summary\"" : "=== perf-monitor summary") != std::string::npos;
      EXPECT_TRUE(summary) << "no summary:\n" << out.substr(0, 2000) << "\n" << err;
      if (ok) {
        // run: the command's status (SIGTERM for a signal it ignores); else perf-monitor's own 0.
        int expected = !m.run ? 0 : m.background_job && (sig == SIGINT || sig == SIGQUIT) ? 128 + SIGTERM : 128 + sig;
        EXPECT_EQ(WEXITSTATUS(status), expected) << err;
      }
      if (!ok || !summary) ++failures;
    }
  }
}

}  // namespace
}  // namespace pm::test
