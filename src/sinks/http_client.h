// SPDX-License-Identifier: Apache-2.0
// A small HTTP/1.1 client for pushing to a receiver (remote write): one POST per connection,
// plain http:// only, every step bounded in time. The response's status and Retry-After are
// what a sender needs; the body is kept (bounded) for its error message.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace pm::http {

struct Url {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without its brackets
  std::string port;  // "80" when the URL names none
  std::string path;  // "/" when the URL names none
  std::string text;  // the URL as given (for messages)
};
// http://HOST[:PORT][/PATH]. https:// and anything else: an error that says what is taken.
Result<Url> parse_url(std::string_view text);

struct Reply {
  int status = 0;
  std::optional<double> retry_after;  // seconds, from a Retry-After of seconds
  std::string body;                   // at most 4 KiB of it
};

// POSTs `body` to `url`; an error where no response came (the receiver down, a timeout: each of
// connect, send and the response within `timeout`).
Result<Reply> post(const Url& url, const std::vector<std::pair<std::string, std::string>>& headers,
                   std::string_view body, std::chrono::milliseconds timeout);

// The head of a response, for post() and tests: status, Retry-After; nullopt until complete
// (or when not HTTP); `head_size` the bytes of the head.
std::optional<Reply> parse_response_head(std::string_view bytes, size_t* head_size);

}  // namespace pm::http
