// CPU used by the whole perf-monitor process while it monitors, from the kernel's rusage of the
// real binary (so it counts everything: startup, the event loop, reads, formatting).
//
//   monitor_cpu PERF_MONITOR WORKLOAD SECONDS
//
// Prints the monitor's CPU share in live system-wide mode at a 1 s interval, and in `run` mode
// following a 10-process tree sampled every 100 ms, with the cost per process sample.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Usage {
  double cpu_seconds = 0;
  int status = 0;
};

Usage run(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  return {sec(ru.ru_utime) + sec(ru.ru_stime), status};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: monitor_cpu PERF_MONITOR WORKLOAD SECONDS\n");
    return 2;
  }
  std::string pm = argv[1], workload = argv[2];
  int seconds = std::atoi(argv[3]);
  std::string dur = std::to_string(seconds) + "s";

  Usage live = run({pm, "--interval", "1s", "--duration", dur, "--output", "/dev/null"});
  double live_pct = 100.0 * live.cpu_seconds / seconds;
  std::printf("live system-wide, 1 s interval, %d s: monitor CPU %.1f ms = %.3f%% of one CPU (goal <= 0.2%%)\n",
              seconds, live.cpu_seconds * 1e3, live_pct);

  // wait4 on the monitor counts only the monitor: the workload's time goes to the monitor's
  // children totals, not its own. The marginal cost per process is the difference between a
  // 10-process and a 1-process tree, so startup and the system-wide tick cancel out.
  auto tree = [&](int n) {
    return run({pm, "run", "--tree-interval", "100ms", "--interval", "1s", "--output", "/dev/null", "--", workload,
                "sleepers", std::to_string(n), std::to_string(seconds * 1000)});
  };
  Usage one = tree(1), ten = tree(10);
  double passes = seconds * 10.0;  // tree passes at 100 ms
  std::printf("run, 10-process tree at 100 ms, %d s: monitor CPU %.1f ms = %.3f%% of one CPU\n", seconds,
              ten.cpu_seconds * 1e3, 100.0 * ten.cpu_seconds / seconds);
  std::printf("run, 1-process tree at 100 ms, %d s: monitor CPU %.1f ms = %.3f%% of one CPU\n", seconds,
              one.cpu_seconds * 1e3, 100.0 * one.cpu_seconds / seconds);
  std::printf("cost per process sample (10-process minus 1-process tree, per process per pass): %.1f us\n",
              (ten.cpu_seconds - one.cpu_seconds) * 1e6 / (9 * passes));
  return 0;
}
