// SPDX-License-Identifier: Apache-2.0
#include "sources/probes/probe_source.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "core/text.h"
#include "core/text_layout.h"

#include "probe.h"
#include "scheduler.h"  // the switch chain's slots
#include "probe.skel.h"
#include "sources/kernel/skeleton.h"
#include "sources/probes/contexts.h"
#include "sources/probes/otel.h"
#include "sources/probes/uprobe_multi.h"

namespace pm {
namespace {

using K = MetricKind;
const Labels kNoLabels;

void probe_text(TextBlock& b);

const MetricDesc kCalls =
    shown_by(probe_text, {"probe", "calls", K::kCounter, Unit::kNone, "Finished calls of the probed function"});
const MetricDesc kLatency = shown_by(probe_text, {"probe",
                                                  "latency_seconds",
                                                  K::kHistogram,
                                                  Unit::kSeconds,
                                                  "Latency of the function's calls (log2 ns buckets)",
                                                  {},
                                                  1e-9});
const MetricDesc kMax =
    shown_by(probe_text, {"probe", "latency_max_seconds", K::kGauge, Unit::kSeconds, "Longest call since the start"});
const MetricDesc kKside[PM_KSIDE] = {
    shown_by(probe_text,
             {"probe", "on_cpu_seconds", K::kCounter, Unit::kSeconds, "Time the calls' threads ran on a CPU"}),
    shown_by(probe_text, {"probe", "runq_seconds", K::kCounter, Unit::kSeconds,
                          "Time the calls' threads waited runnable for a CPU"}),
    shown_by(probe_text, {"probe", "blocked_seconds", K::kCounter, Unit::kSeconds,
                          "Time the calls' threads were blocked until woken"}),
    shown_by(probe_text, {"probe", "voluntary_switches", K::kCounter, Unit::kNone,
                          "Switches out while blocking, inside the calls"}),
    shown_by(probe_text,
             {"probe", "involuntary_switches", K::kCounter, Unit::kNone, "Switches out while runnable (preempted)"}),
    shown_by(probe_text,
             {"probe", "bio_read_bytes", K::kCounter, Unit::kBytes, "Bytes of read bios the calls submitted"}),
    shown_by(probe_text,
             {"probe", "bio_write_bytes", K::kCounter, Unit::kBytes, "Bytes of write bios the calls submitted"}),
    shown_by(probe_text,
             {"probe", "page_faults", K::kCounter, Unit::kNone, "Page faults (minor and major) inside the calls"}),
};
const MetricDesc kOpenAtExit = shown_by(probe_text, {"probe", "open_at_exit", K::kCounter, Unit::kNone,
                                                     "Calls whose thread exited inside them (never finished)"});
const MetricDesc kAbandoned =
    shown_by(probe_text, {"probe", "abandoned", K::kCounter, Unit::kNone,
                          "Calls left without a return (longjmp, an exception unwinding them)"});
const MetricDesc kInProgress = shown_by(probe_text, {"probe", "in_progress", K::kGauge, Unit::kNone, "Calls open now"});
const MetricDesc kSpans =
    shown_by(probe_text, {"probe", "spans", K::kCounter, Unit::kNone, "Spans that reached perf-monitor"});
const MetricDesc kDropped =
    shown_by(probe_text, {"probe", "spans_dropped", K::kCounter, Unit::kNone,
                          "Spans lost to a full ring buffer (the function figures still count them)"});
const MetricDesc kTooDeep = shown_by(probe_text, {"probe", "too_deep", K::kCounter, Unit::kNone,
                                                  "Calls nested too deep to time (counted in calls, without latency)"});
const MetricDesc kNoSlot = shown_by(probe_text, {"probe", "untracked_threads", K::kCounter, Unit::kNone,
                                                 "Calls not followed: too many threads inside calls at once"});
const MetricDesc kUnmatched =
    shown_by(probe_text, {"probe", "unmatched", K::kCounter, Unit::kNone,
                          "Returns or request ends without their start (begun before attaching)"});

const MetricDesc kCtxPolls = shown_by(probe_text, {"probe", "context_polls", K::kCounter, Unit::kNone,
                                                    "Polls read from the threads' context records"});
const MetricDesc kCtxRequests = shown_by(probe_text, {"probe", "context_requests", K::kCounter, Unit::kNone,
                                                      "Requests followed by thread context, finished"});
const MetricDesc kCtxThreads = shown_by(probe_text, {"probe", "context_threads", K::kGauge, Unit::kNone,
                                                     "Threads whose context record is read"});
const MetricDesc kCtxLost =
    shown_by(probe_text, {"probe", "context_polls_lost", K::kCounter, Unit::kNone,
                          "Polls a thread's log overwrote before they were read"});
const MetricDesc kCtxDropped = shown_by(probe_text, {"probe", "context_events_dropped", K::kCounter, Unit::kNone,
                                                     "Kernel events of polls lost to a full ring buffer"});
const MetricDesc kCtxUnreadable =
    shown_by(probe_text, {"probe", "context_unreadable", K::kCounter, Unit::kNone,
                          "Context records that could not be read (page absent, not a valid record)"});

const MetricDesc kOtelSpans = shown_by(probe_text, {"probe", "otel_spans", K::kCounter, Unit::kNone,
                                                     "Spans of OpenTelemetry thread context (OTEP 4947), finished"});
const MetricDesc kOtelProcesses =
    shown_by(probe_text, {"probe", "otel_processes", K::kGauge, Unit::kNone,
                          "Processes whose OpenTelemetry thread context is read"});
const MetricDesc kOtelLost =
    shown_by(probe_text, {"probe", "otel_lost", K::kCounter, Unit::kNone,
                          "OpenTelemetry context not followed: spans or processes past perf-monitor's bounds"});

// Interval: probe    shop::process_request: 120 calls/s  latency p50 < 4.2 ms  p99 < 8.4 ms  on CPU 22.7% ...
// Summary:  a table, one row per function; then what was lost, if anything.
void probe_text(TextBlock& b) {
  using text_order::kProbe;
  int at = kProbe;
  std::vector<const Shown*> functions = b.take_all(kCalls);
  if (b.summary() && !functions.empty()) {
    b.line(at++, "probes",
           fmt::format("{:<24} {:>8} {:>9} {:>9} {:>9} {:>9}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}", "function", "calls",
                       "p50", "p90", "p99", "max", "on CPU", "run queue", "blocked", "switches", "written", "faults"));
    b.line(at++, "probes",
           fmt::format("{:<24} {:>8} {:>9} {:>9} {:>9} {:>9}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}", "", "", "", "", "",
                       "", "per call", "per call", "per call", "per call", "per call", "/call"));
  }
  for (const Shown* calls : functions) {
    std::string fn(label_of(*calls, "function"));
    Labels l{{"function", fn}};
    std::string shown = printable(fn);  // the ELF file named it: no escape sequence reaches the terminal
    const Shown* lat = b.take(kLatency, l);
    const Shown* max = b.take(kMax, l);
    const Shown* k[PM_KSIDE];
    for (int i = 0; i < PM_KSIDE; ++i) k[i] = b.take(kKside[i], l);
    const Shown* open_at_exit = b.take(kOpenAtExit, l);
    const Shown* abandoned = b.take(kAbandoned, l);
    const Shown* in_progress = b.take(kInProgress, l);
    auto v = [](const Shown* x) { return x != nullptr ? x->value : std::nan(""); };
    // A quantile is known to its log2 bucket's upper bound, which may lie past the longest call:
    // then the longest call is the better bound.
    auto q = [&](double Shown::*p) {
      if (lat == nullptr) return std::string("-");
      bool past_max = max != nullptr && std::isfinite(max->value) && max->value > 0 && lat->*p > max->value;
      return past_max ? "<= " + human_time(max->value) : below_time(lat->*p);
    };
    if (!b.summary()) {
      // Where the calls' time went, as shares of their latency.
      double share = lat != nullptr && lat->value > 0 ? 100 / lat->value : std::nan("");
      b.line(at++, "probe",
             fmt::format("{}: {:.0f} calls/s  latency p50 {}  p99 {}  on CPU {}  run queue {}  blocked {}", shown,
                         calls->rate, q(&Shown::p50), q(&Shown::p99), percent(share * v(k[PM_ON_CPU_NS])),
                         percent(share * v(k[PM_RUNQ_NS])), percent(share * v(k[PM_BLOCKED_NS]))));
      continue;
    }
    double n = calls->value;
    auto per = [&](int i) { return n > 0 ? v(k[i]) / n : std::nan(""); };
    if (n > 0) {
      b.line(at++, "probes",
             fmt::format("{:<24} {:>8.0f} {:>9} {:>9} {:>9} {:>9}  {:>9} {:>9} {:>9} {:>9.1f} {:>9} {:>7.1f}", shown, n,
                         q(&Shown::p50), q(&Shown::p90), q(&Shown::p99),
                         max != nullptr && n > 0 ? human_time(max->value) : "-", human_time(per(PM_ON_CPU_NS)),
                         human_time(per(PM_RUNQ_NS)), human_time(per(PM_BLOCKED_NS)),
                         per(PM_VOLUNTARY) + per(PM_INVOLUNTARY), human_bytes(per(PM_BIO_WRITE)), per(PM_FAULTS)));
    } else {
      b.line(at++, "probes", fmt::format("{:<24} {:>8}  (0 calls: no figures per call)", shown, 0));
    }
    double open =
        (open_at_exit != nullptr ? open_at_exit->value : 0) + (in_progress != nullptr ? in_progress->value : 0);
    if (open > 0)
      b.line(at++, "probes",
             fmt::format("{:<24} {:.0f} calls never returned (thread exited, or still open)", "", open));
    if (abandoned != nullptr && abandoned->value > 0) {
      b.line(at++, "probes",
             fmt::format("{:<24} {:.0f} calls left without a return (longjmp, exception)", "", abandoned->value));
    }
  }
  const Shown* ctx_requests = b.take(kCtxRequests);
  const Shown* ctx_polls = b.take(kCtxPolls);
  const Shown* ctx_threads = b.take(kCtxThreads);
  if (ctx_polls != nullptr && ctx_polls->value > 0) {
    double threads = ctx_threads != nullptr ? ctx_threads->value : 0;
    b.line(at++, b.summary() ? "probes" : "probe",
           b.summary() ? fmt::format("thread context: {:.0f} requests in {:.0f} polls", ctx_requests ? ctx_requests->value : 0,
                                     ctx_polls->value)
                       : fmt::format("thread context: {:.0f} requests/s  {:.0f} polls/s  {:.0f} threads",
                                     ctx_requests ? ctx_requests->rate : 0, ctx_polls->rate, threads));
  }
  const Shown* otel_spans = b.take(kOtelSpans);
  const Shown* otel_procs = b.take(kOtelProcesses);
  if (otel_spans != nullptr && (otel_spans->value > 0 || (otel_procs != nullptr && otel_procs->value > 0))) {
    double procs = otel_procs != nullptr ? otel_procs->value : 0;
    b.line(at++, b.summary() ? "probes" : "probe",
           b.summary() ? fmt::format("OpenTelemetry thread context: {:.0f} spans", otel_spans->value)
                       : fmt::format("OpenTelemetry thread context: {:.0f} spans/s  {:.0f} processes", otel_spans->rate, procs));
  }
  std::string lost;
  for (auto [desc, what] :
       {std::pair{&kDropped, "spans dropped (ring buffer full)"}, std::pair{&kTooDeep, "calls nested too deep to time"},
        std::pair{&kNoSlot, "calls not followed (too many threads)"},
        std::pair{&kUnmatched, "returns without their call (begun before attaching)"},
        std::pair{&kCtxLost, "polls overwritten in a thread's log before they were read"},
        std::pair{&kCtxDropped, "context events dropped (ring buffer full)"},
        std::pair{&kCtxUnreadable, "context records not readable"},
        std::pair{&kOtelLost, "OpenTelemetry spans or processes past the bounds"}}) {
    const Shown* x = b.take(*desc);
    if (x != nullptr && x->value > 0) lost += fmt::format("{}{:.0f} {}", lost.empty() ? "" : ", ", x->value, what);
  }
  b.take(kSpans);  // spans are written as they come (JSON); their count matters only when some were lost
  if (!lost.empty() && b.summary()) b.line(kProbe + 90, "probes", "note: " + lost);
}

double mono_seconds_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

static_assert(probes::kMaxProbes < PM_REQUEST_FUNC, "a probe's index must stay below the request's");

// The label of each probe: its short name, or the full one where two probes share it, and the
// binary's file name as well where even that is shared (malloc in libc and in another
// allocator): two series of one name would be one to Prometheus.
std::vector<std::string> labels_of(const std::vector<probes::ResolvedProbe>& list) {
  using Namer = std::string (*)(const probes::ResolvedProbe&);
  const Namer tiers[] = {
      [](const probes::ResolvedProbe& p) { return probes::base_name(p.function); },
      [](const probes::ResolvedProbe& p) { return p.function; },
      [](const probes::ResolvedProbe& p) { return p.function + " (" + p.path.substr(p.path.rfind('/') + 1) + ")"; },
      [](const probes::ResolvedProbe& p) { return p.function + " (" + p.path + ")"; },
  };
  std::vector<std::map<std::string, int>> uses(std::size(tiers));
  for (const auto& p : list) {
    for (size_t t = 0; t < std::size(tiers); ++t) ++uses[t][tiers[t](p)];
  }
  std::vector<std::string> out;
  for (const auto& p : list) {
    size_t t = 0;
    while (t + 1 < std::size(tiers) && uses[t][tiers[t](p)] > 1) ++t;
    out.push_back(tiers[t](p));
  }
  return out;
}

}  // namespace

struct ProbeSource::Impl {
  SkeletonPtr<probe_bpf> skel{nullptr, probe_bpf::destroy};
  ChainSlot chained;  // btf_switch, in the scheduler object's switch chain
  std::vector<UniqueFd> multi_links;  // uprobe_multi: per binary, one for entries, one for returns
  // perf-event uprobes (where uprobe_multi is not there) and USDT; each detached when dropped
  std::vector<std::unique_ptr<bpf_link, int (*)(bpf_link*)>> links;
  std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> ring{nullptr, ring_buffer__free};
  std::vector<std::string> names;  // by function index; PM_REQUEST_FUNC is "request"
  std::vector<uint32_t> indexes;   // the function indexes in use
  std::function<void(const Span&)> handler;
  std::vector<Span> slowest;
  uint64_t spans = 0;
  size_t budget = 0;  // spans this drain may still hand over
  WallClock::time_point wall_at_mono_zero;  // turns the kernel's CLOCK_MONOTONIC stamps into wall time
  std::vector<pm_func_stats> per_cpu;
  std::vector<pm_probe_losses> losses;

