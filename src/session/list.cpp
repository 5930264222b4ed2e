// SPDX-License-Identifier: Apache-2.0
// `perf-monitor list`: the registry's sources and the counter events, and whether each works here.
#include <algorithm>

#include <fmt/format.h>

#include "core/file_reader.h"
#include "core/output.h"
#include "session/registry.h"
#include "session/session.h"
#include "sources/counters/counter_group.h"
#include "sources/counters/event_catalogue.h"

namespace pm {
namespace {

// Every counter event this host names, and whether it opens (system-wide, on its first CPU).
void list_events(const Config& config, std::string& out) {
  counters::Catalogue catalogue;
  out += fmt::format("\n{:<40} {:<14} {}\n", "EVENT (family pmc; -e/--events, [pmc] events)", "STATUS", "WHY NOT");
  if (!config.pmc_enabled) {
    out += fmt::format("{:<40} {:<14} {}\n", "(all)", "disabled", "[pmc] enabled = false in the configuration");
    return;
  }
  std::vector<std::string> defaults = counters::default_event_names(catalogue);
  int cpu = online_cpus().front();
  for (const counters::EventSpec& e : catalogue.all()) {
    counters::Scope scope{-1, e.cpus.empty() ? cpu : e.cpus.front(), false, false};
    auto fd = counters::open_event(e, scope, -1);
    bool is_default = std::find(defaults.begin(), defaults.end(), e.name) != defaults.end();
    std::string name = e.name + (is_default ? " *" : "") + (e.unit.empty() ? "" : " [" + e.unit + "]");
    out += fmt::format("{:<40} {:<14} {}\n", name, fd ? "available" : "unavailable", fd ? "" : fd.error().message);
  }
  out += "(* counted by default; raw events as rNNNN or pmu/event=0x..,umask=0x../ are accepted too)\n";
}

}  // namespace

int list_sources(const Config& config, std::span<const counters::EventSpec> events) {
  auto target = Target::create({});
  std::string out = fmt::format("{:<14} {:<14} {}\n", "SOURCE", "STATUS", "WHAT / WHY NOT");
  SourceContext ctx(config, **target, events);  // one, as in a session: the counters tell energy what it needs
  ctx.listing = true;
  for (const SourceEntry& e : source_registry()) {
    if (!e.enabled(config)) {
      out += fmt::format("{:<14} {:<14} {}\n", e.name, "disabled", "off in the configuration");
      continue;
    }
    Result<std::string> how = std::string(e.what);
    const char* status = "available";
    if (e.check != nullptr) {
      how = e.check(ctx);
      if (how) how = std::string(e.what) + "; here: " + *how;
    } else if (auto src = e.make(ctx); !src) {
      how = src.error();
    } else if (!*src) {
      status = "not needed";
    }
    out += fmt::format("{:<14} {:<14} {}\n", e.name, how ? status : "unavailable", how ? *how : how.error().message);
  }
  list_events(config, out);
  auto stdout_ = Output::open("");
  if (!stdout_->write(out)) {
    say(stdout_->error());
    return kExitFailure;
  }
  return 0;
}

}  // namespace pm
