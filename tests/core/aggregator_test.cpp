// SPDX-License-Identifier: Apache-2.0
// Aggregator arithmetic: every expected number below is worked out by hand from the samples the
// test feeds in, with explicit time points so rates do not depend on the clock.
#include "core/aggregator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace pm {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const MetricDesc kReqs{"app", "requests", MetricKind::kCounter, Unit::kNone, "requests served"};
const MetricDesc kTemp{"app", "temperature", MetricKind::kGauge, Unit::kCelsius, "a gauge"};
const MetricDesc kLatency{"app", "latency", MetricKind::kHistogram, Unit::kSeconds, "a histogram"};
const MetricDesc kTime{"cpu", "time_seconds", MetricKind::kCounter, Unit::kSeconds, "per cpu and mode"};
const MetricDesc kTotal{"cpu", "total_seconds", MetricKind::kCounter, Unit::kSeconds, "per cpu"};
const MetricDesc kUtil{"cpu", "utilisation_percent", MetricKind::kGauge, Unit::kPercent, "ratio"};

const MonoClock::time_point t0{seconds(1000)};

Sample counter(double v, Labels l = {}) { return Sample{&kReqs, std::move(l), v, {}}; }
Sample gauge(double v) { return Sample{&kTemp, {}, v, {}}; }

template <typename V>
const V* find(const std::vector<V>& values, const MetricDesc& d, const Labels& labels = {}) {
  for (const V& v : values) {
    if (v.desc == &d && *v.labels == labels) return &v;
  }
  return nullptr;
}

TEST(Aggregator, CounterDeltaAndRate) {
  Aggregator agg;
  agg.observe({counter(10)}, t0);
  agg.observe({counter(30)}, t0 + seconds(2));
  IntervalRecord rec = agg.close_interval(t0 + seconds(2));
  EXPECT_DOUBLE_EQ(rec.seconds, 2.0);
  const IntervalValue* v = find(rec.values, kReqs);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 20.0);  // 30 - 10
  EXPECT_DOUBLE_EQ(v->rate, 10.0);   // 20 over 2 s

  // The next interval counts from the previous close: 30 -> 36 over 0.5 s.
  agg.observe({counter(36)}, t0 + milliseconds(2500));
  rec = agg.close_interval(t0 + milliseconds(2500));
  EXPECT_DOUBLE_EQ(rec.seconds, 0.5);
  v = find(rec.values, kReqs);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 6.0);
  EXPECT_DOUBLE_EQ(v->rate, 12.0);

  // No new observation: the delta is zero, not the previous one again.
  rec = agg.close_interval(t0 + seconds(3));
  v = find(rec.values, kReqs);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 0.0);
  EXPECT_DOUBLE_EQ(v->rate, 0.0);
}

TEST(Aggregator, GaugeLatestAndIntervalExtrema) {
  Aggregator agg;
  agg.observe({gauge(5)}, t0);
  agg.observe({gauge(2)}, t0 + milliseconds(250));
  agg.observe({gauge(8)}, t0 + milliseconds(500));
  agg.observe({gauge(4)}, t0 + milliseconds(750));
  IntervalRecord rec = agg.close_interval(t0 + seconds(1));
  const IntervalValue* v = find(rec.values, kTemp);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 4.0);  // the latest
  EXPECT_DOUBLE_EQ(v->min, 2.0);
  EXPECT_DOUBLE_EQ(v->max, 8.0);

  // Extrema restart with each interval.
  agg.observe({gauge(6)}, t0 + milliseconds(1500));
  agg.observe({gauge(7)}, t0 + milliseconds(1750));
  rec = agg.close_interval(t0 + seconds(2));
  v = find(rec.values, kTemp);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 7.0);
  EXPECT_DOUBLE_EQ(v->min, 6.0);
  EXPECT_DOUBLE_EQ(v->max, 7.0);

  // An interval without observations reports the last value as its own min and max.
  rec = agg.close_interval(t0 + seconds(3));
  v = find(rec.values, kTemp);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 7.0);
  EXPECT_DOUBLE_EQ(v->min, 7.0);
  EXPECT_DOUBLE_EQ(v->max, 7.0);
}

