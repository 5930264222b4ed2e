// SPDX-License-Identifier: Apache-2.0
// JSON Lines: one object per interval ("type": "interval"), one per finished probed call or
// request ("type": "span"), and a final "type": "summary" object.
// One shape everywhere: a metric is <family>.<name>, its labels nest below in their declared
// order, and the leaf is the figure (the summary's leaves: counter totals, gauge {min, max}). The
// one exception is the run summary's joule-profiler names (proc_*, global_*: MetricDesc::
// summary_key), which stay flat at the top. docs/json-schema.md has the schema.
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/version.h"
#include "sinks/format.h"
#include "sinks/json_schema.h"
#include "sinks/sink.h"

namespace pm {
namespace {

using Json = nlohmann::ordered_json;

Json number(double v) {
  if (std::isfinite(v) && std::fabs(v) < 9e15 && v == std::floor(v)) return static_cast<int64_t>(v);
  if (!std::isfinite(v)) return nullptr;
  return std::round(v * 1e6) / 1e6;
}

// A log2 histogram: bucket i counts values below bucket_base * 2^i (in the metric's unit).
template <typename V>
Json histogram(const V& v) {
  return Json{{"count", bucket_total(v.buckets)},
              {"sum", number(v.value)},
              {"p50", number(v.p50)},
              {"p90", number(v.p90)},
              {"p99", number(v.p99)},
              {"bucket_base", v.desc->bucket_base},
              {"buckets", v.buckets}};
}

// Seconds to the nanosecond: spans are measured in ns.
double ns_exact(double seconds) { return std::round(seconds * 1e9) / 1e9; }

Json span_json(const Span& sp) {
  Json j{{"function", sp.function}, {"pid", sp.pid}, {"tid", sp.tid}};
  if (sp.request_id) j["request_id"] = *sp.request_id;
  if (!sp.trace_id.empty()) {
    j["trace_id"] = sp.trace_id;
    j["parent_span_id"] = sp.parent_span_id;
  }
  j["start"] = iso8601(sp.start, true);
  j["latency_s"] = ns_exact(sp.seconds);
  j["on_cpu_s"] = ns_exact(sp.on_cpu_seconds);
  j["runq_s"] = ns_exact(sp.runq_seconds);
  j["blocked_s"] = ns_exact(sp.blocked_seconds);
  j["voluntary_switches"] = sp.voluntary_switches;
  j["involuntary_switches"] = sp.involuntary_switches;
  j["bio_read_bytes"] = sp.bio_read_bytes;
  j["bio_write_bytes"] = sp.bio_write_bytes;
  j["page_faults"] = sp.page_faults;
  if (sp.polls > 0) {
    j["polls"] = sp.polls;
    j["threads"] = sp.threads;
    j["pending_s"] = ns_exact(sp.pending_seconds);
    j["blocked_io_s"] = ns_exact(sp.blocked_io_seconds);
    j["blocked_sleep_s"] = ns_exact(sp.blocked_sleep_seconds);
    j["blocked_lock_s"] = ns_exact(sp.blocked_lock_seconds);
    j["blocked_other_s"] = ns_exact(sp.blocked_other_seconds);
  } else if (!sp.trace_id.empty()) {
    j["threads"] = sp.threads;
    j["blocked_io_s"] = ns_exact(sp.blocked_io_seconds);
    j["blocked_sleep_s"] = ns_exact(sp.blocked_sleep_seconds);
    j["blocked_lock_s"] = ns_exact(sp.blocked_lock_seconds);
    j["blocked_other_s"] = ns_exact(sp.blocked_other_seconds);
  }
  if (!sp.blocked_stack.empty()) {
    j["blocked_stack"] = {{"frames", sp.blocked_stack}, {"off_cpu_s", ns_exact(sp.blocked_stack_seconds)}};
    if (sp.blocked_stack_lines.size() == sp.blocked_stack.size()) {
      // Each frame's "file:line", or null where DWARF does not say.
      nlohmann::json lines = nlohmann::json::array();
      for (const SourceLine& l : sp.blocked_stack_lines) {
        lines.push_back(l.line != 0 ? nlohmann::json(l.file + ":" + std::to_string(l.line)) : nlohmann::json(nullptr));
      }
      j["blocked_stack"]["lines"] = std::move(lines);
    }
  }
  return j;
}

// family -> name -> label values... -> value
void place(Json& root, const MetricDesc& d, const Labels& labels, Json value) {
  Json* node = &root[std::string(d.family)][std::string(d.name)];
  for (const auto& kv : labels) node = &(*node)[kv.second];
  *node = std::move(value);
}

// A process's, thread's or cgroup's share of the interval; a figure not known is left out.
// --stacks: the totals, and the stacks that weigh most (every one is in --stacks-out's files).
Json stacks_json(const StackProfile& p) {
  constexpr size_t kTop = 100;
  Json j = Json::object();
  auto list = [&](const std::vector<StackProfile::Entry>& entries, bool on) {
    Json a = Json::array();
    for (size_t i = 0; i < entries.size() && i < kTop; i++) {
      const StackProfile::Entry& e = entries[i];
      a.push_back(on ? Json{{"frames", e.frames}, {"samples", e.value}}
                     : Json{{"frames", e.frames}, {"ns", e.value}, {"switches", e.count}});
    }
    return a;
  };
  if (p.on_cpu_wanted) {
    uint64_t n = p.on_cpu_samples();
    j["on_cpu"] = {{"samples", n},
                   {"period_ns", p.period_ns},
                   {"cpu_ns", n * p.period_ns},
                   {"distinct", p.on_cpu.size()},
                   {"stacks", list(p.on_cpu, true)}};
  }
  if (p.off_cpu_wanted) {
    uint64_t us = 0, switches = 0;
    for (const StackProfile::Entry& e : p.off_cpu) {
      us += e.value / 1000;
      switches += e.count;
    }
    j["off_cpu"] = {{"ns", p.off_cpu_ns()},
                    {"us", us},  // the folded file's total (each stack in whole microseconds)
                    {"switches", switches},
                    {"distinct", p.off_cpu.size()},
                    {"stacks", list(p.off_cpu, false)}};
  }
  j["lost"] = {{"records", p.records_lost}, {"off_cpu_ns", p.off_lost_ns}, {"kernel_stacks", p.kernel_stacks_lost}};
  return j;
}

Json top_figures(const TopFigures& f, double seconds) {
  Json j{{"cpu_user_s", number(f.user_s())},
         {"cpu_system_s", number(f.system_s())},
         {"cpu_percent", number(seconds > 0 ? 100 * f.cpu_s() / seconds : 0)},
         {"runq_s", number(f.runq_s())},
         {"page_faults", number(f.faults())},
         {"context_switches", number(f.switches())}};
  if (f.blocked_known) j["blocked_s"] = number(f.blocked_s());
  if (f.io_known) {
    j["io_read_bytes"] = number(f.read_bytes());
    j["io_write_bytes"] = number(f.write_bytes());
  }
  if (f.rss_bytes) j["rss_bytes"] = number(*f.rss_bytes);
  return j;
}

// The top lists: `processes`, `cgroups` (and `threads`), the first `count` busiest by `sort`.
void add_top(Json& top, const TopRecord& t) {
  top["sort"] = to_string(t.sort);
  auto rows = [&](const std::vector<TopProcess>& list) {
    Json a = Json::array();
    for (const TopProcess* row : top_first(list, t.sort, t.count)) {
      const TopProcess& p = *row;
      Json r{{"pid", p.pid}, {"comm", p.comm}};
      if (p.tid != 0) r["tid"] = p.tid;
      if (!p.cgroup.empty()) r["cgroup"] = p.cgroup;
      if (p.exited) r["exited"] = true;
      if (p.kernel) r["kernel_thread"] = true;
      // Names from outside, as comm: dump() replaces invalid UTF-8 and escapes control characters.
      if (p.ppid != 0) r["ppid"] = p.ppid;
      if (p.uid) r["uid"] = *p.uid;
      if (!p.user.empty()) r["user"] = p.user;
      if (p.state != 0) r["state"] = std::string(1, p.state);
      if (p.nice) r["nice"] = *p.nice;
      if (!p.command.empty()) r["command"] = p.command;
      r.update(top_figures(p.f, t.seconds));
      a.push_back(std::move(r));
    }
    return a;
  };
  top["processes"] = rows(t.processes);
  if (!t.threads.empty()) top["threads"] = rows(t.threads);
  Json cg = Json::array();
  for (const TopCgroup* row : top_first(t.cgroups, t.sort, t.count)) {
    const TopCgroup& c = *row;
    Json r{{"cgroup", c.path}, {"with_descendants", c.with_descendants}, {"processes", c.processes}};
    if (c.removed) r["removed"] = true;
    r.update(top_figures(c.f, t.seconds));
    auto opt = [&](const char* key, const std::optional<double>& v) {
      if (v) r[key] = number(*v);
    };
    opt("cpu_stat_s", c.cpu_stat_s);
    opt("cpu_pressure_percent", c.cpu_pressure_pct);
    opt("io_pressure_percent", c.io_pressure_pct);
    opt("memory_pressure_percent", c.memory_pressure_pct);
    opt("runq_p50_s", c.runq_p50_s);
    opt("runq_p99_s", c.runq_p99_s);
    cg.push_back(std::move(r));
  }
  top["cgroups"] = std::move(cg);
  top["processes_active"] = t.processes.size();
  if (!t.note.empty()) top["note"] = t.note;
}

// Spans are written in batches (a busy probe makes hundreds of thousands a second: one write
// each would slow the consumer until the ring buffer drops them); every other record, and the
// batch before it, is written at once. A failed write (a closed pipe, a full disk) is the
// Output's, seen by the session at the next interval or at the end.
constexpr size_t kFlushBytes = 64 * 1024;
constexpr size_t kSpanTailBytes = 900;  // a span line but its function name: under 700

class JsonSink final : public Sink {
 public:
  JsonSink(Output& out, const SinkOptions& opts) : out_(out), intervals_(opts.intervals) {
    buf_.reserve(kFlushBytes + 4096);
  }
  ~JsonSink() override { flush(); }
  JsonSink(const JsonSink&) = delete;
  JsonSink& operator=(const JsonSink&) = delete;

