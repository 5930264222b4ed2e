// SPDX-License-Identifier: Apache-2.0
// The data a report page carries: decoded here by a reader written from page_data.h's layout
// alone, it gives back every record of the file, value for value. (The browser tests check
// the page's own decoder the same way.)
#include <gtest/gtest.h>

#include <zlib.h>

#include <string>

#include <fmt/format.h>

#include "report/page_data.h"
#include "report/recording.h"

namespace pm::report {
namespace {

// ---- a reader of the layout documented in page_data.h ----
std::vector<bool> absent_of(const Json& s, size_t n) {
  std::vector<bool> a(n, false);
  if (s.contains("a")) {
    for (const Json& r : s["a"]) {
      for (size_t i = r[0].get<size_t>(); i < r[1].get<size_t>(); ++i) a[i] = true;
    }
  }
  return a;
}

void put(Json& rec, const Json& path, Json v) {
  Json* node = &rec;
  for (const Json& p : path) node = &(*node)[p.get<std::string>()];
  *node = std::move(v);
}

// Cell k of a series belongs to the k-th record that is not absent.
std::vector<size_t> cell_of(const std::vector<bool>& absent) {
  std::vector<size_t> out(absent.size(), 0);
  for (size_t i = 0, k = 0; i < absent.size(); ++i) out[i] = absent[i] ? 0 : k++;
  return out;
}

std::vector<Json> decode(const Json& table) {
  size_t n = table["n"].get<size_t>();
  std::vector<Json> out(n, Json::object());
  auto value_at = [](const Json& s, size_t k) { return s.contains("c") ? s["c"] : s["v"][k]; };
  for (const Json& s : table["series"]) {
    std::vector<bool> absent = absent_of(s, n);
    std::vector<size_t> cell = cell_of(absent);
    for (size_t i = 0; i < n; ++i) {
      if (absent[i]) continue;
      if (!s.contains("h")) {
        put(out[i], s["p"], value_at(s, cell[i]));
        continue;
      }
      Json h = Json::object();
      for (const Json& f : s["f"]) {
        std::vector<bool> fa = absent_of(f, n);
        if (!fa[i]) h[f["p"][0].get<std::string>()] = value_at(f, cell_of(fa)[i]);
      }
      size_t len = s.contains("bl") ? s["bl"].get<size_t>() : s["bls"][cell[i]].get<size_t>();
      std::vector<double> b(len, 0);
      const Json& row = s["b"][cell[i]];
      if (row.is_array()) {
        for (size_t k = 1; k < row.size(); ++k) b[row[0].get<size_t>() + k - 1] = row[k].get<double>();
      }
      h["buckets"] = b;
      put(out[i], s["p"], h);
    }
  }
  return out;
}

std::string base64_to_bytes(const std::string& text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0) continue;
    acc = acc << 6 | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(acc >> bits & 0xff);
    }
  }
  return out;
}

std::string gunzip(const std::string& gz) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&zs);
  return out;
}

std::vector<Json> records_of(const std::string& text, const std::string& type) {
  std::vector<Json> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t eol = text.find('\n', at);
    Json j = Json::parse(text.substr(at, eol - at));
    if (j["type"] == type) out.push_back(j);
    at = eol + 1;
  }
  return out;
}

TEST(PageData, DecodesToExactlyTheRecordsOfTheFile) {
  std::string text = R"({"type":"header","schema_version":1,"mode":"run","command":["a</script>b"]})"
                     "\n";
  for (int i = 0; i < 50; ++i) {
    std::string disk = i % 7 == 3 ? "" : fmt::format(R"(,"block_io":{{"requests":{{"vda":{}}}}})", i);
    std::string lat =
        i % 5 == 0
            ? ""
            : fmt::format(
                  R"(,"probe":{{"latency_seconds":{{"f":{{"count":{},"sum":{},"p50":{},"bucket_base":1e-09,"buckets":[0,0,{},0,{},0,0,0]}}}}}})",
                  i + (i % 3 ? 3 : 0), i * 0.25, i % 4 ? "0.5" : "null", i, i % 3 ? 3 : 0);
    text += fmt::format(
        R"({{"type":"interval","timestamp":"2026-11-30T00:{:02}:00Z","interval_s":{},"memory":{{"total_bytes":25276502016,"used_bytes":{}}},"flag":{},"note":"{}"}})",
        i, i == 7 ? 0.999 : 1.0, 900000000 + i * 4096, i % 2 ? "true" : "false", i % 10 ? "ok" : "<!--x-->");
    text.pop_back();  // the closing brace: the optional parts go inside
    text += disk + lat + "}\n";
  }
  text += R"({"type":"span","function":"f","request_id":4,"latency_s":0.003651874,"on_cpu_s":0.000828795})"
          "\n";
  text += R"({"type":"summary","mode":"run","exit_code":0,"duration_s":50.1,"unavailable":{}})"
          "\n";
  auto rec = parse_recording(text, "x.jsonl");
  ASSERT_TRUE(rec) << rec.error().message;

  Json page = Json::parse(report_json(*rec));
  EXPECT_EQ(page["format"], 2);
  EXPECT_EQ(page["header"], records_of(text, "header")[0]);
  EXPECT_EQ(page["summary"], records_of(text, "summary")[0]);
  std::vector<Json> want = records_of(text, "interval"), got = decode(page["intervals"]);
  ASSERT_EQ(got.size(), want.size());
  // Compared as unordered objects: the page rebuilds a record's keys in its own order.
  auto plain = [](const Json& j) { return nlohmann::json::parse(j.dump()); };
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(plain(got[i]), plain(want[i])) << "interval " << i << "\n" << got[i].dump() << "\n" << want[i].dump();
  }
  std::vector<Json> spans = decode(page["spans"]["kept"]);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(plain(spans[0]), plain(records_of(text, "span")[0]));
  EXPECT_EQ(page["spans"]["totals"]["f"]["count"], 1);

  // A constant is written once; bytes that could end a <script> never reach the page unencoded.
  std::string raw = report_json(*rec);
  EXPECT_NE(raw.find(R"({"p":["memory","total_bytes"],"c":25276502016})"), std::string::npos);
  std::string b64 = gzip_base64(raw);
  EXPECT_EQ(b64.find('<'), std::string::npos);
  EXPECT_EQ(gunzip(base64_to_bytes(b64)), raw);
}

TEST(PageData, Base64OfEveryLengthRoundTrips) {
  for (size_t len : {0, 1, 2, 3, 4, 5, 1000, 65537}) {
    std::string s(len, '\0');
    for (size_t i = 0; i < len; ++i) s[i] = static_cast<char>((i * 131 + 7) & 0xff);
    EXPECT_EQ(gunzip(base64_to_bytes(gzip_base64(s))), s) << len;
  }
}

}  // namespace
}  // namespace pm::report
