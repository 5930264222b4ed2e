// SPDX-License-Identifier: Apache-2.0
// --stacks against independent truths: workloads built -O2 without frame pointers that block in
// (stack_blocker) and burn CPU in (stack_cpu, in C++ and in Rust with both manglings) known
// functions and time themselves with their threads' clocks; `perf record --call-graph dwarf` on
// the same execution; the npm registry's pprof-format decoder reading the pprof files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

using Json = nlohmann::json;

void need_root() {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: loading BPF programs";
#if !defined(__x86_64__)
  GTEST_SKIP() << "user stacks are unwound for x86-64 only";
#endif
}

// "key a=1 b=2" in a program's output: {a: 1, b: 2}.
std::map<std::string, double> figures(const std::string& text, const std::string& key) {
  std::map<std::string, double> out;
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(key + " ([^\n]*)"))) return out;
  std::string line = m[1];
  std::regex kv("([A-Za-z_]+)=([0-9]+)");
  for (auto it = std::sregex_iterator(line.begin(), line.end(), kv); it != std::sregex_iterator(); ++it) {
    out[(*it)[1]] = std::stod((*it)[2]);
  }
  return out;
}

struct FoldedLine {
  std::vector<std::string> frames;
  uint64_t value = 0;
};

std::vector<FoldedLine> read_folded(const std::string& path) {
  std::vector<FoldedLine> out;
  std::istringstream in(slurp(path));
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.rfind(' ');
    EXPECT_NE(sp, std::string::npos) << line;
    if (sp == std::string::npos) continue;
    FoldedLine f;
    f.value = std::stoull(line.substr(sp + 1));
    std::string stack = line.substr(0, sp);
    size_t at = 0;
    while (true) {
      size_t semi = stack.find(';', at);
      f.frames.push_back(stack.substr(at, semi - at));
      if (semi == std::string::npos) break;
      at = semi + 1;
    }
    out.push_back(std::move(f));
  }
  return out;
}

// A program's thread name (comm): its file's name, cut to 15 bytes.
std::string comm_of(const std::string& path) { return path.substr(path.rfind('/') + 1).substr(0, 15); }

bool has_frame(const std::vector<std::string>& frames, const std::string& name) {
  return std::find(frames.begin(), frames.end(), name) != frames.end();
}

// Per function (the first of `names` a stack holds, innermost wins), the value of the stacks
// whose root frame (the thread's name) is `thread`; "" for those holding none of them.
std::map<std::string, double> by_function(const std::vector<FoldedLine>& lines, const std::string& thread,
                                          const std::vector<std::string>& names) {
  std::map<std::string, double> out;
  for (const FoldedLine& l : lines) {
    if (l.frames.empty() || (!thread.empty() && l.frames[0] != thread)) continue;
    std::string which;
    for (const std::string& n : names) {
      if (has_frame(l.frames, n)) which = n;
    }
    out[which] += static_cast<double>(l.value);
  }
  return out;
}

double share(std::map<std::string, double>& m, const std::string& key, const std::vector<std::string>& of) {
  double total = 0;
  for (const std::string& k : of) total += m[k];
  return total > 0 ? 100.0 * m[key] / total : 0;
}

