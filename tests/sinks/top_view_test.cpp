// SPDX-License-Identifier: Apache-2.0
// The interactive view's model: what a person sees and what each key does, on records built here
// (the terminal itself is tested in tests/integration/top_view_test.cpp).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "sinks/top_table.h"
#include "sinks/top_view_model.h"

#include "top_fixture.h"

namespace pm {
namespace {
using test::proc;
using test::record;

// The first figure of each row: the PID (processes), TID (threads) or PROCS (cgroups).
std::vector<std::string> first_column(TopViewModel& m) {
  std::vector<std::string> out;
  for (const TopRow& r : m.rows()) {
    out.push_back(r.cgroup != nullptr
                      ? r.cgroup->path
                      : std::to_string(m.list() == TopList::kThreads ? r.process->tid : r.process->pid));
  }
  return out;
}

std::string screen_text(TopViewModel& m, int w, int h) {
  std::string s;
  for (const ScreenLine& l : m.screen(w, h)) s += l.text + "\n";
  return s;
}

TEST(TopView, SortKeysReorderTheRows) {
  TopViewModel m(TopSort::kCpu);
  m.update(record(), {});
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"10", "20", "40", "30"}));
  EXPECT_EQ(m.key(ViewKey::of('R')), TopViewModel::Action::kRedraw);
  EXPECT_EQ(m.sort(), TopSort::kRunq);
  EXPECT_EQ(first_column(m).front(), "20");
  m.key(ViewKey::of('M'));
  EXPECT_EQ(first_column(m).front(), "20");  // 8 MiB
  m.key(ViewKey::of('P'));
  EXPECT_EQ(first_column(m).front(), "10");
  EXPECT_NE(screen_text(m, 80, 24).find("PROCESSES (4) by cpu"), std::string::npos);
}

TEST(TopView, ListsFilterAndExpand) {
  TopViewModel m(TopSort::kCpu);
  m.update(record(), {});
  m.key(ViewKey::of('g'));
  EXPECT_EQ(m.list(), TopList::kCgroups);
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"/a", "/b", "/"}));
  // Filter by name: '/' then text, Enter keeps it; Esc clears it.
  m.key(ViewKey::of('/'));
  EXPECT_TRUE(m.editing_filter());
  for (char c : std::string("/B")) m.key(ViewKey::of(c));
  m.key({ViewKey::kEnter});
  EXPECT_FALSE(m.editing_filter());
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"/b"}));
  // Enter on the cgroup: its processes.
  m.key({ViewKey::kEnter});
  EXPECT_EQ(m.list(), TopList::kProcesses);
  EXPECT_EQ(m.expanded_cgroup(), "/b");
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"20"}));
  EXPECT_NE(screen_text(m, 80, 24).find("PROCESSES in cgroup /b (1)"), std::string::npos);
  // Enter on the process: its threads.
  m.key({ViewKey::kEnter});
  EXPECT_EQ(m.list(), TopList::kThreads);
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"20", "21"}));
  // Back, and back again: the cgroup list, on the cgroup that was expanded.
  m.key({ViewKey::kLeft});
  EXPECT_EQ(m.expanded_cgroup(), "/b");
  m.key({ViewKey::kEscape});
  EXPECT_EQ(m.list(), TopList::kCgroups);
  EXPECT_EQ(first_column(m).size(), 3u);
  EXPECT_EQ(m.rows()[static_cast<size_t>(m.selected())].cgroup->path, "/b");
  // 'e' expands too; Esc on a filter clears the filter first.
  m.key(ViewKey::of('p'));
  m.key(ViewKey::of('/'));
  m.key(ViewKey::of('b'));
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"10", "40"}));  // burner, bash
  m.key({ViewKey::kEnter});
  m.key({ViewKey::kEscape});
  EXPECT_EQ(first_column(m).size(), 4u);
  m.key(ViewKey::of('H'));
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"10", "20", "21"}));
}

TEST(TopView, PauseKeepsTheIntervalOnScreen) {
  TopViewModel m(TopSort::kCpu);
  m.update(record(), {});
  m.key(ViewKey::of(' '));
  EXPECT_TRUE(m.paused());
  auto next = record();
  next->processes[1].f[TaskFig::kUser] = 5;  // the waiter would now be first
  m.update(next, {});
  EXPECT_EQ(first_column(m).front(), "10");
  EXPECT_NE(screen_text(m, 80, 24).find("PAUSED"), std::string::npos);
  m.key(ViewKey::of(' '));
  EXPECT_EQ(first_column(m).front(), "20");
}

TEST(TopView, SelectionFollowsItsRowAndScrolls) {
  TopViewModel m(TopSort::kCpu);
  auto r = record();
  for (int i = 0; i < 100; ++i) r->processes.push_back(proc(1000 + i, "many", "/", 0.001 * i, 0));
  m.update(r, {});
  m.key({ViewKey::kDown});  // the waiter
  EXPECT_EQ(m.selected(), 1);
  m.key(ViewKey::of('R'));  // it goes first by run-queue wait, and the selection with it
  m.screen(80, 24);
  EXPECT_EQ(m.selected(), 0);
  m.key({ViewKey::kEnd});
  std::string s = screen_text(m, 80, 24);
  EXPECT_EQ(m.screen(80, 24).size(), 24u);
  auto lines = m.screen(80, 24);
  auto selected =
      std::find_if(lines.begin(), lines.end(), [](const ScreenLine& l) { return l.style == ScreenLine::kSelected; });
  ASSERT_NE(selected, lines.end()) << s;
}

