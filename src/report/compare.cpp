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

// What the recording says a metric's unit is (schema 3: the header's "metrics", keyed by
// "<family>.<name>" or a flat summary key), or nullopt where it does not say or says something
// this perf-monitor does not know.
std::optional<std::string> described_unit(const Json* metrics, const std::string& key) {
  if (metrics == nullptr) return std::nullopt;
  auto it = metrics->find(key);
  if (it == metrics->end() || !it->is_object()) return std::nullopt;
  auto unit = it->find("unit");
  if (unit == it->end() || !unit->is_string()) return std::nullopt;
  static const std::set<std::string> kKnown{"", "bytes", "seconds", "joules", "celsius", "percent", "watts"};
  std::string u = unit->get<std::string>();
  if (!kKnown.contains(u)) return std::nullopt;
  return u;
}

// Recursion is bounded: json_line.h keeps a summary within kMaxDepth levels. A figure belongs to
// the description of its first two names ("cpu.time_seconds" for cpu.time_seconds.1.irq), else
// of its first ("proc_rss_max", "proc_runq_latency_seconds" for its .p99): `unit` is what the
// levels above found.
void collect(const Json& j, const std::string& prefix, size_t depth, const Json* metrics,
             const std::optional<std::string>& unit, RunFigures& out) {
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
    std::optional<std::string> here = depth < 2 ? described_unit(metrics, name) : std::nullopt;
    if (!here) here = unit;
    if (is_histogram(value)) {
      out.histograms[name] = value;
      if (here) out.units[name] = *here;
      for (const auto& [fk, fv] : value.items()) {
        if (fk == "bucket_base" || !fv.is_number()) continue;
        std::string field = name;
        field += '.';
        field += fk;
        // A histogram's count is how many values it holds, whatever their unit.
        if (here) out.units[field] = fk == "count" ? "" : *here;
        out.figures.emplace_back(std::move(field), fv.get<double>());
      }
      auto count = value.find("count");
      auto sum = value.find("sum");
      if (count != value.end() && sum != value.end() && count->is_number() && sum->is_number() &&
          count->get<double>() > 0) {
        if (here) out.units[name + ".mean"] = *here;
        out.figures.emplace_back(name + ".mean", sum->get<double>() / count->get<double>());
      }
    } else if (value.is_object()) {
      collect(value, name, depth + 1, metrics, here, out);
    } else if (value.is_number()) {
      if (here) out.units[name] = *here;
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

// Digits grouped by thousands ("34,400,000"), from five digits up: "4821" reads as well
// without.
std::string grouped(std::string digits) {
  size_t start = !digits.empty() && (digits[0] == '-' || digits[0] == '+') ? 1 : 0;
  size_t end = digits.find('.');
  if (end == std::string::npos) end = digits.size();
  if (end - start < 5) return digits;
  for (size_t at = end; at > start + 3;) {
    at -= 3;
    digits.insert(at, 1, ',');
  }
  return digits;
}

// v with `sig` significant digits in fixed notation (never an exponent): trailing zeros of the
// fraction dropped, large numbers grouped. Values too small for nine decimals read "~0".
std::string fixed(double v, int sig = 3) {
  if (v == 0) return "0";
  double a = std::fabs(v);
  int exponent = static_cast<int>(std::floor(std::log10(a)));
  int decimals = std::clamp(sig - 1 - exponent, 0, 9);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "0" || s == "-0") return "~0";
  return grouped(std::move(s));
}

// v in a unit with SI prefixes ("1.2 mJ", "3.4 kW"): from nano to tera, beyond that in the
// largest or smallest, in fixed notation still.
std::string si(double v, const char* unit) {
  static const std::pair<double, const char*> kPrefixes[] = {{1e12, "T"}, {1e9, "G"},  {1e6, "M"},  {1e3, "k"},
                                                             {1, ""},     {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}};
  double a = std::fabs(v);
  if (a == 0) return fmt::format("0 {}", unit);
  for (const auto& [scale, prefix] : kPrefixes) {
    if (a >= scale * 0.9995 || scale == 1e-9) return fmt::format("{} {}{}", fixed(v / scale), prefix, unit);
  }
  return fmt::format("{} {}", fixed(v), unit);
}

std::string p_text(double p) { return p < 1e-4 ? "<0.0001" : fmt::format("{:.4f}", p); }

// The smallest p the exact test can reach, for the warning: two digits, or a bound.
std::string p_bound_text(double p) { return p < 1e-4 ? "below 0.0001" : fmt::format("{:.2g}", p); }

Ordered number_or_null(double v) { return std::isfinite(v) ? Ordered(v) : Ordered(nullptr); }
Ordered optional_json(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? Ordered(*v) : Ordered(nullptr);
}

// The smallest two-sided p the exact test can give: 2 / C(m + n, m).
double smallest_p(size_t m, size_t n) {
  const auto a = static_cast<double>(m), b = static_cast<double>(n);
  return 2.0 / std::exp(std::lgamma(a + b + 1) - std::lgamma(a + 1) - std::lgamma(b + 1));
}

// The unit the runs' headers give a figure (the first run that says), else the name's.
std::string unit_from(const std::vector<RunFigures>& base, const std::vector<RunFigures>& next,
                      const std::string& name) {
  for (const auto* side : {&base, &next}) {
    for (const RunFigures& r : *side) {
      auto it = r.units.find(name);
      if (it != r.units.end()) return it->second;
    }
  }
  return unit_of(name);
}

// The command's own figures: the summary's flat proc_* keys and its wall time. Among equally
// significant ones, what a reader asks first: its CPU time, then where else its time went,
// its memory, I/O, faults and switches.
bool is_command_figure(const std::string& figure) { return figure.starts_with("proc_") || figure == "duration_s"; }
size_t command_rank(const std::string& figure) {
  static const char* kOrder[] = {"proc_cpu_",
                                 "proc_on_cpu_",
                                 "proc_runq_",
                                 "proc_blocked_",
                                 "duration_s",
                                 "proc_rss_",
                                 "proc_pss_",
                                 "proc_anon_",
                                 "proc_shared_",
                                 "proc_vm_size_",
                                 "proc_io_",
                                 "proc_bio_",
                                 "proc_minor_faults",
                                 "proc_major_faults",
                                 "proc_voluntary_switches",
                                 "proc_involuntary_switches"};
  for (size_t k = 0; k < std::size(kOrder); ++k) {
    if (figure.starts_with(kOrder[k])) return k;
  }
  return std::size(kOrder);
}

// The monitor's own bookkeeping: how long each counter was enabled and running (the run's
// length, once per counter), perf-monitor's own figures. They follow the run, not the command's
// work: folded like an unchanged figure, whatever their test says.
bool is_bookkeeping(const std::string& figure) {
  return figure.starts_with("pmc.enabled_seconds.") || figure.starts_with("pmc.running_seconds.") ||
         figure.starts_with("self.");
}

// How big the change is, for the order: the shift (or the medians' change) as a share of the
// base; a change from zero, which has none, after those that have one.
double effect_of(const FigureRow& r) {
  if (r.shift_percent && std::isfinite(*r.shift_percent)) return std::fabs(*r.shift_percent);
  if (r.change_percent && std::isfinite(*r.change_percent)) return std::fabs(*r.change_percent);
  return r.shift != 0 ? -1 : -2;
}

// What changed leads: the command's own figures, then the rest; in each, the significant ones
// by adjusted p, then by effect, largest first. The rest is folded away but kept, in the same
// order: a figure the same in every run, without a significant change, below --min-effect,
// without enough runs for a verdict, or in one side only.
void lead_with_what_changed(Comparison& c) {
  for (FigureRow& r : c.rows) {
    r.command = is_command_figure(r.figure);
    bool big_enough = !r.shift_percent || std::fabs(*r.shift_percent) >= c.options.min_effect_percent;
    r.folded = !(r.significant || (r.verdict == "no verdict (one run per side)" && big_enough)) ||
               is_bookkeeping(r.figure);
  }
  struct Key {
    bool other, not_significant;
    double p;
    size_t rank;
    double effect;
  };
  std::vector<Key> keys;
  keys.reserve(c.rows.size());
  for (const FigureRow& r : c.rows) {
    bool has_p = r.tested || r.verdict == "too few runs";
    keys.push_back(
        {!r.command, !r.significant, has_p ? r.p_adjusted : 2.0, r.command ? command_rank(r.figure) : 0, effect_of(r)});
  }
  std::vector<size_t> order(c.rows.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const Key &a = keys[x], &b = keys[y];
    if (a.other != b.other) return b.other;
    if (a.not_significant != b.not_significant) return b.not_significant;
    if (a.p != b.p) return a.p < b.p;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.effect > b.effect;
  });
  std::vector<FigureRow> rows;
  rows.reserve(c.rows.size());
  for (size_t k : order) rows.push_back(std::move(c.rows[k]));
  c.rows = std::move(rows);
}

}  // namespace

