// SPDX-License-Identifier: Apache-2.0
// Every source perf-monitor has, in one table: its name (as `list` and the summary's
// `unavailable` call it), what it reports, its section of the configuration, its rhythm, when it
// is on, its factory, and the row it depends on, if any. A session opens the enabled ones in table order; `list` and
// the docs walk the same table. Adding a source is a folder under src/sources/ and a row here (docs/architecture.md).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/source.h"
#include "session/target.h"
#include "sources/counters/event_catalogue.h"

namespace pm {

class SchedObject;

// When a source is read.
enum class Rhythm {
  kInterval,  // at every interval's close
  kFilePoll,  // every [file_poll] interval (slowly changing files)
  kCounters,  // every [pmc] interval (default: the interval)
  kTree,      // every --tree-interval (default 100 ms in run, the interval in attach)
};

// What a factory may use. Kernel objects shared between sources are loaded on first use.
class SourceContext {
 public:
  SourceContext(const Config& c, Target& t, std::span<const counters::EventSpec> e) : config(c), target(t), events(e) {}
  ~SourceContext();

  const Config& config;
  Target& target;
  // The counter events, parsed once from the command line and the file (empty: the default set).
  std::span<const counters::EventSpec> events;
  // Notes beside the sources that failed: counter events that do not count, parts of a source
  // that could not start ("scheduler.tree"), ...
  std::vector<Unavailable> notes;

  // The scheduler's BPF object: system-wide counting when [scheduler] is on, the tree's exact
  // accounting when a tree is followed. Loaded once; the error says why it could not be.
  Result<std::shared_ptr<SchedObject>> sched();
  // The tree's membership map when the kernel follows the tree, else -1.
  [[nodiscard]] int members_fd();
  // The scheduler object's clock at each switch (pm_switch_clock), and the chain of programs its
  // switch program ends in (bpf/switch_chain.bpf.h), where it is loaded as tp_btf (it is not
  // loaded for these), else -1: for the sched_switch programs of other sources.
  [[nodiscard]] int switch_clock_fd();
  [[nodiscard]] int switch_chain_fd();
  // Set by the pmc row's factory: an energy event counts (so the powercap files are not
  // needed). The energy row reads it, and says so: its `after` is "pmc".
  bool counts_energy = false;
  // For `list`: what would open, not what a session needs (no target to follow).
  bool listing = false;

 private:
  std::shared_ptr<SchedObject> sched_;
  std::string sched_error_;
  bool sched_tried_ = false;
};

struct SourceEntry {
  std::string_view name;
  std::string_view what;  // for `list`: families, and where the figures come from
  // Its section of the configuration file (config_sections()), whose keys fill its part of the
  // Config (Config::Scheduler, ...); empty: none.
  std::string_view section;
  Rhythm rhythm;
  bool (*enabled)(const Config&);
  // nullptr without an error: not needed here (the tree in live mode, powercap where the PMU
  // counts energy).
  Result<std::unique_ptr<Source>> (*make)(SourceContext&);
  // For `list`, where make() alone cannot tell (a source that needs a target): whether it would
  // work here, and how. nullptr: `list` tries make().
  Result<std::string> (*check)(SourceContext&) = nullptr;
  // A row whose factory reads what another row's set in the SourceContext names it here; the
  // table keeps it after that row (a test checks).
  std::string_view after;
};

std::span<const SourceEntry> source_registry();

}  // namespace pm
