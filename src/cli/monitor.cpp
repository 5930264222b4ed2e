#include "cli/monitor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/target.h"
#include "core/aggregator.h"
#include "core/event_loop.h"
#include "sinks/prometheus.h"
#include "sinks/sink.h"
#include "sources/counters/counter_group.h"
#include "sources/counters/counters_source.h"
#include "sources/files/powercap.h"
#include "sources/files/proc_events.h"
#include "sources/files/process_tree.h"
#include "sources/files/system_sources.h"
#include "sources/kernel/block_source.h"
#include "sources/kernel/scheduler_source.h"
#include "sources/probes/probe_source.h"
#include "sources/probes/symbols.h"

namespace pm {
namespace {

struct SourceEntry {
  const char* name;
  bool Config::*enabled;
  Result<std::unique_ptr<Source>> (*make)(const FsRoots&);
  bool slow;  // read on the file_poll rhythm instead of every interval
  const char* what;
};

const SourceEntry kFileSources[] = {
    {"cpu", &Config::cpu, make_cpu_source, false,
     "families cpu, sched: CPU time by mode per CPU, switches, forks, load (/proc/stat, /proc/loadavg)"},
    {"memory", &Config::memory, make_memory_source, false,
     "family memory: used/cached/anon/swap, faults, swapping (/proc/meminfo, /proc/vmstat)"},
    {"pressure", &Config::pressure, make_pressure_source, false,
     "family pressure: stall information for cpu, io, memory (/proc/pressure)"},
    {"numa", &Config::numa, make_numa_source, true, "family numa: memory per NUMA node (/sys/devices/system/node)"},
    {"thermal", &Config::thermal, make_thermal_source, true,
     "family thermal: zones and trip points (/sys/class/thermal)"},
};

// Energy comes from the power PMU when there is one (with the other counters), else powercap.
bool has_power_pmu() {
  counters::Catalogue catalogue;
  auto names = counters::default_event_names(catalogue);
  return std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.rfind("power/", 0) == 0; });
}

void print_error(const std::string& msg) { fmt::print(stderr, "perf-monitor: {}\n", msg); }

class Monitor {
 public:
  Monitor(const Config& config, const Target& target) : cfg_(config), target_(target) {}

  int run() {
    auto loop = EventLoop::create();
    if (!loop) return fail(loop.error().message);
    loop_ = std::move(*loop);
    if (int rc = open_output(); rc != 0) return rc;
    build_sources();

    ExecState exec{};
    ::sigprocmask(SIG_BLOCK, nullptr, &exec.mask);
    ::getrlimit(RLIMIT_NOFILE, &exec.nofile);
    prepare_process(exec.nofile);
    auto st = loop_->watch_signals({SIGINT, SIGTERM, SIGCHLD}, [this](const signalfd_siginfo& si) { on_signal(si); });
    if (!st) return fail(st.error().message);

    std::optional<HeldChild> child;
    if (target_.mode == Mode::kRun) {
      auto held = spawn_command(exec);
      if (!held) return fail(held.error().message);
      child.emplace(std::move(*held));
    } else if (target_.mode == Mode::kAttach) {
      if (int rc = attach(); rc >= 0) return rc;
    } else {
      open_counters({});
      open_kernel_sources({});
      open_probes({}, "");
      baseline();
    }
    if (int rc = start_timers(); rc != 0) {
      if (child) ::kill(child->pid(), SIGKILL);  // never released: it has run no code of its own
      return rc;
    }
    if (child) {
      if (int rc = release_command(*child); rc >= 0) return rc;
    }
    sink_->header(run_header());
    sink_->unavailable(unavailable_);  // once the target has started: errors stay one line
    if (prom_) {
      // After the command's fork (see PrometheusSink::serve), before the first tick.
      prom_->session(session_status());
      if (auto served = prom_->serve(); !served) return fail(served.error().message);
      fmt::print(stderr, "perf-monitor: Prometheus metrics at http://{}/metrics\n", prom_->address().text());
    }

    if (auto r = loop_->run(); !r) return fail(r.error().message);
    return finish();
  }

 private:
  int fail(const std::string& msg) {
    print_error(msg);
    return kExitFailure;
  }

