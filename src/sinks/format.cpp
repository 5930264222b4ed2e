// SPDX-License-Identifier: Apache-2.0
#include "sinks/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "core/text.h"

namespace pm {

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
    s.append(k).append("=").append(printable(v));  // label values come from outside: names, paths
  }
  return s;
}

std::vector<std::pair<std::string, std::string>> by_reason(const std::vector<Unavailable>& list) {
  std::vector<std::pair<std::string, std::string>> grouped;  // reason, sources
  for (const Unavailable& u : list) {
    auto it = std::find_if(grouped.begin(), grouped.end(), [&](const auto& g) { return g.first == u.reason; });
    if (it == grouped.end()) {
      grouped.emplace_back(u.reason, u.source);
    } else {
      it->second += ", " + u.source;
    }
  }
  return grouped;
}

}  // namespace pm
