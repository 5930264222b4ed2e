// SPDX-License-Identifier: Apache-2.0
// Multiplexing arithmetic with synthetic enabled/running times, and the group mechanics on the
// real kernel with software events (which every Linux host has).
#include "sources/counters/counter_group.h"

#include <unistd.h>

#include <cmath>

#include <gtest/gtest.h>

#include "sources/counters/event_catalogue.h"

namespace pm::counters {
namespace {

TEST(Reading, RanAllTheTimeIsTheRawCount) {
  Reading r{1000, 5'000'000, 5'000'000};
  EXPECT_DOUBLE_EQ(r.scaled(), 1000);
  EXPECT_DOUBLE_EQ(r.running_fraction(), 1.0);
}

TEST(Reading, MultiplexedIsScaledByEnabledOverRunning) {
  // On the PMU a quarter of the time: perf stat's estimate is four times the raw count.
  Reading r{1000, 8'000'000, 2'000'000};
  EXPECT_DOUBLE_EQ(r.scaled(), 4000);
  EXPECT_DOUBLE_EQ(r.running_fraction(), 0.25);
}

TEST(Reading, NeverOnThePmuIsUnknownNotZero) {
  Reading r{0, 3'000'000, 0};
  EXPECT_TRUE(std::isnan(r.scaled()));
  EXPECT_DOUBLE_EQ(r.running_fraction(), 0.0);
}

TEST(Reading, NotEnabledYetIsZero) {
  Reading r{0, 0, 0};  // enable_on_exec before the exec
  EXPECT_DOUBLE_EQ(r.scaled(), 0);
}

TEST(Reading, RunningNeverExceedsEnabledInTheEstimate) {
  Reading r{500, 1000, 1200};  // rounding between the two clocks
  EXPECT_DOUBLE_EQ(r.scaled(), 500);
  EXPECT_DOUBLE_EQ(r.running_fraction(), 1.0);
}

TEST(Reading, EachIntervalIsScaledByItsOwnShareOfTime) {
  // Interval 1: on the PMU half the time, 1000 counted -> 2000. Interval 2: all the time, 3000.
  // Scaling the cumulative reading instead (4000 raw over 75% running) would say 5333.
  Reading t0{0, 0, 0}, t1{1000, 1'000'000, 500'000}, t2{4000, 2'000'000, 1'500'000};
  double total = (t1 - t0).scaled() + (t2 - t1).scaled();
  EXPECT_DOUBLE_EQ(total, 5000);
  EXPECT_DOUBLE_EQ((t2 - t1).scaled(), 3000);
  EXPECT_NEAR(t2.scaled(), 5333.33, 0.01);
}

TEST(Reading, AnIntervalOffThePmuIsUnknown) {
  Reading t1{1000, 1'000'000, 1'000'000}, t2{1000, 2'000'000, 1'000'000};  // no time on the PMU since t1
  EXPECT_TRUE(std::isnan((t2 - t1).scaled()));
}

TEST(CounterSet, SoftwareGroupOnOneCpuCountsEveryMember) {
  Catalogue cat;
  auto specs = cat.parse_list("cpu-clock,context-switches,task-clock");
  ASSERT_TRUE(specs.ok());
  CounterSet set = CounterSet::open(*specs, Scope{::getpid(), -1, false, false});
  for (size_t i = 0; i < specs->size(); ++i) {
    ASSERT_FALSE(set.failure(i).has_value()) << set.failure(i)->message;
  }
  EXPECT_EQ(set.fds(), 3u);
  for (int i = 0; i < 20; ++i) ::usleep(1000);  // twenty voluntary switches at least
  std::vector<Reading> r(3);
  ASSERT_TRUE(set.read(r).ok());
  EXPECT_GE(r[1].raw, 20u);  // members count too (they were added before the group started)
  EXPECT_GT(r[0].raw, 0u);
  EXPECT_GT(r[2].raw, 0u);
  EXPECT_EQ(r[0].enabled_ns, r[1].enabled_ns);  // one group: one time base
}

TEST(CounterSet, AnEventWithoutAPmuFailsAloneWithAReason) {
  Catalogue cat;
  auto specs = cat.parse_list("task-clock,cycles,context-switches");
  ASSERT_TRUE(specs.ok());
  CounterSet set = CounterSet::open(*specs, Scope{::getpid(), -1, false, false});
  EXPECT_FALSE(set.failure(0).has_value());
  EXPECT_FALSE(set.failure(2).has_value());
  if (!set.failure(1)) GTEST_SKIP() << "this host has a hardware PMU: cycles opened";
  EXPECT_NE(set.failure(1)->message.find("not supported"), std::string::npos) << set.failure(1)->message;
}

}  // namespace
}  // namespace pm::counters