  void header(const RunHeader& h) override {
    Json j{{"type", "header"}, {"schema_version", kJsonSchemaVersion}, {"perf_monitor_version", PERF_MONITOR_VERSION},
           {"mode", h.mode}};
    if (!h.command.empty()) j["command"] = h.command;
    if (h.pid != 0) j["pid"] = h.pid;
    j["host"] = h.host.hostname;
    j["kernel"] = h.host.kernel;
    j["arch"] = h.host.arch;
    if (!h.host.cpu_model.empty()) j["cpu_model"] = h.host.cpu_model;
    j["cpus"] = h.host.cpus;
    j["interval_s"] = number(h.interval_s);
    j["start"] = iso8601(h.start);
    Json unavailable = Json::object();
    for (const Unavailable& u : h.unavailable) unavailable[u.source] = u.reason;
    j["unavailable"] = std::move(unavailable);
    Json metrics = Json::object();
    for (const MetricDesc* d : h.metrics) describe(metrics, *d);
    j["metrics"] = std::move(metrics);
    emit(j);
  }

  void unavailable(const std::vector<Unavailable>& /*list*/) override {}  // in the header and the summary

  void interval(const IntervalRecord& rec) override {
    if (!intervals_) {
      flush();  // the spans so far reach the reader each interval all the same
      return;
    }
    describe_new(rec.values);
    Json j{{"type", "interval"}, {"timestamp", iso8601(rec.timestamp)}, {"interval_s", number(rec.seconds)}};
    for (const IntervalValue& v : rec.values) {
      Json value = v.desc->kind == MetricKind::kHistogram ? histogram(v) : number(v.value);
      place(j, *v.desc, *v.labels, std::move(value));
    }
    if (rec.top) add_top(j["top"], *rec.top);
    emit(j);
  }

