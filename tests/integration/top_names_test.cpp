// SPDX-License-Identifier: Apache-2.0
// Names that users choose (a process's own name, the program it runs, a cgroup directory) are
// data: while processes and a cgroup with invalid UTF-8 and control bytes in their names exist,
// the real promtool accepts the exposition and the JSON lines parse; processes that keep renaming
// themselves leave no series behind once their names are gone.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/cgroup.h"
#include "integration/harness.h"
#include "integration/prom_harness.h"

namespace pm::test {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

// Burns a little CPU now and then until killed, so every interval has its figures.
[[noreturn]] void keep_busy() {
  for (;;) {
    auto until = std::chrono::steady_clock::now() + milliseconds(5);
    while (std::chrono::steady_clock::now() < until) {
    }
    ::usleep(20000);
  }
}

// Forks a child that joins `cgroup_dir` (when given), names itself `name` and keeps busy.
pid_t named_child(const std::string& cgroup_dir, const std::string& name) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!cgroup_dir.empty()) std::ofstream(cgroup_dir + "/cgroup.procs") << ::getpid() << std::flush;
    ::prctl(PR_SET_NAME, name.c_str());
    keep_busy();
  }
  return pid;
}

void end_all(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) ::kill(p, SIGKILL);
  for (pid_t p : pids) ::waitpid(p, nullptr, 0);
}

// The values of one label over the series of a family: "group" of perf_monitor_process_group_*.
std::set<std::string> label_values(const std::string& text, const std::string& prefix, const std::string& label) {
  std::set<std::string> out;
  for (const auto& [series, value] : parse_exposition(text)) {
    if (series.rfind(prefix, 0) != 0) continue;
    auto at = series.find(label + "=\"");
    if (at == std::string::npos) continue;
    at += label.size() + 2;
    out.insert(series.substr(at, series.find('"', at) - at));
  }
  return out;
}

class TopNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: eBPF and test cgroups";
    if (unified_mount().empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
    std::string report;
    if (promtool_check("", &report) == 127) GTEST_SKIP() << "no promtool (Debian's prometheus package)";
  }
};