TEST(TopView, HelpAndQuit) {
  TopViewModel m(TopSort::kCpu);
  m.update(record(), {});
  m.key(ViewKey::of('h'));
  EXPECT_TRUE(m.help_shown());
  EXPECT_NE(screen_text(m, 100, 40).find("run-queue wait"), std::string::npos);
  m.key(ViewKey::of('x'));  // any key closes it
  EXPECT_FALSE(m.help_shown());
  // While typing a filter, q is a letter.
  m.key(ViewKey::of('/'));
  EXPECT_EQ(m.key(ViewKey::of('q')), TopViewModel::Action::kRedraw);
  m.key({ViewKey::kEnter});
  EXPECT_EQ(m.key(ViewKey::of('q')), TopViewModel::Action::kQuit);
  EXPECT_EQ(m.key({ViewKey::kChar, 3}), TopViewModel::Action::kQuit);  // Ctrl-C as a character
}

TEST(TopView, SaysWhyThereAreNoLists) {
  TopViewModel m(TopSort::kCpu);
  EXPECT_NE(screen_text(m, 80, 24).find("collecting"), std::string::npos);
  m.set_no_lists("needs root");
  m.update(nullptr, {});
  EXPECT_NE(screen_text(m, 80, 24).find("the lists are not available here: needs root"), std::string::npos);
}

TEST(TopView, SystemBlockFromTheIntervalRecordNaWhereNotRead) {
  // Found by their marks (the sources' descriptors carry them), whatever their names.
  static const MetricDesc util = system_figure(SystemFigure::kCpuUtilisation,
                                               {"cpu", "utilisation_percent", MetricKind::kGauge, Unit::kPercent, ""});
  static const MetricDesc load1 =
      system_figure(SystemFigure::kLoad1, {"scheduler", "load1", MetricKind::kGauge, Unit::kNone, ""});
  static const MetricDesc stall = system_figure(
      SystemFigure::kPressureStall, {"pressure", "stall_seconds", MetricKind::kCounter, Unit::kSeconds, ""});
  static const Labels idle{{"cpu", "all"}, {"mode", "idle"}}, user{{"cpu", "all"}, {"mode", "user"}},
      cpu0{{"cpu", "0"}, {"mode", "user"}}, none{}, io_some{{"resource", "io"}, {"kind", "some"}};
  IntervalRecord rec;
  rec.seconds = 1;
  rec.values.push_back({&util, &idle, 70});
  rec.values.push_back({&util, &user, 25});
  rec.values.push_back({&util, &cpu0, 99});  // one CPU: not the system's
  rec.values.push_back({&load1, &none, 1.5});
  IntervalValue psi{&stall, &io_some, 0.2};
  psi.rate = 0.2;
  rec.values.push_back(psi);
  SystemFigures s = system_figures(rec);
  EXPECT_EQ(s.cpu_pct[0], 25);
  EXPECT_EQ(s.cpu_pct[7], 70);
  EXPECT_EQ(s.load1, 1.5);
  EXPECT_FALSE(s.mem_used.has_value());
  TopViewModel m(TopSort::kCpu);
  m.update(record(), s);
  std::string text = screen_text(m, 200, 50);
  EXPECT_NE(text.find("CPU  busy 30.0%  user 25.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("MEM  used n/a"), std::string::npos) << text;
  EXPECT_NE(text.find("LOAD 1.50 n/a n/a"), std::string::npos) << text;
  EXPECT_NE(text.find("PSI  cpu n/a/n/a  io 20.0%/n/a"), std::string::npos) << text;
}


// The help fits an 80x24 terminal whole: the pause and quit lines, no line cut.
TEST(TopView, HelpFitsEightyByTwentyFour) {
  TopViewModel m(TopSort::kCpu);
  m.update(record(), {});
  m.key(ViewKey::of('h'));
  auto lines = m.screen(80, 24);
  ASSERT_EQ(lines.size(), 24u);
  std::string all;
  for (const ScreenLine& l : lines) all += l.text + "\n";
  for (const char* want : {"Pause ", "Quit ", "q, Ctrl-C", "k send a signal", "t tree", "BLK%", "up to 100 x CPUs"}) {
    EXPECT_NE(all.find(want), std::string::npos) << want << "\n" << all;
  }
}

// t: children under their parents, each indented under its parent as ps f draws them; c: the
// command line or the name.
TEST(TopView, TreeAndCommandLine) {
  auto r = record();
  r->processes[0].ppid = 40;  // burner under bash
  r->processes[1].ppid = 10;  // waiter under burner
  r->processes[2].ppid = 1;
  r->processes[3].ppid = 1;
  r->processes[0].command = "burner --hot";
  TopViewModel m(TopSort::kCpu);
  m.update(r, {});
  m.key(ViewKey::of('t'));
  EXPECT_TRUE(m.tree());
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"40", "10", "20", "30"}));
  auto rows = m.rows();
  EXPECT_EQ(rows[0].tree, "");
  EXPECT_EQ(rows[1].tree, " \\_ ");
  EXPECT_EQ(rows[2].tree, "     \\_ ");
  std::string text = screen_text(m, 120, 30);
  EXPECT_NE(text.find("as a tree"), std::string::npos) << text;
  EXPECT_NE(text.find(" \\_ burner --hot"), std::string::npos) << text;
  EXPECT_NE(text.find("COMMAND"), std::string::npos) << text;
  m.key(ViewKey::of('c'));  // the names
  text = screen_text(m, 120, 30);
  EXPECT_EQ(text.find("burner --hot"), std::string::npos) << text;
  EXPECT_NE(text.find(" \\_ burner"), std::string::npos) << text;
  EXPECT_NE(text.find("COMM "), std::string::npos) << text;
  m.key(ViewKey::of('t'));  // sorted again
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"10", "20", "40", "30"}));
}