  // Thread context: the kernel's events of threads in polls (their own ring buffer), the
  // threads' records, and the two joined into requests; read on a timer of its own.
  std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> ctx_ring{nullptr, ring_buffer__free};
  contexts::Reader reader;
  contexts::Join join;
  UniqueFd ctx_timer, wake;  // wake: an epoll set of the two rings and the timer
  // OpenTelemetry thread context: the processes announced whose variable was not found yet (the
  // dynamic linker may not have loaded or relocated its library): looked at again each round,
  // for a second.
  bool otel = false;
  otel::Join otel_join;
  struct Looking {
    int pid;
    int rounds;
  };
  std::vector<Looking> otel_looking;
  std::set<int> otel_ready;
  uint64_t otel_lost = 0;
  std::string otel_why;  // the last reason a process's variable could not be read

  bool stopped = false;

  // Taking a probe down waits for the kernel's grace periods; the multi links are released from
  // threads of their own so that their waits overlap.
  ~Impl() {
    std::vector<std::thread> closers;
    for (UniqueFd& fd : multi_links) {
      try {
        closers.emplace_back([f = std::move(fd)]() mutable { f.reset(); });
      } catch (const std::system_error&) {
        fd.reset();  // no thread: here, then
      }
    }
    links.clear();
    for (std::thread& t : closers) t.join();
  }

