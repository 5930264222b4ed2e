// SPDX-License-Identifier: Apache-2.0
// Thread context on the real kernel: the async example server (examples/coro_server.cpp) runs
// requests as coroutines whose polls hop between 4 worker threads, and marks each poll with
// perf_monitor_poll_begin/end. It logs what each poll did as its thread's own clocks tell
// (CLOCK_THREAD_CPUTIME_ID, the thread's schedstat run_delay, the wall clock, the bytes it
// wrote with O_DIRECT and fdatasync'd): perf-monitor's figures per request must agree with those
// sums. The Rust executor (examples/rust/executor.rs, built here with rustc) does the same.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

const std::string kCoro = PM_CORO_SERVER;

// A request's polls as their threads' clocks saw them, summed: each poll over its outer window
// (read just outside perf_monitor_poll_begin/end) and its inner one (just inside). What the
// polls themselves did lies between the two.
struct Truth {
  uint64_t polls = 0;
  double wall = 0, cpu = 0, runq = 0;           // outer, seconds
  double wall_in = 0, cpu_in = 0, runq_in = 0;  // inner
  long bytes = 0;
  std::set<int> tids;
};

std::map<uint64_t, Truth> read_truth(const std::string& path) {
  std::map<uint64_t, Truth> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    uint64_t id = 0, v[6] = {};
    int tid = 0, done = 0;
    long bytes = 0;
    if (!(s >> id >> tid >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> bytes >> done)) continue;
    Truth& t = out[id];
    ++t.polls;
    double* sums[6] = {&t.wall, &t.cpu, &t.runq, &t.wall_in, &t.cpu_in, &t.runq_in};
    for (int i = 0; i < 6; ++i) *sums[i] += static_cast<double>(v[i]) * 1e-9;
    t.bytes += bytes;
    t.tids.insert(tid);
  }
  return out;
}

// Within [lo, hi] give or take 5 % of hi or 200 µs, whichever is larger.
bool within(double got, double lo, double hi) {
  double tol = std::max(0.05 * hi, 200e-6);
  return got >= lo - tol && got <= hi + tol;
}

// examples/rust/executor.rs (with context.rs) built once with rustc, in the scratch directory;
// "" and the reason in `error` when it could not be.
std::string rust_executor(std::string& error) {
  static std::string built, why;
  static bool once = false;
  if (!once) {
    once = true;
    // Test processes run side by side (ctest -j): one builds, the others wait for its file.
    int lock = ::open((scratch_dir() + "/executor.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock >= 0) ::flock(lock, LOCK_EX);
    std::string rustc = find_tool("rustc", "rustc", "/root/.cargo/bin/rustc");
    std::string dir = PM_RUST_EXAMPLES;
    std::string key = slurp(dir + "/executor.rs") + slurp(dir + "/context.rs") + first_line(rustc + " --version");
    std::string kept = scratch_dir() + "/executor-" + std::to_string(std::hash<std::string>{}(key));
    std::string tmp = temp_base() + "executor";
    if (rustc.empty()) {
      why = "no rustc, and apt-get install rustc failed";
    } else if (::access(kept.c_str(), X_OK) == 0) {
      built = kept;
    } else if (run_shell(rustc + " --edition 2021 -O " + dir + "/executor.rs -o " + tmp) != 0 ||
               std::rename(tmp.c_str(), kept.c_str()) != 0) {
      why = "rustc could not build " + dir + "/executor.rs";
    } else {
      built = kept;
    }
    if (lock >= 0) ::close(lock);
  }
  error = why;
  return built;
}

class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: attaching USDT probes and loading BPF programs";
  }
  static void requests_agree_with_the_threads_own_clocks(const std::string& server);
};

