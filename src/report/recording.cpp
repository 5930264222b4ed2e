// SPDX-License-Identifier: Apache-2.0
#include "report/recording.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>
#include <queue>
#include <random>

#include <fmt/format.h>

#include "core/fd.h"
#include "report/json_line.h"
#include "sinks/json_schema.h"

namespace pm::report {
namespace {

// At most `n` bytes of s, not cut inside a UTF-8 sequence.
std::string utf8_prefix(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// A path's key in the index: length-prefixed parts, so that a part holding a separator cannot
// alias another path. Built along the walk, a part at a time.
void push_key(std::string& key, const std::string& part) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, part.size()).ptr;
  key.append(digits, end);
  key += ':';
  key += part;
}

// A number cell's JSON text: the shortest that reads back the same double ("null" for NaN).
void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "null";
    return;
  }
  char buf[32];
  out.append(buf, fmt::format_to_n(buf, sizeof buf, "{}", v).out);
}

// A value of the tree into its series: numbers (an integer while a double holds it exactly)
// and null as numbers, anything else as its JSON text.
void put(Series& s, uint32_t row, const Json& j) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  switch (j.type()) {
    case Json::value_t::null:
      s.put_number(row, NAN);
      break;
    case Json::value_t::number_integer:
      if (double v = static_cast<double>(j.get<int64_t>()); std::fabs(v) <= kExact) {
        s.put_number(row, v);
      } else {
        s.put_text(row, fmt::format("{}", j.get<int64_t>()));
      }
      break;
    case Json::value_t::number_unsigned:
      if (double v = static_cast<double>(j.get<uint64_t>()); v <= kExact) {
        s.put_number(row, v);
      } else {
        s.put_text(row, fmt::format("{}", j.get<uint64_t>()));
      }
      break;
    case Json::value_t::number_float:
      s.put_number(row, std::isfinite(j.get<double>()) ? j.get<double>() : NAN);
      break;
    default:
      s.put_text(row, j.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

// A scanned value into its series, the same way; anything but a number or null as its text in
// the line.
void put(Series& s, uint32_t row, const JsonToken& t, std::string_view line) {
  if (t.kind == JsonToken::kNull || (t.kind == JsonToken::kNumber && t.plain)) {
    s.put_number(row, t.kind == JsonToken::kNull ? NAN : t.number);
  } else {
    s.put_text(row, line.substr(t.begin, t.end - t.begin));
  }
}

// One bucket count: a double, or the text of an integer no double holds.
struct Count {
  double value = 0;
  std::string_view text;
};

// A histogram's buckets, as page_data.h writes them: 0 when every count is zero, else
// [offset, counts...] from the first non-zero count to the last.
void put_buckets(Series& h, uint32_t row, const std::vector<Count>& buckets) {
  size_t lo = 0, hi = buckets.size();
  while (lo < hi && buckets[lo].text.empty() && buckets[lo].value == 0) ++lo;
  while (hi > lo && buckets[hi - 1].text.empty() && buckets[hi - 1].value == 0) --hi;
  std::string cell;
  if (lo == hi) {
    cell = "0";
  } else {
    cell = fmt::format("[{}", lo);
    for (size_t k = lo; k < hi; ++k) {
      cell += ',';
      if (buckets[k].text.empty()) {
        append_number(cell, buckets[k].value);
      } else {
        cell += buckets[k].text;
      }
    }
    cell += ']';
  }
  if (!h.rows.empty() && h.rows.back() == row) h.lengths.pop_back();  // a repeated key: the last
  h.put_text(row, cell);
  h.lengths.push_back(static_cast<uint32_t>(buckets.size()));
}

void put_buckets(Series& h, uint32_t row, const Json& buckets) {
  std::vector<std::string> texts(buckets.size());
  std::vector<Count> counts(buckets.size());
  for (size_t k = 0; k < buckets.size(); ++k) {
    const Json& b = buckets[k];
    counts[k].value = b.get<double>();
    if (b.is_number_integer() && std::fabs(counts[k].value) > 9007199254740992.0) {
      texts[k] = b.dump();
      counts[k].text = texts[k];
    }
  }
  put_buckets(h, row, counts);
}

// The same from a scanned array of numbers (its text in the line).
void put_buckets(Series& h, uint32_t row, std::string_view array) {
  std::vector<Count> counts;
  size_t i = 1;  // past '['
  while (i < array.size()) {
    size_t from = array.find_first_of("-0123456789", i);
    if (from == std::string_view::npos) break;
    size_t to = array.find_first_not_of("-+.eE0123456789", from);
    std::string_view text = array.substr(from, to - from);
    Count c;
    bool exact = true;
    json_number(text, &c.value, &exact);
    if (!exact) c.text = text;
    counts.push_back(c);
    i = to;
  }
  put_buckets(h, row, counts);
}

// A span's latency, for keeping the slowest: "latency_s" where there is one.
double latency_of(const Json& span) {
  auto it = span.find("latency_s");
  return it != span.end() && it->is_number() ? it->get<double>() : 0.0;
}

// Keeps every span up to kMaxSpans; past that, the kSlowestSpans slowest and a uniform sample
// (reservoir) of the others, so a run with millions of calls still makes a small page.
class SpanKeeper {
 public:
  void add(Json span) {
    size_t idx = seen_++;
    Entry e{latency_of(span), idx, std::move(span)};
    if (!sampling_) {
      all_.push_back(std::move(e));
      if (all_.size() > kMaxSpans) start_sampling();
      return;
    }
    if (e.latency > slowest_.top().latency) {
      Entry out = slowest_.top();
      slowest_.pop();
      slowest_.push(std::move(e));
      rest(std::move(out));
    } else {
      rest(std::move(e));
    }
  }

  std::vector<Json> take() {
    std::vector<Entry> kept;
    if (!sampling_) {
      kept = std::move(all_);
    } else {
      while (!slowest_.empty()) {
        kept.push_back(slowest_.top());
        slowest_.pop();
      }
      for (Entry& e : reservoir_) kept.push_back(std::move(e));
      std::sort(kept.begin(), kept.end(), [](const Entry& a, const Entry& b) { return a.index < b.index; });
    }
    std::vector<Json> out;
    out.reserve(kept.size());
    for (Entry& e : kept) out.push_back(std::move(e.span));
    return out;
  }

 private:
  struct Entry {
    double latency;
    size_t index;
    Json span;
  };
  struct Faster {
    bool operator()(const Entry& a, const Entry& b) const { return a.latency > b.latency; }
  };

  void start_sampling() {
    sampling_ = true;
    std::vector<Entry> by_latency = std::move(all_);
    all_.clear();
    std::stable_sort(by_latency.begin(), by_latency.end(),
                     [](const Entry& a, const Entry& b) { return a.latency > b.latency; });
    for (size_t i = 0; i < by_latency.size(); ++i) {
      if (i < kSlowestSpans) {
        slowest_.push(std::move(by_latency[i]));
      } else {
        rest(std::move(by_latency[i]));
      }
    }
  }

  void rest(Entry e) {
    constexpr size_t kSample = kMaxSpans - kSlowestSpans;
    ++rest_seen_;
    if (reservoir_.size() < kSample) {
      reservoir_.push_back(std::move(e));
      return;
    }
    std::uniform_int_distribution<size_t> pick(0, rest_seen_ - 1);
    size_t j = pick(rng_);
    if (j < kSample) reservoir_[j] = std::move(e);
  }

  size_t seen_ = 0;
  size_t rest_seen_ = 0;
  bool sampling_ = false;
  std::vector<Entry> all_;
  std::priority_queue<Entry, std::vector<Entry>, Faster> slowest_;
  std::vector<Entry> reservoir_;
  std::mt19937_64 rng_{0x5eed};  // fixed: the same file makes the same page
};

std::string shorten(std::string_view s) {
  std::string out(s.substr(0, 60));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return s.size() > 60 ? out + "..." : out;
}

}  // namespace

bool is_histogram(const Json& j) {
  if (!j.is_object()) return false;
  auto b = j.find("buckets");
  auto base = j.find("bucket_base");
  if (b == j.end() || base == j.end() || !b->is_array() || !base->is_number()) return false;
  if (b->size() > kMaxBuckets || j.size() > kMaxHistogramFields + 1) return false;
  return std::all_of(b->begin(), b->end(), [](const Json& x) { return x.is_number(); });
}

void CellText::append(std::string_view cell) {
  if (blocks_.empty() || (!blocks_.back().empty() && blocks_.back().size() + cell.size() > kBlockBytes)) {
    blocks_.emplace_back();
    // A full block's worth at once: no copies as it fills (a column's first block grows as
    // needed, so that a column of a few cells stays small).
    if (blocks_.size() > 1) blocks_.back().reserve(std::max(kBlockBytes, cell.size()));
  }
  std::string& b = blocks_.back();
  b += cell;
  cells_.push_back(Cell{static_cast<uint32_t>(blocks_.size() - 1), static_cast<uint32_t>(b.size())});
}

void CellText::pop_back() {
  cells_.pop_back();
  std::string& b = blocks_.back();
  b.resize(!cells_.empty() && cells_.back().block == blocks_.size() - 1 ? cells_.back().end : 0);
  if (b.empty() && blocks_.size() > 1) blocks_.pop_back();
}

bool Series::take_row(uint32_t row) {
  if (!rows.empty() && rows.back() == row) {  // a key repeated in a wide object: the last value
    if (as_text) {
      text.pop_back();
    } else {
      numbers.pop_back();
    }
    return false;
  }
  rows.push_back(row);
  return true;
}

void Series::put_number(uint32_t row, double v) {
  take_row(row);
  if (as_text) {
    std::string cell;
    append_number(cell, v);
    text.append(cell);
  } else {
    numbers.push_back(v);
  }
}

void Series::put_text(uint32_t row, std::string_view json) {
  take_row(row);
  if (!as_text) {  // the first cell that is not a number: every cell as text from now on
    std::string cell;
    for (double v : numbers) {
      cell.clear();
      append_number(cell, v);
      text.append(cell);
    }
    std::vector<double>().swap(numbers);
    as_text = true;
  }
  text.append(json);
}

void Series::append_cell(std::string& out, size_t k) const {
  if (as_text) {
    out += text[k];
  } else {
    append_number(out, numbers[k]);
  }
}

bool Series::same_cells(size_t a, size_t b) const {
  if (as_text) return text[a] == text[b];
  double x = numbers[a], y = numbers[b];
  return (std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y));
}

