// Durations as users write them: "100ms", "1s", "1.5s", "2m", "1h", or a bare number of seconds.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "core/event_loop.h"

namespace pm {

Result<Duration> parse_duration(std::string_view text);
std::string format_duration(Duration d);

}  // namespace pm