  int open_output() {
    if (cfg_.output_path.empty()) {
      out_ = stdout;
    } else {
      out_ = std::fopen(cfg_.output_path.c_str(), "we");
      if (out_ == nullptr) {
        print_error(fmt::format("cannot write --output {}: {}", cfg_.output_path, std::strerror(errno)));
        return kExitUsage;
      }
      owned_out_.reset(out_);
    }
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(cfg_.format == OutputFormat::kJson ? make_json_sink(out_) : make_text_sink(out_));
    if (!cfg_.prometheus_listen.empty()) {
      // Bound now, so a busy port is one line and exit 2 before anything starts; served from
      // run() once the sources are up.
      auto addr = parse_listen_address(cfg_.prometheus_listen);
      if (!addr) {
        print_error("--prometheus " + addr.error().message);
        return kExitUsage;
      }
      auto prom = PrometheusSink::bind(*addr);
      if (!prom) {
        print_error(prom.error().message);
        return prom.error().code == Errc::kInvalidArgument ? kExitUsage : kExitFailure;
      }
      prom_ = prom->get();
      sinks.push_back(std::move(*prom));
    }
    sink_ = make_fanout_sink(std::move(sinks));
    return 0;
  }

  RunHeader run_header() const {
    RunHeader h;
    h.mode = target_.mode == Mode::kRun ? "run" : target_.mode == Mode::kAttach ? "attach" : "system";
    h.command = target_.command;
    h.pid = root_;
    h.host = read_host_info();
    h.interval_s = std::chrono::duration<double>(cfg_.interval).count();
    h.start = WallClock::now();
    h.unavailable = unavailable_;
    return h;
  }

  // What the Prometheus sink exports about the session itself.
  SessionStatus session_status() const {
    SessionStatus st;
    st.mode = target_.mode == Mode::kRun ? "run" : target_.mode == Mode::kAttach ? "attach" : "system";
    st.running = running_;
    st.unavailable = unavailable_;
    st.missed_ticks = loop_->missed_ticks();
    st.samples = samples_seen_;
    if (events_) {
      st.proc_events = events_->events();
      st.proc_event_overruns = events_->overruns();
    }
    return st;
  }

  void build_sources() {
    FsRoots roots;
    for (const SourceEntry& e : kFileSources) {
      if (cfg_.*e.enabled) add_source(e.name, e.make(roots), e.slow);  // disabled: never opened
    }
  }

  // The eBPF sources; disabled means never loaded.
  void open_kernel_sources(TreeTarget target) {
    target.hist_unit_ns = cfg_.scheduler_hist_unit_ns;
    if (cfg_.scheduler_enabled) add_source("scheduler", make_scheduler_source(target));
    target.hist_unit_ns = cfg_.block_io_hist_unit_ns;
    if (cfg_.block_io_enabled) add_source("block_io", make_block_source(target));
  }

  // Keeps a source that started (with its ratios), or says once why it could not.
  template <typename S>
  void add_source(const char* name, Result<std::unique_ptr<S>> src, bool slow = false, const char* why_more = "") {
    if (!src) {
      unavailable_.push_back({name, src.error().message + why_more});
      return;
    }
    for (const RatioRule& r : (*src)->ratios()) agg_.add_ratio(r);
    (slow ? slow_ : fast_).push_back(std::move(*src));
    running_.emplace_back(name);
  }

  // Energy: the power PMU's events count with the other counters; where none counts, the
  // kernel's powercap (RAPL) files stand in.
  void open_powercap() {
    add_source("energy", make_powercap_source(FsRoots{}), false, ", and no power PMU event counts");
  }

  // Application probes: the --probe functions, and the target's request annotations (USDT
  // perf_monitor:request_begin/end) when its executable has them.
  void open_probes(TreeTarget tree, const std::string& exe) {
    std::string usdt = !exe.empty() && probes::has_usdt_provider(exe, "perf_monitor") ? exe : "";
    if (cfg_.probes.empty() && usdt.empty()) return;
    ProbeTarget target{std::move(tree), {}, usdt};
    for (const ProbeSpec& p : cfg_.probes) {
      auto r = probes::resolve_probe(p);  // checked at start-up; a binary replaced since fails here
      if (!r) {
        unavailable_.push_back({"probe", r.error().message});
        return;
      }
      target.probes.push_back(std::move(*r));
    }
    auto src = make_probe_source(target);
    if (!src) {
      unavailable_.push_back({"probe", src.error().message});
      return;
    }
    probes_ = src->get();
    probes_->on_span([this](const Span& sp) { sink_->span(sp); });
    // Spans are handed on as they come, a bounded number per wake-up.
    if (auto st = loop_->add_fd(probes_->ring_fd(), [this] { probes_->drain(kSpansPerWake); }); !st) {
      unavailable_.push_back({"probe", st.error().message});
      probes_ = nullptr;
      return;
    }
    fast_.push_back(std::move(*src));
    running_.emplace_back("probe");
  }

