// SPDX-License-Identifier: Apache-2.0
// The workloads of bench/context_overhead.sh: what thread context (annotate.h) costs the
// application and the kernel.
//   context_bench pairs N         N perf_monitor_poll_begin/end pairs, then N USDT request pairs
//                                 (PERF_MONITOR_REQUEST_BEGIN/END), then N empty turns: ns each
//   context_bench pingpong N A    N round trips of one byte between two processes pinned to one
//                                 CPU, as perf bench sched pipe (2 blocking switches and 2
//                                 wakeups a trip); A = 1: each side's trip is a poll (it blocks
//                                 inside it); prints usecs/op
//   context_bench rate R S        a thread per CPU, each finishing R requests a second (a poll
//                                 of a few hundred ns each) for S seconds; prints how many
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "perf-monitor/annotate.h"

namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

volatile uint64_t sink;

void pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ::sched_setaffinity(0, sizeof one, &one);
}

int pairs(long n) {
  double t0 = now_s();
  for (long i = 0; i < n; ++i) {
    perf_monitor_poll_begin(static_cast<uint64_t>(i));
    sink = sink + 1;
    perf_monitor_poll_end(1);
  }
  double t1 = now_s();
  for (long i = 0; i < n; ++i) {
    PERF_MONITOR_REQUEST_BEGIN(i);
    sink = sink + 1;
    PERF_MONITOR_REQUEST_END(i);
  }
  double t2 = now_s();
  for (long i = 0; i < n; ++i) sink = sink + 1;
  double t3 = now_s();
  double per = 1e9 / static_cast<double>(n);
  std::printf("context pair %.1f ns\nusdt pair %.1f ns\nempty %.1f ns\n", (t1 - t0) * per, (t2 - t1) * per,
              (t3 - t2) * per);
  return 0;
}

// As perf bench sched pipe: two processes (the second forked) on one CPU.
int pingpong(long n, bool annotate) {
  pin(0);
  int ping[2], pong[2];
  if (::pipe(ping) != 0 || ::pipe(pong) != 0) return 1;
  pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    char c;
    for (long i = 0; i < n; ++i) {
      if (annotate) perf_monitor_poll_begin(static_cast<uint64_t>(i) * 2 + 1);
      if (::read(ping[0], &c, 1) != 1 || ::write(pong[1], &c, 1) != 1) ::_exit(1);
      if (annotate) perf_monitor_poll_end(1);
    }
    ::_exit(0);
  }
  char c = 'x';
  double t0 = now_s();
  for (long i = 0; i < n; ++i) {
    if (annotate) perf_monitor_poll_begin(static_cast<uint64_t>(i) * 2 + 2);
    if (::write(ping[1], &c, 1) != 1 || ::read(pong[0], &c, 1) != 1) return 1;
    if (annotate) perf_monitor_poll_end(1);
  }
  double t1 = now_s();
  int status = 0;
  ::waitpid(child, &status, 0);
  std::printf("%.3f usecs/op\n", (t1 - t0) * 1e6 / static_cast<double>(n));
  return 0;
}

int rate(long per_second, int seconds) {
  unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<long> done{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < cpus; ++t) {
    threads.emplace_back([&, t] {
      pin(static_cast<int>(t));
      double start = now_s(), gap = 1.0 / static_cast<double>(per_second);
      long n = 0, total = per_second * seconds;
      uint64_t base = (static_cast<uint64_t>(t) + 1) << 40;
      while (n < total) {
        // On schedule: as many requests as are due by now.
        long due = std::min(total, static_cast<long>((now_s() - start) / gap) + 1);
        for (; n < due; ++n) {
          perf_monitor_poll_begin(base + static_cast<uint64_t>(n));
          for (int k = 0; k < 50; ++k) sink = sink * 3 + 1;
          perf_monitor_poll_end(1);
        }
        if (n < total) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      done += n;
    });
  }
  for (std::thread& t : threads) t.join();
  std::printf("%ld requests on %u threads\n", done.load(), cpus);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "pairs" && argc == 3) return pairs(std::atol(argv[2]));
  if (mode == "pingpong" && argc == 4) return pingpong(std::atol(argv[2]), std::atoi(argv[3]) != 0);
  if (mode == "rate" && argc == 4) return rate(std::atol(argv[2]), std::atoi(argv[3]));
  std::fprintf(stderr, "usage: context_bench pairs N | pingpong N 0|1 | rate PER_SECOND SECONDS\n");
  return 2;
}
