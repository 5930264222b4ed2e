// SPDX-License-Identifier: Apache-2.0
#include "report/page_data.h"

#include <zlib.h>

#include <fmt/format.h>

#include "core/version.h"

namespace pm::report {
namespace {

void append_cell(std::string& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::number_integer:
      fmt::format_to(std::back_inserter(out), "{}", j.get<int64_t>());
      break;
    case Json::value_t::number_unsigned:
      fmt::format_to(std::back_inserter(out), "{}", j.get<uint64_t>());
      break;
    case Json::value_t::number_float:
      fmt::format_to(std::back_inserter(out), "{}", j.get<double>());  // shortest round trip
      break;
    case Json::value_t::discarded:
      out += "null";
      break;
    default:
      out += j.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

void append_double(std::string& out, double v) { fmt::format_to(std::back_inserter(out), "{}", v); }

void append_path(std::string& out, const std::vector<std::string>& path) {
  out += "\"p\":";
  out += Json(path).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Ranges [from, to) of rows where absent(i) holds, as JSON: [[0,3],[7,8]].
template <typename F>
std::string absent_ranges(size_t n, F absent) {
  std::string out;
  for (size_t i = 0; i < n;) {
    if (!absent(i)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && absent(j)) ++j;
    out += out.empty() ? "[" : ",";
    fmt::format_to(std::back_inserter(out), "[{},{}]", i, j);
    i = j;
  }
  return out.empty() ? out : out + "]";
}

void append_value_series(std::string& out, const Series& s) {
  out += '{';
  append_path(out, s.path);
  const size_t n = s.cells.size();
  bool constant = n > 0 && !s.cells[0].is_discarded();
  for (size_t i = 1; constant && i < n; ++i) constant = s.cells[i] == s.cells[0] && !s.cells[i].is_discarded();
  if (constant) {
    out += ",\"c\":";
    append_cell(out, s.cells[0]);
  } else {
    out += ",\"v\":[";
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      append_cell(out, s.cells[i]);
    }
    out += ']';
    std::string a = absent_ranges(n, [&](size_t i) { return s.cells[i].is_discarded(); });
    if (!a.empty()) out += ",\"a\":" + a;
  }
  out += '}';
}

void append_histogram_series(std::string& out, const Series& s) {
  out += '{';
  append_path(out, s.path);
  out += ",\"h\":1,\"f\":[";
  for (size_t i = 0; i < s.fields.size(); ++i) {
    if (i) out += ',';
    append_value_series(out, s.fields[i]);
  }
  out += "],\"b\":[";
  const size_t n = s.buckets.size();
  size_t len = 0;
  bool same_len = true;
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    if (!s.present[i]) continue;
    if (first) len = s.buckets[i].size();
    same_len = same_len && s.buckets[i].size() == len;
    first = false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    const std::vector<double>& row = s.buckets[i];
    size_t lo = 0, hi = row.size();
    while (lo < hi && row[lo] == 0) ++lo;
    while (hi > lo && row[hi - 1] == 0) --hi;
    if (lo == hi) {
      out += '0';
      continue;
    }
    fmt::format_to(std::back_inserter(out), "[{}", lo);
    for (size_t k = lo; k < hi; ++k) {
      out += ',';
      append_double(out, row[k]);
    }
    out += ']';
  }
  out += ']';
  if (same_len) {
    fmt::format_to(std::back_inserter(out), ",\"bl\":{}", len);
  } else {
    out += ",\"bls\":[";
    for (size_t i = 0; i < n; ++i) fmt::format_to(std::back_inserter(out), "{}{}", i ? "," : "", s.buckets[i].size());
    out += ']';
  }
  std::string a = absent_ranges(n, [&](size_t i) { return !s.present[i]; });
  if (!a.empty()) out += ",\"a\":" + a;
  out += '}';
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

std::string series_json(const SeriesTable& table) {
  std::string out = "[";
  bool first = true;
  for (const Series& s : table.series()) {
    if (!first) out += ',';
    first = false;
    if (s.histogram) {
      append_histogram_series(out, s);
    } else {
      append_value_series(out, s);
    }
  }
  return out + "]";
}

std::string report_json(const Recording& rec) {
  std::string out;
  out.reserve(1 << 20);
  out += "{\"format\":1,\"kind\":\"report\",\"file\":" + dump(Json(rec.path));
  out += ",\"generator\":" + dump(Json("perf-monitor " PERF_MONITOR_VERSION));
  out += ",\"warnings\":" + dump(Json(rec.warnings));
  out += ",\"header\":" + dump(rec.header);
  out += ",\"summary\":" + dump(rec.summary);
  fmt::format_to(std::back_inserter(out), ",\"intervals\":{{\"n\":{},\"series\":", rec.intervals.rows());
  out += series_json(rec.intervals);
  SeriesTable spans;
  for (const Json& s : rec.spans) spans.add(s);
  spans.finish();
  fmt::format_to(std::back_inserter(out), "}},\"spans\":{{\"seen\":{},\"kept\":{{\"n\":{},\"series\":", rec.spans_seen,
                 spans.rows());
  out += series_json(spans);
  Json totals = Json::object();
  for (const auto& [fn, t] : rec.span_totals) totals[fn] = Json{{"count", t.count}, {"sums", t.sums}};
  out += "},\"totals\":" + dump(totals) + "}}";
  return out;
}

std::string gzip_base64(const std::string& text) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip wrapper, which DecompressionStream("gzip") reads.
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string gz;
  gz.resize(deflateBound(&zs, text.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  int rc = deflate(&zs, Z_FINISH);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return {};

  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((gz.size() + 2) / 3 * 4);
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(gz[k])); };
  for (; i + 3 <= gz.size(); i += 3) {
    uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  if (size_t rest = gz.size() - i; rest > 0) {
    uint32_t v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += rest == 2 ? kAlphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace pm::report