  // Counters start here; then every source is read at its rhythm.
  void baseline() {
    Samples s, slow;
    for (auto& src : fast_) src->collect(s);
    if (tree_) tree_->collect(s);
    if (counters_) counters_->collect(s);
    for (auto& src : slow_) src->collect(slow);
    auto now = MonoClock::now();
    agg_.observe_baseline(s, now);
    agg_.observe(slow, now);  // slowly changing gauges are not read again for a while
  }

  void open_proc_events() {
    if (!cfg_.proc_events) return;  // disabled: not opened
    auto ev = ProcEvents::open();
    if (!ev) {
      unavailable_.push_back({"proc_events", ev.error().message + " (children are found by /proc walks only)"});
      return;
    }
    events_.emplace(std::move(*ev));
    running_.emplace_back("proc_events");
    auto st = loop_->add_fd(events_->fd(), [this] {
      events_->drain({[this](int ptgid, int cpid, int ctgid) { tree_->on_fork(ptgid, cpid, ctgid); },
                      [this](int pid, int tgid) {
                        if (pid == tgid) tree_->on_exit(pid);
                      }});
    });
    if (!st) {
      events_.reset();
      running_.pop_back();
    }
  }

  // What perf-monitor changes for itself; the command gets the original back (ExecState).
  static void prepare_process(const rlimit& nofile) {
    // A closed output pipe must not kill the monitor and leave the command unwatched.
    ::signal(SIGPIPE, SIG_IGN);
    // An inherited SIG_IGN would make the kernel reap our children before we can read them.
    ::signal(SIGCHLD, SIG_DFL);
    // The process tree keeps three files open per member.
    rlimit raised = nofile;
    raised.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &raised);
  }

  // Forks the command, held before exec, and registers it: nothing it runs can escape the tree.
  Result<HeldChild> spawn_command(const ExecState& exec) {
    // Orphaned descendants are reparented to us, so we read their final figures before reaping.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    tree_ = std::make_unique<ProcessTree>();
    tree_->adopt_children_of(::getpid());
    open_proc_events();
    auto child = HeldChild::spawn(target_.command, exec);
    if (!child) return child.error();
    root_ = child->pid();
    tree_->add_root(root_);
    running_.emplace_back("process_tree");
    info_.pid = root_;
    // Inherited by everything the command forks, enabled by its exec: nothing before counts.
    open_counters({{root_}, /*enable_on_exec=*/true});
    open_kernel_sources({true, {root_}});
    auto exe = probes::find_binary(target_.command[0]);  // as exec will find it
    open_probes({true, {root_}}, exe ? *exe : "");
    baseline();
    return child;
  }

  // Returns an exit status when the command could not be executed, -1 when it runs.
  int release_command(HeldChild& child) {
    if (auto st = child.release(); !st) {
      int status = 0;
      ::waitpid(root_, &status, 0);
      print_error(fmt::format("cannot execute '{}': {}", target_.command[0],
                              st.error().message.substr(st.error().message.find(": ") + 2)));
      return st.error().code == Errc::kNotFound ? kExitNotFound : kExitCannotExecute;
    }
    return -1;
  }

  int attach() {
    root_ = target_.pid;
    auto pidfd = open_pidfd(root_);
    tree_ = std::make_unique<ProcessTree>();
    if (!pidfd || !tree_->add_root(root_)) {
      print_error(fmt::format("no process with PID {}: check the PID (ps -e) and try again", root_));
      return kExitUsage;
    }
    pidfd_ = std::move(*pidfd);
    info_.pid = root_;
    running_.emplace_back("process_tree");
    open_proc_events();
    auto st = loop_->add_fd(pidfd_.get(), [this] {
      info_.end_reason = interrupted_ ? "interrupted" : "exited";
      loop_->stop();
    });
    if (!st) return fail(st.error().message);
    // Every thread of the tree as it is now; what they fork from here on is inherited.
    Samples discovered;
    tree_->collect(discovered);
    std::vector<int> tids;
    for (int pid : tree_->pids()) {
      if (auto tasks = list_dir("/proc/" + std::to_string(pid) + "/task")) {
        for (const std::string& t : *tasks) tids.push_back(std::stoi(t));
      }
    }
    open_counters({tids, false});
    open_kernel_sources({true, tree_->pids()});
    open_probes({true, tree_->pids()}, "/proc/" + std::to_string(root_) + "/exe");
    baseline();
    return -1;
  }

  void open_counters(const counters::CountersTarget& target) {
    if (!cfg_.pmc_enabled) return;  // disabled: no fd opened
    counters::Catalogue catalogue;
    std::vector<std::string> names =
        cfg_.pmc_events.empty() ? counters::default_event_names(catalogue) : cfg_.pmc_events;
    std::vector<counters::EventSpec> specs;
    for (const std::string& n : names) {
      auto spec = catalogue.parse(n);  // names were checked at start-up
      if (!spec) continue;
      bool seen = std::any_of(specs.begin(), specs.end(), [&](const auto& s) { return s.name == spec->name; });
      if (!seen) specs.push_back(std::move(*spec));  // cycles,cpu-cycles: one event, one key
    }
    auto src = counters::make_counters_source(specs, target);
    if (!src) {
      unavailable_.push_back({"pmc", src.error().message});
    } else {
      for (Unavailable& u : (*src)->unsupported()) unavailable_.push_back(std::move(u));
      for (const RatioRule& r : (*src)->ratios()) agg_.add_ratio(r);
      counters_ = std::move(*src);
      running_.emplace_back("pmc");
    }
    if (!counters_ || !counters_->counts_energy()) open_powercap();
  }

  int start_timers() {
    auto add = [&](Duration d, EventLoop::Callback cb) -> bool {
      auto t = loop_->add_timer(d, std::move(cb));
      if (!t) print_error(t.error().message);
      return t.ok();
    };
    bool ok = add(cfg_.interval, [this] { tick(); });
    if (!slow_.empty()) ok = ok && add(cfg_.file_poll, [this] { sample(slow_); });
    if (tree_) {
      Duration d = cfg_.tree_interval.value_or(target_.mode == Mode::kRun ? Duration(std::chrono::milliseconds(100))
                                                                          : cfg_.interval);
      tree_in_step_ = d == cfg_.interval;
      if (!tree_in_step_) ok = ok && add(d, [this] { sample_tree(); });
    }
    if (counters_) {
      Duration d = cfg_.pmc_interval.value_or(cfg_.interval);
      counters_in_step_ = d == cfg_.interval;
      if (!counters_in_step_) ok = ok && add(d, [this] { sample_counters(); });
    }
    if (cfg_.duration) ok = ok && add(*cfg_.duration, [this] { on_duration(); });
    return ok ? 0 : kExitFailure;
  }

  void observe() {
    samples_seen_ += samples_.size();
    agg_.observe(samples_, MonoClock::now());
  }

  void sample(std::vector<std::unique_ptr<Source>>& sources) {
    samples_.clear();
    for (auto& src : sources) src->collect(samples_);
    observe();
  }

  void sample_tree() {
    samples_.clear();
    tree_->collect(samples_);
    observe();
  }

  void sample_counters() {
    samples_.clear();
    counters_->collect(samples_);
    observe();
  }

  void tick() {
    sample(fast_);
    // The tree and the counters are read on their own rhythm; when that is the interval, they
    // are read here in step.
    if (tree_in_step_) sample_tree();
    if (counters_in_step_) sample_counters();
    if (prom_) prom_->session(session_status());
    sink_->interval(agg_.close_interval(MonoClock::now()));
  }

  // Passes a signal to every process of the command's tree, as a terminal does to its
  // foreground process group.
  void signal_tree(int sig) {
    for (int pid : tree_->pids()) ::kill(pid, sig);
  }

  void on_duration() {
    if (target_.mode == Mode::kRun && !root_exited_) {
      // Like timeout(1): ask the command to end, and report when it has.
      signal_tree(SIGTERM);
      duration_expired_ = true;
      return;
    }
    info_.end_reason = "duration";
    loop_->stop();
  }

  void on_signal(const signalfd_siginfo& si) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) {
      reap();
      return;
    }
    if (target_.mode == Mode::kRun && !root_exited_ && !interrupted_) {
      interrupted_ = true;
      // Ctrl-C at a terminal reaches the command too; a signal sent to us alone is passed on.
      if (si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE) signal_tree(sig);
      return;
    }
    // A second signal (or the first, when not running a command) ends monitoring now.
    interrupted_ = true;
    info_.end_reason = "interrupted";
    if (target_.mode == Mode::kRun && !root_exited_) info_.exit_code = 128 + sig;
    loop_->stop();
  }

  // Reaps our children (the command, and orphans reparented to us) after reading their final
  // figures while they are zombies.
  void reap() {
    for (;;) {
      siginfo_t si{};
      if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) return;
      int pid = si.si_pid;
      if (tree_) tree_->on_reaping(pid);
      int status = 0;
      if (::waitpid(pid, &status, 0) != pid) return;
      if (pid == root_) {
        root_exited_ = true;
        if (WIFSIGNALED(status)) {
          info_.signal = WTERMSIG(status);
          info_.exit_code = 128 + WTERMSIG(status);
        } else {
          info_.exit_code = WEXITSTATUS(status);
        }
        info_.end_reason = duration_expired_ ? "duration" : interrupted_ ? "interrupted" : "exited";
        loop_->stop();
      }
    }
  }

  int finish() {
    // Drain notifications and take a last reading so the summary holds everything until now.
    if (events_) {
      events_->drain({[this](int ptgid, int cpid, int ctgid) { tree_->on_fork(ptgid, cpid, ctgid); }, nullptr});
      info_.proc_event_overruns = events_->overruns();
    }
    if (probes_ != nullptr) probes_->stop();
    if (tree_ && !tree_->denied().empty()) unavailable_.push_back({"process_tree", tree_->denied()});
    if (counters_) {
      for (Unavailable& u : counters_->not_counted()) unavailable_.push_back(std::move(u));
    }
    samples_.clear();
    for (auto& src : fast_) src->collect(samples_);
    for (auto& src : slow_) src->collect(samples_);
    if (tree_) tree_->collect(samples_);
    if (counters_) counters_->collect(samples_);
    auto now = MonoClock::now();
    agg_.observe(samples_, now);
    info_.mode = target_.mode == Mode::kRun ? "run" : target_.mode == Mode::kAttach ? "attach" : "system";
    info_.command = target_.command;
    info_.missed_ticks = loop_->missed_ticks();
    if (info_.end_reason.empty()) info_.end_reason = "interrupted";
    if (probes_ != nullptr) info_.slowest_requests = probes_->slowest_requests();
    sink_->summary(agg_.summary(now), info_, unavailable_);
    if (target_.mode == Mode::kRun) return info_.exit_code.value_or(kExitFailure);
    return 0;
  }

  const Config& cfg_;
  const Target& target_;
  std::unique_ptr<EventLoop> loop_;
  Aggregator agg_;
  std::vector<std::unique_ptr<Source>> fast_, slow_;
  std::unique_ptr<ProcessTree> tree_;
  std::optional<ProcEvents> events_;
  std::vector<Unavailable> unavailable_;
  std::FILE* out_ = nullptr;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned_out_{nullptr, std::fclose};
  std::unique_ptr<Sink> sink_;
  PrometheusSink* prom_ = nullptr;  // one of sink_'s, when --prometheus is given
  std::vector<std::string> running_;  // sources that started (for perf_monitor_source_up)
  uint64_t samples_seen_ = 0;         // samples read from the sources (perf_monitor_self_samples_total)
  Samples samples_;
  RunInfo info_;
  UniqueFd pidfd_;
  int root_ = 0;
  bool root_exited_ = false;
  bool interrupted_ = false;
  bool duration_expired_ = false;
  bool tree_in_step_ = false;
  bool counters_in_step_ = false;
  std::unique_ptr<counters::CountersSource> counters_;
  ProbeSource* probes_ = nullptr;  // owned by fast_
  static constexpr size_t kSpansPerWake = 4096;
};

}  // namespace

