// SPDX-License-Identifier: Apache-2.0
// Formatting shared by the sinks: units for people, timestamps, and finding a metric in a record.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/aggregator.h"
#include "core/text_layout.h"

namespace pm {

std::string iso8601(WallClock::time_point t, bool micros = false);  // "2026-06-20T02:23:15Z" (.123456)
std::string labels_text(const Labels& labels);                      // "cpu=0,mode=user"

// The values of one record, found by family and name (and optionally a label).
template <typename V>
class ValueIndex {
 public:
  explicit ValueIndex(const std::vector<V>& values) : values_(values) {}

  [[nodiscard]] std::vector<const V*> all(std::string_view family, std::string_view name) const {
    std::vector<const V*> out;
    for (const V& v : values_) {
      if (v.desc->family == family && v.desc->name == name) out.push_back(&v);
    }
    return out;
  }
  // The value whose labels include every (key, value) given.
  [[nodiscard]] const V* find(std::string_view family, std::string_view name, const Labels& want = {}) const {
    for (const V& v : values_) {
      if (v.desc->family != family || v.desc->name != name) continue;
      bool match = true;
      for (const auto& kv : want) {
        bool has = false;
        for (const auto& l : *v.labels) has = has || l == kv;
        match = match && has;
      }
      if (match) return &v;
    }
    return nullptr;
  }

 private:
  const std::vector<V>& values_;
};

}  // namespace pm
