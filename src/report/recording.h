// SPDX-License-Identifier: Apache-2.0
// A perf-monitor JSON Lines file, read generically: nothing here knows a metric's name.
// Interval records become series named by their path ("cpu", "utilisation_percent", "all",
// "user"); an object shaped like a log2 histogram (buckets and bucket_base, usually count and
// sum beside them) is kept whole as a histogram series. The header and summary records are kept
// as they are; spans are counted per function and kept up to a bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace pm::report {

using Json = nlohmann::ordered_json;  // keeps the file's order of keys

// True for an object shaped like perf-monitor's log2 histograms: an array "buckets" of numbers
// and a number "bucket_base" (bucket i counts values below bucket_base * 2^i).
bool is_histogram(const Json& j);

// One leaf (or one histogram) of a kind of record, across every record of that kind.
struct Series {
  std::vector<std::string> path;
  bool histogram = false;
  // Values: one cell per record; a discarded Json marks a record without this path.
  std::vector<Json> cells;
  // Histograms: the scalar fields (count, sum, p50, ..., bucket_base) as value series of their
  // own (path = the field's name), and the buckets of each record (empty where absent).
  std::vector<Series> fields;
  std::vector<std::vector<double>> buckets;
  std::vector<uint8_t> present;
};

// The records of one type as columns, in the order their paths first appeared.
class SeriesTable {
 public:
  void add(const Json& record);
  // Pads every series to rows() cells; call once all records are in.
  void finish();
  [[nodiscard]] size_t rows() const { return rows_; }
  [[nodiscard]] const std::vector<Series>& series() const { return series_; }

 private:
  void walk(const Json& j, std::vector<std::string>& path);
  Series& at(const std::vector<std::string>& path, bool histogram);
  size_t rows_ = 0;
  std::vector<Series> series_;
  std::unordered_map<std::string, size_t> index_;
};

// Per function (a span's "function"): how many spans, and each numeric field summed.
struct SpanTotals {
  uint64_t count = 0;
  std::map<std::string, double> sums;
};

struct Recording {  // NOLINT(bugprone-exception-escape): moving nlohmann's ordered_map may allocate
  std::string path;
  Json header;   // the "header" record; null when the file has none
  Json summary;  // the "summary" record; null when the run did not finish
  SeriesTable intervals;
  // Spans: the kept ones (all of them up to kMaxSpans, else the slowest and an even sample of
  // the others), in file order, and totals over all of them.
  std::vector<Json> spans;
  uint64_t spans_seen = 0;
  std::map<std::string, SpanTotals> span_totals;
  std::vector<std::string> warnings;
  size_t lines = 0;
};

inline constexpr size_t kMaxSpans = 10000;
inline constexpr size_t kSlowestSpans = 2000;

// Reads a file (or parses text, named `name` in messages). Errors (exit 2): not JSON Lines, no
// perf-monitor record in it, a broken line before the last. Readable oddities — a truncated last
// line, another schema version, no header, unknown record types — become warnings.
Result<Recording> read_recording(const std::string& path);
Result<Recording> parse_recording(std::string_view text, const std::string& name);

}  // namespace pm::report
