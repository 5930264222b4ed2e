// SPDX-License-Identifier: Apache-2.0
#include "core/config.h"

#include <span>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "core/duration.h"
#include "core/listen_address.h"

namespace pm {
namespace {

std::string where(std::string_view origin, const toml::source_region& src) {
  return std::string(origin) + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column);
}

// Reads one [section]: checks every key is known, and converts values with clear errors.
class Section {
 public:
  Section(std::string_view origin, std::string name, const toml::table& table)
      : origin_(origin), name_(std::move(name)), table_(table) {}

  Status check_keys(std::span<const std::string_view> known) const {
    for (auto&& [key, node] : table_) {
      bool ok = false;
      for (auto k : known) ok = ok || key.str() == k;
      if (!ok) {
        std::string list;
        for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        return make_error(Errc::kInvalidArgument, where(origin_, key.source()) + ": unknown key '" +
                                                      std::string(key.str()) + "' in [" + name_ +
                                                      "] (known keys: " + list + ")");
      }
    }
    return {};
  }

  [[nodiscard]] bool has(std::string_view key) const { return table_.contains(key); }
  // An error at the key's place: "FILE:LINE:COL: what".
  [[nodiscard]] Error error_at(std::string_view key, const std::string& what) const {
    const toml::node* n = table_.get(key);
    return make_error(Errc::kInvalidArgument,
                      (n != nullptr ? where(origin_, n->source()) : std::string(origin_)) + ": " + what);
  }

  Status get(std::string_view key, bool& out) const { return get_as<bool>(key, "true or false", out); }
  // An empty string is never a setting: leaving the key out is how to say "none".
  Status get(std::string_view key, std::string& out) const {
    std::string v;
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    PM_TRY(get_as<std::string>(key, "a non-empty string", v));
    if (v.empty()) return type_error(key, *n, "a non-empty string (leave the key out for the default)");
    out = std::move(v);
    return {};
  }
  Status get_int(std::string_view key, int64_t lo, int64_t hi, int& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    auto v = n->value_exact<int64_t>();
    std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (!v || *v < lo || *v > hi) return type_error(key, *n, range.c_str());
    out = static_cast<int>(*v);
    return {};
  }

  Status get_seconds(std::string_view key, Duration& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    std::optional<double> v = n->value<double>();
    if (!v) return type_error(key, *n, "a positive number of seconds");
    auto d = checked_duration(*v, std::to_string(*v) + " s");
    if (!d)
      return make_error(Errc::kInvalidArgument, where(origin_, n->source()) + ": [" + name_ + "] " + std::string(key) +
                                                    ": " + d.error().message);
    out = *d;
    return {};
  }

  Status get_duration(std::string_view key, std::optional<Duration>& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    auto s = n->value<std::string>();
    if (!s) return type_error(key, *n, "a duration string such as \"100ms\"");
    auto d = parse_duration(*s);
    if (!d) return make_error(Errc::kInvalidArgument, where(origin_, n->source()) + ": " + d.error().message);
    out = *d;
    return {};
  }

  // "ns", "us" or "ms", as nanoseconds.
  Status get_unit(std::string_view key, uint64_t& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    auto s = n->value<std::string>();
    if (s && *s == "ns") {
      out = 1;
    } else if (s && *s == "us") {
      out = 1000;
    } else if (s && *s == "ms") {
      out = 1'000'000;
    } else {
      return type_error(key, *n, "\"ns\", \"us\" or \"ms\"");
    }
    return {};
  }

  Status get(std::string_view key, std::vector<std::string>& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    const toml::array* arr = n->as_array();
    if (arr == nullptr) return type_error(key, *n, "an array of strings");
    if (arr->empty()) return type_error(key, *n, "a non-empty array (leave the key out for the default)");
    out.clear();
    for (const toml::node& e : *arr) {
      auto s = e.value<std::string>();
      if (!s || s->empty()) return type_error(key, e, "an array of non-empty strings");
      out.push_back(*s);
    }
    return {};
  }

