// SPDX-License-Identifier: Apache-2.0
#include "report/page_data.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/version.h"

namespace pm::report {
namespace {

// The JSON being written: pieces go on to the sink once they make about kPiece bytes.
class Out {
 public:
  static constexpr size_t kPiece = size_t{64} << 10;
  explicit Out(const Sink& sink) : sink_(sink) { s.reserve(2 * kPiece); }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  ~Out() { flush(); }
  void piece() {
    if (s.size() >= kPiece) flush();
  }
  void flush() {
    if (!s.empty()) sink_(s);
    s.clear();
  }
  std::string s;  // appended to directly

 private:
  const Sink& sink_;
};

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void append_path(Out& out, const std::vector<std::string>& path) {
  out.s += "\"p\":";
  out.s += dump(Json(path));
}

// The ranges of records without a cell: the gaps between the rows a series has.
void append_absent(Out& out, const Series& s, size_t n) {
  bool first = true;
  size_t next = 0;  // the first record not yet accounted for
  auto gap = [&](size_t from, size_t to) {
    if (from >= to) return;
    out.s += first ? ",\"a\":[" : ",";
    first = false;
    fmt::format_to(std::back_inserter(out.s), "[{},{}]", from, to);
    out.piece();
  };
  for (uint32_t r : s.rows) {
    gap(next, r);
    next = static_cast<size_t>(r) + 1;
  }
  gap(next, n);
  if (!first) out.s += ']';
}

void append_cells(Out& out, const Series& s) {
  out.s += '[';
  for (size_t k = 0; k < s.size(); ++k) {
    if (k) out.s += ',';
    s.append_cell(out.s, k);
    out.piece();
  }
  out.s += ']';
}

void append_value_series(Out& out, const Series& s, size_t n) {
  out.s += '{';
  append_path(out, s.path);
  bool constant = s.size() == n && n > 0;
  for (size_t k = 1; constant && k < s.size(); ++k) constant = s.same_cells(k, 0);
  if (constant) {
    out.s += ",\"c\":";
    s.append_cell(out.s, 0);
  } else {
    out.s += ",\"v\":";
    append_cells(out, s);
    append_absent(out, s, n);
  }
  out.s += '}';
}

void append_histogram_series(Out& out, const Series& s, size_t n) {
  out.s += '{';
  append_path(out, s.path);
  out.s += ",\"h\":1,\"f\":[";
  for (size_t i = 0; i < s.fields.size(); ++i) {
    if (i) out.s += ',';
    append_value_series(out, s.fields[i], n);
  }
  out.s += "],\"b\":";
  append_cells(out, s);
  bool same_len = std::all_of(s.lengths.begin(), s.lengths.end(), [&](uint32_t l) { return l == s.lengths[0]; });
  if (same_len) {
    fmt::format_to(std::back_inserter(out.s), ",\"bl\":{}", s.lengths.empty() ? 0 : s.lengths[0]);
  } else {
    out.s += ",\"bls\":[";
    for (size_t k = 0; k < s.lengths.size(); ++k) {
      fmt::format_to(std::back_inserter(out.s), "{}{}", k ? "," : "", s.lengths[k]);
      out.piece();
    }
    out.s += ']';
  }
  append_absent(out, s, n);
  out.s += '}';
}

void append_series(Out& out, const SeriesTable& table) {
  out.s += '[';
  bool first = true;
  for (const Series& s : table.series()) {
    if (!first) out.s += ',';
    first = false;
    if (s.histogram) {
      append_histogram_series(out, s, table.rows());
    } else {
      append_value_series(out, s, table.rows());
    }
    out.piece();
  }
  out.s += ']';
}

}  // namespace

std::string series_json(const SeriesTable& table) {
  std::string text;
  Sink sink = [&](std::string_view piece) { text += piece; };
  {
    Out out(sink);
    append_series(out, table);
  }
  return text;
}

void write_report_json(const Recording& rec, const Sink& sink) {
  Out out(sink);
  std::string& s = out.s;
  s += "{\"format\":2,\"kind\":\"report\",\"file\":" + dump(Json(rec.path));
  s += ",\"generator\":" + dump(Json("perf-monitor " PERF_MONITOR_VERSION));
  s += ",\"warnings\":" + dump(Json(rec.warnings));
  s += ",\"header\":" + dump(rec.header);
  s += ",\"metrics\":" + dump(rec.metrics);
  s += ",\"summary\":" + dump(rec.summary);
  fmt::format_to(std::back_inserter(s), ",\"intervals\":{{\"n\":{},\"series\":", rec.intervals.rows());
  append_series(out, rec.intervals);
  SeriesTable spans;
  for (const Json& j : rec.spans) spans.add(j);
  fmt::format_to(std::back_inserter(s), "}},\"spans\":{{\"seen\":{},\"kept\":{{\"n\":{},\"series\":", rec.spans_seen,
                 spans.rows());
  append_series(out, spans);
  // Written key by key: ordered_json's operator[] searches linearly, and the map is sorted already.
  s += "},\"totals\":{";
  bool first_fn = true;
  for (const auto& [fn, t] : rec.span_totals) {
    if (!first_fn) s += ',';
    first_fn = false;
    s += dump(Json(fn));
    s += ':';
    s += dump(Json{{"count", t.count}, {"sums", Json(t.sums)}});
    out.piece();
  }
  s += "}}}";
}

std::string report_json(const Recording& rec) {
  std::string text;
  write_report_json(rec, [&](std::string_view piece) { text += piece; });
  return text;
}

namespace {
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

GzipBase64::GzipBase64(Sink out) : out_(std::move(out)) {
  // windowBits 15 + 16: a gzip wrapper, which DecompressionStream("gzip") reads.
  ok_ = deflateInit2(&zs_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
}

GzipBase64::~GzipBase64() {
  if (ok_) deflateEnd(&zs_);
}

void GzipBase64::write(std::string_view text) {
  if (ok_ && !text.empty()) deflate_some(text, Z_NO_FLUSH);
}

void GzipBase64::finish() {
  if (!ok_) return;
  deflate_some({}, Z_FINISH);
  encode({}, true);
  deflateEnd(&zs_);
  ok_ = false;
}

void GzipBase64::deflate_some(std::string_view text, int flush) {
  zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs_.avail_in = static_cast<uInt>(text.size());
  char buf[1 << 16];
  int rc = Z_OK;
  do {
    zs_.next_out = reinterpret_cast<Bytef*>(buf);
    zs_.avail_out = sizeof buf;
    rc = deflate(&zs_, flush);
    encode(std::string_view(buf, sizeof buf - zs_.avail_out), false);
  } while (rc == Z_OK && (zs_.avail_in > 0 || zs_.avail_out == 0));
}

// Base64 of the bytes so far, three at a time; `last`: the end, padded.
void GzipBase64::encode(std::string_view bytes, bool last) {
  gz_ += bytes;
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(gz_[k])); };
  for (; i + 3 <= gz_.size(); i += 3) {
    uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    text_ += kBase64[v >> 18 & 63];
    text_ += kBase64[v >> 12 & 63];
    text_ += kBase64[v >> 6 & 63];
    text_ += kBase64[v & 63];
  }
  gz_.erase(0, i);
  if (last && !gz_.empty()) {
    size_t rest = gz_.size();
    uint32_t v = byte(0) << 16 | (rest == 2 ? byte(1) << 8 : 0);
    text_ += kBase64[v >> 18 & 63];
    text_ += kBase64[v >> 12 & 63];
    text_ += rest == 2 ? kBase64[v >> 6 & 63] : '=';
    text_ += '=';
    gz_.clear();
  }
  if (!text_.empty() && (last || text_.size() >= (size_t{64} << 10))) {
    out_(text_);
    text_.clear();
  }
}

std::string gzip_base64(const std::string& text) {
  std::string out;
  GzipBase64 gz([&](std::string_view piece) { out += piece; });
  gz.write(text);
  gz.finish();
  return out;
}

}  // namespace pm::report
