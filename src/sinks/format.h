// SPDX-License-Identifier: Apache-2.0
// Formatting shared by the sinks: timestamps, labels (units for people: core/text_layout.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/aggregator.h"
#include "core/text_layout.h"

namespace pm {

std::string iso8601(WallClock::time_point t, bool micros = false);  // "2026-06-20T02:23:15Z" (.123456)
std::string labels_text(const Labels& labels);                      // "cpu=0,mode=user"

}  // namespace pm