  // A record is a batch of spans from one CPU.
  static int on_sample(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    const auto* span = static_cast<const pm_span*>(data);
    for (size_t i = 0; i < size / sizeof(pm_span); ++i) self->take(span[i]);
    // A negative return stops this drain after this record (it is consumed): the bound per wake.
    size_t n = size / sizeof(pm_span);
    self->budget = self->budget > n ? self->budget - n : 0;
    return self->budget == 0 ? -EAGAIN : 0;
  }

  static int on_ctx(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    uint32_t kind = 0;
    if (size >= sizeof kind) std::memcpy(&kind, data, sizeof kind);
    if (kind >= PM_OTEL_PROC) {
      if (size < sizeof(pm_otel_event)) return 0;
      pm_otel_event o;
      std::memcpy(&o, data, sizeof o);
      if (kind == PM_OTEL_PROC) {
        // Asked again while still looked for: the same rounds go on.
        int pid = static_cast<int>(o.pid), rounds = 0;
        auto& l = self->otel_looking;
        auto it = std::find_if(l.begin(), l.end(), [&](const Looking& x) { return x.pid == pid; });
        if (it != l.end()) {
          rounds = it->rounds;
          l.erase(it);
        }
        self->otel_look(pid, rounds);
      } else {
        self->otel_join.event(o);
      }
      return 0;
    }
    if (size < sizeof(pm_ctx_event)) return 0;
    pm_ctx_event e;
    std::memcpy(&e, data, sizeof e);
    if (e.kind == PM_CTX_THREAD) {
      self->join.forget_thread(static_cast<int>(e.tid));
      self->reader.thread(static_cast<int>(e.pid), static_cast<int>(e.tid), e.value);
    } else if (e.kind == PM_CTX_EXIT) {
      self->reader.exited(static_cast<int>(e.tid));
    } else {
      self->join.event(e);
    }
    return 0;
  }