TEST(Aggregator, SummaryTotalsAndGaugeExtrema) {
  Aggregator agg;
  agg.observe({counter(100), gauge(50)}, t0);
  agg.observe({counter(130), gauge(20)}, t0 + seconds(1));
  (void)agg.close_interval(t0 + seconds(1));
  agg.observe({counter(175), gauge(90)}, t0 + seconds(2));
  agg.observe({counter(180), gauge(60)}, t0 + seconds(3));
  SummaryRecord sum = agg.summary(t0 + seconds(4));
  EXPECT_DOUBLE_EQ(sum.seconds, 4.0);  // from the first observation
  const SummaryValue* c = find(sum.values, kReqs);
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->value, 80.0);  // last - first: 180 - 100, closes do not matter
  const SummaryValue* g = find(sum.values, kTemp);
  ASSERT_NE(g, nullptr);
  EXPECT_DOUBLE_EQ(g->value, 60.0);  // the last
  EXPECT_DOUBLE_EQ(g->min, 20.0);
  EXPECT_DOUBLE_EQ(g->max, 90.0);
}

TEST(Aggregator, BaselineSetsCounterStartButIgnoresGauges) {
  Aggregator agg;
  // Before the work starts: the counter is at 100, the gauge is at a level the work never sees.
  agg.observe_baseline({counter(100), gauge(1000)}, t0);
  agg.observe({counter(150), gauge(50)}, t0 + seconds(1));
  agg.observe({counter(170), gauge(70)}, t0 + seconds(2));

  IntervalRecord rec = agg.close_interval(t0 + seconds(2));
  const IntervalValue* c = find(rec.values, kReqs);
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->value, 70.0);  // 170 - 100 (the baseline)
  EXPECT_DOUBLE_EQ(c->rate, 35.0);   // over 2 s since the baseline
  const IntervalValue* g = find(rec.values, kTemp);
  ASSERT_NE(g, nullptr);
  EXPECT_DOUBLE_EQ(g->min, 50.0);
  EXPECT_DOUBLE_EQ(g->max, 70.0);

  SummaryRecord sum = agg.summary(t0 + seconds(2));
  const SummaryValue* sc = find(sum.values, kReqs);
  ASSERT_NE(sc, nullptr);
  EXPECT_DOUBLE_EQ(sc->value, 70.0);
  const SummaryValue* sg = find(sum.values, kTemp);
  ASSERT_NE(sg, nullptr);
  EXPECT_DOUBLE_EQ(sg->min, 50.0);  // not 1000 nor anything from the baseline
  EXPECT_DOUBLE_EQ(sg->max, 70.0);
}

TEST(Aggregator, ARowOnlyTheBaselineSawIsNotInTheSummary) {
  // Rows that come and go (a cgroup removed before monitoring's first reading): one seen only by
  // the baseline had no part in the run; one seen after it keeps its figures.
  const MetricDesc count{"row", "events", MetricKind::kCounter, Unit::kNone, "per row", {}, 0, true};
  const MetricDesc procs{"row", "processes", MetricKind::kGauge, Unit::kNone, "per row", {}, 0, true};
  Labels gone{{"cgroup", "/gone"}}, stays{{"cgroup", "/stays"}};
  Aggregator agg;
  agg.observe_baseline({{&count, gone, 5, {}}, {&procs, gone, 1, {}}, {&count, stays, 5, {}}, {&procs, stays, 1, {}}},
                       t0);
  agg.observe({{&count, stays, 9, {}}, {&procs, stays, 2, {}}}, t0 + seconds(1));
  SummaryRecord sum = agg.summary(t0 + seconds(1));
  EXPECT_EQ(find(sum.values, count, gone), nullptr);
  EXPECT_EQ(find(sum.values, procs, gone), nullptr);
  const SummaryValue* c = find(sum.values, count, stays);
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->value, 4.0);  // from the baseline on
  const SummaryValue* p = find(sum.values, procs, stays);
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->value, 2.0);
}

TEST(Aggregator, CounterResetAtIntervalStartIsNotNegative) {
  Aggregator agg;
  agg.observe({counter(100)}, t0);
  agg.observe({counter(150)}, t0 + seconds(1));
  IntervalRecord rec = agg.close_interval(t0 + seconds(1));
  ASSERT_NE(find(rec.values, kReqs), nullptr);
  EXPECT_DOUBLE_EQ(find(rec.values, kReqs)->value, 50.0);

  agg.observe({counter(20)}, t0 + seconds(2));  // reset: went backwards
  rec = agg.close_interval(t0 + seconds(2));
  const IntervalValue* v = find(rec.values, kReqs);
  ASSERT_NE(v, nullptr);
  EXPECT_GE(v->value, 0.0);
  EXPECT_DOUBLE_EQ(v->value, 0.0);  // nothing known to be counted since the close
  EXPECT_GE(v->rate, 0.0);

  agg.observe({counter(50)}, t0 + seconds(3));
  rec = agg.close_interval(t0 + seconds(3));
  v = find(rec.values, kReqs);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 30.0);  // 20 -> 50 after the reset

  // The run keeps the 50 counted before the reset and the 30 after it.
  SummaryRecord sum = agg.summary(t0 + seconds(3));
  const SummaryValue* s = find(sum.values, kReqs);
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->value, 80.0);
}

