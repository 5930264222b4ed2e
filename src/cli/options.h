// SPDX-License-Identifier: Apache-2.0
// The command line: subcommands, flags and the configuration file, merged into a Config.
#pragma once

#include <string>

#include "session/target.h"
#include "core/config.h"
#include "report/report_command.h"
#include "sources/counters/event_catalogue.h"

namespace pm {

struct Invocation {
  enum class Kind { kMonitor, kList, kReport, kDone } kind = Kind::kMonitor;
  Config config;
  TargetSpec target;
  // The counter events (-e/--events, else the file's [pmc] events), parsed once here so a typo is
  // a usage error before anything starts; a set (two spellings of one event are one). Empty: the
  // default set.
  std::vector<counters::EventSpec> events;
  report::ReportOptions report;
  int exit_code = 0;  // kDone: --help or --version was printed, or a usage error
};

// Parses argv; prints help, version and usage errors itself (usage errors exit 2).
Invocation parse_command_line(int argc, char** argv);

}  // namespace pm
