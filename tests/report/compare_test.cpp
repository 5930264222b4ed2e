// SPDX-License-Identifier: Apache-2.0
// Comparisons of per-run figures: verdicts, run counts, ties and zero variance, the minimum
// effect, the CI gate, and the text and JSON forms.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
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

// n runs of the named figures, each figure's value times (1 + a small jitter), the jitter
// different per run so that no two runs tie.
std::vector<RunFigures> runs_of(const std::string& name, size_t n,
                                const std::vector<std::pair<std::string, double>>& f) {
  std::vector<RunFigures> out;
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::pair<std::string, double>> figures;
    for (const auto& [k, v] : f) figures.emplace_back(k, v * (1 + 0.01 * static_cast<double>(i)));
    out.push_back(run(fmt::format("{}{}.jsonl", name, i), figures));
  }
  return out;
}

std::vector<std::string> order_of(const Comparison& c) {
  std::vector<std::string> out;
  for (const FigureRow& r : c.rows) out.push_back(r.figure);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The figure names of the text's table, in order: the lines after the table's header up to the
// first blank line (or a "... and N more" line).
std::vector<std::string> table_rows(const std::string& text) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string& line : lines_of(text)) {
    if (!in) {
      in = line.starts_with("figure ");
      continue;
    }
    if (line.empty() || line.starts_with("... and ")) break;
    out.push_back(line.substr(0, line.find(' ')));
  }
  return out;
}

TEST(Compare, TheCommandsFiguresLeadThenSignificanceThenEffect) {
  // Base and new: every figure doubles or more, but for a noisy one, a constant and one whose
  // change is real but small. Recording order is the reverse of the order wanted.
  std::vector<std::pair<std::string, double>> base{{"cpu.time_seconds.all.user", 1},
                                                   {"scheduler.switches", 100},
                                                   {"memory.used_bytes.max", 1e9},
                                                   {"proc_threads_max", 1},
                                                   {"proc_noise_seconds", 1},
                                                   {"proc_rss_max", 1e6},
                                                   {"duration_s", 1},
                                                   {"proc_cpu_user_seconds", 1}};
  std::vector<std::pair<std::string, double>> next{{"cpu.time_seconds.all.user", 2},
                                                   {"scheduler.switches", 500},
                                                   {"memory.used_bytes.max", 3e9},
                                                   {"proc_threads_max", 1},
                                                   {"proc_noise_seconds", 1.01},
                                                   {"proc_rss_max", 4e6},
                                                   {"duration_s", 2},
                                                   {"proc_cpu_user_seconds", 2}};
  std::vector<RunFigures> a = runs_of("a", 6, base), b = runs_of("b", 6, next);
  for (RunFigures& r : a) r.figures[3].second = 1;  // proc_threads_max: 1 in every run
  for (RunFigures& r : b) r.figures[3].second = 1;
  // The noise: base 1.00..1.05, new 1.01..1.06 interleave: no significant change.
  Comparison c = compare_runs(a, b, {});
  EXPECT_EQ(order_of(c), (std::vector<std::string>{
                             // the command's: significant ones, equally so: CPU, wall, RSS (effect would put RSS first)
                             "proc_cpu_user_seconds", "duration_s", "proc_rss_max",
                             // then its unchanged ones: not significant, then constant
                             "proc_noise_seconds", "proc_threads_max",
                             // the rest, significant, by effect: +400 %, +200 %, +100 %
                             "scheduler.switches", "memory.used_bytes.max", "cpu.time_seconds.all.user"}));
  for (const FigureRow& r : c.rows) {
    EXPECT_EQ(r.command, r.figure.starts_with("proc_") || r.figure == "duration_s") << r.figure;
    EXPECT_EQ(r.folded, r.figure == "proc_noise_seconds" || r.figure == "proc_threads_max") << r.figure;
  }
  // Equally significant: the larger effect first. A smaller adjusted p goes first, whatever the
  // effect: 6 vs 6 runs of one figure (p 2/924) before 4 vs 4 of another (p 2/70).
  Comparison e =
      compare_runs(runs_of("a", 6, {{"small", 1}, {"big", 1}}), runs_of("b", 6, {{"small", 2}, {"big", 10}}), {});
  EXPECT_EQ(order_of(e), (std::vector<std::string>{"big", "small"}));
  std::vector<RunFigures> u = runs_of("a", 6, {{"small", 1}}), v = runs_of("b", 6, {{"small", 2}});
  std::vector<RunFigures> u4 = runs_of("a", 4, {{"big", 1}}), v4 = runs_of("b", 4, {{"big", 10}});
  for (size_t i = 0; i < 4; ++i) {
    u[i].figures.push_back(u4[i].figures[0]);
    v[i].figures.push_back(v4[i].figures[0]);
  }
  Comparison f = compare_runs(u, v, {});
  EXPECT_LT(row(f, "small").p_adjusted, row(f, "big").p_adjusted);
  EXPECT_EQ(order_of(f), (std::vector<std::string>{"small", "big"}));  // more certain first, though smaller
}