std::optional<Json> Series::value_at(size_t row) const {
  auto it = std::lower_bound(rows.begin(), rows.end(), row);
  if (it == rows.end() || *it != row || histogram) return std::nullopt;
  return Json::parse(cell(static_cast<size_t>(it - rows.begin())));
}

std::optional<std::vector<double>> Series::buckets_at(size_t row) const {
  auto it = std::lower_bound(rows.begin(), rows.end(), row);
  if (it == rows.end() || *it != row || !histogram) return std::nullopt;
  size_t k = static_cast<size_t>(it - rows.begin());
  std::vector<double> out(lengths[k], 0);
  Json r = Json::parse(cell(k));
  for (size_t i = 1; r.is_array() && i < r.size(); ++i) out[r[0].get<size_t>() + i - 1] = r[i].get<double>();
  return out;
}

Series* SeriesTable::at(const std::vector<std::string>& path, std::string& key, bool histogram) {
  if (key.size() > kMaxPathBytes) {
    ++long_paths_;
    return nullptr;
  }
  key += histogram ? 'h' : 'v';
  auto it = index_.find(key);
  if (it != index_.end()) {
    key.pop_back();
    return &series_[it->second];
  }
  if (series_.size() >= kMaxSeries) {
    key.pop_back();
    ++dropped_;
    return nullptr;
  }
  index_.emplace(key, series_.size());
  key.pop_back();
  Series& s = series_.emplace_back();
  s.path = path;
  s.histogram = histogram;
  return &s;
}

