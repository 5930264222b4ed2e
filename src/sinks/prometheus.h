// SPDX-License-Identifier: Apache-2.0
// Prometheus export. At each interval close the sink renders the text exposition format in the
// event loop's thread (tens of microseconds) and publishes it; an HTTP server thread of its own
// serves the latest text to scrapers. So a scrape never waits for sampling, and a slow, silent
// or broken client never delays a tick: the only thing the two threads share is a pointer to
// the latest text, swapped under a mutex.
//
// Naming (docs/metrics.md): perf_monitor_<family>_<name>, in base units, counters end in
// _total, percentages become ratios (_ratio, 0..1); log2 histograms become Prometheus
// histograms with cumulative `le` buckets. Counters and histograms are exported as running
// totals since the monitor started (IntervalValue::total), never as the interval's increase.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/listen_address.h"
#include "sinks/sink.h"

namespace pm {

// What the session says about itself, exported as perf-monitor's self metrics. Counts are
// running totals kept by the session (never reset).
struct SessionStatus {
  std::string mode;                      // "system", "run", "attach" or "cgroup"
  std::vector<std::string> running;      // sources that started
  std::vector<Unavailable> unavailable;  // sources (and counter events) that could not, and why
  uint64_t missed_ticks = 0;             // timer expirations the loop served late
  uint64_t samples = 0;                  // samples read from the sources
  // The proc connector (run/attach, where it opened): notifications read, and dropped by the kernel.
  std::optional<uint64_t> proc_events, proc_event_overruns;
  // Pushed exports (--remote-write, --otlp), by what they carry ("remote_write", "otlp_spans",
  // "otlp_metrics"): items sent, refused by the receiver, dropped (queue full); requests,
  // retries, bytes sent.
  struct Export {
    std::string exporter;
    uint64_t sent = 0, refused = 0, dropped = 0, requests = 0, retries = 0, bytes = 0;
  };
  std::vector<Export> exports;
};

// The Prometheus name of a metric, e.g. perf_monitor_scheduler_context_switches_total.
std::string prometheus_name(const MetricDesc& d);

// Appends one interval's exposition (every metric but the derived ratios, which PromQL computes
// from the counters) and the session's self metrics. `render_seconds`: how long the previous
// render took, exported as perf_monitor_self_render_duration_seconds.
void render_exposition(std::string& out, const IntervalRecord* rec, const SessionStatus& status,
                       double render_seconds);

// What an exposition is made of, in order: each metric's header, then its samples (a
// histogram's as its _bucket series, each with its `le` as the extra label, _sum and _count).
class ExpositionWriter {
 public:
  virtual ~ExpositionWriter() = default;
  virtual void header(std::string_view name, std::string_view help, std::string_view type) = 0;
  virtual void sample(std::string_view name, std::string_view suffix, const Labels& labels, double value,
                      std::string_view extra_key, std::string_view extra_value) = 0;
};
// The exposition of render_exposition, to any writer (remote write sends the same series).
void write_exposition(ExpositionWriter& out, const IntervalRecord* rec, const SessionStatus& status,
                      double render_seconds);
// A metric or label name as Prometheus takes it: every byte outside [a-zA-Z0-9_] becomes '_'.
void append_name(std::string& out, std::string_view s);

// Appends what only the server thread knows, at each scrape: scrapes served (this one
// included), and how long the previous one took from request to last byte written.
void render_scrape_self(std::string& out, uint64_t scrapes, double last_scrape_seconds);

class PrometheusSink : public Sink {
 public:
  // Binds the listening socket now, so a busy port or an address that is not this host's is
  // reported (one line, exit 2) before monitoring starts. Serves nothing until serve().
  static Result<std::unique_ptr<PrometheusSink>> bind(const ListenAddress& addr);

  // Starts the server thread (its threads block every signal: they stay with the event loop).
  // Call it after `run` has forked the command: a fork copies only the calling thread, and a
  // lock another thread held at that moment would stay held in the child.
  virtual Status serve() = 0;
  // The session's self metrics for the next render.
  virtual void session(const SessionStatus& status) = 0;
  [[nodiscard]] virtual const ListenAddress& address() const = 0;
};

}  // namespace pm
