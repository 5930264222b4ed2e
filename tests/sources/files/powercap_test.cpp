// SPDX-License-Identifier: Apache-2.0
// The powercap source reads a sysfs tree written by hand in the kernel's format
// (tests/fixtures/sys/class/powercap, see the fixtures README). Expected numbers are copied from
// the fixture files on purpose.
#include "sources/files/powercap.h"
#include "write_text.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace pm {
namespace {

constexpr double kRange = 262143328850;  // max_energy_range_uj of every fixture zone

FsRoots powercap_roots() { return FsRoots{"/proc", PM_FIXTURES_DIR "/sys"}; }

const Sample* find_zone(const Samples& samples, const std::string& zone) {
  for (const Sample& s : samples) {
    if (s.labels == Labels{{"zone", zone}}) return &s;
  }
  return nullptr;
}

using test::write_text;

// A copy of the fixture tree in a fresh directory, removed at the end of the test.
class TempTree {
 public:
  TempTree() {
    char tmpl[] = "/tmp/pm-powercap-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    root_ = tmpl;
    std::string cmd =
        "mkdir -p " + root_ + "/class && cp -r " PM_FIXTURES_DIR "/sys/class/powercap " + root_ + "/class/";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  ~TempTree() {
    if (!root_.empty()) {
      EXPECT_EQ(std::system(("rm -rf " + root_).c_str()), 0);
    }
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] FsRoots roots() const { return FsRoots{"/proc", root_}; }
  [[nodiscard]] std::string zone(const char* dir) const { return root_ + "/class/powercap/" + dir + "/"; }

 private:
  std::string root_;
  bool ok_ = false;
};

TEST(Powercap, FixtureZonesInJoules) {
  auto src = make_powercap_source(powercap_roots());
  ASSERT_TRUE(src.ok()) << src.error().message;
  EXPECT_EQ((*src)->name(), "powercap");
  Samples out;
  (*src)->collect(out);
  // Four zones (the control type dir "intel-rapl" has no energy_uj and is no zone), then the
  // elapsed time that watts are computed over.
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out.back().desc->name, "elapsed_seconds");
  out.pop_back();
  for (const Sample& s : out) {
    EXPECT_EQ(s.desc->family, "energy");
    EXPECT_EQ(s.desc->name, "powercap_joules");
    EXPECT_EQ(s.desc->kind, MetricKind::kCounter);
    EXPECT_EQ(s.desc->unit, Unit::kJoules);
  }
  const Sample* pkg0 = find_zone(out, "package-0");
  const Sample* pkg1 = find_zone(out, "package-1");
  ASSERT_NE(pkg0, nullptr);
  ASSERT_NE(pkg1, nullptr);
  EXPECT_DOUBLE_EQ(pkg0->value, 123456789 / 1e6);
  EXPECT_DOUBLE_EQ(pkg1->value, 98765432 / 1e6);
}

TEST(Powercap, ZonesOfTheSameNameStayApart) {
  auto src = make_powercap_source(powercap_roots());
  ASSERT_TRUE(src.ok()) << src.error().message;
  Samples out;
  (*src)->collect(out);
  // intel-rapl:0:0 and intel-rapl:1:0 are both "core".
  EXPECT_EQ(find_zone(out, "core"), nullptr);
  const Sample* core0 = find_zone(out, "core.0:0");
  const Sample* core1 = find_zone(out, "core.1:0");
  ASSERT_NE(core0, nullptr);
  ASSERT_NE(core1, nullptr);
  EXPECT_DOUBLE_EQ(core0->value, 23456789 / 1e6);
  EXPECT_DOUBLE_EQ(core1->value, 8765432 / 1e6);
}

TEST(WrappingCounter, FirstReadingIsTheBaseline) {
  WrappingCounter c(1000);
  EXPECT_EQ(c.update(900), 900u);
}

TEST(WrappingCounter, IncreasesPassThrough) {
  WrappingCounter c(1000);
  EXPECT_EQ(c.update(10), 10u);
  EXPECT_EQ(c.update(250), 250u);
  EXPECT_EQ(c.update(250), 250u);
  EXPECT_EQ(c.update(999), 999u);
}

TEST(WrappingCounter, WrapAddsTheDistanceToTheWrapPoint) {
  WrappingCounter c(1000);
  EXPECT_EQ(c.update(900), 900u);
  EXPECT_EQ(c.update(100), 900u + 200u);  // 900 -> 1000 -> 100
  EXPECT_EQ(c.update(300), 1100u + 200u);
}

TEST(WrappingCounter, TwoWrapsInARow) {
  WrappingCounter c(1000);
  EXPECT_EQ(c.update(900), 900u);
  EXPECT_EQ(c.update(100), 1100u);  // +200
  EXPECT_EQ(c.update(50), 2050u);   // +950: 100 -> 1000 -> 50
}

TEST(WrappingCounter, UnknownRangeWrapsAtTheLargestValueSeen) {
  WrappingCounter c(0);
  EXPECT_EQ(c.update(500), 500u);
  EXPECT_EQ(c.update(800), 800u);
  EXPECT_EQ(c.update(100), 900u);  // wrap at 800: +100
}

TEST(Powercap, MissingDirIsUnavailableAndNamesThePath) {
  const std::string missing = "/nonexistent/perf-monitor-test-sys";
  auto src = make_powercap_source(FsRoots{"/proc", missing});
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.error().code, Errc::kUnavailable);
  EXPECT_NE(src.error().message.find(missing + "/class/powercap"), std::string::npos) << src.error().message;
}

