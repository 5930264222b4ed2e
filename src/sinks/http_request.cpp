// SPDX-License-Identifier: Apache-2.0
#include "sinks/http_request.h"

namespace pm::http {
namespace {

// RFC 9110 5.6.2: the characters of a token (methods, field names).
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_tchar(c)) return false;
  }
  return true;
}

bool is_control(char c) {
  auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

// A field value: visible characters, blanks and obs-text; no other control character.
bool is_field_value(std::string_view s) {
  for (char c : s) {
    if (is_control(c) && c != '\t') return false;
  }
  return true;
}

// What a request line can hold: printable ASCII (a CR only at its end, checked there).
bool is_request_line_char(char c) {
  auto u = static_cast<unsigned char>(c);
  return (u >= 0x20 && u < 0x7f) || c == '\r';
}

HeadParse fail(HeadStatus status, const char* why) {
  HeadParse p;
  p.status = status;
  p.why = why;
  return p;
}

bool is_version(std::string_view v) {
  return v.size() == 8 && v.substr(0, 5) == "HTTP/" && v[5] >= '0' && v[5] <= '9' && v[6] == '.' && v[7] >= '0' &&
         v[7] <= '9';
}

}  // namespace

HeadParse parse_request_head(std::string_view bytes) {
  size_t pos = 0;
  // Blank lines before the request line (a client's leftover CRLF), within the bound.
  while (pos < bytes.size() && (bytes[pos] == '\r' || bytes[pos] == '\n')) {
    if (bytes[pos] == '\r' && pos + 1 < bytes.size() && bytes[pos + 1] != '\n') return fail(HeadStatus::kBad, "bare CR");
    ++pos;
    if (pos >= kMaxHeadBytes) return fail(HeadStatus::kTooLarge, "request head too large");
  }
  HeadParse out;
  bool request_line = true;
  for (;;) {
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) {
      // What there is of the line must not already be past the bound.
      if (bytes.size() >= kMaxHeadBytes) return fail(HeadStatus::kTooLarge, "request head too large");
      // A client that sends what no request line holds (TLS to a plain port, binary noise) is
      // answered now rather than when its line would end.
      if (request_line) {
        for (char c : bytes.substr(pos)) {
          if (!is_request_line_char(c)) return fail(HeadStatus::kBad, "malformed request line");
        }
      }
      return out;  // kIncomplete
    }
    if (nl + 1 > kMaxHeadBytes) return fail(HeadStatus::kTooLarge, "request head too large");
    std::string_view line = bytes.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) return fail(HeadStatus::kBad, "bare CR");
    pos = nl + 1;
    if (request_line) {
      // method SP request-target SP HTTP-version
      size_t sp1 = line.find(' ');
      size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
        return fail(HeadStatus::kBad, "malformed request line");
      }
      std::string_view method = line.substr(0, sp1);
      std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      std::string_view version = line.substr(sp2 + 1);
      if (!is_token(method)) return fail(HeadStatus::kBad, "malformed method");
      if (target.empty() || target.front() != '/') return fail(HeadStatus::kBad, "the target must be a path");
      for (char c : target) {
        auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f) return fail(HeadStatus::kBad, "malformed target");
      }
      if (!is_version(version)) return fail(HeadStatus::kBad, "malformed HTTP version");
      out.head.method = method;
      out.head.target = target;
      out.head.version = version;
      request_line = false;
      continue;
    }
    if (line.empty()) {
      out.status = HeadStatus::kComplete;
      out.head.size = pos;
      return out;
    }
    if (line.front() == ' ' || line.front() == '\t') return fail(HeadStatus::kBad, "folded header field");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return fail(HeadStatus::kBad, "malformed header field");
    }
    if (!is_field_value(line.substr(colon + 1))) return fail(HeadStatus::kBad, "control character in a header field");
    if (++out.head.fields > kMaxHeaderFields) return fail(HeadStatus::kTooLarge, "too many header fields");
  }
}

std::string_view target_path(std::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace pm::http
