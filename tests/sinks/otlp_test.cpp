// SPDX-License-Identifier: Apache-2.0
// OTLP: the partial_success of a response, read from bytes a receiver could send.
#include "sinks/otlp.h"

#include <gtest/gtest.h>

namespace pm {
namespace {

TEST(OtlpResponse, ReadsRejectedSpansOfAPartialSuccess) {
  // partial_success (1, length 5) { rejected_spans (1) = 300; error_message (2) = "x" }
  const std::string ok{"\x0a\x06\x08\xac\x02\x12\x01x", 8};
  EXPECT_EQ(rejected_spans(ok), 300u);
  EXPECT_EQ(rejected_spans(""), 0u) << "an empty response: all taken";
  EXPECT_EQ(rejected_spans(std::string{"\x0a\x7f\x08", 3}), 0u) << "a length past the end";
  EXPECT_EQ(rejected_spans("{\"partialSuccess\":{}}"), 0u) << "JSON, not protobuf";
}

TEST(OtlpOptions, NoFlagAndNoVariableIsNoExport) {
  ::unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  ::unsetenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  auto o = otlp_options("");
  ASSERT_TRUE(o);
  EXPECT_FALSE(*o);
  auto f = otlp_options("http://127.0.0.1:4318/");
  ASSERT_TRUE(f && *f);
  EXPECT_EQ((*f)->traces.path, "/v1/traces");
  EXPECT_EQ((*f)->metrics.path, "/v1/metrics");
  ::setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/custom", 1);
  auto m = otlp_options("");
  ::unsetenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  ASSERT_TRUE(m && *m);
  EXPECT_EQ((*m)->metrics.text, "http://m:9/custom");
  EXPECT_EQ((*m)->traces.text, "http://localhost:4318/v1/traces") << "OTLP/HTTP's default for the other signal";
  ::setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20abc, x-tenant = t1", 1);
  auto h = otlp_options("http://127.0.0.1:4318");
  ::unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
  ASSERT_TRUE(h && *h);
  ASSERT_EQ((*h)->headers.size(), 2u);
  EXPECT_EQ((*h)->headers[0].second, "Bearer abc");
  EXPECT_EQ((*h)->headers[1].first, "x-tenant");
  ::setenv("OTEL_EXPORTER_OTLP_HEADERS", "a=b\r\nInjected: 1", 1);
  EXPECT_FALSE(otlp_options("http://127.0.0.1:4318")) << "no header line can be injected";
  ::unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
}

}  // namespace
}  // namespace pm