TEST(Aggregator, CounterResetWithinIntervalKeepsWhatItHadCounted) {
  Aggregator agg;
  agg.observe({counter(100)}, t0);
  (void)agg.close_interval(t0);
  agg.observe({counter(160)}, t0 + milliseconds(500));  // +60
  agg.observe({counter(10)}, t0 + milliseconds(700));   // reset
  agg.observe({counter(25)}, t0 + milliseconds(900));   // +15
  IntervalRecord rec = agg.close_interval(t0 + seconds(1));
  const IntervalValue* v = find(rec.values, kReqs);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 75.0);
  EXPECT_DOUBLE_EQ(v->rate, 75.0);
  SummaryRecord sum = agg.summary(t0 + seconds(1));
  const SummaryValue* s = find(sum.values, kReqs);
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->value, 75.0);
}

// cpu time{cpu,mode} / total{cpu}: each numerator series is divided by the denominator whose
// labels are a subset of its own.
Samples cpu_samples(double u0, double s0, double tot0, double u1, double tot1) {
  return {
      {&kTime, {{"cpu", "0"}, {"mode", "user"}}, u0, {}},
      {&kTime, {{"cpu", "0"}, {"mode", "system"}}, s0, {}},
      {&kTotal, {{"cpu", "0"}}, tot0, {}},
      {&kTime, {{"cpu", "1"}, {"mode", "user"}}, u1, {}},
      {&kTotal, {{"cpu", "1"}}, tot1, {}},
  };
}

TEST(Aggregator, RatioRuleWithLabelSubset) {
  Aggregator agg;
  agg.add_ratio({&kUtil, &kTime, &kTotal, 100.0});
  agg.observe(cpu_samples(10, 5, 100, 0, 50), t0);

  // No denominator movement yet: no ratio rather than a division by zero.
  IntervalRecord rec = agg.close_interval(t0);
  EXPECT_EQ(find(rec.values, kUtil, {{"cpu", "0"}, {"mode", "user"}}), nullptr);

  // cpu0: user +3, system +1 of +4 total; cpu1: user +2 of +8 total.
  agg.observe(cpu_samples(13, 6, 104, 2, 58), t0 + seconds(1));
  rec = agg.close_interval(t0 + seconds(1));
  const IntervalValue* u0 = find(rec.values, kUtil, {{"cpu", "0"}, {"mode", "user"}});
  const IntervalValue* s0 = find(rec.values, kUtil, {{"cpu", "0"}, {"mode", "system"}});
  const IntervalValue* u1 = find(rec.values, kUtil, {{"cpu", "1"}, {"mode", "user"}});
  ASSERT_NE(u0, nullptr);
  ASSERT_NE(s0, nullptr);
  ASSERT_NE(u1, nullptr);
  EXPECT_DOUBLE_EQ(u0->value, 75.0);
  EXPECT_DOUBLE_EQ(s0->value, 25.0);
  EXPECT_DOUBLE_EQ(u1->value, 25.0);
  EXPECT_DOUBLE_EQ(u1->min, 25.0);
  EXPECT_DOUBLE_EQ(u1->max, 25.0);
  // One ratio per numerator series, none for the denominators.
  size_t ratios = 0;
  for (const IntervalValue& v : rec.values) ratios += v.desc == &kUtil ? 1 : 0;
  EXPECT_EQ(ratios, 3u);

  // cpu0: user +7, system +3 of +16 total; cpu1: user +10 of +12 total.
  agg.observe(cpu_samples(20, 9, 120, 12, 70), t0 + seconds(2));
  rec = agg.close_interval(t0 + seconds(2));
  ASSERT_NE(find(rec.values, kUtil, {{"cpu", "0"}, {"mode", "user"}}), nullptr);
  EXPECT_DOUBLE_EQ(find(rec.values, kUtil, {{"cpu", "0"}, {"mode", "user"}})->value, 43.75);
  ASSERT_NE(find(rec.values, kUtil, {{"cpu", "1"}, {"mode", "user"}}), nullptr);
  EXPECT_DOUBLE_EQ(find(rec.values, kUtil, {{"cpu", "1"}, {"mode", "user"}})->value, 100.0 * 10 / 12);

  // Over the run: cpu0 user 10 of 20, system 4 of 20; cpu1 user 12 of 20.
  SummaryRecord sum = agg.summary(t0 + seconds(2));
  const SummaryValue* su0 = find(sum.values, kUtil, {{"cpu", "0"}, {"mode", "user"}});
  const SummaryValue* ss0 = find(sum.values, kUtil, {{"cpu", "0"}, {"mode", "system"}});
  const SummaryValue* su1 = find(sum.values, kUtil, {{"cpu", "1"}, {"mode", "user"}});
  ASSERT_NE(su0, nullptr);
  ASSERT_NE(ss0, nullptr);
  ASSERT_NE(su1, nullptr);
  EXPECT_DOUBLE_EQ(su0->value, 50.0);
  EXPECT_DOUBLE_EQ(ss0->value, 20.0);
  EXPECT_DOUBLE_EQ(su1->value, 60.0);
}

