// SPDX-License-Identifier: Apache-2.0
// OpenTelemetry thread context (OTEP 4947) on the real kernel: a small C writer
// (tests/workloads/otel_server.c) publishes each span through otel_thread_ctx_v1, defined in the
// executable, or in a library loaded at start (TLSDESC, or the older __tls_get_addr dialect).
// Nothing of perf-monitor is in it. It logs what each span did by its thread's own clocks
// (CLOCK_THREAD_CPUTIME_ID and the wall clock around attach and detach, the bytes it wrote with
// O_DIRECT): perf-monitor's span of the same trace and span IDs must agree.
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

struct Truth {
  int tid = 0;
  double wall = 0, cpu = 0;
  long bytes = 0;
};

// "TRACE SPAN" -> its truth.
std::map<std::string, Truth> read_truth(const std::string& path) {
  std::map<std::string, Truth> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string trace, span;
    Truth t;
    uint64_t wall = 0, cpu = 0;
    if (s >> trace >> span >> t.tid >> wall >> cpu >> t.bytes) {
      t.wall = static_cast<double>(wall) * 1e-9;
      t.cpu = static_cast<double>(cpu) * 1e-9;
      out[trace + " " + span] = t;
    }
  }
  return out;
}

bool near(double got, double want) { return std::abs(got - want) <= std::max(0.05 * want, 200e-6); }

class OtelTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: loading BPF programs";
#if !defined(__x86_64__)
    GTEST_SKIP() << "OpenTelemetry thread context is read on x86-64 only";
#endif
  }
};

// 4 threads, 100 spans each: burn 1 ms, sleep 500 us, read 128 KiB with O_DIRECT, burn 0.5 ms. Each thread waits 1 ms before its first span, as a server waits for
// its first request (what a thread does between its last switch and the attach counts for the
// span: no kernel event marks the attach).
TEST_P(OtelTest, SpansCarryTheApplicationsIdsAndAgreeWithItsThreadsClocks) {
  const int kThreads = 4, kSpans = 100;
  std::string truth_path = temp_base() + ".truth";
  Outcome o = run_pm({"run", "--format", "json", "--", GetParam(), "--threads", std::to_string(kThreads), "--spans",
                      std::to_string(kSpans), "--bytes", "131072", "--delay-ms", "50", "--dir", scratch_dir(),
                      "--truth", truth_path},
                     {.timeout = std::chrono::seconds(120)});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::map<std::string, Truth> truth = read_truth(truth_path);
  ::unlink(truth_path.c_str());
  ASSERT_EQ(truth.size(), static_cast<size_t>(kThreads * kSpans));

  size_t seen = 0, off = 0, shifted = 0, waited_for_io = 0, slept = 0;
  std::string outliers;
  for (const auto& r : o.records) {
    if (r["type"] != "span" || !r.contains("trace_id")) continue;
    auto t = truth.find(r["trace_id"].get<std::string>() + " " + r["parent_span_id"].get<std::string>());
    ASSERT_NE(t, truth.end()) << "a span of IDs the application never published: " << r.dump();
    ++seen;
    const Truth& w = t->second;
    EXPECT_EQ(r["tid"].get<int>(), w.tid) << r.dump();
    EXPECT_EQ(r["threads"].get<int>(), 1) << r.dump();
    // Its bios: what it read.
    EXPECT_EQ(r["bio_read_bytes"].get<long>(), w.bytes) << r.dump();
    // Why it blocked, by what the switch out tells (a read can complete before its thread
    // blocks; a loaded machine can preempt a thread as it goes to sleep).
    if (r["blocked_io_s"].get<double>() > 0) ++waited_for_io;
    if (r["blocked_sleep_s"].get<double>() > 0) ++slept;
    double cpu = r["on_cpu_s"].get<double>();
    double wall = cpu + r["runq_s"].get<double>() + r["blocked_s"].get<double>();
    // The scheduler's clocks can move wait into CPU time, never the other way (see
    // context_test.cpp): the thread's CPU clock took in a wait that perf-monitor, by the
    // switches, counts in the run queue. Such a span has its CPU below the clock's and its wall
    // time right: counted apart.
    if (near(wall, w.wall) && !near(cpu, w.cpu) && cpu < w.cpu) {
      ++shifted;
    } else if (!near(cpu, w.cpu) || !near(wall, w.wall)) {
      ++off;
      outliers += "\n  " + t->first + ": on CPU " + std::to_string(cpu) + " s (truth " + std::to_string(w.cpu) +
                  "), on + off CPU " + std::to_string(wall) + " s (truth wall " + std::to_string(w.wall) + ")";
    }
  }
  EXPECT_EQ(seen, truth.size()) << "every span the application published is reported";
  EXPECT_GE(waited_for_io, seen / 2) << "spans whose thread blocked on its read (I/O wait)";
  EXPECT_GE(slept, seen * 9 / 10) << "spans whose thread slept in nanosleep";
  // A loaded machine can put a thread's CPU clock and its switches a run-queue wait apart (see
  // context_test.cpp): at most 1 in 100 outside its truth.
  EXPECT_LE(off, truth.size() / 100) << "spans outside 5 % (or 200 us) of their truth:" << outliers;
  EXPECT_LE(shifted, truth.size() / 10) << "spans whose CPU time went to the run queue";
  std::cout << "[ otel     ] " << seen << " spans, " << off << " outside their truth, " << shifted
            << " with wait moved into the thread's CPU clock\n";
}

// A shell in front of the application changes nothing: the variable is looked for in the
// program its -c string runs.
TEST(OtelLauncher, AnApplicationStartedByAShellIsFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: loading BPF programs";
#if !defined(__x86_64__)
  GTEST_SKIP() << "OpenTelemetry thread context is read on x86-64 only";
#endif
  std::string truth_path = temp_base() + ".truth";
  Outcome o = run_pm({"run", "--format", "json", "--", "sh", "-c",
                      std::string(PM_OTEL_SERVER) + " --threads 2 --spans 20 --delay-ms 50 --dir " + scratch_dir() +
                          " --truth " + truth_path + "; true"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::map<std::string, Truth> truth = read_truth(truth_path);
  ::unlink(truth_path.c_str());
  ASSERT_EQ(truth.size(), 40u);
  size_t seen = 0;
  for (const auto& r : o.records) {
    if (r["type"] == "span" && r.contains("trace_id") &&
        truth.count(r["trace_id"].get<std::string>() + " " + r["parent_span_id"].get<std::string>()) != 0) {
      ++seen;
    }
  }
  EXPECT_EQ(seen, truth.size()) << "every span the application published is reported";
}

INSTANTIATE_TEST_SUITE_P(Writers, OtelTest, ::testing::Values(PM_OTEL_SERVER, PM_OTEL_SERVER_DESC, PM_OTEL_SERVER_GD),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.index == 0 ? "InTheExecutable" : i.index == 1 ? "InALibraryTlsdesc" : "InALibraryTraditional");
                         });

}  // namespace
}  // namespace pm::test
