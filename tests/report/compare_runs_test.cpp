// SPDX-License-Identifier: Apache-2.0
// `report --compare` on real runs of the real binary: twice the CPU work is a significant
// regression of the tree's CPU time, and the text leads with it; identical runs (A/A) flag no
// more than alpha of the comparisons. The runs of both sides are interleaved, as the README
// advises.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "integration/harness.h"

namespace pm::test {
namespace {

using Json = nlohmann::json;

// A run of the workload spinning `ms` of CPU time, recorded as JSON Lines.
std::string record_spin(const std::string& path, int ms) {
  Outcome o = run_pm({"run", "--format", "json", "-o", path, "--", workload(), "spin", std::to_string(ms)});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  return path;
}

std::string fmt_path(const std::string& base, int pair, char side, int run) {
  return base + "-" + std::to_string(pair) + side + std::to_string(run) + ".jsonl";
}

Outcome compare(const std::vector<std::string>& base, const std::vector<std::string>& next,
                const std::vector<std::string>& extra) {
  std::vector<std::string> args{"report", "--compare"};
  args.insert(args.end(), base.begin(), base.end());
  args.push_back("--");
  args.insert(args.end(), next.begin(), next.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return run_pm(args);
}

const Json* figure(const Json& cmp, const std::string& name) {
  for (const Json& f : cmp["figures"]) {
    if (f["figure"] == name) return &f;
  }
  return nullptr;
}

TEST(CompareRuns, TwiceTheCpuWorkIsASignificantRegression) {
  std::string base = temp_base();
  std::vector<std::string> a, b;
  for (int i = 0; i < 5; ++i) {
    a.push_back(record_spin(base + "-a" + std::to_string(i) + ".jsonl", 150));
    b.push_back(record_spin(base + "-b" + std::to_string(i) + ".jsonl", 300));
  }
  // As a CI job would: gate on CPU time, as the kernel accounts it to the tree in clock ticks
  // (user time) and to the nanosecond (on-CPU time; perf's task clock where eBPF cannot follow
  // the tree).
  Outcome o =
      compare(a, b, {"--format", "json", "--fail-on", "proc_cpu_user_seconds", "--fail-on", "proc_on_cpu_seconds"});
  ASSERT_EQ(o.exit_code, 3) << "exit 3 means a --fail-on figure regressed\n" << o.err << o.out.substr(0, 2000);
  Json cmp = Json::parse(o.out);
  EXPECT_TRUE(cmp["decidable"].get<bool>());
  EXPECT_TRUE(std::find(cmp["regressions"].begin(), cmp["regressions"].end(), "proc_cpu_user_seconds") !=
              cmp["regressions"].end())
      << cmp["regressions"];
  const Json* cpu = figure(cmp, "proc_cpu_user_seconds");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ((*cpu)["verdict"], "higher");
  EXPECT_TRUE((*cpu)["significant"].get<bool>());
  EXPECT_TRUE((*cpu)["worse"].get<bool>());
  EXPECT_LE((*cpu)["p_adjusted"].get<double>(), 0.05);
  // About twice: the shift's interval lies well above zero.
  EXPECT_GT((*cpu)["change_percent"].get<double>(), 50);
  EXPECT_GT((*cpu)["shift"]["low"].get<double>(), 0);
  std::cout << "[ INFO     ] proc_cpu_user_seconds: base " << (*cpu)["base"] << " new " << (*cpu)["new"] << " p "
            << (*cpu)["p"] << " p adj " << (*cpu)["p_adjusted"] << "\n";
  // The on-CPU time says the same: the runs separate completely (p = 2/252 when no two values
  // tie; the JSON prints microseconds, so a tie now and then takes the normal approximation, a
  // little above).
  if (const Json* clock = figure(cmp, "proc_on_cpu_seconds")) {
    EXPECT_EQ((*clock)["verdict"], "higher");
    EXPECT_TRUE((*clock)["worse"].get<bool>());
    EXPECT_LE((*clock)["p"].get<double>(), 0.02);
  } else {
    std::cout << "[ INFO     ] no proc_on_cpu_seconds in these runs (neither eBPF nor perf counters here)\n";
  }
  size_t significant = 0;
  for (const Json& f : cmp["figures"]) significant += f["significant"].get<bool>() ? 1 : 0;
  std::cout << "[ INFO     ] " << significant << " of " << cmp["tested"] << " figures significant\n";
  // The text for a CI log says it too.
  Outcome text = compare(a, b, {"--fail-on", "proc_cpu_user_seconds"});
  EXPECT_EQ(text.exit_code, 3);
  EXPECT_NE(text.out.find("Regression: proc_cpu_user_seconds"), std::string::npos) << text.out;
  // The other way round it is an improvement: no regression, exit 0.
  Outcome better = compare(b, a, {"--format", "json", "--fail-on", "proc_cpu_user_seconds"});
  EXPECT_EQ(better.exit_code, 0) << better.err;
  EXPECT_EQ((*figure(Json::parse(better.out), "proc_cpu_user_seconds"))["verdict"], "lower");
  for (const std::string& f : a) std::filesystem::remove(f);
  for (const std::string& f : b) std::filesystem::remove(f);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The rows of the text's table (figure name, then the rest of the line), in order.
std::vector<std::pair<std::string, std::string>> table_rows(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  bool in = false;
  for (const std::string& line : lines_of(text)) {
    if (!in) {
      in = line.starts_with("figure ");
      continue;
    }
    if (line.empty() || line.starts_with("... and ")) break;
    out.emplace_back(line.substr(0, line.find(' ')), line);
  }
  return out;
}

// The text leads with what changed: 5 + 5 runs, the new side burning twice the CPU. The
// command's CPU time is the first row, higher and worse; the whole fits a terminal, in units,
// without exponents; --all shows the folded figures too; the JSON keeps every figure.
TEST(CompareRuns, TheTextLeadsWithTheCommandsCpuTime) {
  std::string base = temp_base();
  std::vector<std::string> a, b;
  for (int i = 0; i < 5; ++i) {
    a.push_back(record_spin(base + "-a" + std::to_string(i) + ".jsonl", 150));
    b.push_back(record_spin(base + "-b" + std::to_string(i) + ".jsonl", 300));
  }
  const std::regex exponent("[0-9]e[+-]?[0-9]");
  // 5 vs 5 over a hundred figures: the correction leaves none significant unless the figures
  // that matter are named, as a CI gate names them (a family of their own).
  const std::vector<std::string> gate{"--fail-on", "proc_cpu_*", "--fail-on", "proc_on_cpu_seconds"};
  Outcome text = compare(a, b, gate);
  ASSERT_EQ(text.exit_code, 3) << text.err << text.out;
  std::cout << text.out;
  std::vector<std::string> lines = lines_of(text.out);
  EXPECT_LE(lines.size(), 40u) << text.out;
  auto rows = table_rows(text.out);
  ASSERT_FALSE(rows.empty()) << text.out;
  static const std::set<std::string> kCpu{"proc_cpu_user_seconds", "proc_cpu_system_seconds", "proc_on_cpu_seconds"};
  EXPECT_TRUE(kCpu.contains(rows[0].first)) << "first row: " << rows[0].second << "\n" << text.out;
  EXPECT_NE(rows[0].second.find("higher (worse)"), std::string::npos) << rows[0].second;
  EXPECT_NE(rows[0].second.find(" ms "), std::string::npos) << "CPU time in its unit: " << rows[0].second;
  EXPECT_FALSE(std::regex_search(text.out, exponent)) << text.out;
  EXPECT_NE(text.out.find("(--all shows them)"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("timeline"), std::string::npos) << text.out;
  EXPECT_EQ(text.err.find("timeline"), std::string::npos) << text.err;

  // Without a gate: still within 40 lines, without exponents.
  Outcome plain = compare(a, b, {});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_LE(lines_of(plain.out).size(), 40u) << plain.out;
  // Whatever the correction leaves significant, the command's CPU time leads what is shown.
  auto plain_rows = table_rows(plain.out);
  if (!plain_rows.empty()) {
    EXPECT_TRUE(kCpu.contains(plain_rows[0].first)) << plain.out;
  }
  // The counters' own time follows the run's length: never a leading row.
  for (const auto& [figure, line] : rows) EXPECT_FALSE(figure.starts_with("pmc.enabled_seconds")) << line;
  EXPECT_FALSE(std::regex_search(plain.out, exponent)) << plain.out;
  EXPECT_EQ(plain.err.find("timeline"), std::string::npos) << plain.err;

  // --all: more rows, the folded ones among them, in the JSON's order; the JSON has every
  // figure, each marked folded or not.
  Outcome all = compare(a, b, {"--all", "--fail-on", "proc_cpu_*", "--fail-on", "proc_on_cpu_seconds"});
  ASSERT_EQ(all.exit_code, 3) << all.err;
  EXPECT_FALSE(std::regex_search(all.out, exponent)) << all.out;
  auto all_rows = table_rows(all.out);
  EXPECT_GT(all_rows.size(), rows.size());
  Outcome json = compare(a, b, {"--format", "json", "--fail-on", "proc_cpu_*", "--fail-on", "proc_on_cpu_seconds"});
  ASSERT_EQ(json.exit_code, 3) << json.err;
  Json cmp = Json::parse(json.out);
  ASSERT_EQ(cmp["figures"].size(), all_rows.size());
  size_t folded = 0, leading = 0;
  for (size_t k = 0; k < all_rows.size(); ++k) {
    const Json& f = cmp["figures"][k];
    EXPECT_EQ(f["figure"].get<std::string>(), all_rows[k].first);
    if (f["folded"].get<bool>()) {
      ++folded;
    } else {
      ASSERT_LT(leading, rows.size());
      EXPECT_EQ(f["figure"].get<std::string>(), rows[leading++].first);  // the default's rows, in order
    }
  }
  EXPECT_EQ(leading, rows.size());
  EXPECT_GT(folded, 50u);
  EXPECT_EQ(cmp["folded"].get<size_t>(), folded);
  // Every number of every run's summary is a row of the JSON.
  std::set<std::string> names;
  for (const Json& f : cmp["figures"]) names.insert(f["figure"].get<std::string>());
  for (const std::string& file : a) {
    for (const std::string& line : lines_of(slurp(file))) {
      Json j = Json::parse(line, nullptr, false);
      if (!j.is_object() || j.value("type", "") != "summary") continue;
      for (const auto& [k, v] : j.items()) {
        if (v.is_number() && k != "pid" && k != "signal") {
          EXPECT_TRUE(names.contains(k)) << k;
        }
      }
    }
  }
  // The command's own figures first: no other figure before the last proc_* one.
  bool other_seen = false;
  for (const Json& f : cmp["figures"]) {
    bool command = f["command"].get<bool>();
    EXPECT_EQ(command, f["figure"].get<std::string>().starts_with("proc_") || f["figure"] == "duration_s")
        << f["figure"];
    if (command) {
      EXPECT_FALSE(other_seen) << f["figure"] << " after the other figures";
    }
    other_seen = other_seen || !command;
  }
  for (const std::string& f : a) std::filesystem::remove(f);
  for (const std::string& f : b) std::filesystem::remove(f);
}

// Ten pairs of 5 vs 5 runs of the same command: with the correction, at most alpha of the
// figures compared may come out significant (the expected number is close to zero; well over a
// hundred figures are compared).
TEST(CompareRuns, AASuiteFlagsNoMoreThanAlpha) {
  constexpr int kPairs = 10;  // of 5 runs against 5
  std::string base = temp_base();
  size_t flagged = 0, tested = 0, pairs_flagging = 0, gated_flags = 0;
  for (int pair = 0; pair < kPairs; ++pair) {
    std::vector<std::string> a, b;
    for (int i = 0; i < 5; ++i) {  // A B A B ...: drift hits both sides alike
      a.push_back(record_spin(fmt_path(base, pair, 'a', i), 20));
      b.push_back(record_spin(fmt_path(base, pair, 'b', i), 20));
    }
    Outcome o = compare(a, b, {"--format", "json", "--fail-on", "proc_cpu_user_seconds"});
    ASSERT_TRUE(o.exit_code == 0 || o.exit_code == 3) << o.err;
    Json cmp = Json::parse(o.out);
    size_t here = 0;
    for (const Json& f : cmp["figures"]) {
      if (!f.contains("p_adjusted")) continue;
      ++tested;
      if (f["significant"].get<bool>()) {
        ++here;
        std::cout << "[ INFO     ] pair " << pair << ": " << f["figure"] << " flagged, base " << f["base"] << " new "
                  << f["new"] << "\n";
      }
    }
    gated_flags += cmp["regressions"].size();
    flagged += here;
    pairs_flagging += here > 0 ? 1 : 0;
    for (const std::string& f : a) std::filesystem::remove(f);
    for (const std::string& f : b) std::filesystem::remove(f);
  }
  std::cout << "[ INFO     ] A/A: " << flagged << " of " << tested << " comparisons significant, in " << pairs_flagging
            << " of " << kPairs << " pairs; the gated figure regressed in " << gated_flags << " of " << kPairs << "\n";
  ASSERT_GT(tested, static_cast<size_t>(kPairs) * 10);
  EXPECT_LE(static_cast<double>(flagged) / static_cast<double>(tested), 0.05);
}

}  // namespace
}  // namespace pm::test
