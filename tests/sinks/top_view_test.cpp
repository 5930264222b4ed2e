// SPDX-License-Identifier: Apache-2.0
// The interactive view's model: what a person sees and what each key does, on records built here
// (the terminal itself is tested in tests/integration/top_view_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>

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
  EXPECT_EQ(m.key(ViewKey::of('r')), TopViewModel::Action::kRedraw);
  EXPECT_EQ(m.sort(), TopSort::kRunq);
  EXPECT_EQ(first_column(m).front(), "20");
  m.key(ViewKey::of('m'));
  EXPECT_EQ(first_column(m).front(), "20");  // 8 MiB
  m.key(ViewKey::of('c'));
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
  m.key(ViewKey::of('t'));
  EXPECT_EQ(first_column(m), (std::vector<std::string>{"10", "20", "21"}));
}

TEST(TopView, PauseKeepsTheIntervalOnScreen) {
  TopViewModel m(TopSort::kCpu);
  m.update(record(), {});
  m.key(ViewKey::of(' '));
  EXPECT_TRUE(m.paused());
  auto next = record();
  next->processes[1].f.user_s = 5;  // the waiter would now be first
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
  m.key(ViewKey::of('r'));  // it goes first by run-queue wait, and the selection with it
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
  static const MetricDesc util{"cpu", "utilisation_percent", MetricKind::kGauge, Unit::kPercent, ""};
  static const MetricDesc load1{"scheduler", "load1", MetricKind::kGauge, Unit::kNone, ""};
  static const MetricDesc stall{"pressure", "stall_seconds", MetricKind::kCounter, Unit::kSeconds, ""};
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

}  // namespace
}  // namespace pm
