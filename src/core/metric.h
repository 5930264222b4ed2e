// SPDX-License-Identifier: Apache-2.0
// The one metric model. A source describes each metric once (MetricDesc, a static) and reports
// Samples: running totals for counters, current values for gauges, bucket counts for histograms.
// Everything derived (deltas, rates, min/max, ratios) is computed by the Aggregator; sinks format.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pm {

enum class MetricKind { kCounter, kGauge, kHistogram };

class TextBlock;
// How a source shows its metrics in the text output (core/text_layout.h): a function next to the
// metrics' descriptors, which it finds by descriptor, never by a string.
using TextLayout = void (*)(TextBlock&);

// The label value of a breakdown's whole: cpu="all" beside cpu="0", "1", ...; device="all"
// beside each disk. JSON and text show it; Prometheus leaves it out where the parts are there
// (sum() over the parts gives it), so a sum over a label never counts twice.
inline constexpr std::string_view kAllLabel = "all";
// The labels whose breakdowns carry such a whole (per CPU, per device).
inline bool has_whole(std::string_view label) { return label == "cpu" || label == "device"; }

// Base units only: bytes, seconds, joules, celsius. kNone is a plain count; kPercent is only used
// for ratios the core derives.
enum class Unit { kNone, kBytes, kSeconds, kJoules, kCelsius, kPercent };

// The machine-wide figures `perf-monitor top` heads its screen with, named by what they are: a
// source marks its descriptor (system_figure()), and the view finds it by the mark, never by the
// metric's name (a rename cannot turn the header into n/a).
enum class SystemFigure : uint8_t {
  kNone,
  kCpuUtilisation,  // labels cpu, mode
  kMemUsed,
  kMemTotal,
  kMemAvailable,
  kMemCached,
  kSwapTotal,
  kSwapFree,
  kLoad1,
  kLoad5,
  kLoad15,
  kProcsRunning,
  kProcsBlocked,
  kPressureStall,  // labels resource, kind
};

struct MetricDesc {
  std::string_view family;  // JSON section and Prometheus name part, e.g. "memory"
  std::string_view name;    // within the family, e.g. "used_bytes"
  MetricKind kind = MetricKind::kGauge;
  Unit unit = Unit::kNone;
  std::string_view help;
  // Key in the run summary when it differs from "<family>_<name>" (the joule-profiler names).
  std::string_view summary_key = {};
  // Histograms: the upper bound of bucket i is bucket_base * 2^i, in the metric's unit.
  double bucket_base = 0;
  // Series of things that come and go (a cgroup, a process group): an interval in which a series
  // was not read leaves it out (Prometheus then drops it), instead of repeating its last value.
  bool transient = false;
  // The three below are set with ranked(), denominator_only() and shown_by().
  // One quantity, one name: where several sources measure it (context switches from eBPF, perf's
  // software counter and /proc/stat), each declares the same family and name with its rank, and
  // the core passes on only the series of the highest rank it observed (docs/metrics.md says
  // which source fills each). 0 is a source nothing else measures, or the last resort.
  int rank = 0;
  // Only the denominator of a ratio the core derives (wall time, the CPUs' time in all modes):
  // no sink shows it.
  bool denominator = false;
  // How the text output shows it; nullptr: a generic line (a source without a layout yet).
  TextLayout text = nullptr;
  // What the top view's header takes it for (system_figure()).
  SystemFigure system = SystemFigure::kNone;
  // Shown in each interval by the top lists' table (a row per cgroup, from the interval's
  // record), not as lines: the text output's intervals leave it out (a thousand cgroups' series
  // are not laid out to be thrown away); its summary, which has no table, shows it.
  bool in_interval_table = false;
};

// A descriptor with its text layout, for the statics of a source:
//   const MetricDesc kX = shown_by(layout_fn, {"family", "name", ...});
constexpr MetricDesc shown_by(TextLayout layout, MetricDesc d) {
  d.text = layout;
  return d;
}
// A descriptor of one of the figures the top view's header shows.
constexpr MetricDesc system_figure(SystemFigure f, MetricDesc d) {
  d.system = f;
  return d;
}
// A descriptor of a quantity other sources measure too, with this source's rank.
constexpr MetricDesc ranked(int rank, MetricDesc d) {
  d.rank = rank;
  return d;
}
// A descriptor that only feeds a ratio (MetricDesc::denominator).
constexpr MetricDesc denominator_only(MetricDesc d) {
  d.denominator = true;
  return d;
}

// Label pairs in a fixed order chosen by the source (e.g. cpu, then mode). Immutable once made,
// and shared: a copy is a reference, not the strings again. A source that reports the same
// series every interval (a thousand cgroups' eleven each) keeps its Labels and hands out copies:
// no allocation per sample, and the aggregator knows its series again by address before it
// compares strings.
class Labels {
 public:
  using value_type = std::pair<std::string, std::string>;
  using const_iterator = std::vector<value_type>::const_iterator;
  Labels() = default;
  Labels(std::initializer_list<value_type> pairs) : Labels(std::vector<value_type>(pairs)) {}
  explicit Labels(std::vector<value_type> pairs)
      : pairs_(pairs.empty() ? nullptr : std::make_shared<const std::vector<value_type>>(std::move(pairs))) {}
  [[nodiscard]] const_iterator begin() const { return pairs_ ? pairs_->begin() : const_iterator{}; }
  [[nodiscard]] const_iterator end() const { return pairs_ ? pairs_->end() : const_iterator{}; }
  [[nodiscard]] size_t size() const { return pairs_ ? pairs_->size() : 0; }
  [[nodiscard]] bool empty() const { return size() == 0; }
  [[nodiscard]] const value_type& operator[](size_t i) const { return (*pairs_)[i]; }
  friend bool operator==(const Labels& a, const Labels& b) {
    return a.pairs_ == b.pairs_ || std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::shared_ptr<const std::vector<value_type>> pairs_;
};

struct Sample {
  const MetricDesc* desc = nullptr;
  Labels labels;
  double value = 0;               // counter: running total; gauge: current value; histogram: sum
  std::vector<uint64_t> buckets;  // histogram: running count per log2 bucket (bucket i: < 2^i)
  // Gauge: a value the quantity is known to have reached since monitoring began, between
  // readings (a kernel high-water mark); it raises the run's maximum. 0 when none is known. A
  // sample whose value is NaN carries only this: the gauge itself was not read.
  double peak = 0;
  // Gauge: the run's maximum so far is only a lower bound (its readings are samples that may have
  // missed it); the latest sample's word stands.
  bool max_lower_bound = false;
};

using Samples = std::vector<Sample>;

// A derived ratio: out{labels} = scale * Δnumerator{labels} / Δdenominator{labels restricted}.
// The denominator's labels must be a subset of the numerator's (cpu time{cpu,mode} over the
// total{cpu} gives utilisation per cpu and mode).
struct RatioRule {
  const MetricDesc* out;
  const MetricDesc* numerator;
  const MetricDesc* denominator;
  double scale = 1;
};

// The values a histogram counted: its buckets' sum.
inline uint64_t bucket_total(const std::vector<uint64_t>& buckets) {
  uint64_t n = 0;
  for (uint64_t b : buckets) n += b;
  return n;
}

// The q-quantile (0..1) of a log2 histogram, as the upper bound of the bucket it falls in
// (bucket i holds values below base * 2^i); NaN when the histogram is empty.
double log2_quantile(const std::vector<uint64_t>& buckets, double q, double base);

}  // namespace pm
