// SPDX-License-Identifier: Apache-2.0
#include "sinks/otlp.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "core/outside_text.h"
#include "core/text.h"
#include "core/version.h"
#include "sinks/gzip.h"
#include "sinks/protobuf_wire.h"
#include "sinks/pusher.h"

namespace pm {
namespace {

using wire::bytes_field;
using wire::fixed64;
using wire::key;
using wire::varint;

// KeyValue { string key = 1; AnyValue value = 2; }
// AnyValue { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
void attribute(std::string& out, uint32_t field, std::string_view k, const std::string& any) {
  std::string kv;
  bytes_field(kv, 1, k);
  bytes_field(kv, 2, any);
  bytes_field(out, field, kv);
}
std::string any_string(std::string_view v) {
  std::string a;
  bytes_field(a, 1, clean_utf8(v));
  return a;
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
// A KeyValue of an int or a double, written in place: its sizes are known ahead, so no message is
// built apart and copied (a span has a dozen of them; this is most of what a span costs).
void kv_head(std::string& out, uint32_t field, std::string_view k, size_t any) {
  key(out, field, 2);
  varint(out, 1 + varint_size(k.size()) + k.size() + 1 + varint_size(any) + any);
  bytes_field(out, 1, k);
  key(out, 2, 2);
  varint(out, any);
}
void attr_int(std::string& out, uint32_t field, std::string_view k, uint64_t v) {
  kv_head(out, field, k, 1 + varint_size(v));
  key(out, 3, 0);
  varint(out, v);
}
void attr_double(std::string& out, uint32_t field, std::string_view k, double v) {
  kv_head(out, field, k, 9);
  wire::double_field(out, 4, v);
}

// Hex digits to bytes; "" where the text is not exactly n bytes of hex.
std::string from_hex(std::string_view hex, size_t n) {
  if (hex.size() != 2 * n) return {};
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    auto digit = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
    int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return {};
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::string random_bytes(size_t n, uint64_t (*random)()) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = random();
    if (r == 0) r = 1;  // an all-zero ID is invalid
    std::memcpy(out.data() + i, &r, std::min<size_t>(8, n - i));
  }
  return out;
}

// Span { bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5;
//        SpanKind kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
//        repeated KeyValue attributes = 9; }
void encode_span(std::string& out, std::string& sp, const Span& s, uint64_t (*random)()) {
  std::string trace = from_hex(s.trace_id, 16), parent = from_hex(s.parent_span_id, 8);
  if (trace.empty()) trace = random_bytes(16, random);
  sp.clear();
  bytes_field(sp, 1, trace);
  bytes_field(sp, 2, random_bytes(8, random));
  if (!parent.empty()) bytes_field(sp, 4, parent);
  bytes_field(sp, 5, clean_utf8(s.function));
  key(sp, 6, 0);
  varint(sp, 1);  // SPAN_KIND_INTERNAL
  auto start = std::chrono::duration_cast<std::chrono::nanoseconds>(s.start.time_since_epoch()).count();
  auto start_ns = static_cast<uint64_t>(start < 0 ? 0 : start);
  fixed64(sp, 7, start_ns);
  fixed64(sp, 8, start_ns + static_cast<uint64_t>(std::llround(s.seconds * 1e9)));
  attr_int(sp, 9, "process.pid", static_cast<uint64_t>(s.pid));
  attr_int(sp, 9, "thread.id", static_cast<uint64_t>(s.tid));
  if (s.request_id) attr_int(sp, 9, "perf_monitor.request_id", *s.request_id);
  attr_double(sp, 9, "perf_monitor.on_cpu_seconds", s.on_cpu_seconds);
  attr_double(sp, 9, "perf_monitor.runq_seconds", s.runq_seconds);
  attr_double(sp, 9, "perf_monitor.blocked_seconds", s.blocked_seconds);
  if (s.polls > 0 || !s.trace_id.empty()) {
    attr_double(sp, 9, "perf_monitor.blocked_io_seconds", s.blocked_io_seconds);
    attr_double(sp, 9, "perf_monitor.blocked_sleep_seconds", s.blocked_sleep_seconds);
    attr_double(sp, 9, "perf_monitor.blocked_lock_seconds", s.blocked_lock_seconds);
    attr_double(sp, 9, "perf_monitor.blocked_other_seconds", s.blocked_other_seconds);
    attr_int(sp, 9, "perf_monitor.threads", s.threads);
  }
  if (s.polls > 0) {
    attr_int(sp, 9, "perf_monitor.polls", s.polls);
    attr_double(sp, 9, "perf_monitor.pending_seconds", s.pending_seconds);
  }
  attr_int(sp, 9, "perf_monitor.voluntary_switches", s.voluntary_switches);
  attr_int(sp, 9, "perf_monitor.involuntary_switches", s.involuntary_switches);
  attr_int(sp, 9, "perf_monitor.bio_read_bytes", s.bio_read_bytes);
  attr_int(sp, 9, "perf_monitor.bio_write_bytes", s.bio_write_bytes);
  attr_int(sp, 9, "perf_monitor.page_faults", s.page_faults);
  bytes_field(out, 2, sp);  // ScopeSpans.spans
}

// The OTLP unit of a metric (UCUM, as OpenTelemetry's semantic conventions write them).
std::string_view otlp_unit(Unit u) {
  switch (u) {
    case Unit::kBytes: return "By";
    case Unit::kSeconds: return "s";
    case Unit::kJoules: return "J";
    case Unit::kCelsius: return "Cel";
    case Unit::kPercent: return "%";
    case Unit::kNone: break;
  }
  return "1";
}

// A histogram's values are counted in units of its bucket base (1 us for latencies kept in
// seconds with a base of 1e-6): its unit, "us" for that; the base itself where it has no name.
std::string base_unit(const MetricDesc& d) {
  double b = d.bucket_base > 0 ? d.bucket_base : 1;
  if (b == 1) return std::string(otlp_unit(d.unit));
  if (d.unit == Unit::kSeconds) {
    if (std::fabs(b - 1e-9) < 1e-21) return "ns";
    if (std::fabs(b - 1e-6) < 1e-18) return "us";
    if (std::fabs(b - 1e-3) < 1e-15) return "ms";
  }
  return fmt::format("{}{}", b, otlp_unit(d.unit));
}

uint64_t next_random() {
  static std::mt19937_64 gen{[] {
    std::random_device rd;
    return (uint64_t{rd()} << 32) ^ rd();
  }()};
  return gen();
}

class HttpOtlpSink final : public OtlpSink {
 public:
  explicit HttpOtlpSink(OtlpOptions o)
      : opt_(std::move(o)),
        pusher_(opt_.traces, headers(opt_), opt_.request_timeout,
                [](const http::Reply& r) { return rejected_spans(r.body); }),
        metrics_(opt_.metrics, headers(opt_), opt_.request_timeout,
                 [](const http::Reply& r) { return rejected_spans(r.body); }) {}
  Status start() override {
    PM_TRY(pusher_.start());
    return metrics_.start();
  }
  [[nodiscard]] std::vector<SessionStatus::Export> counts() const override {
    return {pusher_.export_counts("otlp_spans"), metrics_.export_counts("otlp_metrics")};
  }
  void unavailable(const std::vector<Unavailable>& /*list*/) override {}
  void span(const Span& s) override {
    pending_.push_back(s);
    if (pending_.size() >= kMaxBatch) send();
  }
  void interval(const IntervalRecord& rec) override {
    send();
    if (start_ns_ == 0) {
      auto first = std::chrono::duration_cast<std::chrono::nanoseconds>(rec.timestamp.time_since_epoch()).count() -
                   static_cast<int64_t>(rec.seconds * 1e9);
      start_ns_ = static_cast<uint64_t>(std::max<int64_t>(first, 1));
    }
    std::string body = encode_metrics_request(rec, opt_.resource, start_ns_);
    if (opt_.gzip) body = gzip(body);
    metrics_.push(std::move(body), 1);
  }
  void summary(const SummaryRecord& /*rec*/, const RunInfo& /*info*/, const std::vector<Unavailable>& /*list*/) override {
    send();
    // The two queues' ends overlap: each gets the same deadline.
    std::thread other([this] { metrics_.finish(opt_.flush_timeout); });
    pusher_.finish(opt_.flush_timeout);
    other.join();
    for (auto [p, what] : {std::pair{&pusher_, "spans"}, std::pair{&metrics_, "interval metrics"}}) {
      Pusher::Counts c = p->counts();
      size_t lost = c.dropped + c.refused + c.left;
      if (lost > 0) {
        std::fprintf(stderr, "perf-monitor: OTLP export to %s: %zu of %zu %s not delivered (%s)\n",
                     printable(p->url().text).c_str(), lost, c.queued, what,
                     c.left > 0 ? "the receiver did not take them before the end" : c.why.c_str());
      }
    }
  }