  // The threads' records first, then the kernel's events: a poll read from a log has had all of
  // its events sent by then.
  void read_contexts(bool last) {
    if (!ctx_ring) return;
    reader.read(join);
    ring_buffer__consume(ctx_ring.get());
    auto out = [this](const Span& s) { deliver(s); };
    if (last) {
      join.flush(out, wall_at_mono_zero);
      otel_join.flush(out, wall_at_mono_zero);
      return;
    }
    join.round(out, wall_at_mono_zero);
    if (!otel) return;
    otel_join.round(static_cast<uint64_t>(mono_seconds_now() * 1e9), out, wall_at_mono_zero);
    std::vector<Looking> again;
    again.swap(otel_looking);
    for (const Looking& l : again) otel_look(l.pid, l.rounds + 1);
  }

  // Where process `pid` keeps its OpenTelemetry context, for the kernel programs; not found yet,
  // it is looked at again next round, for kOtelLookRounds rounds.
  static constexpr int kOtelLookRounds = 100;
  void otel_look(int pid, int rounds) {
    auto tls = otel::locate(pid);
    pm_otel_tls v{};
    if (tls) {
      v.state = PM_OTEL_READY;
      v.mode = tls->mode;
      v.off = tls->off;
      v.modid = tls->modid;
      otel_ready.insert(pid);
    } else if (tls.error().code == Errc::kNotFound && rounds < kOtelLookRounds && ::kill(pid, 0) == 0) {
      otel_looking.push_back({pid, rounds});
      return;
    } else {
      v.state = PM_OTEL_NONE;
      otel_ready.erase(pid);
      if (tls.error().code != Errc::kNotFound) otel_why = tls.error().message;
    }
    __u32 key = static_cast<__u32>(pid);
    // (BPF_EXIST: a process that exited meanwhile has no entry to bring back)
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.otel_procs), &key, &v, BPF_EXIST) != 0 && errno != ENOENT) {
      ++otel_lost;
    }
  }

  void deliver(const Span& s) {
    ++spans;
    if (s.own_request) keep_if_slow(s);
    if (handler) handler(s);
  }

  void take(const pm_span& s) {
    Span out;
    uint32_t f = s.func < names.size() ? s.func : PM_REQUEST_FUNC;
    out.function = names[f];
    out.pid = static_cast<int>(s.pid);
    out.tid = static_cast<int>(s.tid);
    if (s.flags & (PM_SPAN_HAS_REQUEST | PM_SPAN_IN_REQUEST)) out.request_id = s.request_id;
    out.own_request = (s.flags & PM_SPAN_HAS_REQUEST) != 0;
    out.start = wall_at_mono_zero +
                std::chrono::duration_cast<WallClock::duration>(std::chrono::nanoseconds(s.start_ns));
    out.seconds = static_cast<double>(s.duration_ns) * 1e-9;
    out.on_cpu_seconds = static_cast<double>(s.kside[PM_ON_CPU_NS]) * 1e-9;
    out.runq_seconds = static_cast<double>(s.kside[PM_RUNQ_NS]) * 1e-9;
    out.blocked_seconds = static_cast<double>(s.kside[PM_BLOCKED_NS]) * 1e-9;
    out.voluntary_switches = s.kside[PM_VOLUNTARY];
    out.involuntary_switches = s.kside[PM_INVOLUNTARY];
    out.bio_read_bytes = s.kside[PM_BIO_READ];
    out.bio_write_bytes = s.kside[PM_BIO_WRITE];
    out.page_faults = s.kside[PM_FAULTS];
    deliver(out);
  }

  // A request is listed once: its USDT span and the span of a function that takes its ID
  // (process_request:arg1) are the same request; the longer one stays.
  void keep_if_slow(const Span& s) {
    auto same = std::find_if(slowest.begin(), slowest.end(), [&](const Span& k) {
      return k.request_id == s.request_id && k.pid == s.pid && k.trace_id == s.trace_id &&
             k.parent_span_id == s.parent_span_id;
    });
    if (same != slowest.end()) {
      if (same->seconds >= s.seconds) return;
      slowest.erase(same);
    }
    if (slowest.size() == kSlowestRequests && slowest.back().seconds >= s.seconds) return;
    auto at = std::upper_bound(slowest.begin(), slowest.end(), s,
                               [](const Span& a, const Span& b) { return a.seconds > b.seconds; });
    slowest.insert(at, s);
    if (slowest.size() > kSlowestRequests) slowest.pop_back();
  }

};