TEST(Compare, UnchangedFiguresAreFoldedIntoOneLine) {
  // 200 figures: 3 that double, 197 the same in every run or without a change.
  std::vector<std::pair<std::string, double>> base, next;
  for (int k = 0; k < 3; ++k) {
    base.emplace_back(fmt::format("proc_changed_{}_seconds", k), 1);
    next.emplace_back(fmt::format("proc_changed_{}_seconds", k), 2);
  }
  for (int k = 0; k < 197; ++k) {
    base.emplace_back(fmt::format("same.figure_{}", k), 5);
    next.emplace_back(fmt::format("same.figure_{}", k), 5);
  }
  std::vector<RunFigures> a = runs_of("a", 5, base), b = runs_of("b", 5, next);
  for (auto* side : {&a, &b}) {
    for (RunFigures& r : *side)
      for (auto& [k, v] : r.figures)
        if (k.starts_with("same.")) v = 5;
  }
  CompareOptions o;
  o.fail_on = {"proc_changed_*"};  // 5 vs 5 over 200: the gate's own family decides
  Comparison c = compare_runs(a, b, o);
  std::string text = comparison_text(c);
  EXPECT_EQ(table_rows(text),
            (std::vector<std::string>{"proc_changed_0_seconds", "proc_changed_1_seconds", "proc_changed_2_seconds"}))
      << text;
  EXPECT_EQ(text.find("same.figure_"), std::string::npos) << text;
  EXPECT_NE(text.find("unchanged: 197 figures: 197 the same in every run (--all shows them)"), std::string::npos)
      << text;
  EXPECT_LE(lines_of(text).size(), kMaxTextLines);
  // --all: every figure, in the same order as the rows (and the JSON).
  std::string all = comparison_text(c, {.all = true});
  EXPECT_EQ(table_rows(all), order_of(c));
  EXPECT_EQ(table_rows(all).size(), 200u);
  EXPECT_EQ(all.find("--all shows them"), std::string::npos);
  Json j = Json::parse(comparison_json(c));
  ASSERT_EQ(j["figures"].size(), 200u);
  EXPECT_EQ(j["folded"], 197);
  for (size_t k = 0; k < 200; ++k) {
    EXPECT_EQ(j["figures"][k]["figure"], c.rows[k].figure);
    EXPECT_EQ(j["figures"][k]["folded"].get<bool>(), k >= 3);
    EXPECT_EQ(j["figures"][k]["command"].get<bool>(), k < 3);
  }

  // Below --min-effect and too few runs are folded too; nothing leading: no table, but the
  // strongest candidates in one line.
  o.fail_on.clear();
  o.min_effect_percent = 500;
  Comparison small = compare_runs(a, b, o);
  for (const FigureRow& r : small.rows) EXPECT_TRUE(r.folded) << r.figure;
  std::string st = comparison_text(small);
  EXPECT_EQ(st.find("\nfigure "), std::string::npos) << st;
  EXPECT_NE(st.find("unchanged: 200 figures: 197 the same in every run, 3 below --min-effect"), std::string::npos)
      << st;
  Comparison few = compare_runs({a.begin(), a.begin() + 3}, {b.begin(), b.begin() + 3}, {});
  std::string ft = comparison_text(few);
  EXPECT_NE(ft.find("Largest changes, undecided: proc_changed_0_seconds +"), std::string::npos) << ft;
  EXPECT_NE(ft.find("3 with too few runs to decide"), std::string::npos) << ft;
}

TEST(Compare, TheTextFitsFortyLinesWhateverChanged) {
  // 300 figures that all double, 12 vs 12: all significant, far more than fit.
  std::vector<std::pair<std::string, double>> base, next;
  for (int k = 0; k < 300; ++k) {
    base.emplace_back(fmt::format("figure_{:03}", k), 10 + k);
    next.emplace_back(fmt::format("figure_{:03}", k), 2 * (10 + k));
  }
  Comparison c = compare_runs(runs_of("a", 12, base), runs_of("b", 12, next), {});
  std::string text = comparison_text(c);
  std::vector<std::string> lines = lines_of(text);
  EXPECT_LE(lines.size(), kMaxTextLines) << text;
  size_t shown = table_rows(text).size();
  EXPECT_GT(shown, 20u);
  EXPECT_NE(text.find(fmt::format("... and {} more that changed (--all shows them)", 300 - shown)), std::string::npos)
      << text;
  EXPECT_EQ(table_rows(comparison_text(c, {.all = true})).size(), 300u);
}

