// SPDX-License-Identifier: Apache-2.0
// The rows a list shows: the first N by the sort key, busiest first, ties in the list's order.
#include <gtest/gtest.h>

#include <vector>

#include "core/top.h"

namespace pm {
namespace {

std::vector<TopProcess> rows(const std::vector<double>& cpu) {
  std::vector<TopProcess> out;
  for (size_t i = 0; i < cpu.size(); ++i) {
    TopProcess p{static_cast<int>(i + 1), 0, "p"};
    p.f[TaskFig::kUser] = cpu[i];
    out.push_back(p);
  }
  return out;
}

std::vector<int> pids(const std::vector<TopProcess*>& shown) {
  std::vector<int> out;
  for (const TopProcess* p : shown) out.push_back(p->pid);
  return out;
}

TEST(TopFirst, TheBusiestFirstTiesInTheListsOrder) {
  auto list = rows({0.1, 0.5, 0.0, 0.5, 0.3, 0.0, 0.5});
  EXPECT_EQ(pids(top_first(list, TopSort::kCpu, 3)), (std::vector<int>{2, 4, 7}));
  EXPECT_EQ(pids(top_first(list, TopSort::kCpu, 5)), (std::vector<int>{2, 4, 7, 5, 1}));
  EXPECT_EQ(pids(top_first(list, TopSort::kCpu, 0)), (std::vector<int>{2, 4, 7, 5, 1, 3, 6})) << "0: every row";
  EXPECT_EQ(pids(top_first(list, TopSort::kCpu, 100)).size(), 7u);
  std::vector<TopProcess> none;
  EXPECT_TRUE(top_first(none, TopSort::kCpu, 10).empty());
}

TEST(TopFirst, AThousandRowsTheSameAsAFullSortCut) {
  std::vector<double> cpu;
  for (int i = 0; i < 1000; ++i) cpu.push_back(static_cast<double>((i * 7919) % 97) / 100.0);
  auto list = rows(cpu);
  std::vector<int> all = pids(top_first(list, TopSort::kCpu, 0));
  std::vector<int> ten = pids(top_first(list, TopSort::kCpu, 10));
  EXPECT_EQ(ten, std::vector<int>(all.begin(), all.begin() + 10));
  for (size_t i = 1; i < all.size(); ++i) {
    double a = cpu[static_cast<size_t>(all[i - 1] - 1)], b = cpu[static_cast<size_t>(all[i] - 1)];
    ASSERT_TRUE(a > b || (a == b && all[i - 1] < all[i])) << i;
  }
}

}  // namespace
}  // namespace pm
