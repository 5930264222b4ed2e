// SPDX-License-Identifier: Apache-2.0
// Cgroup names on a hierarchy of plain directories (a cgroup's id is its directory's inode).
#include "sources/top/cgroup_names.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace pm {
namespace {

struct Hierarchy {
  std::string root = ::testing::TempDir() + "pm-cgnames-" + std::to_string(::getpid());
  Hierarchy() { std::filesystem::create_directories(root + "/a"); }
  ~Hierarchy() { std::filesystem::remove_all(root); }
  [[nodiscard]] uint64_t id(const std::string& rel) const {
    struct stat st {};
    return ::stat((root + rel).c_str(), &st) == 0 ? st.st_ino : 0;
  }
};

TEST(CgroupNames, AWalkNamesWhatIsThereAndKeepsARemovedNameForTwoReadings) {
  Hierarchy h;
  CgroupNames names(h.root);
  uint64_t a = h.id("/a");
  ASSERT_NE(a, 0u);
  EXPECT_EQ(names.path(a), "/a");
  std::filesystem::create_directory(h.root + "/b");
  uint64_t b = h.id("/b");
  EXPECT_EQ(names.path(b), "/b");  // unknown: walked again at once
  std::filesystem::remove(h.root + "/a");
  EXPECT_EQ(names.path(12345678), std::nullopt);  // a walk, which misses /a
  for (uint64_t i = 0; i < CgroupNames::kRemovedReadings; ++i) {
    EXPECT_EQ(names.path(a), "/a") << "reading " << i;
    names.next_reading();
  }
  names.next_reading();
  EXPECT_EQ(names.path(a), std::nullopt);
}

// What the top model's cache of names relies on: while the generation stands, path() answers as
// it did; a walk, a new cgroup or a removed one's name let go changes it.
TEST(CgroupNames, TheGenerationChangesWheneverANameMay) {
  Hierarchy h;
  CgroupNames names(h.root);
  uint64_t a = h.id("/a"), g = names.generation();
  EXPECT_EQ(names.path(a), "/a");
  names.next_reading();
  EXPECT_EQ(names.generation(), g) << "a known name, a reading with nothing removed";
  names.made(987654321, "/made");
  EXPECT_GT(names.generation(), g) << "a cgroup made";
  g = names.generation();
  names.made(987654321, "/made");
  EXPECT_EQ(names.generation(), g) << "the same cgroup said twice";
  std::filesystem::remove(h.root + "/a");
  EXPECT_EQ(names.path(12345678), std::nullopt);
  EXPECT_GT(names.generation(), g) << "a walk";
  g = names.generation();
  for (uint64_t i = 0; i < CgroupNames::kRemovedReadings; ++i) names.next_reading();
  EXPECT_EQ(names.generation(), g) << "a removed name still kept";
  names.next_reading();
  EXPECT_GT(names.generation(), g) << "removed names let go";
  EXPECT_EQ(names.path(a), std::nullopt);
}

// A cgroup the kernel said was made, removed before any walk saw it: named for as long as no
// walk missed it, however many readings pass (its process's exit may be read long after).
TEST(CgroupNames, AMadeCgroupIsNamedUntilAWalkMissesIt) {
  Hierarchy h;
  CgroupNames names(h.root);
  names.made(987654321, "/short-lived");
  for (int i = 0; i < 10; ++i) names.next_reading();
  EXPECT_EQ(names.path(987654321), "/short-lived");
  EXPECT_EQ(names.path(12345678), std::nullopt);  // a walk: it misses /short-lived
  for (uint64_t i = 0; i < CgroupNames::kRemovedReadings; ++i) {
    EXPECT_EQ(names.path(987654321), "/short-lived");
    names.next_reading();
  }
  names.next_reading();
  EXPECT_EQ(names.path(987654321), std::nullopt);
}

// Churn of cgroups that no walk sees: a walk every kMadeBeforeWalk of them forgets the ones
// that are gone, so what is kept stays bounded.
TEST(CgroupNames, ChurnIsForgottenByTheWalksItCauses) {
  Hierarchy h;
  CgroupNames names(h.root);
  const uint64_t first = 1'000'000'000;
  for (uint64_t i = 0; i < 3 * CgroupNames::kMadeBeforeWalk; ++i) names.made(first + i, "/c" + std::to_string(i));
  for (uint64_t i = 0; i <= CgroupNames::kRemovedReadings; ++i) names.next_reading();
  // The first thousands were missed by a walk readings ago: forgotten (asking costs one walk).
  EXPECT_EQ(names.path(first), std::nullopt);
  EXPECT_EQ(names.path(h.id("/a")), "/a");
}

}  // namespace
}  // namespace pm
