// SPDX-License-Identifier: Apache-2.0
// The Prometheus exposition, fed by a real Aggregator with hand-made samples: names, running
// totals, histograms and escaping are compared with text worked out by hand; where promtool
// (Debian package prometheus) is installed, its linter must accept the whole exposition.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/aggregator.h"
#include "sinks/prometheus.h"

namespace pm {
namespace {

using std::chrono::seconds;
using K = MetricKind;

const MetricDesc kSwitches{"scheduler", "context_switches", K::kCounter, Unit::kNone, "Context switches"};
const MetricDesc kCpuTime{"cpu", "time_seconds", K::kCounter, Unit::kSeconds, "CPU time per mode"};
const MetricDesc kUsed{"memory", "used_bytes", K::kGauge, Unit::kBytes, "Memory in use"};
const MetricDesc kAvg10{"pressure", "avg10_percent", K::kGauge, Unit::kPercent, "10 s average"};
const MetricDesc kUtil{"cpu", "utilisation_percent", K::kGauge, Unit::kPercent, "derived"};
const MetricDesc kTotal{"cpu", "total_seconds", K::kCounter, Unit::kSeconds, "all modes"};
const MetricDesc kLatency{"probe",   "latency", K::kHistogram, Unit::kSeconds, "Function latency", {},
                          1000 * 1e-9};  // 1 us buckets, as a source computes it
const MetricDesc kNoHelp{"app-x", "weird.name", K::kGauge, Unit::kNone, ""};
const MetricDesc kTaskClock{"pmc", "task_clock_seconds", K::kCounter, Unit::kSeconds, "task-clock, per CPU"};
const MetricDesc kBioBytes{"block_io", "bio_bytes", K::kCounter, Unit::kBytes, "Bytes, per device and op"};

const MonoClock::time_point prom_t0{seconds(100)};

std::string render(const IntervalRecord& rec) {
  SessionStatus st;
  st.mode = "system";
  st.running = {"cpu", "scheduler"};
  st.unavailable = {{"thermal", "no thermal zones"}};
  st.missed_ticks = 2;
  st.samples = 42;
  std::string out;
  render_exposition(out, &rec, st, 0.000125);
  return out;
}

// The lines of `text` from the one starting with `first` up to (not including) the next
// "# HELP" after it.
std::string block(const std::string& text, const std::string& first) {
  size_t start = text.find(first);
  if (start == std::string::npos) return "(no " + first + ")";
  size_t end = text.find("# HELP", start + first.size());
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(PrometheusNames, FollowTheConventions) {
  EXPECT_EQ(prometheus_name(kSwitches), "perf_monitor_scheduler_context_switches_total");
  EXPECT_EQ(prometheus_name(kCpuTime), "perf_monitor_cpu_time_seconds_total");
  EXPECT_EQ(prometheus_name(kUsed), "perf_monitor_memory_used_bytes");
  EXPECT_EQ(prometheus_name(kAvg10), "perf_monitor_pressure_avg10_ratio");
  EXPECT_EQ(prometheus_name(kLatency), "perf_monitor_probe_latency_seconds");  // the unit is added
  EXPECT_EQ(prometheus_name(kNoHelp), "perf_monitor_app_x_weird_name");
  EXPECT_EQ(prometheus_name(kTaskClock), "perf_monitor_pmc_task_clock_seconds_total");  // one unit
  EXPECT_EQ(prometheus_name(kBioBytes), "perf_monitor_block_io_bio_bytes_total");
  const MetricDesc already{"x", "events_total", K::kCounter, Unit::kNone, "h"};
  EXPECT_EQ(prometheus_name(already), "perf_monitor_x_events_total");
}

class Exposition : public ::testing::Test {
 protected:
  void SetUp() override {
    agg_.add_ratio({&kUtil, &kCpuTime, &kTotal, 100});
    agg_.observe(samples(1000, 50.0, 50.5, {1, 0, 0, 0}, 0.5), prom_t0);
    agg_.observe(samples(1250, 50.75, 51.5, {3, 4, 0, 2}, 2.5), prom_t0 + seconds(1));
    agg_.close_interval(prom_t0 + seconds(1));
    agg_.observe(samples(1300, 51.0, 52.5, {3, 5, 1, 2}, 2.75), prom_t0 + seconds(2));
    text_ = render(agg_.close_interval(prom_t0 + seconds(2)));
  }
  static Samples samples(double switches, double user, double total, std::vector<uint64_t> hist, double hist_sum) {
    return {
        {&kSwitches, {}, switches, {}},
        {&kCpuTime, {{"cpu", "all"}, {"mode", "user"}}, user, {}},
        {&kTotal, {{"cpu", "all"}}, total, {}},
        {&kLatency, {{"function", "handle \"req\"\\n"}}, hist_sum, std::move(hist)},
        {&kUsed, {}, 3 * 1024.0 * 1024 * 1024, {}},
        // A second series of the counter, first seen after other metrics: still grouped.
        {&kCpuTime, {{"cpu", "all"}, {"mode", "system"}}, user / 2, {}},
        {&kAvg10, {{"resource", "cpu"}, {"kind", "some"}}, 12.5, {}},
        {&kNoHelp, {}, 7, {}},
    };
  }
  Aggregator agg_;
  std::string text_;
};

TEST_F(Exposition, CountersAreRunningTotalsSinceStart) {
  // 1000 -> 1250 -> 1300: the total 300, not the last interval's 50.
  EXPECT_EQ(block(text_, "# HELP perf_monitor_scheduler_context_switches_total"),
            "# HELP perf_monitor_scheduler_context_switches_total Context switches\n"
            "# TYPE perf_monitor_scheduler_context_switches_total counter\n"
            "perf_monitor_scheduler_context_switches_total 300\n");
  // Both series of a metric under one HELP/TYPE, though observed apart: 1.0 and 0.5 s.
  EXPECT_EQ(block(text_, "# HELP perf_monitor_cpu_time_seconds_total"),
            "# HELP perf_monitor_cpu_time_seconds_total CPU time per mode\n"
            "# TYPE perf_monitor_cpu_time_seconds_total counter\n"
            "perf_monitor_cpu_time_seconds_total{cpu=\"all\",mode=\"user\"} 1\n"
            "perf_monitor_cpu_time_seconds_total{cpu=\"all\",mode=\"system\"} 0.5\n");
}

TEST_F(Exposition, GaugesInBaseUnitsAndRatios) {
  EXPECT_NE(text_.find("\nperf_monitor_memory_used_bytes 3221225472\n"), std::string::npos) << text_;
  // 12.5 % is a ratio of 0.125.
  EXPECT_NE(text_.find("# HELP perf_monitor_pressure_avg10_ratio 10 s average (as a ratio, 0..1)\n"
                       "# TYPE perf_monitor_pressure_avg10_ratio gauge\n"
                       "perf_monitor_pressure_avg10_ratio{resource=\"cpu\",kind=\"some\"} 0.125\n"),
            std::string::npos)
      << text_;
  // A metric without help text still gets a HELP line; odd characters become '_'.
  EXPECT_NE(text_.find("# HELP perf_monitor_app_x_weird_name perf-monitor app-x weird.name\n"), std::string::npos);
  // Derived ratios are left to PromQL.
  EXPECT_EQ(text_.find("utilisation"), std::string::npos) << text_;
}

TEST_F(Exposition, Log2HistogramIsACumulativePrometheusHistogram) {
  // Counts since start: {3,5,1,2} - {1,0,0,0} = {2,5,1,2}; cumulative 2, 7, 8, and the last
  // bucket (which the kernel side clamps, so it has no bound of its own) only in +Inf: 10.
  // The sum: 2.75 - 0.5. Label values escaped.
  const std::string l = "function=\"handle \\\"req\\\"\\\\n\"";
  EXPECT_EQ(block(text_, "# HELP perf_monitor_probe_latency_seconds"),
            "# HELP perf_monitor_probe_latency_seconds Function latency\n"
            "# TYPE perf_monitor_probe_latency_seconds histogram\n"
            "perf_monitor_probe_latency_seconds_bucket{" + l + ",le=\"1e-06\"} 2\n"
            "perf_monitor_probe_latency_seconds_bucket{" + l + ",le=\"2e-06\"} 7\n"
            "perf_monitor_probe_latency_seconds_bucket{" + l + ",le=\"4e-06\"} 8\n"
            "perf_monitor_probe_latency_seconds_bucket{" + l + ",le=\"+Inf\"} 10\n"
            "perf_monitor_probe_latency_seconds_sum{" + l + "} 2.25\n"
            "perf_monitor_probe_latency_seconds_count{" + l + "} 10\n");
}

TEST(PrometheusLabels, OutsideNamesBecomeValidUtf8WithoutControlCharacters) {
  // Names any user chooses (prctl, mkdir): invalid UTF-8 (a lone 0xff 0xfe, an overlong '/', a
  // surrogate, a truncated sequence at the end), ESC, BEL, tab, newline, DEL and C1: each a
  // U+FFFD; valid UTF-8 ("é", "日") and the format's escapes kept.
  const std::string r = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xff\xfe"
       "bad",
       r + r + "bad"},
      {"a\x1b]0;x\x07"
       "b",
       "a" + r + "]0;x" + r + "b"},
      {"\xc0\xaf", r + r},
      {"\xed\xa0\x80", r + r + r},
      {"t\tn\nd\x7f"
       "c\xc2\x9b",
       "t" + r + "n" + r + "d" + r + "c" + r},
      {"caf\xc3\xa9 \xe6\x97\xa5", "caf\xc3\xa9 \xe6\x97\xa5"},
      {"q\"b\\", "q\\\"b\\\\"},
      {"end\xe6\x97", "end" + r + r},
  };
  const MetricDesc desc{"cgroup", "processes", K::kGauge, Unit::kNone, "Live processes", {}, 0, true};
  for (const auto& [raw, shown] : cases) {
    Aggregator agg;
    agg.observe({{&desc, {{"cgroup", raw}}, 1, {}}}, prom_t0);
    std::string text = render(agg.close_interval(prom_t0 + seconds(1)));
    EXPECT_NE(text.find("perf_monitor_cgroup_processes{cgroup=\"" + shown + "\"} 1\n"), std::string::npos)
        << testing::PrintToString(raw) << "\n"
        << text;
  }
}

TEST_F(Exposition, SelfMetrics) {
  EXPECT_NE(text_.find("perf_monitor_build_info{version=\""), std::string::npos);
  EXPECT_NE(text_.find(",mode=\"system\"} 1\n"), std::string::npos);
  EXPECT_NE(text_.find("perf_monitor_source_up{source=\"cpu\"} 1\n"
                       "perf_monitor_source_up{source=\"scheduler\"} 1\n"
                       "perf_monitor_source_up{source=\"thermal\"} 0\n"),
            std::string::npos)
      << text_;
  EXPECT_NE(text_.find("\nperf_monitor_self_missed_ticks_total 2\n"), std::string::npos);
  EXPECT_NE(text_.find("\nperf_monitor_self_samples_total 42\n"), std::string::npos);
  EXPECT_NE(text_.find("\nperf_monitor_self_render_duration_seconds 0.000125\n"), std::string::npos);
  EXPECT_EQ(text_.find("proc_events"), std::string::npos);  // no proc connector in this session
  std::string scrape;
  render_scrape_self(scrape, 7, 0.0005);
  EXPECT_NE(scrape.find("\nperf_monitor_self_scrapes_total 7\n"), std::string::npos) << scrape;
  EXPECT_NE(scrape.find("\nperf_monitor_self_scrape_duration_seconds 0.0005\n"), std::string::npos) << scrape;
}

TEST_F(Exposition, PromtoolAcceptsIt) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool (Debian package prometheus) not installed";
  std::string path = ::testing::TempDir() + "/pm-exposition.prom";
  std::string text = text_;
  render_scrape_self(text, 1, 0);
  std::ofstream(path) << text;
  std::string cmd = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(path + ".out");
  std::stringstream report;
  report << in.rdbuf();
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << report.str() << "\n" << text;
  EXPECT_EQ(report.str(), "");
}

