// SPDX-License-Identifier: Apache-2.0
#include "session/session.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "core/aggregator.h"
#include "core/event_loop.h"
#include "core/output.h"
#include "session/registry.h"
#include "sinks/prometheus.h"
#include "sinks/otlp.h"
#include "sinks/remote_write.h"
#include "sinks/sink.h"
#include "sinks/stack_files.h"
#include "sources/tree/tree_source.h"

namespace pm {
namespace {

// How long a command gets after --duration's SIGTERM before its tree is killed.
constexpr Duration kKillAfter = std::chrono::seconds(5);

class Session {
 public:
  Session(const Config& config, const TargetSpec& spec, std::span<const counters::EventSpec> events)
      : cfg_(config), spec_(spec), events_(events) {}

  int run() {
    auto loop = EventLoop::create();
    if (!loop) return fail(loop.error().message);
    loop_ = std::move(*loop);
    if (int rc = open_output(); rc != 0) return rc;
    auto target = Target::create(spec_);
    if (!target) {
      say(target.error().message);
      return target.error().code == Errc::kNotFound || target.error().code == Errc::kInvalidArgument ? kExitUsage
                                                                                                      : kExitFailure;
    }
    target_ = std::move(*target);
    if (auto w = watch_signals(); !w) return fail(w.error().message);
    open_sources();
    baseline();
    if (int rc = start_timers(); rc != 0) return rc;
    if (auto started = target_->start(*loop_, [this] { loop_->stop(); }); !started) {
      say(started.error().message);
      return target_->exit_code().value_or(kExitFailure);
    }
    if (!target_->note().empty()) unavailable_.push_back({"cleanup", target_->note(), true});
    sink_->header(run_header());
    sink_->unavailable(unavailable_);  // once the target has started: errors stay one line
    if (int fd = sink_->input_fd(); fd >= 0) {
      // The view's keys, served by this loop like every other fd; 'q' ends as Ctrl-C does.
      auto st = loop_->add_fd(fd, [this] {
        if (!sink_->on_input()) loop_->stop();
      });
      if (!st) return fail(st.error().message);
    }
    if (prom_ != nullptr) {
      // After the command's fork (threads must not exist at fork), before the first tick.
      prom_->session(status());
      if (auto served = prom_->serve(); !served) return fail(served.error().message);
      say(fmt::format("Prometheus metrics at http://{}/metrics", prom_->address().text()));
    }
    if (remote_ != nullptr) {
      remote_->session(status());
      if (auto started = remote_->start(); !started) return fail(started.error().message);
    }
    if (otlp_ != nullptr) {
      if (auto started = otlp_->start(); !started) return fail(started.error().message);
    }
    if (auto r = loop_->run(); !r) return fail(r.error().message);
    return finish();
  }

 private:
  int fail(const std::string& msg) {
    say(msg);
    return kExitFailure;
  }

