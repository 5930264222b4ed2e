// SPDX-License-Identifier: Apache-2.0
// Functions found by the names people give them, on real binaries: a Rust program
// (tests/workloads/hcrust.rs) built here with rustc in both manglings, and C++ as g++ -O2 emits
// it (tests/workloads/clones.cpp: a .cold fragment, a template, clones). The truths: rustfilt's
// and c++filt's demangling of every symbol, and the programs' own counts and clocks.
#include <fcntl.h>
#include <glob.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "core/fd.h"
#include "integration/harness.h"
#include "sources/probes/symbols.h"

namespace pm::test {
namespace {

const std::string kClones = PM_CLONES;

// hcrust built once per mangling (a second of rustc each), in the scratch directory.
const RustBuild& rust_build() {
  static const RustBuild b = build_rust(PM_HCRUST_SOURCE, "hcrust");
  return b;
}

// Every Rust function symbol of `path`: demangle() against rustfilt.
void expect_rustfilt_agrees(const std::string& path, const std::string& rustfilt, size_t at_least) {
  auto syms = probes::read_function_symbols(path);
  ASSERT_TRUE(syms.ok()) << syms.error().message;
  static const std::regex legacy("_ZN.*17h[0-9a-f]{16}E");
  std::vector<std::string> names;
  for (const auto& s : *syms) {
    if (s.name.starts_with("_R") || std::regex_match(s.name, legacy)) names.push_back(s.name);
  }
  ASSERT_GE(names.size(), at_least) << path;
  std::string in = temp_base() + "syms", out = in + ".rustfilt";
  {
    std::ofstream f(in);
    for (const auto& n : names) f << n << "\n";
  }
  ASSERT_EQ(run_shell(rustfilt + " -i " + in + " -o " + out), 0);
  std::ifstream f(out);
  std::string line;
  size_t i = 0, differ = 0;
  while (std::getline(f, line) && i < names.size()) {
    if (probes::demangle(names[i]) != line && ++differ <= 5) {
      ADD_FAILURE() << names[i] << ": ours " << probes::demangle(names[i]) << ", rustfilt " << line;
    }
    ++i;
  }
  EXPECT_EQ(i, names.size());
  EXPECT_EQ(differ, 0u) << "of " << names.size() << " in " << path;
}

TEST(RustNames, DemanglingAgreesWithRustfiltInBothManglingsAndTheStandardLibrary) {
  const RustBuild& b = rust_build();
  ASSERT_TRUE(b.error.empty()) << b.error;
  std::string rustfilt = find_tool("rustfilt", "rustfilt");
  ASSERT_FALSE(rustfilt.empty()) << "no rustfilt, and apt-get install rustfilt failed";
  expect_rustfilt_agrees(b.legacy, rustfilt, 100);
  expect_rustfilt_agrees(b.v0, rustfilt, 100);
  // The standard library shipped with the compiler (a shared library in the sysroot).
  std::string sysroot = first_line(b.rustc + " --print sysroot");
  std::string libstd = first_file(sysroot + "/lib/rustlib/*/lib/libstd-*.so");
  ASSERT_FALSE(libstd.empty()) << "no libstd-*.so under " << sysroot;
  expect_rustfilt_agrees(libstd, rustfilt, 1000);
}

TEST(CxxNames, DemanglingAgreesWithCxxfilt) {
  std::string cxxfilt = find_tool("c++filt", "binutils");
  ASSERT_FALSE(cxxfilt.empty());
  std::string libstdcxx = first_file("/usr/lib/*-linux-gnu/libstdc++.so.6");
  ASSERT_FALSE(libstdcxx.empty());
  for (const std::string& path : {kClones, libstdcxx}) {
    auto syms = probes::read_function_symbols(path);
    ASSERT_TRUE(syms.ok()) << syms.error().message;
    std::string in = temp_base() + "cxx", out = in + ".cxxfilt";
    std::vector<std::string> names;
    std::ofstream f(in);
    for (const auto& s : *syms) {
      if (!s.name.starts_with("_Z")) continue;
      names.push_back(s.name);
      f << s.name << "\n";
    }
    f.close();
    ASSERT_GE(names.size(), path == kClones ? 5u : 1000u) << path;
    // -i: without "implementation details" (std::string, not std::basic_string<char, ...>), as
    // __cxa_demangle and gdb print them.
    ASSERT_EQ(run_shell(cxxfilt + " -i < " + in + " > " + out), 0);
    std::ifstream r(out);
    std::string line;
    size_t i = 0, differ = 0;
    while (std::getline(r, line) && i < names.size()) {
      if (probes::demangle(names[i]) != line && ++differ <= 5) ADD_FAILURE() << names[i] << " -> " << line;
      ++i;
    }
    EXPECT_EQ(i, names.size());
    EXPECT_EQ(differ, 0u) << "of " << names.size() << " in " << path;
  }
}

class NamedProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: attaching uprobes and loading BPF programs";
  }
  static Outcome run(const std::vector<std::string>& probes, const std::vector<std::string>& command,
                     const std::string& format = "json") {
    std::vector<std::string> args = {"run", "--format", format};
    for (const std::string& p : probes) args.insert(args.end(), {"--probe", p});
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return run_pm(args);
  }
  static double calls(const Outcome& o, const std::string& function) {
    if (o.summary.is_null() || !o.summary["probe"]["calls"].contains(function)) return -1;
    return o.summary["probe"]["calls"][function].get<double>();
  }
  static std::vector<nlohmann::json> spans(const Outcome& o, const std::string& function) {
    std::vector<nlohmann::json> out;
    for (const auto& r : o.records) {
      if (r["type"] == "span" && r["function"] == function) out.push_back(r);
    }
    return out;
  }
};

