// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition format (version 0.0.4) of an interval record. Generic over
// MetricDesc: a new source's metrics appear here without a change.
#include <cmath>
#include <iterator>
#include <tuple>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "core/outside_text.h"
#include "core/version.h"
#include "sinks/prometheus.h"

namespace pm {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The unit as a word of the name: "_seconds" at the end or followed by another word.
bool has_unit(std::string_view name, std::string_view suffix) {
  if (ends_with(name, suffix)) return true;
  return name.find(std::string(suffix) + "_") != std::string_view::npos;
}

// Metric and label names may only hold [a-zA-Z0-9_] (and ':' for recording rules).
}  // namespace

void append_name(std::string& out, std::string_view s) {
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
}

namespace {

std::string_view unit_suffix(Unit u) {
  switch (u) {
    case Unit::kBytes:
      return "_bytes";
    case Unit::kSeconds:
      return "_seconds";
    case Unit::kJoules:
      return "_joules";
    case Unit::kCelsius:
      return "_celsius";
    case Unit::kNone:
    case Unit::kPercent:
      break;
  }
  return {};
}

// Go's ParseFloat reads what fmt writes for finite numbers (shortest form that round-trips, so
// an integral count is written as an integer and no precision is lost).
void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

// Label values come from outside (a process's own name, a cgroup directory any user may make):
// one bad byte would make the whole exposition unparseable, so each is valid UTF-8 with no
// control character (U+FFFD for either, as clean_utf8 in core/outside_text.h), then escaped as
// the format asks. (Our own HELP text may break a line: written as \n there.)
void append_escaped(std::string& out, std::string_view s, bool quote) {
  for_each_code_point(s, [&](char32_t cp, std::string_view bytes) {
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '"' && quote) {
      out += "\\\"";
    } else if (cp == '\n' && !quote) {
      out += "\\n";
    } else if (cp == kNotACodePoint || is_control(cp)) {
      out += "\xEF\xBF\xBD";
    } else {
      out += bytes;
    }
  });
}

// {k="v",...,extra_key="extra_value"}; nothing when there are no labels.
void append_labels(std::string& out, const Labels& labels, std::string_view extra_key = {},
                   std::string_view extra_value = {}) {
  if (labels.empty() && extra_key.empty()) return;
  out += '{';
  bool first = true;
  auto one = [&](std::string_view k, std::string_view v) {
    if (!first) out += ',';
    first = false;
    append_name(out, k);
    out += "=\"";
    append_escaped(out, v, true);
    out += '"';
  };
  for (const auto& [k, v] : labels) one(k, v);
  if (!extra_key.empty()) one(extra_key, extra_value);
  out += '}';
}

