// SPDX-License-Identifier: Apache-2.0
// The head of an HTTP/1.x request, as the exporter's server reads it: the request line and the
// header fields, strictly and within fixed bounds. Pure (bytes in, verdict out), so tests and
// the fuzzer feed it anything a client could send.
#pragma once

#include <cstddef>
#include <string_view>

namespace pm::http {

// A scraper's request is a few hundred bytes; browsers and curl stay well under 8 KiB too.
inline constexpr size_t kMaxHeadBytes = 8192;
inline constexpr size_t kMaxHeaderFields = 64;

struct RequestHead {
  std::string_view method;   // "GET"
  std::string_view target;   // "/metrics", "/metrics?x=1"
  std::string_view version;  // "HTTP/1.1"
  size_t fields = 0;         // header fields
  size_t size = 0;           // bytes of the head, the blank line that ends it included
};

enum class HeadStatus {
  kIncomplete,  // valid so far: wait for more bytes
  kComplete,    // head holds the request
  kBad,         // malformed: answer 400
  kTooLarge,    // beyond kMaxHeadBytes or kMaxHeaderFields: answer 431
};

struct HeadParse {
  HeadStatus status = HeadStatus::kIncomplete;
  RequestHead head;     // kComplete: views into the bytes given
  const char* why = "";  // kBad, kTooLarge: what was wrong, for the response body
};

// Reads the request head at the start of `bytes` (everything the client sent so far). Lines end
// in CRLF or a bare LF; empty lines before the request line are skipped (RFC 9112 2.2).
HeadParse parse_request_head(std::string_view bytes);

// The path of a request target without its query: "/metrics?a=b" -> "/metrics".
std::string_view target_path(std::string_view target);

}  // namespace pm::http
