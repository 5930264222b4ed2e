// SPDX-License-Identifier: Apache-2.0
// What is said about a monitored target besides its metrics: at the start (the header) and at
// the end (the summary). The session fills them, the sinks print them: both layers see them here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/host.h"
#include "core/metric.h"
#include "core/source.h"
#include "core/span.h"

namespace pm {

// What the run summary says about the monitored target, besides its metrics.
struct RunInfo {
  std::string mode;                  // "system", "run", "attach" or "cgroup"
  std::vector<std::string> command;  // run
  int pid = 0;                       // run and attach
  std::optional<int> exit_code;      // run: the command's status (128+signal when killed)
  std::optional<int> signal;         // run: the signal that killed the command
  std::string end_reason;            // "exited", "interrupted", "duration"
  uint64_t missed_ticks = 0;         // timer expirations the loop served late
  uint64_t proc_event_overruns = 0;  // fork/exit notifications the kernel dropped
  std::vector<Span> slowest_requests;  // probes: the slowest spans with their own request ID
  std::shared_ptr<const StackProfile> stacks;  // --stacks: where the target ran and waited
};

// What is known when monitoring starts: the machine, the target, the rhythm.
struct RunHeader {
  std::string mode;                  // "system", "run", "attach" or "cgroup"
  std::vector<std::string> command;  // run
  int pid = 0;                       // run (once started) and attach
  HostInfo host;
  double interval_s = 0;
  WallClock::time_point start;
  std::vector<Unavailable> unavailable;  // the sources that could not start
  // The metrics known at the start (the first reading's, and the ratios the core derives), in
  // their sources' order: JSON describes them in the header (a metric that appears later is
  // described in a "metrics" record before the first record that holds it).
  std::vector<const MetricDesc*> metrics;
};

}  // namespace pm
