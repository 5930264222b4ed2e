// SPDX-License-Identifier: Apache-2.0
// Sinks format what the aggregator derived; they do not know which source a metric came from.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/aggregator.h"
#include "core/config.h"
#include "core/output.h"
#include "core/host.h"
#include "core/source.h"
#include "core/run_info.h"
#include "core/span.h"

namespace pm {

class Sink {
 public:
  // Once, before anything else: where and what is monitored (JSON: the header record).
  virtual void header(const RunHeader& /*header*/) {}
  virtual ~Sink() = default;
  // The sources that could not start, once, before the first interval.
  virtual void unavailable(const std::vector<Unavailable>& list) = 0;
  virtual void interval(const IntervalRecord& rec) = 0;
  // A finished call of a probed function, or a request (as it arrives, between intervals).
  virtual void span(const Span& /*span*/) {}
  virtual void summary(const SummaryRecord& rec, const RunInfo& info, const std::vector<Unavailable>& list) = 0;
  // A sink that takes input (the interactive view's keyboard): the fd the session's event loop
  // watches once header() was called (-1: none), and what to do when it is readable; false ends
  // monitoring as Ctrl-C does. One loop, no thread of its own.
  [[nodiscard]] virtual int input_fd() const { return -1; }
  virtual bool on_input() { return true; }
  // The terminal changed size (SIGWINCH, read by the session like every signal).
  virtual void on_resize() {}
};

// What the report's formats print besides the summary.
struct SinkOptions {
  // Interval blocks or records: always in live mode; in run and attach only when asked for
  // (--interval or the file's interval), as perf stat prints intervals only with -I.
  bool intervals = true;
  // -q/--quiet: nothing on standard error about what is not available here.
  bool quiet = false;
};

// The report's formats; every write goes through `out`, which records a failure (the session
// checks it).
std::unique_ptr<Sink> make_text_sink(Output& out, const SinkOptions& opts = {});
std::unique_ptr<Sink> make_json_sink(Output& out, const SinkOptions& opts = {});
// `perf-monitor top` on a terminal: the full-screen view (ncurses) on standard output, keys from
// standard input. It owns the terminal from header() until summary() or its destruction, and
// restores it then (q, Ctrl-C and SIGTERM all end through summary()).
std::unique_ptr<Sink> make_top_view_sink(const Config& config);
// Whether `perf-monitor top` can show its view here: standard input and output are a terminal
// whose type is known. Else it prints text.
bool top_view_possible();
// Passes everything to each sink in turn: the chosen output, and Prometheus beside it.
std::unique_ptr<Sink> make_fanout_sink(std::vector<std::unique_ptr<Sink>> sinks);

}  // namespace pm