 private:
  static std::vector<std::pair<std::string, std::string>> headers(const OtlpOptions& o) {
    std::vector<std::pair<std::string, std::string>> h = {{"Content-Type", "application/x-protobuf"},
                                                          {"User-Agent", std::string("perf-monitor/") + PERF_MONITOR_VERSION}};
    if (o.gzip) h.emplace_back("Content-Encoding", "gzip");
    for (const auto& kv : o.headers) h.push_back(kv);
    return h;
  }
  void send() {
    if (pending_.empty()) return;
    std::string body = encode_trace_request(pending_, opt_.resource, next_random);
    if (opt_.gzip) body = gzip(body);
    pusher_.push(std::move(body), pending_.size());
    pending_.clear();
  }
  OtlpOptions opt_;
  Pusher pusher_;   // spans
  Pusher metrics_;  // an interval's metrics, one request each
  std::vector<Span> pending_;
  uint64_t start_ns_ = 0;
};

// "k1=v1,k2=v2" with %XX escapes (the W3C baggage format OTEL_EXPORTER_OTLP_HEADERS uses).
Result<std::vector<std::pair<std::string, std::string>>> parse_headers(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  auto decode = [](std::string_view s) {
    std::string r;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        std::string hex = from_hex(s.substr(i + 1, 2), 1);
        if (!hex.empty()) {
          r += hex;
          i += 2;
          continue;
        }
      }
      r += s[i];
    }
    size_t b = r.find_first_not_of(" \t"), e = r.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : r.substr(b, e - b + 1);
  };
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    if (item.find_first_not_of(" \t") == std::string_view::npos) continue;
    size_t eq = item.find('=');
    std::string k = decode(item.substr(0, eq)), v = eq == std::string_view::npos ? "" : decode(item.substr(eq + 1));
    bool bad = eq == std::string_view::npos || k.empty() ||
               std::any_of(k.begin(), k.end(), [](char c) { return c <= ' ' || c == ':' || c == 0x7f; }) ||
               std::any_of(v.begin(), v.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
    if (bad) {
      return make_error(Errc::kInvalidArgument,
                        "OTEL_EXPORTER_OTLP_HEADERS: '" + printable(std::string(item)) + "' is not KEY=VALUE");
    }
    out.emplace_back(std::move(k), std::move(v));
  }
  return out;
}