ProbeSource::ProbeSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProbeSource::~ProbeSource() = default;

int ProbeSource::ring_fd() const { return ring_buffer__epoll_fd(impl_->ring.get()); }

int ProbeSource::wake_fd() const { return impl_->wake ? impl_->wake.get() : ring_fd(); }

void ProbeSource::on_wake() {
  Impl& m = *impl_;
  drain(kSpansPerWake);
  if (!m.ctx_timer) return;
  uint64_t expired = 0;
  if (::read(m.ctx_timer.get(), &expired, sizeof expired) < 0 && errno != EAGAIN) return;
  m.read_contexts(false);  // on the timer (the context ring wakes no one)
}

void ProbeSource::drain(size_t bound) {
  impl_->budget = std::max<size_t>(bound, 1);
  // Once per drain, not per span: the wall clock at CLOCK_MONOTONIC's zero.
  impl_->wall_at_mono_zero =
      WallClock::now() - std::chrono::duration_cast<WallClock::duration>(std::chrono::duration<double>(mono_seconds_now()));
  ring_buffer__consume(impl_->ring.get());
}

void ProbeSource::stop() {
  Impl& m = *impl_;
  if (m.stopped) return;
  m.stopped = true;
  // The programs stop taking calls in (they stay attached until the source is destroyed, after
  // the summary: taking them down is what takes time).
  m.skel->bss->stopping = 1;
  drain(SIZE_MAX);
  // What the CPUs gathered but had not sent yet.
  std::vector<pm_span_batch> left(static_cast<size_t>(libbpf_num_possible_cpus()));
  __u32 zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(m.skel->maps.batches), &zero, left.data()) != 0) return;
  for (const pm_span_batch& b : left) {
    for (uint32_t i = 0; i < std::min<uint32_t>(b.n, PM_SPAN_BATCH); ++i) m.take(b.spans[i]);
  }
  m.read_contexts(/*last=*/true);
}

