// Powercap zones as their files describe them, and the running totals of their energy counters
// over a sequence of readings: labels are always unique, and a total never goes backwards.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "sources/files/powercap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<std::string> names, dirs;
  std::vector<pm::PowercapZone> zones;
  int n = in.ConsumeIntegralInRange(0, 8);
  for (int i = 0; i < n; ++i) {
    std::string dir = in.ConsumeRandomLengthString(32);
    std::string energy = in.ConsumeRandomLengthString(32);
    std::string range = in.ConsumeRandomLengthString(32);
    std::string name = in.ConsumeRandomLengthString(32);
    bool has_range = in.ConsumeBool(), has_name = in.ConsumeBool();
    auto z = pm::parse_powercap_zone(dir, energy, has_range ? std::optional<std::string_view>(range) : std::nullopt,
                                     has_name ? std::optional<std::string_view>(name) : std::nullopt);
    if (!z) continue;
    names.push_back(z->label);
    dirs.push_back(dir);
    zones.push_back(*z);
  }
  std::vector<std::string> labels = pm::powercap_labels(names, dirs);
  if (labels.size() != names.size() || std::set<std::string>(labels.begin(), labels.end()).size() != labels.size()) {
    std::abort();  // two series of one name
  }
  for (const pm::PowercapZone& z : zones) {
    pm::WrappingCounter c(z.range_uj);
    uint64_t total = c.update(z.energy_uj);
    while (in.remaining_bytes() > 0) {
      uint64_t next = c.update(in.ConsumeIntegral<uint64_t>());
      if (next < total) std::abort();  // a counter's total went backwards
      total = next;
      if (in.ConsumeBool()) break;
    }
  }
  return 0;
}
