// SPDX-License-Identifier: Apache-2.0
// `perf-monitor run` and `attach` against the real kernel, with workloads of known behaviour.
// These need root (the proc connector, other users' /proc/PID/io); they skip, saying so, without.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the proc connector and /proc/PID/io of children";
  }
  static Outcome run_json(std::vector<std::string> cmd, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"run", "--format", "json"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), cmd.begin(), cmd.end());
    Outcome o = run_pm(args);
    EXPECT_FALSE(o.summary.is_null()) << "no summary; stderr: " << o.err;
    return o;
  }
  static double num(const Outcome& o, const char* key) {
    if (!o.summary.contains(key)) {
      ADD_FAILURE() << "summary has no " << key << ": " << o.summary.dump();
      return 0;
    }
    return o.summary[key].get<double>();
  }
  static bool proc_events_available(const Outcome& o) {
    return !o.summary.contains("unavailable") || !o.summary["unavailable"].contains("proc_events");
  }
};

TEST_F(RunTest, TouchedMemoryShowsInRssAndPss) {
  Outcome o = run_json({workload(), "touch", "256", "500"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GE(num(o, "proc_rss_max"), 256 * kMiB);
  EXPECT_LT(num(o, "proc_rss_max"), 300 * kMiB);
  // PSS comes from passes over smaps_rollup (pss_sampler.h): one taken when the touch was within
  // 0.5 % (or 1 MiB) of its end may stand for the peak, the last pages unseen, when no pass falls
  // in the hold (a loaded host). Anything lower is not a sampling gap.
  EXPECT_GE(num(o, "proc_pss_max"), 256 * kMiB * (1 - 0.005)) << o.summary.dump();
  EXPECT_LT(num(o, "proc_pss_max"), 300 * kMiB);
  EXPECT_GE(num(o, "proc_anon_max"), 256 * kMiB);
  EXPECT_LT(num(o, "proc_rss_min"), 64 * kMiB);  // before the touch
  // Every page touched is a minor fault: 65536 pages of 4 KiB.
  EXPECT_GE(num(o, "proc_minor_faults"), 256 * kMiB / static_cast<double>(::sysconf(_SC_PAGESIZE)));
  EXPECT_GE(num(o, "global_mem_used_max"), num(o, "global_mem_used_min"));
}

TEST_F(RunTest, FsyncedWritesCountAsStorageBytes) {
  Outcome o = run_json({workload(), "write", "64", scratch_dir() + "/pm-write-test"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GE(num(o, "proc_io_write_bytes"), 64 * kMiB);
  EXPECT_LT(num(o, "proc_io_write_bytes"), 80 * kMiB);
  EXPECT_GE(num(o, "proc_io_wchar"), 64 * kMiB);
}

TEST_F(RunTest, ExitedChildrenKeepTheirCpuIoAndFaults) {
  // 3 children: each touches 64 MiB, writes 4 MiB with fsync, spins 300 ms, and exits before
  // the parent.
  Outcome o = run_json({workload(), "children", "3", "64", "4", "300"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(num(o, "proc_processes_seen_max"), 4);
  EXPECT_GE(num(o, "proc_io_write_bytes"), 3 * 4 * kMiB);
  EXPECT_GE(num(o, "proc_cpu_user_seconds") + num(o, "proc_cpu_system_seconds"), 3 * 0.3 * 0.9);
  EXPECT_GE(num(o, "proc_minor_faults"), 3 * 64 * kMiB / static_cast<double>(::sysconf(_SC_PAGESIZE)));
}

TEST_F(RunTest, ShortLivedChildrenAreAllSeen) {
  Outcome o = run_json({workload(), "forks", "20"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  if (!proc_events_available(o)) {
    GTEST_SKIP() << "proc connector unavailable here (" << o.summary["unavailable"]["proc_events"]
                 << "): children living under 100 ms may be missed";
  }
  EXPECT_EQ(num(o, "proc_processes_seen_max"), 21);
}

TEST_F(RunTest, GrandchildWhoseParentExitedIsStillFollowed) {
  Outcome o = run_json({workload(), "orphan", "8", "300"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(num(o, "proc_processes_seen_max"), 3);
  EXPECT_GE(num(o, "proc_io_write_bytes"), 8 * kMiB);
  EXPECT_GE(num(o, "proc_cpu_user_seconds") + num(o, "proc_cpu_system_seconds"), 0.3 * 0.9);
}

TEST_F(RunTest, ExitStatusOfTheCommandIsOurs) {
  Outcome o = run_json({workload(), "exit", "3"});
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.summary["exit_code"], 3);
}

TEST_F(RunTest, KilledCommandGives128PlusSignal) {
  Outcome o = run_json({"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(o.exit_code, 128 + SIGTERM);
  EXPECT_EQ(o.summary["signal"], SIGTERM);
}

TEST_F(RunTest, IntervalRecordsWhileTheCommandRuns) {
  Outcome o = run_json({workload(), "spin", "900"}, {"--interval", "200ms"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GE(o.intervals(), 3u);
  bool tree_seen = false;
  for (const auto& r : o.records) {
    if (r.value("type", "") != "interval" || !r.contains("process_tree")) continue;
    tree_seen = true;
    EXPECT_EQ(r["process_tree"]["processes"], 1);
    // The spinning process uses one CPU: user time grows by at most the time between the tree's
    // readings that close two intervals (the tree is read every 100 ms in run, on its own tick).
    double user = r["process_tree"]["cpu_user_seconds"].get<double>();
    EXPECT_LE(user, r["interval_s"].get<double>() + 0.1 + 0.02);
  }
  EXPECT_TRUE(tree_seen);
  // The workload burns 0.9 s of CPU time (its own clock): the tree's user + system time agrees.
  EXPECT_GE(num(o, "proc_cpu_user_seconds") + num(o, "proc_cpu_system_seconds"), 0.9 * 0.9);
}

// The interval records printed so far (of a perf-monitor still running).
std::vector<nlohmann::json> intervals_so_far(const RunningPm& pm) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(pm.report_so_far());
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"type\":\"interval\"") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

TEST_F(RunTest, FilePollFiguresBelongToTheIntervalTheyAreShownIn) {
  // NUMA figures are polled every interval ([file_poll] as long as --interval): memory this test
  // touches just after one record is printed must show in the very next record. A poll on its
  // own timer, a moment after the tick's, showed it a record late. (Held, not freed between
  // cycles: freed pages wait on per-CPU lists, not counted free, and the next touch would take
  // them.) A cycle counts only when the touching ended well before the next record was printed
  // (on a loaded machine populating the memory can take most of an interval, and the poll then sees
  // part of it, rightly); other processes move memory too: most of the cycles that count must see
  // it.
  std::string cfg = temp_base() + ".toml";
  std::ofstream(cfg) << "[file_poll]\ninterval_secs = 1\n";
  RunningPm pm({"run", "--config", cfg, "--format", "json", "--interval", "1s", "--", "sleep", "60"});
  ASSERT_TRUE(pm.wait_for_output("\"header\"")) << pm.err_so_far();
  using Clock = std::chrono::steady_clock;
  auto next_record = [&](size_t after) {
    for (int i = 0; i < 600 && intervals_so_far(pm).size() <= after; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    auto r = intervals_so_far(pm);
    return r.size() > after ? r.size() - 1 : std::string::npos;
  };
  auto used = [&](size_t k) {
    auto r = intervals_so_far(pm);
    const auto& numa = r.at(k)["numa"];
    return numa.contains("used_bytes") ? numa["used_bytes"].begin()->get<double>() : NAN;
  };
  // The test's own reading of the node: the kernel's MemUsed, as perf-monitor shows it.
  auto node0_used = [] {
    std::ifstream in("/sys/devices/system/node/node0/meminfo");
    for (std::string line; std::getline(in, line);) {
      if (auto at = line.find("MemUsed:"); at != std::string::npos) return std::stod(line.substr(at + 8)) * 1024;
    }
    return std::nan("");
  };
  // 96 MiB: far more than the rest of the machine moves in the few ms between the poll and the
  // test's reading after it, and populated quickly enough on a loaded machine to leave cycles
  // that count.
  constexpr size_t kLen = 96 * 1024 * 1024;
  // A loaded machine leaves fewer cycles that count, and other tests free memory in some of
  // them (a package build's linker, a test's children): a majority of 5 must see the touch. A
  // poll a record late sees it in none.
  constexpr int kCounted = 5, kMostCycles = 20;
  int seen = 0, counted = 0;
  std::vector<void*> held;
  size_t k = next_record(0);
  ASSERT_NE(k, std::string::npos) << pm.err_so_far();
  if (std::isnan(used(k)) || std::isnan(node0_used())) GTEST_SKIP() << "no NUMA node figures on this host";
  std::string said;
  for (int c = 0; c < kMostCycles && counted < kCounted; ++c) {
    k = next_record(k + 1);  // just printed: the next poll is an interval away
    ASSERT_NE(k, std::string::npos);
    double before = node0_used();
    void* p = ::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    auto touched = Clock::now();
    held.push_back(p);
    size_t with = next_record(k + 1);
    ASSERT_NE(with, std::string::npos);
    // The node as the test reads it right after the record came: the record was polled a few ms
    // before, so other processes' memory moved little since; the reading before the touch is an
    // interval away. The record belongs to its interval when it is the nearer of the two.
    double after = node0_used();
    auto margin = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - touched).count();
    double shown = used(with);
    bool counts = margin >= 250;  // the record came 250 ms or more after the touching ended
    said += " " + std::to_string(static_cast<int>((shown - before) / kMiB)) + " MiB over the reading before, " +
            std::to_string(static_cast<int>((after - shown) / kMiB)) + " MiB under the one after (touched " +
            std::to_string(margin) + " ms before the record" + (counts ? ")" : ", too late to count)");
    if (counts) {
      ++counted;
      if (std::fabs(shown - after) < std::fabs(shown - before)) ++seen;
    }
    k = with;
  }
  pm.stop(SIGINT);
  for (void* p : held) ::munmap(p, kLen);
  ::unlink(cfg.c_str());
  ASSERT_GE(counted, 3) << "the touching ended too close to the next record in most cycles:" << said;
  EXPECT_GT(2 * seen, counted) << "the records just after touching 96 MiB showed:" << said;
}

TEST_F(RunTest, SigintStillPrintsTheSummary) {
  Outcome o = run_pm({"run", "--format", "json", "--", workload(), "sleep", "10000"},
                     {.sigint_after = std::chrono::milliseconds(800)});
  ASSERT_FALSE(o.summary.is_null()) << o.out << o.err;
  EXPECT_EQ(o.summary["end_reason"], "interrupted");
  EXPECT_EQ(o.exit_code, 128 + SIGINT);  // the command got the SIGINT too and died of it
  EXPECT_LT(o.summary["duration_s"].get<double>(), 5.0);
}

TEST_F(RunTest, TextOutputToAFile) {
  std::string path = scratch_dir() + "/pm-output-test.txt";
  Outcome o = run_pm({"run", "-o", path, "--", workload(), "exit", "0"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("perf-monitor summary"), std::string::npos) << text;
  EXPECT_NE(text.find("exited with status 0"), std::string::npos) << text;
  ::unlink(path.c_str());
}

TEST_F(RunTest, AttachFollowsARunningTreeUntilItExits) {
  AttachedRun a = attach_to_workload({"children", "2", "16", "2", "2000"}, {"--format", "json", "--interval", "200ms"});
  const Outcome& o = a.o;
  EXPECT_EQ(o.exit_code, 0) << o.err;
  ASSERT_FALSE(o.summary.is_null()) << o.err;
  EXPECT_EQ(o.summary["mode"], "attach");
  EXPECT_EQ(o.summary["end_reason"], "exited");
  EXPECT_GE(num(o, "proc_processes_seen_max"), 3);
  // Counted from the moment of attaching: the tree's CPU but what can have passed before, never
  // more than the tree's own.
  double cpu = num(o, "proc_cpu_user_seconds") + num(o, "proc_cpu_system_seconds");
  EXPECT_LE(cpu, a.tree_cpu_s + 0.02);
  EXPECT_GE(cpu, a.tree_cpu_s - a.before_attach_max_s - 0.02) << "tree " << a.tree_cpu_s << " s";
  EXPECT_GE(cpu, 0.25 * a.tree_cpu_s) << "tree " << a.tree_cpu_s << " s";
}

}  // namespace
}  // namespace pm::test

namespace pm::test {
namespace {

std::string config_file(const std::string& name, const std::string& text) {
  std::string path = scratch_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST_F(RunTest, OrphansAreAdoptedEvenWithoutForkNotifications) {
  // Without the proc connector, the intermediate child may exit before any walk sees it; its
  // orphaned child is then reparented to perf-monitor (a subreaper), found, and counted.
  std::string cfg = config_file("pm-no-events.toml", "[process_tree]\nproc_events = false\n");
  Outcome o = run_json({workload(), "orphan", "8", "300"}, {"--config", cfg});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_GE(num(o, "proc_processes_seen_max"), 2);
  EXPECT_GE(num(o, "proc_io_write_bytes"), 8 * kMiB);
  EXPECT_GE(num(o, "proc_cpu_user_seconds") + num(o, "proc_cpu_system_seconds"), 0.3 * 0.9);
}

TEST_F(RunTest, ShortCommandStillHasEverySummaryKey) {
  // Gone before the first 100 ms sample: memory was never sampled, and says so (null), while the
  // counters are exact and the kernel's peak of its RSS is the run's maximum.
  Outcome o = run_json({workload(), "exit", "0"});
  for (const char* key : {"proc_vm_size_min",     "proc_vm_size_max",     "proc_rss_min",        "proc_rss_max",
                          "proc_pss_min",         "proc_pss_max",         "proc_shared_min",     "proc_shared_max",
                          "proc_anon_min",        "proc_anon_max",        "global_mem_used_min", "global_mem_used_max",
                          "global_cached_min",    "global_cached_max",    "global_anon_min",     "global_anon_max",
                          "global_swap_free_min", "global_swap_free_max", "proc_io_read_bytes",  "proc_io_write_bytes",
                          "proc_io_rchar",        "proc_io_wchar"}) {
    EXPECT_TRUE(o.summary.contains(key)) << key;
  }
  EXPECT_TRUE(o.summary["proc_rss_min"].is_null());
  EXPECT_TRUE(o.summary["proc_pss_max"].is_null());
  EXPECT_GT(num(o, "proc_rss_max"), 0);
  EXPECT_GT(num(o, "proc_minor_faults"), 0);
}

TEST_F(RunTest, ArgumentsThatAreNotUtf8DoNotBreakJson) {
  Outcome o = run_json({workload(), "exit", "4", "\xff\xfe"});
  EXPECT_EQ(o.exit_code, 2);  // the workload's own usage error: too many arguments
  ASSERT_FALSE(o.summary.is_null()) << o.out;
  EXPECT_EQ(o.summary["command"].size(), 4u);
}

// The command's standard output is its own, as under perf stat: the report goes to standard
// error (or -o FILE; -o - is standard output).
TEST_F(RunTest, TheCommandsStandardOutputIsItsAlone) {
  Outcome text = run_pm({"run", "--interval", "200ms", "--", "sh", "-c", "echo a; sleep 1.2; echo b"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, "a\nb\n");
  EXPECT_NE(text.err.find("=== perf-monitor summary"), std::string::npos) << text.err;
  Outcome json = run_pm({"run", "--format", "json", "--", "sh", "-c", "echo hello"});
  EXPECT_EQ(json.out, "hello\n");
  EXPECT_FALSE(json.summary.is_null()) << json.err;
  // -o -: the records on standard output, after (or among) the command's own lines.
  Outcome both = run_pm({"run", "--format", "json", "-o", "-", "--", "sh", "-c", "echo hello"});
  EXPECT_NE(both.out.find("\"header\""), std::string::npos) << both.out.substr(0, 200);
  EXPECT_NE(("\n" + both.out).find("\nhello\n"), std::string::npos) << both.out.substr(0, 400);
  EXPECT_FALSE(both.summary.is_null()) << both.out;
  EXPECT_EQ(both.err, "");
  // A command whose reader goes away: its own SIGPIPE, nothing of perf-monitor's in the pipe.
  int rc = std::system((binary() + " run -- seq 1 100000 2>/dev/null | head -2 > " + temp_base() + "-head").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
}

// As perf stat: the summary at the end, intervals only with -I/--interval; what this host lacks
// is said once, on one line at start (none of it repeated in the summary), and -q says nothing.
TEST_F(RunTest, IntervalsOnlyWhenAskedAndWhatIsMissingSaidOnce) {
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  Outcome plain = run_pm({"run", "--", "sh", "-c", "sleep 1.3"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(count(plain.err, "\n--- "), 0u) << plain.err;
  EXPECT_EQ(count(plain.err, "=== perf-monitor summary"), 1u) << plain.err;
  EXPECT_LE(count(plain.err, "not available"), 1u) << plain.err;
  size_t summary_at = plain.err.find("=== perf-monitor summary");
  ASSERT_NE(summary_at, std::string::npos);
  EXPECT_EQ(plain.err.find("not available", summary_at), std::string::npos) << plain.err;
  // Every source the JSON header lists as unavailable is named on that one line.
  Outcome json = run_pm({"run", "--format", "json", "--", "sh", "-c", "sleep 0.3"});
  ASSERT_FALSE(json.records.empty()) << json.err;
  EXPECT_EQ(json.intervals(), 0u) << json.err;
  const auto& header = json.records.front();
  ASSERT_EQ(header.value("type", ""), "header") << header.dump();
  for (const auto& [source, why] : header["unavailable"].items()) {
    std::string name = source.starts_with("pmc.") ? source.substr(4) : source;
    EXPECT_NE(plain.err.find(name), std::string::npos) << source << " not named:\n" << plain.err;
  }

  Outcome asked = run_pm({"run", "-I", "200ms", "--", "sh", "-c", "sleep 1.3"});
  EXPECT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_GE(count(asked.err, "\n--- "), 3u) << asked.err;
  Outcome asked_json = run_pm({"run", "--format", "json", "--interval", "200ms", "--", "sh", "-c", "sleep 1.3"});
  EXPECT_GE(asked_json.intervals(), 3u) << asked_json.err;

  Outcome quiet = run_pm({"run", "-q", "--", "true"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("not available"), std::string::npos) << quiet.err;
  EXPECT_EQ(quiet.err.rfind("=== perf-monitor summary", 0), 0u) << quiet.err;
}

TEST_F(RunTest, ClosedOutputPipeIsAnErrorOnceTheCommandEnds) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);  // nobody reads: every write fails with EPIPE
  std::string err = temp_base() + "-epipe.err";
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(e, 2);
    ::execl(binary().c_str(), "perf-monitor", "run", "-o", "-", "--interval", "100ms", "--", workload().c_str(), "sleep",
            "400", nullptr);
    ::_exit(126);
  }
  ::close(fds[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  // The report was lost: an error, said once; the command still ran to its end and was reaped.
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_GE(took, 0.4);
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("Broken pipe"), std::string::npos) << text.str();
  ::unlink(err.c_str());
}

}  // namespace
}  // namespace pm::test
