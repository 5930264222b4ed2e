// SPDX-License-Identifier: Apache-2.0
#include "sinks/format.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

namespace pm {

std::string human_bytes(double bytes) {
  if (!std::isfinite(bytes)) return "n/a";
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = bytes;
  size_t u = 0;
  while (std::fabs(v) >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, kUnits[u]);
}

std::string iso8601(WallClock::time_point t, bool micros) {
  std::time_t tt = WallClock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string s = buf;
  if (micros) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() % 1000000;
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(us < 0 ? us + 1000000 : us));
    s += frac;
  }
  return s + "Z";
}

std::string labels_text(const Labels& labels) {
  std::string s;
  for (const auto& [k, v] : labels) {
    if (!s.empty()) s += ',';
    s.append(k).append("=").append(v);
  }
  return s;
}

std::string summary_key(const MetricDesc& d) {
  if (!d.summary_key.empty()) return std::string(d.summary_key);
  return std::string(d.family) + "_" + std::string(d.name);
}

}  // namespace pm
