// SPDX-License-Identifier: Apache-2.0
// What every source implements. A source is created by a factory that returns an error saying why
// it cannot run on this host; once created it only reports samples.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/metric.h"
#include "core/profile.h"
#include "core/span.h"

namespace pm {
struct IntervalRecord;
}

namespace pm {

// A source that could not start, with the reason shown to the user once.
// `detail`: said in full at start (a figure read another way, something the user asked for by
// name); the rest are named on one line, and `perf-monitor list` says why.
struct Unavailable {
  std::string source;
  std::string reason;
  bool detail = false;
};

// What sources add to the run's summary at its end.
struct EndReport {
  std::vector<Unavailable> unavailable;  // figures that turned out not to be read, and why
  std::vector<Span> slowest_requests;    // probes: the slowest calls with their own request ID
  uint64_t notifications_lost = 0;       // events the kernel dropped before perf-monitor read them
  std::shared_ptr<const StackProfile> stacks;  // stacks: the run's on-CPU and off-CPU stacks
};

class Source {
 public:
  virtual ~Source() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Appends the current running totals and values. A transient failure (a file that vanished)
  // leaves out the affected samples; it is not an error.
  virtual void collect(Samples& out) = 0;
  // Derived ratios this source's metrics support (cpu utilisation, ...).
  [[nodiscard]] virtual std::vector<RatioRule> ratios() const { return {}; }

  // Sources that also react to events: an fd the event loop watches (readable when something
  // waits), and what to do then (a bounded amount of work: the loop has other things to do).
  [[nodiscard]] virtual int wake_fd() const { return -1; }
  virtual void on_wake() {}
  // Sources that produce spans (finished calls) hand them to this as they come.
  virtual void on_span(std::function<void(const Span&)> /*handler*/) {}
  // Sources that follow the spans the others produce (stacks: where a request blocked) see each
  // as it is handed on.
  [[nodiscard]] virtual bool sees_spans() const { return false; }
  virtual void see_span(const Span& /*span*/) {}
  // Once, before the last reading: stop producing, hand on what is left.
  virtual void finish() {}
  virtual void report(EndReport& /*r*/) const {}
  // Adds what the source knows of the interval that is not a metric (the top lists) to the
  // interval's record, once it is closed.
  virtual void annotate(IntervalRecord& /*rec*/) {}
};

}  // namespace pm
