// SPDX-License-Identifier: Apache-2.0
// A monitoring session: the live system-wide monitor, `run` and `attach`. The wiring alone: the
// target (session/target.h) says what is watched and when it ends, the registry
// (session/registry.h) which sources there are; the session reads them at their rhythms into the
// aggregator, hands the records to the sinks, and turns the end into an exit status.
#pragma once

#include <span>

#include "core/config.h"
#include "session/target.h"
#include "sources/counters/event_catalogue.h"

namespace pm {

// Runs the session to its end and returns perf-monitor's exit status: in `run` the command's,
// 126/127 when it could not be executed; 1 when the report could not be written; 2 for usage
// errors found late (an --output that cannot be written, a busy --prometheus port). `events`: the
// counter events as the command line parsed them (empty: the default set).
int run_session(const Config& config, const TargetSpec& target, std::span<const counters::EventSpec> events);

// `perf-monitor list`: every source and counter event, and whether it works on this host.
int list_sources(const Config& config, std::span<const counters::EventSpec> events);

}  // namespace pm
