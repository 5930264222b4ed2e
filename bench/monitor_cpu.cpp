// SPDX-License-Identifier: Apache-2.0
// CPU used by the whole perf-monitor process while it monitors, from the kernel's rusage of the
// real binary (so it counts everything: startup, the event loop, reads, formatting).
//
//   monitor_cpu PERF_MONITOR WORKLOAD SECONDS
//
// Prints the monitor's CPU share in live system-wide mode at a 1 s interval, the same with
// --prometheus and a scraper fetching /metrics every second, and in `run` mode following trees
// of 1, 10, 100 and 1,000 live processes at the default 100 ms, measured exactly (eBPF: the
// command's cgroup walked, and every task of the host walked as `attach` does) and sampled from
// /proc (the fallback, forced), with the cost per process per pass.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "scrape_client.h"

namespace {

struct Usage {
  double cpu_seconds = 0;
  int status = 0;
};

using pm::bench::free_port;

// One GET /metrics, as a scraper does; the bytes of the response (0 when not served).
size_t scrape(int port) {
  static std::string buf;
  ssize_t n = pm::bench::get_metrics(port, buf);
  return n < 0 ? 0 : static_cast<size_t>(n);
}

// CPU time of every thread of pid but the main one (the exporter's server threads), from the
// scheduler's own accounting (/proc/PID/task/TID/schedstat, nanoseconds on CPU): exact, where
// rusage has the 10 ms granularity of ticks on some kernels.
double other_threads_cpu_seconds(pid_t pid) {
  double sum = 0;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() == std::to_string(pid)) continue;
    std::ifstream in(e.path() / "schedstat");
    double ns = 0;
    if (in >> ns) sum += ns * 1e-9;
  }
  return sum;
}

// The host's tasks (threads included), as /proc/loadavg counts them ("0.10 0.20 0.30 1/234 5678").
long host_tasks() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c, counts;
  in >> a >> b >> c >> counts;
  auto slash = counts.find('/');
  return slash == std::string::npos ? 0 : std::atol(counts.c_str() + slash + 1);
}

// CPU time of every thread of pid, from the scheduler's own accounting (nanoseconds on CPU).
double process_cpu_seconds(pid_t pid) { return other_threads_cpu_seconds(pid) + [&] {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/schedstat");
  double ns = 0;
  in >> ns;
  return ns * 1e-9;
}(); }

// The monitor's own CPU share in its steady state: from `warm` seconds after its start (the tree
// forked, the programs loaded) to one second before its end.
double steady_share(std::vector<std::string> args, int seconds, int warm, const char* env = nullptr) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (env != nullptr) ::putenv(const_cast<char*>(env));
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(warm));
  double c0 = process_cpu_seconds(pid);
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds - warm - 1));
  double c1 = process_cpu_seconds(pid);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  ::waitpid(pid, &status, 0);
  return 100.0 * (c1 - c0) / wall;
}

