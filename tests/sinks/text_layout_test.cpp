// SPDX-License-Identifier: Apache-2.0
// The text output is laid out by the sources (core/text_layout.h). These tests read the real
// sources on captured /proc and /sys trees (tests/fixtures) and check that every metric a source
// reads is laid out by it — nothing falls to the generic line, nothing read shows as "n/a" — and
// that sections from several sources share one line.
#include "core/text_layout.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <unistd.h>

#include "core/aggregator.h"
#include "core/output.h"
#include "sinks/sink.h"
#include "sources/files/system_sources.h"
#include "sources/tree/tree_source.h"
#include "capture.h"

namespace pm {
namespace {

using std::chrono::seconds;
const MonoClock::time_point layout_t0{seconds(100)};

using test::contents;

// The interval block and the summary the text sink writes for these samples, read twice a second
// apart, counters at half their value the first time (so they moved).
std::string text_of(const Samples& samples, const std::string& mode = "system",
                    const std::vector<RatioRule>& ratios = {}) {
  Samples first = samples;
  for (Sample& s : first) {
    if (s.desc->kind == MetricKind::kCounter) s.value /= 2;
  }
  Aggregator agg;
  for (const RatioRule& r : ratios) agg.add_ratio(r);
  agg.observe(first, layout_t0);
  agg.observe(samples, layout_t0 + seconds(1));
  std::FILE* f = std::tmpfile();
  Output out = Output::to_fd(fileno(f), "a tmpfile");
  auto sink = make_text_sink(out);
  sink->interval(agg.close_interval(layout_t0 + seconds(1)));
  RunInfo info;
  info.mode = mode;
  info.end_reason = "duration";
  sink->summary(agg.summary(layout_t0 + seconds(1)), info, {});
  std::string s = contents(f);
  std::fclose(f);
  return s;
}

// A generic item: "name=value" or "name{labels}=value", what the sink prints for a value no
// layout showed.
const std::regex kGeneric(R"( [a-z0-9_]+(\{[^}]*\})?=)");

Samples read_all(std::initializer_list<Result<std::unique_ptr<Source>>*> sources, std::vector<RatioRule>& ratios) {
  Samples out;
  for (auto* src : sources) {
    EXPECT_TRUE(src->ok()) << (src->ok() ? "" : src->error().message);
    if (!src->ok()) continue;
    (**src)->collect(out);
    for (const RatioRule& r : (**src)->ratios()) ratios.push_back(r);
  }
  return out;
}

TEST(TextLayout, FileSourcesLayOutEveryMetricTheyRead) {
  FsRoots roots{PM_FIXTURES_DIR "/proc", PM_FIXTURES_DIR "/sys"};
  auto cpu = make_cpu_source(roots);
  auto memory = make_memory_source(roots);
  auto pressure = make_pressure_source(roots);
  auto numa = make_numa_source(roots);
  auto thermal = make_thermal_source(roots);
  std::vector<RatioRule> ratios;
  Samples samples = read_all({&cpu, &memory, &pressure, &numa, &thermal}, ratios);
  ASSERT_FALSE(samples.empty());
  for (const Sample& s : samples) {
    EXPECT_TRUE(s.desc->text != nullptr || s.desc->denominator)
        << s.desc->family << "." << s.desc->name << " has no text layout";
  }
  std::string text = text_of(samples, "system", ratios);
  EXPECT_FALSE(std::regex_search(text, kGeneric)) << "a metric no layout shows:\n" << text;
  EXPECT_EQ(text.find("n/a"), std::string::npos) << "a metric a layout shows was not read:\n" << text;
  // The reader's words, one line per section.
  for (const char* want :
       {"\ncpu      user ", "\n         busy: cpu0 ", "\nsched    switches ", "  forks ", "  load 0.02 0.04 0.01",
        "\nmemory   used ", "\npaging   faults ", "\npsi      cpu some ", "\nnuma     node0: ", "\nthermal  "}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << " in\n" << text;
  }
  // Each section label once per block (the interval, the summary).
  std::smatch m;
  std::string rest = text;
  int sched = 0;
  while (std::regex_search(rest, m, std::regex("\nsched "))) {
    ++sched;
    rest = m.suffix();
  }
  EXPECT_EQ(sched, 2) << text;
}

// A stall share is of the interval: at most 100 %, though the kernel's totals (aggregated lazily
// per CPU) can move a little more than the wall clock over a short interval, as they do here.
TEST(TextLayout, StallSharesAreAtMostTheInterval) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("pm-psi-" + std::to_string(::getpid()));
  fs::create_directories(root / "proc/pressure");
  // Read twice, the second at twice the first: 1.1 s and 0.3 s of stall in the 1 s between.
  std::ofstream(root / "proc/pressure/cpu") << "some avg10=0.00 avg60=0.00 avg300=0.00 total=2200000\n"
                                               "full avg10=0.00 avg60=0.00 avg300=0.00 total=600000\n";
  auto pressure = make_pressure_source(FsRoots{(root / "proc").string(), (root / "sys").string()});
  std::vector<RatioRule> ratios;
  std::string text = text_of(read_all({&pressure}, ratios), "system", ratios);
  fs::remove_all(root);
  EXPECT_NE(text.find("\npsi      cpu some 100.0% full 30.0%"), std::string::npos) << text;
  EXPECT_EQ(text.find("110.0%"), std::string::npos) << text;
}

TEST(TextLayout, TreeShowsEveryFigureAndWhatWasNotReadAsNa) {
  TreeFigures f;
  f.processes_seen = 3;
  f.processes = 2;
  f.threads = 4;
  f.vm_size = 64 << 20;
  f.rss = 8 << 20;
  f.pss = 6 << 20;
  f.shared = 2 << 20;
  f.anon = 4 << 20;
  f.has_times = true;
  f.not_followed = 0;
  using F = TaskFig;
  for (auto [i, v] : {std::pair{F::kUser, 1.5}, std::pair{F::kSystem, 0.5}, std::pair{F::kMinorFaults, 100.0},
                      std::pair{F::kMajorFaults, 1.0}, std::pair{F::kVoluntary, 10.0}, std::pair{F::kInvoluntary, 5.0},
                      std::pair{F::kReadBytes, 4096.0}, std::pair{F::kWriteBytes, 8192.0}, std::pair{F::kRchar, 100.0},
                      std::pair{F::kWchar, 200.0}, std::pair{F::kOnCpu, 2.0}, std::pair{F::kRunq, 0.1},
                      std::pair{F::kBlocked, 0.4}}) {
    f.counters[i] = v;
  }
  Samples all;
  append_tree_samples(f, all);
  std::string text = text_of(all, "run");
  EXPECT_FALSE(std::regex_search(text, kGeneric)) << text;
  EXPECT_EQ(text.find("n/a"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n +PSS +max +6\.0 MiB +min +6\.0 MiB\n)"))) << text;
  EXPECT_NE(text.find("time     on CPU 1.00 s  run queue 50 ms  blocked 200 ms"), std::string::npos) << text;

  // Not read (no permission for smaps_rollup and io): n/a, never 0.
  f.pss.reset();
  f.shared.reset();
  f.io_known = false;
  Samples partial;
  append_tree_samples(f, partial);
  text = text_of(partial, "run");
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n +PSS +max +n/a +min +n/a\n)"))) << text;
  EXPECT_NE(text.find("storage read n/a  write n/a"), std::string::npos) << text;
  EXPECT_EQ(text.find(" 0 B"), std::string::npos) << text;
}

// Two layouts (two sources) add to one section: one line, items in their order.
void first_layout(TextBlock& b) { b.item(20, "sched", "wakeups 3/s"); }
void second_layout(TextBlock& b) {
  b.item(10, "sched", "switches 5/s");
  b.line(30, "sched", "per CPU ...");
  b.item(5, "cpu", "user 1.0%");
}

TEST(TextLayout, ItemsOfOneSectionShareALine) {
  TextBlock b(false, 1);
  first_layout(b);
  second_layout(b);
  EXPECT_EQ(b.render(0, 1000), "cpu      user 1.0%\nsched    switches 5/s  wakeups 3/s\n         per CPU ...\n");
}

const MetricDesc kA = shown_by(first_layout, {"x", "a", MetricKind::kCounter});
const MetricDesc kB = shown_by(second_layout, ranked(3, {"x", "a", MetricKind::kCounter, Unit::kNone, ""}));

TEST(TextLayout, ALayoutTakesAQuantityOnceAndHigherRanksGoFirst) {
  TextBlock b(false, 1);
  Labels none;
  b.add({&kA, &none, 1});
  b.add({&kA, &none, 2});
  b.add({&kB, &none, 3});
  // The quantity is family and name: either source's descriptor finds it.
  std::vector<TextLayout> order = b.layouts();
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], &second_layout);  // rank 3 first
  const Shown* v = b.take(kB);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->value, 1);
  EXPECT_EQ(b.take_all(kA).size(), 2u);  // the rest
  EXPECT_EQ(b.take(kA), nullptr);        // each series is shown once
  EXPECT_TRUE(b.unshown().empty());
}

TEST(TextLayout, UnitsForPeople) {
  EXPECT_EQ(human_bytes(std::nan("")), "n/a");
  EXPECT_EQ(human_time(std::nan("")), "n/a");
  EXPECT_EQ(human_count(std::nan("")), "n/a");
  EXPECT_EQ(human_time(1.9989), "2.00 s");
  EXPECT_EQ(human_time(0.0031), "3.1 ms");
  EXPECT_EQ(below_time(std::nan("")), "-");
  EXPECT_EQ(per_s(4821.2), "4821/s");
  EXPECT_EQ(bytes_per_s(1536), "1.5 KiB/s");
}

}  // namespace
}  // namespace pm