// The acceptance's first point: the blocked time of a thread that blocks in fsync under f(),
// nanosleep under g() and a contended mutex under h() (50/30/20 of its own clocks) is attributed
// to stacks through those functions, each share within 3 points, and at least 95 % of its
// blocked time is in stacks with its own frames named.
TEST(Stacks, OffCpuSharesMatchTheBlockersOwnClocks) {
  need_root();
  std::string folded = temp_base() + "off.folded";
  std::string data = scratch_dir() + "/stack-blocker-" + std::to_string(::getpid()) + ".dat";
  Outcome o = run_pm({"run", "--off-stacks-out", folded, "-f", "json", "--", PM_STACK_BLOCKER, "4", data});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto truth = figures(o.out, "blocked_ns");
  ASSERT_EQ(truth.size(), 3u) << o.out;
  std::vector<FoldedLine> lines = read_folded(folded);
  ASSERT_FALSE(lines.empty());
  const std::vector<std::string> fns{"f()", "g()", "h()"};
  auto ours = by_function(lines, "blocker", fns);
  double truth_total = truth["f"] + truth["g"] + truth["h"];
  for (const auto& [fn, key] : {std::pair{"f()", "f"}, std::pair{"g()", "g"}, std::pair{"h()", "h"}}) {
    double want = 100.0 * truth[key] / truth_total;
    double got = share(ours, fn, fns);
    EXPECT_NEAR(got, want, 3.0) << fn << ": " << got << "% of the blocked time against its own clocks' " << want
                                << "%\n" << slurp(folded);
  }
  double named = ours["f()"] + ours["g()"] + ours["h()"];
  EXPECT_GE(named, 0.95 * (named + ours[""])) << "blocked time in stacks without f, g or h:\n" << slurp(folded);
  // Each function's heaviest stack is its own call: fsync, nanosleep, the mutex's futex (on a
  // loaded machine a preemption anywhere under it is a stack of its own, lighter).
  for (const auto& [fn, call] : {std::pair{"f()", "fsync"}, std::pair{"g()", "clock_nanosleep"},
                                 std::pair{"h()", "__pthread_mutex_lock"}}) {
    const FoldedLine* heaviest = nullptr;
    for (const FoldedLine& l : lines) {
      if (l.frames[0] == "blocker" && has_frame(l.frames, fn) && (!heaviest || l.value > heaviest->value)) heaviest = &l;
    }
    ASSERT_NE(heaviest, nullptr) << fn;
    EXPECT_TRUE(has_frame(heaviest->frames, call)) << fn << "'s heaviest stack is not in " << call;
  }
  // The JSON summary says the same total as the folded file.
  ASSERT_TRUE(o.summary.contains("stacks")) << o.err;
  uint64_t folded_us = 0;
  for (const FoldedLine& l : lines) folded_us += l.value;
  EXPECT_EQ(o.summary["stacks"]["off_cpu"]["us"].get<uint64_t>(), folded_us);
}

// perf record's DWARF call graphs of the same execution: samples per function.
std::map<std::string, double> perf_split(const std::string& data, const std::vector<std::string>& names) {
  std::string script = temp_base() + "perf.script";
  run_shell("perf script -i " + data + " -F comm,ip,sym > " + script + " 2>/dev/null");
  std::map<std::string, double> out;
  std::istringstream in(slurp(script));
  std::string line, which;
  bool open = false;
  auto close = [&] {
    if (open) out[which] += 1;
    open = false;
    which.clear();
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      close();
      continue;
    }
    if (line[0] != ' ' && line[0] != '\t') {  // a sample's first line: its comm
      close();
      open = true;
      continue;
    }
    if (!which.empty()) continue;  // innermost first: the first that matches
    for (const std::string& n : names) {
      if (line.find(" " + n) != std::string::npos) which = n;
    }
  }
  close();
  return out;
}

// The acceptance's second point: 70/30 of the CPU in two functions, within 3 points of the
// workload's clock, and of perf record --call-graph dwarf sampling the same run.
TEST(Stacks, OnCpuSplitMatchesItsClockAndPerfRecordDwarf) {
  need_root();
  std::string perf = find_tool("perf", "linux-perf");
  if (perf.empty()) GTEST_SKIP() << "no perf, and apt-get install linux-perf failed";
  std::string folded = temp_base() + "cpu.folded", data = temp_base() + "perf.data";
  Outcome o = run_pm({"run", "--stack-rate", "999", "--stacks-out", folded, "--", perf, "record", "-q", "-F", "999",
                      "-g", "--call-graph", "dwarf", "-o", data, "--", PM_STACK_CPU, "3"},
                     {.timeout = std::chrono::seconds(90)});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto truth = figures(o.out, "cpu_ns");
  ASSERT_EQ(truth.size(), 2u) << o.out;
  double want = 100.0 * truth["hot_a"] / (truth["hot_a"] + truth["hot_b"]);
  const std::vector<std::string> fns{"hot_a(unsigned long)", "hot_b(unsigned long)"};
  auto ours = by_function(read_folded(folded), comm_of(PM_STACK_CPU), fns);
  double got = share(ours, fns[0], fns);
  EXPECT_NEAR(got, want, 3.0) << "hot_a's share of the CPU against the workload's clock\n" << slurp(folded);
  EXPECT_GE(ours[fns[0]] + ours[fns[1]], 1500) << "at 999 Hz, 3 s of CPU";
  auto theirs = perf_split(data, {"hot_a", "hot_b"});
  ASSERT_GT(theirs["hot_a"] + theirs["hot_b"], 1000) << "perf record's samples";
  double perf_share = 100.0 * theirs["hot_a"] / (theirs["hot_a"] + theirs["hot_b"]);
  EXPECT_NEAR(got, perf_share, 3.0) << "against perf record --call-graph dwarf on the same run";
  std::printf("hot_a: %.2f%% (perf-monitor), %.2f%% (perf record dwarf), %.2f%% (its clock)\n", got, perf_share, want);
}

