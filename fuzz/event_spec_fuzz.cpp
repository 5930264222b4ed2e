// Counter event lists (-e, [pmc] events) against a captured sysfs tree (tests/fixtures/sys: the
// cpu, msr, power and software PMUs). An event's canonical name parses back to itself and to the
// same perf_event_attr; no two events of a set share a metric name.
#include <cstdlib>
#include <set>
#include <string_view>

#include "sources/counters/event_catalogue.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pm::counters::Catalogue catalogue{PM_FIXTURES_DIR "/sys"};
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto set = catalogue.parse_list(text);
  if (!set) return 0;
  std::set<std::string> metrics;
  for (const pm::counters::EventSpec& e : *set) {
    auto again = catalogue.parse(e.name);
    if (!again || again->name != e.name || again->type != e.type || again->config != e.config ||
        again->config1 != e.config1 || again->config2 != e.config2) {
      std::abort();  // the canonical name is not canonical
    }
    if (!metrics.insert(pm::counters::metric_name(e)).second) std::abort();  // two series of one name
  }
  return 0;
}