TEST_F(TopNamesTest, HostileNamesKeepTheScrapeAndTheJsonValid) {
  const std::string hostile =
      "\xff\xfe"
      "bad\x1b]0;x\x07";
  std::string dir = unified_mount() + "/pm-test-" + std::to_string(::getpid()) + "-" + hostile;
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
  std::vector<pid_t> kids;
  // In the cgroup: a process with the name, and two whose names differ only in invalid bytes
  // (one label value when cleaned: still one series, no duplicate for the parser).
  kids.push_back(named_child(dir, "x" + hostile));
  kids.push_back(named_child(dir,
                             "x\xff"
                             "dup"));
  kids.push_back(named_child(dir,
                             "x\xfe"
                             "dup"));
  // The name of the program it runs: exec'd through a link with such a name, and such arguments.
  std::string link = temp_base() + "-x\xfe\x1b[2J\x07";
  fs::remove(link);
  ASSERT_EQ(::symlink(workload().c_str(), link.c_str()), 0);
  pid_t execd = ::fork();
  if (execd == 0) {
    std::ofstream(dir + "/cgroup.procs") << ::getpid() << std::flush;
    ::execl(link.c_str(), link.c_str(), "spin", "30000", nullptr);
    ::_exit(127);
  }
  kids.push_back(execd);
  int port = free_port();
  std::string json = temp_base() + "-hostile.jsonl";
  RunningPm pm({"--interval", "500ms", "--format", "json", "--output", json, "--top", "100000", "--prometheus",
                std::to_string(port), "--cgroup-depth", "1", "--prometheus-processes", "^x"});
  std::string text = scrape_when_ready(port, "perf_monitor_process_group_cpu_user_seconds_total{");
  std::this_thread::sleep_for(milliseconds(1100));  // two more readings: every row there
  text = http_get(port, "/metrics").body;
  Outcome o = pm.stop(SIGINT);
  end_all(kids);
  for (int i = 0; i < 100 && ::rmdir(dir.c_str()) != 0; ++i) std::this_thread::sleep_for(milliseconds(20));
  fs::remove(link);
  ASSERT_FALSE(text.empty()) << o.err;

  std::string report;
  EXPECT_EQ(promtool_check(text, &report), 0) << report;
  for (char c : text) ASSERT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << "a control byte";
  const std::string r = "\xEF\xBF\xBD";
  const std::string shown = r + r + "bad" + r + "]0;x" + r;
  std::set<std::string> groups = label_values(text, "perf_monitor_process_group_cpu_user_seconds_total", "group");
  EXPECT_EQ(groups.count("x" + shown), 1u) << text;
  EXPECT_EQ(groups.count("x" + r + "dup"), 1u) << text;
  std::set<std::string> cgroups = label_values(text, "perf_monitor_cgroup_cpu_user_seconds_total", "cgroup");
  EXPECT_EQ(cgroups.count("/pm-test-" + std::to_string(::getpid()) + "-" + shown), 1u) << text;
  // One series per label set, the two "dup" processes in one (both of them live).
  std::istringstream lines(text);
  std::set<std::string> seen;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(seen.insert(line.substr(0, line.rfind(' '))).second) << "twice: " << line;
  }
  EXPECT_NE(text.find("perf_monitor_process_group_processes{group=\"x" + r + "dup\"} 2\n"), std::string::npos) << text;

  // Every JSON line parses (nlohmann rejects invalid UTF-8), the hostile process among the rows.
  std::ifstream in(json);
  int lines_read = 0;
  bool named = false;
  for (std::string line; std::getline(in, line); ++lines_read) {
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(line)) << line;
    if (!j.contains("top")) continue;
    for (const auto& p : j["top"]["processes"])
      named = named || p.value("comm", "") == "x" + r + r + "bad" + "\x1b]0;x\x07";
  }
  fs::remove(json);
  EXPECT_GT(lines_read, 2);
  EXPECT_TRUE(named) << "the process's name in JSON: invalid bytes replaced, control characters escaped";
}

TEST_F(TopNamesTest, RenamedProcessesLeaveNoSeriesBehind) {
  // Four processes rename themselves every 5 ms for 2.5 s: each scrape holds at most the names
  // alive at its reading (and those that ended in its interval), and once they are gone, none.
  int port = free_port();
  RunningPm pm({"--interval", "500ms", "--output", "/dev/null", "--prometheus", std::to_string(port),
                "--prometheus-processes", "^xr-"});
  std::string first = scrape_when_ready(port, "perf_monitor_top_dropped_series_total");
  ASSERT_FALSE(first.empty()) << pm.err_so_far();
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    pid_t pid = ::fork();
    if (pid == 0) {
      for (int n = 0; n < 500; ++n) {
        std::string name = "xr-" + std::to_string(k) + "-" + std::to_string(n);
        ::prctl(PR_SET_NAME, name.c_str());
        ::usleep(5000);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  size_t most = 0, scrapes = 0;
  for (auto until = std::chrono::steady_clock::now() + milliseconds(2000); std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(milliseconds(300));
    auto names = label_values(http_get(port, "/metrics").body, "perf_monitor_process_group_", "group");
    most = std::max(most, names.size());
    ++scrapes;
  }
  for (pid_t p : kids) ::waitpid(p, nullptr, 0);
  std::set<std::string> after;
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(milliseconds(600));
    after = label_values(http_get(port, "/metrics").body, "perf_monitor_process_group_", "group");
    if (after.empty()) break;
  }
  Outcome o = pm.stop(SIGINT);
  EXPECT_GT(most, 0u) << "the renamed processes were exported (" << scrapes << " scrapes)\n" << o.err;
  EXPECT_LE(most, 8u) << "four processes: their names at a reading, and at most as many that ended";
  EXPECT_TRUE(after.empty()) << *after.begin();
}

}  // namespace
}  // namespace pm::test
