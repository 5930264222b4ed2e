// SPDX-License-Identifier: Apache-2.0
// `perf-monitor report --compare BASE... -- NEW...`: every figure of the runs' summaries side by
// side, with its change, the Hodges-Lehmann shift and its confidence interval, and whether the
// change is beyond the noise. The unit of comparison is the run: intervals of one run are not
// independent samples. What changed leads: the command's own figures first, the significant
// ones first in each group; the unchanged ones are folded (kept in the JSON, marked).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/recording.h"

namespace pm::report {

// The figures of one run: every number of its summary by path ("proc_cpu_user_seconds",
// "cpu.utilisation_percent.all.user"); a histogram gives its numeric fields and its mean
// ("scheduler_runq_latency_seconds.p99", ".mean"). Histograms are also kept whole, to overlay.
struct RunFigures {
  std::string file;
  std::vector<std::pair<std::string, double>> figures;  // in the summary's order
  std::map<std::string, Json> histograms;
  // Figure (or histogram) -> unit, where the recording's header says it (schema 3: its
  // "metrics"); the others' units are guessed from their names.
  std::unordered_map<std::string, std::string> units;
  bool truncated = false;  // the summary held more than kMaxFigures figures
  size_t long_names = 0;   // figures left out: names longer than kMaxPathBytes
};

// Figures per run: a summary of perf-monitor holds hundreds; beyond this it is not one, and
// the rest is left out with a warning (each figure costs a few regular expressions).
inline constexpr size_t kMaxFigures = 20000;

Result<RunFigures> run_figures(const Recording& rec);

enum class Correction { kHolm, kBenjaminiHochberg };

struct CompareOptions {
  double alpha = 0.05;
  Correction correction = Correction::kBenjaminiHochberg;
  double min_effect_percent = 0;
  std::vector<std::string> fail_on;           // globs: figures whose regression fails the command
  std::vector<std::string> higher_is_better;  // globs added to the built-in ones
  std::vector<std::string> only;              // globs: compare only these figures (empty: all)
};

inline constexpr size_t kMinRunsToDecide = 4;  // 3 vs 3 cannot reach p < 0.1
inline constexpr size_t kRunsForPower = 9;

struct FigureRow {
  std::string figure, unit;
  std::vector<double> base, next;
  double base_median = 0, new_median = 0;
  std::optional<double> change_percent;  // (new median - base median) / |base median|
  bool tested = false;                   // in the family the correction counts
  bool gated = false;                    // matches --fail-on: corrected with the other gated figures only
  double p = 1, p_adjusted = 1;
  bool exact = false;
  double shift = 0, shift_low = 0, shift_high = 0, confidence = 0;
  bool shift_bounded = false;
  std::optional<double> shift_percent, shift_low_percent, shift_high_percent;
  bool significant = false;
  bool higher_is_better = false;
  bool worse = false;  // significant, and in the direction that is worse
  // "higher", "lower", "no significant change", "below --min-effect", "too few runs",
  // "no verdict (one run per side)", "same in every run", "only in base", "only in new"
  std::string verdict;
  bool command = false;  // one of the command's own figures (the summary's flat proc_* keys, duration_s)
  // Left out of the text and the page's leading table by default: the same in every run, no
  // significant change, below --min-effect, too few runs, in one side only, or the monitor's
  // own bookkeeping (how long each counter ran).
  bool folded = false;
};

struct Comparison {
  std::vector<std::string> base_files, new_files;
  CompareOptions options;
  std::vector<FigureRow> rows;  // the command's figures first, then by significance and effect
  std::vector<std::string> warnings;
  bool decidable = false;                // at least kMinRunsToDecide runs per side
  size_t tested = 0;                     // figures tested (both families)
  size_t gated = 0;                      // of them, the --fail-on figures (a family of their own)
  std::vector<std::string> regressions;  // --fail-on figures that are significantly worse
  // Summary histograms found in both sides, summed over each side's runs.
  struct Overlay {
    std::string path, unit;
    double bucket_base = 1;
    std::vector<double> base, next;
  };
  std::vector<Overlay> overlays;
};

Comparison compare_runs(const std::vector<RunFigures>& base, const std::vector<RunFigures>& next,
                        const CompareOptions& options);

// The text form fits a terminal: at most this many lines (but for warnings, which are all
// said) unless every figure is asked for.
inline constexpr size_t kMaxTextLines = 40;
struct TextOptions {
  bool all = false;  // every figure, the folded ones too, in the same order
  size_t max_lines = kMaxTextLines;
};

std::string comparison_text(const Comparison& c, const TextOptions& t = {});
std::string comparison_json(const Comparison& c);  // also the data of the HTML comparison page

// The unit of a figure from its name's suffix: "bytes", "seconds", "percent", ... or "": for
// recordings whose header does not say (schema 2 and older).
std::string unit_of(const std::string& figure);

// A value in its unit, as a person reads it, never in exponent notation: "1.23 s", "850 ms",
// "42 us", "3.28 MiB", "12.5 %", "4821", "34,400,000", "1.84".
std::string format_value(double v, const std::string& unit);
// A signed change in percent: "+98.7 %", "-12.0 %", "+2,800 %".
std::string format_signed_percent(double v);

}  // namespace pm::report