TEST(Compare, ValuesInTheirUnitsNeverInExponents) {
  // Seconds: ns, us, ms, s; three digits; large ones grouped.
  EXPECT_EQ(format_value(0, "seconds"), "0 s");
  EXPECT_EQ(format_value(1.234, "seconds"), "1.23 s");
  EXPECT_EQ(format_value(0.85, "seconds"), "850 ms");
  EXPECT_EQ(format_value(42e-6, "seconds"), "42 us");
  EXPECT_EQ(format_value(3.5e-9, "seconds"), "3.5 ns");
  EXPECT_EQ(format_value(2e-12, "seconds"), "0.002 ns");
  EXPECT_EQ(format_value(-0.0125, "seconds"), "-12.5 ms");
  EXPECT_EQ(format_value(0.9999, "seconds"), "1 s");
  EXPECT_EQ(format_value(123456.7, "seconds"), "123,457 s");
  // Bytes: binary units, three digits.
  EXPECT_EQ(format_value(512, "bytes"), "512 B");
  EXPECT_EQ(format_value(2699264, "bytes"), "2.57 MiB");
  EXPECT_EQ(format_value(3.44e7, "bytes"), "32.8 MiB");
  EXPECT_EQ(format_value(1023.9 * 1024, "bytes"), "1 MiB");
  EXPECT_EQ(format_value(-1536, "bytes"), "-1.5 KiB");
  EXPECT_EQ(format_value(1e30, "bytes"), "867,361,737,988 EiB");
  // Percent.
  EXPECT_EQ(format_value(12.5, "percent"), "12.5 %");
  EXPECT_EQ(format_value(100, "percent"), "100 %");
  EXPECT_EQ(format_value(0.000123, "percent"), "0.000123 %");
  // Counts: whole numbers as they are, grouped from five digits; fractions to three digits.
  EXPECT_EQ(format_value(4821, ""), "4821");
  EXPECT_EQ(format_value(34400000, ""), "34,400,000");
  EXPECT_EQ(format_value(-12345, ""), "-12,345");
  EXPECT_EQ(format_value(1e20, ""), "100,000,000,000,000,000,000");
  EXPECT_EQ(format_value(1.8412, ""), "1.84");
  EXPECT_EQ(format_value(0.9908, ""), "0.991");
  EXPECT_EQ(format_value(12345.6, ""), "12,346");
  EXPECT_EQ(format_value(1e-15, ""), "~0");
  // Energy with SI prefixes; temperature.
  EXPECT_EQ(format_value(0.0123, "joules"), "12.3 mJ");
  EXPECT_EQ(format_value(45678, "joules"), "45.7 kJ");
  EXPECT_EQ(format_value(67, "celsius"), "67 C");
  // Signed changes in percent.
  EXPECT_EQ(format_signed_percent(98.74), "+98.7 %");
  EXPECT_EQ(format_signed_percent(-12), "-12.0 %");
  EXPECT_EQ(format_signed_percent(2800), "+2800 %");
  EXPECT_EQ(format_signed_percent(-123456), "-123,456 %");
  EXPECT_EQ(format_signed_percent(1e25), "+10,000,000,000,000,000,905,969,664 %");
  // No exponent anywhere, whatever the magnitude.
  const std::regex exponent("[0-9][eE][+-]?[0-9]");
  for (const char* unit : {"", "bytes", "seconds", "percent", "joules", "watts", "celsius"}) {
    for (double v = 1e-300; v < 1e300; v *= 7.3) {
      for (double s : {v, -v}) {
        EXPECT_FALSE(std::regex_search(format_value(s, unit), exponent))
            << s << " " << unit << ": " << format_value(s, unit);
      }
    }
  }
  for (double v = 1e-300; v < 1e300; v *= 7.3) EXPECT_FALSE(std::regex_search(format_signed_percent(v), exponent)) << v;
}

TEST(Compare, TextAndJsonHaveNoExponentsWithTinyPAndHugeValues) {
  // 30 vs 30: p far below 1e-4; values of 1e20 and 1e-12.
  Comparison c = compare_runs(runs_of("a", 30, {{"proc_huge", 1e20}, {"proc_tiny_seconds", 1e-12}}),
                              runs_of("b", 30, {{"proc_huge", 3e20}, {"proc_tiny_seconds", 3e-12}}), {.alpha = 1e-6});
  std::string text = comparison_text(c, {.all = true});
  EXPECT_FALSE(std::regex_search(text, std::regex("[0-9]e[+-]?[0-9]"))) << text;
  EXPECT_NE(text.find("<0.0001"), std::string::npos) << text;
  EXPECT_NE(text.find("alpha 0.000001"), std::string::npos) << text;
}

