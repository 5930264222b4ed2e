// SPDX-License-Identifier: Apache-2.0
// Reading JSON Lines generically, and the bad files: not JSON Lines, cut short, another schema
// version, no header, unknown record types, millions of spans.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "report/json_line.h"
#include "report/page_data.h"
#include "report/recording.h"
#include "sinks/json_schema.h"

namespace pm::report {
namespace {

const std::string kHeader =
    fmt::format(R"({{"type":"header","schema_version":{},"mode":"system","cpus":2}})", kJsonSchemaVersion) + "\n";

std::string interval(int i, bool with_disk) {
  std::string disk = with_disk ? R"(,"block_io":{"requests":{"vda":)" + std::to_string(i) + "}}" : "";
  return fmt::format(
             R"({{"type":"interval","timestamp":"2026-11-30T00:00:0{}Z","interval_s":1.0,)"
             R"("cpu":{{"utilisation_percent":{{"all":{{"user":{}.5,"idle":50}}}}}},)"
             R"("scheduler":{{"runq_latency_seconds":{{"count":{},"sum":0.5,"p50":null,"bucket_base":1e-06,"buckets":[0,{},0,0]}}}}{}}})",
             i, i * 10, i, i, disk) +
         "\n";
}

const Series* find(const SeriesTable& t, const std::vector<std::string>& path) {
  for (const Series& s : t.series()) {
    if (s.path == path) return &s;
  }
  return nullptr;
}

TEST(Recording, IntervalsBecomeSeriesByPathAndHistogramsByShape) {
  auto rec = parse_recording(kHeader + interval(1, false) + interval(2, true) + interval(3, false) +
                                 R"({"type":"summary","mode":"system","duration_s":3})"
                                 "\n",
                             "t.jsonl");
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_TRUE(rec->warnings.empty()) << rec->warnings.front();
  EXPECT_EQ(rec->intervals.rows(), 3u);
  EXPECT_EQ(rec->header["cpus"], 2);
  EXPECT_EQ(rec->summary["duration_s"], 3);

  const Series* user = find(rec->intervals, {"cpu", "utilisation_percent", "all", "user"});
  ASSERT_NE(user, nullptr);
  ASSERT_EQ(user->size(), 3u);
  EXPECT_EQ(user->value_at(0), Json(10.5));
  EXPECT_EQ(user->value_at(2), Json(30.5));

  const Series* disk = find(rec->intervals, {"block_io", "requests", "vda"});
  ASSERT_NE(disk, nullptr);     // present in the second record only
  EXPECT_EQ(disk->size(), 1u);  // stored sparse: no cell for the records without it
  EXPECT_FALSE(disk->value_at(0));
  EXPECT_EQ(disk->value_at(1), Json(2));
  EXPECT_FALSE(disk->value_at(2));

  const Series* h = find(rec->intervals, {"scheduler", "runq_latency_seconds"});
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->histogram);
  EXPECT_EQ(h->buckets_at(2), (std::vector<double>{0, 3, 0, 0}));
  auto field = std::find_if(h->fields.begin(), h->fields.end(), [](const Series& f) { return f.path[0] == "p50"; });
  ASSERT_NE(field, h->fields.end());
  ASSERT_TRUE(field->value_at(0));
  EXPECT_TRUE(field->value_at(0)->is_null());  // a real null, not an absent value
  EXPECT_EQ(find(rec->intervals, {"scheduler", "runq_latency_seconds", "count"}), nullptr);
}

TEST(Recording, HistogramIsKnownByItsShapeNotItsName) {
  EXPECT_TRUE(is_histogram(Json::parse(R"({"buckets":[1,2],"bucket_base":1})")));
  EXPECT_TRUE(is_histogram(Json::parse(R"({"count":3,"sum":9,"bucket_base":0.5,"buckets":[]})")));
  EXPECT_FALSE(is_histogram(Json::parse(R"({"buckets":[1,"x"],"bucket_base":1})")));
  EXPECT_FALSE(is_histogram(Json::parse(R"({"buckets":[1,2]})")));
  EXPECT_FALSE(is_histogram(Json::parse(R"({"count":3,"sum":9})")));
}

TEST(Recording, NotJsonLinesIsAnError) {
  // perf-monitor's text output, given by mistake.
  auto text = parse_recording("--- 2026-11-30T01:30:26Z (1.00 s)\ncpu      user 0.0% nice 0.0%\n", "run.txt");
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("run.txt is not JSON Lines: line 1"), std::string::npos) << text.error().message;
  EXPECT_EQ(text.error().code, Errc::kInvalidArgument);

