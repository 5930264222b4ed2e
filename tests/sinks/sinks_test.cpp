// SPDX-License-Identifier: Apache-2.0
// The sinks, fed by a real Aggregator with hand-made samples; output goes to a tmpfile and is read
// back (JSON parsed with nlohmann::json). Expected numbers are worked out from the samples.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/aggregator.h"
#include "core/output.h"
#include "core/text.h"
#include "sinks/format.h"
#include "sinks/sink.h"
#include "sources/tree/tree_source.h"
#include "capture.h"

namespace pm {
namespace {

using std::chrono::seconds;
using K = MetricKind;

constexpr double kMiB = 1024.0 * 1024.0;

const MetricDesc kRss{"proc", "rss_bytes", K::kGauge, Unit::kBytes, "resident memory", "proc_rss"};
const MetricDesc kReqs{"app", "requests", K::kCounter, Unit::kNone, "requests served"};
const MetricDesc kDevBytes{"app", "bytes", K::kCounter, Unit::kBytes, "bytes per device"};
const MetricDesc kQueue{"app", "queue_depth", K::kGauge, Unit::kNone, "queue depth per queue"};

const MonoClock::time_point sinks_t0{seconds(500)};

Samples app_samples(double rss, double reqs, double sda, double sdb, double queue) {
  return {
      {&kRss, {}, rss, {}},
      {&kReqs, {}, reqs, {}},
      {&kDevBytes, {{"dev", "sda"}}, sda, {}},
      {&kDevBytes, {{"dev", "sdb"}}, sdb, {}},
      {&kQueue, {{"queue", "q1"}}, queue, {}},
  };
}

using test::contents;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

struct TmpFile {
  std::FILE* f = std::tmpfile();
  Output out = Output::to_fd(fileno(f), "a tmpfile");
  TmpFile() = default;
  TmpFile(const TmpFile&) = delete;
  TmpFile& operator=(const TmpFile&) = delete;
  ~TmpFile() {
    if (f != nullptr) std::fclose(f);
  }
};

TEST(JsonSink, IntervalAndSummary) {
  Aggregator agg;
  agg.observe(app_samples(1 * kMiB, 10, 1000, 0, 3), sinks_t0);
  agg.observe(app_samples(3 * kMiB, 30, 1500, 64, 7), sinks_t0 + seconds(2));
  IntervalRecord rec = agg.close_interval(sinks_t0 + seconds(2));

  TmpFile tmp;
  ASSERT_NE(tmp.f, nullptr);
  auto sink = make_json_sink(tmp.out);
  std::vector<Unavailable> unavailable{{"pmc", "no PMU in this VM"}, {"numa", "no NUMA nodes"}};
  sink->unavailable(unavailable);
  sink->interval(rec);

  agg.observe(app_samples(2 * kMiB, 45, 1700, 64, 5), sinks_t0 + seconds(4));
  SummaryRecord sum = agg.summary(sinks_t0 + seconds(4));
  RunInfo info;
  info.mode = "run";
  info.command = {"make", "-j4"};
  info.pid = 4242;
  info.exit_code = 3;
  info.end_reason = "exited";
  info.missed_ticks = 2;
  sink->summary(sum, info, unavailable);

  std::vector<std::string> lines = lines_of(contents(tmp.f));
  // JSON Lines: what the metrics are (no header described them), the interval, the summary.
  ASSERT_EQ(lines.size(), 3u);
  nlohmann::json described = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(described["type"], "metrics");
  EXPECT_FALSE(described["metrics"].empty());
  lines.erase(lines.begin());

  nlohmann::json iv = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(iv["type"], "interval");
  EXPECT_TRUE(iv["timestamp"].is_string());
  EXPECT_EQ(iv["interval_s"], 2);
  ASSERT_TRUE(iv.contains("app"));
  EXPECT_EQ(iv["app"]["requests"], 20);       // 30 - 10
  EXPECT_EQ(iv["app"]["bytes"]["sda"], 500);  // 1500 - 1000
  EXPECT_EQ(iv["app"]["bytes"]["sdb"], 64);
  EXPECT_EQ(iv["app"]["queue_depth"]["q1"], 7);         // gauge: the latest
  EXPECT_EQ(iv["proc"]["rss_bytes"], 3 * 1024 * 1024);  // gauge: the latest

  nlohmann::json s = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(s["type"], "summary");
  EXPECT_EQ(s["mode"], "run");
  EXPECT_EQ(s["command"], (std::vector<std::string>{"make", "-j4"}));
  EXPECT_EQ(s["pid"], 4242);
  EXPECT_EQ(s["exit_code"], 3);
  EXPECT_FALSE(s.contains("signal"));
  EXPECT_EQ(s["end_reason"], "exited");
  EXPECT_EQ(s["duration_s"], 4);
  // An unlabeled gauge: <summary_key>_min and _max over every observation.
  EXPECT_EQ(s["proc_rss_min"], 1 * 1024 * 1024);
  EXPECT_EQ(s["proc_rss_max"], 3 * 1024 * 1024);
  EXPECT_FALSE(s.contains("proc_rss_bytes_min"));
  // Every other metric in one shape, as in interval records: family, name, labels; a counter's
  // leaf is its run total, a gauge's its extrema.
  EXPECT_EQ(s["app"]["requests"], 35);  // 45 - 10
  EXPECT_FALSE(s.contains("app_requests"));
  // Labeled metrics nest by family, name and label value.
  EXPECT_EQ(s["app"]["bytes"]["sda"], 700);
  EXPECT_EQ(s["app"]["bytes"]["sdb"], 64);
  EXPECT_EQ(s["app"]["queue_depth"]["q1"]["min"], 3);
  EXPECT_EQ(s["app"]["queue_depth"]["q1"]["max"], 7);
  ASSERT_TRUE(s["unavailable"].is_object());
  EXPECT_EQ(s["unavailable"].size(), 2u);
  EXPECT_EQ(s["unavailable"]["pmc"], "no PMU in this VM");
  EXPECT_EQ(s["unavailable"]["numa"], "no NUMA nodes");
  EXPECT_EQ(s["self"]["missed_ticks"], 2);
}

TEST(JsonSink, EmptyUnavailableIsAnObjectAndFractionsSurvive) {
  Aggregator agg;
  agg.observe({{&kReqs, {}, 0.25, {}}}, sinks_t0);
  agg.observe({{&kReqs, {}, 1.0, {}}}, sinks_t0 + seconds(1));
  TmpFile tmp;
  ASSERT_NE(tmp.f, nullptr);
  auto sink = make_json_sink(tmp.out);
  RunInfo info;
  info.mode = "system";
  info.end_reason = "interrupted";
  sink->summary(agg.summary(sinks_t0 + seconds(1)), info, {});
  std::vector<std::string> lines = lines_of(contents(tmp.f));
  ASSERT_EQ(lines.size(), 2u);  // what the metrics are, then the summary
  EXPECT_EQ(nlohmann::json::parse(lines[0])["type"], "metrics");
  nlohmann::json s = nlohmann::json::parse(lines[1]);
  EXPECT_TRUE(s["unavailable"].is_object());
  EXPECT_TRUE(s["unavailable"].empty());
  EXPECT_DOUBLE_EQ(s["app"]["requests"].get<double>(), 0.75);
  EXPECT_FALSE(s.contains("exit_code"));
  EXPECT_FALSE(s.contains("pid"));
  EXPECT_FALSE(s.contains("command"));
}

TEST(JsonSink, SpansAreBatchedAndEachLineIsWhatTheJsonLibraryWrites) {
  // The independent truth: the record built as a JSON object and dumped by nlohmann, key for key
  // and digit for digit (shortest round-trip doubles, escaped and invalid-UTF-8 names).
  TmpFile tmp;
  ASSERT_NE(tmp.f, nullptr);
  auto sink = make_json_sink(tmp.out);
  std::vector<nlohmann::ordered_json> expected;
  const std::vector<std::string> names = {"pm_bench_call", "ns::Cart::add(int)", "quote\"back\\slash\x01", "bad\xff\xfe"};
  const WallClock::time_point base = WallClock::time_point(std::chrono::seconds(1'790'000'000));
  size_t n = 0;
  for (int i = 0; i < 3000; ++i) {
    Span sp;
    sp.function = names[static_cast<size_t>(i) % names.size()];
    sp.pid = 100 + i;
    sp.tid = 200 + i;
    if (i % 3 == 0) sp.request_id = 18'000'000'000'000'000'000ULL + static_cast<uint64_t>(i);
    sp.start = base + std::chrono::microseconds(i * 333'337LL);
    sp.seconds = 1e-9 * (i * 7919 % 100'003) + (i % 5 == 0 ? 12.5 : 0.0);
    sp.on_cpu_seconds = i % 7 == 0 ? 0.0 : 1.0 / (i + 3);
    sp.runq_seconds = 3e-7 * i;
    sp.blocked_seconds = i % 11 == 0 ? 123456.789 : 0.001;
    sp.voluntary_switches = static_cast<uint64_t>(i);
    sp.involuntary_switches = static_cast<uint64_t>(i) * 3;
    sp.bio_read_bytes = static_cast<uint64_t>(i) << 20;
    sp.bio_write_bytes = 4096;
    sp.page_faults = static_cast<uint64_t>(i % 13);
    sink->span(sp);
    auto ns = [](double s) { return std::round(s * 1e9) / 1e9; };
    nlohmann::ordered_json j{{"type", "span"}, {"function", sp.function}, {"pid", sp.pid}, {"tid", sp.tid}};
    if (sp.request_id) j["request_id"] = *sp.request_id;
    j["start"] = iso8601(sp.start, true);
    j["latency_s"] = ns(sp.seconds);
    j["on_cpu_s"] = ns(sp.on_cpu_seconds);
    j["runq_s"] = ns(sp.runq_seconds);
    j["blocked_s"] = ns(sp.blocked_seconds);
    j["voluntary_switches"] = sp.voluntary_switches;
    j["involuntary_switches"] = sp.involuntary_switches;
    j["bio_read_bytes"] = sp.bio_read_bytes;
    j["bio_write_bytes"] = sp.bio_write_bytes;
    j["page_faults"] = sp.page_faults;
    expected.push_back(std::move(j));
    if (i == 10) n = lines_of(contents(tmp.f)).size();
  }
  EXPECT_EQ(n, 0u) << "a few spans wait for a batch, not a write each";
  RunInfo info;
  info.mode = "system";
  info.end_reason = "interrupted";
  Aggregator agg;
  sink->summary(agg.summary(sinks_t0), info, {});  // writes what waits, then the summary
  std::vector<std::string> lines = lines_of(contents(tmp.f));
  ASSERT_EQ(lines.size(), expected.size() + 1);
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(lines[i], expected[i].dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) << i;
  }
  EXPECT_EQ(nlohmann::json::parse(lines.back())["type"], "summary");
}

// The tree's samples as the tree source reports them (its own descriptors and text layout).
Samples tree_samples(double seen, double procs, double threads, double rss, double user, double sys) {
  TreeFigures f;
  f.processes_seen = seen;
  f.processes = procs;
  f.threads = threads;
  f.rss = rss;
  f.vm_size = 4 * rss;
  f.counters[TaskFig::kUser] = user;
  f.counters[TaskFig::kSystem] = sys;
  f.io_known = false;  // not readable (another user's processes): left out, shown as n/a
  Samples out;
  append_tree_samples(f, out);
  return out;
}

TEST(TextSink, ProcessTreeSummaryAndUnavailable) {
  Aggregator agg;
  agg.observe(tree_samples(1, 1, 1, 1 * kMiB, 0.5, 0.1), sinks_t0);
  agg.observe(tree_samples(3, 2, 5, 3 * kMiB, 1.0, 0.3), sinks_t0 + seconds(1));
  agg.observe(tree_samples(3, 1, 2, 2 * kMiB, 1.5, 0.6), sinks_t0 + seconds(2));
  agg.observe({{&kReqs, {}, 10, {}}}, sinks_t0 + seconds(2));
  IntervalRecord rec = agg.close_interval(sinks_t0 + seconds(2));

  TmpFile tmp;
  ASSERT_NE(tmp.f, nullptr);
  auto sink = make_text_sink(tmp.out);
  sink->interval(rec);
  std::string interval_text = contents(tmp.f);
  // Over 2 s: user 1.0 s (50%), system 0.5 s (25%); the latest gauges; no storage figures (not read).
  EXPECT_NE(interval_text.find("tree     1 process  2 threads  CPU 75.0% (user 50.0%, system 25.0%)  RSS 2.0 MiB"),
            std::string::npos)
      << interval_text;
  EXPECT_EQ(interval_text.find("storage"), std::string::npos) << interval_text;
  // A metric whose source has no text layout is printed generically.
  EXPECT_NE(interval_text.find("app      requests=0"), std::string::npos) << interval_text;

  RunInfo info;
  info.mode = "run";
  info.command = {"sleep", "1"};
  info.pid = 42;
  info.exit_code = 0;
  info.end_reason = "exited";
  std::vector<Unavailable> unavailable{{"pmc", "no PMU in this VM"}};
  sink->summary(agg.summary(sinks_t0 + seconds(2)), info, unavailable);
  std::string all = contents(tmp.f);
  std::string text = all.substr(interval_text.size());
  EXPECT_EQ(text.rfind("=== perf-monitor summary\n", 0), 0u) << text;
  EXPECT_NE(text.find("command  sleep 1 (pid 42) exited with status 0 after 2.00 s (exited)"), std::string::npos)
      << text;
  // processes_seen's maximum, processes' and threads' maxima.
  EXPECT_NE(text.find("tree     3 processes seen, at most 2 at once, at most 5 threads\n"), std::string::npos) << text;
  EXPECT_NE(text.find("user 1.000 s  system 0.500 s  (75.0% of one CPU)"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n +RSS +max +3\.0 MiB +min +1\.0 MiB\n)"))) << text;
  // Figures that were not read are "n/a", never 0.
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n +PSS +max +n/a +min +n/a\n)"))) << text;
  EXPECT_NE(text.find("storage read n/a  write n/a"), std::string::npos) << text;
  EXPECT_EQ(text.find(" 0 B"), std::string::npos) << text;
  EXPECT_NE(text.find("not available: pmc: no PMU in this VM\n"), std::string::npos) << text;
}

TEST(TextSink, PartialProcessTreeDoesNotCrash) {
  // Only some of the family's metrics: the summary must not rely on the others being there.
  Samples first = tree_samples(4, 2, 2, kMiB, 0, 0), second = tree_samples(6, 3, 3, kMiB, 0, 0);
  auto keep = [](Samples& s) {
    std::erase_if(s, [](const Sample& x) { return x.desc->name != "processes_seen" && x.desc->name != "processes"; });
  };
  keep(first);
  keep(second);
  Aggregator agg;
  agg.observe(first, sinks_t0);
  agg.observe(second, sinks_t0 + seconds(1));
  TmpFile tmp;
  ASSERT_NE(tmp.f, nullptr);
  auto sink = make_text_sink(tmp.out);
  RunInfo info;
  info.mode = "attach";
  info.pid = 7;
  info.end_reason = "interrupted";
  sink->summary(agg.summary(sinks_t0 + seconds(1)), info, {{"thermal", "no thermal zones"}});
  std::string text = contents(tmp.f);
  EXPECT_NE(text.find("tree     6 processes seen, at most 3 at once\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("pid      7"), std::string::npos) << text;
  EXPECT_NE(text.find("not available: thermal: no thermal zones\n"), std::string::npos) << text;
}

// The summary names the command as a shell would need it typed, and repeats nothing said at
// start about what is not available (only what turned out missing since).
TEST(TextSink, SummaryQuotesTheCommandAndSaysOnlyWhatIsNew) {
  EXPECT_EQ(shell_words({"sh", "-c", "echo a; sleep 1", "", "it's", "a/b-c.d=e:f,g"}),
            "sh -c 'echo a; sleep 1' '' 'it'\\''s' a/b-c.d=e:f,g");
  EXPECT_EQ(shell_words({"x\x1b[31m"}), "'x?[31m'");
  Aggregator agg;
  agg.observe(tree_samples(1, 1, 1, 1 * kMiB, 0.5, 0.1), sinks_t0);
  agg.observe(tree_samples(1, 1, 1, 1 * kMiB, 0.6, 0.1), sinks_t0 + seconds(1));
  TmpFile tmp;
  ASSERT_NE(tmp.f, nullptr);
  SinkOptions quiet;
  quiet.quiet = true;  // nothing on this test's standard error
  quiet.intervals = false;
  auto sink = make_text_sink(tmp.out, quiet);
  std::vector<Unavailable> at_start{{"thermal", "no thermal zones"}};
  sink->unavailable(at_start);
  sink->interval(agg.close_interval(sinks_t0 + seconds(1)));
  EXPECT_EQ(contents(tmp.f), "") << "an interval printed where none was asked for";
  RunInfo info;
  info.mode = "run";
  info.command = {"sh", "-c", "make -C dir -j2"};
  info.pid = 9;
  info.exit_code = 0;
  info.end_reason = "exited";
  std::vector<Unavailable> at_end = at_start;
  at_end.push_back({"pmc.cycles", "never counted: the PMU was busy"});
  sink->summary(agg.summary(sinks_t0 + seconds(1)), info, at_end);
  std::string text = contents(tmp.f);
  EXPECT_NE(text.find("command  sh -c 'make -C dir -j2' (pid 9)"), std::string::npos) << text;
  EXPECT_EQ(text.find("thermal"), std::string::npos) << text;
  EXPECT_NE(text.find("not available: pmc.cycles: never counted: the PMU was busy\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace pm
