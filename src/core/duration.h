// SPDX-License-Identifier: Apache-2.0
// Durations as users write them: "100ms", "1s", "1.5s", "2m", "1h" (a bare number is refused:
// milliseconds or seconds?).
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "core/clock.h"

namespace pm {

inline constexpr double kMaxDurationSeconds = 365.0 * 24 * 3600;

Result<Duration> parse_duration(std::string_view text);
// A number of seconds as a Duration, when it is finite and within 1 ms .. 365 days; `text` is
// what the user wrote, for the message.
Result<Duration> checked_duration(double seconds, std::string_view text);
std::string format_duration(Duration d);

}  // namespace pm
