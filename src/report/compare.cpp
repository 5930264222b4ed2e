// SPDX-License-Identifier: Apache-2.0
#include "report/compare.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "report/stats.h"

namespace pm::report {
namespace {

using Ordered = nlohmann::ordered_json;

// Summary keys that name the run rather than measure it.
bool is_identity(const std::string& key) { return key == "pid" || key == "signal" || key == "type"; }

// Recursion is bounded: json_line.h keeps a summary within kMaxDepth levels.
void collect(const Json& j, const std::string& prefix, RunFigures& out) {
  for (const auto& [key, value] : j.items()) {
    if (out.figures.size() >= kMaxFigures) {
      out.truncated = true;
      return;
    }
    if (prefix.empty() && is_identity(key)) continue;
    if (prefix.size() + key.size() > kMaxPathBytes) {
      ++out.long_names;
      continue;
    }
    std::string name = prefix;
    if (!name.empty()) name += '.';
    name += key;
    if (is_histogram(value)) {
      out.histograms[name] = value;
      for (const auto& [fk, fv] : value.items()) {
        if (fk == "bucket_base" || !fv.is_number()) continue;
        std::string field = name;
        field += '.';
        field += fk;
        out.figures.emplace_back(std::move(field), fv.get<double>());
      }
      auto count = value.find("count");
      auto sum = value.find("sum");
      if (count != value.end() && sum != value.end() && count->is_number() && sum->is_number() &&
          count->get<double>() > 0) {
        out.figures.emplace_back(name + ".mean", sum->get<double>() / count->get<double>());
      }
    } else if (value.is_object()) {
      collect(value, name, out);
    } else if (value.is_number()) {
      out.figures.emplace_back(name, value.get<double>());
    }
  }
}

bool matches(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return ::fnmatch(g.c_str(), name.c_str(), 0) == 0; });
}

// Most figures are costs (time, bytes, faults, switches, latency): higher is worse. These say
// the opposite in their name.
bool higher_is_better(const std::string& figure, const CompareOptions& o) {
  static const std::regex kBetter(R"((^|[._])(ipc|idle|free|available|instructions_per_cycle)([._]|$))");
  return std::regex_search(figure, kBetter) || matches(o.higher_is_better, figure);
}

std::string signed_percent(double v) { return fmt::format("{:+.1f}%", v); }

std::string human(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "-";
  double a = std::fabs(v);
  if (unit == "bytes") {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (a >= 1024 && i < 4) {
      a /= 1024;
      v /= 1024;
      ++i;
    }
    return i == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.3g} {}", v, units[i]);
  }
  if (unit == "seconds") {
    if (a == 0) return "0 s";
    if (a < 1e-6) return fmt::format("{:.3g} ns", v * 1e9);
    if (a < 1e-3) return fmt::format("{:.3g} us", v * 1e6);
    if (a < 1) return fmt::format("{:.3g} ms", v * 1e3);
    return fmt::format("{:.4g} s", v);
  }
  std::string suffix = unit == "percent"   ? "%"
                       : unit == "celsius" ? " C"
                       : unit == "joules"  ? " J"
                       : unit == "watts"   ? " W"
                                           : "";
  if (a != 0 && (a >= 1e7 || a < 1e-3)) return fmt::format("{:.3g}{}", v, suffix);
  if (v == std::floor(v)) return fmt::format("{:.0f}{}", v, suffix);
  return fmt::format("{:.4g}{}", v, suffix);
}

std::string p_text(double p) { return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.4f}", p); }

Ordered number_or_null(double v) { return std::isfinite(v) ? Ordered(v) : Ordered(nullptr); }
Ordered optional_json(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? Ordered(*v) : Ordered(nullptr);
}

// The smallest two-sided p the exact test can give: 2 / C(m + n, m).
double smallest_p(size_t m, size_t n) {
  const auto a = static_cast<double>(m), b = static_cast<double>(n);
  return 2.0 / std::exp(std::lgamma(a + b + 1) - std::lgamma(a + 1) - std::lgamma(b + 1));
}

}  // namespace