// A recording written by perf-monitor (schema 3) with units in its header that differ from
// what the names suggest: the header wins; without them, the names decide.
TEST(Compare, UnitsFromTheHeaderWinOverTheName) {
  const std::string summary =
      R"({"type":"summary","mode":"run","duration_s":1.5,"proc_io_rchar":6477,"proc_count_seconds":7,)"
      R"("proc_rss_bytes":{"min":1,"max":2},)"
      R"("cpu":{"time_seconds":{"1":{"irq":0.25}},"other_bytes":{"x":3}},)"
      R"("proc_runq_latency_seconds":{"count":4,"sum":0.002,"p50":0.000256,"bucket_base":1e-06,"buckets":[0,1,3]},)"
      R"("odd_seconds":5})";
  const std::string header =
      R"({"type":"header","schema_version":3,"mode":"run","metrics":{)"
      R"("proc_io_rchar":{"unit":"bytes","kind":"counter","help":"read() bytes"},)"
      R"("proc_count_seconds":{"unit":"","kind":"counter","help":"a count, whatever its name says"},)"
      R"("proc_rss_bytes":{"unit":"percent","kind":"gauge","help":"said to be a percent"},)"
      R"("cpu.time_seconds":{"unit":"joules","kind":"counter","help":"said to be energy"},)"
      R"("proc_runq_latency_seconds":{"unit":"bytes","kind":"histogram","help":"said to be bytes"},)"
      R"("odd_seconds":{"unit":"furlongs","kind":"gauge","help":"a unit this perf-monitor does not know"}}})";
  auto with = parse_recording(header + "\n" + summary + "\n", "with.jsonl");
  ASSERT_TRUE(with) << with.error().message;
  auto f = run_figures(*with);
  ASSERT_TRUE(f) << f.error().message;
  auto unit = [&](const std::string& figure) -> std::string {
    auto it = f->units.find(figure);
    return it == f->units.end() ? "(from the name)" : it->second;
  };
  EXPECT_EQ(unit("proc_io_rchar"), "bytes");
  EXPECT_EQ(unit("proc_count_seconds"), "");
  EXPECT_EQ(unit("proc_rss_bytes.max"), "percent");         // a flat key: its first name
  EXPECT_EQ(unit("cpu.time_seconds.1.irq"), "joules");      // its first two names
  EXPECT_EQ(unit("cpu.other_bytes.x"), "(from the name)");  // not described
  EXPECT_EQ(unit("proc_runq_latency_seconds.p50"), "bytes");
  EXPECT_EQ(unit("proc_runq_latency_seconds.mean"), "bytes");
  EXPECT_EQ(unit("proc_runq_latency_seconds.count"), "");  // how many values, whatever their unit
  EXPECT_EQ(unit("odd_seconds"), "(from the name)");
  EXPECT_EQ(unit("duration_s"), "(from the name)");

  // The rows take the header's units, else the name's.
  std::vector<RunFigures> side(4, *f), other(4, *f);
  Comparison c = compare_runs(side, other, {});
  EXPECT_EQ(row(c, "proc_io_rchar").unit, "bytes");
  EXPECT_EQ(row(c, "proc_count_seconds").unit, "");
  EXPECT_EQ(row(c, "cpu.time_seconds.1.irq").unit, "joules");
  EXPECT_EQ(row(c, "cpu.other_bytes.x").unit, "bytes");
  EXPECT_EQ(row(c, "odd_seconds").unit, "seconds");
  EXPECT_EQ(row(c, "duration_s").unit, "seconds");
  std::string text = comparison_text(c, {.all = true});
  EXPECT_NE(text.find("6.33 KiB"), std::string::npos) << text;  // 6477 bytes, not a count
  EXPECT_NE(text.find("250 mJ"), std::string::npos) << text;

  // Schema 2 (no "metrics" in the header), and a file without a header: the names decide.
  for (const std::string& text2 : {R"({"type":"header","schema_version":2,"mode":"run"})"
                                   "\n" +
                                       summary + "\n",
                                   summary + "\n"}) {
    auto old = parse_recording(text2, "old.jsonl");
    ASSERT_TRUE(old) << old.error().message;
    auto g = run_figures(*old);
    ASSERT_TRUE(g);
    EXPECT_TRUE(g->units.empty());
    Comparison d = compare_runs({*g, *g, *g, *g}, {*g, *g, *g, *g}, {});
    EXPECT_EQ(row(d, "proc_io_rchar").unit, "");
    EXPECT_EQ(row(d, "proc_count_seconds").unit, "seconds");
    EXPECT_EQ(row(d, "cpu.time_seconds.1.irq").unit, "seconds");
    EXPECT_EQ(row(d, "proc_runq_latency_seconds.p50").unit, "seconds");
  }
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