int run_monitor(const Config& config, const Target& target) { return Monitor(config, target).run(); }

namespace {

// Every counter event this host names, and whether it opens (system-wide, on its first CPU).
void list_events(const Config& config) {
  counters::Catalogue catalogue;
  fmt::print("\n{:<40} {:<14} {}\n", "EVENT (family pmc; -e/--events, [pmc] events)", "STATUS", "WHY NOT");
  if (!config.pmc_enabled) {
    fmt::print("{:<40} {:<14} {}\n", "(all)", "disabled", "[pmc] enabled = false in the configuration");
    return;
  }
  std::vector<std::string> defaults = counters::default_event_names(catalogue);
  int cpu = online_cpus().front();
  for (const counters::EventSpec& e : catalogue.all()) {
    counters::Scope scope{-1, e.cpus.empty() ? cpu : e.cpus.front(), false, false};
    auto fd = counters::open_event(e, scope, -1);
    bool is_default = std::find(defaults.begin(), defaults.end(), e.name) != defaults.end();
    std::string name = e.name + (is_default ? " *" : "") + (e.unit.empty() ? "" : " [" + e.unit + "]");
    fmt::print("{:<40} {:<14} {}\n", name, fd ? "available" : "unavailable", fd ? "" : fd.error().message);
  }
  fmt::print("(* counted by default; raw events as rNNNN or pmu/event=0x..,umask=0x../ are accepted too)\n");
}

}  // namespace

