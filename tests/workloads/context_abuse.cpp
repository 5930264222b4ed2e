// SPDX-License-Identifier: Apache-2.0
// A process that publishes thread context and then writes its record as a hostile user would:
//   pm-context-abuse MODE MS
// Each of 4 threads announces a record (its first perf_monitor_poll_begin), then for MS ms
// switches often (1 µs sleeps) while its record says, by MODE:
//   capacity   a log of 2^30 entries (perf-monitor must refuse to read it)
//   head       a head that jumps by random amounts, forwards and back, and garbage entries
//   ids        polls each with a new request ID that never finishes (open requests pile up)
//   unmap      its record's pages unmapped (every read of them fails)
// perf-monitor must go on, bounded, and say what it could not read.
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "perf-monitor/annotate.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: pm-context-abuse capacity|head|ids|unmap MS\n");
    return 2;
  }
  std::string mode = argv[1];
  long ms = std::atol(argv[2]);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      perf_monitor_poll_begin(static_cast<uint64_t>(t) + 1);  // the record, announced
      perf_monitor_poll_end(1);
      perf_monitor_context* c = perf_monitor_thread_context;
      if (c == nullptr) std::exit(1);
      std::mt19937_64 rng(static_cast<uint64_t>(t) * 7919 + 1);
      if (mode == "capacity") c->capacity = 1u << 30;
      if (mode == "unmap") {
        size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        ::munmap(c, (sizeof(perf_monitor_context) + page - 1) / page * page);
      }
      auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
      uint64_t id = static_cast<uint64_t>(t) << 40;
      while (std::chrono::steady_clock::now() < until) {
        if (mode == "head") {
          c->active = 1;
          c->head = rng();
          c->id = rng();
          for (int i = 0; i < 8; ++i) std::memset(&c->log[rng() % PERF_MONITOR_CONTEXT_LOG], 0xa5, 32);
        } else if (mode == "ids") {
          perf_monitor_poll_begin(++id);
          perf_monitor_poll_end(0);  // never finished
          perf_monitor_poll_begin(++id);
        }
        timespec ts{0, 1000};
        ::nanosleep(&ts, nullptr);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::printf("pm-context-abuse: done\n");
  return 0;
}
