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
#include <map>
#include <regex>
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

// What the intervals hold, from the file: per histogram (its path), whether any interval counted
// a value; per (section, metric), each leaf's values in record order.
struct Held {
  std::map<std::vector<std::string>, bool> hists;
  std::map<std::pair<std::string, std::string>, std::map<std::vector<std::string>, std::vector<double>>> metrics;
};
void walk(const Json& j, std::vector<std::string>& path, Held& held) {
  for (const auto& [k, v] : j.items()) {
    path.push_back(k);
    if (shaped_like_histogram(v)) {
      bool values =
          std::any_of(v["buckets"].begin(), v["buckets"].end(), [](const Json& b) { return b.get<double>() > 0; });
      held.hists[path] = held.hists[path] || values;
    } else if (v.is_object()) {
      walk(v, path, held);
    } else if (v.is_number() && path.size() >= 2) {
      held.metrics[{path[0], path[1]}][path].push_back(v.get<double>());
    }
    path.pop_back();
  }
}

std::string words(std::string s) {
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}
// A chart's title as the recording describes the metric (its help), else its name in words.
std::string title_of(const Json& header, const std::string& section, const std::string& metric) {
  const Json* m = header.is_object() && header.contains("metrics") ? &header["metrics"] : nullptr;
  std::string key = section + "." + metric;
  if (m != nullptr && m->contains(key) && (*m)[key].contains("help")) return (*m)[key]["help"].get<std::string>();
  return words(metric) + " (" + words(section) + ")";
}
// The monitor's own health counters: on the page only where they counted something.
bool health(const std::string& name) {
  static const std::regex re("(^|_)(dropped|overruns?|too_deep|untracked|missed|lost)($|_)");
  return std::regex_search(name, re);
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
    // Titles in words: never a JSON path ("pmc › enabled_seconds"), never a bare name.
    EXPECT_EQ(title.find(" › "), std::string::npos) << title;
    EXPECT_TRUE(title.find(' ') != std::string::npos || title.find('_') == std::string::npos) << title;
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

  // Every histogram that counted something has its heatmap (one that never did has no card);
  // every metric that moved has its chart, titled as the recording describes it; one that never
  // moved is named in its section's "unchanged" line; a health counter that stayed zero is not
  // on the page at all.
  Held held;
  for (const Json& r : intervals) {
    std::vector<std::string> path;
    walk(r, path, held);
  }
  const Json& head = header.empty() ? Json() : header[0];
  for (const auto& [path, values] : held.hists) {
    std::string title = title_of(head, path[0], path[1]);
    for (size_t i = 2; i < path.size(); ++i) title += (i == 2 ? ": " : " ") + path[i];
    EXPECT_EQ(out.titles.count(title), values ? 1u : 0u) << "heatmap of " << path[0] << "." << path[1] << ": " << title;
  }
  std::string unchanged = c.eval("[...document.querySelectorAll('details.unchanged')].map(e => e.textContent).join('\\n')")
                              .get<std::string>();
  for (const auto& [key, leaves] : held.metrics) {
    const auto& [section, metric] = key;
    bool zero = true, constant = intervals.size() > 3;
    for (const auto& [leaf, v] : leaves) {
      for (double x : v) {
        zero = zero && x == 0;
        constant = constant && x == v[0];
      }
      constant = constant && v.size() == intervals.size();
    }
    std::string title = title_of(head, section, metric);
    bool charted = std::any_of(out.titles.begin(), out.titles.end(), [&](const std::string& t) { return t.rfind(title, 0) == 0; });
    if (zero && health(metric)) {
      EXPECT_FALSE(charted) << section << "." << metric << " stayed zero: not shown";
    } else if (zero || constant) {
      EXPECT_NE(unchanged.find(words(metric)), std::string::npos) << section << "." << metric << " in: " << unchanged;
    } else {
      EXPECT_TRUE(charted) << "no chart for " << section << "." << metric << " (" << title << ")";
      EXPECT_TRUE(c.eval("!!document.getElementById('section-" + section + "')").get<bool>()) << section;
    }
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

// --stacks: an on-CPU and an off-CPU flame graph of the run, searchable, and under the slowest
// requests the stack each blocked in; every frame a name from the program, drawn as text.
TEST(ReportPage, StacksAreFlameGraphsAndTheSlowestRequestsSayWhereTheyBlocked) {
  NEED_CHROMIUM();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: --stacks loads BPF programs";
  std::string base = temp_base(), jsonl = base + ".jsonl", html = base + ".html";
  Outcome run = run_pm({"run", "--format", "json", "-o", jsonl, "--stacks", "--stack-rate", "499", "--probe",
                        std::string(PM_SHOP) + ":process_request:arg1", "--", PM_SHOP, "--kind", "mix", "--requests",
                        "60", "--ms", "10", "--dir", scratch_dir()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(report({jsonl, "-o", html}).exit_code, 0);
  auto c = browser();
  ASSERT_TRUE(c);
  check_page(*c, jsonl, html, "stacks.png");
  Json got = c->eval(R"JS((() => {
    const f = PM.flames || {}, out = {};
    for (const k of ['on_cpu', 'off_cpu']) {
      if (!f[k]) continue;
      const frames = [...f[k].box.querySelectorAll('.frame')].map(e => e.textContent);
      f[k].search.value = 'process_request';
      f[k].match();
      out[k] = { frames, matched: f[k].box.querySelectorAll('.frame.match').length,
                 said: f[k].search.parentNode.innerText };
    }
    const b = document.querySelector('.card.blocked');
    out.blocked = b ? b.innerText : '';
    return out;
  })())JS");
  for (const char* k : {"on_cpu", "off_cpu"}) {
    ASSERT_TRUE(got.contains(k)) << k << ": no flame graph";
    auto frames = got[k]["frames"].get<std::vector<std::string>>();
    EXPECT_TRUE(std::any_of(frames.begin(), frames.end(), [](const std::string& f) { return f.find("process_request") != std::string::npos; }))
        << k << ": no frame of process_request";
    EXPECT_GT(got[k]["matched"].get<int>(), 0) << k;
    EXPECT_NE(got[k]["said"].get<std::string>().find("matched:"), std::string::npos) << k;
  }
  EXPECT_NE(got["blocked"].get<std::string>().find("process_request"), std::string::npos) << got["blocked"];
  // shop is built -g: its frames say their lines
  EXPECT_NE(got["blocked"].get<std::string>().find("shop.cpp:"), std::string::npos) << got["blocked"];
  std::filesystem::remove(jsonl);
  std::filesystem::remove(html);
}

// A 1-second command, recorded without -I: its report's first screen (1400 x 900) is the
// answer — the command, how it ended, its wall and CPU time, where its tasks' time went, and a
// timeline of at least 5 points — and no chart on the page is empty.
TEST(ReportPage, ShortRunLeadsWithTheAnswer) {
  NEED_CHROMIUM();
  std::string base = temp_base(), jsonl = base + ".jsonl", html = base + ".html";
  Outcome run = run_pm({"run", "--format", "json", "-o", jsonl, "--", workload(), "cputime", "1000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<Json> records = lines_of(jsonl);
  std::vector<Json> intervals = of_type(records, "interval");
  // The first second in tenths, and the last, partial interval kept: the intervals add up to the run.
  ASSERT_GE(intervals.size(), 5u) << slurp_file(jsonl);
  double recorded = 0;
  for (const Json& i : intervals) recorded += i["interval_s"].get<double>();
  const Json summary = of_type(records, "summary").at(0);
  EXPECT_NEAR(recorded, summary["duration_s"].get<double>(), 0.15);
  const Json header = of_type(records, "header").at(0);
  EXPECT_EQ(header["schema_version"], 3);
  EXPECT_EQ(header["metrics"]["process_tree.on_cpu_seconds"]["unit"], "seconds");
  EXPECT_EQ(header["metrics"]["proc_rss_max"]["unit"], "bytes");

  Outcome r = report({jsonl, "-o", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto c = browser();
  ASSERT_TRUE(c);
  check_page(*c, jsonl, html, "short_run.png");
  Json first = c->eval(R"JS((() => {
    const box = document.getElementById('answer'), text = box ? box.innerText : '';
    const chart = t => { const e = PM.charts.find(c => c.title === t); if (!e) return null;
      const r = e.canvas.getBoundingClientRect(); return { bottom: r.bottom + window.scrollY, points: e.points, datasets: e.datasets }; };
    const r = box ? box.getBoundingClientRect() : null;
    return { text, top: r ? r.top + window.scrollY : -1, bottom: r ? r.bottom + window.scrollY : -1,
             split: chart('time split'), timeline: chart('tree timeline') };
  })())JS");
  std::string text = first["text"].get<std::string>();
  for (std::string want : {std::string("pm-workload cputime 1000"), std::string("exit status 0"), std::string("wall time"),
                           std::string("CPU"), std::string("peak memory")}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << " not in:\n" << text;
  }
  EXPECT_GE(first["top"].get<double>(), 0) << "no answer box";
  EXPECT_LE(first["bottom"].get<double>(), 900) << "the answer is below the first screen";
  ASSERT_TRUE(first["split"].is_object()) << first.dump();
  ASSERT_TRUE(first["timeline"].is_object()) << first.dump();
  EXPECT_LE(first["split"]["bottom"].get<double>(), 900) << "the time split is below the first screen";
  EXPECT_LE(first["timeline"]["bottom"].get<double>(), 900) << "the timeline is below the first screen";
  EXPECT_GE(first["timeline"]["points"].get<double>() / first["timeline"]["datasets"].get<double>(), 5);
  EXPECT_EQ(first["split"]["datasets"], 3);  // on CPU, run queue, blocked
  // A health counter that stayed zero is nowhere on the page, not even in the warnings.
  EXPECT_FALSE(c->eval("!!document.getElementById('warnings')").get<bool>());

  // The same recording with ticks missed in one interval: the loss is said at the top, and the
  // counter that saw it has its chart.
  std::string lossy = base + "-lossy.jsonl", lossy_html = base + "-lossy.html";
  {
    std::ofstream out(lossy);
    int n = 0;
    for (Json rec : records) {
      if (rec.value("type", "") == "interval" && ++n == 3) rec["self"]["missed_ticks"] = 4;
      out << rec.dump() << "\n";
    }
  }
  ASSERT_EQ(report({lossy, "-o", lossy_html}).exit_code, 0);
  Checked page = check_page(*c, lossy, lossy_html, "short_run_lossy.png");
  Json warn = c->eval(R"JS((() => { const w = document.getElementById('warnings');
    return w ? { text: w.innerText, top: w.getBoundingClientRect().top + window.scrollY } : null; })())JS");
  ASSERT_TRUE(warn.is_object()) << "no warning for the missed ticks";
  EXPECT_NE(warn["text"].get<std::string>().find("missed ticks 4"), std::string::npos) << warn.dump();
  EXPECT_LE(warn["top"].get<double>(), 850) << "the loss is not said on the first screen";
  EXPECT_TRUE(std::any_of(page.titles.begin(), page.titles.end(),
                          [](const std::string& t) { return t.find("missed") != std::string::npos || t.find("Missed") != std::string::npos; }))
      << "no chart for the missed ticks";
  std::filesystem::remove(jsonl);
  std::filesystem::remove(html);
  std::filesystem::remove(lossy);
  std::filesystem::remove(lossy_html);
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

  // Who used the machine: per process and per cgroup, the recording's top lists summed over the
  // intervals, here from the file.
  struct Sum {
    double cpu = 0, runq = 0, blocked = 0, io = 0, faults = 0;
    int intervals = 0;
  };
  std::map<std::string, Sum> procs, cgroups;
  auto add = [](std::map<std::string, Sum>& into, const std::string& key, const Json& row) {
    auto num = [&](const char* f) { return row.contains(f) && row[f].is_number() ? row[f].get<double>() : 0.0; };
    Sum& t = into[key];
    ++t.intervals;
    t.cpu += num("cpu_user_s") + num("cpu_system_s");
    t.runq += num("runq_s");
    t.blocked += num("blocked_s");
    t.io += num("io_read_bytes") + num("io_write_bytes");
    t.faults += num("page_faults");
  };
  for (const Json& rec : of_type(lines_of(jsonl), "interval")) {
    if (!rec.contains("top")) continue;
    for (const Json& p : rec["top"].value("processes", Json::array()))
      add(procs, std::to_string(p["pid"].get<int>()) + " " + p.value("comm", ""), p);
    for (const Json& g : rec["top"].value("cgroups", Json::array()))
      add(cgroups, g.value("cgroup", "") + (g.value("with_descendants", false) ? " (with its descendants)" : ""), g);
  }
  ASSERT_FALSE(procs.empty()) << "the live recording has no top lists";
  ASSERT_FALSE(cgroups.empty());
  Json who = c->eval("JSON.stringify({p: PM.who.processes, g: PM.who.cgroups, rows: document.querySelectorAll('#who-processes tr').length, grows: document.querySelectorAll('#who-cgroups tr').length, first: document.querySelector('#who-processes tr:nth-child(2) td').textContent})");
  Json w = Json::parse(who.get<std::string>());
  auto same = [](const std::map<std::string, Sum>& want, const Json& got, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (const Json& row : got) {
      std::string key = row["key"].get<std::string>();
      ASSERT_TRUE(want.count(key)) << what << ": " << key;
      const Sum& t = want.at(key);
      EXPECT_NEAR(row["cpu_s"].get<double>(), t.cpu, 1e-9) << key;
      EXPECT_NEAR(row["runq_s"].get<double>(), t.runq, 1e-9) << key;
      EXPECT_NEAR(row["blocked_s"].get<double>(), t.blocked, 1e-9) << key;
      EXPECT_NEAR(row["io_bytes"].get<double>(), t.io, 1e-3) << key;
      EXPECT_NEAR(row["faults"].get<double>(), t.faults, 1e-9) << key;
      EXPECT_EQ(row["intervals"].get<int>(), t.intervals) << key;
    }
  };
  same(procs, w["p"], "processes");
  same(cgroups, w["g"], "cgroups");
  // The tables: a header row and at most 20 rows, the busiest first.
  EXPECT_EQ(w["rows"].get<size_t>(), 1 + std::min<size_t>(20, procs.size()));
  EXPECT_EQ(w["grows"].get<size_t>(), 1 + std::min<size_t>(20, cgroups.size()));
  auto busiest = std::max_element(procs.begin(), procs.end(), [](const auto& a, const auto& b) { return a.second.cpu < b.second.cpu; });
  EXPECT_EQ(w["first"].get<std::string>(), busiest->first.substr(0, busiest->first.find(' ')));
  EXPECT_TRUE(page.titles.count("busiest processes"));
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
        const h = PM.heatmaps.find(h => h.title === 'runq latency seconds (scheduler)');
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
  // Each renamed section is on the page under its own name; its charts are titled from their
  // paths. (A section whose every figure stayed the same, as the CPU's can on a machine kept
  // fully busy by other work, is one "unchanged" line instead of charts.)
  EXPECT_TRUE(c->eval("document.getElementById('section-cpu_v99') !== null").get<bool>());
  EXPECT_TRUE(std::any_of(page.titles.begin(), page.titles.end(),
                          [](const std::string& t) { return t.find(" v99)") != std::string::npos; }));
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
  // Every figure is a row: the leading table's, or the folded table's (each table with its header row).
  EXPECT_EQ(c->eval("document.querySelectorAll('#comparison-table tr, #folded-table tr').length").get<size_t>(),
            cmp["figures"].size() +
                c->eval("document.querySelectorAll('#comparison-table, #folded-table').length").get<size_t>());
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
