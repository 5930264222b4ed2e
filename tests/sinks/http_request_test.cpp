// SPDX-License-Identifier: Apache-2.0
// The exporter's request reader against requests real clients send (Prometheus, curl, a
// browser) and the ways a client can go wrong or attack it: each verdict is what RFC 9112 asks
// of a server, and nothing beyond the bounds is ever accepted.
#include "sinks/http_request.h"

#include <gtest/gtest.h>

#include <string>

namespace pm::http {
namespace {

TEST(HttpRequestHead, PrometheusScrape) {
  // What Prometheus 2.42 sends (captured with a listening nc).
  std::string req =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent: Prometheus/2.42.0\r\n"
      "Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
      "text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\n"
      "X-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";
  HeadParse p = parse_request_head(req);
  ASSERT_EQ(p.status, HeadStatus::kComplete) << p.why;
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.target, "/metrics");
  EXPECT_EQ(p.head.version, "HTTP/1.1");
  EXPECT_EQ(p.head.fields, 5u);
  EXPECT_EQ(p.head.size, req.size());
}

TEST(HttpRequestHead, ArrivesInPieces) {
  std::string req = "GET /metrics?name[]=x HTTP/1.0\nHost: x\n\n";  // bare LF, HTTP/1.0
  for (size_t n = 0; n < req.size(); ++n) {
    EXPECT_EQ(parse_request_head(req.substr(0, n)).status, HeadStatus::kIncomplete) << n;
  }
  std::string with_body = req + "trailing bytes of a body";
  HeadParse p = parse_request_head(with_body);
  ASSERT_EQ(p.status, HeadStatus::kComplete);
  EXPECT_EQ(p.head.size, req.size());
  EXPECT_EQ(target_path(p.head.target), "/metrics");
  // Leading blank lines are skipped.
  EXPECT_EQ(parse_request_head("\r\n\r\nGET / HTTP/1.1\r\n\r\n").status, HeadStatus::kComplete);
}

TEST(HttpRequestHead, MalformedIsBad) {
  for (const char* bad : {
           "GET\r\n\r\n",                             // no target
           "GET /metrics\r\n\r\n",                    // HTTP/0.9
           "GET  /metrics HTTP/1.1\r\n\r\n",          // two spaces
           "GET /metrics HTTP/1.1 x\r\n\r\n",         // three parts
           "GET metrics HTTP/1.1\r\n\r\n",            // not a path
           "GET http://a/metrics HTTP/1.1\r\n\r\n",   // absolute form: not for an exporter
           "GET /me\x01trics HTTP/1.1\r\n\r\n",       // control character
           "GET /metrics HTTX/1.1\r\n\r\n",           // not HTTP
           "G(T /metrics HTTP/1.1\r\n\r\n",           // not a token
           "GET /metrics HTTP/1.1\r\nHost x\r\n\r\n",  // no colon
           "GET /metrics HTTP/1.1\r\nHo st: x\r\n\r\n",
           "GET /metrics HTTP/1.1\r\n: x\r\n\r\n",     // no name
           "GET /metrics HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
           "GET /metrics HTTP/1.1\r\nHost: a\rb\r\n\r\n",  // bare CR
           "GET /metrics HTTP/1.1\r\nHost: a\x7f\r\n\r\n",
       }) {
    HeadParse p = parse_request_head(bad);
    EXPECT_EQ(p.status, HeadStatus::kBad) << bad;
    EXPECT_STRNE(p.why, "") << bad;
  }
  // Known to be bad before the head ends: no need to wait for more.
  EXPECT_EQ(parse_request_head("BAD LINE\r\n").status, HeadStatus::kBad);
  EXPECT_EQ(parse_request_head(std::string("\x16\x03\x01\x02\x00", 5)).status, HeadStatus::kBad);
  EXPECT_EQ(parse_request_head("GET /\x01").status, HeadStatus::kBad);
  EXPECT_EQ(parse_request_head("GET /metrics HTTP/1.1\r").status, HeadStatus::kIncomplete);
}

TEST(HttpRequestHead, BoundsAreTooLarge) {
  // A head without end beyond the bound (the 40 MB header of the issue, cut short).
  std::string flood = "GET /metrics HTTP/1.1\r\nX: " + std::string(kMaxHeadBytes, 'a');
  EXPECT_EQ(parse_request_head(flood).status, HeadStatus::kTooLarge);
  // A complete head that is too large is refused too.
  EXPECT_EQ(parse_request_head(flood + "\r\n\r\n").status, HeadStatus::kTooLarge);
  // Blank lines without end.
  EXPECT_EQ(parse_request_head(std::string(kMaxHeadBytes + 1, '\n')).status, HeadStatus::kTooLarge);
  // Many small fields.
  std::string many = "GET / HTTP/1.1\r\n";
  for (size_t i = 0; i <= kMaxHeaderFields; ++i) many += "A: b\r\n";
  HeadParse p = parse_request_head(many + "\r\n");
  EXPECT_EQ(p.status, HeadStatus::kTooLarge);
  EXPECT_STREQ(p.why, "too many header fields");
  // Exactly at the bounds: accepted.
  std::string at = "GET / HTTP/1.1\r\n";
  for (size_t i = 0; i < kMaxHeaderFields; ++i) at += "A: b\r\n";
  EXPECT_EQ(parse_request_head(at + "\r\n").status, HeadStatus::kComplete);
  std::string big = "GET / HTTP/1.1\r\nX: ";
  big += std::string(kMaxHeadBytes - big.size() - 4, 'a') + "\r\n\r\n";
  ASSERT_EQ(big.size(), kMaxHeadBytes);
  EXPECT_EQ(parse_request_head(big).status, HeadStatus::kComplete);
}

}  // namespace
}  // namespace pm::http
