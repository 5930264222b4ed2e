// SPDX-License-Identifier: Apache-2.0
// Labels made unique from names the kernel gives: every repeated name gets its suffix, and a
// name that happens to equal another's suffixed form (a thermal zone whose type is "acpitz.1"
// beside two "acpitz" zones) still leaves every label different.
#include "core/labels.h"

#include <gtest/gtest.h>

#include <set>

#include "sources/files/powercap.h"

namespace pm {
namespace {

void expect_all_different(const std::vector<std::string>& labels) {
  EXPECT_EQ(std::set<std::string>(labels.begin(), labels.end()).size(), labels.size());
}

TEST(UniqueLabels, RepeatedNamesGetTheirSuffix) {
  auto l = unique_labels({"x86_pkg_temp", "acpitz", "acpitz"}, {"0", "1", "2"});
  EXPECT_EQ(l, (std::vector<std::string>{"x86_pkg_temp", "acpitz.1", "acpitz.2"}));
}

TEST(UniqueLabels, ANameEqualToASuffixedOneStaysApart) {
  auto l = unique_labels({"acpitz", "acpitz", "acpitz.1"}, {"0", "1", "2"});
  expect_all_different(l);
  EXPECT_EQ(l[2], "acpitz.1");  // the name that needed no suffix keeps it
  auto same_suffix = unique_labels({"a", "a", "a"}, {"0", "0", "0"});
  expect_all_different(same_suffix);
  auto empty = unique_labels({"", ""}, {"", ""});
  expect_all_different(empty);
}

TEST(PowercapZones, ParsedFromTheirFiles) {
  auto z = parse_powercap_zone("intel-rapl:0", "123456\n", "262143328850\n", "package-0\n");
  ASSERT_TRUE(z.has_value());
  EXPECT_EQ(z->energy_uj, 123456u);
  EXPECT_EQ(z->range_uj, 262143328850u);
  EXPECT_EQ(z->label, "package-0");
  auto no_name = parse_powercap_zone("intel-rapl:0:1", "1", std::nullopt, "  \n");
  ASSERT_TRUE(no_name.has_value());
  EXPECT_EQ(no_name->label, "intel-rapl:0:1");
  EXPECT_EQ(no_name->range_uj, 0u);
  EXPECT_FALSE(parse_powercap_zone("x", "not a number", "1", "n").has_value());
  // Two "core" zones and one named like the first's suffixed label.
  auto labels = powercap_labels({"core", "core", "core.0:0"}, {"intel-rapl:0:0", "intel-rapl:1:0", "intel-rapl:2:0"});
  expect_all_different(labels);
  EXPECT_EQ(labels[1], "core.1:0");
}

}  // namespace
}  // namespace pm