std::string unit_of(const std::string& figure) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (true) {
    size_t dot = figure.find('.', at);
    parts.push_back(figure.substr(at, dot == std::string::npos ? std::string::npos : dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  if (parts.size() > 1 && parts.back() == "count") return "";  // a histogram's number of values
  static const std::vector<std::pair<std::regex, std::string>> kUnits{
      {std::regex("(^|_)bytes($|_)"), "bytes"},     {std::regex("(^|_)(seconds|s)($|_(min|max)$)"), "seconds"},
      {std::regex("(^|_)percent($|_)"), "percent"}, {std::regex("(^|_)celsius($|_)"), "celsius"},
      {std::regex("(^|_)joules($|_)"), "joules"},   {std::regex("(^|_)watts($|_)"), "watts"}};
  // The metric's own name first (section.metric.labels..., or a flat key), then the rest: a
  // label may be another metric's name (pmc.running_percent.task_clock_seconds is a percent).
  std::vector<std::string> order;
  if (parts.size() > 1) order.push_back(parts[1]);
  order.push_back(parts[0]);
  for (size_t k = parts.size(); k-- > 2;) order.push_back(parts[k]);
  for (const std::string& part : order) {
    for (const auto& [re, unit] : kUnits) {
      if (std::regex_search(part, re)) return unit;
    }
  }
  return "";
}

Result<RunFigures> run_figures(const Recording& rec) {
  if (rec.summary.is_null()) {
    return make_error(Errc::kInvalidArgument,
                      rec.path + " has no summary record (the run did not finish): it cannot be compared");
  }
  RunFigures r;
  r.file = rec.path;
  collect(rec.summary, "", r);
  return r;
}

Comparison compare_runs(const std::vector<RunFigures>& base, const std::vector<RunFigures>& next,
                        const CompareOptions& options) {
  Comparison c;
  c.options = options;
  for (const RunFigures& r : base) c.base_files.push_back(r.file);
  for (const RunFigures& r : next) c.new_files.push_back(r.file);
  const size_t nb = base.size(), nn = next.size();
  c.decidable = nb >= kMinRunsToDecide && nn >= kMinRunsToDecide;
  if (nb == 1 && nn == 1) {
    c.warnings.push_back("one run per side: the changes are shown without a verdict (run each side at least " +
                         std::to_string(kMinRunsToDecide) + " times, better " + std::to_string(kRunsForPower) + ")");
  } else if (!c.decidable) {
    c.warnings.push_back(
        fmt::format("too few runs to decide: {} vs {} (at least {} per side are needed; with 3 vs 3 "
                    "no difference can reach p < 0.1)",
                    nb, nn, kMinRunsToDecide));
  } else if (nb < kRunsForPower || nn < kRunsForPower) {
    c.warnings.push_back(
        fmt::format("{} vs {} runs: only large changes can be told from noise (the smallest "
                    "possible p is {:.2g}); {} or more runs per side are better",
                    nb, nn, smallest_p(nb, nn), kRunsForPower));
  }

  // Every figure in the order it first appears.
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto* side : {&base, &next}) {
    for (const RunFigures& r : *side) {
      for (const auto& [name, v] : r.figures) {
        if (!options.only.empty() && !matches(options.only, name)) continue;
        if (seen.insert(name).second) names.push_back(name);
      }
    }
  }
  for (const auto* side : {&base, &next}) {
    for (const RunFigures& r : *side) {
      if (r.long_names > 0) {
        c.warnings.push_back(
            fmt::format("{}: {} figures of its summary have names longer than {} bytes and are "
                        "not compared",
                        r.file, r.long_names, kMaxPathBytes));
      }
      if (r.truncated) {
        c.warnings.push_back(fmt::format("{}: its summary holds more than {} figures; the others are not compared",
                                         r.file, kMaxFigures));
      }
    }
  }
  // Per run, each figure's value by name: one look-up each.
  using Index = std::vector<std::unordered_map<std::string_view, double>>;
  auto index_of = [](const std::vector<RunFigures>& side) {
    Index out(side.size());
    for (size_t i = 0; i < side.size(); ++i) {
      out[i].reserve(side[i].figures.size());
      for (const auto& [n, v] : side[i].figures) out[i].insert_or_assign(n, v);  // a repeated name: the last
    }
    return out;
  };
  const Index base_index = index_of(base), next_index = index_of(next);
  auto values = [](const Index& side, const std::string& name) {
    std::vector<double> out;
    for (const auto& r : side) {
      auto it = r.find(name);
      if (it != r.end()) out.push_back(it->second);
    }
    return out;
  };

  std::vector<size_t> family;
  std::vector<double> family_p;
  for (const std::string& name : names) {
    FigureRow row;
    row.figure = name;
    row.unit = unit_of(name);
    row.base = values(base_index, name);
    row.next = values(next_index, name);
    row.higher_is_better = higher_is_better(name, options);
    row.base_median = stats::median(row.base);
    row.new_median = stats::median(row.next);
    if (row.base.empty() || row.next.empty()) {
      row.verdict = row.base.empty() ? "only in new" : "only in base";
      c.rows.push_back(std::move(row));
      continue;
    }
    if (row.base_median != 0)
      row.change_percent = (row.new_median - row.base_median) / std::fabs(row.base_median) * 100;
    bool all_same = std::all_of(row.base.begin(), row.base.end(), [&](double v) { return v == row.base[0]; }) &&
                    std::all_of(row.next.begin(), row.next.end(), [&](double v) { return v == row.base[0]; });
    if (all_same) {
      row.verdict = "same in every run";
      c.rows.push_back(std::move(row));
      continue;
    }
    if (nb == 1 && nn == 1) {
      row.shift = row.next[0] - row.base[0];
      if (row.base_median != 0) row.shift_percent = row.shift / std::fabs(row.base_median) * 100;
      row.verdict = "no verdict (one run per side)";
      c.rows.push_back(std::move(row));
      continue;
    }
    stats::UTest t = stats::mann_whitney(row.base, row.next);
    stats::Shift s = stats::hodges_lehmann(row.base, row.next, options.alpha);
    row.p = row.p_adjusted = t.p;
    row.exact = t.exact;
    row.shift = s.estimate;
    row.shift_low = s.low;
    row.shift_high = s.high;
    row.shift_bounded = s.bounded;
    row.confidence = s.confidence;
    if (row.base_median != 0) {
      double scale = 100 / std::fabs(row.base_median);
      row.shift_percent = s.estimate * scale;
      if (s.bounded) {
        row.shift_low_percent = s.low * scale;
        row.shift_high_percent = s.high * scale;
      }
    }
    if (!c.decidable) {
      row.verdict = "too few runs";
    } else {
      row.tested = true;
      family.push_back(c.rows.size());
      family_p.push_back(t.p);
    }
    c.rows.push_back(std::move(row));
  }

  c.tested = family.size();
  // With --fail-on, the gated figures are a family of their own (the CI decision is about them
  // alone, like a trial's primary end points); the others are corrected among themselves.
  std::vector<double> adjusted(family.size(), 1.0);
  for (bool gated : {true, false}) {
    std::vector<size_t> members;
    std::vector<double> ps;
    for (size_t k = 0; k < family.size(); ++k) {
      FigureRow& row = c.rows[family[k]];
      row.gated = matches(options.fail_on, row.figure);
      if (row.gated != gated) continue;
      members.push_back(k);
      ps.push_back(family_p[k]);
    }
    if (gated) c.gated = members.size();
    std::vector<double> adj = options.correction == Correction::kHolm ? stats::holm(ps) : stats::benjamini_hochberg(ps);
    for (size_t i = 0; i < members.size(); ++i) adjusted[members[i]] = adj[i];
  }
  for (size_t k = 0; k < family.size(); ++k) {
    FigureRow& row = c.rows[family[k]];
    row.p_adjusted = adjusted[k];
    bool beyond_noise = row.p_adjusted <= options.alpha;
    bool big_enough = !row.shift_percent || std::fabs(*row.shift_percent) >= options.min_effect_percent;
    row.significant = beyond_noise && big_enough && row.shift != 0;
    if (row.significant) {
      bool higher = row.shift > 0;
      row.verdict = higher ? "higher" : "lower";
      row.worse = higher != row.higher_is_better;
    } else {
      row.verdict = beyond_noise && row.shift != 0 ? "below --min-effect" : "no significant change";
    }
    if (row.worse && row.gated) c.regressions.push_back(row.figure);
  }

  // Histograms of both sides, summed over their runs, to overlay.
  std::vector<std::string> hist_names;
  std::set<std::string> hist_seen;
  for (const RunFigures& r : base) {
    for (const auto& [name, h] : r.histograms) {
      if (hist_seen.insert(name).second) hist_names.push_back(name);
    }
  }
  for (const std::string& name : hist_names) {
    if (!options.only.empty() && !matches(options.only, name) && !matches(options.only, name + ".*")) continue;
    Comparison::Overlay o;
    o.path = name;
    o.unit = unit_of(name);
    bool in_new = false;
    auto add = [&](const std::vector<RunFigures>& side, std::vector<double>& into, bool& found) {
      for (const RunFigures& r : side) {
        auto it = r.histograms.find(name);
        if (it == r.histograms.end()) continue;
        found = true;
        o.bucket_base = it->second["bucket_base"].get<double>();
        const Json& b = it->second["buckets"];
        if (into.size() < b.size()) into.resize(b.size(), 0);
        for (size_t k = 0; k < b.size(); ++k) into[k] += b[k].get<double>();
      }
    };
    bool in_base = false;
    add(base, o.base, in_base);
    add(next, o.next, in_new);
    auto nonzero = [](const std::vector<double>& v) {
      return std::any_of(v.begin(), v.end(), [](double x) { return x > 0; });
    };
    if (in_base && in_new && (nonzero(o.base) || nonzero(o.next))) c.overlays.push_back(std::move(o));
  }
  return c;
}

std::string comparison_text(const Comparison& c) {
  const CompareOptions& o = c.options;
  std::string out = fmt::format(
      "perf-monitor report --compare: {} base run{}, {} new run{}; two-sided Mann-Whitney U per figure, "
      "{} over {} figures{}, alpha {}, --min-effect {}%\n",
      c.base_files.size(), c.base_files.size() == 1 ? "" : "s", c.new_files.size(), c.new_files.size() == 1 ? "" : "s",
      o.correction == Correction::kHolm ? "Holm" : "Benjamini-Hochberg", c.tested,
      o.fail_on.empty() ? "" : fmt::format(" ({} --fail-on figures corrected among themselves)", c.gated), o.alpha,
      o.min_effect_percent);
  for (const std::string& w : c.warnings) out += "warning: " + w + "\n";
  size_t width = 6;
  for (const FigureRow& r : c.rows) width = std::max(width, r.figure.size());
  width = std::min<size_t>(width, 60);
  out += fmt::format("\n{:<{}}  {:>12}  {:>12}  {:>9}  {:<28}  {:>8}  {:>8}  {}\n", "figure", width, "base", "new",
                     "change", "shift [CI] of the base", "p", "p adj", "verdict");
  for (const FigureRow& r : c.rows) {
    std::string change = r.change_percent ? signed_percent(*r.change_percent) : "";
    std::string shift;
    if (r.shift_percent) {
      shift = signed_percent(*r.shift_percent);
      if (r.shift_low_percent)
        shift += fmt::format(" [{}, {}]", signed_percent(*r.shift_low_percent), signed_percent(*r.shift_high_percent));
    } else if (r.verdict != "same in every run" && !r.base.empty() && !r.next.empty()) {
      shift = (r.shift >= 0 ? "+" : "") + human(r.shift, r.unit);
      if (r.shift_bounded) shift += fmt::format(" [{}, {}]", human(r.shift_low, r.unit), human(r.shift_high, r.unit));
    }
    bool has_p = r.tested || r.verdict == "too few runs";
    std::string verdict = r.verdict;
    if (r.significant) verdict += r.worse ? " (worse)" : " (better)";
    out += fmt::format("{:<{}}  {:>12}  {:>12}  {:>9}  {:<28}  {:>8}  {:>8}  {}\n", r.figure, width,
                       r.base.empty() ? "-" : human(r.base_median, r.unit),
                       r.next.empty() ? "-" : human(r.new_median, r.unit), change, shift, has_p ? p_text(r.p) : "",
                       r.tested ? p_text(r.p_adjusted) : "", verdict);
  }
  size_t sig = 0;
  for (const FigureRow& r : c.rows) sig += r.significant ? 1 : 0;
  out += fmt::format("\n{} of {} figures differ significantly", sig, c.tested);
  if (!c.decidable) out += " (too few runs to decide)";
  out += sig > 0 ? ":\n" : ".\n";
  for (const char* direction : {"higher", "lower"}) {
    std::vector<std::string> names;
    for (const FigureRow& r : c.rows) {
      if (r.significant && r.verdict == direction) names.push_back(r.figure + (r.worse ? " (worse)" : " (better)"));
    }
    if (!names.empty()) out += fmt::format("  {}: {}\n", direction, fmt::join(names, ", "));
  }
  if (!o.fail_on.empty()) {
    out += c.regressions.empty() ? "No regression among the --fail-on figures.\n"
                                 : fmt::format("Regression: {}\n", fmt::join(c.regressions, ", "));
  }
  return out;
}

std::string comparison_json(const Comparison& c) {
  const CompareOptions& o = c.options;
  Ordered j{{"type", "comparison"},
            {"base", c.base_files},
            {"new", c.new_files},
            {"test", "Mann-Whitney U, two-sided"},
            {"correction", o.correction == Correction::kHolm ? "holm" : "benjamini-hochberg"},
            {"alpha", o.alpha},
            {"min_effect_percent", o.min_effect_percent},
            {"decidable", c.decidable},
            {"tested", c.tested},
            {"gated", c.gated},
            {"warnings", c.warnings}};
  Ordered rows = Ordered::array();
  for (const FigureRow& r : c.rows) {
    Ordered row{{"figure", r.figure},
                {"unit", r.unit},
                {"base", r.base},
                {"new", r.next},
                {"base_median", number_or_null(r.base_median)},
                {"new_median", number_or_null(r.new_median)},
                {"change_percent", optional_json(r.change_percent)}};
    if (!r.base.empty() && !r.next.empty() && r.verdict != "same in every run") {
      Ordered shift{{"estimate", r.shift}, {"percent", optional_json(r.shift_percent)}};
      if (r.shift_bounded) {
        shift["low"] = r.shift_low;
        shift["high"] = r.shift_high;
        shift["low_percent"] = optional_json(r.shift_low_percent);
        shift["high_percent"] = optional_json(r.shift_high_percent);
        shift["confidence"] = r.confidence;
      }
      row["shift"] = std::move(shift);
    }
    if (r.tested || r.verdict == "too few runs") {
      row["p"] = r.p;
      row["exact"] = r.exact;
    }
    if (r.tested) {
      row["p_adjusted"] = r.p_adjusted;
      row["family"] = r.gated ? "fail-on" : o.fail_on.empty() ? "all" : "others";
    }
    row["verdict"] = r.verdict;
    row["significant"] = r.significant;
    row["higher_is_better"] = r.higher_is_better;
    row["worse"] = r.worse;
    rows.push_back(std::move(row));
  }
  j["figures"] = std::move(rows);
  Ordered overlays = Ordered::array();
  for (const Comparison::Overlay& ov : c.overlays) {
    overlays.push_back(Ordered{
        {"path", ov.path}, {"unit", ov.unit}, {"bucket_base", ov.bucket_base}, {"base", ov.base}, {"new", ov.next}});
  }
  j["histograms"] = std::move(overlays);
  j["fail_on"] = o.fail_on;
  j["regressions"] = c.regressions;
  return j.dump(-1, ' ', false, Ordered::error_handler_t::replace);
}

}  // namespace pm::report