  int open_output() {
    auto out = Output::open(cfg_.output_path, cfg_.report_on_stderr);
    if (!out) {
      say(out.error().message);
      return kExitUsage;
    }
    out_.emplace(std::move(*out));
    // The stack files, opened now: a path that cannot be written is said before the run.
    for (const auto& [kind, path] : {std::pair{StackKind::kOnCpu, cfg_.stacks.on_cpu_out},
                                     std::pair{StackKind::kOffCpu, cfg_.stacks.off_cpu_out}}) {
      if (path.empty()) continue;
      auto f = OutputFile::open(path);
      if (!f) {
        say(path + ": " + f.error().message);
        return kExitUsage;
      }
      stack_files_.emplace_back(kind, path, std::move(*f));
    }
    if (out_->failed()) {  // standard output (or error) was closed before perf-monitor started
      say(out_->error());
      return kExitFailure;
    }
    std::vector<std::unique_ptr<Sink>> sinks;
    if (cfg_.top.view) {
      sinks.push_back(make_top_view_sink(cfg_));
    } else {
      SinkOptions o;
      // run and attach: with -I, or into a JSON Lines file (a recording, for `report`).
      const bool recording = cfg_.format == OutputFormat::kJson && !cfg_.output_path.empty() && cfg_.output_path != "-";
      o.intervals = !cfg_.report_on_stderr || cfg_.intervals_asked || recording;
      // A command's first second recorded in tenths, so that a short run has a timeline; and
      // the last, partial interval kept (JSON: every second of the command is in a record).
      early_ticks_left_ = spec_.mode == Mode::kRun && recording && !cfg_.intervals_asked &&
                                  cfg_.interval > 2 * kEarlyInterval
                              ? kEarlyTicks
                              : 0;
      keep_last_partial_ = cfg_.format == OutputFormat::kJson && o.intervals;
      o.quiet = cfg_.quiet;
      sinks.push_back(cfg_.format == OutputFormat::kJson ? make_json_sink(*out_, o) : make_text_sink(*out_, o));
    }
    if (cfg_.prometheus_listen) {
      // Bound now, so a busy port is one line and exit 2 before anything starts; served once the
      // sources are up.
      auto prom = PrometheusSink::bind(*cfg_.prometheus_listen);
      if (!prom) {
        say(prom.error().message);
        return prom.error().code == Errc::kInvalidArgument ? kExitUsage : kExitFailure;
      }
      prom_ = prom->get();
      sinks.push_back(std::move(*prom));
    }
    if (!cfg_.remote_write.empty()) {
      auto url = http::parse_url(cfg_.remote_write);
      if (!url) {
        say(url.error().message);
        return kExitUsage;
      }
      RemoteWriteOptions o{*url, remote_write_labels()};
      auto rw = RemoteWriteSink::create(std::move(o));
      remote_ = rw.get();
      sinks.push_back(std::move(rw));
    }
    // OTLP: --otlp, or the OTEL_EXPORTER_OTLP_* variables (a bad one is a usage error).
    auto otlp = otlp_options(cfg_.otlp);
    if (!otlp) {
      say(otlp.error().message);
      return kExitUsage;
    }
    if (*otlp) {
      OtlpOptions o = std::move(**otlp);
      if (spec_.mode == Mode::kRun) {
        std::string line;
        for (const std::string& a : spec_.command) line += (line.empty() ? "" : " ") + a;
        o.resource.emplace_back("process.command_line", line);
      }
      auto sink = OtlpSink::create(std::move(o));
      otlp_ = sink.get();
      sinks.push_back(std::move(sink));
    }
    sink_ = make_fanout_sink(std::move(sinks));
    return 0;
  }

  Status watch_signals() {
    return loop_->watch_signals(session_signals(), [this](const signalfd_siginfo& si) { on_signal(si); });
  }

  // Every enabled source of the registry, in its order (the tree before the sources that
  // follow it in the kernel). One that cannot start says why, once; the rest carry on.
  void open_sources() {
    SourceContext ctx(cfg_, *target_, events_);
    for (const SourceEntry& e : source_registry()) {
      if (!e.enabled(cfg_)) continue;  // disabled: never opened
      auto src = e.make(ctx);
      if (!src) {
        // A probe the user named says why; a source this host lacks is named, once.
        unavailable_.push_back({std::string(e.name), src.error().message, e.name == std::string_view("probe")});
        continue;
      }
      if (!*src) continue;  // not needed here
      Source* s = src->get();
      for (const RatioRule& r : s->ratios()) {
        agg_.add_ratio(r);
        known_metrics_.push_back(r.out);
      }
      if (s->wake_fd() >= 0) {
        // Event-driven work is bounded per wake-up by the source; the loop serves the rest.
        if (auto st = loop_->add_fd(s->wake_fd(), [s] { s->on_wake(); }); !st) {
          unavailable_.push_back({std::string(e.name), st.error().message});
          continue;
        }
      }
      s->on_span([this](const Span& sp) {
        for (Source* o : span_observers_) o->see_span(sp);
        sink_->span(sp);
      });
      if (s->sees_spans()) span_observers_.push_back(s);
      by_rhythm_[static_cast<size_t>(e.rhythm)].push_back(s);
      running_.emplace_back(e.name);
      sources_.push_back(std::move(*src));
    }
    for (Unavailable& u : ctx.notes) unavailable_.push_back(std::move(u));
  }

  std::vector<Source*>& group(Rhythm r) { return by_rhythm_[static_cast<size_t>(r)]; }