void ProbeSource::on_span(std::function<void(const Span&)> handler) { impl_->handler = std::move(handler); }

std::vector<Span> ProbeSource::slowest_requests() const { return impl_->slowest; }

void ProbeSource::collect(Samples& out) {
  Impl& m = *impl_;
  // The spans before the figures they belong to; bounded like a wake-up's drain (a ring's
  // worth), so spans that keep coming cannot hold the tick.
  drain(PM_SPAN_RING_BYTES / sizeof(pm_span));
  if (m.ctx_ring && !m.stopped) m.read_contexts(false);
  int fd = bpf_map__fd(m.skel->maps.funcs);
  m.per_cpu.resize(static_cast<size_t>(libbpf_num_possible_cpus()));
  for (uint32_t f : m.indexes) {
    if (bpf_map_lookup_elem(fd, &f, m.per_cpu.data()) != 0) continue;
    pm_func_stats sum{};
    for (const pm_func_stats& c : m.per_cpu) {
      sum.entered += c.entered;
      sum.calls += c.calls;
      sum.abandoned += c.abandoned;
      sum.latency_ns += c.latency_ns;
      sum.max_ns = std::max(sum.max_ns, c.max_ns);
      sum.open_at_exit += c.open_at_exit;
      for (int i = 0; i < PM_KSIDE; ++i) sum.kside[i] += c.kside[i];
      for (int i = 0; i < PM_CALL_BUCKETS; ++i) sum.hist[i] += c.hist[i];
    }
    Labels l{{"function", m.names[f]}};
    out.push_back({&kCalls, l, static_cast<double>(sum.calls)});
    out.push_back({&kLatency, l, static_cast<double>(sum.latency_ns) * 1e-9,
                   std::vector<uint64_t>(std::begin(sum.hist), std::end(sum.hist))});
    out.push_back({&kMax, l, static_cast<double>(sum.max_ns) * 1e-9});
    for (int i = 0; i < PM_KSIDE; ++i) {
      bool ns = i == PM_ON_CPU_NS || i == PM_RUNQ_NS || i == PM_BLOCKED_NS;
      out.push_back({&kKside[i], l, static_cast<double>(sum.kside[i]) * (ns ? 1e-9 : 1.0)});
    }
    out.push_back({&kOpenAtExit, l, static_cast<double>(sum.open_at_exit)});
    out.push_back({&kAbandoned, l, static_cast<double>(sum.abandoned)});
    // Each CPU counts the begins and ends it saw; only their sum means something.
    uint64_t done = sum.calls + sum.open_at_exit + sum.abandoned;
    out.push_back({&kInProgress, l, static_cast<double>(sum.entered > done ? sum.entered - done : 0)});
  }
  m.losses.resize(m.per_cpu.size());
  __u32 zero = 0;
  pm_probe_losses lost{};
  if (bpf_map_lookup_elem(bpf_map__fd(m.skel->maps.losses), &zero, m.losses.data()) == 0) lost = sum_counters(m.losses);
  if (m.ctx_ring) {
    out.push_back({&kCtxPolls, kNoLabels, static_cast<double>(m.join.polls())});
    out.push_back({&kCtxRequests, kNoLabels, static_cast<double>(m.join.requests())});
    out.push_back({&kCtxThreads, kNoLabels, static_cast<double>(m.reader.threads())});
    out.push_back({&kCtxLost, kNoLabels, static_cast<double>(m.reader.lost() + m.join.dropped())});
    out.push_back({&kCtxDropped, kNoLabels, static_cast<double>(lost.ctx_events_dropped)});
    out.push_back({&kCtxUnreadable, kNoLabels,
                   static_cast<double>(lost.ctx_read_failed + lost.otel_read_failed + m.reader.unreadable())});
  }
  if (m.otel) {
    // A process that exited is no longer read.
    for (auto it = m.otel_ready.begin(); it != m.otel_ready.end();) it = ::kill(*it, 0) == 0 ? std::next(it) : m.otel_ready.erase(it);
    out.push_back({&kOtelSpans, kNoLabels, static_cast<double>(m.otel_join.spans())});
    out.push_back({&kOtelProcesses, kNoLabels, static_cast<double>(m.otel_ready.size())});
    out.push_back({&kOtelLost, kNoLabels, static_cast<double>(m.otel_join.dropped() + m.otel_lost + lost.otel_no_proc_slot)});
  }
  out.push_back({&kSpans, kNoLabels, static_cast<double>(m.spans)});
  out.push_back({&kDropped, kNoLabels, static_cast<double>(lost.spans_dropped)});
  out.push_back({&kTooDeep, kNoLabels, static_cast<double>(lost.too_deep)});
  out.push_back({&kNoSlot, kNoLabels, static_cast<double>(lost.no_thread_slot)});
  out.push_back({&kUnmatched, kNoLabels, static_cast<double>(lost.unmatched)});
  append_bpf_stats(m.skel->obj, out);
}

