// SPDX-License-Identifier: Apache-2.0
// Comparisons of per-run figures: verdicts, run counts, ties and zero variance, the minimum
// effect, the CI gate, and the text and JSON forms.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "report/compare.h"

namespace pm::report {
namespace {

RunFigures run(const std::string& file, std::vector<std::pair<std::string, double>> figures) {
  RunFigures r;
  r.file = file;
  r.figures = std::move(figures);
  return r;
}

// n runs whose cpu figure is base * (1 + small jitter), and a constant beside it.
std::vector<RunFigures> side(const std::string& name, size_t n, double cpu, double ipc = 1.5) {
  std::vector<RunFigures> out;
  for (size_t i = 0; i < n; ++i) {
    double j = 1 + 0.01 * static_cast<double>((i * 7) % 5) - 0.02;
    out.push_back(run(fmt::format("{}{}.jsonl", name, i),
                      {{"proc_cpu_user_seconds", cpu * j}, {"pmc.ipc", ipc * j}, {"proc_processes_seen_max", 1}}));
  }
  return out;
}

const FigureRow& row(const Comparison& c, const std::string& figure) {
  for (const FigureRow& r : c.rows) {
    if (r.figure == figure) return r;
  }
  throw std::runtime_error("no row " + figure);
}

TEST(Compare, FiguresOfASummaryAreEveryNumberByPath) {
  Recording rec;
  rec.path = "r.jsonl";
  rec.summary = Json::parse(R"({"type":"summary","mode":"run","command":["x"],"pid":42,"exit_code":0,"duration_s":2.5,
    "proc_rss_max":1048576,"cpu":{"utilisation_percent":{"all":{"user":40.5}}},
    "scheduler_runq_latency_seconds":{"count":4,"sum":0.002,"p50":0.000256,"p99":null,"bucket_base":1e-06,"buckets":[0,1,3]},
    "unavailable":{"thermal":"none"}})");
  auto f = run_figures(rec);
  ASSERT_TRUE(f) << f.error().message;
  std::vector<std::string> names;
  for (const auto& [n, v] : f->figures) names.push_back(n);
  EXPECT_EQ(names,
            (std::vector<std::string>{"exit_code", "duration_s", "proc_rss_max", "cpu.utilisation_percent.all.user",
                                      "scheduler_runq_latency_seconds.count", "scheduler_runq_latency_seconds.sum",
                                      "scheduler_runq_latency_seconds.p50", "scheduler_runq_latency_seconds.mean"}));
  EXPECT_EQ(f->figures.back().second, 0.0005);
  EXPECT_EQ(f->histograms.count("scheduler_runq_latency_seconds"), 1u);

  Recording unfinished;
  unfinished.path = "cut.jsonl";
  auto none = run_figures(unfinished);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("cut.jsonl has no summary record"), std::string::npos);
}

TEST(Compare, TwiceTheCpuIsSignificantlyHigherAndWorse) {
  CompareOptions o;
  o.fail_on = {"proc_cpu_*"};
  Comparison c = compare_runs(side("a", 5, 0.25), side("b", 5, 0.50), o);
  EXPECT_TRUE(c.decidable);
  const FigureRow& cpu = row(c, "proc_cpu_user_seconds");
  EXPECT_TRUE(cpu.tested);
  EXPECT_TRUE(cpu.significant);
  EXPECT_TRUE(cpu.worse);
  EXPECT_EQ(cpu.verdict, "higher");
  EXPECT_NEAR(cpu.p, 2.0 / 252, 1e-12);
  ASSERT_TRUE(cpu.change_percent);
  EXPECT_NEAR(*cpu.change_percent, 100, 3);
  ASSERT_TRUE(cpu.shift_percent && cpu.shift_low_percent);
  EXPECT_GT(*cpu.shift_low_percent, 80);
  EXPECT_EQ(c.regressions, std::vector<std::string>{"proc_cpu_user_seconds"});
  EXPECT_EQ(row(c, "proc_processes_seen_max").verdict, "same in every run");
  EXPECT_FALSE(row(c, "proc_processes_seen_max").tested);
  // A warning below 9 runs per side.
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings[0].find("only large changes"), std::string::npos);
}