  // Counters start here; then every source is read at its rhythm. Slowly changing gauges are
  // read once now and not again for a while.
  //
  // An interval ends when its sources that count against the clock (/proc/stat, the top lists)
  // are read: the time is taken just before them, and the tree (read at a close too) is read
  // before that time. Taken after every reading, a slow tree or top pass (a loaded machine, a
  // start with many processes) moved CPU 0's time a quarter second off its interval.
  void baseline() {
    Samples fast, tree, slow;
    for (Source* s : group(Rhythm::kTree)) s->collect(tree);
    auto now = MonoClock::now();
    for (Source* s : group(Rhythm::kInterval)) s->collect(fast);
    fast.insert(fast.end(), std::make_move_iterator(tree.begin()), std::make_move_iterator(tree.end()));
    for (Source* s : group(Rhythm::kCounters)) s->collect(fast);
    for (Source* s : group(Rhythm::kFilePoll)) s->collect(slow);
    for (const Samples* samples : {&fast, &slow}) {
      for (const Sample& x : *samples) known_metrics_.push_back(x.desc);
    }
    last_close_ = now;
    agg_.observe_baseline(fast, now);
    agg_.observe(slow, now);
  }

  // The interval's ticks; in a recorded run, first kEarlyTicks ticks of kEarlyInterval, each a
  // reading of everything, then the interval's (from the end of the first second on).
  bool start_ticks() {
    if (early_ticks_left_ == 0) return start_interval_ticks();
    auto t = loop_->add_timer(kEarlyInterval, [this] {
      read(Rhythm::kTree);
      read(Rhythm::kCounters);
      read(Rhythm::kFilePoll);
      close_interval();
      if (--early_ticks_left_ > 0) return;
      loop_->remove(early_timer_);
      if (!start_interval_ticks()) loop_->stop();
    });
    if (!t) say(t.error().message);
    if (t) early_timer_ = *t;
    return t.ok();
  }

  bool start_interval_ticks() {
    auto add = [&](Duration d, EventLoop::Callback cb) -> bool {
      auto t = loop_->add_timer(d, std::move(cb));
      if (!t) say(t.error().message);
      return t.ok();
    };
    bool ok = add(cfg_.interval, [this] { tick(); });
    // A file poll every interval, or every few, is read in the tick it falls in: on a timer of
    // its own, started with the tick's, it fired just after it and each record showed the
    // previous poll.
    if (cfg_.interval > Duration::zero() && cfg_.file_poll.interval % cfg_.interval == Duration::zero()) {
      poll_every_ticks_ = cfg_.file_poll.interval / cfg_.interval;
    } else if (!group(Rhythm::kFilePoll).empty()) {
      ok = ok && add(cfg_.file_poll.interval, [this] { read(Rhythm::kFilePoll); });
    }
    return ok;
  }

  int start_timers() {
    auto add = [&](Duration d, EventLoop::Callback cb) -> bool {
      auto t = loop_->add_timer(d, std::move(cb));
      if (!t) say(t.error().message);
      return t.ok();
    };
    bool ok = start_ticks();
    Duration tree = cfg_.process_tree.interval.value_or(
        spec_.mode == Mode::kRun ? Duration(std::chrono::milliseconds(100)) : cfg_.interval);
    Duration counters = cfg_.pmc.interval.value_or(cfg_.interval);
    tree_in_step_ = tree == cfg_.interval;
    counters_in_step_ = counters == cfg_.interval;
    if (!group(Rhythm::kTree).empty() && !tree_in_step_) ok = ok && add(tree, [this] { read(Rhythm::kTree); });
    if (!group(Rhythm::kCounters).empty() && !counters_in_step_) {
      ok = ok && add(counters, [this] { read(Rhythm::kCounters); });
    }
    if (cfg_.duration) {
      ok = ok && add(*cfg_.duration, [this, fired = false]() mutable {
        if (fired) return;
        fired = true;
        target_->on_duration(*loop_, kKillAfter);
      });
    }
    return ok ? 0 : kExitFailure;
  }

  void read(Rhythm r) {
    samples_.clear();
    for (Source* s : group(r)) s->collect(samples_);
    samples_seen_ += samples_.size();
    agg_.observe(samples_, MonoClock::now());
  }

  void tick() {
    // The tree is read at every tick as well as on its own rhythm, so that an interval holds
    // the tree's figures up to its end, not up to a reading a tree period before it (which
    // moved that much into the next interval, and into a short last one all at once). The
    // counters are read on their own rhythm; when that is the interval, here in step.
    read(Rhythm::kTree);
    auto end = MonoClock::now();  // see baseline()
    read(Rhythm::kInterval);
    if (counters_in_step_) read(Rhythm::kCounters);
    if (poll_every_ticks_ > 0 && ++ticks_since_poll_ >= poll_every_ticks_) {
      ticks_since_poll_ = 0;
      read(Rhythm::kFilePoll);
    }
    close_interval(end);
  }