// Recursion is bounded: json_line.h keeps every record within kMaxDepth levels.
void SeriesTable::walk(const Json& j, std::vector<std::string>& path, std::string& key) {
  const size_t key_size = key.size();
  for (const auto& [part, value] : j.items()) {
    path.push_back(part);
    push_key(key, part);
    if (is_histogram(value)) {
      if (Series* h = at(path, key, true)) {
        put_buckets(*h, static_cast<uint32_t>(rows_), value["buckets"]);
        for (const auto& field : value.items()) {
          const std::string& name = field.key();
          if (name == "buckets") continue;
          auto f = std::find_if(h->fields.begin(), h->fields.end(), [&](const Series& s) { return s.path[0] == name; });
          if (f == h->fields.end()) {
            f = h->fields.insert(h->fields.end(), Series{});
            f->path = {name};
          }
          put(*f, static_cast<uint32_t>(rows_), field.value());
        }
      }
    } else if (value.is_object() && !value.empty()) {
      if (key.size() <= kMaxPathBytes) {
        walk(value, path, key);
      } else {
        ++long_paths_;
      }
    } else if (Series* s = at(path, key, false)) {
      put(*s, static_cast<uint32_t>(rows_), value);
    }
    path.pop_back();
    key.resize(key_size);
  }
}

