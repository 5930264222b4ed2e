// SPDX-License-Identifier: Apache-2.0
#include "core/config.h"

#include <fstream>
#include <set>
#include <sstream>

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

  Status check_keys(std::initializer_list<std::string_view> known) const {
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

  Status get(std::string_view key, bool& out) const { return get_as<bool>(key, "true or false", out); }
  Status get(std::string_view key, std::string& out) const { return get_as<std::string>(key, "a string", out); }
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
    out.clear();
    for (const toml::node& e : *arr) {
      auto s = e.value<std::string>();
      if (!s) return type_error(key, e, "an array of strings");
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

Status apply_section(std::string_view origin, const std::string& name, const toml::table& t, Config& c) {
  Section s(origin, name, t);
  if (name == "output") {
    PM_TRY(s.check_keys({"format", "file", "interval_secs", "interval", "duration"}));
    std::string format = "unset";
    PM_TRY(s.get("format", format));
    if (format != "unset") {
      if (format == "text")
        c.format = OutputFormat::kText;
      else if (format == "json")
        c.format = OutputFormat::kJson;
      else
        return make_error(Errc::kInvalidArgument,
                          where(origin, t.get("format")->source()) + ": [output] format must be \"text\" or \"json\"");
    }
    PM_TRY(s.get("file", c.output_path));
    PM_TRY(s.get_seconds("interval_secs", c.interval));
    std::optional<Duration> interval;
    PM_TRY(s.get_duration("interval", interval));
    if (interval) c.interval = *interval;
    PM_TRY(s.get_duration("duration", c.duration));
  } else if (name == "pmc") {
    PM_TRY(s.check_keys({"enabled", "interval_secs", "events"}));
    PM_TRY(s.get("enabled", c.pmc_enabled));
    Duration pmc{0};
    PM_TRY(s.get_seconds("interval_secs", pmc));
    if (pmc.count() > 0) c.pmc_interval = pmc;
    PM_TRY(s.get("events", c.pmc_events));
  } else if (name == "scheduler") {
    PM_TRY(s.check_keys({"enabled", "histogram_unit"}));
    PM_TRY(s.get("enabled", c.scheduler_enabled));
    PM_TRY(s.get_unit("histogram_unit", c.scheduler_hist_unit_ns));
  } else if (name == "block_io") {
    PM_TRY(s.check_keys({"enabled", "histogram_unit"}));
    PM_TRY(s.get("enabled", c.block_io_enabled));
    PM_TRY(s.get_unit("histogram_unit", c.block_io_hist_unit_ns));
  } else if (name == "file_poll") {
    PM_TRY(s.check_keys({"interval_secs", "cpu", "memory", "pressure", "numa", "thermal"}));
    PM_TRY(s.get_seconds("interval_secs", c.file_poll));
    PM_TRY(s.get("cpu", c.cpu));
    PM_TRY(s.get("memory", c.memory));
    PM_TRY(s.get("pressure", c.pressure));
    PM_TRY(s.get("numa", c.numa));
    PM_TRY(s.get("thermal", c.thermal));
  } else if (name == "process_tree") {
    PM_TRY(s.check_keys({"interval", "proc_events"}));
    PM_TRY(s.get_duration("interval", c.tree_interval));
    PM_TRY(s.get("proc_events", c.proc_events));
  } else if (name == "prometheus") {
    PM_TRY(s.check_keys({"listen"}));
    PM_TRY(s.get("listen", c.prometheus_listen));
    // Empty: not served. Anything else must be an address we can listen on.
    if (!c.prometheus_listen.empty()) {
      if (auto a = parse_listen_address(c.prometheus_listen); !a) {
        return make_error(Errc::kInvalidArgument, where(origin, t.get("listen")->source()) +
                                                      ": [prometheus] listen: " + a.error().message);
      }
    }
  } else if (name == "top") {
    PM_TRY(s.check_keys({"count", "sort", "cgroup_depth", "threads", "prometheus_processes", "max_series"}));
    PM_TRY(s.get_int("count", 0, 1000000, c.top_count));
    std::string sort;
    PM_TRY(s.get("sort", sort));
    if (!sort.empty()) {
      auto parsed = parse_top_sort(sort);
      if (!parsed) {
        return make_error(Errc::kInvalidArgument, where(origin, t.get("sort")->source()) +
                                                      ": [top] sort must be cpu, runq, blocked, io, faults or memory");
      }
      c.top_sort = *parsed;
    }
    PM_TRY(s.get_int("cgroup_depth", 0, 64, c.cgroup_depth));
    PM_TRY(s.get("threads", c.top_threads));
    PM_TRY(s.get("prometheus_processes", c.prometheus_processes));
    PM_TRY(s.get_int("max_series", 1, 1000000, c.max_series));
  } else {
    return make_error(Errc::kInvalidArgument,
                      where(origin, t.source()) + ": unknown section [" + name +
                          "] (known: output, pmc, scheduler, block_io, file_poll, process_tree, prometheus, top, "
                          "probes)");
  }
  return {};
}

}  // namespace

Status apply_toml(std::string_view text, std::string_view origin, Config& config) {
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
        PM_TRY(s.check_keys({"binary", "function", "request_id_arg"}));
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

Status load_config_file(const std::string& path, Config& config) {
  std::ifstream in(path);
  if (!in) return Error::from_errno(errno, "cannot read config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_toml(ss.str(), path, config);
}

}  // namespace pm