// k: which signal (TERM by default), then y/n; sent to the process as it was when asked.
TEST(TopView, KillAsksWhichSignalThenConfirms) {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  auto r = record();
  r->processes[0].pid = child;
  r->processes[0].uid = ::geteuid();
  TopViewModel m(TopSort::kCpu);
  m.update(r, {});
  m.key(ViewKey::of('k'));
  EXPECT_TRUE(m.asking());
  std::string text = screen_text(m, 100, 24);
  EXPECT_NE(text.find("Signal for " + std::to_string(child)), std::string::npos) << text;
  m.key({ViewKey::kEnter});  // the default, TERM
  text = screen_text(m, 100, 24);
  EXPECT_NE(text.find("Send SIGTERM to " + std::to_string(child) + " (burner)? y/n"), std::string::npos) << text;
  m.key(ViewKey::of('n'));  // not sent
  EXPECT_FALSE(m.asking());
  EXPECT_EQ(m.status(), "no signal sent");
  EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), 0);
  m.key(ViewKey::of('k'));
  for (char c : std::string("KILL")) m.key(ViewKey::of(c));
  m.key({ViewKey::kEnter});
  m.key(ViewKey::of('y'));
  EXPECT_NE(m.status().find("sent SIGKILL to " + std::to_string(child)), std::string::npos) << m.status();
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  // Gone: said in the status line, nothing sent elsewhere.
  m.key(ViewKey::of('k'));
  m.key({ViewKey::kEnter});
  m.key(ViewKey::of('y'));
  EXPECT_NE(m.status().find("has ended"), std::string::npos) << m.status();
  // Not a signal: said, nothing sent.
  m.key(ViewKey::of('k'));
  for (char c : std::string("NOPE")) m.key(ViewKey::of(c));
  m.key({ViewKey::kEnter});
  EXPECT_NE(m.status().find("not a signal: NOPE"), std::string::npos) << m.status();
}

// r: the nice value asked; setpriority's refusal in the status line. Another user's process is
// refused before asking (unless root).
TEST(TopView, ReniceAndOthersProcesses) {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  auto r = record();
  r->processes[0].pid = child;
  r->processes[0].uid = ::geteuid();
  r->processes[0].nice = 0;
  TopViewModel m(TopSort::kCpu);
  m.update(r, {});
  m.key(ViewKey::of('r'));
  EXPECT_NE(screen_text(m, 100, 24).find("Nice value for " + std::to_string(child) + " (burner), now 0"),
            std::string::npos);
  for (char c : std::string("7")) m.key(ViewKey::of(c));
  m.key({ViewKey::kEnter});
  EXPECT_EQ(m.status(), std::to_string(child) + " (burner): nice 7");
  errno = 0;
  EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(child)), 7);
  m.key(ViewKey::of('r'));
  for (char c : std::string("99")) m.key(ViewKey::of(c));
  m.key({ViewKey::kEnter});
  EXPECT_NE(m.status().find("not a nice value: 99"), std::string::npos) << m.status();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  if (::geteuid() != 0) {
    r->processes[0].uid = ::geteuid() + 1;
    r->processes[0].user = "someone";
    m.update(r, {});
    m.key(ViewKey::of('k'));
    EXPECT_FALSE(m.asking());
    EXPECT_NE(m.status().find("someone's"), std::string::npos) << m.status();
  }
}

// The /proc lists' note: one line above the table, in full in the help.
TEST(TopView, NoteSaysWhatIsNotAvailable) {
  auto r = record();
  r->note = "not root: figures from /proc; n/a: blocked time";
  for (auto& p : r->processes) p.f.blocked_known = false;
  TopViewModel m(TopSort::kCpu);
  m.update(r, {});
  std::string text = screen_text(m, 80, 24);
  EXPECT_NE(text.find("\nnot root: figures from /proc; n/a: blocked time"), std::string::npos) << text;
  EXPECT_NE(text.find("n/a"), std::string::npos) << text;
}

}  // namespace
}  // namespace pm