 private:
  template <typename T>
  Status get_as(std::string_view key, const char* what, T& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    auto v = n->value_exact<T>();
    if (!v) return type_error(key, *n, what);
    out = *v;
    return {};
  }
  Status type_error(std::string_view key, const toml::node& n, const char* what) const {
    return make_error(Errc::kInvalidArgument,
                      where(origin_, n.source()) + ": [" + name_ + "] " + std::string(key) + " must be " + what);
  }

  std::string_view origin_;
  std::string name_;
  const toml::table& table_;
};

// The configuration's sections, a row each: its keys, and how they apply to its part of the
// Config. A source's section applies to that source's own struct (Config::Scheduler, ...); its
// row in the registry names the section (src/session/registry.cpp; a test checks each is here).
// The "unknown section" and "unknown key" messages are made from this table.
struct SectionRule {
  std::string_view name;
  std::vector<std::string_view> keys;
  Status (*apply)(const Section& s, Config& c);
};

Status apply_output(const Section& s, Config& c) {
  std::string format = "unset";
  PM_TRY(s.get("format", format));
  if (format != "unset") {
    if (format == "text") {
      c.format = OutputFormat::kText;
    } else if (format == "json") {
      c.format = OutputFormat::kJson;
    } else {
      return s.error_at("format", "[output] format must be \"text\" or \"json\"");
    }
  }
  PM_TRY(s.get("file", c.output_path));
  PM_TRY(s.get_seconds("interval_secs", c.interval));
  std::optional<Duration> interval;
  PM_TRY(s.get_duration("interval", interval));
  if (interval) c.interval = *interval;
  c.intervals_asked = c.intervals_asked || interval || s.has("interval_secs");
  return s.get_duration("duration", c.duration);
}

Status apply_prometheus(const Section& s, Config& c) {
  std::string listen;
  PM_TRY(s.get("listen", listen));
  // Must be an address we can listen on (an empty one is refused above: leave it out).
  if (listen.empty()) return {};
  auto a = parse_listen_address(listen);
  if (!a) return s.error_at("listen", "[prometheus] listen: " + a.error().message);
  c.prometheus_listen = *a;
  return {};
}

Status apply_pmc(const Section& s, Config& c) {
  Config::Pmc& o = c.pmc;
  PM_TRY(s.get("enabled", o.enabled));
  Duration every{0};
  PM_TRY(s.get_seconds("interval_secs", every));
  if (every.count() > 0) o.interval = every;
  return s.get("events", o.events);
}

template <typename Options>
Status apply_bpf(const Section& s, Options& o) {
  PM_TRY(s.get("enabled", o.enabled));
  return s.get_unit("histogram_unit", o.hist_unit_ns);
}

Status apply_file_poll(const Section& s, Config& c) {
  Config::FilePoll& o = c.file_poll;
  PM_TRY(s.get_seconds("interval_secs", o.interval));
  for (auto [key, on] : {std::pair{"cpu", &o.cpu}, std::pair{"memory", &o.memory}, std::pair{"pressure", &o.pressure},
                         std::pair{"numa", &o.numa}, std::pair{"thermal", &o.thermal}}) {
    PM_TRY(s.get(key, *on));
  }
  return {};
}

Status apply_process_tree(const Section& s, Config& c) {
  PM_TRY(s.get_duration("interval", c.process_tree.interval));
  return s.get("proc_events", c.process_tree.proc_events);
}

Status apply_top(const Section& s, Config& c) {
  Config::Top& o = c.top;
  PM_TRY(s.get_int("count", 0, 1000000, o.count));
  std::string sort;
  PM_TRY(s.get("sort", sort));
  if (!sort.empty()) {
    auto parsed = parse_top_sort(sort);
    if (!parsed) return s.error_at("sort", "[top] sort must be " + top_sort_names());
    o.sort = *parsed;
  }
  PM_TRY(s.get_int("cgroup_depth", 0, 64, o.cgroup_depth));
  PM_TRY(s.get("threads", o.threads));
  PM_TRY(s.get("prometheus_processes", o.prometheus_processes));
  return s.get_int("max_series", 1, 1000000, o.max_series);
}

const SectionRule kSections[] = {
    {"output", {"format", "file", "interval_secs", "interval", "duration"}, apply_output},
    {"pmc", {"enabled", "interval_secs", "events"}, apply_pmc},
    {"scheduler", {"enabled", "histogram_unit"}, [](const Section& s, Config& c) { return apply_bpf(s, c.scheduler); }},
    {"block_io", {"enabled", "histogram_unit"}, [](const Section& s, Config& c) { return apply_bpf(s, c.block_io); }},
    {"file_poll", {"interval_secs", "cpu", "memory", "pressure", "numa", "thermal"}, apply_file_poll},
    {"process_tree", {"interval", "proc_events"}, apply_process_tree},
    {"prometheus", {"listen"}, apply_prometheus},
    {"top", {"count", "sort", "cgroup_depth", "threads", "prometheus_processes", "max_series"}, apply_top},
};
// [[probes]]: an array of tables, not a section.
const std::vector<std::string_view> kProbeKeys = {"binary", "function", "request_id_arg"};

Status apply_section(std::string_view origin, const std::string& name, const toml::table& t, Config& c) {
  Section s(origin, name, t);
  for (const SectionRule& rule : kSections) {
    if (rule.name != name) continue;
    PM_TRY(s.check_keys(rule.keys));
    return rule.apply(s, c);
  }
  std::string known;
  for (std::string_view section : config_sections()) known += (known.empty() ? "" : ", ") + std::string(section);
  return make_error(Errc::kInvalidArgument,
                    where(origin, t.source()) + ": unknown section [" + name + "] (known: " + known + ")");
}

}  // namespace

