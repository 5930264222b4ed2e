// SPDX-License-Identifier: Apache-2.0
// A cgroup row's own files on a hierarchy the test writes: cpu.stat's increase between two
// readings, the pressure files' some avg10, nothing for a row that skipped a reading, a row whose
// directory is gone marked removed, and files read again in place (the same fds) when they change.
#include "sources/top/cgroup_files.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace pm {
namespace {

namespace fs = std::filesystem;

class CgroupFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("pm-cgroup-files-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "a");
  }
  void TearDown() override { fs::remove_all(root_); }
  // Written in place (truncated, not replaced), as the kernel's files change under an open fd.
  void write(const std::string& cgroup, const std::string& file, const std::string& text) {
    std::ofstream(root_ / cgroup / file, std::ios::trunc) << text;
  }
  void usage(const std::string& cgroup, uint64_t usec) {
    write(cgroup, "cpu.stat", "usage_usec " + std::to_string(usec) + "\nuser_usec 0\nsystem_usec 0\n");
  }
  void pressure(const std::string& cgroup, const std::string& file, const std::string& avg10) {
    write(cgroup, file, "some avg10=" + avg10 + " avg60=0.00 avg300=0.00 total=12\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3\n");
  }
  std::map<std::string, TopCgroup> rows(std::initializer_list<const char*> paths) {
    std::map<std::string, TopCgroup> out;
    for (const char* p : paths) out[p].path = p;
    return out;
  }
  // The rows as shown (all of them here), with their pressure read.
  static std::map<std::string, TopCgroup> shown(CgroupFiles& files, std::map<std::string, TopCgroup> rows) {
    std::vector<TopCgroup*> list;
    for (auto& [path, c] : rows) list.push_back(&c);
    files.read_pressure(list);
    return rows;
  }
  // A reading of the rows (kept by path here, for the checks).
  void read(CgroupFiles& files, std::map<std::string, TopCgroup>& rows) {
    std::vector<TopCgroup> list;
    for (auto& [path, c] : rows) list.push_back(c);
    files.read(root_.string(), list);
    for (TopCgroup& c : list) rows[c.path] = c;
  }
  fs::path root_;
};

TEST_F(CgroupFilesTest, UsageIncreaseAndPressureFromFilesKeptOpen) {
  usage("a", 1'000'000);
  pressure("a", "cpu.pressure", "1.50");
  pressure("a", "io.pressure", "0.25");
  pressure("a", "memory.pressure", "0.00");
  CgroupFiles files;
  auto r = rows({"/a"});
  read(files, r);
  r = shown(files, r);
  EXPECT_FALSE(r["/a"].cpu_stat_s) << "no increase without a reading before";
  EXPECT_DOUBLE_EQ(r["/a"].cpu_pressure_pct.value_or(-1), 1.5);
  EXPECT_DOUBLE_EQ(r["/a"].io_pressure_pct.value_or(-1), 0.25);
  EXPECT_DOUBLE_EQ(r["/a"].memory_pressure_pct.value_or(-1), 0.0);
  EXPECT_FALSE(r["/a"].removed);

  usage("a", 1'750'000);
  pressure("a", "cpu.pressure", "7.00");
  r = rows({"/a"});
  read(files, r);
  EXPECT_FALSE(r["/a"].cpu_pressure_pct) << "pressure is read for the rows shown only";
  r = shown(files, r);
  EXPECT_DOUBLE_EQ(r["/a"].cpu_stat_s.value_or(-1), 0.75);
  EXPECT_DOUBLE_EQ(r["/a"].cpu_pressure_pct.value_or(-1), 7.0);
}

TEST_F(CgroupFilesTest, ARowThatSkippedAReadingHasNoIncrease) {
  fs::create_directories(root_ / "b");
  usage("a", 10);
  usage("b", 10);
  CgroupFiles files;
  auto r = rows({"/a", "/b"});
  read(files, r);
  usage("b", 2'000'010);
  r = rows({"/a"});  // /b has no row this time: its files are closed
  read(files, r);
  r = rows({"/a", "/b"});
  read(files, r);
  EXPECT_FALSE(r["/b"].cpu_stat_s) << "the 2 s were not this interval's";
  EXPECT_DOUBLE_EQ(r["/a"].cpu_stat_s.value_or(-1), 0);
}

