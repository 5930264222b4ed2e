// SPDX-License-Identifier: Apache-2.0
#include "core/duration.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>

namespace pm {
namespace {

using namespace std::chrono_literals;

Duration parsed(const char* text) {
  auto d = parse_duration(text);
  EXPECT_TRUE(d.ok()) << text << ": " << (d.ok() ? "" : d.error().message);
  return d.ok() ? *d : Duration(-1);
}

TEST(Duration, ParsesUnits) {
  EXPECT_EQ(parsed("100ms"), Duration(100ms));
  EXPECT_EQ(parsed("1s"), Duration(1s));
  EXPECT_EQ(parsed("1.5s"), Duration(1500ms));
  EXPECT_EQ(parsed("2m"), Duration(120s));
  EXPECT_EQ(parsed("1h"), Duration(3600s));
  EXPECT_EQ(parsed("2500us"), Duration(2500us));
  EXPECT_EQ(parsed("1000000ns"), Duration(1ms));
  EXPECT_EQ(parsed(" 10ms "), Duration(10ms));
}

TEST(Duration, RejectsBadInput) {
  for (const char* bad : {"", "0s", "-1s", "5x", "abc", "0", "ms", "1.2.3s", "1 s"}) {
    auto d = parse_duration(bad);
    EXPECT_FALSE(d.ok()) << "accepted '" << bad << "'";
    if (!d.ok()) {
      EXPECT_EQ(d.error().code, Errc::kInvalidArgument) << bad;
      EXPECT_NE(d.error().message.find(std::string("'") + bad + "'"), std::string::npos) << d.error().message;
    }
  }
}

TEST(Duration, ANumberWithoutAUnitIsRefusedWithTheUnitsItMayMean) {
  for (const char* bare : {"500", "3", "0.25"}) {
    auto d = parse_duration(bare);
    ASSERT_FALSE(d.ok()) << "accepted '" << bare << "'";
    EXPECT_EQ(d.error().code, Errc::kInvalidArgument);
    std::string n = bare;
    EXPECT_EQ(d.error().message, "duration '" + n + "' has no unit: did you mean " + n + "ms or " + n + "s?");
  }
}

TEST(Duration, RejectsWhatNoTimerShouldRunAt) {
  // Below a millisecond, beyond a year, or not a finite number: a usage error, not a timer
  // that fails later.
  for (const char* bad : {"250us", "40ns", "0.1ns", "366d", "1e20s", "9999999h", "400d"}) {
    auto d = parse_duration(bad);
    EXPECT_FALSE(d.ok()) << "accepted '" << bad << "'";
    if (!d.ok()) {
      EXPECT_EQ(d.error().code, Errc::kInvalidArgument) << bad;
    }
  }
  EXPECT_TRUE(parse_duration("1ms").ok());
  EXPECT_FALSE(checked_duration(std::numeric_limits<double>::quiet_NaN(), "nan").ok());
  EXPECT_FALSE(checked_duration(std::numeric_limits<double>::infinity(), "inf").ok());
  EXPECT_TRUE(checked_duration(1e-3, "1ms").ok());
  EXPECT_TRUE(checked_duration(365.0 * 24 * 3600, "365 days").ok());
}

TEST(Duration, FormatsInTheLargestExactUnit) {
  EXPECT_EQ(format_duration(1s), "1s");
  EXPECT_EQ(format_duration(120s), "120s");
  EXPECT_EQ(format_duration(100ms), "100ms");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(250us), "250us");
  EXPECT_EQ(format_duration(7ns), "7ns");
}

TEST(Duration, FormatRoundTrips) {
  for (Duration d : {Duration(1s), Duration(100ms), Duration(1500ms), Duration(120s), Duration(2500us),
                     Duration(1001us), Duration(1000007ns), Duration(3600s)}) {
    auto back = parse_duration(format_duration(d));
    ASSERT_TRUE(back.ok()) << format_duration(d);
    EXPECT_EQ(*back, d) << format_duration(d);
  }
}

}  // namespace
}  // namespace pm
