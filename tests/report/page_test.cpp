// SPDX-License-Identifier: Apache-2.0
// Report pages of real recordings, opened from file:// in headless Chromium (network off): no
// console errors, nothing fetched, every chart drawn with data, the data in the page equal to
// the JSON Lines it came from, a screenshot saved. Then the heatmap of a bimodal fixture, and
// files that are not what they should be.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "integration/harness.h"
#include "report/chromium.h"

namespace pm::test {
namespace {

using Json = nlohmann::json;

std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Json> lines_of(const std::string& path) {
  std::vector<Json> out;
  std::istringstream in(slurp_file(path));
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line, nullptr, false);
    if (!line.empty() && !j.is_discarded()) out.push_back(j);  // a line cut short is left out
  }
  return out;
}

std::vector<Json> of_type(const std::vector<Json>& records, const std::string& type) {
  std::vector<Json> out;
  for (const Json& r : records) {
    if (r.value("type", "") == type) out.push_back(r);
  }
  return out;
}

bool shaped_like_histogram(const Json& j) {
  return j.is_object() && j.contains("buckets") && j["buckets"].is_array() && j.contains("bucket_base");
}

// Paths of the histograms and (section, metric) pairs with numbers, over every interval.
void walk(const Json& j, std::vector<std::string>& path, std::set<std::string>& hists, std::set<std::string>& metrics) {
  for (const auto& [k, v] : j.items()) {
    path.push_back(k);
    if (shaped_like_histogram(v)) {
      std::string p;
      for (const std::string& part : path) p += (p.empty() ? "" : " › ") + part;
      bool values =
          std::any_of(v["buckets"].begin(), v["buckets"].end(), [](const Json& b) { return b.get<double>() > 0; });
      hists.insert(p + (values ? "" : " (empty)"));
    } else if (v.is_object()) {
      walk(v, path, hists, metrics);
    } else if (v.is_number() && path.size() >= 2) {
      metrics.insert(path[0] + " › " + path[1]);
    }
    path.pop_back();
  }
}

std::string screenshot_dir() {
  std::string dir = PM_SCREENSHOT_DIR;
  std::filesystem::create_directories(dir);
  return dir;
}

std::unique_ptr<Chromium> browser() {
  std::string error;
  auto c = Chromium::launch(1400, 1000, &error);
  if (!c) ADD_FAILURE() << error;
  return c;
}

#define NEED_CHROMIUM()                                                                              \
  do {                                                                                               \
    if (!Chromium::find()) GTEST_SKIP() << "no chromium on PATH (Debian: apt-get install chromium)"; \
  } while (0)

// The JavaScript that asks the page what it drew: per chart, its kind, title and points, and
// whether Chart.js laid out a data element inside the canvas (or the heatmap painted a cell).
constexpr const char* kChartsJs = R"JS((() => {
  PM.renderAll();
  return PM.charts.map(c => {
    let drawn = false;
    if (c.chart) {
      const area = c.chart.chartArea;
      drawn = c.chart.data.datasets.some((d, i) => c.chart.getDatasetMeta(i).data.some(e =>
        Number.isFinite(e.x) && Number.isFinite(e.y) && e.x >= area.left - 1 && e.x <= area.right + 1));
    } else {
      const ctx = c.canvas.getContext('2d'), img = ctx.getImageData(0, 0, c.canvas.width, c.canvas.height).data;
      // A cell: a saturated colour (the background is white or pale grey-blue, text grey).
      for (let i = 0; i < img.length && !drawn; i += 4) {
        drawn = img[i + 3] > 0 && Math.max(img[i], img[i + 1], img[i + 2]) - Math.min(img[i], img[i + 1], img[i + 2]) > 60;
      }
    }
    return { kind: c.kind, title: c.title, points: c.points, width: c.canvas.width, height: c.canvas.height, drawn };
  });
})())JS";

struct Checked {
  Json charts;
  std::set<std::string> titles;
};