void resource_and_scope(std::string& rs_resource, std::string& scope,
                        const std::vector<std::pair<std::string, std::string>>& resource) {
  for (const auto& [k, v] : resource) attribute(rs_resource, 1, k, any_string(v));
  bytes_field(scope, 1, "perf-monitor");
  bytes_field(scope, 2, PERF_MONITOR_VERSION);
}

}  // namespace

std::string encode_metrics_request(const IntervalRecord& rec,
                                   const std::vector<std::pair<std::string, std::string>>& resource, uint64_t start_ns) {
  // ExportMetricsServiceRequest { repeated ResourceMetrics resource_metrics = 1; }
  // ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; }
  // ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2; }
  // Metric { string name = 1; string description = 2; string unit = 3; Gauge gauge = 5; Sum sum = 7;
  //          ExponentialHistogram exponential_histogram = 10; }
  // Gauge { repeated NumberDataPoint data_points = 1; }
  // Sum { repeated NumberDataPoint data_points = 1; AggregationTemporality aggregation_temporality = 2;
  //       bool is_monotonic = 3; }                                   (CUMULATIVE = 2)
  // NumberDataPoint { fixed64 start_time_unix_nano = 2; fixed64 time_unix_nano = 3; double as_double = 4;
  //                   repeated KeyValue attributes = 7; }
  // ExponentialHistogram { repeated ExponentialHistogramDataPoint data_points = 1; AggregationTemporality = 2; }
  // ExponentialHistogramDataPoint { repeated KeyValue attributes = 1; fixed64 start_time_unix_nano = 2;
  //   fixed64 time_unix_nano = 3; fixed64 count = 4; double sum = 5; sint32 scale = 6; fixed64 zero_count = 7;
  //   Buckets positive = 8; double zero_threshold = 14; }
  // Buckets { sint32 offset = 1; repeated uint64 bucket_counts = 2 (packed); }
  std::string res, scope;
  resource_and_scope(res, scope, resource);
  std::string scope_metrics;
  bytes_field(scope_metrics, 1, scope);
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(rec.timestamp.time_since_epoch()).count();
  auto time_ns = static_cast<uint64_t>(now < 0 ? 0 : now);
  // One Metric per name, its series as data points, in the order they first appear.
  std::vector<std::pair<const MetricDesc*, std::vector<const IntervalValue*>>> metrics;
  for (const IntervalValue& v : rec.values) {
    if (v.derived || v.desc->denominator) continue;
    auto it = std::find_if(metrics.begin(), metrics.end(), [&](const auto& m) {
      return m.first->family == v.desc->family && m.first->name == v.desc->name;
    });
    if (it == metrics.end()) {
      metrics.push_back({v.desc, {}});
      it = metrics.end() - 1;
    }
    if (v.desc->kind == it->first->kind) it->second.push_back(&v);
  }
  for (const auto& [d, series] : metrics) {
    std::string points;
    for (const IntervalValue* v : series) {
      std::string p;
      auto attrs = [&](uint32_t field) {
        for (const auto& [k, val] : *v->labels) attribute(p, field, k, any_string(val));
      };
      if (d->kind == MetricKind::kHistogram) {
        // The log2 buckets, in units of the base: bucket 0 is [0, 1), bucket i >= 1 is
        // [2^(i-1), 2^i). OTLP's scale-0 bucket k is (2^k, 2^(k+1)]: bucket i goes to k = i - 1
        // (a value exactly on a power of two is one bucket apart, as on /metrics), bucket 0 to
        // the zero bucket, of threshold 1.
        double base = d->bucket_base > 0 ? d->bucket_base : 1;
        uint64_t count = 0;
        for (uint64_t c : v->total_buckets) count += c;
        attrs(1);
        fixed64(p, 2, start_ns);
        fixed64(p, 3, time_ns);
        fixed64(p, 4, count);
        wire::double_field(p, 5, v->total / base);
        key(p, 6, 0);
        varint(p, 0);  // scale 0 (zigzag 0)
        fixed64(p, 7, v->total_buckets.empty() ? 0 : v->total_buckets[0]);
        std::string buckets, packed;
        key(buckets, 1, 0);
        varint(buckets, 0);  // offset 0 (zigzag)
        for (size_t i = 1; i < v->total_buckets.size(); ++i) varint(packed, v->total_buckets[i]);
        bytes_field(buckets, 2, packed);
        bytes_field(p, 8, buckets);
        wire::double_field(p, 14, 1.0);
      } else {
        double value = d->kind == MetricKind::kCounter ? v->total : v->value;
        fixed64(p, 2, start_ns);
        fixed64(p, 3, time_ns);
        wire::double_field(p, 4, value);
        attrs(7);
      }
      bytes_field(points, 1, p);
    }
    std::string data = points;
    std::string m;
    bytes_field(m, 1, fmt::format("perf_monitor.{}.{}", d->family, d->name));
    if (!d->help.empty()) bytes_field(m, 2, d->help);
    bytes_field(m, 3, d->kind == MetricKind::kHistogram ? base_unit(*d) : std::string(otlp_unit(d->unit)));
    if (d->kind == MetricKind::kCounter) {
      key(data, 2, 0);
      varint(data, 2);  // AGGREGATION_TEMPORALITY_CUMULATIVE
      key(data, 3, 0);
      varint(data, 1);  // monotonic
      bytes_field(m, 7, data);
    } else if (d->kind == MetricKind::kGauge) {
      bytes_field(m, 5, data);
    } else {
      key(data, 2, 0);
      varint(data, 2);
      bytes_field(m, 10, data);
    }
    bytes_field(scope_metrics, 2, m);
  }
  std::string rm;
  bytes_field(rm, 1, res);
  bytes_field(rm, 2, scope_metrics);
  std::string out;
  bytes_field(out, 1, rm);
  return out;
}