void SeriesTable::add(const Json& record) {
  if (rows_ >= std::numeric_limits<uint32_t>::max()) return;
  std::vector<std::string> path;
  std::string key;
  walk(record, path, key);
  ++rows_;
}

namespace {

// The member of a scanned object named `name` (its value's index), or 0.
size_t member(const std::vector<JsonToken>& tokens, size_t object, std::string_view line, std::string_view name) {
  for (size_t k = object + 1; k < tokens[object].next;) {
    std::string_view key = line.substr(tokens[k].begin + 1, tokens[k].end - tokens[k].begin - 2);
    if (key == name) return k + 1;
    k = tokens[k + 1].kind == JsonToken::kObject ? tokens[k + 1].next : k + 2;
  }
  return 0;
}

// is_histogram() of a scanned value.
bool is_histogram(const std::vector<JsonToken>& tokens, size_t at, std::string_view line) {
  const JsonToken& t = tokens[at];
  if (t.kind != JsonToken::kObject || t.count > kMaxHistogramFields + 1) return false;
  size_t b = member(tokens, at, line, "buckets"), base = member(tokens, at, line, "bucket_base");
  return b != 0 && base != 0 && tokens[b].kind == JsonToken::kArray && tokens[b].plain &&
         tokens[b].count <= kMaxBuckets && tokens[base].kind == JsonToken::kNumber;
}

}  // namespace

// As walk() of the tree above, member by member; scan_json_line() has left out the objects
// whose repeated keys the tree would merge, so both give the same columns.
void SeriesTable::walk(const std::vector<JsonToken>& tokens, size_t object, std::string_view line,
                       std::vector<std::string>& path, std::string& key) {
  const size_t key_size = key.size();
  const auto row = static_cast<uint32_t>(rows_);
  for (size_t k = object + 1; k < tokens[object].next;) {
    const size_t v = k + 1;
    const JsonToken& value = tokens[v];
    const size_t next = value.kind == JsonToken::kObject ? value.next : v + 1;
    path.emplace_back(line.substr(tokens[k].begin + 1, tokens[k].end - tokens[k].begin - 2));
    push_key(key, path.back());
    if (is_histogram(tokens, v, line)) {
      if (Series* h = at(path, key, true)) {
        for (size_t f = v + 1; f < value.next;) {
          std::string_view name = line.substr(tokens[f].begin + 1, tokens[f].end - tokens[f].begin - 2);
          const JsonToken& field = tokens[f + 1];
          if (name == "buckets") {
            put_buckets(*h, row, line.substr(field.begin, field.end - field.begin));
          } else {
            auto s =
                std::find_if(h->fields.begin(), h->fields.end(), [&](const Series& x) { return x.path[0] == name; });
            if (s == h->fields.end()) {
              s = h->fields.insert(h->fields.end(), Series{});
              s->path = {std::string(name)};
            }
            put(*s, row, field, line);
          }
          f = field.kind == JsonToken::kObject ? field.next : f + 2;
        }
      }
    } else if (value.kind == JsonToken::kObject && value.count > 0) {
      if (key.size() <= kMaxPathBytes) {
        walk(tokens, v, line, path, key);
      } else {
        ++long_paths_;
      }
    } else if (Series* s = at(path, key, false)) {
      put(*s, row, value, line);
    }
    path.pop_back();
    key.resize(key_size);
    k = next;
  }
}

void SeriesTable::add(const std::vector<JsonToken>& tokens, std::string_view line) {
  if (rows_ >= std::numeric_limits<uint32_t>::max()) return;
  std::vector<std::string> path;
  std::string key;
  walk(tokens, 0, line, path, key);
  ++rows_;
}

