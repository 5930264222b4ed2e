// SPDX-License-Identifier: Apache-2.0
// The command line as a user meets it: help, version, list, and every kind of bad input gives one
// clear line and the documented exit status.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = scratch_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Cli, HelpHasExamples) {
  Outcome o = run_pm({"--help"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("Examples:"), std::string::npos);
  EXPECT_NE(o.out.find("perf-monitor run -- "), std::string::npos);
  Outcome r = run_pm({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("command"), std::string::npos);
}

TEST(Cli, Version) {
  Outcome o = run_pm({"--version"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out.rfind("perf-monitor ", 0), 0u) << o.out;
}

TEST(Cli, ListSaysWhatIsAvailableAndWhyNot) {
  Outcome o = run_pm({"list"});
  EXPECT_EQ(o.exit_code, 0);
  for (const char* s : {"cpu", "memory", "pressure", "numa", "thermal", "process_tree", "pmc"}) {
    EXPECT_NE(o.out.find(s), std::string::npos) << s;
  }
  struct stat st {};
  if (::stat("/sys/class/thermal/thermal_zone0", &st) != 0) {
    EXPECT_NE(o.out.find("no thermal zones"), std::string::npos) << o.out;
  }
}

// `list --format json` is one JSON document with every source and event; `-o FILE` writes it there.
TEST(Cli, ListWritesJsonAndToAFile) {
  Outcome text = run_pm({"list"});
  Outcome o = run_pm({"list", "--format", "json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto j = nlohmann::json::parse(o.out);
  ASSERT_TRUE(j["sources"].is_array() && j["events"].is_array()) << o.out;
  std::set<std::string> names;
  for (const auto& s : j["sources"]) {
    names.insert(s["name"].get<std::string>());
    EXPECT_TRUE(s["status"] == "available" || s["status"] == "unavailable" || s["status"] == "not needed" ||
                s["status"] == "disabled")
        << s.dump();
    // The same verdict as the text.
    std::string name = s["name"].get<std::string>();
    std::string row = name + std::string(name.size() < 14 ? 14 - name.size() : 0, ' ') + " " + s["status"].get<std::string>();
    EXPECT_NE(text.out.find(row), std::string::npos) << row << "\n" << text.out;
  }
  for (const char* s : {"cpu", "memory", "process_tree", "pmc", "probe"}) EXPECT_EQ(names.count(s), 1u) << s;
  size_t events_in_text = 0;
  for (const auto& e : j["events"]) events_in_text += text.out.find(e["name"].get<std::string>()) != std::string::npos;
  EXPECT_EQ(events_in_text, j["events"].size());
  // Events that fail for one reason are listed under it: each reason is said once.
  std::string events_text = text.out.substr(text.out.find("\nEVENT"));
  std::set<std::string> reasons;
  for (const auto& e : j["events"]) {
    if (e["status"] == "unavailable") reasons.insert(e["reason"].get<std::string>());
  }
  for (const std::string& r : reasons) {
    size_t n = 0;
    for (size_t at = events_text.find(r); at != std::string::npos; at = events_text.find(r, at + 1)) ++n;
    EXPECT_EQ(n, 1u) << r << "\n" << events_text;
  }

  std::string path = testing::TempDir() + "pm-list.json";
  ::unlink(path.c_str());
  Outcome f = run_pm({"list", "-f", "json", "-o", path});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(f.out, "");
  EXPECT_EQ(nlohmann::json::parse(slurp(path))["sources"].size(), j["sources"].size());
  ::unlink(path.c_str());
}

// Every metric a source reads is laid out by that source in the text (none falls to the generic
// "name=value" line), every figure a layout shows was read (no "n/a" where everything can be
// read), and a section label appears once per block.
std::vector<std::string> text_problems(const std::string& text) {
  std::vector<std::string> problems;
  std::regex generic(R"( [a-z0-9_]+(\{[^}]*\})?=)");
  std::set<std::string> labels;
  std::set<std::string> cgroups_before, cgroups_now;  // the cgroup table's rows, by block
  bool in_cgroups = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("perf-monitor: ")) continue;  // its own messages, beside run's report on stderr
    if (line.rfind("--- ", 0) == 0 || line.rfind("=== ", 0) == 0) {
      labels.clear();  // a new block
      if (!cgroups_now.empty()) cgroups_before = std::move(cgroups_now);
      cgroups_now.clear();
      in_cgroups = false;
      continue;
    }
    // (A row of the process table ends in the process's command line, another test's perf-monitor
    // with its flags, say: its "name=" is the command's, not a figure's.)
    static const std::regex process_row(R"(^ +[0-9]+( +[0-9]+)? +[^ ]+ +[A-Za-z] )");
    if (!std::regex_search(line, process_row) && std::regex_search(line, generic)) {
      problems.push_back("laid out by no source: " + line);
    }
    // A process that ended in the interval (state X in the top table: PID [TID] USER X) has no
    // user, nice or RSS left to read, nor has a cgroup removed in it (x) files; a cgroup in its
    // first interval (another test's) has no cpu.stat reading to count from.
    static const std::regex exited_row(R"(^ +[0-9]+( +[0-9]+)? +[^ ]+ +X )");
    static const std::regex removed_cgroup(R"( x /[^ ]*$)");  // a cgroup row: state, path
    std::string cgroup = in_cgroups && line.rfind(' ') != std::string::npos ? line.substr(line.rfind(' ') + 1) : "";
    if (in_cgroups) cgroups_now.insert(cgroup);
    bool first_interval = in_cgroups && cgroup != "/" && cgroups_before.count(cgroup) == 0;
    bool gone = std::regex_search(line, exited_row) || (in_cgroups && std::regex_search(line, removed_cgroup));
    if (line.find("n/a") != std::string::npos && !gone && !first_interval) {
      problems.push_back("not read: " + line);
    }
    if (line.find("cgroups by ") != std::string::npos) in_cgroups = true;
    if (!line.empty() && line[0] != ' ') in_cgroups = false;
    if (line.empty() || line[0] == ' ' || line.rfind("not available", 0) == 0 || line.rfind("note", 0) == 0 ||
        line.rfind("system over", 0) == 0 || line.rfind("command", 0) == 0 || line.rfind("system ", 0) == 0) {
      continue;
    }
    std::string label = line.substr(0, line.find(' '));
    if (!labels.insert(label).second) problems.push_back("section " + label + " twice in a block: " + line);
  }
  return problems;
}

TEST(Cli, TextShowsEveryMetricEachSourceReadsOnce) {
  Outcome live = run_pm({"--interval", "500ms", "--duration", "1200ms"});
  EXPECT_EQ(live.exit_code, 0) << live.err;
  EXPECT_NE(live.out.find("\nsched    switches "), std::string::npos) << live.out;
  EXPECT_EQ(text_problems(live.out), std::vector<std::string>{}) << live.out;
  Outcome run = run_pm({"run", "--interval", "200ms", "--", workload(), "cputime", "500"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.report.find("\ntree     "), std::string::npos) << run.report;
  if (::geteuid() == 0) {  // other users' /proc/PID/io and smaps_rollup are not readable: n/a, rightly
    EXPECT_EQ(text_problems(run.report), std::vector<std::string>{}) << run.report;
  }
}

// One quantity once, in one unit style: where the tree has the kernel's exact figure, perf's
// count of the same thing is not printed beside it; time per second is never "s/s"; no "-0.0".
TEST(Cli, RunShowsEachQuantityOnceInOneUnitStyle) {
  Outcome run = run_pm({"run", "--interval", "200ms", "--", workload(), "cputime", "500"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string& t = run.report;
  ASSERT_NE(t.find("\ntree     "), std::string::npos) << t;
  for (const char* twice : {"context switches", "page faults", "minor faults", "CPUs busy", " s/s", "ms/s", "us/s",
                            "-0.0", "at most n/a", "1 processes"}) {
    EXPECT_EQ(t.find(twice), std::string::npos) << "'" << twice << "' in:\n" << t;
  }
  EXPECT_NE(t.find(" tasks  blocked "), std::string::npos) << t;  // run queue X tasks  blocked Y tasks
  EXPECT_NE(t.find("bios     submitted by its tasks: "), std::string::npos) << t;
}

TEST(Cli, UnknownFlagIsAUsageError) {
  Outcome o = run_pm({"--bogus"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("--bogus"), std::string::npos) << o.err;
}

// What was typed wrong, said in words, with what was probably meant: one line, exit 2 each.
TEST(Cli, MistypedFlagsSubcommandsAndValuesSayWhatWasMeant) {
  struct Case {
    std::vector<std::string> args;
    std::string said;
  };
  const std::vector<Case> cases = {
      {{"--intervall", "1s"}, "unknown flag --intervall (did you mean --interval?)"},
      {{"run", "--probes", "x:y", "--", "true"}, "unknown flag --probes for run (did you mean --probe?)"},
      {{"runn", "--", "true"}, "unknown subcommand 'runn' (did you mean 'run'?)"},
      {{"lsit"}, "unknown subcommand 'lsit' (did you mean 'list'?)"},
      {{"list", "--pid", "1"}, "--pid does not apply to `perf-monitor list`: it is a flag of `perf-monitor attach`"},
      // Each subcommand takes only its own flags, and says where one belongs.
      {{"list", "--duration", "1s"},
       "--duration does not apply to `perf-monitor list`: it is a flag of live mode, `perf-monitor run`, "
       "`perf-monitor attach` and `perf-monitor top`"},
      {{"list", "--top", "3"}, "--top does not apply to `perf-monitor list`: it is a flag of live mode and `perf-monitor top`"},
      {{"run", "--sort", "io", "--", "true"}, "--sort does not apply to `perf-monitor run`: it is a flag of live mode and"},
      {{"top", "--probe", "x:y"}, "--probe does not apply to `perf-monitor top`: it is a flag of live mode,"},
      {{"--pid", "1"}, "--pid does not apply to live mode: it is a flag of `perf-monitor attach`"},
      {{"--top", "-1"}, "--top: wants a whole number from 0 up, not '-1'"},
      {{"--cgroup-depth", "65"}, "--cgroup-depth: wants a whole number from 0 to 64, not '65'"},
      {{"attach", "--pid", "abc"}, "--pid: wants a process ID, from 1 up, not 'abc'"},
      {{"--interval", "500"}, "duration '500' has no unit: did you mean 500ms or 500s?"},
      {{"run", "--duration", "2", "--", "true"}, "duration '2' has no unit: did you mean 2ms or 2s?"},
  };
  for (const Case& c : cases) {
    Outcome o = run_pm(c.args);
    std::string line = nlohmann::json(c.args).dump();
    EXPECT_EQ(o.exit_code, 2) << line << ": " << o.err;
    EXPECT_EQ(lines(o.err), 1u) << line << ": " << o.err;
    EXPECT_NE(o.err.find(c.said), std::string::npos) << line << ": " << o.err;
    EXPECT_EQ(o.err.find("not expected"), std::string::npos) << o.err;
    EXPECT_EQ(o.err.find("000000"), std::string::npos) << "no range in floating point: " << o.err;
  }
}

TEST(Cli, BadDurationIsAUsageError) {
  Outcome o = run_pm({"--interval", "fast"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("--interval"), std::string::npos) << o.err;
}

TEST(Cli, BadTomlNamesLineAndColumn) {
  std::string path = write_file("pm-bad.toml", "[output]\nformat = \"json\"\ninterval_secs = = 2\n");
  Outcome o = run_pm({"--config", path});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find(path + ":3:"), std::string::npos) << o.err;
}

TEST(Cli, UnknownConfigKeyIsAnError) {
  std::string path = write_file("pm-unknown.toml", "[scheduler]\nenabled = true\nfrobnicate = 1\n");
  Outcome o = run_pm({"--config", path});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("frobnicate"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(path + ":3:1"), std::string::npos) << o.err;
}

TEST(Cli, LegacyConfigWorksUnchanged) {
  std::string path = write_file("pm-legacy.toml", R"([pmc]
interval_secs = 1
events = ["instructions", "cycles", "cache_references", "cache_misses", "branch_misses"]
[scheduler]
enabled = true
[block_io]
enabled = true
[file_poll]
interval_secs = 5
[output]
format = "json"   # "text" or "json"
)");
  Outcome o = run_pm({"--config", path, "--interval", "200ms", "--duration", "700ms"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GE(o.intervals(), 2u);  // the file chose JSON
  EXPECT_FALSE(o.summary.is_null());
  // A flag overrides the file.
  Outcome t = run_pm({"--config", path, "--format", "text", "--interval", "200ms", "--duration", "500ms"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_TRUE(t.records.empty());
  EXPECT_NE(t.out.find("perf-monitor summary"), std::string::npos);
}

TEST(Cli, MissingConfigFile) {
  Outcome o = run_pm({"--config", "/nonexistent/perf-monitor.toml"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
}

TEST(Cli, NonexistentPid) {
  int pid = 4194000;  // above the default pid_max of small machines; check it is free
  while (::kill(pid, 0) == 0) ++pid;
  Outcome o = run_pm({"attach", "--pid", std::to_string(pid)});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find(std::to_string(pid)), std::string::npos) << o.err;
}

TEST(Cli, CommandNotFoundExits127) {
  Outcome o = run_pm({"run", "--", "/nonexistent/command", "arg"});
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("/nonexistent/command"), std::string::npos) << o.err;
}

TEST(Cli, CommandNotExecutableExits126) {
  std::string path = write_file("pm-not-executable", "#!/bin/sh\n");
  ::chmod(path.c_str(), 0644);
  Outcome o = run_pm({"run", "--", path});
  EXPECT_EQ(o.exit_code, 126);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
}

TEST(Cli, RunWithoutCommandIsAUsageError) {
  Outcome o = run_pm({"run"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
}

TEST(Cli, UnwritableOutputIsAUsageError) {
  Outcome o = run_pm({"-o", "/nonexistent/dir/out.txt", "--duration", "1s"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
}

TEST(Cli, SystemModeSigintPrintsTheSummary) {
  RunningPm pm({"--format", "json", "--interval", "200ms"});
  auto intervals_so_far = [&] {
    std::string out = pm.out_so_far();
    size_t n = 0;
    for (size_t at = out.find("\"type\":\"interval\""); at != std::string::npos;
         at = out.find("\"type\":\"interval\"", at + 1)) {
      ++n;
    }
    return n;
  };
  for (int i = 0; i < 1500 && intervals_so_far() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Outcome o = pm.stop(SIGINT);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  ASSERT_FALSE(o.summary.is_null()) << o.out;
  EXPECT_EQ(o.summary["end_reason"], "interrupted");
  EXPECT_GE(o.intervals(), 2u);
}

}  // namespace
}  // namespace pm::test
