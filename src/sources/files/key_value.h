// SPDX-License-Identifier: Apache-2.0
// The one parser of the kernel's "Key: value [kB]" files (/proc/meminfo, nodeN/meminfo,
// /proc/PID/status, smaps_rollup, /proc/PID/io) and of /proc/vmstat's "key value": each parser
// names the keys it wants and where they go; the kernel adds keys over time, so unknown ones are
// skipped, while a known key with a value that does not parse, or a required key that is missing,
// is an error naming the file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/error.h"
#include "core/text.h"

namespace pm::procfs {

inline Error parse_error(std::string_view file, std::string_view what) {
  return make_error(Errc::kParse, std::string(file) + ": " + std::string(what));
}

inline Error bad_value(std::string_view file, std::string_view key, std::string_view value) {
  return parse_error(file, "bad value for " + std::string(key) + ": '" + std::string(value) + "'");
}

// "N" or "N kB"; kB becomes bytes. Another unit or trailing junk is rejected so that a format
// change surfaces as an error instead of a silently wrong number.
inline std::optional<uint64_t> parse_size(std::string_view rest) {
  std::string_view num = next_field(rest);
  std::string_view unit = next_field(rest);
  std::optional<uint64_t> v = parse_u64(num);
  if (!v || !next_field(rest).empty()) return std::nullopt;
  if (unit.empty()) return v;
  if (unit != "kB" || *v > std::numeric_limits<uint64_t>::max() / 1024) return std::nullopt;
  return *v * 1024;
}

// A key and the member of T its value goes to (plain, or optional when the key may be absent).
template <typename T>
struct KeyField {
  std::string_view key;
  std::variant<uint64_t T::*, std::optional<uint64_t> T::*> member;
  bool required = false;
};

struct KeyValueFormat {
  std::string_view file;   // for errors
  char separator = ':';    // "Key: value"; ' ' for "key value"
  std::string_view prefix; // a word and a number that start every line ("Node 0"), skipped
};

// Splits "Key:   value" at the separator; false for lines that are not key/value (headers).
inline bool split_key(std::string_view line, char separator, std::string_view& key, std::string_view& rest) {
  size_t at = line.find(separator);
  if (at == std::string_view::npos || at == 0) return false;
  key = line.substr(0, at);
  rest = line.substr(at + 1);
  return key.find_first_of(" \t") == std::string_view::npos;
}

template <typename T, size_t N>
Status parse_key_values(std::string_view text, const KeyValueFormat& format, const std::array<KeyField<T>, N>& fields,
                        T& out) {
  std::array<bool, N> seen{};
  std::optional<Error> err;
  for_each_line(text, [&](std::string_view line) {
    if (err) return;
    if (!format.prefix.empty()) {
      std::string_view rest = line;
      if (next_field(rest) != format.prefix || !parse_u64(next_field(rest))) return;
      line = trim(rest);
    }
    std::string_view key, rest;
    if (!split_key(line, format.separator, key, rest)) return;
    for (size_t i = 0; i < N; ++i) {
      if (fields[i].key != key) continue;
      std::optional<uint64_t> v = parse_size(rest);
      if (!v) {
        err = bad_value(format.file, key, trim(rest));
        return;
      }
      std::visit([&](auto member) { out.*member = *v; }, fields[i].member);
      seen[i] = true;
      return;
    }
  });
  if (err) return *err;
  for (size_t i = 0; i < N; ++i) {
    if (fields[i].required && !seen[i]) return parse_error(format.file, "missing " + std::string(fields[i].key));
  }
  return {};
}

}  // namespace pm::procfs