// The same for a Rust program (std only, -O: no frame pointers), in both manglings: the frames
// are the functions' paths as rustfilt prints them (the legacy hash dropped).
TEST(Stacks, RustOnCpuSplitInBothManglings) {
  need_root();
  static const RustBuild b = build_rust(PM_STACK_CPU_RS, "stack_cpu_rs");
  if (!b.error.empty()) GTEST_SKIP() << b.error;
  for (const std::string& bin : {b.legacy, b.v0}) {
    std::string folded = temp_base() + "rust.folded";
    Outcome o = run_pm({"run", "--stack-rate", "999", "--stacks-out", folded, "--", bin, "2"});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    auto truth = figures(o.out, "cpu_ns");
    ASSERT_EQ(truth.size(), 2u) << o.out;
    double want = 100.0 * truth["hot_a"] / (truth["hot_a"] + truth["hot_b"]);
    const std::vector<std::string> fns{"stack_cpu_rs::burn::hot_a", "stack_cpu_rs::burn::hot_b"};
    auto ours = by_function(read_folded(folded), "", fns);
    EXPECT_NEAR(share(ours, fns[0], fns), want, 3.0) << bin << "\n" << slurp(folded);
    EXPECT_GE(ours[fns[0]] + ours[fns[1]], 0.9 * (ours[fns[0]] + ours[fns[1]] + ours[""]))
        << bin << ": samples outside hot_a and hot_b\n" << slurp(folded);
  }
}

// What a pprof reader sees: its totals are the JSON summary's, and its stacks the JSON's.
Json read_pprof(const std::string& modules, const std::string& path) {
  std::string out = temp_base() + "pprof.json";
  EXPECT_EQ(run_shell("node " PM_PPROF_READER " " + modules + " " + path + " > " + out), 0);
  return Json::parse(slurp(out), nullptr, false);
}

TEST(Stacks, PprofIsReadByPprofFormatWithTheTotalsOfTheFoldedFilesAndTheJson) {
  need_root();
  std::string why;
  static const std::string modules = npm_modules("pprof-format@2.3.2", "pprof-format", "pprof-format/package.json", why);
  if (modules.empty()) GTEST_SKIP() << why;
  std::string data = scratch_dir() + "/stack-blocker-pprof-" + std::to_string(::getpid()) + ".dat";
  // On-CPU as pprof and off-CPU folded, then the other way round.
  for (bool on_cpu_pprof : {true, false}) {
    std::string pb = temp_base() + "stacks.pb.gz", folded = temp_base() + "stacks.folded";
    Outcome o = run_pm({"run", "--stack-rate", "499", on_cpu_pprof ? "--stacks-out" : "--off-stacks-out", pb,
                        on_cpu_pprof ? "--off-stacks-out" : "--stacks-out", folded, "-f", "json", "--",
                        PM_STACK_BLOCKER, "1", data});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    ASSERT_TRUE(o.summary.contains("stacks")) << o.err;
    const Json& js = o.summary["stacks"];
    Json p = read_pprof(modules, pb);
    ASSERT_TRUE(p.is_object()) << "the reader could not decode " << pb;
    uint64_t folded_total = 0;
    for (const FoldedLine& l : read_folded(folded)) folded_total += l.value;
    const Json& on = js["on_cpu"];
    const Json& off = js["off_cpu"];
    if (on_cpu_pprof) {
      EXPECT_EQ(p["types"], Json::array({"samples/count", "cpu/nanoseconds"}));
      EXPECT_EQ(p["totals"][0].get<uint64_t>(), on["samples"].get<uint64_t>());
      EXPECT_EQ(p["totals"][1].get<uint64_t>(), on["cpu_ns"].get<uint64_t>());
      EXPECT_EQ(p["period"].get<uint64_t>(), on["period_ns"].get<uint64_t>());
      EXPECT_EQ(folded_total, off["us"].get<uint64_t>());
    } else {
      EXPECT_EQ(p["types"], Json::array({"switches/count", "off_cpu/nanoseconds"}));
      EXPECT_EQ(p["totals"][0].get<uint64_t>(), off["switches"].get<uint64_t>());
      EXPECT_EQ(p["totals"][1].get<uint64_t>(), off["ns"].get<uint64_t>());
      EXPECT_EQ(folded_total, on["samples"].get<uint64_t>());
    }
    // Stack by stack: the JSON's (its heaviest) are the reader's, frames and values.
    const Json& listed = on_cpu_pprof ? on["stacks"] : off["stacks"];
    std::map<std::vector<std::string>, uint64_t> in_pprof;
    // (a stack at two lines of a function is two samples there)
    for (const Json& s : p["samples"]) in_pprof[s["frames"].get<std::vector<std::string>>()] += s["values"][1].get<uint64_t>();
    ASSERT_FALSE(listed.empty());
    for (const Json& s : listed) {
      auto frames = s["frames"].get<std::vector<std::string>>();
      uint64_t want = on_cpu_pprof ? s["samples"].get<uint64_t>() * on["period_ns"].get<uint64_t>() : s["ns"].get<uint64_t>();
      ASSERT_TRUE(in_pprof.count(frames)) << "a stack of the JSON is not in the pprof file";
      EXPECT_EQ(in_pprof[frames], want);
    }
  }
}

