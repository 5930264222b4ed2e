// SPDX-License-Identifier: Apache-2.0
// Formatting shared by the sinks: timestamps, labels (units for people: core/text_layout.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/aggregator.h"
#include "core/source.h"
#include "core/text_layout.h"

namespace pm {

std::string iso8601(WallClock::time_point t, bool micros = false);  // "2026-06-20T02:23:15Z" (.123456)
std::string labels_text(const Labels& labels);                      // "cpu=0,mode=user"
// The sources that could not start, one entry per reason (six hardware events missing for one
// cause are one message): {reason, "source, source, ..."}, in the order first seen.
std::vector<std::pair<std::string, std::string>> by_reason(const std::vector<Unavailable>& list);

}  // namespace pm