constexpr int kRequests = 40;
constexpr int kSpinUs = 2000;

TEST_F(NamedProbeTest, RustFunctionsAreProbedByTheirNamesInBothManglings) {
  const RustBuild& b = rust_build();
  ASSERT_TRUE(b.error.empty()) << b.error;
  for (const std::string& bin : {b.legacy, b.v0}) {
    SCOPED_TRACE(bin);
    // A generic function's instances: named by the path alone, perf-monitor lists them, with
    // the name that picks each.
    Outcome generic = run({bin + ":app::scale"}, {bin, "1"});
    EXPECT_EQ(generic.exit_code, 2);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(generic.err, m, std::regex("generic function\\): ([^;]+); ([^ ]+) \\(probe one")))
        << generic.err;
    std::string instance = m[1];
    // Everything at once: a module function with its request ID (by its path, and with the
    // crate: the same function, probed once — another function would be a series of its own),
    // a trait method by its impl path, one instance, a closure, an async fn (its poll function).
    // Before Rust 1.67 an async fn's body was inlined into the one generic
    // <GenFuture<T> as Future>::poll, whose legacy name does not say which fn: not probed there.
    bool gen_future = run_shell("nm " + bin + " | grep -q GenFuture") == 0;
    if (gen_future) std::fprintf(stderr, "rust_probe_test: this rustc wraps async fns in GenFuture: not probed\n");
    std::vector<std::string> probes = {
        bin + ":app::handler::process_request:arg1", bin + ":hcrust::app::handler::process_request:arg1",
        bin + ":<app::Server as app::Handler>::handle", bin + ":" + instance, bin + ":app::apply::{closure#0}"};
    if (!gen_future) probes.push_back(bin + ":app::fetch");
    Outcome o = run(probes, {bin, std::to_string(kRequests), std::to_string(kSpinUs)});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    if (!gen_future) {
      EXPECT_NE(
          o.err.find("--probe: 'app::fetch' is an async fn: probing its future's poll function hcrust::app::fetch::{"),
          std::string::npos)
          << o.err;
      EXPECT_EQ(calls(o, bin == b.legacy ? "hcrust::app::fetch::{{closure}}" : "hcrust::app::fetch::{closure#0}"),
                kRequests);
    }
    const std::string process = "hcrust::app::handler::process_request";
    EXPECT_EQ(calls(o, process), kRequests);
    EXPECT_EQ(calls(o, "<hcrust::app::Server as hcrust::app::Handler>::handle"), kRequests);
    EXPECT_EQ(calls(o, instance), kRequests) << o.summary["probe"]["calls"].dump();
    bool legacy = bin == b.legacy;
    EXPECT_EQ(calls(o, legacy ? "hcrust::app::apply::{{closure}}" : "hcrust::app::apply::{closure#0}"), kRequests);
    // Each request ID once; each call's time against the program's own clock around it (the
    // same CLOCK_MONOTONIC). The probe's interval lies inside the program's, so it is never
    // longer; it is shorter by the two traps, and by a preemption that lands between the
    // program's clock read and the probe's — under load that can be milliseconds for one call,
    // so closeness is asked of three calls in four.
    std::map<uint64_t, double> own;
    const std::regex own_line("own (\\d+) (\\d+)");
    for (std::sregex_iterator it(o.out.begin(), o.out.end(), own_line), end; it != end; ++it) {
      own[std::stoull((*it)[1])] = std::stod((*it)[2]) / 1e9;
    }
    ASSERT_EQ(own.size(), static_cast<size_t>(kRequests)) << o.out;
    std::map<uint64_t, int> ids;
    int close = 0;
    for (const auto& s : spans(o, process)) {
      uint64_t id = s["request_id"].get<uint64_t>();
      ++ids[id];
      double latency = s["latency_s"].get<double>();
      ASSERT_TRUE(own.contains(id)) << "request ID " << id;
      EXPECT_LE(latency, own[id] + 1e-6) << "request " << id << ": the probe's time is longer than the program's";
      EXPECT_GE(latency, kSpinUs * 1e-6) << "request " << id << ": shorter than its spin";
      if (own[id] - latency < 100e-6) ++close;
    }
    EXPECT_EQ(ids.size(), static_cast<size_t>(kRequests));
    EXPECT_EQ(ids.begin()->first, 1u);
    EXPECT_EQ(ids.rbegin()->first, static_cast<uint64_t>(kRequests));
    EXPECT_GE(close, kRequests * 3 / 4) << "calls within 100 us of the program's own clock";
    ASSERT_TRUE(std::regex_search(o.out, m, std::regex("calls (\\d+) busy_s ([0-9.]+)"))) << o.out;
    EXPECT_EQ(std::stoi(m[1]), kRequests);
    EXPECT_EQ(o.summary["probe"]["calls"].size(), gen_future ? 4u : 5u) << o.summary["probe"]["calls"].dump();
  }
}

