// SPDX-License-Identifier: Apache-2.0
// The `report` subcommand: its flags (added to perf-monitor's command line by options.cpp) and
// what it does.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pm::report {

struct ReportOptions {
  std::vector<std::string> files;  // the run (report), or the new runs (after -- with --compare)
  std::vector<std::string> base;   // --compare: the base runs
  std::string output;              // -o; "-" is standard output
  std::string format;              // html, text or json ("" = html for a report, text for --compare)
  double alpha = 0.05;
  std::string correction = "bh";
  double min_effect = 0;
  std::vector<std::string> fail_on, higher_is_better, figures;
  bool all = false;  // --compare --all: every figure, the unchanged ones too
};

// Exit statuses of `report --compare`, beside 0 (done), 1 (failure) and 2 (usage, bad input).
inline constexpr int kExitRegression = 3;  // a --fail-on figure is significantly worse

// Adds the subcommand to app; its values land in opts when it is parsed.
CLI::App* add_report_command(CLI::App& app, ReportOptions& opts);

// Runs a parsed `report`; returns the exit status.
int run_report(const ReportOptions& opts);

}  // namespace pm::report
