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
#include <optional>
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

// One leaf (or one histogram) of a kind of record, across the records that have it. Stored
// sparse and as JSON text, so that a file of many keys each in a few records, or of long
// strings, costs about what it holds, not records x paths.
struct Series {
  std::vector<std::string> path;
  bool histogram = false;
  // The records that have this path, ascending; cell k belongs to record rows[k].
  std::vector<uint32_t> rows;
  // Values: each cell's JSON text, back to back; cell k is text[ends[k-1], ends[k]).
  // Histograms: each record's buckets as page_data.h writes them (0, or [offset, counts...] up
  // to the last non-zero count), with their full length in lengths[k].
  std::string text;
  std::vector<size_t> ends;
  std::vector<uint32_t> lengths;
  // Histograms: the scalar fields (count, sum, p50, ..., bucket_base) as value series of their
  // own (path = the field's name).
  std::vector<Series> fields;

  [[nodiscard]] size_t size() const { return rows.size(); }
  [[nodiscard]] std::string_view cell(size_t k) const {
    size_t from = k == 0 ? 0 : ends[k - 1];
    return std::string_view(text).substr(from, ends[k] - from);
  }
  // Record `row`'s value (a value series) or buckets (a histogram); nullopt where absent.
  [[nodiscard]] std::optional<Json> value_at(size_t row) const;
  [[nodiscard]] std::optional<std::vector<double>> buckets_at(size_t row) const;
};

// Paths (series) per table, fields per histogram and buckets per histogram: beyond these a
// record is not perf-monitor's, and the rest is left out with a warning.
inline constexpr size_t kMaxSeries = 20000;
inline constexpr size_t kMaxHistogramFields = 32;
inline constexpr size_t kMaxBuckets = 1024;
// Bytes of a path's names together (a cgroup path is one name): each series keeps its path.
inline constexpr size_t kMaxPathBytes = 4096;

// The records of one type as columns, in the order their paths first appeared.
class SeriesTable {
 public:
  void add(const Json& record);
  [[nodiscard]] size_t rows() const { return rows_; }
  [[nodiscard]] const std::vector<Series>& series() const { return series_; }
  // Leaves (and histogram fields) left out because the table had kMaxSeries paths already.
  [[nodiscard]] uint64_t dropped() const { return dropped_; }
  // Leaves (or objects) left out because their path is longer than kMaxPathBytes.
  [[nodiscard]] uint64_t long_paths() const { return long_paths_; }

 private:
  void walk(const Json& j, std::vector<std::string>& path, std::string& key);
  Series* at(const std::vector<std::string>& path, std::string& key, bool histogram);
  size_t rows_ = 0;
  uint64_t dropped_ = 0, long_paths_ = 0;
  std::vector<Series> series_;
  std::unordered_map<std::string, size_t> index_;
};

// Per function (a span's "function"): how many spans, and each numeric field summed (the first
// kMaxSpanFields fields). Past kMaxFunctions functions, the others are counted as one.
inline constexpr size_t kMaxFunctions = 1000;
inline constexpr size_t kMaxSpanFields = 64;
inline constexpr const char* kOtherFunctions = "(other functions)";
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
  // the others; none larger than kMaxSpanValues values), in file order, and totals over all.
  std::vector<Json> spans;
  uint64_t spans_seen = 0;
  std::map<std::string, SpanTotals> span_totals;
  std::vector<std::string> warnings;
  size_t lines = 0;
  // What each metric is (schema 3: the header's "metrics" and the "metrics" records after it):
  // "<family>.<name>" or a flat summary key -> {"unit", "kind", "help"}, strings only, at most
  // kMaxMetrics of them. Empty for older files: their units come from the names.
  Json metrics = Json::object();
};

inline constexpr size_t kMaxMetrics = 20000;
inline constexpr size_t kMaxMetricText = 300;  // bytes of a unit, kind or help kept

// The description of the figure at `path` (its first two names, or a flat summary key), or null.
const Json* metric_of(const Recording& rec, const std::vector<std::string>& path);

inline constexpr size_t kMaxSpans = 10000;
inline constexpr size_t kSlowestSpans = 2000;
inline constexpr size_t kMaxSpanValues = 256;

// Reads a file ("-": standard input, which may be a pipe) or
// parses text, named `name` in messages. Only a regular file is read by name: a FIFO would block
// and a device never ends. Errors (exit 2): not JSON Lines, no perf-monitor record in it, a
// broken line before the last, a line beyond the bounds of json_line.h. Readable oddities — a
// truncated last line, another schema version, no header, unknown record types, more paths or
// functions than are kept — become warnings.
Result<Recording> read_recording(const std::string& path);
Result<Recording> parse_recording(std::string_view text, const std::string& name);

}  // namespace pm::report
