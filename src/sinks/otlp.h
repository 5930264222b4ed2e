// SPDX-License-Identifier: Apache-2.0
// OpenTelemetry export (OTLP/HTTP, binary protobuf): every span perf-monitor reports (a probed
// call, a request, a thread-context request, the kernel's side of an OpenTelemetry span) goes to
// a collector or tracing backend as an OTLP span, its kernel figures as attributes. A span of
// OpenTelemetry thread context (OTEP 4947) keeps the application's trace ID and has the
// application's span as its parent, so Jaeger or Tempo show it under that span.
//
// The spans of an interval go as one ExportTraceServiceRequest at its close (or every
// kMaxBatch spans), encoded in the event loop and delivered by a Pusher (sinks/pusher.h: the
// OTLP specification's retry rules, a bounded queue, partial_success counted). The messages are
// encoded by hand from the OTLP .proto field numbers (a few dozen lines; no protobuf runtime in
// the binary): tests decode them with OpenTelemetry's own generated code.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/span.h"
#include "sinks/http_client.h"
#include "sinks/prometheus.h"
#include "sinks/sink.h"

namespace pm {

struct OtlpOptions {
  http::Url traces;   // .../v1/traces
  http::Url metrics;  // .../v1/metrics
  std::vector<std::pair<std::string, std::string>> headers;   // OTEL_EXPORTER_OTLP_HEADERS
  bool gzip = false;                                           // OTEL_EXPORTER_OTLP_COMPRESSION=gzip
  std::vector<std::pair<std::string, std::string>> resource;  // service.name, host.name, ...
  std::chrono::milliseconds flush_timeout{2000};
  std::chrono::milliseconds request_timeout{10000};
};

// Where and how to export, from --otlp URL and the standard environment variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_COMPRESSION, OTEL_SERVICE_NAME). `flag` empty and no endpoint variable:
// nullopt (no export). A bad value is an error that names it.
Result<std::optional<OtlpOptions>> otlp_options(const std::string& flag);

class OtlpSink : public Sink {
 public:
  static constexpr size_t kMaxBatch = 512;
  static std::unique_ptr<OtlpSink> create(OtlpOptions options);
  virtual Status start() = 0;
  // What it pushed so far: spans, and metric requests (the session's self metrics).
  [[nodiscard]] virtual std::vector<SessionStatus::Export> counts() const = 0;
};

// One ExportMetricsServiceRequest of an interval's metrics (for the sink and tests): counters
// as cumulative monotonic sums of their running totals, gauges as gauges, the log2 histograms
// as exponential histograms of scale 0 in units of their bucket base (see otlp.cpp); derived
// ratios left out, as on /metrics. `start_ns`: when the running totals began.
std::string encode_metrics_request(const IntervalRecord& rec, const std::vector<std::pair<std::string, std::string>>& resource,
                                   uint64_t start_ns);

// One ExportTraceServiceRequest of these spans (for the sink and tests); IDs perf-monitor makes
// come from `random` (16 bytes of trace ID, 8 of span ID per span).
std::string encode_trace_request(const std::vector<Span>& spans,
                                 const std::vector<std::pair<std::string, std::string>>& resource,
                                 uint64_t (*random)());
// The rejected_spans of an ExportTraceServiceResponse (0 where it has none or is not one).
size_t rejected_spans(std::string_view response);

}  // namespace pm
