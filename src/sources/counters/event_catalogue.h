// SPDX-License-Identifier: Apache-2.0
// The event catalogue: turns what a user writes (`cycles`, `cache_misses`, `L1-dcache-load-misses`,
// `r01c2`, `cpu/event=0x2e,umask=0x41/`, `power/energy-pkg/`) into a perf_event_attr recipe, and
// lists every event this host publishes. Pure apart from reading sysfs under a given root, so
// tests point it at a captured tree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace pm::counters {

enum class EventKind { kHardware, kSoftware, kHwCache, kRaw, kPmu };

struct EventSpec {
  std::string name;  // canonical name as perf writes it: "cache-misses", "L1-dcache-load-misses",
                     // "r01c2", "cpu/event=0x2e,umask=0x41/", "power/energy-pkg/". PMU terms are
                     // written without blanks and their numbers in hex ("cpu/ event = 46 /" is
                     // "cpu/event=0x2e/"); raw events in lower case. Parsing it gives it back.
  EventKind kind = EventKind::kHardware;
  uint32_t type = 0;  // perf_event_attr.type (PERF_TYPE_* or the PMU's sysfs type)
  uint64_t config = 0, config1 = 0, config2 = 0;
  double scale = 1.0;  // from sysfs <alias>.scale; task-clock/cpu-clock: 1e-9 (ns -> seconds)
  std::string unit;    // from sysfs <alias>.unit ("Joules"), "seconds" for the clocks, else ""
  std::string pmu;     // kPmu: the PMU's name ("power", "cpu", "msr")
  // PMUs whose events count per package, not per CPU (their sysfs `cpumask` lists the CPUs to
  // open on, e.g. "0" or "0,28"). Empty: every CPU.
  std::vector<int> cpus;
};

// Where sysfs is mounted; tests use a captured tree.
struct Catalogue {
  std::string sys_root = "/sys";

  // Parses one event name. Accepts perf's names and the underscored spellings of the config
  // file ("cache_misses"); case of generic names does not matter. Errors (Errc::kInvalidArgument)
  // say what is wrong: unknown name (with the closest known names), bad raw hex, unknown PMU,
  // unknown format term, a value too wide for its field.
  [[nodiscard]] Result<EventSpec> parse(std::string_view text) const;
  // Parses a comma-separated list; commas inside `pmu/.../` do not split. The result is a set,
  // as parse_set makes it.
  [[nodiscard]] Result<std::vector<EventSpec>> parse_list(std::string_view text) const;
  // Parses names and keeps one event per perf_event_attr: two spellings of one event (cycles and
  // cpu-cycles, cpu/event=1/ and cpu/event= 0x1/, task-clock and software/config=1/) are one
  // event, counted once under the first spelling's name. Two different events whose metric
  // names would be the same are an error: one series would hide the other.
  [[nodiscard]] Result<std::vector<EventSpec>> parse_set(const std::vector<std::string>& names) const;

  // Every event this host names: generic hardware and software events, hardware cache events,
  // and each alias under /sys/bus/event_source/devices/*/events (as "pmu/alias/").
  [[nodiscard]] std::vector<EventSpec> all() const;
};

// The default set: cycles, instructions, cache-references, cache-misses, branch-instructions,
// branch-misses, task-clock, context-switches, cpu-migrations, page-faults, minor-faults,
// major-faults, and the energy-* aliases of the `power` PMU where it exists.
std::vector<std::string> default_event_names(const Catalogue& catalogue);

// A name usable as a metric name: lower case, [a-z0-9_] only ("L1-dcache-load-misses" ->
// "l1_dcache_load_misses", "power/energy-pkg/" -> "power_energy_pkg").
std::string metric_name(const EventSpec& e);

}  // namespace pm::counters