namespace {

// Reads lines one at a time: the file is never held whole, so its size costs nothing.
class Reader {
 public:
  explicit Reader(const std::string& name) { rec_.path = name; }

  // One line, without its newline; `complete`: a newline ended it. Returns false to stop, with
  // the error kept for finish().
  bool line(std::string_view line, bool complete) {
    ++line_no_;
    bytes_ += line.size();
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      ++blank_;
      return true;
    }
    // Interval records, as perf-monitor writes them ("type" first), go straight into the
    // columns; any other record, and any line the scanner leaves (not JSON, beyond the bounds,
    // or unusual), is read as a tree, which also says what is wrong with a line. (A "type"
    // repeated among the first keys is such a line; past them the tree keeps the first too.)
    if (line.starts_with(R"({"type":"interval",)") && scan_json_line(line, &tokens_)) {
      rec_.intervals.add(tokens_, line);
      ++known_;
      return true;
    }
    Json j;
    LineError e;
    if (!parse_json_line(line, &j, &e)) {
      if (e.kind == LineError::kLimit) {
        return fail(fmt::format("{}:{}: the line {}: not a perf-monitor record", rec_.path, line_no_, e.message));
      }
      if (e.kind == LineError::kNumber) return fail(fmt::format("{}:{}: {}", rec_.path, line_no_, e.message));
      if (known_ == 0) {
        return fail(
            fmt::format("{} is not JSON Lines: line {} is not JSON (\"{}\"); write one with "
                        "`perf-monitor run --format json -o FILE -- ...`",
                        rec_.path, line_no_, shorten(line)));
      }
      if (!complete) {
        rec_.warnings.push_back(
            fmt::format("the last line ({}) is cut short ({} bytes, no newline): the run was "
                        "still writing or was killed; it is left out",
                        line_no_, line.size()));
        return true;
      }
      return fail(fmt::format("{}:{}: not JSON ({})", rec_.path, line_no_, e.message));
    }
    if (!j.is_object()) {
      return fail(fmt::format("{}:{}: a JSON {} where perf-monitor writes one object per line", rec_.path, line_no_,
                              j.type_name()));
    }
    record(std::move(j));
    return true;
  }

  // A line longer than kMaxLineBytes, never read whole.
  bool too_long() {
    return fail(fmt::format("{}:{}: the line is longer than {} MiB: not a perf-monitor record", rec_.path, line_no_ + 1,
                            kMaxLineBytes >> 20));
  }

  Result<Recording> finish();

 private:
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  void record(Json&& j) {
    auto type_it = j.find("type");
    std::string type = type_it != j.end() && type_it->is_string() ? type_it->get<std::string>() : "";
    if (type.empty() && j.contains("timestamp")) {
      // The first JSON layout had no "type": its records were the intervals.
      ++untyped_;
      type = "interval";
    }
    if (type == "interval") {
      rec_.intervals.add(j);
    } else if (type == "span") {
      span(std::move(j));
    } else if (type == "summary") {
      if (summaries_++ == 0) rec_.summary = std::move(j);
    } else if (type == "header") {
      if (headers_++ == 0) {
        if (auto m = j.find("metrics"); m != j.end()) metrics(*m);
        rec_.header = std::move(j);
      }
    } else if (type == "metrics") {
      if (auto m = j.find("metrics"); m != j.end()) metrics(*m);
    } else {
      if (unknown_types_.size() < 100 || unknown_types_.count(type)) ++unknown_types_[type.empty() ? "(none)" : type];
      return;
    }
    ++known_;
  }

  // Descriptions as written, each field a bounded string; anything else in them is left out.
  void metrics(const Json& m) {
    if (!m.is_object()) return;
    for (const auto& [key, what] : m.items()) {
      if (!what.is_object() || key.size() > kMaxPathBytes) continue;
      if (rec_.metrics.size() >= kMaxMetrics && !rec_.metrics.contains(key)) continue;
      Json kept = Json::object();
      for (const char* field : {"unit", "kind", "help"}) {
        auto f = what.find(field);
        if (f != what.end() && f->is_string()) kept[field] = utf8_prefix(f->get<std::string>(), kMaxMetricText);
      }
      rec_.metrics[key] = std::move(kept);
    }
  }

