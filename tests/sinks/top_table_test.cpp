// SPDX-License-Identifier: Apache-2.0
// The top lists as tables: figures per second, n/a where not had, the columns a width keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sinks/top_table.h"

#include "top_fixture.h"

namespace pm {
namespace {
using test::proc;
using test::record;

TEST(TopTable, FiguresPerSecondAndNotAvailableAsNa) {
  EXPECT_EQ(short_bytes(0), "0");
  EXPECT_EQ(short_bytes(1536), "1.5K");
  EXPECT_EQ(short_bytes(12.0 * 1024 * 1024), "12M");
  EXPECT_EQ(short_count(4500), "4.5k");
  EXPECT_EQ(short_percent(99.84), "99.8");
  EXPECT_EQ(short_time(0.0031), "3.1ms");
  TopRecord r = *record();
  r.seconds = 2;  // figures are per second of the interval
  TopRow row{&r.processes[0], nullptr};
  std::vector<const TopColumn*> cols;
  for (const TopColumn& c : top_columns(TopList::kProcesses)) cols.push_back(&c);
  std::string line = top_line(cols, row, r.seconds, -1);
  EXPECT_NE(line.find("burner"), std::string::npos);
  EXPECT_NE(line.find(" 49.0 "), std::string::npos) << line;  // 0.98 s of CPU in 2 s
  r.processes[0].f.rss_bytes.reset();                         // exited: no memory of its own
  EXPECT_NE(top_line(cols, row, r.seconds, -1).find("n/a"), std::string::npos);
  // A cgroup without its own files says so.
  std::vector<const TopColumn*> ccols;
  for (const TopColumn& c : top_columns(TopList::kCgroups)) ccols.push_back(&c);
  std::string b = top_line(ccols, {nullptr, &r.cgroups[1]}, r.seconds, -1);
  EXPECT_NE(b.find("n/a"), std::string::npos) << b;
  // One removed in the interval is marked so (x), as an exited process is; one at the depth
  // limit (+) holds its descendants.
  EXPECT_NE(b.find("  /b"), std::string::npos) << b;
  r.cgroups[1].removed = true;
  EXPECT_NE(top_line(ccols, {nullptr, &r.cgroups[1]}, r.seconds, -1).find(" x /b"), std::string::npos);
  r.cgroups[1].removed = false;
  r.cgroups[1].with_descendants = true;
  EXPECT_NE(top_line(ccols, {nullptr, &r.cgroups[1]}, r.seconds, -1).find(" + /b"), std::string::npos);
}

TEST(TopTable, NarrowTerminalsKeepTheNameTheCpuAndTheSortKey) {
  for (TopSort sort : {TopSort::kCpu, TopSort::kRunq, TopSort::kFaults, TopSort::kMemory, TopSort::kIo}) {
    for (TopList list : {TopList::kProcesses, TopList::kCgroups, TopList::kThreads}) {
      auto cols = fit_top_columns(list, 80, sort);
      std::string header = top_header(cols, 80);
      EXPECT_EQ(header.size(), 80u);
      bool has_key = std::any_of(cols.begin(), cols.end(), [&](const TopColumn* c) { return c->sort == sort; });
      EXPECT_TRUE(has_key) << header;
      EXPECT_NE(header.find("CPU%"), std::string::npos) << header;
      EXPECT_NE(header.find(list == TopList::kCgroups ? "CGROUP" : "COMM"), std::string::npos) << header;
    }
  }
  // Wide: every column.
  EXPECT_EQ(fit_top_columns(TopList::kCgroups, 200, TopSort::kCpu).size(), top_columns(TopList::kCgroups).size());
}

TEST(TopTable, TextTablesListEveryRowUnderWhatTheyAre) {
  std::string s = top_tables_text(*record());
  EXPECT_NE(s.find("top      processes by cpu: 4 processes, the first 4"), std::string::npos) << s;
  EXPECT_NE(s.find("\n         threads by cpu"), std::string::npos);
  EXPECT_NE(s.find("\n         cgroups by cpu"), std::string::npos);
  EXPECT_LT(s.find("burner"), s.find("waiter"));  // in the source's order
  EXPECT_EQ(printable("a\x1b[2Jb\xff"), "a?[2Jb?");
}

TEST(TopTable, DroppedExitsAreTheIntervalsOnlyNote) {
  auto r = record();
  EXPECT_EQ(top_tables_text(*r).find("note:"), std::string::npos);
  r->exits_dropped = 3;  // the interval's (TopRecord), as the JSON's top.exits_dropped
  std::string s = top_tables_text(*r);
  EXPECT_NE(s.find("note: 3 processes ended in the interval without room"), std::string::npos) << s;
  EXPECT_EQ(s.find("top", 1), std::string::npos) << "one top section: " << s;
}


// No negative zero: a rounding error below zero reads 0.
TEST(TopTable, NoNegativeZero) {
  EXPECT_EQ(short_percent(-0.0), "0.0");
  EXPECT_EQ(short_percent(-1e-12), "0.0");
  EXPECT_EQ(short_percent(-0.04), "0.0");
  EXPECT_EQ(short_bytes(-1e-9), "0");
  EXPECT_EQ(short_count(-1e-9), "0");
  TopRecord r = *record();
  r.processes[0].f[TaskFig::kUser] = -1e-17;  // on-CPU time less its system share, as doubles round
  r.processes[0].f[TaskFig::kSystem] = 1e-17;
  std::string text = top_tables_text(r);
  EXPECT_EQ(text.find("-0"), std::string::npos) << text;
}

// USER, state, COMMAND; n/a for what /proc could not give; hostile names made printable.
TEST(TopTable, UserStateAndCommandLine) {
  TopRecord r = *record();
  TopProcess& p = r.processes[0];
  p.user = "ev\x1b[2Jil";
  p.uid = 1000;
  p.state = 'R';
  p.command = "burner --x \x1b]0;title\x07 \xff";
  p.f.blocked_known = false;
  p.f.io_known = false;
  r.processes[1].kernel = true;
  r.processes[1].state = 'I';
  r.processes[3].uid = 4242;  // no name in the user database
  r.note = "not root: figures from /proc";
  std::string text = top_tables_text(r);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find(" USER "), std::string::npos) << text;
  EXPECT_NE(text.find("COMMAND\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ev?[2Jil"), std::string::npos) << text;
  EXPECT_NE(text.find("burner --x ?]0;title? ?"), std::string::npos) << text;
  EXPECT_NE(text.find(" R "), std::string::npos) << text;
  EXPECT_NE(text.find(" Ik "), std::string::npos) << text;
  EXPECT_NE(text.find(" 4242 "), std::string::npos) << text;
  EXPECT_NE(text.find("[waiter]"), std::string::npos) << text;  // a kernel thread without a command line
  EXPECT_NE(text.find("note: not root: figures from /proc"), std::string::npos) << text;
  // The burner's BLK% and I/O are n/a, not 0.
  std::vector<const TopColumn*> cols;
  for (const TopColumn& c : top_columns(TopList::kProcesses)) cols.push_back(&c);
  std::string line = top_line(cols, {&r.processes[0], nullptr}, 1, -1);
  std::string head = top_header(cols, -1);
  size_t blk = head.find("BLK%") + 4;
  EXPECT_EQ(line.substr(blk - 4, 4), " n/a") << head << "\n" << line;
  // The view keeps one name column: the command line, or the name.
  auto with_command = fit_top_columns(TopList::kProcesses, 80, TopSort::kCpu, true);
  auto with_name = fit_top_columns(TopList::kProcesses, 80, TopSort::kCpu, false);
  EXPECT_EQ(std::string(with_command.back()->title), "COMMAND");
  EXPECT_EQ(std::string(with_name.back()->title), "COMM");
  for (auto* list : {&with_command, &with_name}) {
    std::set<std::string> titles;
    for (const TopColumn* c : *list) titles.insert(c->title);
    EXPECT_EQ(titles.count("USER"), 1u);
    EXPECT_EQ(titles.count("S"), 1u);
    EXPECT_EQ(titles.count("COMM") + titles.count("COMMAND"), 1u);
  }
}

}  // namespace
}  // namespace pm