void append_header_text(std::string& out, std::string_view name, std::string_view help, std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  append_escaped(out, help, false);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void append_sample_text(std::string& out, std::string_view name, std::string_view suffix, const Labels& labels,
                        double value, std::string_view extra_key, std::string_view extra_value) {
  out += name;
  out += suffix;
  append_labels(out, labels, extra_key, extra_value);
  out += ' ';
  append_number(out, value);
  out += '\n';
}

// The exposition as text.
class TextWriter final : public ExpositionWriter {
 public:
  explicit TextWriter(std::string& out) : out_(out) {}
  void header(std::string_view name, std::string_view help, std::string_view type) override {
    append_header_text(out_, name, help, type);
  }
  void sample(std::string_view name, std::string_view suffix, const Labels& labels, double value,
              std::string_view extra_key, std::string_view extra_value) override {
    append_sample_text(out_, name, suffix, labels, value, extra_key, extra_value);
  }

 private:
  std::string& out_;
};

void append_header(ExpositionWriter& w, std::string_view name, std::string_view help, std::string_view type) {
  w.header(name, help, type);
}
void append_sample(ExpositionWriter& w, std::string_view name, std::string_view suffix, const Labels& labels,
                   double value, std::string_view extra_key = {}, std::string_view extra_value = {}) {
  w.sample(name, suffix, labels, value, extra_key, extra_value);
}

// A log2 histogram as a Prometheus histogram. Bucket i counts values below bucket_base * 2^i;
// the last bucket also takes everything beyond (the kernel side clamps), so it has no finite
// bound of its own: the `le` series stop one bucket short and +Inf holds the whole count. A
// value exactly on a bound counts in the next bucket (the bounds are exclusive), which for
// latencies in nanoseconds is immaterial.
void append_histogram(ExpositionWriter& out, std::string_view name, const IntervalValue& v) {
  double base = v.desc->bucket_base > 0 ? v.desc->bucket_base : 1;
  uint64_t cumulative = 0;
  for (size_t i = 0; i + 1 < v.total_buckets.size(); ++i) {
    cumulative += v.total_buckets[i];
    // Twelve significant digits: 1e-06, not the 1.0000000000000002e-06 that 1000 * 1e-9 is in
    // binary; every bound up to 2^31 units keeps its exact decimal form.
    std::string le = fmt::format("{:.12g}", base * std::ldexp(1.0, static_cast<int>(i)));
    append_sample(out, name, "_bucket", *v.labels, static_cast<double>(cumulative), "le", le);
  }
  uint64_t count = bucket_total(v.total_buckets);
  append_sample(out, name, "_bucket", *v.labels, static_cast<double>(count), "le", "+Inf");
  append_sample(out, name, "_sum", *v.labels, v.total);
  append_sample(out, name, "_count", *v.labels, static_cast<double>(count));
}

void append_self(ExpositionWriter& out, const SessionStatus& s, double render_seconds) {
  append_header(out, "perf_monitor_build_info", "perf-monitor's version and mode (system, run, attach or cgroup); always 1",
                "gauge");
  Labels info{{"version", PERF_MONITOR_VERSION}, {"mode", s.mode}};
  append_sample(out, "perf_monitor_build_info", "", info, 1);

  append_header(out, "perf_monitor_source_up",
                "1 for a source that runs, 0 for one that could not start here (perf-monitor list says why)",
                "gauge");
  for (const std::string& name : s.running) append_sample(out, "perf_monitor_source_up", "", {{"source", name}}, 1);
  for (const Unavailable& u : s.unavailable) {
    append_sample(out, "perf_monitor_source_up", "", {{"source", u.source}}, 0);
  }

  append_header(out, "perf_monitor_self_missed_ticks_total",
                "Timer expirations the event loop served late (a tick came while it was busy)", "counter");
  append_sample(out, "perf_monitor_self_missed_ticks_total", "", {}, static_cast<double>(s.missed_ticks));
  append_header(out, "perf_monitor_self_samples_total", "Samples read from the sources (every series, every read)",
                "counter");
  append_sample(out, "perf_monitor_self_samples_total", "", {}, static_cast<double>(s.samples));
  if (s.proc_events) {
    append_header(out, "perf_monitor_self_proc_events_total",
                  "Fork and exit notifications read from the kernel's proc connector", "counter");
    append_sample(out, "perf_monitor_self_proc_events_total", "", {}, static_cast<double>(*s.proc_events));
  }
  if (s.proc_event_overruns) {
    append_header(out, "perf_monitor_self_proc_event_overruns_total",
                  "Times the kernel dropped proc connector notifications (socket buffer full; /proc walks cover "
                  "them)",
                  "counter");
    append_sample(out, "perf_monitor_self_proc_event_overruns_total", "", {},
                  static_cast<double>(*s.proc_event_overruns));
  }
  if (!s.exports.empty()) {
    append_header(out, "perf_monitor_self_export_items_total",
                  "Samples, spans or metric requests pushed (--remote-write, --otlp), by outcome: sent, refused by "
                  "the receiver, dropped (the queue was full)",
                  "counter");
    for (const SessionStatus::Export& e : s.exports) {
      for (auto [outcome, v] : {std::pair{"sent", e.sent}, std::pair{"refused", e.refused}, std::pair{"dropped", e.dropped}}) {
        append_sample(out, "perf_monitor_self_export_items_total", "", Labels{{"exporter", e.exporter}, {"outcome", outcome}},
                      static_cast<double>(v));
      }
    }
    for (auto [name, help, field] :
         {std::tuple{"perf_monitor_self_export_requests_total", "Push requests made, retries included", &SessionStatus::Export::requests},
          std::tuple{"perf_monitor_self_export_retries_total", "Push requests tried again (429, 5xx, no response)", &SessionStatus::Export::retries},
          std::tuple{"perf_monitor_self_export_sent_bytes_total", "Bytes of push requests the receiver took (compressed)", &SessionStatus::Export::bytes}}) {
      append_header(out, name, help, "counter");
      for (const SessionStatus::Export& e : s.exports) {
        append_sample(out, name, "", Labels{{"exporter", e.exporter}}, static_cast<double>(e.*field));
      }
    }
  }
  append_header(out, "perf_monitor_self_render_duration_seconds",
                "Time the event loop took to render the previous exposition", "gauge");
  append_sample(out, "perf_monitor_self_render_duration_seconds", "", {}, render_seconds);
}

// A series of a breakdown's whole (cpu="all", device="all") where the metric also has the parts:
// left out, so sum() over the label counts each thing once, as node_exporter's metrics do. A
// whole without parts (a source that only knows the total) is kept.
bool whole_beside_parts(const IntervalValue& v, const std::vector<const IntervalValue*>& series) {
  for (const auto& [key, value] : *v.labels) {
    // Only the breakdowns that have a whole: a process group named "all" is a group like any other.
    if (value != kAllLabel || !has_whole(key)) continue;
    for (const IntervalValue* other : series) {
      for (const auto& [k, val] : *other->labels) {
        if (k == key && val != kAllLabel) return true;
      }
    }
  }
  return false;
}

}  // namespace

