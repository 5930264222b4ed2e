// SPDX-License-Identifier: Apache-2.0
#include "report/recording.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <queue>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "sinks/json_schema.h"

namespace pm::report {
namespace {

std::string key_of(const std::vector<std::string>& path, bool histogram) {
  std::string k = histogram ? "h" : "v";
  for (const std::string& p : path) {
    k += '\x1f';
    k += p;
  }
  return k;
}

void put(Series& s, size_t row, Json value) {
  s.cells.resize(row, Json(Json::value_t::discarded));
  s.cells.push_back(std::move(value));
}

void pad(Series& s, size_t rows) {
  if (!s.histogram) {
    s.cells.resize(rows, Json(Json::value_t::discarded));
    return;
  }
  s.buckets.resize(rows);
  s.present.resize(rows, 0);
  for (Series& f : s.fields) pad(f, rows);
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
  return std::all_of(b->begin(), b->end(), [](const Json& x) { return x.is_number(); });
}

Series& SeriesTable::at(const std::vector<std::string>& path, bool histogram) {
  std::string k = key_of(path, histogram);
  auto it = index_.find(k);
  if (it != index_.end()) return series_[it->second];
  index_.emplace(std::move(k), series_.size());
  Series& s = series_.emplace_back();
  s.path = path;
  s.histogram = histogram;
  return s;
}

void SeriesTable::walk(const Json& j, std::vector<std::string>& path) {
  for (const auto& [key, value] : j.items()) {
    path.push_back(key);
    if (is_histogram(value)) {
      Series& h = at(path, true);
      h.buckets.resize(rows_);
      h.present.resize(rows_, 0);
      std::vector<double>& row = h.buckets.emplace_back();
      row.reserve(value["buckets"].size());
      for (const Json& b : value["buckets"]) row.push_back(b.get<double>());
      h.present.push_back(1);
      for (const auto& field : value.items()) {
        const std::string& name = field.key();
        if (name == "buckets") continue;
        auto f = std::find_if(h.fields.begin(), h.fields.end(), [&](const Series& s) { return s.path[0] == name; });
        if (f == h.fields.end()) {
          f = h.fields.insert(h.fields.end(), Series{});
          f->path = {name};
        }
        put(*f, rows_, field.value());
      }
    } else if (value.is_object() && !value.empty()) {
      walk(value, path);
    } else {
      put(at(path, false), rows_, value);
    }
    path.pop_back();
  }
}

void SeriesTable::add(const Json& record) {
  std::vector<std::string> path;
  walk(record, path);
  ++rows_;
}

void SeriesTable::finish() {
  for (Series& s : series_) pad(s, rows_);
}

Result<Recording> parse_recording(std::string_view text, const std::string& name) {
  Recording rec;
  rec.path = name;
  if (text.empty()) return make_error(Errc::kInvalidArgument, name + " is empty: no records to report");
  SpanKeeper spans;
  size_t headers = 0, summaries = 0, untyped = 0, blank = 0;
  std::map<std::string, size_t> unknown_types;
  size_t line_no = 0;
  size_t known = 0;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    bool last = eol == std::string_view::npos || eol + 1 == text.size();
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      ++blank;
      continue;
    }
    Json j;
    try {
      j = Json::parse(line);
    } catch (const Json::parse_error& e) {
      if (known == 0) {
        return make_error(Errc::kInvalidArgument,
                          fmt::format("{} is not JSON Lines: line {} is not JSON (\"{}\"); write one with "
                                      "`perf-monitor run --format json -o FILE -- ...`",
                                      name, line_no, shorten(line)));
      }
      if (last && eol == std::string_view::npos) {
        rec.warnings.push_back(
            fmt::format("the last line ({}) is cut short ({} bytes, no newline): the run was "
                        "still writing or was killed; it is left out",
                        line_no, line.size()));
        break;
      }
      return make_error(Errc::kInvalidArgument, fmt::format("{}:{}: not JSON ({})", name, line_no, e.what()));
    }
    if (!j.is_object()) {
      return make_error(
          Errc::kInvalidArgument,
          fmt::format("{}:{}: a JSON {} where perf-monitor writes one object per line", name, line_no, j.type_name()));
    }
    auto type_it = j.find("type");
    std::string type = type_it != j.end() && type_it->is_string() ? type_it->get<std::string>() : "";
    if (type.empty() && j.contains("timestamp")) {
      // The first JSON layout had no "type": its records were the intervals.
      ++untyped;
      type = "interval";
    }
    if (type == "interval") {
      rec.intervals.add(j);
    } else if (type == "span") {
      SpanTotals& t = rec.span_totals[j.value("function", std::string("?"))];
      ++t.count;
      for (const auto& [k, v] : j.items()) {
        if (v.is_number()) t.sums[k] += v.get<double>();
      }
      ++rec.spans_seen;
      spans.add(std::move(j));
    } else if (type == "summary") {
      if (summaries++ == 0) rec.summary = std::move(j);
    } else if (type == "header") {
      if (headers++ == 0) rec.header = std::move(j);
    } else {
      ++unknown_types[type.empty() ? "(none)" : type];
      continue;
    }
    ++known;
  }
  rec.lines = line_no;
  if (known == 0) {
    return make_error(Errc::kInvalidArgument,
                      fmt::format("{} holds no perf-monitor records (none of its {} lines has a \"type\" of header, "
                                  "interval, span or summary)",
                                  name, line_no - blank));
  }
  rec.intervals.finish();
  rec.spans = spans.take();

