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

// Cells of JSON text back to back, in blocks of about kBlockBytes (a longer cell has a block of
// its own), so that a column of many MiB grows without copying itself or holding twice its size.
class CellText {
 public:
  static constexpr size_t kBlockBytes = size_t{1} << 20;

  void append(std::string_view cell);
  void pop_back();  // the last cell
  [[nodiscard]] size_t size() const { return cells_.size(); }
  [[nodiscard]] std::string_view operator[](size_t k) const {
    const Cell& c = cells_[k];
    size_t from = k > 0 && cells_[k - 1].block == c.block ? cells_[k - 1].end : 0;
    return std::string_view(blocks_[c.block]).substr(from, c.end - from);
  }

 private:
  struct Cell {
    uint32_t block;
    uint32_t end;  // where it ends in its block
  };
  std::vector<std::string> blocks_;
  std::vector<Cell> cells_;
};

// One leaf (or one histogram) of a kind of record, across the records that have it. Stored
// sparse, so that a file of many keys each in a few records costs about what it holds, not
// records x paths; numbers as doubles, anything else as its JSON text.
struct Series {
  std::vector<std::string> path;
  bool histogram = false;
  // The records that have this path, ascending; cell k belongs to record rows[k].
  std::vector<uint32_t> rows;
  // Values: while every cell is a number or null, numbers[k] (NaN: null); from the first other
  // value on (a string, an array, an integer no double holds), every cell's JSON text.
  // Histograms: each record's buckets as page_data.h writes them (0, or [offset, counts...] up
  // to the last non-zero count), as text, with their full length in lengths[k].
  std::vector<double> numbers;
  CellText text;
  bool as_text = false;
  std::vector<uint32_t> lengths;
  // Histograms: the scalar fields (count, sum, p50, ..., bucket_base) as value series of their
  // own (path = the field's name).
  std::vector<Series> fields;

  [[nodiscard]] size_t size() const { return rows.size(); }
  // Record `row`'s cell: a number (NaN: null), replacing the one it has (a repeated key).
  void put_number(uint32_t row, double v);
  // Record `row`'s cell as JSON text.
  void put_text(uint32_t row, std::string_view json);
  // Appends cell k's JSON text to out.
  void append_cell(std::string& out, size_t k) const;
  [[nodiscard]] std::string cell(size_t k) const {
    std::string out;
    append_cell(out, k);
    return out;
  }
  // Whether cells a and b have the same JSON text.
  [[nodiscard]] bool same_cells(size_t a, size_t b) const;
  // Record `row`'s value (a value series) or buckets (a histogram); nullopt where absent.
  [[nodiscard]] std::optional<Json> value_at(size_t row) const;
  [[nodiscard]] std::optional<std::vector<double>> buckets_at(size_t row) const;

 private:
  bool take_row(uint32_t row);  // false: the row has a cell already, to be replaced
};

// Paths (series) per table, fields per histogram and buckets per histogram: beyond these a
// record is not perf-monitor's, and the rest is left out with a warning.
inline constexpr size_t kMaxSeries = 20000;
inline constexpr size_t kMaxHistogramFields = 32;
inline constexpr size_t kMaxBuckets = 1024;
// Bytes of a path's names together (a cgroup path is one name): each series keeps its path.
inline constexpr size_t kMaxPathBytes = 4096;

// The records of one type as columns, in the order their paths first appeared.
struct JsonToken;

class SeriesTable {
 public:
  void add(const Json& record);
  // The same from a scanned line (json_line.h): tokens[0] is the record's object.
  void add(const std::vector<JsonToken>& tokens, std::string_view line);
  [[nodiscard]] size_t rows() const { return rows_; }
  [[nodiscard]] const std::vector<Series>& series() const { return series_; }
  // Leaves (and histogram fields) left out because the table had kMaxSeries paths already.
  [[nodiscard]] uint64_t dropped() const { return dropped_; }
  // Leaves (or objects) left out because their path is longer than kMaxPathBytes.
  [[nodiscard]] uint64_t long_paths() const { return long_paths_; }

 private:
  void walk(const Json& j, std::vector<std::string>& path, std::string& key);
  void walk(const std::vector<JsonToken>& tokens, size_t object, std::string_view line, std::vector<std::string>& path,
            std::string& key);
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