// Runs the monitor to its end; with scrape_port, fetches its /metrics every second meanwhile
// and reads the CPU its server threads used after the first 3 scrapes (threads started, stacks
// touched) and one second before the end: *server_seconds is the steady-state difference, over
// *steady_scrapes scrapes.
Usage run(std::vector<std::string> args, int scrape_port = 0, size_t* scrapes = nullptr,
          double* server_seconds = nullptr, int seconds = 0, size_t* steady_scrapes = nullptr) {
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
  if (scrape_port != 0) {
    auto start = std::chrono::steady_clock::now(), next = start;
    double warm = -1;
    size_t warm_scrapes = 0;
    bool measured = false;
    while (::wait4(pid, &status, WNOHANG, &ru) == 0) {
      next += std::chrono::seconds(1);
      std::this_thread::sleep_until(next);
      if (next - start >= std::chrono::seconds(seconds - 1) && server_seconds != nullptr && !measured) {
        measured = true;
        *server_seconds = other_threads_cpu_seconds(pid) - warm;
        *steady_scrapes = *scrapes - warm_scrapes;
        continue;  // the last second: no scrape after the measurement
      }
      if (scrape(scrape_port) > 0 && scrapes != nullptr) ++*scrapes;
      if (server_seconds != nullptr && warm < 0 && *scrapes == 3) {
        warm = other_threads_cpu_seconds(pid);
        warm_scrapes = *scrapes;
      }
    }
  } else {
    ::wait4(pid, &status, 0, &ru);
  }
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
  // The whole run, start-up (loading the eBPF programs, about 0.2-0.3 s of CPU) included: the
  // steady state, which the goal is for, is the first row of the crowd table below (N = 0).
  std::printf("live system-wide, 1 s interval, %d s, start-up included: monitor CPU %.1f ms = %.3f%% of one CPU "
              "(steady state: the N = 0 row below, goal <= 0.2%%)\n",
              seconds, live.cpu_seconds * 1e3, live_pct);

  // The exporter on: first unscraped (its threads and the render at each interval), then
  // scraped every second like Prometheus would (the difference is the cost of the scrapes).
  Usage idle = run({pm, "--interval", "1s", "--duration", dur, "--output", "/dev/null", "--prometheus",
                    std::to_string(free_port())});
  std::printf("  with --prometheus, not scraped: monitor CPU %.1f ms = %.3f%% of one CPU (%+.1f ms)\n",
              idle.cpu_seconds * 1e3, 100.0 * idle.cpu_seconds / seconds, (idle.cpu_seconds - live.cpu_seconds) * 1e3);
  int port = free_port();
  size_t scrapes = 0, steady = 0;
  double server = 0;
  Usage prom = run({pm, "--interval", "1s", "--duration", dur, "--output", "/dev/null", "--prometheus",
                    std::to_string(port)},
                   port, &scrapes, &server, seconds, &steady);
  std::printf("  with --prometheus, scraped every 1 s (%zu scrapes): monitor CPU %.1f ms = %.3f%% of one CPU "
              "(%+.1f ms); server threads once warm: %.0f us per scrape (%zu scrapes)\n",
              scrapes, prom.cpu_seconds * 1e3, 100.0 * prom.cpu_seconds / seconds,
              (prom.cpu_seconds - live.cpu_seconds) * 1e3, steady > 0 ? server * 1e6 / static_cast<double>(steady) : 0.0,
              steady);

  // The tree in `run`, at the default 100 ms: the monitor's own threads only (not the tree's
  // CPU, which rusage of the monitor would include), in its steady state.
  int tree_seconds = std::max(seconds, 12);
  auto tree = [&](int n, const char* env) {
    return steady_share({pm, "run", "--interval", "1s", "--output", "/dev/null", "--", workload, "sleepers",
                         std::to_string(n), std::to_string(tree_seconds * 1000)},
                        tree_seconds, 5, env);
  };
  std::printf("run, tree of N live processes at 100 ms (%d s, steady state): monitor CPU, %% of one CPU\n",
              tree_seconds);
  std::printf("  %6s %22s %22s %22s\n", "N", "exact (its cgroup)", "exact (every task)", "sampled (/proc)");
  double exact1 = 0, exact1000 = 0, all1 = 0, all1000 = 0, proc1 = 0, proc1000 = 0;
  for (int n : {1, 10, 100, 1000}) {
    double exact = tree(n, nullptr), all = tree(n, "PERF_MONITOR_TREE_WALK=tasks"),
           sampled = tree(n, "PERF_MONITOR_BPF_ATTACH=raw_tp");
    std::printf("  %6d %21.3f%% %21.3f%% %21.3f%%\n", n, exact, all, sampled);
    if (n == 1) exact1 = exact, all1 = all, proc1 = sampled;
    if (n == 1000) exact1000 = exact, all1000 = all, proc1000 = sampled;
  }
  auto per_process = [](double share1, double share1000) { return (share1000 - share1) / 100.0 * 1e6 / (999 * 10.0); };
  std::printf("  cost per process per pass: exact %.2f us (every task walked: %.2f us), sampled %.2f us "
              "(goal: 1,000 processes <= 2%% of a CPU)\n",
              per_process(exact1, exact1000), per_process(all1, all1000), per_process(proc1, proc1000));

  // Live mode with the top lists (on by default) and without, with 1,000 and 10,000 more
  // processes on the host (sleeping: every one is still read by the task iterator each second):
  // what each process costs, and whether that grows with their number.
  std::printf("live, 1 s interval, with N more processes on the host (%d s, steady state): monitor CPU, %% of one CPU\n",
              tree_seconds);
  std::printf("  %6s %22s %22s %22s\n", "N", "top lists on", "--top 0", "on, task iterator");
  double on0 = 0, iter0 = 0;
  for (int n : {0, 1000, 10000}) {
    pid_t crowd = -1;
    if (n > 0) {
      long before = host_tasks();
      crowd = ::fork();
      if (crowd == 0) {
        ::execl(workload.c_str(), "pm-workload", "sleepers", std::to_string(n).c_str(),
                std::to_string((3 * tree_seconds + 60) * 1000).c_str(), nullptr);
        ::_exit(127);
      }
      // Measured once every one of them is there and asleep (a slow host takes longer than a few
      // seconds to fork 10,000: the monitor would be timed reading newcomers' first rows).
      for (int i = 0; i < 600 && host_tasks() < before + n; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    // (The lists read through the BPF task iterator, as where the kernel cannot load their walk:
    // what the walk saves.)
    auto top_share = [&](const char* top, const char* env = nullptr) {
      return steady_share({pm, "--interval", "1s", "--output", "/dev/null", "--top", top, "--duration",
                           std::to_string(tree_seconds) + "s"},
                          tree_seconds, 4, env);
    };
    double on = top_share("10"), off = top_share("0"), iter = top_share("10", "PERF_MONITOR_TOP_WALK=tasks");
    if (n == 0) {
      on0 = on, iter0 = iter;
      std::printf("  %6d %21.3f%% %21.3f%% %21.3f%%\n", n, on, off, iter);
    } else {
      std::printf("  %6d %21.3f%% %21.3f%% %21.3f%%   per process with the lists: %.2f us a second (goal: flat, <= 2 "
                  "us; task iterator: %.2f us)\n",
                  n, on, off, iter, (on - on0) / 100.0 * 1e6 / n, (iter - iter0) / 100.0 * 1e6 / n);
    }
    if (crowd > 0) {
      ::kill(crowd, SIGKILL);
      ::waitpid(crowd, nullptr, 0);
      // sleepers' children: gone with their parent's group? They are in the crowd's tree; end them.
      std::system("pkill -KILL -f 'pm-workload sleepers' 2>/dev/null");
    }
  }
  return 0;
}