  // The same line as span_json() would give, formatted directly: a span costs the consumer
  // a fraction of a microsecond (a JSON object per span, ~15 allocations, cost 3-4 times more,
  // and the probe's ring buffer dropped spans while the consumer lagged).
  void span(const Span& sp) override {
    buf_ += R"({"type":"span","function":)";
    buf_ += escaped(sp.function);
    // The rest is bounded (numbers of at most 24 characters, the keys, a timestamp): written in
    // place at the buffer's end.
    size_t at = buf_.size();
    buf_.resize(at + kSpanTailBytes);
    char* p = buf_.data() + at;
    char* const end = p + kSpanTailBytes;
    auto text = [&](std::string_view s) {
      std::memcpy(p, s.data(), s.size());
      p += s.size();
    };
    auto integer = [&](auto v) { p = std::to_chars(p, end, v).ptr; };
    auto seconds = [&](double v) {
      v = ns_exact(v);
      if (std::isfinite(v)) {
        p = nlohmann::detail::to_chars(p, end, v);  // as nlohmann's dump() writes a double
      } else {
        text("null");
      }
    };
    text(R"(,"pid":)");
    integer(sp.pid);
    text(R"(,"tid":)");
    integer(sp.tid);
    if (sp.request_id) {
      text(R"(,"request_id":)");
      integer(*sp.request_id);
    }
    if (!sp.trace_id.empty() && sp.trace_id.size() <= 32 && sp.parent_span_id.size() <= 16) {  // hex: no escaping
      text(R"(,"trace_id":")");
      text(sp.trace_id);
      text(R"(","parent_span_id":")");
      text(sp.parent_span_id);
      text("\"");
    }
    text(R"(,"start":")");
    start(sp.start, p);
    text(R"(","latency_s":)");
    seconds(sp.seconds);
    text(R"(,"on_cpu_s":)");
    seconds(sp.on_cpu_seconds);
    text(R"(,"runq_s":)");
    seconds(sp.runq_seconds);
    text(R"(,"blocked_s":)");
    seconds(sp.blocked_seconds);
    text(R"(,"voluntary_switches":)");
    integer(sp.voluntary_switches);
    text(R"(,"involuntary_switches":)");
    integer(sp.involuntary_switches);
    text(R"(,"bio_read_bytes":)");
    integer(sp.bio_read_bytes);
    text(R"(,"bio_write_bytes":)");
    integer(sp.bio_write_bytes);
    text(R"(,"page_faults":)");
    integer(sp.page_faults);
    if (sp.polls > 0) {  // a request followed by thread context
      text(R"(,"polls":)");
      integer(sp.polls);
      text(R"(,"threads":)");
      integer(sp.threads);
      text(R"(,"pending_s":)");
      seconds(sp.pending_seconds);
      text(R"(,"blocked_io_s":)");
      seconds(sp.blocked_io_seconds);
      text(R"(,"blocked_sleep_s":)");
      seconds(sp.blocked_sleep_seconds);
      text(R"(,"blocked_lock_s":)");
      seconds(sp.blocked_lock_seconds);
      text(R"(,"blocked_other_s":)");
      seconds(sp.blocked_other_seconds);
    } else if (!sp.trace_id.empty()) {  // a span of OpenTelemetry thread context
      text(R"(,"threads":)");
      integer(sp.threads);
      text(R"(,"blocked_io_s":)");
      seconds(sp.blocked_io_seconds);
      text(R"(,"blocked_sleep_s":)");
      seconds(sp.blocked_sleep_seconds);
      text(R"(,"blocked_lock_s":)");
      seconds(sp.blocked_lock_seconds);
      text(R"(,"blocked_other_s":)");
      seconds(sp.blocked_other_seconds);
    }
    text("}\n");
    buf_.resize(static_cast<size_t>(p - buf_.data()));
    if (buf_.size() >= kFlushBytes) flush();
  }