  void close_interval(std::optional<MonoClock::time_point> end = std::nullopt) {
    if (prom_ != nullptr) prom_->session(status());
    if (remote_ != nullptr) remote_->session(status());
    IntervalRecord rec = agg_.close_interval(end.value_or(MonoClock::now()));
    last_close_ = MonoClock::now();
    for (auto& src : sources_) src->annotate(rec);
    sink_->interval(rec);
    agg_.reuse(std::move(rec));
    check_output();
  }

  // A report that cannot be written ends monitoring: at once, or in `run` once the command has
  // ended (perf-monitor still reaps it and passes its status on, but reports nothing more).
  void check_output() {
    if (!out_->failed() || output_lost_) return;
    output_lost_ = true;
    say(out_->error() + ": monitoring " + (target_->running() && spec_.mode == Mode::kRun
                                               ? "stops reporting; waiting for the command to end"
                                               : "ends"));
    if (!(target_->running() && spec_.mode == Mode::kRun)) loop_->stop();
  }

  void on_signal(const signalfd_siginfo& si) {
    int sig = static_cast<int>(si.ssi_signo);
    switch (sig) {
      case SIGCHLD:
        target_->reap();
        return;
      case SIGWINCH:  // the terminal's own: the kernel tells its foreground processes, the command too
        sink_->on_resize();
        return;
      case SIGINT:
      case SIGTERM:
      case SIGHUP:
      case SIGQUIT: {
        // Sent to perf-monitor alone (kill), not by the terminal to its whole foreground group.
        bool from_user = si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE;
        // What perf-monitor was started ignoring, it ignores as the kernel would have: nohup's
        // SIGHUP, and the terminal's Ctrl-C to a script's background job. A signal sent to it
        // alone (kill -INT) still ends monitoring.
        if (ignored_when_started(sig) && (sig == SIGHUP || !from_user)) return;
        if (target_->on_terminate(sig, from_user)) loop_->stop();
        return;
      }
      default:
        target_->on_other_signal(sig);
    }
  }

  // What a report needs to say what was watched, where and how (the JSON Lines' first record).
  RunHeader run_header() const {
    RunHeader h;
    h.mode = mode_name(spec_.mode);
    h.command = spec_.command;
    h.pid = spec_.mode == Mode::kAttach ? spec_.pid : target_->roots().empty() ? 0 : target_->roots().front();
    h.host = read_host_info();
    h.interval_s = std::chrono::duration<double>(cfg_.interval).count();
    h.start = WallClock::now();
    h.unavailable = unavailable_;
    h.metrics = known_metrics_;
    return h;
  }

  SessionStatus status() const {
    SessionStatus st;
    st.mode = mode_name(spec_.mode);
    st.running = running_;
    st.unavailable = unavailable_;
    st.missed_ticks = loop_->missed_ticks();
    st.samples = samples_seen_;
    if (remote_ != nullptr) st.exports.push_back(remote_->counts());
    if (otlp_ != nullptr) {
      for (auto& e : otlp_->counts()) st.exports.push_back(std::move(e));
    }
    for (Source* s : by_rhythm_[static_cast<size_t>(Rhythm::kTree)]) {
      if (auto* tree = dynamic_cast<TreeSource*>(s)) {
        if (auto n = tree->notifications()) {
          st.proc_events = n->read;
          st.proc_event_overruns = n->lost;
        }
      }
    }
    return st;
  }

