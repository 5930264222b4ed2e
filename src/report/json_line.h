// SPDX-License-Identifier: Apache-2.0
// One line of a recording parsed into a Json within bounds, whatever the line holds: nesting,
// and values per line are limited, a key costs no search however wide its object (ordered_json's
// own insert searches linearly: a repeated key of a wide object is kept as it comes), and
// numbers beyond a double are an error of their own. A recording comes from anywhere: CI artifacts, colleagues.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "report/recording.h"

namespace pm::report {

// perf-monitor's records nest about six deep; a line deeper than this is not one of them.
inline constexpr size_t kMaxDepth = 64;
// Values (scalars, objects and arrays) in one line. perf-monitor's widest records hold a few
// thousand; the bound keeps one line's tree within tens of MiB.
inline constexpr size_t kMaxValuesPerLine = 250000;
// Bytes in one line (and so in one record): perf-monitor's are kilobytes.
inline constexpr size_t kMaxLineBytes = size_t{16} << 20;

struct LineError {
  enum Kind { kNone, kSyntax, kLimit, kNumber } kind = kNone;
  std::string message;  // without the file and line: "nests deeper than 64 levels", ...
};

// Parses `line` into *out. On failure returns false and says why in *error.
bool parse_json_line(std::string_view line, Json* out, LineError* error);

// The number of values in j, counting up to `limit` (containers count as one each).
size_t count_values(const Json& j, size_t limit);

}  // namespace pm::report
