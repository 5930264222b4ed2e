// SPDX-License-Identifier: Apache-2.0
// The top lists as tables: figures per second, n/a where not had, the columns a width keeps.
#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace
}  // namespace pm