namespace {

// One uprobe_multi link per binary for the entries and one for the returns.
Status attach_multi(ProbeSource::Impl& impl, const std::vector<probes::ResolvedProbe>& list) {
  struct Binary {
    std::vector<uint64_t> offsets, entry_cookies, return_cookies;
  };
  std::vector<std::pair<const probes::ResolvedProbe*, Binary>> binaries;  // in the order given
  for (size_t i = 0; i < list.size(); ++i) {
    const probes::ResolvedProbe& p = list[i];
    auto b = std::find_if(binaries.begin(), binaries.end(), [&](const auto& e) {
      return e.first->file != std::pair<uint64_t, uint64_t>{} ? e.first->file == p.file : e.first->path == p.path;
    });
    if (b == binaries.end()) b = binaries.insert(binaries.end(), {&p, {}});
    b->second.offsets.push_back(p.offset);
    b->second.entry_cookies.push_back(PM_COOKIE(i, p.arg));
    b->second.return_cookies.push_back(PM_COOKIE(i, 0));
  }
  for (const auto& [probe, b] : binaries) {
    for (bool ret : {false, true}) {
      bpf_program* prog = ret ? impl.skel->progs.call_return : impl.skel->progs.call_entry;
      auto link = probes::attach_uprobe_multi(bpf_program__fd(prog), probe->attach_path(), b.offsets,
                                              ret ? b.return_cookies : b.entry_cookies, ret, printable(probe->path));
      if (!link) return link.error();
      impl.multi_links.push_back(std::move(*link));
    }
  }
  return {};
}

// A perf-event uprobe and uretprobe per function (kernels before 6.6).
Status attach_each(ProbeSource::Impl& impl, const std::vector<probes::ResolvedProbe>& list) {
  for (size_t i = 0; i < list.size(); ++i) {
    const probes::ResolvedProbe& p = list[i];
    for (bool ret : {false, true}) {
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = ret ? PM_COOKIE(i, 0) : PM_COOKIE(i, p.arg), .retprobe = ret);
      bpf_program* prog = ret ? impl.skel->progs.call_return : impl.skel->progs.call_entry;
      // The file the symbols were read from (held open), not the path again: see ResolvedProbe.
      bpf_link* link = bpf_program__attach_uprobe_opts(prog, -1, p.attach_path().c_str(), p.offset, &opts);
      if (link == nullptr) {
        return Error::from_errno(errno, "attaching a uprobe to " + printable(p.function) + " in " + printable(p.path));
      }
      impl.links.emplace_back(link, bpf_link__destroy);
    }
  }
  return {};
}

