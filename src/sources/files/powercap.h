// SPDX-License-Identifier: Apache-2.0
// Energy from the kernel's powercap interface (/sys/class/powercap/*/energy_uj: Intel and AMD
// RAPL, RAPL over MMIO), for hosts without a `power` perf PMU. One running total in joules per
// zone; the kernel's counter wraps, the total does not.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// What one zone's files say (pure: tests and the fuzzer feed it text). energy_uj must be a
// number; max_energy_range_uj and name may be missing (nullopt) or unreadable: then 0 (the
// range is unknown) and the zone's directory name.
struct PowercapZone {
  std::string label;  // its name; made unique among the zones by powercap_labels
  uint64_t energy_uj = 0;
  uint64_t range_uj = 0;
};
std::optional<PowercapZone> parse_powercap_zone(std::string_view dir, std::string_view energy_uj,
                                                std::optional<std::string_view> max_energy_range_uj,
                                                std::optional<std::string_view> name);
// The zones' labels, each unique: a name that occurs more than once gets the directory's number
// ("core.0:0", "core.1:0"), or the whole directory name when it is not an intel-rapl zone.
std::vector<std::string> powercap_labels(const std::vector<std::string>& names, const std::vector<std::string>& dirs);

// Fails (kUnavailable) when no zone has an energy_uj file, or when none may be read: since Linux
// 5.10 only root may read energy_uj.
Result<std::unique_ptr<Source>> make_powercap_source(const FsRoots& roots);

}  // namespace pm