  void span(Json&& j) {
    auto fn = j.find("function");
    std::string name = fn != j.end() && fn->is_string() ? fn->get<std::string>() : "?";
    auto it = rec_.span_totals.find(name);
    if (it == rec_.span_totals.end()) {
      if (rec_.span_totals.size() >= kMaxFunctions) {
        ++other_function_spans_;
        name = kOtherFunctions;
      }
      it = rec_.span_totals.try_emplace(name).first;
    }
    SpanTotals& t = it->second;
    ++t.count;
    for (const auto& [k, v] : j.items()) {
      if (!v.is_number()) continue;
      auto sum = t.sums.find(k);
      if (sum == t.sums.end()) {
        if (t.sums.size() >= kMaxSpanFields) continue;
        sum = t.sums.emplace(k, 0.0).first;
      }
      sum->second += v.get<double>();
    }
    ++rec_.spans_seen;
    if (count_values(j, kMaxSpanValues + 1) > kMaxSpanValues) {
      ++large_spans_;
      return;
    }
    spans_.add(std::move(j));
  }

  Recording rec_;
  std::vector<JsonToken> tokens_;  // the line scanned, kept for its capacity
  SpanKeeper spans_;
  size_t headers_ = 0, summaries_ = 0, untyped_ = 0, blank_ = 0;
  size_t line_no_ = 0, known_ = 0, bytes_ = 0;
  uint64_t other_function_spans_ = 0, large_spans_ = 0;
  std::map<std::string, size_t> unknown_types_;
  std::string error_;
};

Result<Recording> Reader::finish() {
  if (!error_.empty()) return make_error(Errc::kInvalidArgument, error_);
  Recording& rec = rec_;
  const std::string& name = rec.path;
  if (line_no_ == 0) return make_error(Errc::kInvalidArgument, name + " is empty: no records to report");
  rec.lines = line_no_;
  if (known_ == 0) {
    return make_error(Errc::kInvalidArgument,
                      fmt::format("{} holds no perf-monitor records (none of its {} lines has a \"type\" of header, "
                                  "interval, span or summary)",
                                  name, line_no_ - blank_));
  }
  rec.spans = spans_.take();

  if (rec.header.is_null()) {
    rec.warnings.push_back(
        "no header record: written by a perf-monitor older than JSON schema version 1 (or the start of the file "
        "is missing), so host, kernel and CPU are unknown");
  } else {
    auto v = rec.header.find("schema_version");
    if (v == rec.header.end() || !v->is_number_integer()) {
      rec.warnings.push_back("the header has no schema_version: read as well as it goes");
    } else if (v->get<int64_t>() > kJsonSchemaVersion || v->get<int64_t>() < kJsonOldestReadVersion) {
      rec.warnings.push_back(fmt::format(
          "written with JSON schema version {} ({}), this perf-monitor knows version {}: every record was read "
          "generically, but charts that look for a metric by name may be missing",
          v->get<int64_t>(), v->get<int64_t>() > kJsonSchemaVersion ? "newer" : "older", kJsonSchemaVersion));
    }
  }
  if (untyped_ > 0) {
    rec.warnings.push_back(
        fmt::format("{} records without a \"type\" were read as intervals (an older JSON layout)", untyped_));
  }
  for (const auto& [t, n] : unknown_types_) {
    rec.warnings.push_back(fmt::format("{} records of unknown type \"{}\" were skipped", n, shorten(t)));
  }
  if (headers_ > 1 || summaries_ > 1) {
    rec.warnings.push_back(
        fmt::format("the file holds {} header and {} summary records (several runs appended to "
                    "one file?): the first of each is shown, every interval is",
                    headers_, summaries_));
  }
  if (rec.summary.is_null()) {
    rec.warnings.push_back("no summary record: the run did not finish (killed, or still running)");
  }
  if (rec.intervals.rows() == 0) rec.warnings.push_back("no interval records: there is no timeline to draw");
  if (rec.intervals.long_paths() > 0) {
    rec.warnings.push_back(
        fmt::format("{} values (or objects) of the interval records lie at paths longer than {} "
                    "bytes: they are left out",
                    rec.intervals.long_paths(), kMaxPathBytes));
  }
  if (rec.intervals.dropped() > 0) {
    rec.warnings.push_back(
        fmt::format("the interval records hold more than {} different paths: {} values of the "
                    "others are left out",
                    kMaxSeries, rec.intervals.dropped()));
  }
  if (other_function_spans_ > 0) {
    rec.warnings.push_back(
        fmt::format("spans of more than {} functions: {} spans of the others are totalled as "
                    "\"{}\"",
                    kMaxFunctions, other_function_spans_, kOtherFunctions));
  }
  if (large_spans_ > 0) {
    rec.warnings.push_back(fmt::format("{} spans of more than {} values are counted in the totals but not kept",
                                       large_spans_, kMaxSpanValues));
  }
  if (rec.spans_seen > rec.spans.size() + large_spans_) {
    rec.warnings.push_back(
        fmt::format("{} spans: the page keeps {} of them (the {} slowest and an even sample "
                    "of the others); per-function totals count them all",
                    rec.spans_seen, rec.spans.size(), kSlowestSpans));
  }
  return std::move(rec);
}

}  // namespace