int list_sources(const Config& config) {
  FsRoots roots;
  fmt::print("{:<14} {:<14} {}\n", "SOURCE", "STATUS", "WHAT / WHY NOT");
  for (const SourceEntry& e : kFileSources) {
    if (!(config.*e.enabled)) {
      fmt::print("{:<14} {:<14} {}\n", e.name, "disabled", "off in the configuration");
      continue;
    }
    auto src = e.make(roots);
    fmt::print("{:<14} {:<14} {}\n", e.name, src ? "available" : "unavailable", src ? e.what : src.error().message);
  }
  auto tree_ok = ProcessTree().add_root(::getpid());
  fmt::print("{:<14} {:<14} {}\n", "process_tree", tree_ok ? "available" : "unavailable",
             "family process_tree (run/attach): CPU, faults, I/O, switches, memory of a whole tree (/proc/PID/*)");
  if (!has_power_pmu()) {
    auto pc = make_powercap_source(roots);
    fmt::print("{:<14} {:<14} {}\n", "energy", pc ? "available" : "unavailable",
               pc ? "family energy: RAPL zones from /sys/class/powercap (no power PMU here)" : pc.error().message);
  }
  auto ev = ProcEvents::open();
  fmt::print("{:<14} {:<14} {}\n", "proc_events", ev ? "available" : "unavailable",
             ev ? "run/attach: instant discovery of forked children (netlink proc connector)"
                : ev.error().message + " (children are found by /proc walks only)");
  if (!config.scheduler_enabled) {
    fmt::print("{:<14} {:<14} {}\n", "scheduler", "disabled", "off in the configuration");
  } else {
    auto sched = make_scheduler_source({});
    fmt::print("{:<14} {:<14} {}\n", "scheduler", sched ? "available" : "unavailable",
               sched ? fmt::format("family scheduler (eBPF, {}): switches, wakeups, run-queue latency; for a "
                                   "target its on-CPU, run-queue and blocked time",
                                   (*sched)->attach_mode())
                     : sched.error().message);
  }
  if (!config.block_io_enabled) {
    fmt::print("{:<14} {:<14} {}\n", "block_io", "disabled", "off in the configuration");
  } else {
    auto block = make_block_source({});
    fmt::print("{:<14} {:<14} {}\n", "block_io", block ? "available" : "unavailable",
               block ? "family block_io (eBPF): bio bytes, request latency and queue depth per device; a target's "
                       "bytes"
                     : block.error().message);
  }
  auto probe = make_probe_source({});  // loads and attaches no function: whether it could
  fmt::print("{:<14} {:<14} {}\n", "probe", probe ? "available" : "unavailable",
             probe ? "family probe (eBPF uprobes, USDT): --probe BINARY:FUNCTION[:argN]; requests marked with "
                     "perf-monitor/annotate.h"
                   : probe.error().message);
  list_events(config);
  return 0;
}

}  // namespace pm