std::string format_value(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "-";
  double a = std::fabs(v);
  if (unit == "bytes") {
    static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    size_t i = 0;
    // 1023.9 KiB would read "1024 KiB": the next unit from 1023.5 on.
    while (a >= 1023.5 && i + 1 < std::size(kUnits)) {
      a /= 1024;
      v /= 1024;
      ++i;
    }
    return fmt::format("{} {}", i == 0 ? grouped(fmt::format("{:.0f}", v)) : fixed(v), kUnits[i]);
  }
  if (unit == "seconds") {
    if (a == 0) return "0 s";
    if (a < 0.9995e-6) return fixed(v * 1e9) + " ns";
    if (a < 0.9995e-3) return fixed(v * 1e6) + " us";
    if (a < 0.9995) return fixed(v * 1e3) + " ms";
    return fixed(v) + " s";
  }
  if (unit == "percent") return fixed(v) + " %";
  if (unit == "celsius") return fixed(v) + " C";
  if (unit == "joules") return si(v, "J");
  if (unit == "watts") return si(v, "W");
  // A count: whole numbers as they are; fractions (an IPC, a mean) to three digits.
  if (v == std::floor(v)) return grouped(fmt::format("{:.0f}", v));
  if (a >= 1000) return grouped(fmt::format("{:.0f}", v));
  return fixed(v);
}