TEST(Aggregator, HistogramBucketDeltas) {
  Aggregator agg;
  agg.observe({{&kLatency, {}, 10, {1, 2, 0}}}, t0);
  agg.observe({{&kLatency, {}, 40, {3, 2, 5}}}, t0 + seconds(1));
  IntervalRecord rec = agg.close_interval(t0 + seconds(1));
  const IntervalValue* v = find(rec.values, kLatency);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 30.0);  // sum added in the interval
  EXPECT_EQ(v->buckets, (std::vector<uint64_t>{2, 0, 5}));

  // A new, higher bucket appears.
  agg.observe({{&kLatency, {}, 55, {3, 4, 5, 1}}}, t0 + seconds(2));
  rec = agg.close_interval(t0 + seconds(2));
  v = find(rec.values, kLatency);
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->value, 15.0);
  EXPECT_EQ(v->buckets, (std::vector<uint64_t>{0, 2, 0, 1}));

  SummaryRecord sum = agg.summary(t0 + seconds(2));
  const SummaryValue* s = find(sum.values, kLatency);
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->value, 45.0);  // 55 - 10
  EXPECT_EQ(s->buckets, (std::vector<uint64_t>{2, 2, 5, 1}));
}

// What a sink of running totals (Prometheus) prints: since first observation, through a reset.
TEST(Aggregator, IntervalCarriesRunningTotals) {
  Aggregator agg;
  agg.observe({counter(100), {&kLatency, {}, 1, {1, 0, 0}}}, t0);
  agg.observe({counter(130), {&kLatency, {}, 4, {2, 3, 0}}}, t0 + seconds(1));
  IntervalRecord rec = agg.close_interval(t0 + seconds(1));
  EXPECT_DOUBLE_EQ(find(rec.values, kReqs)->total, 30.0);
  EXPECT_DOUBLE_EQ(find(rec.values, kLatency)->total, 3.0);  // the sum: 4 - 1
  EXPECT_EQ(find(rec.values, kLatency)->total_buckets, (std::vector<uint64_t>{1, 3, 0}));
  // The counter was reset (130 -> 5): the total keeps the 30 it had counted, never goes
  // down, and goes on from the new value.
  agg.observe({counter(5), {&kLatency, {}, 6, {2, 3, 4}}}, t0 + seconds(2));
  rec = agg.close_interval(t0 + seconds(2));
  EXPECT_DOUBLE_EQ(find(rec.values, kReqs)->total, 30.0);
  EXPECT_EQ(find(rec.values, kLatency)->total_buckets, (std::vector<uint64_t>{1, 3, 4}));
  EXPECT_EQ(find(rec.values, kLatency)->buckets, (std::vector<uint64_t>{0, 0, 4}));
  agg.observe({counter(12)}, t0 + seconds(3));
  rec = agg.close_interval(t0 + seconds(3));
  EXPECT_DOUBLE_EQ(find(rec.values, kReqs)->total, 37.0);
}

