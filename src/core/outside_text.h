// SPDX-License-Identifier: Apache-2.0
// Strings from outside (process names, command lines, cgroup directories, symbols): any user
// chooses them, so they are data. One decoder, two outputs: valid UTF-8 with no control
// character (Prometheus label values, JSON), and printable ASCII (terminals, whose tables
// count one byte per column).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pm {

inline constexpr char32_t kNotACodePoint = 0xFFFFFFFF;

// Calls f(code point, its bytes) for each well-formed UTF-8 sequence of s, and f(kNotACodePoint,
// one byte) for each byte that begins none (overlong forms, surrogates, beyond U+10FFFF and
// truncated sequences included): a bad byte never swallows the good ones after it.
template <typename F>
void for_each_code_point(std::string_view s, F f) {
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    char32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = n != 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (cp < kLeast[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (!ok) {
      f(kNotACodePoint, s.substr(i, 1));
      ++i;
      continue;
    }
    f(cp, s.substr(i, n));
    i += n;
  }
}

// C0, DEL and C1: what a terminal or a parser may act on rather than show.
inline bool is_control(char32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }

// Valid UTF-8, nothing to act on: each invalid byte and each control character (tab and newline
// too) becomes U+FFFD, the replacement character; all else is kept as it was.
inline std::string clean_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for_each_code_point(s, [&](char32_t cp, std::string_view bytes) {
    if (cp == kNotACodePoint || is_control(cp)) {
      out += "\xEF\xBF\xBD";
    } else {
      out += bytes;
    }
  });
  return out;
}

// Printable ASCII: each other character, and each invalid byte, becomes one '?'.
inline std::string printable_ascii(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for_each_code_point(
      s, [&](char32_t cp, std::string_view) { out += cp >= 0x20 && cp < 0x7F ? static_cast<char>(cp) : '?'; });
  return out;
}

}  // namespace pm
