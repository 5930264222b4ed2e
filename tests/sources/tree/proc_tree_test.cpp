// SPDX-License-Identifier: Apache-2.0
// The /proc fallback of the process tree on a /proc of our own making (ProcTree takes its root),
// so the ways processes come and go can be played step by step: children found by walks,
// children reaped by a member (its figures now hold theirs), a parent that reaps its children
// and is reaped itself, a member reaped outside the tree, a PID reused by a stranger.
#include "sources/tree/proc_tree.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace pm {
namespace {

namespace fs = std::filesystem;

struct TreeProc {
  int ppid = 0;
  uint64_t starttime = 100;
  uint64_t utime = 0, cutime = 0;  // ticks
  uint64_t minflt = 0, cminflt = 0;
  uint64_t rchar = 0;              // inclusive of reaped children, as the kernel keeps it
  std::vector<int> children;
  char state = 'S';  // 'X': being reaped, its figures already in its parent's
};

class FakeProcRoot {
 public:
  FakeProcRoot() : root_(fs::temp_directory_path() / ("pm-fake-proc-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeProcRoot() { fs::remove_all(root_); }
  [[nodiscard]] std::string path() const { return root_.string(); }

  void put(int pid, const TreeProc& p) {
    fs::path dir = root_ / std::to_string(pid);
    fs::create_directories(dir / "task" / std::to_string(pid));
    std::ofstream(dir / "stat") << pid << " (fake) " << p.state << " " << p.ppid << " 1 1 0 -1 0 " << p.minflt << " " << p.cminflt
                                << " 0 0 " << p.utime << " 0 " << p.cutime << " 0 20 0 1 0 " << p.starttime
                                << " 1048576 64 18446744073709551615 0\n";
    std::ofstream(dir / "io") << "rchar: " << p.rchar << "\nwchar: 0\nsyscr: 0\nsyscw: 0\nread_bytes: 0\n"
                              << "write_bytes: 0\ncancelled_write_bytes: 0\n";
    std::ofstream(dir / "status") << "Name:\tfake\nTgid:\t" << pid << "\nPid:\t" << pid << "\nPPid:\t" << p.ppid
                                  << "\nThreads:\t1\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t0\n";
    std::ofstream(dir / "smaps_rollup") << "00400000-7fff [rollup]\nRss: 256 kB\nPss: 128 kB\n";
    std::string kids;
    for (int c : p.children) kids += std::to_string(c) + " ";
    std::ofstream(dir / "task" / std::to_string(pid) / "children") << kids;
  }
  // A process that is gone: a kept file of its reads empty (procfs would fail with ESRCH).
  void remove(int pid) {
    fs::path dir = root_ / std::to_string(pid);
    for (const char* f : {"stat", "io", "status"}) std::ofstream(dir / f, std::ios::trunc);
    fs::remove_all(dir);
  }

 private:
  fs::path root_;
};

double value(const Samples& s, std::string_view name) {
  for (const Sample& x : s) {
    if (x.desc->name == name) return x.value;
  }
  ADD_FAILURE() << "no sample " << name;
  return -1;
}

double ticks(double n) { return n / static_cast<double>(::sysconf(_SC_CLK_TCK)); }

TEST(ProcTree, ChildrenFoundByWalksAddUp) {
  FakeProcRoot proc;
  proc.put(10, {1, 100, 5, 0, 10, 0, 1000, {11, 12}});
  proc.put(11, {10, 101, 3, 0, 20, 0, 500, {}});
  proc.put(12, {10, 102, 2, 0, 30, 0, 250, {}});
  ProcTree tree(proc.path());
  ASSERT_TRUE(tree.add_root(10));
  Samples s;
  tree.collect(s);
  EXPECT_EQ(value(s, "processes"), 3);
  EXPECT_EQ(value(s, "processes_seen"), 3);
  EXPECT_DOUBLE_EQ(value(s, "cpu_user_seconds"), ticks(10));
  EXPECT_EQ(value(s, "minor_faults"), 60);
  EXPECT_EQ(value(s, "io_rchar_bytes"), 1750);
}

TEST(ProcTree, ChildReapedByAMemberIsCountedOnce) {
  FakeProcRoot proc;
  proc.put(10, {1, 100, 5, 0, 10, 0, 1000, {11}});
  proc.put(11, {10, 101, 3, 0, 20, 0, 500, {}});
  ProcTree tree(proc.path());
  ASSERT_TRUE(tree.add_root(10));
  Samples s;
  tree.collect(s);
  // 11 exits; 10 reaps it: the kernel folds 11's figures into 10's cutime, cminflt and io.
  proc.remove(11);
  proc.put(10, {1, 100, 5, 3, 10, 20, 1500, {}});
  s.clear();
  tree.collect(s);
  EXPECT_DOUBLE_EQ(value(s, "cpu_user_seconds"), ticks(8));
  EXPECT_EQ(value(s, "minor_faults"), 30);
  EXPECT_EQ(value(s, "io_rchar_bytes"), 1500);
}

TEST(ProcTree, ChildBeingReapedIsNotCountedBesideTheParentThatHoldsIt) {
  // The kernel moves a reaped child's figures into its parent (cutime, cminflt, io) after
  // marking it EXIT_DEAD ('X') and before its /proc entry goes. A walk in between sees both. The
  // child here also started in its parent's clock tick with a smaller PID (PIDs wrapped).
  FakeProcRoot proc;
  proc.put(20, {1, 100, 5, 0, 10, 0, 1000, {11}});
  proc.put(11, {20, 100, 3, 0, 20, 0, 500, {}});
  ProcTree tree(proc.path());
  ASSERT_TRUE(tree.add_root(20));
  Samples s;
  tree.collect(s);
  EXPECT_DOUBLE_EQ(value(s, "cpu_user_seconds"), ticks(8));
  proc.put(11, {20, 100, 3, 0, 20, 0, 500, {}, 'X'});
  proc.put(20, {1, 100, 5, 3, 10, 20, 1500, {}});
  s.clear();
  tree.collect(s);
  EXPECT_DOUBLE_EQ(value(s, "cpu_user_seconds"), ticks(8));
  EXPECT_EQ(value(s, "minor_faults"), 30);
  EXPECT_EQ(value(s, "io_rchar_bytes"), 1500);
  EXPECT_EQ(value(s, "processes"), 1);
}

TEST(ProcTree, ParentThatReapsItsChildrenAndIsReapedItselfCountsThemOnce) {
  // The shell case: the root reaps its children, exits, and perf-monitor reaps the root before
  // the next walk has seen the children go. They were the root's; the root's final figures hold
  // them; nothing is added twice.
  FakeProcRoot proc;
  proc.put(10, {1, 100, 1, 0, 10, 0, 100, {11, 12}});
  proc.put(11, {10, 101, 4, 0, 20, 0, 400, {}});
  proc.put(12, {10, 102, 4, 0, 20, 0, 400, {}});
  ProcTree tree(proc.path());
  ASSERT_TRUE(tree.add_root(10));
  Samples s;
  tree.collect(s);
  proc.remove(11);
  proc.remove(12);
  proc.put(10, {1, 100, 1, 8, 10, 40, 900, {}});
  tree.on_reaping(10);  // a zombie now, read one last time
  proc.remove(10);
  s.clear();
  tree.collect(s);
  EXPECT_DOUBLE_EQ(value(s, "cpu_user_seconds"), ticks(9));
  EXPECT_EQ(value(s, "minor_faults"), 50);
  EXPECT_EQ(value(s, "io_rchar_bytes"), 900);
}

TEST(ProcTree, ReapedRootTakesItsCpuFromTheReapNotFromTicks) {
  // perf-monitor reaps the root: wait4's rusage has its CPU (and its reaped children's) to the
  // microsecond, where /proc/PID/stat rounds each part down to a clock tick.
  FakeProcRoot proc;
  proc.put(10, {1, 100, 0, 0, 10, 0, 100, {}});
  ProcTree tree(proc.path());
  ASSERT_TRUE(tree.add_root(10));
  Samples s;
  tree.collect(s);
  proc.put(10, {1, 100, 0, 0, 10, 40, 900, {}});
  tree.on_reaping(10);
  proc.remove(10);
  tree.on_reaped(10, {.user_s = 0.0042, .system_s = 0.0031, .minflt = 50, .majflt = 1});
  s.clear();
  tree.collect(s);
  EXPECT_DOUBLE_EQ(value(s, "cpu_user_seconds"), 0.0042);
  EXPECT_DOUBLE_EQ(value(s, "cpu_system_seconds"), 0.0031);
  EXPECT_EQ(value(s, "minor_faults"), 50);
  EXPECT_EQ(value(s, "major_faults"), 1);
  EXPECT_EQ(value(s, "io_rchar_bytes"), 900);  // from its last /proc reading
}

TEST(ProcTree, MemberReapedOutsideTheTreeKeepsItsFigures) {
  // attach: the root's parent is not a member; when the root goes, its last figures stay.
  FakeProcRoot proc;
  proc.put(10, {1, 100, 6, 0, 10, 0, 700, {}});
  ProcTree tree(proc.path());
  ASSERT_TRUE(tree.add_root(10));
  Samples s;
  tree.collect(s);
  proc.remove(10);
  s.clear();
  tree.collect(s);
  EXPECT_DOUBLE_EQ(value(s, "cpu_user_seconds"), ticks(6));
  EXPECT_EQ(value(s, "io_rchar_bytes"), 700);
  // No member left: no size is reported (rather than zeros).
  for (const Sample& x : s) EXPECT_NE(x.desc->name, "processes");
}

TEST(ProcTree, ReusedPidIsNotTheSameMember) {
  FakeProcRoot proc;
  proc.put(10, {1, 100, 1, 0, 0, 0, 0, {11}});
  proc.put(11, {10, 101, 2, 0, 0, 0, 0, {}});
  ProcTree tree(proc.path());
  ASSERT_TRUE(tree.add_root(10));
  Samples s;
  tree.collect(s);
  // 11 is gone and its PID taken by a stranger (another start time) before the next walk.
  proc.put(11, {1, 999, 50, 0, 0, 0, 0, {}});
  proc.put(10, {1, 100, 1, 2, 0, 0, 0, {}});
  s.clear();
  tree.collect(s);
  EXPECT_DOUBLE_EQ(value(s, "cpu_user_seconds"), ticks(3));
}

}  // namespace
}  // namespace pm
