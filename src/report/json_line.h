// SPDX-License-Identifier: Apache-2.0
// One line of a recording parsed into a Json within bounds, whatever the line holds: nesting,
// and values per line are limited, a key costs no search however wide its object (ordered_json's
// own insert searches linearly: a repeated key of a wide object is kept as it comes), and
// numbers beyond a double are an error of their own. A recording comes from anywhere: CI artifacts, colleagues.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// A line read without building a tree: its values as a flat list of tokens, each pointing at
// its text in the line. Objects list their members (a kKey token, then the value's tokens);
// an array is one token (its elements are checked, not listed). Reading an hour of intervals
// this way, straight into columns, is several times quicker than a tree per line.
struct JsonToken {
  enum Kind : uint8_t { kObject, kKey, kArray, kString, kNumber, kTrue, kFalse, kNull };
  Kind kind = kNull;
  // kNumber: `number` holds it exactly (false: an integer beyond 2^53, whose text is kept);
  // kArray: every element is a number.
  bool plain = false;
  uint32_t begin = 0, end = 0;  // its text in the line (a string's or key's with its quotes)
  uint32_t count = 0;           // kObject: members; kArray: elements
  uint32_t next = 0;            // kObject: the index of the token after its last member
  double number = 0;
};

// A JSON number's text (valid per RFC 8259) as nlohmann reads it: an integer as one while it
// fits 64 bits, else the nearest double. *exact: *value holds it exactly (false for an integer
// beyond 2^53, whose text is the one to keep). False when it is beyond a double.
bool json_number(std::string_view text, double* value, bool* exact);

// Scans `line` into *tokens. True when the line is one JSON object within the bounds above,
// in the form perf-monitor writes: no escaped keys, and no key repeated within an object's
// first keys (where the tree keeps the first place and the last value). False otherwise, and
// for every line that is not JSON: parse_json_line then reads it, and says what is wrong.
bool scan_json_line(std::string_view line, std::vector<JsonToken>* tokens);

}  // namespace pm::report