// Everything every report page must satisfy; returns what it drew.
Checked check_page(Chromium& c, const std::string& jsonl, const std::string& html, const std::string& shot) {
  Checked out;
  std::string url = "file://" + std::filesystem::absolute(html).string();
  Chromium::Load load = c.open(url, std::chrono::seconds(60));
  EXPECT_TRUE(load.ready) << "the page said: " << load.ready_state;
  for (const std::string& e : load.errors) ADD_FAILURE() << "console: " << e;
  for (const std::string& r : load.requests) EXPECT_EQ(r, url) << "the page fetched something else";

  out.charts = c.eval(kChartsJs);
  EXPECT_GT(out.charts.size(), 0u);
  for (const Json& ch : out.charts) {
    std::string title = ch["title"].get<std::string>();
    out.titles.insert(title);
    EXPECT_GT(ch["points"].get<double>(), 0) << title;
    EXPECT_GT(ch["width"].get<int>(), 0) << title;
    EXPECT_GT(ch["height"].get<int>(), 0) << title;
    EXPECT_TRUE(ch["drawn"].get<bool>()) << ch["kind"] << " " << title << " drew no data";
  }
  for (const std::string& e : c.errors()) ADD_FAILURE() << "console after drawing everything: " << e;

  // The data in the page, decoded by the page, equals the file.
  std::vector<Json> records = lines_of(jsonl);
  Json page = Json::parse(c.eval(R"(JSON.stringify({header: PM.data.header, summary: PM.data.summary,
      intervals: PM.records(PM.data.intervals), spans: PM.records(PM.data.spans.kept), seen: PM.data.spans.seen}))")
                              .get<std::string>());
  std::vector<Json> header = of_type(records, "header"), summary = of_type(records, "summary");
  EXPECT_EQ(page["header"], header.empty() ? Json() : header[0]);
  EXPECT_EQ(page["summary"], summary.empty() ? Json() : summary[0]);
  std::vector<Json> intervals = of_type(records, "interval"), spans = of_type(records, "span");
  EXPECT_EQ(page["intervals"].size(), intervals.size());
  for (size_t i = 0; i < intervals.size() && i < page["intervals"].size(); ++i) {
    EXPECT_EQ(page["intervals"][i], intervals[i]) << "interval " << i;
  }
  EXPECT_EQ(page["seen"], spans.size());
  if (spans.size() <= 10000) {
    EXPECT_EQ(page["spans"].size(), spans.size());
    for (size_t i = 0; i < spans.size() && i < page["spans"].size(); ++i) EXPECT_EQ(page["spans"][i], spans[i]) << i;
  }

  // Every histogram has its heatmap, every section its heading, every metric its chart.
  std::set<std::string> hists, metrics;
  for (const Json& r : intervals) {
    std::vector<std::string> path;
    walk(r, path, hists, metrics);
  }
  for (const std::string& h : hists) {
    if (h.size() > 8 && h.substr(h.size() - 8) == " (empty)") {
      // Never a value: a card that says so instead of an empty picture.
      std::string title = h.substr(0, h.size() - 8);
      if (hists.count(title)) continue;  // some interval has values
      EXPECT_TRUE(c.eval("[...document.querySelectorAll('.card')].some(e => e.querySelector('h3').textContent === " +
                         Json(title).dump() + " && e.textContent.includes('no values recorded'))")
                      .get<bool>())
          << "no card for " << title;
    } else {
      EXPECT_TRUE(out.titles.count(h)) << "no heatmap for " << h;
    }
  }
  for (const std::string& m : metrics) {
    bool found =
        std::any_of(out.titles.begin(), out.titles.end(), [&](const std::string& t) { return t.rfind(m, 0) == 0; });
    EXPECT_TRUE(found) << "no chart for " << m;
    std::string section = m.substr(0, m.find(" › "));
    EXPECT_TRUE(c.eval("!!document.getElementById('section-" + section + "')").get<bool>()) << section;
  }

  std::string png = c.screenshot_png();
  EXPECT_GT(png.size(), 10000u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::ofstream(screenshot_dir() + "/" + shot, std::ios::binary) << png;
  return out;
}