  auto empty = parse_recording("", "e.jsonl");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("is empty"), std::string::npos);

  auto array = parse_recording("[1,2,3]\n", "a.jsonl");
  ASSERT_FALSE(array);
  EXPECT_NE(array.error().message.find("a.jsonl:1: a JSON array"), std::string::npos) << array.error().message;

  auto other = parse_recording("{\"name\":\"x\"}\n{\"name\":\"y\"}\n", "o.jsonl");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("holds no perf-monitor records"), std::string::npos) << other.error().message;

  auto binary = parse_recording(std::string("\x1f\x8b\x08\x00\x00\x00", 6), "run.jsonl.gz");
  ASSERT_FALSE(binary);
  EXPECT_NE(binary.error().message.find("not JSON Lines"), std::string::npos);
}

TEST(Recording, BrokenLineInTheMiddleIsAnErrorWithItsNumber) {
  auto rec = parse_recording(kHeader + interval(1, false) + "{\"type\":\"interval\",\"cpu\":\n" + interval(2, false),
                             "m.jsonl");
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.error().message.find("m.jsonl:3: not JSON"), std::string::npos) << rec.error().message;
}

TEST(Recording, TruncatedLastLineIsLeftOutWithAWarning) {
  std::string whole = kHeader + interval(1, false) + interval(2, false);
  std::string cut = interval(3, false);
  cut.resize(cut.size() / 2);  // killed while writing: no newline at the end
  auto rec = parse_recording(whole + cut, "cut.jsonl");
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_EQ(rec->intervals.rows(), 2u);
  ASSERT_FALSE(rec->warnings.empty());
  bool said = false, no_summary = false;
  for (const std::string& w : rec->warnings) {
    said = said || w.find("the last line (4) is cut short") != std::string::npos;
    no_summary = no_summary || w.find("no summary record") != std::string::npos;
  }
  EXPECT_TRUE(said);
  EXPECT_TRUE(no_summary);
}

TEST(Recording, OtherSchemaVersionsAreReadWithAWarning) {
  // A future layout: renamed metrics, a new record type; still objects with paths.
  std::string future =
      R"({"type":"header","schema_version":99,"mode":"system"})"
      "\n"
      R"({"type":"interval","timestamp":"2030-01-01T00:00:01Z","interval_s":1,"cpu_new":{"busy_ratio":{"all":0.5}}})"
      "\n"
      R"({"type":"annotation","text":"deploy"})"
      "\n";
  auto rec = parse_recording(future, "future.jsonl");
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_EQ(rec->intervals.rows(), 1u);
  EXPECT_NE(find(rec->intervals, {"cpu_new", "busy_ratio", "all"}), nullptr);
  std::string all;
  for (const std::string& w : rec->warnings) all += w + "\n";
  EXPECT_NE(all.find("schema version 99 (newer)"), std::string::npos) << all;
  EXPECT_NE(all.find("1 records of unknown type \"annotation\" were skipped"), std::string::npos) << all;

  // The first layout: no header, no "type" on the records.
  auto old = parse_recording(R"({"timestamp":"2026-06-20T02:23:15Z","pmc":{"instructions":1842300}})"
                             "\n",
                             "old.jsonl");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->intervals.rows(), 1u);
  all.clear();
  for (const std::string& w : old->warnings) all += w + "\n";
  EXPECT_NE(all.find("no header record"), std::string::npos) << all;
  EXPECT_NE(all.find("without a \"type\" were read as intervals"), std::string::npos) << all;
}

