// SPDX-License-Identifier: Apache-2.0
// Cost of the Prometheus export, on the metrics of this host (the sources of the live monitor:
// /proc files, software counters on every CPU, and the eBPF scheduler and block I/O sources
// where they load):
//  - PrometheusRender: rendering one interval's exposition, the work the event loop does at
//    every interval close (bytes: the size of the text).
//  - PrometheusScrape: one GET /metrics served by the real exporter thread over loopback,
//    measured from the client: connect, request, the whole body, close.
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "scrape_client.h"

#include "core/aggregator.h"
#include "sinks/prometheus.h"
#include "sources/counters/counters_source.h"
#include "sources/files/system_sources.h"
#include "sources/kernel/block_source.h"
#include "sources/kernel/scheduler_source.h"

namespace {

// The sources of the live monitor, read twice a second apart, give a realistic record.
struct Fixture {
  pm::Aggregator agg;
  std::vector<std::unique_ptr<pm::Source>> sources;
  pm::IntervalRecord rec;
  pm::SessionStatus status;

  Fixture() {
    pm::FsRoots roots;
    auto keep = [&](const char* name, auto made) {
      if (!made) {
        status.unavailable.push_back({name, made.error().message});
        return;
      }
      for (const auto& r : (*made)->ratios()) agg.add_ratio(r);
      sources.push_back(std::move(*made));
      status.running.emplace_back(name);
    };
    keep("cpu", pm::make_cpu_source(roots));
    keep("memory", pm::make_memory_source(roots));
    keep("pressure", pm::make_pressure_source(roots));
    keep("numa", pm::make_numa_source(roots));
    keep("scheduler", pm::make_scheduler_source());
    keep("block_io", pm::make_block_source({}));
    pm::counters::Catalogue catalogue;
    std::vector<pm::counters::EventSpec> specs;
    for (const auto& n : pm::counters::default_event_names(catalogue)) {
      if (auto s = catalogue.parse(n)) specs.push_back(std::move(*s));
    }
    keep("pmc", pm::counters::make_counters_source(specs, {}));
    status.mode = "system";
    auto now = pm::MonoClock::now();
    for (int i = 0; i < 2; ++i) {
      pm::Samples samples;
      for (auto& s : sources) s->collect(samples);
      now += std::chrono::seconds(1);
      agg.observe(samples, now);
      rec = agg.close_interval(now);
      if (i == 0) ::usleep(200'000);
    }
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void PrometheusRender(benchmark::State& state) {
  Fixture& f = fixture();
  std::string out;
  for (auto _ : state) {
    out.clear();
    pm::render_exposition(out, &f.rec, f.status, 0);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
  state.counters["series"] = static_cast<double>(f.rec.values.size());
}
BENCHMARK(PrometheusRender)->Unit(benchmark::kMicrosecond);

using pm::bench::free_port;
using pm::bench::get_metrics;

void PrometheusScrape(benchmark::State& state) {
  Fixture& f = fixture();
  auto addr = pm::parse_listen_address(std::to_string(free_port()));
  auto sink = pm::PrometheusSink::bind(*addr);
  if (!sink) {
    state.SkipWithError(sink.error().message.c_str());
    return;
  }
  (*sink)->session(f.status);
  if (auto st = (*sink)->serve(); !st) {
    state.SkipWithError(st.error().message.c_str());
    return;
  }
  (*sink)->interval(f.rec);
  std::string buf;
  ssize_t bytes = 0;
  for (auto _ : state) {
    bytes = get_metrics(addr->port, buf);
    if (bytes <= 0) {
      state.SkipWithError("scrape failed");
      break;
    }
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(PrometheusScrape)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