std::string encode_trace_request(const std::vector<Span>& spans,
                                 const std::vector<std::pair<std::string, std::string>>& resource,
                                 uint64_t (*random)()) {
  // ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
  // ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
  // Resource { repeated KeyValue attributes = 1; }
  // ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
  // InstrumentationScope { string name = 1; string version = 2; }
  std::string res, scope;
  resource_and_scope(res, scope, resource);
  std::string scope_spans;
  bytes_field(scope_spans, 1, scope);
  std::string scratch;  // one span's message, its capacity kept from span to span
  for (const Span& s : spans) encode_span(scope_spans, scratch, s, random);
  std::string rs;
  bytes_field(rs, 1, res);
  bytes_field(rs, 2, scope_spans);
  std::string out;
  bytes_field(out, 1, rs);
  return out;
}

size_t rejected_spans(std::string_view b) {
  // ExportTraceServiceResponse { ExportTracePartialSuccess partial_success = 1; }
  // ExportTracePartialSuccess { int64 rejected_spans = 1; string error_message = 2; }
  auto read_varint = [](std::string_view& s, uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && !s.empty(); shift += 7) {
      auto c = static_cast<uint8_t>(s.front());
      s.remove_prefix(1);
      v |= uint64_t{c & 0x7fu} << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  };
  auto field = [&](std::string_view s, uint32_t want, std::string_view* ld, uint64_t* num) {
    while (!s.empty()) {
      uint64_t k = 0, v = 0;
      if (!read_varint(s, k)) return false;
      uint32_t f = static_cast<uint32_t>(k >> 3), wire = static_cast<uint32_t>(k & 7);
      if (wire == 0) {
        if (!read_varint(s, v)) return false;
        if (f == want && num) return *num = v, true;
      } else if (wire == 2) {
        if (!read_varint(s, v) || v > s.size()) return false;
        if (f == want && ld) return *ld = s.substr(0, v), true;
        s.remove_prefix(v);
      } else if (wire == 1 || wire == 5) {
        size_t n = wire == 1 ? 8 : 4;
        if (s.size() < n) return false;
        s.remove_prefix(n);
      } else {
        return false;
      }
    }
    return false;
  };
  std::string_view partial;
  uint64_t rejected = 0;
  if (!field(b, 1, &partial, nullptr) || !field(partial, 1, nullptr, &rejected)) return 0;
  return static_cast<size_t>(rejected);
}