// 4 workers, 2,000 requests of 4 polls each: every request's figures against the sums of its
// polls' truths.
void ContextTest::requests_agree_with_the_threads_own_clocks(const std::string& server) {
  const long kRequests = 2000;
  std::string truth_path = temp_base() + ".truth";
  Outcome o = run_pm({"run", "--format", "json", "--", server, "--workers", "4", "--requests",
                      std::to_string(kRequests), "--in-flight", "16", "--burn-us", "300", "--sleep-us", "200",
                      "--timer-us", "500", "--bytes", "131072", "--dir", scratch_dir(), "--truth", truth_path},
                     {.timeout = std::chrono::seconds(120)});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::map<uint64_t, Truth> truth = read_truth(truth_path);
  ::unlink(truth_path.c_str());
  ASSERT_EQ(truth.size(), static_cast<size_t>(kRequests));

  size_t seen = 0, hopped = 0, off = 0, shifted = 0;
  std::string outliers;
  for (const auto& r : o.records) {
    if (r["type"] != "span" || r["function"] != "request" || !r.contains("polls")) continue;
    ++seen;
    uint64_t id = r["request_id"].get<uint64_t>();
    auto t = truth.find(id);
    ASSERT_NE(t, truth.end()) << r.dump();
    const Truth& w = t->second;
    EXPECT_EQ(r["polls"].get<uint64_t>(), w.polls) << r.dump();
    EXPECT_EQ(r["threads"].get<size_t>(), w.tids.size()) << r.dump();
    if (w.tids.size() > 1) ++hopped;
    double cpu = r["on_cpu_s"].get<double>(), runq = r["runq_s"].get<double>(), blocked = r["blocked_s"].get<double>();
    // Off the CPU in a poll lies between the inner window's wall time less the outer one's CPU
    // time and the outer wall less the inner CPU; blocked is that less the run-queue wait.
    bool split = within(cpu, w.cpu_in, w.cpu) && within(runq, w.runq_in, w.runq);
    // The scheduler's clocks can move wait into CPU time, never the other way: where it skipped
    // its clock update after a preempting wakeup, the thread's CPU clock took in the wait before
    // it ran and run_delay left it out. Such a request has perf-monitor's CPU below the clock's,
    // its run-queue wait above run_delay, and their sum within the truth's.
    bool moved = !split && cpu <= w.cpu + 200e-6 && runq >= w.runq_in - 200e-6 &&
                 within(cpu + runq, w.cpu_in + w.runq_in, w.cpu + w.runq);
    if (moved) ++shifted;
    bool ok = (split || moved) && within(blocked, w.wall_in - w.cpu - w.runq, w.wall - w.cpu_in - w.runq_in);
    // Each request sleeps 200 µs in a poll, and writes and fdatasyncs 128 KiB in another: its
    // data's bios, and now and then the inode's block (its mtime moved) from the same thread;
    // and waits 500 µs for a timer between polls, on no thread. (A stretch off the CPU the kernel
    // traced no switch for at all moves these as it moves the figures above: an outlier too.)
    double bytes = r["bio_write_bytes"].get<double>();
    ok = ok && r["blocked_sleep_s"].get<double>() > 50e-6 && r["blocked_io_s"].get<double>() > 0 &&
         bytes >= static_cast<double>(w.bytes) && bytes <= static_cast<double>(w.bytes) + 8192 &&
         r["pending_s"].get<double>() >= 450e-6;
    if (!ok && ++off <= 5) {
      char truth_text[256];
      std::snprintf(truth_text, sizeof truth_text,
                    " (truth: on CPU %.6f..%.6f, run queue %.6f..%.6f, blocked %.6f..%.6f, %ld bytes)", w.cpu_in,
                    w.cpu, w.runq_in, w.runq, w.wall_in - w.cpu - w.runq, w.wall - w.cpu_in - w.runq_in, w.bytes);
      outliers += "\n  request " + std::to_string(id) + ": on CPU " + std::to_string(cpu) + ", run queue " +
                  std::to_string(runq) + ", blocked " + std::to_string(blocked) + truth_text + "\n    " + r.dump();
    }
  }
  EXPECT_EQ(seen, static_cast<size_t>(kRequests)) << "every request reported";
  EXPECT_GT(hopped, static_cast<size_t>(kRequests / 10)) << "requests ran on more than one worker";
  // Now and then the kernel traces no switch for a thread (perf-monitor closes that stretch by
  // the thread's counters). On an idle host 0-3 requests in 10,000 fall outside; under a loaded
  // CI up to 8 in 2,000 were seen. A fault of perf-monitor's would move most of them. Requests
  // whose wait the scheduler's clock moved into CPU time (31 of 2,000 in one sanitizer run beside
  // another test) are counted apart, and bounded too: a perf-monitor that put CPU time in the run
  // queue would move most of them.
  std::printf("requests outside their truth: %zu of %ld; wait moved into the thread's CPU clock: %zu%s\n", off,
              kRequests, shifted, outliers.c_str());
  EXPECT_LE(off, static_cast<size_t>(kRequests / 100)) << outliers;
  EXPECT_LE(shifted, static_cast<size_t>(kRequests / 10)) << "requests whose CPU time went to the run queue";
  ASSERT_FALSE(o.summary.is_null());
  EXPECT_EQ(o.summary["probe"]["context_requests"].get<double>(), kRequests);
  EXPECT_EQ(o.summary["probe"]["context_polls_lost"].get<double>(), 0);
  EXPECT_EQ(o.summary["probe"]["context_events_dropped"].get<double>(), 0);
  EXPECT_EQ(o.summary["probe"]["context_unreadable"].get<double>(), 0);
}

