// SPDX-License-Identifier: Apache-2.0
// `perf-monitor top` as a person sees it: started from a shell in a tmux pane (80x24 and 200x50),
// driven with send-keys, read with capture-pane. The truths: the processes this test started
// (a CPU burner, processes waiting for one CPU, a cgroup's members as its cgroup.procs lists
// them), and the terminal itself (tmux's alternate-screen flag, the shell's prompt, `stty -g`).
// Skips, saying why, where tmux cannot run or the top lists cannot be had (no root, no tp_btf).
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct Shell {
  int rc = -1;
  std::string out;
};

Shell sh(const std::string& cmd) {
  Shell r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> fields(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

// A tmux server of our own (its own socket), one session with a plain shell in a pane of the
// given size.
class Tmux {
 public:
  // A socket per pane: a server being killed must not take the next test's session with it.
  // as_user: a command the shell runs under (setpriv ...: another user's shell), else root's.
  Tmux(int width, int height, const std::string& as_user = "")
      : socket_("pm-top-test-" + std::to_string(::getpid()) + "-" + std::to_string(++count_)) {
    std::string shell = "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=" + std::string(as_user.empty() ? "/root" : "/tmp") +
                        " TERM=screen LANG=C.UTF-8 PS1='PMTEST$ ' " + as_user + " bash --norc --noprofile";
    Shell r = tmux("-f /dev/null new-session -d -s main -x " + std::to_string(width) + " -y " + std::to_string(height) +
                   " " + quote(shell));
    if (r.rc != 0) {
      error_ = "tmux cannot start a session: " + r.out;
      return;
    }
    started_ = true;
    socket_path_ = format("#{socket_path}");
    if (!wait_for([&](const std::string& s) { return s.find("PMTEST$") != std::string::npos; }, 10s)) {
      error_ = "the shell in tmux shows no prompt";
    }
  }
  ~Tmux() {
    if (!started_) return;
    tmux("kill-server");
    if (!socket_path_.empty()) ::unlink(socket_path_.c_str());
  }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  [[nodiscard]] const std::string& error() const { return error_; }

  Shell tmux(const std::string& args) const { return sh("tmux -L " + socket_ + " " + args); }
  void type(const std::string& text) const { tmux("send-keys -t main -l " + quote(text)); }
  void keys(const std::string& names) const { tmux("send-keys -t main " + names); }
  [[nodiscard]] std::string screen() const { return tmux("capture-pane -p -t main").out; }
  [[nodiscard]] std::string format(const std::string& f) const {
    std::string s = tmux("display-message -p -t main " + quote(f)).out;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  [[nodiscard]] bool alternate_screen() const { return format("#{alternate_on}") == "1"; }

  bool wait_for(const std::function<bool(const std::string&)>& ok, std::chrono::milliseconds timeout) const {
    auto end = std::chrono::steady_clock::now() + timeout;
    do {
      if (ok(screen())) return true;
      std::this_thread::sleep_for(100ms);
    } while (std::chrono::steady_clock::now() < end);
    return false;
  }

  // The perf-monitor the shell runs in the foreground (0 when none).
  [[nodiscard]] pid_t monitor_pid() const {
    std::string shell = format("#{pane_pid}");
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(e.path() / "stat");
      std::string line;
      std::getline(stat, line);
      size_t close = line.rfind(')');
      if (close == std::string::npos || line.find("(perf-monitor)") == std::string::npos) continue;
      auto f = fields(line.substr(close + 1));
      if (f.size() > 1 && f[1] == shell) return std::stoi(name);
    }
    return 0;
  }

 private:
  static inline int count_ = 0;
  std::string socket_, socket_path_;
  std::string error_;
  bool started_ = false;
};

// The list as the screen shows it: the column titles, then one row per line down to the first
// empty one. Cells are read by the titles' places (numbers end under their title's end, names
// start under their title), so an empty cell or a name with spaces shifts nothing.
struct Table {
  std::string header_line;
  std::vector<std::string> header;
  std::vector<std::string> lines;
  std::vector<std::vector<std::string>> rows;  // the lines' fields
  std::string caption;

  [[nodiscard]] std::string cell(size_t row, const std::string& title) const {
    size_t at = header_line.find(" " + title + " ");
    if (header_line.rfind(title + " ", 0) == 0)
      at = 0;
    else if (at != std::string::npos)
      ++at;
    else if (header_line.size() >= title.size() &&
             header_line.compare(header_line.size() - title.size(), title.size(), title) == 0)
      at = header_line.size() - title.size();
    if (at == std::string::npos || row >= lines.size()) return "";
    const std::string& l = lines[row];
    bool name = title == "COMM" || title == "COMMAND" || title == "CGROUP" || title == "S" || title == "USER";
    if (name) {
      size_t next = header_line.find_first_not_of(' ', header_line.find(' ', at));
      std::string v = l.substr(std::min(at, l.size()), next == std::string::npos ? std::string::npos : next - at - 1);
      while (!v.empty() && v.back() == ' ') v.pop_back();
      return v;
    }
    size_t end = std::min(at + title.size(), l.size());
    size_t start = l.find_last_of(' ', end == 0 ? 0 : end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    return l.substr(start, end - start);
  }
};

Table table_of(const std::string& screen) {
  Table t;
  auto ls = lines_of(screen);
  for (size_t i = 0; i < ls.size(); ++i) {
    auto f = fields(ls[i]);
    bool header =
        !f.empty() && (f[0] == "PID" || f[0] == "PROCS" || f[0] == "TID") && ls[i].find("CPU%") != std::string::npos;
    if (!header) continue;
    t.header_line = ls[i];
    t.header = f;
    if (i > 0) t.caption = ls[i - 1];
    // The footer is the last line; rows are the lines between, up to the first empty one.
    for (size_t j = i + 1; j + 1 < ls.size(); ++j) {
      auto r = fields(ls[j]);
      if (r.empty()) break;
      t.lines.push_back(ls[j]);
      t.rows.push_back(r);
    }
    break;
  }
  return t;
}

// A process the test started (pinned to a CPU, in a cgroup, as asked); killed at the end.
class Workload {
 public:
  Workload(const std::vector<std::string>& args, int cpu = -1, const std::string& cgroup_procs = "", int nice = 0) {
    pid_ = ::fork();
    if (pid_ == 0) {
      if (nice != 0) {
        // A session of its own is a scheduling group of its own (autogroup), weighted by this
        // nice value against the other sessions on the machine, not only within ours.
        ::setsid();
        std::ofstream("/proc/self/autogroup") << nice << "\n";
        ::setpriority(PRIO_PROCESS, 0, nice);
      }
      if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        ::sched_setaffinity(0, sizeof set, &set);
      }
      if (!cgroup_procs.empty()) {
        std::ofstream(cgroup_procs) << ::getpid() << "\n";
      }
      std::vector<std::string> copy = args;
      std::vector<char*> argv;
      std::string bin = workload();
      argv.push_back(bin.data());
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~Workload() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// A test cgroup on the v2 hierarchy (unified beside v1, or the whole of a pure v2 host).
class TestCgroup {
 public:
  TestCgroup() {
    for (std::string root : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      if (!fs::exists(root + "/cgroup.procs") || !fs::exists(root + "/cgroup.controllers")) continue;
      name_ = "/pm-top-test-" + std::to_string(::getpid());
      dir_ = root + name_;
      if (::mkdir(dir_.c_str(), 0755) != 0) dir_.clear();
      return;
    }
  }
  ~TestCgroup() {
    if (dir_.empty()) return;
    // Its processes are gone (killed and reaped) by now; rmdir may need a moment.
    for (int i = 0; i < 50 && ::rmdir(dir_.c_str()) != 0; ++i) std::this_thread::sleep_for(20ms);
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;
  [[nodiscard]] bool ok() const { return !dir_.empty(); }
  [[nodiscard]] const std::string& name() const { return name_; }  // as perf-monitor shows it
  [[nodiscard]] std::string procs() const { return dir_ + "/cgroup.procs"; }
  [[nodiscard]] std::set<std::string> members() const {
    std::ifstream in(procs());
    std::set<std::string> out;
    for (std::string l; std::getline(in, l);) out.insert(l);
    return out;
  }

 private:
  std::string name_, dir_;
};

bool wait_members(const TestCgroup& cg, size_t n) {
  for (int i = 0; i < 100; ++i) {
    if (cg.members().size() >= n) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Why these tests cannot run here, or "" when they can: tmux, root, and the top lists.
const std::string& cannot_run() {
  static const std::string why = [] {
    if (sh("tmux -V").rc != 0) return std::string("tmux is not installed (scripts/install-deps.sh)");
    if (::geteuid() != 0) return std::string("needs root (eBPF)");
    Outcome o = run_pm({"top", "--interval", "300ms", "--duration", "700ms"});
    if (o.out.find("top      processes by") == std::string::npos) {
      return "perf-monitor top shows no lists here: " + o.err;
    }
    return std::string();
  }();
  return why;
}

#define PM_SKIP_UNLESS_RUNNABLE()                            \
  do {                                                       \
    if (!cannot_run().empty()) GTEST_SKIP() << cannot_run(); \
  } while (0)

// Waits until `want` holds for the first row, over several refreshes: on a shared machine
// another process can take the top for an interval.
bool first_row_becomes(const Tmux& t, const std::function<bool(const std::string&)>& want,
                       std::chrono::milliseconds timeout = 15s) {
  return t.wait_for(
      [&](const std::string& s) {
        Table tb = table_of(s);
        return !tb.rows.empty() && want(tb.rows[0][0]);
      },
      timeout);
}

// Whether the process `pid` leads the CPU table as far as the machine allows: at ≥ 50 % of a
// CPU, with no more rows above it than the other CPUs can hold at its own share (a spinner of
// another test, alone on the other CPU of a 2-CPU machine, can run at 100 % and lead it).
bool leads_by_cpu(const std::string& screen, const std::string& pid) {
  Table tb = table_of(screen);
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  for (size_t r = 0; r < tb.rows.size(); ++r) {
    if (tb.rows[r].empty() || tb.rows[r][0] != pid) continue;
    double share = std::atof(tb.cell(r, "CPU%").c_str());
    return share >= 50 && static_cast<double>(r + 1) * share <= 100.0 * static_cast<double>(cpus);
  }
  return false;
}

void start_top(const Tmux& t, const std::string& extra = "", const std::string& interval = "500ms") {
  t.type(binary() + " top --interval " + interval + extra);
  t.keys("Enter");
}

class TopViewSizes : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(TopViewSizes, BurnerOnTheFirstRowAndSortKeysReorder) {
  PM_SKIP_UNLESS_RUNNABLE();
  auto [w, h] = GetParam();
  // On CPU 0, a burner (nice -10) and four spinning threads of one process (nice 19): the burner
  // takes nearly all of the CPU even on a busy machine, the threads wait nearly all the time.
  Workload burner({"spin", "600000"}, 0, "", -10);
  Workload queued({"threads", "4", "600000"}, 0, "", 19);
  std::set<std::string> queued_pids = {std::to_string(queued.pid())};
  Tmux t(w, h);
  ASSERT_TRUE(t.error().empty()) << t.error();
  start_top(t);
  std::string burner_pid = std::to_string(burner.pid());
  EXPECT_TRUE(t.wait_for([&](const std::string& sc) { return leads_by_cpu(sc, burner_pid); }, 15s))
      << "the burner " << burner_pid << " does not lead by CPU:\n"
      << t.screen();
  EXPECT_TRUE(t.alternate_screen());
  std::string screen = t.screen();
  EXPECT_NE(screen.find("PROCESSES ("), std::string::npos) << screen;
  EXPECT_NE(screen.find(") by cpu"), std::string::npos) << screen;
  EXPECT_NE(screen.find("CPU  busy"), std::string::npos) << screen;  // the system block
  EXPECT_NE(screen.find("MEM  used"), std::string::npos) << screen;
  EXPECT_NE(screen.find("LOAD "), std::string::npos) << screen;
  EXPECT_NE(screen.find("PSI "), std::string::npos) << screen;
  Table tb = table_of(screen);
  ASSERT_FALSE(tb.rows.empty()) << screen;
  // c: the names instead of the command lines.
  t.type("c");
  ASSERT_TRUE(t.wait_for([](const std::string& s) { return table_of(s).header_line.find("COMMAND") == std::string::npos; },
                         5s))
      << t.screen();
  EXPECT_TRUE(t.wait_for(
      [&](const std::string& s) {
        Table named = table_of(s);
        for (size_t r = 0; r < named.rows.size(); ++r) {
          if (named.rows[r][0] == burner_pid) return named.cell(r, "COMM") == "pm-workload";
        }
        return false;
      },
      10s))
      << t.screen();
  t.type("c");
  ASSERT_TRUE(t.wait_for([](const std::string& s) { return table_of(s).header_line.find("COMMAND") != std::string::npos; },
                         5s))
      << t.screen();
  screen = t.screen();
  tb = table_of(screen);
  // Every line fits the pane; the wide pane shows every column.
  for (const std::string& l : lines_of(screen)) EXPECT_LE(static_cast<int>(l.size()), w) << l;
  if (w >= 200) {
    for (const char* col : {"USER", "S", "NI", "USR%", "SYS%", "RUNQ%", "BLK%", "READ/s", "WRITE/s", "FLT/s", "CSW/s",
                            "RSS", "CGROUP", "COMMAND"}) {
      EXPECT_NE(std::find(tb.header.begin(), tb.header.end(), col), tb.header.end()) << col << "\n" << screen;
    }
  }

  // R: by run-queue wait, the waiting threads' process first; P: the burner again.
  t.type("R");
  EXPECT_TRUE(t.wait_for([](const std::string& s) { return s.find(") by runq") != std::string::npos; }, 5s));
  EXPECT_TRUE(first_row_becomes(t, [&](const std::string& pid) { return queued_pids.count(pid) != 0; }))
      << "the waiting threads' process " << queued.pid() << " is not first by run-queue wait:\n"
      << t.screen();
  // Four threads that wait nearly all the time: far more than 40 % of the interval.
  EXPECT_TRUE(t.wait_for(
      [&](const std::string& sc) {
        Table rq = table_of(sc);
        return !rq.rows.empty() && rq.rows[0][0] == std::to_string(queued.pid()) &&
               std::stod(rq.cell(0, "RUNQ%")) > 100;
      },
      10s))
      << t.screen();
  t.type("P");
  EXPECT_TRUE(t.wait_for([&](const std::string& sc) { return leads_by_cpu(sc, burner_pid); }, 15s)) << t.screen();
  t.type("q");
  EXPECT_TRUE(t.wait_for([](const std::string& s) { return s.rfind("PMTEST$") != std::string::npos; }, 10s));
}

TEST_P(TopViewSizes, CgroupExpandsToItsProcesses) {
  PM_SKIP_UNLESS_RUNNABLE();
  TestCgroup cg;
  if (!cg.ok()) GTEST_SKIP() << "no cgroup v2 hierarchy to create a test cgroup in";
  auto [w, h] = GetParam();
  std::set<std::string> members;
  {
    Workload burner({"spin", "600000"}, -1, cg.procs());
    Workload sleeper({"sleep", "600000"}, -1, cg.procs());
    Workload outside({"sleep", "600000"});
    ASSERT_TRUE(wait_members(cg, 2)) << "the workloads did not join " << cg.name();
    members = cg.members();
    Tmux t(w, h);
    ASSERT_TRUE(t.error().empty()) << t.error();
    start_top(t);
    ASSERT_TRUE(t.wait_for([](const std::string& s) { return !table_of(s).rows.empty(); }, 15s)) << t.screen();
    // g: the cgroups; filter to the test's; Enter: its processes.
    t.type("g");
    ASSERT_TRUE(t.wait_for([](const std::string& s) { return s.find("CGROUPS (") != std::string::npos; }, 5s))
        << t.screen();
    t.type("/" + cg.name().substr(1));
    t.keys("Enter");
    ASSERT_TRUE(t.wait_for(
        [&](const std::string& s) {
          Table tb = table_of(s);
          return tb.rows.size() == 1 && tb.rows[0].back() == cg.name();
        },
        10s))
        << "the test cgroup is not the one row:\n"
        << t.screen();
    Table one = table_of(t.screen());
    EXPECT_EQ(one.rows[0][0], "2") << t.screen();  // PROCS
    t.keys("Enter");
    ASSERT_TRUE(t.wait_for(
        [&](const std::string& s) {
          return s.find("PROCESSES in cgroup " + cg.name()) != std::string::npos && table_of(s).rows.size() == 2;
        },
        10s))
        << t.screen();
    std::set<std::string> shown;
    for (const auto& r : table_of(t.screen()).rows) shown.insert(r[0]);
    EXPECT_EQ(shown, members) << t.screen();
    EXPECT_EQ(shown.count(std::to_string(outside.pid())), 0u);
    // Back to the cgroups.
    t.keys("Left");
    EXPECT_TRUE(t.wait_for([](const std::string& s) { return s.find("CGROUPS (") != std::string::npos; }, 5s))
        << t.screen();
    t.type("q");
    EXPECT_TRUE(t.wait_for([](const std::string& s) { return s.rfind("PMTEST$") != std::string::npos; }, 10s));
  }
}

INSTANTIATE_TEST_SUITE_P(Panes, TopViewSizes, ::testing::Values(std::pair{80, 24}, std::pair{200, 50}),
                         [](const auto& p) {
                           return std::to_string(p.param.first) + "x" + std::to_string(p.param.second);
                         });

// Quitting however it happens gives the terminal back as it was: the prompt, no alternate
// screen, the same terminal modes (stty -g), exit status 0.
void expect_terminal_restored(const std::function<void(Tmux&)>& end_it) {
  Tmux t(80, 24);
  ASSERT_TRUE(t.error().empty()) << t.error();
  std::string base = temp_base();
  t.type("stty -g > " + base + ".before; clear");
  t.keys("Enter");
  ASSERT_TRUE(t.wait_for([&](const std::string&) { return fs::exists(base + ".before"); }, 5s));
  start_top(t);
  ASSERT_TRUE(t.wait_for([](const std::string& s) { return !table_of(s).rows.empty(); }, 15s)) << t.screen();
  EXPECT_TRUE(t.alternate_screen());
  end_it(t);
  ASSERT_TRUE(t.wait_for([&](const std::string&) { return t.monitor_pid() == 0; }, 15s)) << "perf-monitor still runs";
  t.type("echo rc=$?; stty -g > " + base + ".after");
  t.keys("Enter");
  ASSERT_TRUE(t.wait_for([](const std::string& s) { return s.find("rc=") != std::string::npos; }, 5s)) << t.screen();
  EXPECT_FALSE(t.alternate_screen());
  std::string screen = t.screen();
  EXPECT_NE(screen.find("rc=0"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("PROCESSES ("), std::string::npos) << "the view is left on the screen:\n" << screen;
  EXPECT_NE(screen.rfind("PMTEST$"), std::string::npos) << screen;
  ASSERT_TRUE(t.wait_for([&](const std::string&) { return fs::exists(base + ".after"); }, 5s));
  std::ifstream before(base + ".before"), after(base + ".after");
  std::string b, a;
  std::getline(before, b);
  std::getline(after, a);
  EXPECT_EQ(a, b) << "terminal modes differ after perf-monitor top";
  // The terminal echoes what is typed again (it would not in the view's modes).
  t.type("echo typed-back");
  EXPECT_TRUE(t.wait_for([](const std::string& s) { return s.find("echo typed-back") != std::string::npos; }, 5s));
  t.keys("Enter");
}

TEST(TopViewTerminal, QRestoresTheTerminal) {
  PM_SKIP_UNLESS_RUNNABLE();
  expect_terminal_restored([](Tmux& t) { t.type("q"); });
}

TEST(TopViewTerminal, CtrlCRestoresTheTerminal) {
  PM_SKIP_UNLESS_RUNNABLE();
  expect_terminal_restored([](Tmux& t) { t.keys("C-c"); });
}

TEST(TopViewTerminal, SigtermRestoresTheTerminal) {
  PM_SKIP_UNLESS_RUNNABLE();
  expect_terminal_restored([](Tmux& t) {
    pid_t pid = t.monitor_pid();
    ASSERT_GT(pid, 0) << "perf-monitor not found under the pane's shell";
    ::kill(pid, SIGTERM);
  });
}

// A pane made wider and taller is drawn at its new size at once (SIGWINCH), not at the next
// interval: more columns, more rows, seconds before the next interval is due.
TEST(TopViewTerminal, ResizedPaneIsRedrawnAtItsNewSize) {
  PM_SKIP_UNLESS_RUNNABLE();
  Tmux t(80, 24);
  ASSERT_TRUE(t.error().empty()) << t.error();
  start_top(t, "", "8s");
  ASSERT_TRUE(t.wait_for([](const std::string& s) { return !table_of(s).rows.empty(); }, 20s)) << t.screen();
  EXPECT_EQ(table_of(t.screen()).header_line.find("CGROUP"), std::string::npos);
  t.tmux("resize-window -t main -x 200 -y 50");
  EXPECT_TRUE(t.wait_for(
      [](const std::string& s) {
        Table tb = table_of(s);
        auto ls = lines_of(s);
        return tb.header_line.find("CGROUP") != std::string::npos && ls.size() == 50 && !fields(ls.back()).empty();
      },
      5s))
      << t.screen();
  t.type("q");
  EXPECT_TRUE(t.wait_for([](const std::string& s) { return s.rfind("PMTEST$") != std::string::npos; }, 10s));
}

// Not on a terminal: the system block and the tables as text, once per interval, no escapes.
TEST(TopViewTerminal, NotOnATerminalPrintsTextTables) {
  PM_SKIP_UNLESS_RUNNABLE();
  Workload burner({"spin", "600000"}, -1, "", -10);
  Outcome o = run_pm({"top", "--interval", "500ms", "--duration", "2200ms"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out.find('\x1b'), std::string::npos);
  auto ls = lines_of(o.out);
  size_t tables = 0, burner_near_top = 0;
  std::string pid = std::to_string(burner.pid());
  for (size_t i = 0; i + 2 < ls.size(); ++i) {
    if (ls[i].rfind("top      processes by cpu", 0) != 0) continue;
    ++tables;
    EXPECT_EQ(fields(ls[i + 1])[0], "PID") << ls[i + 1];
    // The burner among the first rows, at most of a CPU (a spinner of another test running
    // beside this one, on a 2-CPU machine, may lead): its CPU% is the field that ends where the
    // header's does.
    size_t cpu_end = ls[i + 1].find("CPU%") + 4;
    for (size_t r = i + 2; r < std::min(ls.size(), i + 5); ++r) {
      auto f = fields(ls[r]);
      if (f.empty() || f[0] != pid) continue;
      auto head = fields(ls[r].substr(0, std::min(cpu_end, ls[r].size())));
      if (!head.empty() && std::atof(head.back().c_str()) >= 50) ++burner_near_top;
    }
  }
  // Four intervals in 2.2 s on a quiet machine; a loaded one stretched an interval to 3.2 s.
  EXPECT_GE(tables, 2u) << o.out;
  EXPECT_GE(burner_near_top, 1u) << "the burner was never among the first rows at most of a CPU:\n" << o.out;
  EXPECT_NE(o.out.find("\n         cgroups by cpu"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("cpu      user"), std::string::npos) << o.out;  // the usual system block
}


// ---- perf-monitor top for a normal user: from /proc, as top and htop run. ----

// Runs as: root switches to nobody (setpriv) for the shell and the burner; a normal user is
// already unprivileged and runs as itself.
std::string as_unprivileged() {
  return ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups" : "";
}

// The binary where an unprivileged user can run it (the build tree may be root's alone).
class ReachableBinary {
 public:
  ReachableBinary() {
    char tmpl[] = "/tmp/pm-top-user-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
    std::error_code ec;
    fs::copy_file(binary(), dir_ + "/perf-monitor", ec);
    if (ec) return;
    ::chmod((dir_ + "/perf-monitor").c_str(), 0755);
    path_ = dir_ + "/perf-monitor";
  }
  ~ReachableBinary() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  ReachableBinary(const ReachableBinary&) = delete;
  ReachableBinary& operator=(const ReachableBinary&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

// A shell loop burning a CPU as the unprivileged user, its command line marked with its own
// word (PMBURN_<test pid>) near the start, so an 80-column COMMAND shows it.
class UserBurner {
 public:
  UserBurner() : mark_("PMBURN_" + std::to_string(::getpid())) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string loop = mark_ + "=1; while :; do :; done";
      if (::geteuid() == 0) {
        ::execlp("setpriv", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", loop.c_str(),
                 static_cast<char*>(nullptr));
      } else {
        ::execlp("sh", "sh", "-c", loop.c_str(), static_cast<char*>(nullptr));
      }
      ::_exit(127);
    }
  }
  ~UserBurner() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  UserBurner(const UserBurner&) = delete;
  UserBurner& operator=(const UserBurner&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] const std::string& mark() const { return mark_; }
  // Whether it ended (by `sig`) within the timeout.
  bool ended_by(int sig, std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    do {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFSIGNALED(st) && WTERMSIG(st) == sig;
      }
      std::this_thread::sleep_for(50ms);
    } while (std::chrono::steady_clock::now() < end);
    return false;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string mark_;
};

// The burner's row on the screen, or -1.
int row_of(const Table& tb, pid_t pid) {
  for (size_t r = 0; r < tb.rows.size(); ++r) {
    if (tb.rows[r][0] == std::to_string(pid)) return static_cast<int>(r);
  }
  return -1;
}

class TopViewUnprivileged : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(TopViewUnprivileged, OwnBurnerWithUserStateCommandTreeKillHelpAndNothingAfterQuit) {
  if (sh("tmux -V").rc != 0) GTEST_SKIP() << "tmux is not installed (scripts/install-deps.sh)";
  if (::geteuid() == 0 && sh("setpriv --version").rc != 0) GTEST_SKIP() << "no setpriv to become a normal user";
  auto [w, h] = GetParam();
  ReachableBinary bin;
  ASSERT_FALSE(bin.path().empty()) << "cannot copy the binary where a normal user can run it";
  UserBurner burner;
  ASSERT_GT(burner.pid(), 0);
  std::string user = ::geteuid() == 0 ? "nobody" : sh("id -un").out.substr(0, sh("id -un").out.size() - 1);
  Tmux t(w, h, as_unprivileged());
  ASSERT_TRUE(t.error().empty()) << t.error();
  t.type("clear");
  t.keys("Enter");
  // The cleared screen's prompt before the command is typed: typed while `clear` still runs, the
  // terminal echoes it ahead of the prompt (a loaded machine is slow to run it), and the screen
  // after q would not begin with a prompt.
  ASSERT_TRUE(t.wait_for(
      [](const std::string& s) {
        size_t shown = 0;
        bool prompt = false;
        for (const std::string& l : lines_of(s)) {
          if (fields(l).empty()) continue;
          ++shown;
          prompt = l.rfind("PMTEST$", 0) == 0;
        }
        return shown == 1 && prompt;
      },
      10s))
      << t.screen();
  t.type(bin.path() + " top --interval 500ms");
  t.keys("Enter");
  // Its row: its user, state R, its command line; the note says why some figures are n/a.
  auto burner_row_ok = [&](const std::string& s) {
    Table tb = table_of(s);
    int r = row_of(tb, burner.pid());
    if (r < 0) return false;
    auto at = static_cast<size_t>(r);
    return tb.cell(at, "USER") == user && tb.cell(at, "S") == "R" &&
           tb.cell(at, "COMMAND").find("sh -c " + burner.mark()) == 0;
  };
  ASSERT_TRUE(t.wait_for(burner_row_ok, 30s)) << "the burner " << burner.pid() << " is not shown as " << user
                                              << ", R, with its command line:\n"
                                              << t.screen();
  std::string screen = t.screen();
  EXPECT_NE(screen.find(": figures from /proc; n/a: blocked time"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("Operation not permitted"), std::string::npos) << screen;
  for (const std::string& l : lines_of(screen)) EXPECT_LE(static_cast<int>(l.size()), w) << l;
  if (w >= 200) {  // the whole command line
    Table tb = table_of(screen);
    int r = row_of(tb, burner.pid());
    ASSERT_GE(r, 0);
    EXPECT_EQ(tb.cell(static_cast<size_t>(r), "COMMAND"), "sh -c " + burner.mark() + "=1; while :; do :; done");
  }

  // c: the name (COMM) instead of the command line, and back.
  t.type("c");
  EXPECT_TRUE(t.wait_for(
      [&](const std::string& s) {
        Table tb = table_of(s);
        int r = row_of(tb, burner.pid());
        return tb.header_line.find("COMMAND") == std::string::npos && r >= 0 &&
               tb.cell(static_cast<size_t>(r), "COMM") == "sh";
      },
      10s))
      << t.screen();
  t.type("c");
  EXPECT_TRUE(t.wait_for(burner_row_ok, 10s)) << t.screen();

  // t: the tree, children indented under their parents; t again: sorted.
  t.type("t");
  EXPECT_TRUE(t.wait_for(
      [&](const std::string& s) {
        return s.find("as a tree") != std::string::npos && s.find("\\_ ") != std::string::npos;
      },
      10s))
      << t.screen();
  t.type("t");
  EXPECT_TRUE(t.wait_for([&](const std::string& s) { return s.find("as a tree") == std::string::npos; }, 5s))
      << t.screen();

  // h: the help fits, its pause and quit lines too; any key closes it.
  t.type("h");
  ASSERT_TRUE(t.wait_for([](const std::string& s) { return s.find("Quit ") != std::string::npos; }, 5s))
      << t.screen();
  screen = t.screen();
  for (const char* want : {"Pause ", "space (keys still work", "Quit ", "q, Ctrl-C", "k send a signal", "t tree"}) {
    EXPECT_NE(screen.find(want), std::string::npos) << want << "\n" << screen;
  }
  for (const std::string& l : lines_of(screen)) EXPECT_LE(static_cast<int>(l.size()), w) << l;
  t.type("x");
  ASSERT_TRUE(t.wait_for([](const std::string& s) { return !table_of(s).rows.empty(); }, 5s)) << t.screen();

  // k on its own process: select it (filter by its PID), TERM by default, y: it ends.
  t.type("/" + std::to_string(burner.pid()));
  t.keys("Enter");
  ASSERT_TRUE(t.wait_for(
      [&](const std::string& s) {
        Table tb = table_of(s);
        return tb.rows.size() == 1 && row_of(tb, burner.pid()) == 0;
      },
      10s))
      << t.screen();
  t.type("k");
  ASSERT_TRUE(t.wait_for(
      [&](const std::string& s) { return s.find("Signal for " + std::to_string(burner.pid())) != std::string::npos; },
      5s))
      << t.screen();
  t.keys("Enter");
  ASSERT_TRUE(t.wait_for(
      [&](const std::string& s) {
        return s.find("Send SIGTERM to " + std::to_string(burner.pid()) + " (sh)? y/n") != std::string::npos;
      },
      5s))
      << t.screen();
  EXPECT_FALSE(burner.ended_by(SIGTERM, 300ms)) << "the signal went before the answer";
  t.type("y");
  EXPECT_TRUE(t.wait_for(
      [&](const std::string& s) { return s.find("sent SIGTERM to " + std::to_string(burner.pid())) != std::string::npos; },
      5s))
      << t.screen();
  EXPECT_TRUE(burner.ended_by(SIGTERM, 10s)) << "the burner did not end by SIGTERM";

  // q: the shell's prompt, and nothing perf-monitor printed.
  t.type("q");
  ASSERT_TRUE(t.wait_for([](const std::string& s) { return s.rfind("PMTEST$ \n") != std::string::npos || s.rfind("PMTEST$") != std::string::npos; }, 10s));
  ASSERT_TRUE(t.wait_for([&](const std::string&) { return !t.alternate_screen(); }, 10s));
  ASSERT_TRUE(t.wait_for(
      [](const std::string& s) {
        auto ls = lines_of(s);
        size_t prompts = 0;
        for (const auto& l : ls) prompts += l.rfind("PMTEST$", 0) == 0;
        return prompts >= 2;
      },
      10s))
      << t.screen();
  screen = t.screen();
  for (const std::string& l : lines_of(screen)) {
    if (fields(l).empty()) continue;
    // The command typed (wrapped on a narrow pane), then the prompt again: nothing else.
    bool typed = l.rfind("PMTEST$", 0) == 0 || (bin.path() + " top --interval 500ms").find(fields(l)[0]) != std::string::npos;
    EXPECT_TRUE(typed) << "printed after q: '" << l << "'\n" << screen;
  }
}

INSTANTIATE_TEST_SUITE_P(Panes, TopViewUnprivileged, ::testing::Values(std::pair{80, 24}, std::pair{200, 50}),
                         [](const auto& p) {
                           return std::to_string(p.param.first) + "x" + std::to_string(p.param.second);
                         });

}  // namespace
}  // namespace pm::test