std::string format_signed_percent(double v) {
  if (!std::isfinite(v)) return "-";
  if (std::fabs(v) < 999.95) return fmt::format("{:+.1f} %", v);
  return grouped(fmt::format("{:+.0f}", v)) + " %";
}

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
  const Json* metrics = nullptr;
  if (rec.header.is_object()) {
    auto m = rec.header.find("metrics");
    if (m != rec.header.end() && m->is_object()) metrics = &*m;
  }
  collect(rec.summary, "", 0, metrics, std::nullopt, r);
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
                    "possible p is {}); {} or more runs per side are better",
                    nb, nn, p_bound_text(smallest_p(nb, nn)), kRunsForPower));
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
    row.unit = unit_from(base, next, name);
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
  lead_with_what_changed(c);

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
    o.unit = unit_from(base, next, name);
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

std::string comparison_text(const Comparison& c, const TextOptions& t) {
  const CompareOptions& o = c.options;
  std::vector<std::string> head;
  head.push_back(fmt::format("perf-monitor report --compare: {} base run{}, {} new run{}", c.base_files.size(),
                             c.base_files.size() == 1 ? "" : "s", c.new_files.size(),
                             c.new_files.size() == 1 ? "" : "s"));
  head.push_back(
      fmt::format("two-sided Mann-Whitney U per figure, {} over {} figures{}, alpha {}, --min-effect {} %",
                  o.correction == Correction::kHolm ? "Holm" : "Benjamini-Hochberg", c.tested,
                  o.fail_on.empty() ? "" : fmt::format(" ({} --fail-on figures corrected among themselves)", c.gated),
                  format_value(o.alpha, ""), format_value(o.min_effect_percent, "")));
  for (const std::string& w : c.warnings) head.push_back("warning: " + w);

  // The closing lines: how many differ, what is folded, the gate's decision.
  size_t sig = 0, constant = 0, no_change = 0, small = 0, too_few = 0, one_side = 0, bookkeeping = 0, leading = 0;
  for (const FigureRow& r : c.rows) {
    sig += r.significant ? 1 : 0;
    leading += r.folded ? 0 : 1;
    if (!r.folded) continue;
    if (is_bookkeeping(r.figure)) {
      ++bookkeeping;
    } else if (r.verdict == "same in every run") {
      ++constant;
    } else if (r.verdict == "too few runs") {
      ++too_few;
    } else if (r.verdict == "below --min-effect" || r.verdict == "no verdict (one run per side)") {
      ++small;
    } else if (r.base.empty() || r.next.empty()) {
      ++one_side;
    } else {
      ++no_change;
    }
  }
  std::vector<std::string> tail;
  tail.push_back(fmt::format("{} of {} figures differ significantly{}.", sig, c.tested,
                             c.decidable ? "" : " (too few runs to decide)"));
  if (leading == 0) {
    // Nothing leads: name the strongest candidates, in the table's order, and what would tell.
    std::vector<std::string> near;
    for (const FigureRow& r : c.rows) {
      if (near.size() == 3) break;
      bool candidate = c.decidable ? r.tested && r.p <= o.alpha : r.verdict == "too few runs";
      if (!candidate || r.shift == 0) continue;
      near.push_back(fmt::format("{} {} (p {})", r.figure,
                                 r.shift_percent ? format_signed_percent(*r.shift_percent)
                                                 : (r.shift > 0 ? "+" : "") + format_value(r.shift, r.unit),
                                 p_text(r.p)));
    }
    if (!near.empty() && c.decidable) {
      tail.push_back(fmt::format("Before the correction: {}; --fail-on or --figures GLOB tests those alone.",
                                 fmt::join(near, ", ")));
    } else if (!near.empty()) {
      tail.push_back(fmt::format("Largest changes, undecided: {}; at least {} runs per side decide.",
                                 fmt::join(near, ", "), kMinRunsToDecide));
    }
  }
  const size_t folded = c.rows.size() - leading;
  if (folded > 0) {
    std::vector<std::string> parts;
    if (constant > 0) parts.push_back(fmt::format("{} the same in every run", constant));
    if (no_change > 0) parts.push_back(fmt::format("{} without a significant change", no_change));
    if (small > 0) parts.push_back(fmt::format("{} below --min-effect", small));
    if (too_few > 0) parts.push_back(fmt::format("{} with too few runs to decide", too_few));
    if (one_side > 0) parts.push_back(fmt::format("{} in one side only", one_side));
    if (bookkeeping > 0) parts.push_back(fmt::format("{} counters' and perf-monitor's own time", bookkeeping));
    tail.push_back(fmt::format("{}: {} figure{}: {}{}", too_few > 0 ? "undecided or unchanged" : "unchanged", folded,
                               folded == 1 ? "" : "s", fmt::join(parts, ", "), t.all ? "" : " (--all shows them)"));
  }
  if (!o.fail_on.empty()) {
    tail.push_back(c.regressions.empty() ? "No regression among the --fail-on figures."
                                         : fmt::format("Regression: {}", fmt::join(c.regressions, ", ")));
  }

  // The rows that fit: by default the leading ones, as many as leave the whole within
  // t.max_lines (head, blank, table header, rows, a line for those left out, blank, tail).
  std::vector<const FigureRow*> shown;
  for (const FigureRow& r : c.rows) {
    if (t.all || !r.folded) shown.push_back(&r);
  }
  size_t left_out = 0;
  if (!t.all) {
    size_t fixed_lines = head.size() + 2 + 1 + tail.size() + 1;  // the last 1: "N more" when needed
    size_t room = t.max_lines > fixed_lines ? t.max_lines - fixed_lines : 0;
    if (shown.size() > room) {
      left_out = shown.size() - room;
      shown.resize(room);
    }
  }
  struct Cells {
    std::string figure, base, next, change, shift, p, p_adj, verdict;
  };
  std::vector<Cells> cells;
  cells.push_back({"figure", "base", "new", "change", "shift [CI] of the base", "p", "p adj", "verdict"});
  for (const FigureRow* r : shown) {
    Cells x;
    x.figure = r->figure;
    if (x.figure.size() > 60) x.figure = x.figure.substr(0, 57) + "...";
    x.base = r->base.empty() ? "-" : format_value(r->base_median, r->unit);
    x.next = r->next.empty() ? "-" : format_value(r->new_median, r->unit);
    x.change = r->change_percent ? format_signed_percent(*r->change_percent) : "";
    if (r->shift_percent) {
      x.shift = format_signed_percent(*r->shift_percent);
      if (r->shift_low_percent)
        x.shift += fmt::format(" [{}, {}]", format_signed_percent(*r->shift_low_percent),
                               format_signed_percent(*r->shift_high_percent));
    } else if (r->verdict != "same in every run" && !r->base.empty() && !r->next.empty()) {
      x.shift = (r->shift >= 0 ? "+" : "") + format_value(r->shift, r->unit);
      if (r->shift_bounded)
        x.shift += fmt::format(" [{}, {}]", format_value(r->shift_low, r->unit), format_value(r->shift_high, r->unit));
    }
    x.p = r->tested || r->verdict == "too few runs" ? p_text(r->p) : "";
    x.p_adj = r->tested ? p_text(r->p_adjusted) : "";
    x.verdict = r->verdict;
    if (r->significant) x.verdict += r->worse ? " (worse)" : " (better)";
    cells.push_back(std::move(x));
  }
  // Columns as wide as what they hold here: the default table stays narrow.
  size_t w[7] = {};
  for (const Cells& x : cells) {
    const std::string* col[7] = {&x.figure, &x.base, &x.next, &x.change, &x.shift, &x.p, &x.p_adj};
    for (size_t k = 0; k < 7; ++k) w[k] = std::max(w[k], col[k]->size());
  }
  std::string out;
  for (const std::string& line : head) out += line + "\n";
  out += "\n";
  for (size_t k = shown.empty() ? cells.size() : 0; k < cells.size(); ++k) {  // no rows: no table
    const Cells& x = cells[k];
    std::string line =
        fmt::format("{:<{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}  {:>{}}  {:>{}}  {}", x.figure, w[0], x.base, w[1], x.next,
                    w[2], x.change, w[3], x.shift, w[4], x.p, w[5], x.p_adj, w[6], x.verdict);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (left_out > 0) out += fmt::format("... and {} more that changed (--all shows them)\n", left_out);
  if (!shown.empty()) out += "\n";
  for (const std::string& line : tail) out += line + "\n";
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
    row["command"] = r.command;
    row["folded"] = r.folded;
    rows.push_back(std::move(row));
  }
  size_t folded = 0;
  for (const FigureRow& r : c.rows) folded += r.folded ? 1 : 0;
  j["folded"] = folded;
  j["figures"] = std::move(rows);  // every figure, in the text's order; "folded" as the text folds them
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