const Json* metric_of(const Recording& rec, const std::vector<std::string>& path) {
  if (path.empty() || rec.metrics.empty()) return nullptr;
  auto it = path.size() >= 2 ? rec.metrics.find(path[0] + "." + path[1]) : rec.metrics.end();
  if (it == rec.metrics.end()) it = rec.metrics.find(path[0]);
  return it == rec.metrics.end() ? nullptr : &*it;
}

Result<Recording> parse_recording(std::string_view text, const std::string& name) {
  Reader r(name);
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.size() > kMaxLineBytes) {
      r.too_long();
      break;
    }
    if (!r.line(line, eol != std::string_view::npos)) break;
  }
  return r.finish();
}

Result<Recording> read_recording(const std::string& path) {
  const bool stdin_ = path == "-";
  const std::string name = stdin_ ? "standard input" : path;
  UniqueFd owned;
  int fd = STDIN_FILENO;
  if (!stdin_) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
    owned.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!owned) return Error::from_errno(errno, "cannot read " + path);
    fd = owned.get();
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::from_errno(errno, "cannot read " + name);
  if (S_ISDIR(st.st_mode)) return make_error(Errc::kInvalidArgument, name + " is a directory, not a JSON Lines file");
  bool pipe = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  if (!S_ISREG(st.st_mode) && !(stdin_ && pipe)) {
    const char* what = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode)  ? (::isatty(fd) ? "a terminal" : "a character device")
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "not a regular file";
    return make_error(Errc::kInvalidArgument,
                      fmt::format("{} is {}, not a JSON Lines file{}", name, what,
                                  stdin_ || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                                      ? ""
                                      : " (to read a pipe, redirect it to standard input and name the file '-')"));
  }

  Reader r(name);
  std::string buf;  // [0, buf.size()): the start of a line not yet ended
  size_t scanned = 0;
  constexpr size_t kChunk = size_t{1} << 20;
  while (true) {
    size_t have = buf.size();
    buf.resize(have + kChunk);
    ssize_t n = ::read(fd, buf.data() + have, kChunk);
    if (n < 0 && errno == EINTR) {
      buf.resize(have);
      continue;
    }
    if (n < 0) return Error::from_errno(errno, "cannot read " + name);
    buf.resize(have + static_cast<size_t>(n));
    if (n == 0) {
      if (!buf.empty()) {
        if (buf.size() > kMaxLineBytes) {
          r.too_long();
        } else {
          r.line(buf, false);
        }
      }
      return r.finish();
    }
    size_t from = 0;
    bool go = true;
    for (size_t eol; go && (eol = buf.find('\n', scanned)) != std::string::npos; scanned = from) {
      if (eol - from > kMaxLineBytes) {
        r.too_long();
        go = false;
        break;
      }
      go = r.line(std::string_view(buf).substr(from, eol - from), true);
      from = eol + 1;
    }
    if (!go) return r.finish();
    buf.erase(0, from);
    scanned = buf.size();
    if (buf.size() > kMaxLineBytes) {
      r.too_long();
      return r.finish();
    }
  }
}

}  // namespace pm::report