  if (rec.header.is_null()) {
    rec.warnings.push_back(
        "no header record: written by a perf-monitor older than JSON schema version 1 (or the start of the file "
        "is missing), so host, kernel and CPU are unknown");
  } else {
    auto v = rec.header.find("schema_version");
    if (v == rec.header.end() || !v->is_number_integer()) {
      rec.warnings.push_back("the header has no schema_version: read as well as it goes");
    } else if (v->get<int64_t>() != kJsonSchemaVersion) {
      rec.warnings.push_back(fmt::format(
          "written with JSON schema version {} ({}), this perf-monitor knows version {}: every record was read "
          "generically, but charts that look for a metric by name may be missing",
          v->get<int64_t>(), v->get<int64_t>() > kJsonSchemaVersion ? "newer" : "older", kJsonSchemaVersion));
    }
  }
  if (untyped > 0) {
    rec.warnings.push_back(
        fmt::format("{} records without a \"type\" were read as intervals (an older JSON layout)", untyped));
  }
  for (const auto& [t, n] : unknown_types) {
    rec.warnings.push_back(fmt::format("{} records of unknown type \"{}\" were skipped", n, shorten(t)));
  }
  if (headers > 1 || summaries > 1) {
    rec.warnings.push_back(
        fmt::format("the file holds {} header and {} summary records (several runs appended to "
                    "one file?): the first of each is shown, every interval is",
                    headers, summaries));
  }
  if (rec.summary.is_null()) {
    rec.warnings.push_back("no summary record: the run did not finish (killed, or still running)");
  }
  if (rec.intervals.rows() == 0) rec.warnings.push_back("no interval records: there is no timeline to draw");
  if (rec.spans_seen > rec.spans.size()) {
    rec.warnings.push_back(
        fmt::format("{} spans: the page keeps {} of them (the {} slowest and an even sample "
                    "of the others); per-function totals count them all",
                    rec.spans_seen, rec.spans.size(), kSlowestSpans));
  }
  return rec;
}

Result<Recording> read_recording(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return make_error(Errc::kInvalidArgument, path + " is a directory, not a JSON Lines file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::from_errno(errno, "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error::from_errno(errno, "cannot read " + path);
  return parse_recording(text.str(), path);
}

}  // namespace pm::report
