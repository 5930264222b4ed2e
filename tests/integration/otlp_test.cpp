// SPDX-License-Identifier: Apache-2.0
// OTLP/HTTP export (--otlp) decoded by OpenTelemetry's own generated protobuf code: a Node.js
// receiver (otlp_receiver.js) with @opentelemetry/otlp-transformer from the npm registry decodes
// every request perf-monitor sends; its spans must be the JSON's spans of the same run, with the
// application's trace ID and its span as parent where OpenTelemetry thread context gave them.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

constexpr const char* kTransformer = "@opentelemetry/otlp-transformer@0.52.1";  // ships the generated messages

// The npm package, installed once into the scratch directory; its node_modules, or "" and why.
std::string transformer(std::string& why) {
  static std::string error;
  static const std::string dir = npm_modules(
      kTransformer, "otlp-transformer", "@opentelemetry/otlp-transformer/build/src/generated/root.js", error);
  why = error;
  return dir;
}

class Receiver {
 public:
  explicit Receiver(const std::string& modules) {
    base_ = temp_base();
    std::string port_file = base_ + ".port";
    out_ = base_ + ".spans";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execlp("node", "node", PM_OTLP_RECEIVER, modules.c_str(), port_file.c_str(), out_.c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      std::string p = slurp(port_file);
      if (!p.empty()) port_ = std::stoi(p);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::unlink(port_file.c_str());
  }
  ~Receiver() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    ::unlink(out_.c_str());
    ::unlink((out_ + ".metrics").c_str());
  }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::vector<nlohmann::json> spans() const { return lines(out_); }
  [[nodiscard]] std::vector<nlohmann::json> metrics() const { return lines(out_ + ".metrics"); }

 private:
  static std::vector<nlohmann::json> lines(const std::string& path) {
    std::vector<nlohmann::json> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
    return out;
  }

  std::string base_, out_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class OtlpTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: loading BPF programs";
#if !defined(__x86_64__)
    GTEST_SKIP() << "OpenTelemetry thread context is read on x86-64 only";
#endif
    modules_ = transformer(why_);
    if (modules_.empty()) GTEST_SKIP() << why_;
  }
  std::string modules_, why_;
};

// The C writer of OpenTelemetry thread context: 2 threads, 50 spans each; each of perf-monitor's
// spans is checked against the JSON's, field by field.
TEST_P(OtlpTest, SpansDecodedByOpenTelemetrysOwnCodeAreTheJsonsSpans) {
  bool gzip = GetParam();
  Receiver r(modules_);
  ASSERT_GT(r.port(), 0) << "the receiver did not start";
  if (gzip) ::setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", 1);
  ::setenv("OTEL_SERVICE_NAME", "otlp-test", 1);
  Outcome o = run_pm({"run", "--format", "json", "--otlp", "http://127.0.0.1:" + std::to_string(r.port()), "--",
                      PM_OTEL_SERVER, "--threads", "2", "--spans", "50", "--delay-ms", "50", "--dir", scratch_dir()});
  ::unsetenv("OTEL_EXPORTER_OTLP_COMPRESSION");
  ::unsetenv("OTEL_SERVICE_NAME");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.err.find("not delivered"), std::string::npos) << o.err;
  std::map<std::string, nlohmann::json> exported;  // by trace ID and parent
  for (const nlohmann::json& s : r.spans()) exported[s["traceId"].get<std::string>() + s["parentSpanId"].get<std::string>()] = s;
  size_t json_spans = 0;
  for (const auto& j : o.records) {
    if (j["type"] != "span" || !j.contains("trace_id")) continue;
    ++json_spans;
    auto it = exported.find(j["trace_id"].get<std::string>() + j["parent_span_id"].get<std::string>());
    ASSERT_NE(it, exported.end()) << "not exported: " << j.dump();
    const nlohmann::json& s = it->second;
    EXPECT_EQ(s["name"], j["function"]);
    EXPECT_EQ(s["kind"], 1) << "SPAN_KIND_INTERNAL";
    EXPECT_EQ(s["spanId"].get<std::string>().size(), 16u);
    EXPECT_NE(s["spanId"], s["parentSpanId"]);
    EXPECT_EQ(s["contentType"], "application/x-protobuf");
    EXPECT_EQ(s["encoding"], gzip ? "gzip" : "");
    EXPECT_EQ(s["scope"], "perf-monitor");
    EXPECT_EQ(s["resource"]["service.name"], "otlp-test");
    EXPECT_NE(s["resource"]["process.command_line"].get<std::string>().find("--spans 50"), std::string::npos);
    const nlohmann::json& a = s["attrs"];
    EXPECT_EQ(a["process.pid"], j["pid"]);
    EXPECT_EQ(a["thread.id"], j["tid"]);
    for (auto [otlp, json] : {std::pair{"perf_monitor.on_cpu_seconds", "on_cpu_s"}, std::pair{"perf_monitor.runq_seconds", "runq_s"},
                              std::pair{"perf_monitor.blocked_seconds", "blocked_s"},
                              std::pair{"perf_monitor.blocked_io_seconds", "blocked_io_s"},
                              std::pair{"perf_monitor.blocked_sleep_seconds", "blocked_sleep_s"}}) {
      EXPECT_NEAR(a[otlp].get<double>(), j[json].get<double>(), 1e-9) << otlp << " " << j.dump();
    }
    for (auto [otlp, json] : {std::pair{"perf_monitor.bio_read_bytes", "bio_read_bytes"},
                              std::pair{"perf_monitor.voluntary_switches", "voluntary_switches"},
                              std::pair{"perf_monitor.involuntary_switches", "involuntary_switches"},
                              std::pair{"perf_monitor.threads", "threads"}}) {
      EXPECT_EQ(a[otlp], j[json]) << otlp;
    }
    double latency = static_cast<double>(std::stoull(s["end"].get<std::string>()) - std::stoull(s["start"].get<std::string>())) * 1e-9;
    EXPECT_NEAR(latency, j["latency_s"].get<double>(), 2e-9);
  }
  EXPECT_EQ(json_spans, 100u);
  EXPECT_EQ(exported.size(), json_spans) << "every span exported once, none more";
}

