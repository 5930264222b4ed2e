// SPDX-License-Identifier: Apache-2.0
// Small non-throwing helpers for reading kernel text files: numbers and whitespace fields.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/outside_text.h"

namespace pm {

inline std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

inline std::optional<int64_t> parse_i64(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

inline std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// Splits off the next whitespace-separated field of `s`; empty when none is left.
inline std::string_view next_field(std::string_view& s) {
  size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string_view::npos) {
    s = {};
    return {};
  }
  size_t e = s.find_first_of(" \t\n", b);
  std::string_view field = s.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
  s = e == std::string_view::npos ? std::string_view{} : s.substr(e);
  return field;
}

// Printable ASCII only (printable_ascii, core/outside_text.h): for names from outside (a process
// names itself, an ELF file names its symbols, anyone names a file) on their way to a terminal,
// where an escape sequence would act and invalid UTF-8 garble the line. Each other character and
// each invalid byte becomes one '?'.
inline std::string printable(std::string_view s) { return printable_ascii(s); }

// A command line as a shell would need it typed: a word of only safe characters as it is, any
// other in single quotes ('it'\''s'), an empty one as ''; each word printable().
inline std::string shell_words(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& raw : words) {
    std::string w = printable(raw);
    bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
    });
    if (!out.empty()) out += ' ';
    if (plain) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

// Levenshtein distance: how "did you mean" suggestions are ranked.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// A sysfs CPU list: "0", "0,28", "0-3,8-11" (surrounding whitespace allowed); nullopt when
// malformed. The bound (CPU numbers and the whole list) keeps a corrupt file from allocating
// without limit: "0-1048575" repeated a thousand times would be 4 GB.
inline constexpr size_t kMaxCpuListEntries = size_t{1} << 20;
inline std::optional<std::vector<int>> parse_cpu_list(std::string_view s) {
  std::vector<int> cpus;
  s = trim(s);
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view range = s.substr(0, comma);
    size_t dash = range.find('-');
    auto lo = parse_u64(range.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : parse_u64(range.substr(dash + 1));
    if (!lo || !hi || *lo > *hi || *hi >= kMaxCpuListEntries) return std::nullopt;
    if (cpus.size() + (*hi - *lo + 1) > kMaxCpuListEntries) return std::nullopt;
    for (uint64_t c = *lo; c <= *hi; ++c) cpus.push_back(static_cast<int>(c));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return cpus;
}

// Calls f(line) for each line of s, without the trailing newline.
template <typename F>
void for_each_line(std::string_view s, F&& f) {
  while (!s.empty()) {
    size_t nl = s.find('\n');
    f(s.substr(0, nl));
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
}

}  // namespace pm