// The line of a source file that holds `text` (1-based), 0 if none does.
uint32_t line_of(const std::string& path, const std::string& text) {
  std::istringstream in(slurp(path));
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n) {
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

// A stack whose sp lies a few hundred bytes below the end of its mapping (as the main thread's
// may: where, ASLR decides) is copied up to that end and unwinds whole: the copy is not one read
// that crosses into the page above and fails.
TEST(Stacks, AStackEndingJustAboveItsSpUnwindsWhole) {
  need_root();
  std::string folded = temp_base() + "top.folded";
  Outcome o = run_pm({"run", "--stacks=off", "--off-stacks-out", folded, "--", PM_STACK_TOP, "0.5"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto lines = read_folded(folded);
  double naps = 0, whole = 0;
  for (const FoldedLine& l : lines) {
    if (!has_frame(l.frames, "clock_nanosleep") || l.frames[0] != comm_of(PM_STACK_TOP)) continue;
    naps += static_cast<double>(l.value);
    if (has_frame(l.frames, "at_the_top()") && has_frame(l.frames, "climb()")) whole += static_cast<double>(l.value);
  }
  EXPECT_GT(naps, 300000) << "0.5 s of naps, in microseconds\n" << slurp(folded);
  EXPECT_GE(whole, 0.99 * naps) << "the naps' stacks through at_the_top() and climb()\n" << slurp(folded);
}

// Lines from DWARF: in the pprof file, the samples whose innermost program frame is hot_a (or
// hot_b) are at the line of its arithmetic loop, as the workload's source text has it.
TEST(Stacks, PprofLinesAreTheSourceLinesTheCpuWasSpentAt) {
  need_root();
  std::string why;
  static const std::string modules = npm_modules("pprof-format@2.3.2", "pprof-format", "pprof-format/package.json", why);
  if (modules.empty()) GTEST_SKIP() << why;
  std::string source = std::regex_replace(std::string(PM_STACK_CPU_RS), std::regex("\\.rs$"), ".cpp");
  std::map<std::string, uint32_t> loops{{"hot_a(unsigned long)", line_of(source, "x = x * 6364136223846793005ULL")},
                                        {"hot_b(unsigned long)", line_of(source, "x = (x ^ (x >> 7))")}};
  ASSERT_NE(loops.begin()->second, 0u) << source;
  std::string pb = temp_base() + "lines.pb.gz";
  Outcome o = run_pm({"run", "--stack-rate", "999", "--stacks-out", pb, "--", PM_STACK_CPU, "1.5"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  Json p = read_pprof(modules, pb);
  ASSERT_TRUE(p.is_object()) << "the reader could not decode " << pb;
  std::map<std::string, double> at_loop, all;
  for (const Json& s : p["samples"]) {
    auto frames = s["frames"].get<std::vector<std::string>>();
    auto lines = s["lines"].get<std::vector<std::string>>();
    ASSERT_EQ(frames.size(), lines.size());
    // The innermost frame of the program's own (under it: only kernel frames, if any).
    size_t i = frames.size();
    while (i > 0 && frames[i - 1].ends_with("_[k]")) --i;
    if (i == 0 || !loops.count(frames[i - 1])) continue;
    double v = s["values"][0].get<double>();
    all[frames[i - 1]] += v;
    if (lines[i - 1].ends_with("stack_cpu.cpp:" + std::to_string(loops[frames[i - 1]]))) {
      at_loop[frames[i - 1]] += v;
    }
  }
  for (const auto& [fn, line] : loops) {
    ASSERT_GT(all[fn], 100) << fn << ": its samples as the innermost frame";
    EXPECT_GE(at_loop[fn], 0.8 * all[fn]) << fn << " at stack_cpu.cpp:" << line << ": " << at_loop[fn] << " of "
                                          << all[fn] << " samples";
    std::printf("%s: %.0f of %.0f samples at stack_cpu.cpp:%u\n", fn.c_str(), at_loop[fn], all[fn], line);
  }

  // Rust (rustc -O -g) puts its functions below namespaces in DWARF: the arithmetic inlined into
  // hot_a and hot_b (#[inline(always)] spin_a, spin_b) is a frame of its own, at a line of its
  // body, and hot_a's frame is at the line that calls it.
  static const RustBuild rust = build_rust(PM_STACK_CPU_RS, "stack_cpu_rs", "-g");
  if (!rust.error.empty()) GTEST_SKIP() << rust.error;
  std::string rs = PM_STACK_CPU_RS;
  pb = temp_base() + "rust-lines.pb.gz";
  o = run_pm({"run", "--stack-rate", "999", "--stacks-out", pb, "--", rust.legacy, "1.5"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  p = read_pprof(modules, pb);
  ASSERT_TRUE(p.is_object()) << "the reader could not decode " << pb;
  for (const std::string which : {"a", "b"}) {
    std::string spin = "stack_cpu_rs::burn::spin_" + which + " (inlined)", hot = "stack_cpu_rs::burn::hot_" + which;
    uint32_t body = line_of(rs, "fn spin_" + which + "(mut x: u64)"), call = line_of(rs, "x = spin_" + which + "(x);");
    ASSERT_NE(body, 0u);
    double samples = 0, in_body = 0, at_call = 0;
    for (const Json& s : p["samples"]) {
      auto frames = s["frames"].get<std::vector<std::string>>();
      auto lines = s["lines"].get<std::vector<std::string>>();
      auto at = std::find(frames.begin(), frames.end(), spin);
      if (at == frames.end() || at == frames.begin()) continue;
      size_t i = static_cast<size_t>(at - frames.begin());
      double v = s["values"][0].get<double>();
      samples += v;
      for (uint32_t l = body; l < body + 6; ++l) {
        if (lines[i].ends_with("stack_cpu.rs:" + std::to_string(l))) in_body += v;
      }
      if (frames[i - 1] == hot && lines[i - 1].ends_with("stack_cpu.rs:" + std::to_string(call))) at_call += v;
    }
    EXPECT_GT(samples, 100) << spin << ": samples through it";
    EXPECT_EQ(in_body, samples) << spin << " at a line of its body (stack_cpu.rs:" << body << "..)";
    EXPECT_EQ(at_call, samples) << hot << " at its call (stack_cpu.rs:" << call << ")";
    std::printf("%s: %.0f samples, in its body %.0f, %s at its call %.0f\n", spin.c_str(), samples, in_body,
                hot.c_str(), at_call);
  }
}

// The acceptance's third point: the design's own example, the Rust request server probed at
// process_request: its slowest request says where it blocked, a stack through process_request
// down to the call it waited in (its writes' fsync, or its sleep), for no longer than it took.
TEST(Stacks, TheSlowestRequestOfTheExampleServerShowsWhereItBlocked) {
  need_root();
  static const RustBuild b = build_rust(PM_RUST_EXAMPLES "/server.rs", "server");
  if (!b.error.empty()) GTEST_SKIP() << b.error;
  Outcome o = run_pm({"run", "--stacks=off", "--probe", b.legacy + ":app::handler::process_request:arg1", "-f", "json",
                      "--", b.legacy, "60", "2", scratch_dir()});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  ASSERT_TRUE(o.summary.contains("slowest_requests")) << o.err;
  const Json& slowest = o.summary["slowest_requests"][0];
  ASSERT_TRUE(slowest.contains("blocked_stack")) << slowest.dump();
  auto frames = slowest["blocked_stack"]["frames"].get<std::vector<std::string>>();
  double seconds = slowest["blocked_stack"]["off_cpu_s"].get<double>();
  EXPECT_TRUE(has_frame(frames, "server::app::handler::process_request")) << slowest.dump();
  EXPECT_EQ(frames.back(), "__schedule_[k]") << "a stack that went off the CPU: " << slowest.dump();
  // What it waited in is what the request does (on a loaded machine the slowest may be one that
  // waited most for a CPU: then its stack is where it was preempted).
  double blocked = slowest["blocked_s"].get<double>(), runq = slowest["runq_s"].get<double>();
  if (blocked > runq) {
    bool wrote = slowest["bio_write_bytes"].get<uint64_t>() > 0;
    EXPECT_TRUE(wrote ? has_frame(frames, "<std::fs::File>::sync_all") || has_frame(frames, "__close") ||
                            has_frame(frames, "__libc_write") || has_frame(frames, "__libc_open64")
                      : has_frame(frames, "clock_nanosleep"))
        << slowest.dump();
  }
  EXPECT_GT(seconds, 0);
  EXPECT_LE(seconds, slowest["latency_s"].get<double>() + 1e-4) << slowest.dump();
  // The text summary says it on the line after the request's.
  Outcome t = run_pm({"run", "--stacks=off", "--probe", b.legacy + ":app::handler::process_request:arg1", "--", b.legacy,
                      "30", "2", scratch_dir()});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("    off the CPU longest ("), std::string::npos) << t.err;
  EXPECT_TRUE(std::regex_search(t.err, std::regex(R"(server::app::handler::process_request( \([^ ]+:[0-9]+\))? <- \[uretprobe\])")))
      << t.err;
  // Each frame's line, or null (the JSON's list as long as the frames).
  ASSERT_TRUE(slowest["blocked_stack"].contains("lines")) << slowest.dump();
  EXPECT_EQ(slowest["blocked_stack"]["lines"].size(), frames.size()) << slowest.dump();
}

// A thread's name is chosen by whoever runs it: in the folded file it cannot add frames or end
// the line, and every file and sink gets valid UTF-8 without control characters.
TEST(Stacks, AHostileThreadNameStaysOneFrame) {
  need_root();
  std::string dir = temp_base() + "hostile";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  std::string name = "a;b\x1b]0;x\x07\xff";  // the comm: 15 bytes at most
  std::string bin = dir + "/" + name;
  ASSERT_EQ(run_shell(std::string("cp ") + PM_STACK_CPU + " '" + bin + "'"), 0);
  std::string folded = temp_base() + "hostile.folded";
  Outcome o = run_pm({"run", "--stacks-out", folded, "-f", "json", "--", bin, "0.5"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::string text = slurp(folded);
  ASSERT_FALSE(text.empty());
  for (unsigned char c : text) EXPECT_TRUE(c >= 0x20 || c == '\n') << "a control byte in the folded file";
  // (The command's first moments, forked but not yet exec'd, go by its name too.)
  for (const FoldedLine& l : read_folded(folded)) {
    EXPECT_EQ(l.frames[0], "a:b\xEF\xBF\xBD]0:x\xEF\xBF\xBD\xEF\xBF\xBD") << "the thread's name, one frame";
  }
  // The JSON keeps the name's own ';' (it is no separator there), and no control characters.
  ASSERT_TRUE(o.summary.contains("stacks"));
  for (const Json& s : o.summary["stacks"]["on_cpu"]["stacks"]) {
    EXPECT_EQ(s["frames"][0].get<std::string>(), "a;b\xEF\xBF\xBD]0;x\xEF\xBF\xBD\xEF\xBF\xBD");
  }
}

TEST(Stacks, BadFlagsAreUsageErrorsAndALinkIsNotWrittenThrough) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--stacks=heap", "--", "true"},
        std::vector<std::string>{"run", "--stack-rate", "99", "--", "true"},
        std::vector<std::string>{"run", "--stacks", "--stack-rate", "0", "--", "true"},
        std::vector<std::string>{"run", "--stacks-out", "", "--", "true"}}) {
    Outcome o = run_pm(args);
    EXPECT_EQ(o.exit_code, 2) << args[1] << ": " << o.err;
    EXPECT_NE(o.err.find("stack"), std::string::npos) << o.err;
  }
  need_root();
  std::string victim = temp_base() + "victim", link = temp_base() + "link.folded";
  { std::ofstream(victim) << "keep\n"; }
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);  // another user's link
  Outcome o = run_pm({"run", "--stacks-out", link, "--", "true"});
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_EQ(slurp(victim), "keep\n");
}

// Live mode, the whole system: a CPU-bound program's functions are in the profile, and
// perf-monitor's own threads are not.
// A library its owner cuts short while perf-monitor holds it to name frames: reading the file
// through a mapping would then be a SIGBUS, and perf-monitor (root) would end without its
// summary, at the hands of any user. The library belongs to another user (nobody), and the
// program truncates it itself; in `run` and in live mode perf-monitor ends normally, with the
// samples in the library (by name where it was read before the cut, else by module and offset)
// and in the program's own code.
TEST(Stacks, ALibraryCutShortUnderItDoesNotEndPerfMonitor) {
  need_root();
  for (bool live : {false, true}) {
    SCOPED_TRACE(live ? "live mode" : "run");
    std::string dir = temp_base() + "cut";
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    std::string lib = dir + "/libcut.so";
    ASSERT_EQ(run_shell("cp " PM_CUT_SHORT_LIB " " + lib + " && chown 65534:65534 " + lib), 0);
    std::string folded = temp_base() + "cut.folded";
    Outcome o;
    if (live) {
      pid_t child = ::fork();
      if (child == 0) {
        int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::execl(PM_CUT_SHORT, PM_CUT_SHORT, lib.c_str(), "1500", "60000", nullptr);
        ::_exit(127);
      }
      o = run_pm({"--stacks=cpu", "--stack-rate", "999", "--stacks-out", folded, "--duration", "4s", "-q", "-f",
                  "json"});
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    } else {
      o = run_pm({"run", "--stacks=cpu", "--stack-rate", "999", "--stacks-out", folded, "-f", "json", "--",
                  PM_CUT_SHORT, lib, "1000", "1500"});
      EXPECT_NE(o.out.find("truncated"), std::string::npos) << "the program cut its library short";
    }
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_FALSE(o.summary.is_null()) << "the summary is written\n" << o.err;
    uint64_t in_lib = 0, in_main = 0;
    for (const FoldedLine& l : read_folded(folded)) {
      if (l.frames.empty() || l.frames[0] != comm_of(PM_CUT_SHORT)) continue;
      bool lib_frame = std::any_of(l.frames.begin(), l.frames.end(), [](const std::string& f) {
        return f == "cut_short_spin" || f.starts_with("[libcut.so+");
      });
      if (lib_frame) in_lib += l.value;
      if (has_frame(l.frames, "main_spin(unsigned long)")) in_main += l.value;
      // The library was dlopen'd where ld.so.cache, a file of data, was mapped at start.
      for (const std::string& f : l.frames) EXPECT_FALSE(f.starts_with("[ld.so.cache")) << "code named by a data file";
    }
    EXPECT_GT(in_lib, 0u) << "samples in the library\n" << slurp(folded);
    EXPECT_GT(in_main, 0u) << "samples in the program's own code after the cut\n" << slurp(folded);
  }
}

TEST(Stacks, LiveModeProfilesTheSystem) {
  need_root();
  pid_t child = ::fork();
  if (child == 0) {
    ::execl(PM_STACK_CPU, PM_STACK_CPU, "3", nullptr);
    ::_exit(127);
  }
  std::string folded = temp_base() + "live.folded";
  // Under a name of its own: other tests' perf-monitors beside it are programs like any other.
  std::string self = temp_base() + "pm-live-self";
  ASSERT_EQ(run_shell("cp " + binary() + " " + self), 0);
  Outcome o = run_pm({"--stacks=cpu", "--stacks-out", folded, "--duration", "1500ms", "-q"}, {.binary = self});
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto lines = read_folded(folded);
  auto ours = by_function(lines, comm_of(PM_STACK_CPU), {"hot_a(unsigned long)", "hot_b(unsigned long)"});
  EXPECT_GT(ours["hot_a(unsigned long)"], 0) << slurp(folded);
  for (const FoldedLine& l : lines) EXPECT_NE(l.frames[0], comm_of(self)) << "its own threads";
  ::unlink(self.c_str());
}

}  // namespace
}  // namespace pm::test
