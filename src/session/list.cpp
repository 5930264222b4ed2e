// SPDX-License-Identifier: Apache-2.0
// `perf-monitor list`: the registry's sources and the counter events, and whether each works here.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/file_reader.h"
#include "core/output.h"
#include "session/registry.h"
#include "session/session.h"
#include "sources/counters/counter_group.h"
#include "sources/counters/event_catalogue.h"

namespace pm {
namespace {

using Json = nlohmann::ordered_json;

struct Row {
  std::string name, status, detail;  // detail: what it reads, or why it cannot
  bool is_default = false;
  std::string unit;
};

// Every counter event this host names, and whether it opens (system-wide, on its first CPU).
std::vector<Row> list_events(const Config& config) {
  std::vector<Row> rows;
  if (!config.pmc.enabled) {
    rows.push_back({"(all)", "disabled", "[pmc] enabled = false in the configuration"});
    return rows;
  }
  counters::Catalogue catalogue;
  std::vector<std::string> defaults = counters::default_event_names(catalogue);
  int cpu = online_cpus().front();
  for (const counters::EventSpec& e : catalogue.all()) {
    counters::Scope scope{-1, e.cpus.empty() ? cpu : e.cpus.front(), false, false};
    auto fd = counters::open_event(e, scope, -1);
    bool is_default = std::find(defaults.begin(), defaults.end(), e.name) != defaults.end();
    rows.push_back({e.name, fd ? "available" : "unavailable", fd ? "" : fd.error().message, is_default, e.unit});
  }
  return rows;
}

std::vector<Row> list_source_rows(const Config& config, std::span<const counters::EventSpec> events) {
  std::vector<Row> rows;
  auto target = Target::create({});
  SourceContext ctx(config, **target, events);  // one, as in a session: the counters tell energy what it needs
  ctx.listing = true;
  for (const SourceEntry& e : source_registry()) {
    if (!e.enabled(config)) {
      rows.push_back({std::string(e.name), "disabled", "off in the configuration"});
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
    rows.push_back({std::string(e.name), how ? status : "unavailable", how ? *how : how.error().message});
  }
  return rows;
}

// Names after a heading, wrapped at 100 columns with a two-space indent.
std::string wrapped_names(const std::vector<std::string>& names) {
  std::string out, line = " ";
  for (const std::string& n : names) {
    if (line.size() > 1 && line.size() + n.size() + 2 > 100) {
      out += line + "\n";
      line = " ";
    }
    line += " " + n;
  }
  return out + line + "\n";
}

std::string as_text(const std::vector<Row>& sources, const std::vector<Row>& events) {
  std::string out = fmt::format("{:<14} {:<14} {}\n", "SOURCE", "STATUS", "WHAT / WHY NOT");
  for (const Row& r : sources) out += fmt::format("{:<14} {:<14} {}\n", r.name, r.status, r.detail);
  out += fmt::format("\n{:<40} {}\n", "EVENT (family pmc; -e/--events, [pmc] events)", "STATUS");
  // The events that open, one per line; those that do not, under their reason, once.
  std::vector<std::pair<std::string, std::vector<std::string>>> failing;  // reason, names
  for (const Row& r : events) {
    std::string name = r.name + (r.is_default ? " *" : "") + (r.unit.empty() ? "" : " [" + r.unit + "]");
    if (r.status != "unavailable") {
      out += fmt::format("{:<40} {}\n", name, r.status == "disabled" ? "disabled: " + r.detail : r.status);
      continue;
    }
    auto it = std::find_if(failing.begin(), failing.end(), [&](const auto& f) { return f.first == r.detail; });
    if (it == failing.end()) it = failing.insert(failing.end(), {r.detail, {}});
    it->second.push_back(name);
  }
  for (const auto& [reason, names] : failing) {
    out += fmt::format("unavailable ({} event{}): {}\n", names.size(), names.size() == 1 ? "" : "s", reason);
    out += wrapped_names(names);
  }
  out += "(* counted by default; raw events as rNNNN or pmu/event=0x..,umask=0x../ are accepted too)\n";
  return out;
}

std::string as_json(const std::vector<Row>& sources, const std::vector<Row>& events) {
  Json j{{"type", "list"}};
  Json& s = j["sources"] = Json::array();
  for (const Row& r : sources) {
    s.push_back({{"name", r.name}, {"status", r.status}, {r.status == "unavailable" ? "reason" : "what", r.detail}});
  }
  Json& e = j["events"] = Json::array();
  for (const Row& r : events) {
    Json row{{"name", r.name}, {"status", r.status}, {"default", r.is_default}};
    if (!r.unit.empty()) row["unit"] = r.unit;
    if (!r.detail.empty()) row["reason"] = r.detail;
    e.push_back(std::move(row));
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace

int list_sources(const Config& config, std::span<const counters::EventSpec> events) {
  std::vector<Row> sources = list_source_rows(config, events), counted = list_events(config);
  std::string out = config.format == OutputFormat::kJson ? as_json(sources, counted) : as_text(sources, counted);
  auto to = Output::open(config.output_path);
  if (!to) {
    say(to.error().message);
    return to.error().code == Errc::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (!to->write(out)) {
    say(to->error());
    return kExitFailure;
  }
  if (auto put = to->commit(); !put) {
    say(put.error().message);
    return kExitFailure;
  }
  return 0;
}

}  // namespace pm
