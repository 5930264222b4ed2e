// SPDX-License-Identifier: Apache-2.0
// One finished call of a probed function (or one request between PERF_MONITOR_REQUEST_BEGIN and
// END) with the kernel's side of it. Spans are events, not samples: sinks write each one, and
// the run summary lists the slowest requests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/profile.h"

namespace pm {

struct Span {
  std::string function;  // "request" for the USDT request spans
  int pid = 0, tid = 0;
  std::optional<uint64_t> request_id;
  bool own_request = false;  // the ID is this span's own (argN, or the request itself), not the
                             // one of a request it ran inside
  WallClock::time_point start;
  double seconds = 0;  // latency
  double on_cpu_seconds = 0, runq_seconds = 0, blocked_seconds = 0;
  uint64_t voluntary_switches = 0, involuntary_switches = 0;
  uint64_t bio_read_bytes = 0, bio_write_bytes = 0;
  uint64_t page_faults = 0;
  // A request followed by thread context (annotate.h's perf_monitor_poll_begin/end): the polls
  // that ran it, on how many threads, its time between polls (not run by any thread), and its
  // blocked time by what the thread waited on. polls == 0 for the other spans.
  uint32_t polls = 0, threads = 0;
  double pending_seconds = 0;
  double blocked_io_seconds = 0, blocked_sleep_seconds = 0, blocked_lock_seconds = 0, blocked_other_seconds = 0;
  // A span of an application that publishes OpenTelemetry thread context (OTEP 4947): the
  // kernel's side of the application's own span, whose trace ID (32 hex digits) it shares and
  // whose span ID (16) is its parent. Empty for the other spans. It also fills threads and the
  // blocked split.
  std::string trace_id, parent_span_id;
  // --stacks=off: the place (its stack, frames outermost first as in StackProfile) where this
  // span's thread spent most of its time off the CPU during it, and how long; filled for the
  // slowest requests of the summary. Empty when not known.
  std::vector<std::string> blocked_stack;
  std::vector<SourceLine> blocked_stack_lines;  // each frame's source line, where DWARF has it
  double blocked_stack_seconds = 0;
};

}  // namespace pm
