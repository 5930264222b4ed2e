// SPDX-License-Identifier: Apache-2.0
// Cost of one sampling pass, measured on the real /proc:
//  - ProcessTreeCollect/N: walking and reading a tree of N processes (each holding 8 MiB), the
//    work done every 100 ms in `run`; reported per process.
//  - SystemTick: reading the system-wide files, aggregating and formatting one JSON interval,
//    the work done every second in live mode.
//  - CounterTick/M: reading M perf counters on every CPU (one group read per CPU).
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/aggregator.h"
#include "core/file_reader.h"
#include "sinks/sink.h"
#include "sources/counters/counter_group.h"
#include "sources/counters/counters_source.h"
#include "sources/tree/proc_tree.h"
#include "sources/files/system_sources.h"

namespace {

// A tree of n processes: a parent and n-1 children, each with 8 MiB touched, all paused.
pid_t spawn_tree(int n) {
  pid_t root = ::fork();
  if (root == 0) {
    ::setpgid(0, 0);  // a group of its own, so the whole tree can be killed at once
    auto hold = [] {
      size_t len = 8 << 20;
      auto* p = static_cast<char*>(::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      for (size_t i = 0; i < len; i += 4096) p[i] = 1;
    };
    for (int i = 1; i < n; ++i) {
      if (::fork() == 0) {
        hold();
        ::pause();
        ::_exit(0);
      }
    }
    hold();
    ::pause();
    ::_exit(0);
  }
  return root;
}

void ProcessTreeCollect(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  pid_t root = spawn_tree(n);
  pm::ProcTree tree;
  tree.add_root(root);
  pm::Samples samples;
  // Every process forked (a slow host takes seconds for 50), at most 30 s.
  for (int i = 0; i < 300; ++i) {
    samples.clear();
    tree.collect(samples);
    if (tree.live() == static_cast<size_t>(n)) break;
    ::usleep(100'000);
  }
  ::usleep(200'000);  // and they have touched their memory
  if (tree.live() != static_cast<size_t>(n)) state.SkipWithError("tree did not start");
  for (auto _ : state) {
    samples.clear();
    tree.collect(samples);
    benchmark::DoNotOptimize(samples.data());
  }
  state.counters["processes"] = static_cast<double>(tree.live());
  // Time per process read: iterations * n processes, inverted into seconds per process.
  state.counters["per_process"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  ::kill(-root, SIGKILL);
  ::waitpid(root, nullptr, 0);
}
BENCHMARK(ProcessTreeCollect)->Arg(1)->Arg(10)->Arg(50)->Unit(benchmark::kMicrosecond)->UseRealTime();

void SystemTick(benchmark::State& state) {
  pm::FsRoots roots;
  std::vector<std::unique_ptr<pm::Source>> sources;
  pm::Aggregator agg;
  for (auto make : {pm::make_cpu_source, pm::make_memory_source, pm::make_pressure_source, pm::make_numa_source}) {
    if (auto s = make(roots)) {
      for (const auto& r : (*s)->ratios()) agg.add_ratio(r);
      sources.push_back(std::move(*s));
    }
  }
  auto null = pm::Output::open("/dev/null");
  auto sink = pm::make_json_sink(*null);
  pm::Samples samples;
  auto now = pm::MonoClock::now();
  for (auto _ : state) {
    samples.clear();
    for (auto& s : sources) s->collect(samples);
    now += std::chrono::seconds(1);
    agg.observe(samples, now);
    sink->interval(agg.close_interval(now));
  }
  state.counters["samples"] = static_cast<double>(samples.size());
}
BENCHMARK(SystemTick)->Unit(benchmark::kMicrosecond);

}  // namespace

// One counters tick: a group read per CPU (system-wide, every online CPU) of M software events,
// turned into samples. Reported per tick and per counter (CPUs x events).
void CounterTick(benchmark::State& state) {
  static const char* kEvents[] = {"task-clock",   "context-switches", "cpu-migrations", "page-faults",
                                  "minor-faults", "major-faults",     "cpu-clock",      "alignment-faults"};
  std::vector<pm::counters::EventSpec> specs;
  pm::counters::Catalogue catalogue;
  for (int64_t i = 0; i < state.range(0); ++i) specs.push_back(*catalogue.parse(kEvents[i]));
  auto src = pm::counters::make_counters_source(specs, {});
  if (!src) {
    state.SkipWithError(src.error().message.c_str());
    return;
  }
  pm::Samples samples;
  for (auto _ : state) {
    samples.clear();
    (*src)->collect(samples);
    benchmark::DoNotOptimize(samples.data());
  }
  double counters = static_cast<double>(pm::online_cpus().size() * specs.size());
  state.counters["cpus"] = static_cast<double>(pm::online_cpus().size());
  state.counters["events"] = static_cast<double>(specs.size());
  state.counters["per_counter"] =
      benchmark::Counter(counters, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(CounterTick)->Arg(1)->Arg(6)->Arg(8)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
