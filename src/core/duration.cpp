// SPDX-License-Identifier: Apache-2.0
#include "core/duration.h"

#include <cmath>

#include "core/text.h"

namespace pm {

Result<Duration> checked_duration(double seconds, std::string_view text) {
  if (!std::isfinite(seconds) || seconds < 1e-3 || seconds > kMaxDurationSeconds) {
    return make_error(Errc::kInvalidArgument,
                      "duration '" + std::string(text) + "' is out of range: give 1ms to 365 days");
  }
  return Duration(static_cast<int64_t>(std::llround(seconds * 1e9)));
}

Result<Duration> parse_duration(std::string_view text) {
  std::string_view s = trim(text);
  size_t unit_at = s.find_first_not_of("0123456789.");
  std::string_view number = s.substr(0, unit_at);
  auto value = parse_double(number);
  if (unit_at == std::string_view::npos && value && *value > 0) {
    // `--interval 500`: milliseconds or seconds? Said, never guessed.
    std::string n(number);
    return make_error(Errc::kInvalidArgument,
                      "duration '" + std::string(text) + "' has no unit: did you mean " + n + "ms or " + n + "s?");
  }
  std::string_view unit = unit_at == std::string_view::npos ? "" : s.substr(unit_at);
  double scale = 0;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "m")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  if (!value || scale == 0 || !std::isfinite(*value) || *value <= 0) {
    return make_error(Errc::kInvalidArgument, "invalid duration '" + std::string(text) +
                                                  "': write a positive number with a unit, e.g. 100ms, 1s, 2m");
  }
  return checked_duration(*value * scale / 1e9, text);
}

std::string format_duration(Duration d) {
  int64_t ns = d.count();
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace pm