TEST(Powercap, NoZoneWithEnergyIsUnavailable) {
  // Only a control type dir, as on a host whose powercap holds no RAPL zone.
  char tmpl[] = "/tmp/pm-powercap-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  ASSERT_EQ(std::system(("mkdir -p " + root + "/class/powercap/intel-rapl").c_str()), 0);
  write_text(root + "/class/powercap/intel-rapl/enabled", "1\n");
  auto src = make_powercap_source(FsRoots{"/proc", root});
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.error().code, Errc::kUnavailable);
  EXPECT_NE(src.error().message.find(root + "/class/powercap"), std::string::npos) << src.error().message;
  EXPECT_EQ(std::system(("rm -rf " + root).c_str()), 0);
}

TEST(Powercap, WrapBetweenReadsKeepsTheTotalGoing) {
  TempTree tree;
  ASSERT_TRUE(tree.ok());
  auto src = make_powercap_source(tree.roots());
  ASSERT_TRUE(src.ok()) << src.error().message;
  Samples first;
  (*src)->collect(first);
  ASSERT_NE(find_zone(first, "package-0"), nullptr);
  EXPECT_DOUBLE_EQ(find_zone(first, "package-0")->value, 123456789 / 1e6);

  // The counter wrapped: 123456789 -> 262143328850 (the range) -> 1000.
  write_text(tree.zone("intel-rapl:0") + "energy_uj", "1000\n");
  Samples second;
  (*src)->collect(second);
  const Sample* pkg0 = find_zone(second, "package-0");
  ASSERT_NE(pkg0, nullptr);
  EXPECT_NEAR(pkg0->value - find_zone(first, "package-0")->value, (kRange - 123456789 + 1000) / 1e6, 1e-6);
  EXPECT_DOUBLE_EQ(pkg0->value, (kRange + 1000) / 1e6);
  // The other zones did not move.
  ASSERT_NE(find_zone(second, "core.0:0"), nullptr);
  EXPECT_DOUBLE_EQ(find_zone(second, "core.0:0")->value, 23456789 / 1e6);

  // And it keeps counting up from there.
  write_text(tree.zone("intel-rapl:0") + "energy_uj", "5000\n");
  Samples third;
  (*src)->collect(third);
  ASSERT_NE(find_zone(third, "package-0"), nullptr);
  EXPECT_DOUBLE_EQ(find_zone(third, "package-0")->value, (kRange + 5000) / 1e6);
}

TEST(Powercap, UnreadableZonesAreSkippedAndAllUnreadableSaysRunAsRoot) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  TempTree tree;
  ASSERT_TRUE(tree.ok());
  // Since Linux 5.10 energy_uj is 0400 root.
  ASSERT_EQ(::chmod((tree.zone("intel-rapl:0") + "energy_uj").c_str(), 0), 0);
  auto some = make_powercap_source(tree.roots());
  ASSERT_TRUE(some.ok()) << some.error().message;
  Samples out;
  (*some)->collect(out);
  EXPECT_EQ(out.size(), 4u);  // three zones and the elapsed time
  EXPECT_EQ(find_zone(out, "package-0"), nullptr);

  for (const char* zone : {"intel-rapl:0:0", "intel-rapl:1", "intel-rapl:1:0"}) {
    ASSERT_EQ(::chmod((tree.zone(zone) + "energy_uj").c_str(), 0), 0);
  }
  auto none = make_powercap_source(tree.roots());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Errc::kUnavailable);
  EXPECT_NE(none.error().message.find("permission denied reading " + tree.zone("intel-rapl:0") + "energy_uj"),
            std::string::npos)
      << none.error().message;
  EXPECT_NE(none.error().message.find("run as root"), std::string::npos) << none.error().message;
}

TEST(Powercap, RealHost) {
  auto src = make_powercap_source(FsRoots{});
  if (!src.ok()) {
    EXPECT_EQ(src.error().code, Errc::kUnavailable) << src.error().message;
    GTEST_SKIP() << src.error().message;
  }
  Samples out;
  (*src)->collect(out);
  EXPECT_GT(out.size(), 0u);
  for (const Sample& s : out) EXPECT_GE(s.value, 0.0);
}

// Found by fuzzing (fuzz/powercap_fuzz.cpp): readings far beyond the zone's range made the
// total wrap past 2^64 and go backwards. A running total never goes backwards.
TEST(WrappingCounterBounds, HugeReadingsNeverTakeTheTotalBackwards) {
  WrappingCounter c(1);
  uint64_t total = c.update(0);
  for (uint64_t raw : std::vector<uint64_t>{18446744073709514285ull, 17160403430128770140ull, 56, UINT64_MAX, 0, 5}) {
    uint64_t next = c.update(raw);
    EXPECT_GE(next, total) << raw;
    total = next;
  }
  EXPECT_EQ(total, UINT64_MAX);  // it stays at the top
}

}  // namespace
}  // namespace pm
