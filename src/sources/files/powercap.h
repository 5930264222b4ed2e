// SPDX-License-Identifier: Apache-2.0
// Energy from the kernel's powercap interface (/sys/class/powercap/*/energy_uj: Intel and AMD
// RAPL, RAPL over MMIO), for hosts without a `power` perf PMU. One running total in joules per
// zone; the kernel's counter wraps, the total does not.
#pragma once

#include <cstdint>
#include <memory>

#include "core/error.h"
#include "core/source.h"
#include "sources/files/system_sources.h"

namespace pm {

// The running total of a counter that wraps. `range` is where it wraps (max_energy_range_uj);
// 0 when unknown, then a decrease counts as a wrap at the largest value seen so far.
class WrappingCounter {
 public:
  explicit WrappingCounter(uint64_t range) : range_(range) {}
  // Feeds a raw reading and returns the total: the first reading as-is, then that plus every
  // increase since, wraps included.
  uint64_t update(uint64_t raw);

 private:
  uint64_t range_;
  uint64_t offset_ = 0;  // the sum of the wrap points passed
  uint64_t last_ = 0;
  uint64_t max_seen_ = 0;
  bool started_ = false;
};

// Fails (kUnavailable) when no zone has an energy_uj file, or when none may be read: since Linux
// 5.10 only root may read energy_uj.
Result<std::unique_ptr<Source>> make_powercap_source(const FsRoots& roots);

}  // namespace pm