Outcome report(const std::vector<std::string>& args) {
  std::vector<std::string> a{"report"};
  a.insert(a.end(), args.begin(), args.end());
  return run_pm(a);
}

TEST(ReportPage, RunWithProbesAndRequests) {
  NEED_CHROMIUM();
  std::string base = temp_base(), jsonl = base + ".jsonl", html = base + ".html";
  Outcome run = run_pm({"run", "--format", "json", "-o", jsonl, "--interval", "250ms", "--probe",
                        std::string(PM_SHOP) + ":process_request:arg1", "--", PM_SHOP, "--kind", "mix", "--requests",
                        "60", "--ms", "10", "--dir", scratch_dir()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Outcome r = report({jsonl, "-o", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote " + html), std::string::npos) << r.err;
  auto c = browser();
  ASSERT_TRUE(c);
  Checked page = check_page(*c, jsonl, html, "run_with_probes.png");
  EXPECT_TRUE(page.titles.count("CPU by mode"));
  // The header: what the JSON now says about the machine.
  std::string header = c->eval("document.getElementById('run-header').innerText").get<std::string>();
  for (const char* row : {"command", "exit status", "duration", "host", "kernel", "CPU", "perf-monitor"}) {
    EXPECT_NE(header.find(row), std::string::npos) << row << " missing from:\n" << header;
  }
  std::vector<Json> records = lines_of(jsonl);
  if (of_type(records, "span").empty()) {
    std::cout << "[ INFO     ] no spans in this recording (probes need root and BPF): probe charts not checked\n";
  } else {
    EXPECT_TRUE(page.titles.count("probe split"));
    EXPECT_TRUE(page.titles.count("shop::process_request: latency"));
    EXPECT_TRUE(page.titles.count("calls"));
    EXPECT_TRUE(page.titles.count("slowest requests"));
  }
  std::filesystem::remove(jsonl);
  std::filesystem::remove(html);
}

TEST(ReportPage, LiveModeRecording) {
  NEED_CHROMIUM();
  std::string base = temp_base(), jsonl = base + ".jsonl";
  Outcome run = run_pm({"--format", "json", "-o", jsonl, "--interval", "250ms", "--duration", "2s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Outcome r = report({jsonl});  // writes BASE.html beside it
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = browser();
  ASSERT_TRUE(c);
  Checked page = check_page(*c, jsonl, base + ".html", "live.png");
  EXPECT_TRUE(page.titles.count("CPU by mode"));
  EXPECT_TRUE(page.titles.count("Busy per CPU"));
  std::filesystem::remove(jsonl);
  std::filesystem::remove(base + ".html");
}

// Modes at ~1 us and ~10 ms, the second 1 % of the values: both visible, whatever the
// normalisation and colour scale, and nothing between them.
TEST(ReportPage, BimodalHeatmapShowsBothModes) {
  NEED_CHROMIUM();
  std::string fixture = std::string(PM_FIXTURES_DIR) + "/report/bimodal.jsonl";
  std::string html = temp_base() + ".html";
  Outcome r = report({fixture, "-o", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = browser();
  ASSERT_TRUE(c);
  check_page(*c, fixture, html, "bimodal.png");
  for (const char* scale : {"log", "linear"}) {
    for (const char* norm : {"global", "column"}) {
      Json cells = c->eval(std::string(R"JS((() => {
        PM.heatOptions.scale = ')JS") +
                           scale + "'; PM.heatOptions.norm = '" + norm + R"JS(';
        const h = PM.heatmaps.find(h => h.title === 'scheduler › runq_latency_seconds');
        h.draw();
        const ctx = h.canvas.getContext('2d'), dpr = window.devicePixelRatio || 1;
        const at = (k, f) => Array.from(ctx.getImageData(Math.round((PM.kHeatLeft + f * h.plotW) * dpr), Math.round(h.rowY(k) * dpr), 1, 1).data.slice(0, 3));
        const fs = [0.05, 0.3, 0.55, 0.8, 0.95];
        return { low: fs.map(f => at(1, f)), high: fs.map(f => at(14, f)), between: fs.map(f => at(7, f)), background: PM.kHeatBackground };
      })())JS");
      const Json& bg = cells["background"];
      for (size_t i = 0; i < cells["low"].size(); ++i) {
        EXPECT_NE(cells["low"][i], bg) << scale << "/" << norm << ": the 1 us mode is not drawn at column " << i;
        EXPECT_NE(cells["high"][i], bg) << scale << "/" << norm << ": the 10 ms mode (1 %) is not drawn at column "
                                        << i;
        EXPECT_EQ(cells["between"][i], bg) << scale << "/" << norm << ": something drawn between the modes";
      }
    }
  }
  std::filesystem::remove(html);
}

// A file cut short while written, and one from a future schema with renamed metrics: a page
// of what could be read, with the warning on it and on stderr.
TEST(ReportPage, TruncatedAndOtherSchemaVersionGiveAPageWithAWarning) {
  NEED_CHROMIUM();
  std::string base = temp_base(), jsonl = base + ".jsonl";
  Outcome run = run_pm({"--format", "json", "-o", jsonl, "--interval", "200ms", "--duration", "1s"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string text = slurp_file(jsonl);
  auto c = browser();
  ASSERT_TRUE(c);

  std::string cut = base + "-cut.jsonl";
  std::ofstream(cut, std::ios::binary) << text.substr(0, text.size() - 40);  // into the summary line
  Outcome r = report({cut, "-o", base + "-cut.html"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the last line"), std::string::npos) << r.err;
  check_page(*c, cut, base + "-cut.html", "truncated.png");
  EXPECT_NE(c->eval("document.getElementById('warnings').innerText").get<std::string>().find("cut short"),
            std::string::npos);

  // Schema 99: every section renamed (cpu -> cpu_v99, ...), the version bumped.
  std::string future = base + "-future.jsonl";
  {
    std::ofstream out(future);
    for (Json rec : lines_of(jsonl)) {
      if (rec["type"] == "header") rec["schema_version"] = 99;
      Json renamed = Json::object();
      for (auto& [k, v] : rec.items()) renamed[v.is_object() && k != "unavailable" ? k + "_v99" : k] = v;
      out << renamed.dump() << "\n";
    }
  }
  r = report({future, "-o", base + "-future.html"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("schema version 99 (newer)"), std::string::npos) << r.err;
  Checked page = check_page(*c, future, base + "-future.html", "future_schema.png");
  EXPECT_FALSE(page.titles.count("CPU by mode"));  // it looks for cpu.utilisation_percent: gone
  EXPECT_TRUE(std::any_of(page.titles.begin(), page.titles.end(),
                          [](const std::string& t) { return t.rfind("cpu_v99 › ", 0) == 0; }));
  EXPECT_NE(c->eval("document.getElementById('warnings').innerText").get<std::string>().find("99"), std::string::npos);
  for (const std::string& f : {jsonl, cut, future, base + "-cut.html", base + "-future.html"})
    std::filesystem::remove(f);
}

// Not a recording: one line on stderr, exit 2, no page.
TEST(ReportCommand, BadInputIsOneLineAndExitTwo) {
  std::string base = temp_base();
  Outcome text_run = run_pm({"run", "-o", base + ".txt", "--", "true"});  // text, not JSON
  ASSERT_EQ(text_run.exit_code, 0) << text_run.err;
  std::ofstream(base + "-empty.jsonl").close();
  std::ofstream(base + "-bin.jsonl", std::ios::binary) << std::string(
      "\x7f"
      "ELF\x02\x01\x01\0\0\0",
      10);
  std::ofstream(base + "-mid.jsonl")
      << "{\"type\":\"header\",\"schema_version\":1}\n{\"type\":\"interval\",\n{\"type\":\"summary\"}\n";
  std::ofstream(base + "-other.jsonl") << "{\"level\":\"info\",\"msg\":\"started\"}\n";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases{
      {{base + ".txt"}, "is not JSON Lines: line 1"},
      {{base + "-empty.jsonl"}, "is empty"},
      {{base + "-bin.jsonl"}, "is not JSON Lines"},
      {{base + "-mid.jsonl"}, "-mid.jsonl:2: not JSON"},
      {{base + "-other.jsonl"}, "holds no perf-monitor records"},
      {{scratch_dir()}, "is a directory"},
      {{base + "-missing.jsonl"}, "No such file"},
      {{}, "name the JSON Lines file"},
      {{base + ".txt", base + ".txt"}, "report takes one file"},
      {{"--compare", base + ".txt"}, "name the new runs after --"},
      {{base + ".txt", "--format", "text"}, "text is for --compare"},
      {{"--compare", "a", "b", "--", "c", "--fail-on", "x"}, "--fail-on needs at least 4 runs per side"},
      {{"--correction", "bonferroni", "x"}, "--correction"},
  };
  for (const Case& k : cases) {
    Outcome r = report(k.args);
    EXPECT_EQ(r.exit_code, 2) << k.says << "\n" << r.err;
    EXPECT_NE(r.err.find(k.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  for (const char* f : {".txt", "-empty.jsonl", "-bin.jsonl", "-mid.jsonl", "-other.jsonl"}) {
    std::filesystem::remove(base + f);
    EXPECT_FALSE(std::filesystem::exists(base + std::string(f).substr(0, std::string(f).rfind('.')) + ".html"));
  }
}

// The comparison page: the table of figures and the overlaid histograms.
TEST(ReportPage, ComparisonPage) {
  NEED_CHROMIUM();
  std::string base = temp_base();
  std::vector<std::string> a, b;
  for (int i = 0; i < 2; ++i) {
    a.push_back(base + "-a" + std::to_string(i) + ".jsonl");
    b.push_back(base + "-b" + std::to_string(i) + ".jsonl");
    ASSERT_EQ(run_pm({"run", "--format", "json", "-o", a.back(), "--", workload(), "spin", "50"}).exit_code, 0);
    ASSERT_EQ(run_pm({"run", "--format", "json", "-o", b.back(), "--", workload(), "spin", "100"}).exit_code, 0);
  }
  std::vector<std::string> args{"--compare"};
  args.insert(args.end(), a.begin(), a.end());
  args.push_back("--");
  args.insert(args.end(), b.begin(), b.end());
  std::vector<std::string> html_args = args, json_args = args;
  html_args.insert(html_args.end(), {"--format", "html", "-o", base + "-cmp.html"});
  json_args.insert(json_args.end(), {"--format", "json"});
  Outcome h = report(html_args), j = report(json_args);
  ASSERT_EQ(h.exit_code, 0) << h.err;
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json cmp = Json::parse(j.out);
  auto c = browser();
  ASSERT_TRUE(c);
  std::string url = "file://" + base + "-cmp.html";
  Chromium::Load load = c->open(url, std::chrono::seconds(30));
  EXPECT_TRUE(load.ready) << load.ready_state;
  for (const std::string& e : load.errors) ADD_FAILURE() << e;
  for (const std::string& r : load.requests) EXPECT_EQ(r, url);
  EXPECT_EQ(c->eval("document.querySelectorAll('#comparison-table tr').length").get<size_t>(),
            cmp["figures"].size() + 1);
  EXPECT_NE(c->eval("document.getElementById('warnings').innerText").get<std::string>().find("too few runs"),
            std::string::npos);
  Json charts = c->eval(kChartsJs);
  EXPECT_EQ(charts.size(), cmp["histograms"].size());
  for (const Json& ch : charts) EXPECT_TRUE(ch["drawn"].get<bool>()) << ch["title"];
  std::ofstream(screenshot_dir() + "/compare.png", std::ios::binary) << c->screenshot_png();
  for (const std::string& f : a) std::filesystem::remove(f);
  for (const std::string& f : b) std::filesystem::remove(f);
  std::filesystem::remove(base + "-cmp.html");
}

}  // namespace
}  // namespace pm::test