// Schema 3: the header says what each metric is, and a "metrics" record what came later; the
// descriptions are kept as strings (bounded, valid UTF-8), anything else in them left out.
// Schema 2 files (the fixture) open without a warning, with no descriptions.
TEST(Recording, MetricDescriptionsFromTheHeaderAndLaterRecords) {
  std::string help(1000, 'x');
  help.replace(299, 2, "\xc3\xa9");  // a two-byte character across the bound (300 bytes)
  std::string text =
      R"({"type":"header","schema_version":3,"mode":"run","metrics":{"process_tree.rss_bytes":{"unit":"bytes","kind":"gauge","help":"RSS of the tree","extra":{"a":1}},"proc_rss_max":{"unit":"bytes","kind":"gauge","help":"peak"},"bad":5}})"
      "\n"
      R"({"type":"metrics","metrics":{"probe.calls":{"unit":"","kind":"counter","help":")" +
      help +
      R"("}}})"
      "\n"
      R"({"type":"interval","timestamp":"2030-01-01T00:00:01Z","interval_s":1,"process_tree":{"rss_bytes":4096}})"
      "\n";
  auto rec = parse_recording(text, "v3.jsonl");
  ASSERT_TRUE(rec) << rec.error().message;
  for (const std::string& w : rec->warnings) EXPECT_EQ(w.find("schema version"), std::string::npos) << w;
  ASSERT_EQ(rec->metrics.size(), 3u) << rec->metrics.dump();
  const Json* rss = metric_of(*rec, {"process_tree", "rss_bytes"});
  ASSERT_NE(rss, nullptr);
  EXPECT_EQ((*rss)["unit"], "bytes");
  EXPECT_EQ((*rss)["help"], "RSS of the tree");
  EXPECT_FALSE(rss->contains("extra"));
  ASSERT_NE(metric_of(*rec, {"proc_rss_max"}), nullptr);
  EXPECT_EQ((*metric_of(*rec, {"proc_rss_max"}))["help"], "peak");
  EXPECT_EQ(metric_of(*rec, {"process_tree", "nothing"}), nullptr);
  const Json* calls = metric_of(*rec, {"probe", "calls", "shop::process_request"});
  ASSERT_NE(calls, nullptr);
  std::string kept = (*calls)["help"].get<std::string>();
  EXPECT_EQ(kept.size(), 299u);  // cut before the character, not inside it
  EXPECT_NO_THROW((void)calls->dump());

  auto v2 = read_recording(std::string(PM_FIXTURES_DIR) + "/report/bimodal.jsonl");
  ASSERT_TRUE(v2) << v2.error().message;
  EXPECT_EQ(v2->header["schema_version"], 2);
  EXPECT_TRUE(v2->metrics.empty());
  for (const std::string& w : v2->warnings) EXPECT_EQ(w.find("schema version"), std::string::npos) << w;
  EXPECT_GT(v2->intervals.rows(), 0u);
}

TEST(Recording, ManySpansKeepTheSlowestAndASampleAndCountThemAll) {
  std::string text = kHeader;
  const int n = 25000;
  for (int i = 0; i < n; ++i) {
    // Latency rises and falls so that the slowest are spread over the file.
    double latency = 1e-6 * ((i * 7919) % n + 1);
    text += fmt::format(R"({{"type":"span","function":"{}","request_id":{},"latency_s":{},"on_cpu_s":{}}})",
                        i % 2 ? "f" : "g", i, latency, latency / 2) +
            "\n";
  }
  auto rec = parse_recording(text, "spans.jsonl");
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_EQ(rec->spans_seen, static_cast<uint64_t>(n));
  EXPECT_EQ(rec->spans.size(), kMaxSpans);
  EXPECT_EQ(rec->span_totals["f"].count + rec->span_totals["g"].count, static_cast<uint64_t>(n));
  // In file order, and the kSlowestSpans slowest all there.
  int slow = 0;
  for (size_t i = 0; i < rec->spans.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(rec->spans[i - 1]["request_id"].get<int>(), rec->spans[i]["request_id"].get<int>());
    }
    slow += rec->spans[i]["latency_s"].get<double>() > 1e-6 * (n - kSlowestSpans) + 1e-12 ? 1 : 0;
  }
  EXPECT_EQ(slow, static_cast<int>(kSlowestSpans));
  // Totals: the sum of 1..n microseconds.
  double sum = rec->span_totals["f"].sums["latency_s"] + rec->span_totals["g"].sums["latency_s"];
  EXPECT_NEAR(sum, 1e-6 * n * (n + 1.0) / 2, 1e-6);
  bool warned = std::any_of(rec->warnings.begin(), rec->warnings.end(),
                            [](const std::string& w) { return w.find("25000 spans") != std::string::npos; });
  EXPECT_TRUE(warned);
}

// A repeated key: its last value, in a small object (as nlohmann's parser keeps it) and in a
// wide one (where no key is searched for: the columns take the last).
TEST(Recording, RepeatedKeysGiveTheirLastValue) {
  std::string wide;
  for (int i = 0; i < 200; ++i) wide += fmt::format(R"("k{}":{},)", i % 100, i);
  auto rec = parse_recording(kHeader + R"({"type":"interval","a":{"x":1,"x":2},"w":{)" + wide + R"("end":0}})" + "\n",
                             "dup.jsonl");
  ASSERT_TRUE(rec) << rec.error().message;
  const Series* x = find(rec->intervals, {"a", "x"});
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->size(), 1u);
  EXPECT_EQ(x->value_at(0), Json(2));
  const Series* k7 = find(rec->intervals, {"w", "k7"});
  ASSERT_NE(k7, nullptr);
  EXPECT_EQ(k7->size(), 1u);
  EXPECT_EQ(k7->value_at(0), Json(107));
}

