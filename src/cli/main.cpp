// SPDX-License-Identifier: Apache-2.0
// perf-monitor's entry point: parse the command line, then hand over to the session.
#include <exception>

#include "cli/options.h"
#include "core/output.h"
#include "session/session.h"

namespace {

// The first of perf-monitor's code to run, before constructors and main: from here on a signal
// waits for the session (no Ctrl-C can lose the summary).
void block_signals_first(int /*argc*/, char** /*argv*/, char** /*envp*/) { pm::block_session_signals(); }
__attribute__((section(".preinit_array"), used)) void (*const preinit)(int, char**, char**) = block_signals_first;

}  // namespace

int main(int argc, char** argv) {
  // Descriptors 0-2 stay taken: a closed stdout must not become some socket's number.
  pm::guard_standard_fds();
  try {
    pm::Invocation inv = pm::parse_command_line(argc, argv);
    if (inv.kind != pm::Invocation::Kind::kMonitor) pm::unblock_session_signals();
    switch (inv.kind) {
      case pm::Invocation::Kind::kDone:
        return inv.exit_code;
      case pm::Invocation::Kind::kList:
        return pm::list_sources(inv.config, inv.events);
      case pm::Invocation::Kind::kReport:
        return pm::report::run_report(inv.report);
      case pm::Invocation::Kind::kMonitor:
        break;
    }
    return pm::run_session(inv.config, inv.target, inv.events);
  } catch (const std::exception& e) {
    // A write that failed inside a library (--help to a full disk, say): one line, exit 1.
    pm::say(e.what());
    return pm::kExitFailure;
  }
}