TEST(Compare, HigherIpcIsBetterNotARegression) {
  CompareOptions o;
  o.fail_on = {"*"};
  Comparison c = compare_runs(side("a", 6, 0.25, 1.0), side("b", 6, 0.25, 2.0), o);
  const FigureRow& ipc = row(c, "pmc.ipc");
  EXPECT_TRUE(ipc.significant);
  EXPECT_TRUE(ipc.higher_is_better);
  EXPECT_FALSE(ipc.worse);
  EXPECT_TRUE(c.regressions.empty());
  // ... unless told otherwise, by glob.
  o.higher_is_better = {"proc_cpu_*"};
  Comparison d = compare_runs(side("a", 6, 0.50), side("b", 6, 0.25), o);
  EXPECT_TRUE(row(d, "proc_cpu_user_seconds").significant);
  EXPECT_TRUE(row(d, "proc_cpu_user_seconds").worse);
}

TEST(Compare, TooFewRunsGiveNoVerdict) {
  Comparison c = compare_runs(side("a", 3, 0.25), side("b", 3, 0.50), {});
  EXPECT_FALSE(c.decidable);
  EXPECT_EQ(c.tested, 0u);
  EXPECT_EQ(row(c, "proc_cpu_user_seconds").verdict, "too few runs");
  EXPECT_FALSE(row(c, "proc_cpu_user_seconds").significant);
  EXPECT_NEAR(row(c, "proc_cpu_user_seconds").p, 0.1, 1e-12);  // the best 3 vs 3 can do
  EXPECT_NE(c.warnings[0].find("too few runs to decide"), std::string::npos);
  EXPECT_NE(comparison_text(c).find("too few runs"), std::string::npos);

  Comparison one = compare_runs(side("a", 1, 0.25), side("b", 1, 0.50), {});
  const FigureRow& r = row(one, "proc_cpu_user_seconds");
  EXPECT_EQ(r.verdict, "no verdict (one run per side)");
  ASSERT_TRUE(r.change_percent);
  EXPECT_NEAR(*r.change_percent, 100, 1e-9);
  EXPECT_NE(one.warnings[0].find("one run per side"), std::string::npos);
}

TEST(Compare, UnequalCountsTiesAndMissingFigures) {
  std::vector<RunFigures> a = side("a", 4, 0.25), b = side("b", 5, 0.50);
  a[0].figures.emplace_back("only_base_figure", 3);
  for (RunFigures& r : b) r.figures.emplace_back("ticks", 2);  // whole clock ticks: all tied
  for (RunFigures& r : a) r.figures.emplace_back("ticks", 1);
  Comparison c = compare_runs(a, b, {});
  const FigureRow& cpu = row(c, "proc_cpu_user_seconds");
  EXPECT_EQ(cpu.base.size(), 4u);
  EXPECT_EQ(cpu.next.size(), 5u);
  EXPECT_TRUE(cpu.exact);
  EXPECT_TRUE(cpu.significant);
  const FigureRow& ticks = row(c, "ticks");
  EXPECT_FALSE(ticks.exact);  // ties: the normal approximation
  EXPECT_TRUE(ticks.significant);
  EXPECT_EQ(ticks.shift, 1);
  EXPECT_EQ(row(c, "only_base_figure").verdict, "only in base");
}

TEST(Compare, MinEffectKeepsSmallRealChangesUnflagged) {
  // A 2 % change, consistent in every run: significant, but below --min-effect 5.
  auto make = [](const std::string& name, double level) {
    std::vector<RunFigures> out;
    for (int i = 0; i < 8; ++i)
      out.push_back(run(name + std::to_string(i), {{"proc_cpu_user_seconds", level + 0.001 * i}}));
    return out;
  };
  CompareOptions o;
  o.min_effect_percent = 5;
  Comparison c = compare_runs(make("a", 1.00), make("b", 1.02), o);
  const FigureRow& cpu = row(c, "proc_cpu_user_seconds");
  EXPECT_NEAR(cpu.p_adjusted, 2.0 / 12870, 1e-12);  // every new run above every base run
  EXPECT_NEAR(*cpu.shift_percent, 2, 0.01);
  EXPECT_FALSE(cpu.significant);
  EXPECT_EQ(cpu.verdict, "below --min-effect");
  o.min_effect_percent = 1;
  EXPECT_TRUE(row(compare_runs(make("a", 1.00), make("b", 1.02), o), "proc_cpu_user_seconds").significant);
}

