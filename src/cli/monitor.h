// SPDX-License-Identifier: Apache-2.0
// A monitoring session: the live system-wide monitor, `run` and `attach`. Wires the sources, the
// aggregator and a sink to the event loop, and turns the target's end into an exit status.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace pm {

enum class Mode { kSystem, kRun, kAttach };

struct Target {
  Mode mode = Mode::kSystem;
  std::vector<std::string> command;  // run
  int pid = 0;                       // attach
};

// Exit statuses besides the command's own.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

// Runs the session to its end and returns the exit status for perf-monitor.
int run_monitor(const Config& config, const Target& target);

// `perf-monitor list`: every source and metric family, and whether it works on this host.
int list_sources(const Config& config);

}  // namespace pm