// The context events' ring buffer, the timer that reads the threads' records, and the one fd
// the event loop watches for both rings and the timer.
Status open_contexts(ProbeSource::Impl& impl) {
  impl.ctx_ring.reset(ring_buffer__new(bpf_map__fd(impl.skel->maps.ctx_events), &ProbeSource::Impl::on_ctx, &impl,
                                       nullptr));
  if (!impl.ctx_ring) return Error::from_errno(errno, "opening the thread context ring buffer");
  impl.ctx_timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!impl.ctx_timer) return Error::from_errno(errno, "timerfd_create");
  itimerspec every{};
  every.it_interval.tv_nsec = every.it_value.tv_nsec = ProbeSource::kContextReadMs * 1000000L;
  if (::timerfd_settime(impl.ctx_timer.get(), 0, &every, nullptr) != 0) {
    return Error::from_errno(errno, "timerfd_settime");
  }
  impl.wake.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!impl.wake) return Error::from_errno(errno, "epoll_create1");
  for (int fd : {ring_buffer__epoll_fd(impl.ring.get()), ring_buffer__epoll_fd(impl.ctx_ring.get()), impl.ctx_timer.get()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(impl.wake.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return Error::from_errno(errno, "epoll_ctl");
  }
  return {};
}

Result<std::unique_ptr<ProbeSource::Impl>> load_and_attach(const ProbeTarget& target, bool multi) {
  auto impl = std::make_unique<ProbeSource::Impl>();
  bool contexts = target.has_usdt("context_thread");
  bool otel = target.otel && target.tree.track_tree;
  int stamps = target.runq_stamps_fd, chain = target.tree.switch_chain_fd;
  detail::BeforeLoad<probe_bpf> before_load = [multi, contexts, otel, stamps, chain](probe_bpf* s) {
    if (multi) {
      for (bpf_program* p : {s->progs.call_entry, s->progs.call_return}) {
        bpf_program__set_expected_attach_type(p, static_cast<bpf_attach_type>(probes::kUprobeMultiAttachType));
      }
    }
    // The wakeups' stamps: the scheduler object's where it is loaded, else this object's own
    // program (every wakeup of the machine goes through it: only where a target publishes context).
    bool shared = stamps >= 0 && bpf_map__reuse_fd(s->maps.runq_stamps, stamps) == 0;
    if (!shared) bpf_map__set_max_entries(s->maps.runq_stamps, 1);
    s->rodata->shared_stamps = shared ? 1 : 0;
    if (chain >= 0) bpf_program__set_autoattach(s->progs.btf_switch, false);  // the scheduler's ends in it
    bpf_program__set_autoload(s->progs.ctx_wakeup, (contexts || otel) && !shared);
    bpf_program__set_autoload(s->progs.otel_exec, otel);
    s->rodata->otel_on = otel ? 1 : 0;
  };
  auto loaded = load_skeleton<probe_bpf>("application probe", target.tree, /*btf_only=*/true, before_load);
  if (!loaded) return loaded.error();
  impl->skel = std::move(loaded->skel);
  bpf_link* own = nullptr;
  auto slot = chain_or_attach(impl->skel->progs.btf_switch, chain, PM_CHAIN_PROBES, &own);
  if (!slot) return slot.error();
  impl->chained = std::move(*slot);
  if (own != nullptr) impl->links.emplace_back(own, bpf_link__destroy);
  impl->names = labels_of(target.probes);
  impl->names.resize(PM_MAX_FUNCS);
  impl->names[PM_REQUEST_FUNC] = "request";
  PM_TRY(multi ? attach_multi(*impl, target.probes) : attach_each(*impl, target.probes));
  for (size_t i = 0; i < target.probes.size(); ++i) impl->indexes.push_back(static_cast<uint32_t>(i));
  for (const ProbeTarget::Usdt& u : target.usdt) {
    // libbpf reads the notes from the file and attaches to it by name: one open file for both.
    UniqueFd usdt(::open(u.binary.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!usdt) return Error::from_errno(errno, "opening " + printable(u.binary) + " for its USDT probes");
    std::string usdt_path = "/proc/self/fd/" + std::to_string(usdt.get());
    for (auto [prog, name] : {std::pair{impl->skel->progs.request_begin, "request_begin"},
                              std::pair{impl->skel->progs.request_end, "request_end"},
                              std::pair{impl->skel->progs.context_thread, "context_thread"}}) {
      if (std::find(u.probes.begin(), u.probes.end(), name) == u.probes.end()) continue;
      bpf_link* link = bpf_program__attach_usdt(prog, -1, usdt_path.c_str(), "perf_monitor", name, nullptr);
      if (link == nullptr) {
        return Error::from_errno(errno, std::string("attaching to the USDT probe perf_monitor:") + name + " in " +
                                            printable(u.binary));
      }
      impl->links.emplace_back(link, bpf_link__destroy);
    }
  }
  if (target.has_usdt("request_begin")) impl->indexes.push_back(PM_REQUEST_FUNC);
  impl->ring.reset(ring_buffer__new(bpf_map__fd(impl->skel->maps.spans), &ProbeSource::Impl::on_sample,
                                    impl.get(), nullptr));
  if (!impl->ring) return Error::from_errno(errno, "opening the span ring buffer");
  impl->otel = otel;
  if (contexts || otel) PM_TRY(open_contexts(*impl));
  return impl;
}

}  // namespace

Result<std::unique_ptr<ProbeSource>> make_probe_source(const ProbeTarget& target) {
  if (target.probes.size() > probes::kMaxProbes) {
    return make_error(Errc::kInvalidArgument,
                      "too many probes: at most " + std::to_string(probes::kMaxProbes) + " functions at once");
  }
  // uprobe_multi links where the kernel has them (6.6+), else one uprobe per function and
  // return. PERF_MONITOR_UPROBE_MULTI=0 forces the latter (to check it on a kernel that would
  // not need it).
  const char* force = std::getenv("PERF_MONITOR_UPROBE_MULTI");
  bool multi = !target.probes.empty() && !(force != nullptr && std::string_view(force) == "0");
  auto impl = load_and_attach(target, multi);
  if (!impl && multi) impl = load_and_attach(target, false);  // the classic way says what is wrong
  if (!impl) return impl.error();
  return std::make_unique<ProbeSource>(std::move(*impl));
}

}  // namespace pm