Result<std::optional<OtlpOptions>> otlp_options(const std::string& flag) {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  std::string base = !flag.empty() ? flag : env("OTEL_EXPORTER_OTLP_ENDPOINT");
  std::string traces = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), metrics = env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  if (base.empty() && traces.empty() && metrics.empty()) return std::optional<OtlpOptions>();
  if (base.empty()) base = "http://localhost:4318";  // OTLP/HTTP's default, for a signal without its own
  // A signal's own variable is its whole URL; the base URL gets /v1/<signal> (the flag wins).
  auto signal = [&](std::string& own, const char* path) {
    if (!own.empty() && flag.empty()) return;
    own = base;
    if (!own.empty() && own.back() == '/') own.pop_back();
    own += path;
  };
  signal(traces, "/v1/traces");
  signal(metrics, "/v1/metrics");
  OtlpOptions o;
  for (auto [text, url, what] : {std::tuple{&traces, &o.traces, "traces"}, std::tuple{&metrics, &o.metrics, "metrics"}}) {
    auto u = http::parse_url(*text);
    if (!u) return make_error(Errc::kInvalidArgument, std::string("the OTLP ") + what + " endpoint: " + u.error().message);
    *url = *u;
  }
  auto headers = parse_headers(env("OTEL_EXPORTER_OTLP_HEADERS"));
  if (!headers) return headers.error();
  o.headers = std::move(*headers);
  std::string compression = env("OTEL_EXPORTER_OTLP_COMPRESSION");
  if (compression != "" && compression != "none" && compression != "gzip") {
    return make_error(Errc::kInvalidArgument,
                      "OTEL_EXPORTER_OTLP_COMPRESSION: '" + printable(compression) + "' is not gzip or none");
  }
  o.gzip = compression == "gzip";
  std::string service = env("OTEL_SERVICE_NAME");
  o.resource.emplace_back("service.name", service.empty() ? "perf-monitor" : service);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  o.resource.emplace_back("host.name", host);
  o.resource.emplace_back("telemetry.sdk.name", "perf-monitor");
  o.resource.emplace_back("telemetry.sdk.version", PERF_MONITOR_VERSION);
  return std::optional<OtlpOptions>(std::move(o));
}

std::unique_ptr<OtlpSink> OtlpSink::create(OtlpOptions options) {
  return std::make_unique<HttpOtlpSink>(std::move(options));
}

}  // namespace pm
