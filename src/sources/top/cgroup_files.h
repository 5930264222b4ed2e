// SPDX-License-Identifier: Apache-2.0
// A cgroup's own files, as the top lists read them: cpu.stat's usage and a pressure file's
// "some avg10" (string_view in, value or nothing out).
#pragma once

#include <optional>
#include <string_view>

#include "core/text.h"

namespace pm {

// "some avg10=1.23 avg60=..." -> 1.23
inline std::optional<double> pressure_avg10(std::string_view text) {
  size_t at = text.find("some avg10=");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 11);
  return parse_double(next_field(rest));
}

// cpu.stat's usage_usec, in seconds.
inline std::optional<double> cpu_stat_usage_s(std::string_view text) {
  size_t at = text.find("usage_usec ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 11);
  auto v = parse_u64(next_field(rest));
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * 1e-6;
}

}  // namespace pm