  int finish() {
    // Sources stop producing and hand on what they hold; the tree settles (a task that exited
    // is accounted a moment after it was reaped); then a last reading of everything.
    for (auto& s : sources_) s->finish();
    target_->finish();
    samples_.clear();
    for (Source* s : group(Rhythm::kTree)) s->collect(samples_);
    auto now = MonoClock::now();  // see baseline()
    const std::vector<Source*>& tree = group(Rhythm::kTree);
    for (auto& s : sources_) {
      if (std::find(tree.begin(), tree.end(), s.get()) == tree.end()) s->collect(samples_);
    }
    agg_.observe(samples_, now);
    // The time since the last tick, as an interval of its own (a JSON recording's last record).
    if (keep_last_partial_ && !output_lost_ && now - last_close_ >= std::chrono::milliseconds(1)) close_interval(now);
    EndReport report;
    for (auto& s : sources_) s->report(report);
    for (Unavailable& u : report.unavailable) unavailable_.push_back(std::move(u));
    RunInfo info;
    target_->describe(info);
    info.missed_ticks = loop_->missed_ticks();
    info.proc_event_overruns = report.notifications_lost;
    info.slowest_requests = std::move(report.slowest_requests);
    info.stacks = report.stacks;
    sink_->summary(agg_.summary(now), info, unavailable_);
    bool stacks_lost = false;
    for (auto& [kind, path, file] : stack_files_) {
      auto put = report.stacks ? write_stack_file(*report.stacks, kind, path, file)
                               : Status(make_error(Errc::kUnavailable, path + ": no stacks were recorded"));
      if (!put) {
        say(put.error().message);
        stacks_lost = true;
      }
    }
    if (out_->failed()) {
      if (!output_lost_) say(out_->error() + ": the summary is lost");
      return kExitFailure;
    }
    // Only a whole report replaces the file at --output (on a failure above, it stays as it was).
    if (auto put = out_->commit(); !put) return fail(put.error().message);
    if (stacks_lost) return kExitFailure;
    if (spec_.mode == Mode::kRun) return target_->exit_code().value_or(kExitFailure);
    return 0;
  }

  const Config& cfg_;
  const TargetSpec& spec_;
  std::span<const counters::EventSpec> events_;  // the Invocation's, which outlives the session
  std::unique_ptr<EventLoop> loop_;
  std::optional<Output> out_;
  std::unique_ptr<Sink> sink_;
  std::vector<std::tuple<StackKind, std::string, OutputFile>> stack_files_;  // --stacks-out, --off-stacks-out
  std::vector<Source*> span_observers_;  // sources_' that see every span (Source::sees_spans)
  PrometheusSink* prom_ = nullptr;  // one of sink_'s, when --prometheus is given
  RemoteWriteSink* remote_ = nullptr;  // one of sink_'s, when --remote-write is given
  OtlpSink* otlp_ = nullptr;           // one of sink_'s, when --otlp (or OTEL_EXPORTER_OTLP_*) is given

  // The labels every pushed series carries: the user's, then job, instance and (run) run where
  // not given. A run's label tells one run of a command from the next: its name, when it
  // started, and perf-monitor's pid.
  std::vector<std::pair<std::string, std::string>> remote_write_labels() const {
    auto labels = cfg_.remote_write_labels;
    auto has = [&](std::string_view k) {
      return std::any_of(labels.begin(), labels.end(), [&](const auto& l) { return l.first == k; });
    };
    if (!has("job")) labels.emplace_back("job", "perf-monitor");
    if (!has("instance")) {
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      labels.emplace_back("instance", host);
    }
    if (spec_.mode == Mode::kRun && !has("run") && !spec_.command.empty()) {
      std::string cmd = spec_.command[0].substr(spec_.command[0].rfind('/') + 1);
      auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      char when[32] = {};
      std::tm tm{};
      ::gmtime_r(&now, &tm);
      std::strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
      labels.emplace_back("run", fmt::format("{}-{}-{}", cmd, when, ::getpid()));
    }
    return labels;
  }
  std::unique_ptr<Target> target_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::array<std::vector<Source*>, 4> by_rhythm_;
  Aggregator agg_;
  std::vector<Unavailable> unavailable_;
  std::vector<const MetricDesc*> known_metrics_;  // ratios and the first reading's (RunHeader::metrics)
  std::vector<std::string> running_;  // sources that started (perf_monitor_source_up)
  uint64_t samples_seen_ = 0;         // samples read (perf_monitor_self_samples_total)
  Samples samples_;
  bool tree_in_step_ = false, counters_in_step_ = false;
  int64_t poll_every_ticks_ = 0, ticks_since_poll_ = 0;  // file polls in step with the interval
  static constexpr Duration kEarlyInterval = std::chrono::milliseconds(100);
  static constexpr int kEarlyTicks = 10;
  int early_ticks_left_ = 0;  // the first second's ticks still to come (a recorded run)
  int early_timer_ = -1;
  bool keep_last_partial_ = false;
  MonoClock::time_point last_close_ = MonoClock::now();  // the last interval's end (at start: the baseline)
  bool output_lost_ = false;
};

}  // namespace

int run_session(const Config& config, const TargetSpec& target, std::span<const counters::EventSpec> events) {
  return Session(config, target, events).run();
}

}  // namespace pm
