// SPDX-License-Identifier: Apache-2.0
// The clocks and the one duration type: what the configuration, spans, the aggregator and the
// event loop share, without depending on each other.
#pragma once

#include <chrono>

namespace pm {

using Duration = std::chrono::nanoseconds;
using WallClock = std::chrono::system_clock;  // timestamps people read (UTC)
using MonoClock = std::chrono::steady_clock;  // intervals and rates

}  // namespace pm