TEST(Aggregator, SeriesInFirstSeenOrder) {
  Aggregator agg;
  agg.observe({gauge(1), counter(1, {{"dev", "b"}})}, t0);
  agg.observe({counter(2, {{"dev", "a"}}), gauge(2), counter(3, {{"dev", "b"}}), counter(4)}, t0 + seconds(1));
  IntervalRecord rec = agg.close_interval(t0 + seconds(1));
  ASSERT_EQ(rec.values.size(), 4u);
  EXPECT_EQ(rec.values[0].desc, &kTemp);
  EXPECT_EQ(*rec.values[1].labels, (Labels{{"dev", "b"}}));
  EXPECT_EQ(*rec.values[2].labels, (Labels{{"dev", "a"}}));
  EXPECT_EQ(rec.values[3].desc, &kReqs);
  EXPECT_TRUE(rec.values[3].labels->empty());
  EXPECT_DOUBLE_EQ(rec.values[1].value, 2.0);  // dev=b: 1 -> 3, kept apart from dev=a

  SummaryRecord sum = agg.summary(t0 + seconds(1));
  ASSERT_EQ(sum.values.size(), 4u);
  EXPECT_EQ(sum.values[0].desc, &kTemp);
  EXPECT_EQ(*sum.values[1].labels, (Labels{{"dev", "b"}}));
  EXPECT_EQ(*sum.values[2].labels, (Labels{{"dev", "a"}}));
  EXPECT_TRUE(sum.values[3].labels->empty());
}

}  // namespace
}  // namespace pm