std::vector<std::string_view> config_sections() {
  std::vector<std::string_view> out;
  for (const SectionRule& rule : kSections) out.push_back(rule.name);
  out.push_back("probes");
  return out;
}

Status apply_toml(std::string_view text, std::string_view origin, Config& config) {
  PM_TRY(check_toml_bounds(text, origin));
  toml::table doc;
  try {
    doc = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return make_error(Errc::kInvalidArgument, where(origin, e.source()) + ": " + std::string(e.description()));
  }
  for (auto&& [key, node] : doc) {
    std::string name(key.str());
    if (name == "probes") {
      const toml::array* arr = node.as_array();
      if (arr == nullptr || (!arr->empty() && !arr->is_array_of_tables())) {
        return make_error(Errc::kInvalidArgument,
                          where(origin, node.source()) + ": probes must be written as [[probes]] tables");
      }
      for (const toml::node& p : *arr) {
        Section s(origin, "[probes]", *p.as_table());
        PM_TRY(s.check_keys(kProbeKeys));
        ProbeSpec spec;
        PM_TRY(s.get("binary", spec.binary));
        PM_TRY(s.get("function", spec.function));
        PM_TRY(s.get_int("request_id_arg", 1, 6, spec.arg));
        if (spec.binary.empty() || spec.function.empty()) {
          return make_error(Errc::kInvalidArgument, where(origin, p.source()) +
                                                        ": [[probes]] needs binary and function, e.g. binary = "
                                                        "\"./app\" and function = \"process_request\"");
        }
        config.probes.push_back(std::move(spec));
      }
      continue;
    }
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      return make_error(Errc::kInvalidArgument, where(origin, key.source()) + ": unknown top-level key '" + name +
                                                    "': settings belong in sections such as [output]");
    }
    PM_TRY(apply_section(origin, name, *t, config));
  }
  return {};
}

}  // namespace pm