  void summary(const SummaryRecord& rec, const RunInfo& info, const std::vector<Unavailable>& list) override {
    describe_new(rec.values);
    Json j{{"type", "summary"}, {"mode", info.mode}};
    if (!info.command.empty()) j["command"] = info.command;
    if (info.pid != 0) j["pid"] = info.pid;
    if (info.exit_code) j["exit_code"] = *info.exit_code;
    if (info.signal) j["signal"] = *info.signal;
    j["end_reason"] = info.end_reason;
    j["start"] = iso8601(rec.start);
    j["end"] = iso8601(rec.end);
    j["duration_s"] = number(rec.seconds);
    for (const SummaryValue& v : rec.values) {
      const MetricDesc& d = *v.desc;
      bool gauge = d.kind == MetricKind::kGauge && !v.derived;
      if (!d.summary_key.empty() && v.labels->empty()) {  // the joule-profiler names, flat
        if (gauge) {
          j[std::string(d.summary_key) + "_min"] = number(v.min);
          j[std::string(d.summary_key) + "_max"] = number(v.max);
          if (v.max_lower_bound) j[std::string(d.summary_key) + "_max_lower_bound"] = true;
        } else {
          j[std::string(d.summary_key)] = d.kind == MetricKind::kHistogram ? histogram(v) : number(v.value);
        }
        continue;
      }
      Json value = d.kind == MetricKind::kHistogram ? histogram(v)
                   : gauge                          ? Json{{"min", number(v.min)}, {"max", number(v.max)}}
                                                    : number(v.value);
      if (gauge && v.max_lower_bound) value["max_lower_bound"] = true;
      place(j, d, *v.labels, std::move(value));
    }
    if (!info.slowest_requests.empty()) {
      Json slow = Json::array();
      for (const Span& sp : info.slowest_requests) slow.push_back(span_json(sp));
      j["slowest_requests"] = std::move(slow);
    }
    if (info.stacks) j["stacks"] = stacks_json(*info.stacks);
    Json unavailable = Json::object();
    for (const Unavailable& u : list) unavailable[u.source] = u.reason;
    j["unavailable"] = std::move(unavailable);
    j["self"]["missed_ticks"] = info.missed_ticks;  // beside the "self" family's metrics, if any
    j["self"]["proc_event_overruns"] = info.proc_event_overruns;
    emit(j);
  }

