// SPDX-License-Identifier: Apache-2.0
// How long `perf-monitor report` takes on an hour of live recording at one second (3,600
// intervals), how large the page is, and how long headless Chromium takes to draw it.
//
//   report_bench PERF_MONITOR [SECONDS_OF_TEMPLATE] [WORK_DIR]
//
// The hour is made from a real recording of this host: perf-monitor's live mode records
// SECONDS_OF_TEMPLATE (default 10) one-second intervals; the hour cycles through them with every
// number scaled by its own random factor (0.7 to 1.3, whole numbers kept whole, histogram counts
// re-summed), so the page holds 3,600 different intervals, not ten repeated.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/chromium.h"

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct Child {
  int status = -1;
  double seconds = 0;
  long max_rss_kib = 0;
};

Child run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  std::vector<std::string> copy = args;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto start = Clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* null = std::freopen("/dev/null", "w", stderr);
    (void)null;
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Child c;
  struct rusage ru {};
  ::wait4(pid, &c.status, 0, &ru);
  c.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  c.max_rss_kib = ru.ru_maxrss;
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

bool is_histogram(const Json& j) { return j.is_object() && j.contains("buckets") && j.contains("bucket_base"); }

void perturb(Json& j, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> factor(0.7, 1.3);
  if (is_histogram(j)) {
    double count = 0;
    for (Json& b : j["buckets"]) {
      b = static_cast<uint64_t>(std::llround(b.get<double>() * factor(rng)));
      count += b.get<double>();
    }
    if (j.contains("count")) j["count"] = static_cast<uint64_t>(count);
    if (j.contains("sum") && j["sum"].is_number())
      j["sum"] = std::round(j["sum"].get<double>() * factor(rng) * 1e6) / 1e6;
    return;
  }
  for (auto& [key, v] : j.items()) {
    if (key == "interval_s") continue;
    if (v.is_object()) {
      perturb(v, rng);
    } else if (v.is_number_integer() || v.is_number_unsigned()) {
      v = static_cast<int64_t>(std::llround(v.get<double>() * factor(rng)));
    } else if (v.is_number_float()) {
      v = std::round(v.get<double>() * factor(rng) * 1e6) / 1e6;
    }
  }
}

std::string iso(std::time_t t) {
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: report_bench PERF_MONITOR [SECONDS_OF_TEMPLATE] [WORK_DIR]\n";
    return 2;
  }
  const std::string pm = argv[1];
  const int template_seconds = argc > 2 ? std::atoi(argv[2]) : 10;
  const std::string dir = argc > 3 ? argv[3] : std::filesystem::temp_directory_path() / "pm-report-bench";
  std::filesystem::create_directories(dir);
  const std::string tmpl = dir + "/template.jsonl", hour = dir + "/hour.jsonl", html = dir + "/hour.html";

  std::cout << "recording " << template_seconds << " s of live monitoring as the template...\n";
  Child rec = run({pm, "--format", "json", "-o", tmpl, "--duration", std::to_string(template_seconds) + "s"});
  if (rec.status != 0) {
    std::cerr << "perf-monitor live recording failed\n";
    return 1;
  }
  std::vector<Json> intervals;
  Json header, summary;
  {
    std::ifstream in(tmpl);
    for (std::string line; std::getline(in, line);) {
      Json j = Json::parse(line);
      if (j["type"] == "interval") intervals.push_back(j);
      if (j["type"] == "header") header = j;
      if (j["type"] == "summary") summary = j;
    }
  }
  if (intervals.empty()) {
    std::cerr << "the template has no intervals\n";
    return 1;
  }
  const int n = 3600;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> jitter(-0.002, 0.002);
  std::time_t start = 1'800'000'000;
  {
    std::ofstream out(hour);
    if (!header.is_null()) {
      header["start"] = iso(start);
      out << header.dump() << "\n";
    }
    for (int i = 0; i < n; ++i) {
      Json j = intervals[static_cast<size_t>(i) % intervals.size()];
      perturb(j, rng);
      j["timestamp"] = iso(start + i + 1);
      j["interval_s"] = std::round((1.0 + jitter(rng)) * 1e6) / 1e6;
      out << j.dump() << "\n";
    }
    if (!summary.is_null()) {
      summary["start"] = iso(start);
      summary["end"] = iso(start + n);
      summary["duration_s"] = n;
      out << summary.dump() << "\n";
    }
  }
  const double jsonl_mib = static_cast<double>(std::filesystem::file_size(hour)) / (1 << 20);
  std::printf("recording: %d intervals (cycled from %zu real ones, every number perturbed), %.1f MiB of JSON Lines\n",
              n, intervals.size(), jsonl_mib);

  std::vector<double> report_s;
  long rss = 0;
  for (int r = 0; r < 5; ++r) {
    Child c = run({pm, "report", hour, "-o", html});
    if (c.status != 0) {
      std::cerr << "perf-monitor report failed\n";
      return 1;
    }
    report_s.push_back(c.seconds);
    rss = std::max(rss, c.max_rss_kib);
  }
  const double html_mib = static_cast<double>(std::filesystem::file_size(html)) / (1 << 20);
  std::printf("perf-monitor report: median %.3f s, min %.3f s of 5 (goal < 1 s); peak RSS %.1f MiB (goal <= 50 MiB)\n", median(report_s),
              *std::min_element(report_s.begin(), report_s.end()), static_cast<double>(rss) / 1024);
  std::printf("page: %.2f MiB (goal < 5 MB = %.2f MiB)\n", html_mib, 5e6 / (1 << 20));

  if (!pm::test::Chromium::find()) {
    std::printf("chromium: not installed, render time not measured\n");
    return 0;
  }
  std::vector<double> render_ms, wall_ms, all_ms;
  for (int r = 0; r < 3; ++r) {
    std::string error;
    auto c = pm::test::Chromium::launch(1400, 1000, &error);
    if (!c) {
      std::cerr << error << "\n";
      return 1;
    }
    auto load = c->open("file://" + std::filesystem::absolute(html).string(), std::chrono::seconds(120));
    if (!load.ready || !load.errors.empty()) {
      std::cerr << "the page did not draw: " << load.ready_state << (load.errors.empty() ? "" : " " + load.errors[0])
                << "\n";
      return 1;
    }
    render_ms.push_back(c->eval("PM.renderMs").get<double>());
    wall_ms.push_back(load.wall_ms);
    auto t0 = Clock::now();
    size_t charts = c->eval("PM.renderAll()").get<size_t>();
    all_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (r == 0) std::printf("charts: %zu (some inside closed sections, drawn when opened)\n", charts);
  }
  std::printf(
      "chromium: drawn %.0f ms after navigation began (median of 3; wall clock from navigate to drawn %.0f ms; goal < "
      "3 s); "
      "opening every closed section draws the rest in %.0f ms more\n",
      median(render_ms), median(wall_ms), median(all_ms));
  return 0;
}