// The text summary: a function never called shows 0 calls (no nan), and no quantile is shown
// above the longest call.
TEST_F(NamedProbeTest, TheSummaryShowsNoNanAndNoQuantileAboveTheMaximum) {
  const RustBuild& b = rust_build();
  ASSERT_TRUE(b.error.empty()) << b.error;
  Outcome o = run({b.v0 + ":app::handler::process_request", b.v0 + ":app::rare"}, {b.v0, "30", "1500"}, "text");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.report.find("nan"), std::string::npos) << o.report;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.report, m, std::regex("hcrust::app::rare\\s+0  \\(0 calls"))) << o.report;
  // "hcrust::app::handler::process_request   30  < 2.1 ms  <= 1.9 ms ..." (the name may be
  // wider than its column).
  ASSERT_TRUE(
      std::regex_search(o.report, m,
                        std::regex("process_request\\s+30\\s+(<=?) ([0-9.]+ [mun]?s)\\s+(<=?) ([0-9.]+ [mun]?s)\\s+"
                                   "(<=?) ([0-9.]+ [mun]?s)\\s+([0-9.]+ [mun]?s)")))
      << o.report;
  auto seconds = [](std::string t) {
    double v = std::stod(t);
    if (t.ends_with(" ms")) return v * 1e-3;
    if (t.ends_with(" us")) return v * 1e-6;
    if (t.ends_with(" ns")) return v * 1e-9;
    return v;
  };
  double max = seconds(m[7]);
  EXPECT_GE(max, 1.5e-3);
  for (int q : {2, 4, 6}) EXPECT_LE(seconds(m[q]), max * 1.0001) << m[0];
}

// C++ as g++ -O2 emits it: the function, not its .cold fragment; a template by its parameters.
TEST_F(NamedProbeTest, GccFunctionsAreProbedAtTheirEntry) {
  // handle writes and fsyncs a file in each call: fsync, probed without an ID of its own, runs
  // inside handle's call and carries handle's request ID (its arg2).
  std::string file = temp_base() + "-fsync";
  Outcome o = run({kClones + ":billing::Engine::handle:arg2", kClones + ":shop::twice<long>(long)", kClones + ":scaled",
                   "libc.so.6:fsync"},
                  {kClones, std::to_string(kRequests), file});
  ::unlink(file.c_str());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(calls(o, "billing::Engine::handle"), kRequests) << o.summary["probe"]["calls"].dump();
  EXPECT_EQ(calls(o, "shop::twice<long>"), kRequests);
  EXPECT_EQ(calls(o, "scaled"), kRequests);  // its only copy is a .constprop clone
  EXPECT_EQ(calls(o, "fsync"), kRequests);
  std::map<uint64_t, int> ids, nested;
  for (const auto& s : spans(o, "billing::Engine::handle")) ++ids[s["request_id"].get<uint64_t>()];
  for (const auto& s : spans(o, "fsync")) ++nested[s.value("request_id", uint64_t{0})];
  EXPECT_EQ(ids.size(), static_cast<size_t>(kRequests));
  EXPECT_EQ(ids.begin()->first, 1u);
  EXPECT_EQ(ids.rbegin()->first, static_cast<uint64_t>(kRequests));
  EXPECT_EQ(nested, ids) << "fsync's request IDs are handle's, each once";
  // What is left of an inlined function is refused with why.
  Outcome inlined = run({kClones + ":lookup"}, {kClones, "1"});
  EXPECT_EQ(inlined.exit_code, 2);
  EXPECT_NE(inlined.err.find("it was inlined into its callers"), std::string::npos) << inlined.err;
}

