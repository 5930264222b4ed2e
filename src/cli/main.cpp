// perf-monitor's entry point: parse the command line, then hand over to the session.
#include "cli/monitor.h"
#include "cli/options.h"

int main(int argc, char** argv) {
  pm::Invocation inv = pm::parse_command_line(argc, argv);
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
  return pm::run_monitor(inv.config, inv.target);
}
