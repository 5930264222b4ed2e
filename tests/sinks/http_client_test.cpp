// SPDX-License-Identifier: Apache-2.0
// The remote-write client's URL and response parsing.
#include "sinks/http_client.h"

#include <gtest/gtest.h>

namespace pm::http {
namespace {

TEST(HttpClientUrl, TakesHttpHostPortAndPath) {
  auto u = parse_url("http://127.0.0.1:9090/api/v1/write");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, "9090");
  EXPECT_EQ(u->path, "/api/v1/write");
  auto v = parse_url("http://[::1]:9201");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->host, "::1");
  EXPECT_EQ(v->path, "/");
  auto w = parse_url("http://prom.example/write");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->port, "80");
}

TEST(HttpClientUrl, RefusesWhatItCannotSpeakOrSend) {
  for (const char* bad : {"https://x/y", "ftp://x", "http://", "http://:80/", "http://x:0/", "http://x:65536/",
                          "http://x:9a/", "http://u:p@x/", "http://x/a b", "http://x/\x1b[2J", "http://[::1/"}) {
    EXPECT_FALSE(parse_url(bad)) << bad;
  }
}

TEST(HttpClientReply, ReadsStatusAndRetryAfterOnceTheHeadIsComplete) {
  size_t head = 0;
  EXPECT_FALSE(parse_response_head("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\n", &head));
  auto r = parse_response_head("HTTP/1.1 503 Service Unavailable\r\nretry-after:  2\r\n\r\nbusy", &head);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  ASSERT_TRUE(r->retry_after);
  EXPECT_EQ(*r->retry_after, 2);
  EXPECT_EQ(head, std::string("HTTP/1.1 503 Service Unavailable\r\nretry-after:  2\r\n\r\n").size());
  auto d = parse_response_head("HTTP/1.1 429 Too Many\r\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n", &head);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->retry_after) << "an HTTP date is not taken: the backoff applies";
  EXPECT_FALSE(parse_response_head("SSH-2.0-OpenSSH\r\n\r\n", &head));
  EXPECT_FALSE(parse_response_head("HTTP/1.1 2x4 No\r\n\r\n", &head));
}

}  // namespace
}  // namespace pm::http