std::string prometheus_name(const MetricDesc& d) {
  std::string n = "perf_monitor_";
  append_name(n, d.family);
  n += '_';
  append_name(n, d.name);
  if (d.unit == Unit::kPercent) {
    if (ends_with(n, "_percent")) n.resize(n.size() - 8);
    n += "_ratio";
  } else if (std::string_view suffix = unit_suffix(d.unit); !suffix.empty() && !has_unit(n, suffix)) {
    n += suffix;  // a name that already says its unit keeps it
  }
  if (d.kind == MetricKind::kCounter && !ends_with(n, "_total")) n += "_total";
  return n;
}

void render_scrape_self(std::string& text, uint64_t scrapes, double last_scrape_seconds) {
  TextWriter out(text);
  append_header(out, "perf_monitor_self_scrapes_total", "Requests for /metrics served, this one included", "counter");
  append_sample(out, "perf_monitor_self_scrapes_total", "", {}, static_cast<double>(scrapes));
  append_header(out, "perf_monitor_self_scrape_duration_seconds",
                "Time the previous /metrics request took, from request to last byte written", "gauge");
  append_sample(out, "perf_monitor_self_scrape_duration_seconds", "", {}, last_scrape_seconds);
}

void render_exposition(std::string& text, const IntervalRecord* rec, const SessionStatus& status,
                       double render_seconds) {
  TextWriter out(text);
  write_exposition(out, rec, status, render_seconds);
}

void write_exposition(ExpositionWriter& out, const IntervalRecord* rec, const SessionStatus& status,
                      double render_seconds) {
  if (rec != nullptr) {
    // The exposition format wants every series of a metric together under one HELP/TYPE;
    // the record lists series in the order they were first observed. Group by name, keeping
    // the first appearance's order.
    std::vector<std::pair<std::string, std::vector<const IntervalValue*>>> groups;
    std::unordered_map<std::string, size_t> index;
    for (const IntervalValue& v : rec->values) {
      if (v.derived) continue;  // ratios: PromQL derives them from the counters
      std::string name = prometheus_name(*v.desc);
      auto [it, inserted] = index.try_emplace(name, groups.size());
      if (inserted) groups.emplace_back(std::move(name), std::vector<const IntervalValue*>{});
      groups[it->second].second.push_back(&v);
    }
    for (const auto& [name, values] : groups) {
      const MetricDesc& d = *values.front()->desc;
      std::string help = d.help.empty() ? fmt::format("perf-monitor {} {}", d.family, d.name) : std::string(d.help);
      if (d.unit == Unit::kPercent) help += " (as a ratio, 0..1)";
      const char* type = d.kind == MetricKind::kCounter ? "counter" : d.kind == MetricKind::kGauge ? "gauge" : "histogram";
      append_header(out, name, help, type);
      for (const IntervalValue* v : values) {
        if (v->desc->kind != d.kind) continue;  // two metrics that map to one name: the first wins
        if (whole_beside_parts(*v, values)) continue;
        switch (d.kind) {
          case MetricKind::kCounter:
            append_sample(out, name, "", *v->labels, v->total);
            break;
          case MetricKind::kGauge:
            // Percent to ratio: a change of unit for the reader, like bytes shown as MiB.
            append_sample(out, name, "", *v->labels, d.unit == Unit::kPercent ? v->value / 100 : v->value);
            break;
          case MetricKind::kHistogram:
            append_histogram(out, name, *v);
            break;
        }
      }
    }
  }
  append_self(out, status, render_seconds);
}

}  // namespace pm