// Beyond the bounds of a line: one message each, with the file and line.
TEST(Recording, LinesBeyondTheBoundsAreErrors) {
  std::string deep = R"({"type":"interval","a":)" + std::string(100, '[') + std::string(100, ']') + "}\n";
  auto d = parse_recording(kHeader + deep, "deep.jsonl");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("deep.jsonl:2: the line nests deeper than 64 levels"), std::string::npos)
      << d.error().message;
  auto n = parse_recording(kHeader + R"({"type":"interval","a":-1e999})" + "\n", "n.jsonl");
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("n.jsonl:2: the number -1e999 is beyond the range of a double"), std::string::npos)
      << n.error().message;
  std::string many = R"({"type":"interval","a":[)";
  for (int i = 0; i < 300000; ++i) many += "0,";
  many += "0]}\n";
  auto m = parse_recording(kHeader + many, "m.jsonl");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("m.jsonl:2: the line holds more than 250000 values"), std::string::npos)
      << m.error().message;
}

// Interval records as perf-monitor writes them ("type" first) are scanned straight into the
// columns; any other line is read as a tree. Both give the same columns, whatever the record
// holds: the same line with a space before it takes the tree's way.
TEST(Recording, ScannedIntervalsGiveTheColumnsOfTheTree) {
  const std::vector<std::string> records = {
      R"("a":1,"b":2.5,"c":-0,"d":-0.0,"e":null,"f":true,"g":"text","h":[1,"x",{"y":2}],"i":{})",
      R"("n":{"big":9007199254740993,"neg":-9223372036854775808,"u":18446744073709551615,"huge":123456789012345678901234567890})",
      R"("n":{"tiny":1e-400,"exp":1E5,"frac":0.1000,"int":42})",
      R"("s":{"esc":"a\"b\\c\/d\u00e9\ud83d\ude00\n","utf8":"é😀","ctl":"\t"})",
      R"("h":{"count":3,"sum":0.5,"p50":null,"bucket_base":1e-06,"buckets":[0,1,2,0,18446744073709551615,0]})",
      R"("h":{"bucket_base":1,"buckets":[]},"h2":{"bucket_base":1,"buckets":[0,0],"extra":{"x":[1]}})",
      R"("h":{"bucket_base":"x","buckets":[1]},"h3":{"bucket_base":1,"buckets":[1,"x"]})",
      R"("a":{"x":1,"x":2},"b":3)",
      R"("a" : { "x" : 1 , "y" : [ 1 , 2 ] } , "z" : "w")",
      R"("\u0061":1,"a":2)",
      R"("type":"span","a":1)",
      R"("a":1,"a":{"b":2})",
      R"("a":{"b":2},"a":1)",
  };
  std::string wide;
  for (int i = 0; i < 150; ++i) wide += fmt::format(R"("k{}":{},)", i % 70, i);
  std::vector<std::string> all = records;
  all.push_back(R"("w":{)" + wide + R"("end":{"q":1}},"w":{"k1":{"deep":true}})");
  std::string scanned = kHeader, tree = kHeader;
  for (size_t i = 0; i < all.size(); ++i) {
    std::string line = fmt::format(R"({{"type":"interval","timestamp":"t{}",{}}})", i, all[i]);
    scanned += line + "\n";
    tree += " " + line + "\n";
  }
  auto a = parse_recording(scanned, "a.jsonl"), b = parse_recording(tree, "b.jsonl");
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(a->intervals.rows(), b->intervals.rows());
  EXPECT_EQ(a->warnings, b->warnings);
  // Compared as JSON: a scanned string keeps its escapes as written.
  EXPECT_EQ(Json::parse(series_json(a->intervals)), Json::parse(series_json(b->intervals)))
      << series_json(a->intervals) << "\n"
      << series_json(b->intervals);

  // And a bad line is the tree's error.
  for (const char* bad : {R"("a":1e400)", R"("a":[1e400])", R"("a":"\ud800")", "\"a\":\"\xc0\xaf\"", R"("a":01)",
                          R"("a":[1,])", R"("a":tru)", "\"a\":\"\x01\"", R"("a":1} x)"}) {
    std::string line = fmt::format(R"({{"type":"interval",{}}})", bad);
    auto x = parse_recording(kHeader + line + "\n" + kHeader, "x.jsonl");
    Json j;
    LineError e;
    ASSERT_FALSE(parse_json_line(line, &j, &e)) << bad;
    ASSERT_FALSE(x) << bad;
    EXPECT_NE(x.error().message.find("x.jsonl:2: "), std::string::npos) << x.error().message;
    EXPECT_NE(x.error().message.find(e.message), std::string::npos) << x.error().message << "\n" << e.message;
  }
}

TEST(Recording, MissingFileIsAnError) {
  auto rec = read_recording("/nonexistent/run.jsonl");
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.error().message.find("cannot read /nonexistent/run.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace pm::report
