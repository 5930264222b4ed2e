// SPDX-License-Identifier: Apache-2.0
// What `attach` follows: a process and its descendants, from the children files of each of its
// threads — on a /proc the test writes, and on the real one with a child of the test's own.
#include "sources/files/descendants.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace fs = std::filesystem;

namespace pm {
namespace {

TEST(Descendants, EveryThreadsChildrenAndTheirsParentsFirst) {
  fs::path proc = fs::temp_directory_path() / ("pm-descendants-" + std::to_string(::getpid()));
  fs::remove_all(proc);
  auto process = [&](int pid, std::initializer_list<std::pair<int, const char*>> threads) {
    fs::create_directories(proc / std::to_string(pid));
    std::ofstream(proc / std::to_string(pid) / "stat") << pid << " (p) S 1\n";
    for (auto [tid, children] : threads) {
      fs::path t = proc / std::to_string(pid) / "task" / std::to_string(tid);
      fs::create_directories(t);
      std::ofstream(t / "children") << children;
    }
  };
  process(10, {{10, "11 12 "}, {13, "14 "}});  // a second thread forked 14
  process(11, {{11, "15 "}});
  process(12, {{12, ""}});
  process(14, {{14, "11 "}});  // a PID listed twice is followed once
  process(15, {{15, ""}});
  process(99, {{99, "10 "}});  // 10's parent: not below 10
  std::vector<int> got = process_and_descendants(10, proc.string());
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front(), 10);
  auto at = [&](int pid) { return std::find(got.begin(), got.end(), pid) - got.begin(); };
  EXPECT_LT(at(11), at(15)) << "a parent before its child";
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{10, 11, 12, 14, 15}));
  EXPECT_TRUE(process_and_descendants(77, proc.string()).empty()) << "no such process";
  fs::remove_all(proc);
}

TEST(Descendants, AChildOfThisTestIsFound) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    ::close(fds[1]);
    (void)::read(fds[0], &c, 1);
    ::_exit(0);
  }
  ::close(fds[0]);
  std::vector<int> got = process_and_descendants(::getpid());
  ::close(fds[1]);
  ::waitpid(child, nullptr, 0);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front(), ::getpid());
  EXPECT_NE(std::find(got.begin(), got.end(), child), got.end());
}

}  // namespace
}  // namespace pm