TEST(Compare, HolmIsStricterThanBenjaminiHochbergOverManyFigures) {
  // 5 vs 5, twelve figures that all double: each p is 2/252. BH keeps them (12 * p / 12);
  // Holm multiplies the smallest by 12 (0.095 > 0.05).
  auto make = [](const std::string& name, double scale) {
    std::vector<RunFigures> out;
    for (int i = 0; i < 5; ++i) {
      std::vector<std::pair<std::string, double>> f;
      for (int k = 0; k < 12; ++k) f.emplace_back(fmt::format("figure_{}", k), scale * (10 + i + 0.1 * k));
      out.push_back(run(name + std::to_string(i), f));
    }
    return out;
  };
  CompareOptions bh, holm;
  holm.correction = Correction::kHolm;
  Comparison b = compare_runs(make("a", 1), make("b", 2), bh), h = compare_runs(make("a", 1), make("b", 2), holm);
  EXPECT_TRUE(row(b, "figure_0").significant);
  EXPECT_FALSE(row(h, "figure_0").significant);
  EXPECT_NEAR(row(h, "figure_0").p_adjusted, 12 * 2.0 / 252, 1e-12);
  // --fail-on figures are a family of their own: the gate pays no correction for the others.
  CompareOptions gate = holm;
  gate.fail_on = {"figure_0"};
  Comparison g = compare_runs(make("a", 1), make("b", 2), gate);
  EXPECT_EQ(g.gated, 1u);
  EXPECT_NEAR(row(g, "figure_0").p_adjusted, 2.0 / 252, 1e-12);
  EXPECT_TRUE(row(g, "figure_0").significant);
  EXPECT_FALSE(row(g, "figure_1").significant);  // eleven others: Holm multiplies by 11
  EXPECT_NEAR(row(g, "figure_1").p_adjusted, 11 * 2.0 / 252, 1e-12);
  EXPECT_EQ(g.regressions, std::vector<std::string>{"figure_0"});
  // --figures narrows the family: one figure, no correction to pay.
  holm.only = {"figure_0"};
  Comparison one = compare_runs(make("a", 1), make("b", 2), holm);
  EXPECT_EQ(one.rows.size(), 1u);
  EXPECT_TRUE(row(one, "figure_0").significant);
}

TEST(Compare, TextAndJsonSayTheSame) {
  CompareOptions o;
  o.fail_on = {"proc_cpu_*"};
  Comparison c = compare_runs(side("a", 5, 0.25), side("b", 5, 0.50), o);
  std::string text = comparison_text(c);
  EXPECT_NE(text.find("proc_cpu_user_seconds"), std::string::npos);
  EXPECT_NE(text.find("higher (worse)"), std::string::npos);
  EXPECT_NE(text.find("Regression: proc_cpu_user_seconds"), std::string::npos);
  Json j = Json::parse(comparison_json(c));
  EXPECT_EQ(j["type"], "comparison");
  EXPECT_EQ(j["base"].size(), 5u);
  EXPECT_EQ(j["regressions"], Json::array({"proc_cpu_user_seconds"}));
  bool found = false;
  for (const Json& f : j["figures"]) {
    if (f["figure"] != "proc_cpu_user_seconds") continue;
    found = true;
    EXPECT_EQ(f["verdict"], "higher");
    EXPECT_TRUE(f["significant"].get<bool>());
    EXPECT_EQ(f["unit"], "seconds");
    EXPECT_NEAR(f["p"].get<double>(), 2.0 / 252, 1e-12);
    EXPECT_TRUE(f["shift"].contains("low"));
  }
  EXPECT_TRUE(found);
}

TEST(Compare, UnitsFromTheName) {
  EXPECT_EQ(unit_of("proc_io_read_bytes"), "bytes");
  EXPECT_EQ(unit_of("memory_total_bytes_min"), "bytes");
  EXPECT_EQ(unit_of("duration_s"), "seconds");
  EXPECT_EQ(unit_of("scheduler_runq_latency_seconds.p99"), "seconds");
  EXPECT_EQ(unit_of("scheduler_runq_latency_seconds.count"), "");
  EXPECT_EQ(unit_of("cpu.utilisation_percent.all.user"), "percent");
  EXPECT_EQ(unit_of("proc_processes_seen_max"), "");
  EXPECT_EQ(unit_of("pmc.running_percent.task_clock_seconds"), "percent");
  EXPECT_EQ(unit_of("pmc.enabled_seconds.power_energy_psys_joules"), "seconds");
}

}  // namespace
}  // namespace pm::report
