// SPDX-License-Identifier: Apache-2.0
// Turns the running totals and current values that sources report into what sinks print: per
// interval deltas, rates and gauge min/max; over the whole run counter totals and gauge extrema;
// and derived ratios. This is the only place such arithmetic happens. Where several sources
// measure one quantity (MetricDesc::rank), it passes on the best one observed.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/metric.h"
#include "core/top.h"

namespace pm {


struct IntervalValue {
  const MetricDesc* desc = nullptr;
  const Labels* labels = nullptr;  // points into the aggregator; valid until the next call
  double value = 0;                // gauge: latest; counter: delta over the interval; ratio: its value
  double rate = 0;                 // counter: delta per second
  double min = 0, max = 0;         // gauge: extrema of the observations in the interval
  std::vector<uint64_t> buckets;   // histogram: counts added in the interval
  double p50 = 0, p90 = 0, p99 = 0;  // histogram: quantiles of the interval's values
  bool derived = false;            // a ratio the core computed (RatioRule)
  // Counter: increase since the series was first observed; histogram: its sum since then. What
  // a sink that exports running totals (Prometheus) prints: it never goes down, even when the
  // source's own count was reset.
  double total = 0;
  std::vector<uint64_t> total_buckets;  // histogram: counts since the series was first observed
};

struct IntervalRecord {
  WallClock::time_point timestamp;
  double seconds = 0;  // length of the interval
  std::vector<IntervalValue> values;
  std::shared_ptr<const TopRecord> top;  // the busiest processes and cgroups (live mode), if any
};

struct SummaryValue {
  const MetricDesc* desc = nullptr;
  const Labels* labels = nullptr;
  double value = 0;         // counter: total over the run; gauge: last value; ratio: over the run
  double min = 0, max = 0;  // gauge: extrema over every observation of the run; NaN if never observed
  std::vector<uint64_t> buckets;
  double p50 = 0, p90 = 0, p99 = 0;  // histogram: quantiles over the run
  bool derived = false;     // a ratio the core computed (RatioRule)
  bool max_lower_bound = false;  // gauge: max is a lower bound (Sample::max_lower_bound)
};

struct SummaryRecord {
  WallClock::time_point start, end;
  double seconds = 0;
  std::vector<SummaryValue> values;
};

class Aggregator {
 public:
  Aggregator();
  void add_ratio(const RatioRule& rule) { ratios_.push_back(rule); }

  // Records one source's samples taken at `now`. Sources may observe at their own rhythm.
  void observe(const Samples& samples, MonoClock::time_point now);
  // Records where counters start, before the measured work begins (a held child). Gauges are
  // only declared, so a state before the work does not become a minimum, and a gauge never
  // observed afterwards is reported as unknown (NaN), not left out.
  void observe_baseline(const Samples& samples, MonoClock::time_point now);
  // Closes the current interval: deltas since the previous close, latest gauges.
  IntervalRecord close_interval(MonoClock::time_point now);
  // Totals since each series was first observed, gauge extrema over the run.
  [[nodiscard]] SummaryRecord summary(MonoClock::time_point now) const;
  // Series held (each with its labels): bounded by what the sources still report.
  [[nodiscard]] size_t series_count() const { return series_.size(); }
  // An interval's record the sinks are done with: its values' storage serves the next interval
  // (ten thousand values are not asked of malloc again each interval).
  void reuse(IntervalRecord&& done);

 private:
  struct Series {
    const MetricDesc* desc;
    Labels labels;
    size_t slot = 0;  // its descriptor's index in descs_
    double first = 0, last = 0, at_close = 0;  // counters: values at first sight, now, last close
    double run_min = 0, run_max = 0, iv_min = 0, iv_max = 0;
    bool iv_seen = false;
    bool observed = true;  // false for a gauge only declared by the baseline
    bool in_run = true;    // false for a transient series (a row that comes and goes) that only the
                           // baseline saw: it had no part in the run, and the summary leaves it out
    double floor = 0;      // gauge: the highest peak its samples reported (Sample::peak)
    bool max_lower_bound = false;  // as its latest sample said
    std::vector<uint64_t> first_buckets, last_buckets, close_buckets;
  };
  Series& series_for(const Sample& s);
  // Transient series not read in the interval being closed (a cgroup removed, a process group
  // renamed away) are dropped: what is kept is bounded by what is alive, and the summary has
  // the rows still there at its end.
  void forget_gone();
  void start(MonoClock::time_point now);
  // A series is its descriptor and labels: hashed in place (no key is built per sample), the
  // candidates with that hash compared whole.
  static size_t hash_of(const MetricDesc* d, const Labels& labels);
  static constexpr size_t kNone = static_cast<size_t>(-1);
  [[nodiscard]] size_t find(const MetricDesc* d, const Labels& labels, size_t hash) const;  // index, or kNone
  struct RatioValue {
    const MetricDesc* out;
    const Series* numerator;  // the ratio carries the numerator's labels
    double value;
  };
  // Per series: whether sinks get it (not a denominator, not outranked by another source).
  [[nodiscard]] std::vector<bool> passed_on() const;
  template <typename Delta>
  [[nodiscard]] std::vector<RatioValue> derive_ratios(Delta delta) const;

  std::vector<Series> series_;
  // Each descriptor seen, once: what is decided per descriptor (passed_on) is indexed by slot.
  std::vector<const MetricDesc*> descs_;
  std::unordered_map<const MetricDesc*, size_t> slot_of_;
  std::vector<IntervalValue> spare_;  // reuse()
  // Which series pass on depends on the series held and which were observed: worked out again
  // only when those change (shape_ counts the changes).
  uint64_t shape_ = 1;
  mutable uint64_t passed_for_ = 0;
  mutable std::vector<bool> passed_;
  std::unordered_multimap<size_t, size_t> index_;  // hash_of -> index in series_
  size_t next_ = 0;                                // the series after the one last found
  std::vector<RatioRule> ratios_;
  MonoClock::time_point start_mono_, last_close_;
  WallClock::time_point start_wall_;
  bool started_ = false;
};

}  // namespace pm
