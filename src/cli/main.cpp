// SPDX-License-Identifier: Apache-2.0
// perf-monitor's entry point: parse the command line, then hand over to the session.
#include <exception>

#include "cli/options.h"
#include "core/output.h"
#include "session/session.h"

int main(int argc, char** argv) {
  // First of all: a signal from now on waits for the session (no Ctrl-C can lose the summary),
  // and descriptors 0-2 stay taken (a closed stdout must not become some socket's number).
  pm::block_session_signals();
  pm::guard_standard_fds();
  try {
    pm::Invocation inv = pm::parse_command_line(argc, argv);
    if (inv.kind != pm::Invocation::Kind::kMonitor) pm::unblock_session_signals();
    switch (inv.kind) {
      case pm::Invocation::Kind::kDone:
        return inv.exit_code;
      case pm::Invocation::Kind::kList:
        return pm::list_sources(inv.config);
      case pm::Invocation::Kind::kReport:
        return pm::report::run_report(inv.report);
      case pm::Invocation::Kind::kMonitor:
        break;
    }
    return pm::run_session(inv.config, inv.target);
  } catch (const std::exception& e) {
    // A write that failed inside a library (--help to a full disk, say): one line, exit 1.
    pm::say(e.what());
    return pm::kExitFailure;
  }
}