// A function inlined into every caller has no symbol: the error says so, and where, from DWARF
// (clones.cpp's tiny, inlined into main at the line that says so).
TEST_F(NamedProbeTest, AFullyInlinedFunctionSaysWhereItWasInlined) {
  std::ifstream src(PM_CLONES_SOURCE);
  std::string line;
  int at = 0;
  for (int n = 1; std::getline(src, line); ++n) {
    if (line.find("// the call tiny is inlined at") != std::string::npos) at = n;
  }
  ASSERT_GT(at, 0);
  Outcome o = run({kClones + ":tiny"}, {kClones, "1"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("'tiny' has no symbol in " + kClones + ": it was inlined into every caller, into main (clones.cpp:" +
                       std::to_string(at) + ")"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "one line: " << o.err;
}

// A stripped binary whose symbols are in a separate debug file, where Debian's -dbgsym packages
// put them (/usr/lib/debug/.build-id/xx/yyyy.debug), or beside it by .gnu_debuglink.
TEST_F(NamedProbeTest, AStrippedBinaryIsProbedByNameThroughItsDebugFile) {
  std::string objcopy = find_tool("objcopy", "binutils");
  ASSERT_FALSE(objcopy.empty());
  std::string dir = temp_base() + "-strip";
  ASSERT_EQ(run_shell("mkdir -p " + dir), 0);
  std::string bin = dir + "/pm-clones", debug = dir + "/pm-clones.debug";
  ASSERT_EQ(run_shell(objcopy + " --only-keep-debug " + kClones + " " + debug + " && " + objcopy +
               " --strip-all --add-gnu-debuglink=" + debug + " " + kClones + " " + bin),
            0);
  // Stripped and without its debug file: refused, and the error says where it looked.
  ASSERT_EQ(run_shell("mv " + debug + " " + dir + "/moved.debug"), 0);
  Outcome none = run({bin + ":billing::Engine::handle"}, {bin, "1"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("stripped"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("/usr/lib/debug/.build-id/"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("pm-clones.debug"), std::string::npos) << none.err;
  // Beside it, by .gnu_debuglink (its CRC checked).
  ASSERT_EQ(run_shell("mv " + dir + "/moved.debug " + debug), 0);
  Outcome beside = run({bin + ":billing::Engine::handle"}, {bin, std::to_string(kRequests)});
  EXPECT_EQ(beside.exit_code, 0) << beside.err;
  EXPECT_EQ(calls(beside, "billing::Engine::handle"), kRequests) << beside.err;
  // Under /usr/lib/debug/.build-id/, by its build ID (a file of another build there is not used).
  std::string id = first_line("readelf -n " + bin + " | sed -n 's/.*Build ID: //p'");
  ASSERT_GE(id.size(), 8u) << "pm-clones has no build ID";
  std::string by_id = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  bool existed = ::access(by_id.c_str(), F_OK) == 0;
  ASSERT_FALSE(existed) << by_id << " exists already";
  ASSERT_EQ(run_shell("mkdir -p $(dirname " + by_id + ") && mv " + debug + " " + by_id), 0);
  Outcome found = run({bin + ":billing::Engine::handle", bin + ":shop::twice<long>(long)"},
                      {bin, std::to_string(kRequests)});
  ::unlink(by_id.c_str());
  EXPECT_EQ(found.exit_code, 0) << found.err;
  EXPECT_EQ(calls(found, "billing::Engine::handle"), kRequests) << found.err;
  EXPECT_EQ(calls(found, "shop::twice<long>"), kRequests) << found.err;
  run_shell("rm -rf " + dir);
}

}  // namespace
}  // namespace pm::test