// The interval metrics of a run: a counter, a gauge and a histogram, point by point against the
// JSON intervals of the same run.
TEST_P(OtlpTest, MetricsDecodedByOpenTelemetrysOwnCodeAreTheJsonsIntervals) {
  bool gzip = GetParam();
  Receiver r(modules_);
  ASSERT_GT(r.port(), 0) << "the receiver did not start";
  if (gzip) ::setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", 1);
  Outcome o = run_pm({"run", "--format", "json", "-I", "500ms", "--otlp", "http://127.0.0.1:" + std::to_string(r.port()),
                      "--", PM_WORKLOAD, "spin", "2000"});
  ::unsetenv("OTEL_EXPORTER_OTLP_COMPRESSION");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.err.find("not delivered"), std::string::npos) << o.err;
  std::vector<const nlohmann::json*> intervals;
  for (const auto& j : o.records) {
    if (j["type"] == "interval") intervals.push_back(&j);
  }
  ASSERT_GE(intervals.size(), 3u);
  std::map<std::string, std::vector<nlohmann::json>> points;  // by name, in time order
  for (const nlohmann::json& p : r.metrics()) {
    if (p["attrs"].empty()) points[p["name"].get<std::string>()].push_back(p);
  }
  for (auto& [name, list] : points) {
    auto time = [](const nlohmann::json& p) { return std::stoull(p["time"].get<std::string>()); };
    std::sort(list.begin(), list.end(), [&](const nlohmann::json& a, const nlohmann::json& b) { return time(a) < time(b); });
  }
  // A counter: cumulative, monotonic, the running total of the JSON's increases.
  const auto& cpu = points["perf_monitor.process_tree.cpu_user_seconds"];
  ASSERT_EQ(cpu.size(), intervals.size());
  double total = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    total += (*intervals[i])["process_tree"]["cpu_user_seconds"].get<double>();
    EXPECT_EQ(cpu[i]["kind"], "sum");
    EXPECT_EQ(cpu[i]["unit"], "s");
    EXPECT_EQ(cpu[i]["monotonic"], true);
    EXPECT_EQ(cpu[i]["temporality"], 2) << "cumulative";
    EXPECT_NEAR(cpu[i]["value"].get<double>(), total, 0.5e-6 * static_cast<double>(i + 1));
  }
  // A gauge: the interval's value.
  const auto& rss = points["perf_monitor.process_tree.rss_bytes"];
  ASSERT_EQ(rss.size(), intervals.size());
  for (size_t i = 0; i < rss.size(); ++i) {
    EXPECT_EQ(rss[i]["kind"], "gauge");
    EXPECT_EQ(rss[i]["value"].get<double>(), (*intervals[i])["process_tree"]["rss_bytes"].get<double>());
  }
  // A log2 histogram as an exponential histogram of scale 0 in microseconds: the zero bucket is
  // the JSON's bucket 0, OTLP bucket k the JSON's bucket k + 1, each a running count.
  const auto& runq = points["perf_monitor.process_tree.runq_latency_seconds"];
  ASSERT_EQ(runq.size(), intervals.size());
  std::vector<uint64_t> sums;
  for (size_t i = 0; i < runq.size(); ++i) {
    const auto& b = (*intervals[i])["process_tree"]["runq_latency_seconds"]["buckets"];
    sums.resize(std::max(sums.size(), b.size()));
    for (size_t k = 0; k < b.size(); ++k) sums[k] += b[k].get<uint64_t>();
    const nlohmann::json& p = runq[i];
    EXPECT_EQ(p["kind"], "exponential_histogram");
    EXPECT_EQ(p["unit"], "us");
    EXPECT_EQ(p["scale"], 0);
    EXPECT_EQ(p["zeroCount"].get<uint64_t>(), sums[0]);
    EXPECT_EQ(p["offset"], 0);
    uint64_t count = sums[0];
    for (size_t k = 1; k < sums.size(); ++k) {
      uint64_t got = k - 1 < p["bucketCounts"].size() ? p["bucketCounts"][k - 1].get<uint64_t>() : 0;
      EXPECT_EQ(got, sums[k]) << "bucket " << k << " of interval " << i;
      count += sums[k];
    }
    EXPECT_EQ(p["count"].get<uint64_t>(), count);
  }
}

INSTANTIATE_TEST_SUITE_P(Compression, OtlpTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Gzip" : "None"; });

TEST(Otlp, ABadEndpointOrVariableIsAUsageError) {
  Outcome a = run_pm({"--otlp", "https://collector:4318", "--duration", "1s"});
  EXPECT_EQ(a.exit_code, 2) << a.err;
  EXPECT_NE(a.err.find("--otlp"), std::string::npos) << a.err;
  ::setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", 1);
  Outcome b = run_pm({"--otlp", "http://127.0.0.1:4318", "--duration", "1s"});
  ::unsetenv("OTEL_EXPORTER_OTLP_COMPRESSION");
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_NE(b.err.find("OTEL_EXPORTER_OTLP_COMPRESSION"), std::string::npos) << b.err;
}

}  // namespace
}  // namespace pm::test
