// SPDX-License-Identifier: Apache-2.0
// What every source implements. A source is created by a factory that returns an error saying why
// it cannot run on this host; once created it only reports samples.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/metric.h"

namespace pm {

class Source {
 public:
  virtual ~Source() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Appends the current running totals and values. A transient failure (a file that vanished)
  // leaves out the affected samples; it is not an error.
  virtual void collect(Samples& out) = 0;
  // Derived ratios this source's metrics support (cpu utilisation, ...).
  [[nodiscard]] virtual std::vector<RatioRule> ratios() const { return {}; }
};

// A source that could not start, with the reason shown to the user once.
struct Unavailable {
  std::string source;
  std::string reason;
};

}  // namespace pm