 private:
  // What a metric is, once per file, keyed by where its figures are: "<family>.<name>" (the
  // labels nest below it) and, for the flat summary names, the summary's keys ("proc_rss_bytes_max").
  void describe(Json& into, const MetricDesc& d) {
    if (!described_.insert(&d).second || d.denominator) return;
    Json what{{"unit", unit_name(d.unit)}, {"kind", kind_name(d.kind)}, {"help", d.help}};
    into[fmt_path(d)] = what;
    if (d.summary_key.empty()) return;
    std::string key(d.summary_key);
    if (d.kind == MetricKind::kGauge) {
      into[key + "_min"] = what;
      into[key + "_max"] = what;
    } else {
      into[key] = what;
    }
  }
  // Before a record that holds metrics not described yet: a "metrics" record for them.
  template <typename Values>
  void describe_new(const Values& values) {
    Json metrics = Json::object();
    for (const auto& v : values) {
      if (!described_.contains(v.desc)) describe(metrics, *v.desc);
    }
    if (!metrics.empty()) append(Json{{"type", "metrics"}, {"metrics", std::move(metrics)}});
  }
  static std::string fmt_path(const MetricDesc& d) { return std::string(d.family) + "." + std::string(d.name); }
  static const char* unit_name(Unit u) {
    switch (u) {
      case Unit::kBytes: return "bytes";
      case Unit::kSeconds: return "seconds";
      case Unit::kJoules: return "joules";
      case Unit::kCelsius: return "celsius";
      case Unit::kPercent: return "percent";
      case Unit::kNone: break;
    }
    return "";
  }
  static const char* kind_name(MetricKind k) {
    switch (k) {
      case MetricKind::kCounter: return "counter";
      case MetricKind::kHistogram: return "histogram";
      case MetricKind::kGauge: break;
    }
    return "gauge";
  }

  void emit(const Json& j) {
    append(j);
    flush();
  }
  void append(const Json& j) {
    // Command arguments are bytes, not always UTF-8: replace what JSON cannot carry.
    buf_ += j.dump(-1, ' ', false, Json::error_handler_t::replace);
    buf_ += '\n';
  }
  // A function's name as a JSON string, escaped once per name (there are few).
  const std::string& escaped(const std::string& name) {
    auto it = names_.find(name);
    if (it == names_.end()) {
      it = names_.emplace(name, Json(name).dump(-1, ' ', false, Json::error_handler_t::replace)).first;
    }
    return it->second;
  }
  // iso8601(t, true) at p, its whole seconds formatted once per second.
  void start(WallClock::time_point t, char*& p) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    long long sec = us >= 0 ? us / 1000000 : (us - 999999) / 1000000;
    if (sec != start_sec_ || start_text_.empty()) {
      start_sec_ = sec;
      std::string full = iso8601(WallClock::time_point(std::chrono::seconds(sec)), false);
      start_text_ = full.substr(0, full.size() - 1);  // without its "Z"
    }
    std::memcpy(p, start_text_.data(), start_text_.size());
    p += start_text_.size();
    auto frac = static_cast<unsigned>(us - sec * 1000000);
    *p++ = '.';
    for (int i = 5; i >= 0; --i, frac /= 10) p[i] = static_cast<char>('0' + frac % 10);
    p += 6;
    *p++ = 'Z';
  }
  void flush() {
    if (buf_.empty()) return;
    out_.write(buf_);
    buf_.clear();
  }
  Output& out_;
  bool intervals_;
  std::string buf_;
  std::unordered_map<std::string, std::string> names_;
  std::unordered_set<const MetricDesc*> described_;
  long long start_sec_ = 0;
  std::string start_text_;
};

}  // namespace

std::unique_ptr<Sink> make_json_sink(Output& out, const SinkOptions& opts) {
  return std::make_unique<JsonSink>(out, opts);
}

}  // namespace pm
