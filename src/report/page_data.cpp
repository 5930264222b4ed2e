// SPDX-License-Identifier: Apache-2.0
#include "report/page_data.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/version.h"

namespace pm::report {
namespace {

void append_path(std::string& out, const std::vector<std::string>& path) {
  out += "\"p\":";
  out += Json(path).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The ranges of records without a cell: the gaps between the rows a series has.
std::string absent_of(const Series& s, size_t n) {
  std::string out;
  size_t next = 0;  // the first record not yet accounted for
  auto gap = [&](size_t from, size_t to) {
    if (from >= to) return;
    out += out.empty() ? "[" : ",";
    fmt::format_to(std::back_inserter(out), "[{},{}]", from, to);
  };
  for (uint32_t r : s.rows) {
    gap(next, r);
    next = static_cast<size_t>(r) + 1;
  }
  gap(next, n);
  return out.empty() ? out : out + "]";
}

void append_cells(std::string& out, const Series& s) {
  out += '[';
  for (size_t k = 0; k < s.size(); ++k) {
    if (k) out += ',';
    out += s.cell(k);
  }
  out += ']';
}

void append_value_series(std::string& out, const Series& s, size_t n) {
  out += '{';
  append_path(out, s.path);
  bool constant = s.size() == n && n > 0;
  for (size_t k = 1; constant && k < s.size(); ++k) constant = s.cell(k) == s.cell(0);
  if (constant) {
    out += ",\"c\":";
    out += s.cell(0);
  } else {
    out += ",\"v\":";
    append_cells(out, s);
    std::string a = absent_of(s, n);
    if (!a.empty()) out += ",\"a\":" + a;
  }
  out += '}';
}

void append_histogram_series(std::string& out, const Series& s, size_t n) {
  out += '{';
  append_path(out, s.path);
  out += ",\"h\":1,\"f\":[";
  for (size_t i = 0; i < s.fields.size(); ++i) {
    if (i) out += ',';
    append_value_series(out, s.fields[i], n);
  }
  out += "],\"b\":";
  append_cells(out, s);
  bool same_len = std::all_of(s.lengths.begin(), s.lengths.end(), [&](uint32_t l) { return l == s.lengths[0]; });
  if (same_len) {
    fmt::format_to(std::back_inserter(out), ",\"bl\":{}", s.lengths.empty() ? 0 : s.lengths[0]);
  } else {
    out += ",\"bls\":[";
    for (size_t k = 0; k < s.lengths.size(); ++k)
      fmt::format_to(std::back_inserter(out), "{}{}", k ? "," : "", s.lengths[k]);
    out += ']';
  }
  std::string a = absent_of(s, n);
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
      append_histogram_series(out, s, table.rows());
    } else {
      append_value_series(out, s, table.rows());
    }
  }
  return out + "]";
}

std::string report_json(const Recording& rec) {
  std::string out;
  out.reserve(1 << 20);
  out += "{\"format\":2,\"kind\":\"report\",\"file\":" + dump(Json(rec.path));
  out += ",\"generator\":" + dump(Json("perf-monitor " PERF_MONITOR_VERSION));
  out += ",\"warnings\":" + dump(Json(rec.warnings));
  out += ",\"header\":" + dump(rec.header);
  out += ",\"metrics\":" + dump(rec.metrics);
  out += ",\"summary\":" + dump(rec.summary);
  fmt::format_to(std::back_inserter(out), ",\"intervals\":{{\"n\":{},\"series\":", rec.intervals.rows());
  out += series_json(rec.intervals);
  SeriesTable spans;
  for (const Json& s : rec.spans) spans.add(s);
  fmt::format_to(std::back_inserter(out), "}},\"spans\":{{\"seen\":{},\"kept\":{{\"n\":{},\"series\":", rec.spans_seen,
                 spans.rows());
  out += series_json(spans);
  // Written key by key: ordered_json's operator[] searches linearly, and the map is sorted already.
  out += "},\"totals\":{";
  bool first_fn = true;
  for (const auto& [fn, t] : rec.span_totals) {
    if (!first_fn) out += ',';
    first_fn = false;
    out += dump(Json(fn));
    out += ':';
    out += dump(Json{{"count", t.count}, {"sums", Json(t.sums)}});
  }
  out += "}}}";
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
