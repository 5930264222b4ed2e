// SPDX-License-Identifier: Apache-2.0
// A recording made to run script in its report: "__proto__", "constructor" and "prototype" keys
// at every level (the polluted-prototype attack that once set an event handler on every table
// row), and markup in every string (command, host, kernel, function names, labels, cgroup and
// process names, the file's own name). Loaded in headless Chromium, the page must run none of
// it (each payload would change the title and set window.pwned), make no element from it, leave
// Object.prototype alone, and still draw, with the data equal to the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "integration/harness.h"
#include "report/chromium.h"

namespace pm::test {
namespace {

using Json = nlohmann::json;
using Ordered = nlohmann::ordered_json;

const std::string kRun = "document.title='PWNED';window.pwned=1";
const std::vector<std::string> kMarkup{
    "<img src=x onerror=\"" + kRun + "\">",
    "</script><script>" + kRun + "</script>",
    "javascript:" + kRun,
    "\"><svg onload=\"" + kRun + "\">",
    "<style>*{background:url(javascript:" + kRun + ")}</style>",
};
// An object whose keys are the ones that reach a prototype, each holding attributes that would
// run script if set on an element.
Ordered poison() {
  Ordered attrs = {{"oncontentvisibilityautostatechange", kRun},
                   {"onmouseover", kRun},
                   {"onfocus", kRun},
                   {"autofocus", ""},
                   {"style", "content-visibility:auto"}};
  Ordered p = Ordered::object();
  p["__proto__"] = {{"attrs", attrs}, {"polluted", 1}, {"text", kMarkup[0]}};
  p["constructor"] = {{"prototype", {{"attrs", attrs}, {"polluted", 1}}}};
  p["prototype"] = {{"attrs", attrs}};
  p["toString"] = kMarkup[1];
  return p;
}

Ordered histogram(double scale) {
  return {{"count", 3 * scale},
          {"sum", 0.01},
          {"p50", 1e-6},
          {"bucket_base", 1e-9},
          {"buckets", {0, 1 * scale, 2 * scale, 0}}};
}

std::vector<Ordered> records() {
  const Ordered kPoison = poison();
  std::vector<Ordered> out;
  Ordered header = {{"type", "header"},
                    {"schema_version", 1},
                    {"mode", "run"},
                    {"command", kMarkup},
                    {"host", kMarkup[0]},
                    {"kernel", kMarkup[1]},
                    {"arch", kMarkup[2]},
                    {"cpu_model", kMarkup[3]},
                    {"cpus", 2},
                    {"perf_monitor_version", kMarkup[4]},
                    {"start", "2026-11-30T00:00:00Z"},
                    {"interval_s", 1}};
  for (auto& [k, v] : kPoison.items()) header[k] = v;
  header["unavailable"] = poison();
  header["unavailable"][kMarkup[0]] = kMarkup[1];
  out.push_back(header);
  for (int i = 0; i < 6; ++i) {
    Ordered rec = {
        {"type", "interval"}, {"timestamp", "2026-11-30T00:00:0" + std::to_string(i + 1) + "Z"}, {"interval_s", 1}};
    rec["cpu"]["utilisation_percent"]["all"] = {{"user", 10 + i}, {"system", 5}, {"idle", 85 - i}};
    rec["cpu"]["utilisation_percent"]["0"] = {{"user", 10 + i}, {"idle", 90 - i}};
    for (const std::string& m : kMarkup) {
      rec["cgroup"]["cpu_percent"][m] = i;                           // a cgroup named with markup
      rec["process"]["rss_bytes"][m]["__proto__"] = 4096 * (i + 1);  // a process name, and a label
    }
    for (auto& [k, v] : kPoison.items()) {
      rec[k] = v;                                            // a section
      rec["cpu"][k] = v;                                     // a metric
      rec["cpu"]["utilisation_percent"][k] = {{"user", i}};  // a label
    }
    rec["scheduler"]["runq_latency_seconds"] = histogram(i + 1);
    rec["scheduler"]["__proto__"] = histogram(1);
    rec["scheduler"]["__proto__"]["__proto__"] = 1;  // a histogram field
    rec["note"] = kMarkup[i % kMarkup.size()];
    out.push_back(rec);
  }
  std::vector<std::string> functions = kMarkup;
  for (const char* k : {"__proto__", "constructor", "prototype", "toString", "hasOwnProperty"}) functions.push_back(k);
  int id = 0;
  for (const std::string& fn : functions) {
    for (int k = 0; k < 3; ++k) {
      Ordered span = {{"type", "span"},
                      {"function", fn},
                      {"request_id", kMarkup[id % kMarkup.size()]},
                      {"start", "2026-11-30T00:00:02Z"},
                      {"latency_s", 0.001 * (k + 1)},
                      {"on_cpu_s", 0.0005}};
      for (auto& [pk, pv] : kPoison.items()) span[pk] = pv;
      out.push_back(span);
      ++id;
    }
  }
  Ordered summary = {{"type", "summary"},        {"mode", "run"},     {"exit_code", 0}, {"duration_s", 6.0},
                     {"end_reason", kMarkup[0]}, {"command", kMarkup}};
  for (auto& [k, v] : kPoison.items()) summary[k] = v;
  for (const std::string& fn : functions) {
    summary["probe"]["latency_seconds"][fn] = histogram(2);
    summary["probe"]["calls"][fn] = 3;
    summary["probe"]["on_cpu_seconds"][fn] = 0.0015;
  }
  summary["unavailable"] = poison();
  summary["slowest_requests"] = Ordered::array();
  for (const std::string& m : kMarkup) {
    summary["slowest_requests"].push_back(
        {{"request_id", m}, {"function", m}, {"latency_s", 0.002}, {"on_cpu_s", 0.001}, {"__proto__", poison()}});
  }
  summary["scheduler"]["runq_latency_seconds"] = histogram(10);
  summary[kMarkup[0]] = {{kMarkup[1], 1}, {"__proto__", {{kMarkup[2], 2}}}};
  out.push_back(summary);
  return out;
}

TEST(ReportHostilePage, CraftedRecordingRunsNoScriptAndStillDraws) {
  if (!Chromium::find()) GTEST_SKIP() << "no chromium on PATH (Debian: apt-get install chromium)";
  // The file's own name carries markup too (it is shown on the page).
  std::string dir = temp_base() + "-dir";
  std::filesystem::create_directories(dir);
  std::string jsonl = dir + "/run<img src=x onerror=\"" + kRun + "\">.jsonl", html = dir + "/page.html";
  std::vector<Ordered> recs = records();
  {
    std::ofstream out(jsonl);
    for (const Ordered& r : recs) out << r.dump() << "\n";
  }
  Outcome r = run_pm({"report", jsonl, "-o", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::string page = slurp(html);
  size_t csp_at = page.find("Content-Security-Policy");
  ASSERT_NE(csp_at, std::string::npos);
  std::string csp = page.substr(csp_at, page.find('>', csp_at) - csp_at);
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'sha256-"), std::string::npos) << csp;

  std::string error;
  auto c = Chromium::launch(1400, 1000, &error);
  ASSERT_TRUE(c) << error;
  std::string url = "file://" + std::filesystem::absolute(html).string();
  Chromium::Load load = c->open(url, std::chrono::seconds(60));
  EXPECT_TRUE(load.ready) << "the page said: " << load.ready_state;
  for (const std::string& e : load.errors) ADD_FAILURE() << "console: " << e;
  for (const std::string& req : load.requests) EXPECT_EQ(req, url) << "the page fetched something else";

  // Draw everything, hover every row and cell (the handlers of the old attack), then ask.
  Json seen = c->eval(R"JS((async () => {
    PM.renderAll();
    for (const e of document.querySelectorAll('tr, td, th, canvas, h2, h3, li')) {
      e.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
      e.dispatchEvent(new FocusEvent('focus'));
    }
    window.scrollTo(0, document.body.scrollHeight);
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 300)));
    const onAttrs = [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))
      .filter(n => n.startsWith('on') || n === 'style' && false || n === 'autofocus' || n === 'src' || n === 'href');
    return {
      title: document.title,
      pwned: typeof window.pwned !== 'undefined',
      injected: document.querySelectorAll('img, svg, iframe, object, embed, a, body style, main script').length,
      onAttrs,
      polluted: ({}).polluted !== undefined || ({}).attrs !== undefined || Object.prototype.polluted !== undefined,
      charts: PM.charts.length,
      drawn: PM.charts.filter(ch => ch.points > 0).length,
      rows: document.querySelectorAll('#summary-table tr').length,
      header: document.getElementById('run-header').innerText,
    };
  })())JS");
  std::string want_title = "perf-monitor report:";
  for (const std::string& m : kMarkup) want_title += " " + m;
  want_title = want_title.substr(0, 200) + "...";
  EXPECT_EQ(seen["title"], want_title);
  EXPECT_FALSE(seen["pwned"].get<bool>());
  EXPECT_EQ(seen["injected"], 0) << "an element made from the data's markup";
  EXPECT_TRUE(seen["onAttrs"].empty()) << seen["onAttrs"].dump();
  EXPECT_FALSE(seen["polluted"].get<bool>()) << "Object.prototype was changed";
  EXPECT_GT(seen["charts"].get<int>(), 5);
  EXPECT_EQ(seen["drawn"], seen["charts"]);
  EXPECT_GT(seen["rows"].get<int>(), 10);
  // The markup is shown as the text it is.
  EXPECT_NE(seen["header"].get<std::string>().find(kMarkup[0]), std::string::npos) << seen["header"];
  for (const std::string& e : c->errors()) ADD_FAILURE() << "console after drawing everything: " << e;

  // The data in the page, rebuilt by the page, equals the file, "__proto__" keys and all.
  Json data = Json::parse(c->eval(R"(JSON.stringify({header: PM.data.header, summary: PM.data.summary,
      intervals: PM.records(PM.data.intervals), spans: PM.records(PM.data.spans.kept)}))")
                              .get<std::string>());
  std::vector<Json> intervals, spans;
  for (const Ordered& o : recs) {
    Json j = Json::parse(o.dump());
    if (j["type"] == "header") {
      EXPECT_EQ(data["header"], j);
    }
    if (j["type"] == "summary") {
      EXPECT_EQ(data["summary"], j);
    }
    if (j["type"] == "interval") intervals.push_back(j);
    if (j["type"] == "span") spans.push_back(j);
  }
  EXPECT_EQ(data["intervals"], Json(intervals));
  EXPECT_EQ(data["spans"], Json(spans));

  // The CSP itself: an inline handler put in by hand does not run.
  EXPECT_TRUE(c->eval(R"JS((() => {
    const b = document.createElement('button');
    b.setAttribute('onclick', 'window.cspRan = 1');
    document.body.append(b);
    b.click();
    return window.cspRan === undefined;
  })())JS")
                  .get<bool>());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pm::test