namespace pm {
namespace {

Sample peak(double value, double p) {
  Sample s{&kTemp, {}, value, {}};
  s.peak = p;
  return s;
}

TEST(Aggregator, PeaksRaiseTheRunMaximumOnly) {
  Aggregator agg;
  agg.observe({gauge(10)}, t0);
  // A high-water mark of 50 reached between readings: the run's maximum, not a reading.
  agg.observe({peak(20, 50)}, t0 + seconds(1));
  IntervalRecord iv = agg.close_interval(t0 + seconds(1));
  EXPECT_EQ(find(iv.values, kTemp)->value, 20);
  EXPECT_EQ(find(iv.values, kTemp)->max, 20);
  // A peak with no reading (NaN): the gauge keeps its last reading.
  agg.observe({peak(std::numeric_limits<double>::quiet_NaN(), 70)}, t0 + seconds(2));
  SummaryRecord sum = agg.summary(t0 + seconds(2));
  EXPECT_EQ(find(sum.values, kTemp)->value, 20);
  EXPECT_EQ(find(sum.values, kTemp)->min, 10);
  EXPECT_EQ(find(sum.values, kTemp)->max, 70);
}

TEST(Aggregator, APeakAloneIsTheMaximumOfAGaugeNeverRead) {
  Aggregator agg;
  agg.observe({peak(std::numeric_limits<double>::quiet_NaN(), 30)}, t0);
  EXPECT_EQ(find(agg.close_interval(t0 + seconds(1)).values, kTemp), nullptr);
  SummaryRecord sum = agg.summary(t0 + seconds(1));
  EXPECT_EQ(find(sum.values, kTemp)->max, 30);
  EXPECT_TRUE(std::isnan(find(sum.values, kTemp)->min));
}

// One quantity measured by several sources: the highest rank observed is passed on, the others
// are not (a source that was never read does not hide a lower one). A denominator is never
// passed on, yet its ratio is derived.
TEST(Aggregator, PassesOnTheBestSourceOfAQuantityAndNoDenominators) {
  const MetricDesc proc{"sched", "switches", MetricKind::kCounter, Unit::kNone, "/proc"};
  const MetricDesc ebpf = ranked(2, {"sched", "switches", MetricKind::kCounter, Unit::kNone, "eBPF"});
  const MetricDesc unread = ranked(5, {"sched", "switches", MetricKind::kCounter, Unit::kNone, "never read"});
  const MetricDesc total = denominator_only({"cpu", "total_seconds", MetricKind::kCounter, Unit::kSeconds, ""});
  Aggregator agg;
  agg.add_ratio({&kUtil, &kTime, &total, 100.0});
  agg.observe_baseline({{&unread, {}, std::nan(""), {}}}, t0);
  agg.observe({{&proc, {}, 100, {}}, {&ebpf, {}, 10, {}}, {&kTime, {}, 1, {}}, {&total, {}, 2, {}}}, t0);
  agg.observe({{&proc, {}, 150, {}}, {&ebpf, {}, 40, {}}, {&kTime, {}, 2, {}}, {&total, {}, 4, {}}}, t0 + seconds(1));
  IntervalRecord rec = agg.close_interval(t0 + seconds(1));
  EXPECT_EQ(find(rec.values, proc), nullptr);
  EXPECT_EQ(find(rec.values, unread), nullptr);
  EXPECT_EQ(find(rec.values, total), nullptr);
  ASSERT_NE(find(rec.values, ebpf), nullptr);
  EXPECT_DOUBLE_EQ(find(rec.values, ebpf)->value, 30);
  ASSERT_NE(find(rec.values, kUtil), nullptr);
  EXPECT_DOUBLE_EQ(find(rec.values, kUtil)->value, 50);
  SummaryRecord sum = agg.summary(t0 + seconds(1));
  EXPECT_EQ(find(sum.values, proc), nullptr);
  EXPECT_EQ(find(sum.values, total), nullptr);
  ASSERT_NE(find(sum.values, ebpf), nullptr);
}

const MetricDesc kRow{"cgroup", "cpu_seconds", MetricKind::kCounter, Unit::kSeconds, "a row that comes and goes", {},
                      0,        true};

TEST(Aggregator, TransientSeriesAreForgottenOnceGoneAfterTheirLastInterval) {
  // 2,000 intervals, each with three names never seen before (processes renaming themselves):
  // each name's last interval is reported, then it is dropped, so the series held stay at what
  // is alive, never at what was ever seen.
  Aggregator agg;
  auto t = t0;
  agg.observe({}, t);
  size_t most = 0;
  for (int i = 0; i < 2000; ++i) {
    Samples s;
    for (int k = 0; k < 3; ++k) s.push_back({&kRow, {{"group", "n" + std::to_string(i * 3 + k)}}, 1.0 + i, {}});
    s.push_back(counter(i));  // a lasting series, kept throughout
    t += seconds(1);
    agg.observe(s, t);
    IntervalRecord rec = agg.close_interval(t);
    // The names of this interval are in its record (their last interval too), the older ones not.
    ASSERT_NE(find(rec.values, kRow, {{"group", "n" + std::to_string(i * 3)}}), nullptr);
    if (i > 0) {
      ASSERT_EQ(find(rec.values, kRow, {{"group", "n" + std::to_string(i * 3 - 1)}}), nullptr);
    }
    most = std::max(most, agg.series_count());
  }
  EXPECT_LE(most, 4u);
  ASSERT_NE(find(agg.close_interval(t + seconds(1)).values, kReqs), nullptr) << "the lasting series stays";
  EXPECT_EQ(agg.series_count(), 1u);
}

TEST(Aggregator, SeriesAreFoundInAnyOrderAndAmongMany) {
  // A thousand labelled series read in one order, then in another with some missing and one new:
  // each counter's delta is its own (the lookup's guess of the next series is only a guess).
  Aggregator agg;
  Samples first, second;
  for (int i = 0; i < 1000; ++i) first.push_back(counter(i, {{"cgroup", "/c" + std::to_string(i)}}));
  agg.observe(first, t0);
  for (int i = 999; i >= 0; i -= 2) second.push_back(counter(i + 2.0 * i, {{"cgroup", "/c" + std::to_string(i)}}));
  second.push_back(counter(5, {{"cgroup", "/new"}}));
  agg.observe(second, t0 + seconds(1));
  IntervalRecord rec = agg.close_interval(t0 + seconds(1));
  for (int i : {1, 3, 501, 999}) {
    const IntervalValue* v = find(rec.values, kReqs, {{"cgroup", "/c" + std::to_string(i)}});
    ASSERT_NE(v, nullptr) << i;
    EXPECT_DOUBLE_EQ(v->value, 2.0 * i) << i;
  }
  const IntervalValue* unread = find(rec.values, kReqs, {{"cgroup", "/c2"}});
  ASSERT_NE(unread, nullptr);
  EXPECT_DOUBLE_EQ(unread->value, 0.0);
  const IntervalValue* fresh = find(rec.values, kReqs, {{"cgroup", "/new"}});
  ASSERT_NE(fresh, nullptr);
  EXPECT_DOUBLE_EQ(fresh->value, 0.0) << "a series' first sample is its baseline";
  EXPECT_EQ(rec.values.size(), 1001u);
}

}  // namespace
}  // namespace pm