// A breakdown's whole (cpu="all", device="all") is left out beside its parts, so sum() counts
// once; a whole without parts (a source that only knows the total) is kept.
TEST(PrometheusWhole, LeftOutBesideItsPartsKeptAlone) {
  Aggregator agg;
  auto samples = [](double k) {
    return Samples{{&kTaskClock, {{"cpu", "all"}}, 3 * k, {}},
                   {&kTaskClock, {{"cpu", "0"}}, 1 * k, {}},
                   {&kTaskClock, {{"cpu", "1"}}, 2 * k, {}},
                   {&kBioBytes, {{"device", "all"}, {"op", "read"}}, 7 * k, {}},
                   {&kBioBytes, {{"device", "vda"}, {"op", "read"}}, 7 * k, {}},
                   {&kSwitches, {{"cpu", "all"}}, 10 * k, {}}};
  };
  agg.observe(samples(1), prom_t0);
  agg.observe(samples(2), prom_t0 + seconds(1));
  std::string text = render(agg.close_interval(prom_t0 + seconds(1)));
  // The only "all" left: switches, whose parts no source read.
  size_t all = text.find("=\"all\"");
  EXPECT_EQ(all, text.find("perf_monitor_scheduler_context_switches_total{cpu=\"all\"} 10") + 49) << text;
  EXPECT_EQ(text.find("=\"all\"", all + 1), std::string::npos) << text;
  EXPECT_NE(text.find("perf_monitor_pmc_task_clock_seconds_total{cpu=\"0\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("perf_monitor_pmc_task_clock_seconds_total{cpu=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("device=\"all\""), std::string::npos) << text;
  EXPECT_NE(text.find("perf_monitor_block_io_bio_bytes_total{device=\"vda\",op=\"read\"} 7\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace pm