TEST_F(ContextTest, CoroutineRequestsHoppingThreadsAgreeWithTheThreadsOwnClocks) {
  requests_agree_with_the_threads_own_clocks(kCoro);
}

TEST_F(ContextTest, RustExecutorRequestsHoppingThreadsAgreeWithTheThreadsOwnClocks) {
  std::string error, executor = rust_executor(error);
  ASSERT_FALSE(executor.empty()) << error;
  requests_agree_with_the_threads_own_clocks(executor);
}

// A process writes its record as a hostile user would: perf-monitor goes on, bounded, and
// counts what it could not read.
TEST_F(ContextTest, AHostileRecordIsRefusedAndCounted) {
  for (std::string mode : {"capacity", "head", "ids", "unmap"}) {
    Outcome o = run_pm({"run", "--format", "json", "--", PM_CONTEXT_ABUSE, mode, "1500"});
    ASSERT_EQ(o.exit_code, 0) << mode << ": " << o.err;
    ASSERT_FALSE(o.summary.is_null()) << mode;
    const auto& p = o.summary["probe"];
    double unreadable = p["context_unreadable"].get<double>(), polls = p["context_polls"].get<double>();
    if (mode == "capacity") {
      EXPECT_EQ(unreadable, 4) << "each thread's record refused: " << p.dump();
      EXPECT_EQ(polls, 0) << p.dump();
    } else if (mode == "head" || mode == "unmap") {
      EXPECT_GT(unreadable, 0) << mode << ": " << p.dump();
    } else {
      EXPECT_GT(polls, 1000) << p.dump();
      EXPECT_EQ(p["context_requests"].get<double>(), 4) << "only the first poll of each thread finished: " << p.dump();
    }
  }
}

TEST_F(ContextTest, TheSlowestRequestsSayWhereTheirTimeWent) {
  Outcome o = run_pm({"run", "--", kCoro, "--workers", "2", "--requests", "50", "--timer-us", "3000", "--dir",
                      scratch_dir()});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.report.find("pending; 4 polls on"), std::string::npos) << o.report;
  EXPECT_NE(o.report.find("thread context: 50 requests in 200 polls"), std::string::npos) << o.report;
}

// A launcher in front of the server (taskset, a shell) changes nothing: the record's
// announcement is found in the program it runs.
TEST_F(ContextTest, AServerStartedByALauncherIsFollowed) {
  std::vector<std::string> server = {kCoro, "--workers", "2", "--requests", "50", "--timer-us", "1000", "--dir",
                                     scratch_dir()};
  std::string line;
  for (const std::string& w : server) line += w + " ";
  std::vector<std::string> taskset = {"taskset", "-c", "0-1"};
  taskset.insert(taskset.end(), server.begin(), server.end());
  for (const std::vector<std::string>& command : {taskset, std::vector<std::string>{"sh", "-c", line + "; true"}}) {
    std::vector<std::string> args = {"run", "--"};
    args.insert(args.end(), command.begin(), command.end());
    Outcome o = run_pm(args);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_NE(o.report.find("thread context: 50 requests in 200 polls"), std::string::npos) << command[0] << ": " << o.report;
  }
}

}  // namespace
}  // namespace pm::test