TEST_F(CgroupFilesTest, AGoneDirectoryIsRemovedAndMissingFilesAreAbsent) {
  CgroupFiles files;
  auto r = rows({"/a", "/gone"});
  read(files, r);  // /a has no files at all
  r = shown(files, r);
  EXPECT_TRUE(r["/gone"].removed);
  EXPECT_FALSE(r["/a"].removed);
  EXPECT_FALSE(r["/a"].cpu_stat_s);
  EXPECT_FALSE(r["/a"].cpu_pressure_pct);
}

// More cgroups than the fd limit leaves room for: those past it are read by path, with the same
// figures, never marked removed.
TEST_F(CgroupFilesTest, OutOfFdsTheRestAreReadByPath) {
  std::map<std::string, TopCgroup> r;
  for (int i = 0; i < 8; ++i) {
    std::string name = "c" + std::to_string(i);
    fs::create_directories(root_ / name);
    usage(name, 1'000'000);
    pressure(name, "cpu.pressure", "2.00");
    r["/" + name].path = "/" + name;
  }
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Room for the fds open now and a handful more: a cgroup or so kept open, the rest by path.
  int open_now = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++open_now;
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(open_now + 6);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  CgroupFiles files;
  auto first = r;
  read(files, first);
  for (int i = 0; i < 8; ++i) usage("c" + std::to_string(i), 1'500'000);
  auto second = r;
  read(files, second);
  second = shown(files, second);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  for (const auto& [path, c] : second) {
    EXPECT_FALSE(c.removed) << path;
    EXPECT_DOUBLE_EQ(c.cpu_stat_s.value_or(-1), 0.5) << path;
    EXPECT_DOUBLE_EQ(c.cpu_pressure_pct.value_or(-1), 2.0) << path;
  }
}

// More cgroups than kMaxKept files hold: the rest are read by path; the fds left for the rest of
// the monitor are never taken.
TEST_F(CgroupFilesTest, AtMostKMaxKeptFilesStayOpen) {
  constexpr int kCgroups = 1100;  // 4 files each: more than 4096
  std::map<std::string, TopCgroup> r;
  for (int i = 0; i < kCgroups; ++i) {
    std::string name = "k" + std::to_string(i);
    fs::create_directories(root_ / name);
    usage(name, 10);
    pressure(name, "cpu.pressure", "1.00");
    pressure(name, "io.pressure", "1.00");
    pressure(name, "memory.pressure", "1.00");
    r["/" + name].path = "/" + name;
  }
  auto fds = [] {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  int before = fds();
  CgroupFiles files;
  auto first = r;
  read(files, first);
  for (int i = 0; i < kCgroups; ++i) usage("k" + std::to_string(i), 1'000'010);
  auto second = r;
  read(files, second);
  second = shown(files, second);
  EXPECT_LE(fds() - before, static_cast<int>(CgroupFiles::kMaxKept));
  for (const auto& [path, c] : second) {
    ASSERT_DOUBLE_EQ(c.cpu_stat_s.value_or(-1), 1.0) << path;
    ASSERT_DOUBLE_EQ(c.memory_pressure_pct.value_or(-1), 1.0) << path;
  }
}

TEST_F(CgroupFilesTest, MalformedFilesGiveNoFigure) {
  write("a", "cpu.stat", "usage_usec lots\n");
  write("a", "cpu.pressure", "some avg10=\n");
  CgroupFiles files;
  auto r = rows({"/a"});
  read(files, r);
  r = rows({"/a"});
  read(files, r);
  r = shown(files, r);
  EXPECT_FALSE(r["/a"].cpu_stat_s);
  EXPECT_FALSE(r["/a"].cpu_pressure_pct);
}

}  // namespace
}  // namespace pm
