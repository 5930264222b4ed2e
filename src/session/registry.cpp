// SPDX-License-Identifier: Apache-2.0
#include "session/registry.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "sources/counters/counters_source.h"
#include "sources/files/powercap.h"
#include "sources/files/system_sources.h"
#include "sources/kernel/block_source.h"
#include "sources/kernel/sched_object.h"
#include "sources/kernel/scheduler_source.h"
#include "sources/probes/otel.h"
#include "sources/probes/probe_source.h"
#include "sources/probes/symbols.h"
#include "sources/stacks/stack_source.h"
#include "sources/top/proc_top_source.h"
#include "sources/top/top_source.h"
#include "sources/tree/kernel_tree.h"
#include "sources/tree/proc_tree.h"

namespace pm {

SourceContext::~SourceContext() = default;

Result<std::shared_ptr<SchedObject>> SourceContext::sched() {
  if (!sched_tried_) {
    sched_tried_ = true;
    bool follow = target.mode() != Mode::kSystem;
    bool top = !follow && config.top.count > 0;
    auto loaded = SchedObject::load({.track_tree = follow,
                                     .track_all = top,
                                     .cgroup_depth = top ? static_cast<uint32_t>(config.top.cgroup_depth) : 0,
                                     .tree_cgroup_id = target.cgroup_id(),
                                     .hist_unit_ns = config.scheduler.hist_unit_ns,
                                     .count_system = config.scheduler.enabled});
    if (loaded) {
      sched_ = std::move(*loaded);
    } else {
      sched_error_ = loaded.error().message;
    }
  }
  if (!sched_) return make_error(Errc::kUnavailable, sched_error_);
  return sched_;
}

int SourceContext::members_fd() { return sched_ && sched_->follows_tree() ? sched_->members_fd() : -1; }

int SourceContext::switch_clock_fd() { return sched_ ? sched_->switch_clock_fd() : -1; }

int SourceContext::switch_chain_fd() { return sched_ ? sched_->switch_chain_fd() : -1; }

namespace {

using Made = Result<std::unique_ptr<Source>>;

template <typename S>
Made up(Result<std::unique_ptr<S>> r) {
  if (!r) return r.error();
  return std::unique_ptr<Source>(std::move(*r));
}

bool always(const Config& /*c*/) { return true; }

// The target's tree: exact from the kernel where the scheduler object follows it, else sampled
// from /proc (and the reason said once).
Made make_tree(SourceContext& ctx) {
  Target& target = ctx.target;
  if (target.mode() == Mode::kSystem) return std::unique_ptr<Source>();
  std::string why;
  auto sched = ctx.sched();
  if (sched && (*sched)->follows_tree()) {
    auto kt = KernelTree::create(*sched, target.roots(), target.mode() == Mode::kRun,
                                 /*may_be_empty=*/target.mode() == Mode::kCgroup);
    if (kt) {
      // Attach: children forked while the sources opened join too.
      for (int pass = 0; pass < 3; ++pass) {
        std::vector<int> added = target.rediscover();
        if (added.empty()) break;
        (void)(*kt)->add(added);
      }
      target.follow(kt->get());
      return std::unique_ptr<Source>(std::move(*kt));
    }
    why = kt.error().message;
  } else {
    why = sched ? "the scheduler programs could not load as tp_btf (task storage)" : sched.error().message;
  }
  ctx.notes.push_back({"process_tree", "exact kernel accounting unavailable (" + why +
                                           "): figures sampled from /proc, short-lived processes may be missed",
                       true});
  auto pt = std::make_unique<ProcTree>();
  if (target.mode() == Mode::kRun) pt->adopt_children_of(::getpid());
  for (int pid : target.roots()) pt->add_root(pid);
  if (ctx.config.process_tree.proc_events) {
    if (auto st = pt->listen(); !st) {
      ctx.notes.push_back({"proc_events", st.error().message + " (children are found by /proc walks only)", true});
    }
  }
  target.follow(pt.get());
  return std::unique_ptr<Source>(std::move(pt));
}

Made make_counters(SourceContext& ctx) {
  std::vector<counters::EventSpec> specs(ctx.events.begin(), ctx.events.end());
  if (specs.empty()) {
    counters::Catalogue catalogue;
    auto defaults = catalogue.parse_set(counters::default_event_names(catalogue));
    if (!defaults) return defaults.error();
    specs = std::move(*defaults);
    // A tree the kernel's programs follow already has its CPU time, switches, migrations and
    // faults, exactly and per process: perf's inherited software counters of the same would only
    // add their cost to every switch of the command's tasks (on a pipe ping-pong, a twentieth to
    // a sixth more per switch). By default they are left out; named with -e, they are opened.
    bool tree_exact = false;
    if (ctx.target.mode() != Mode::kSystem) {
      auto sched = ctx.sched();
      tree_exact = sched && (*sched)->follows_tree();
    }
    if (tree_exact) {
      std::erase_if(specs, [](const counters::EventSpec& e) {
        return e.name == "task-clock" || e.name == "context-switches" || e.name == "cpu-migrations" ||
               e.name == "page-faults" || e.name == "minor-faults" || e.name == "major-faults";
      });
    }
  }
  counters::CountersTarget target;
  if (ctx.target.mode() == Mode::kRun) target = {ctx.target.roots(), /*enable_on_exec=*/true};
  if (ctx.target.mode() == Mode::kAttach) target = {ctx.target.threads(), false};
  if (ctx.target.mode() == Mode::kCgroup) target = {ctx.target.threads(), false, ctx.target.cgroup_dir()};
  auto src = counters::make_counters_source(specs, target);
  if (!src) return src.error();
  for (Unavailable& u : (*src)->unsupported()) {
    u.detail = !ctx.events.empty();  // events asked for by name say why; the default set is named
    ctx.notes.push_back(std::move(u));
  }
  ctx.counts_energy = (*src)->counts_energy();
  return std::unique_ptr<Source>(std::move(*src));
}

// Energy comes from the power PMU when there is one (with the other counters), else powercap.
Made make_energy(SourceContext& ctx) {
  if (ctx.counts_energy) return std::unique_ptr<Source>();
  auto src = make_powercap_source(FsRoots{});
  if (!src) return make_error(src.error().code, src.error().message + ", and no power PMU event counts");
  return src;
}

Made make_scheduler(SourceContext& ctx) {
  auto sched = ctx.sched();
  if (!sched) return sched.error();
  if (ctx.target.mode() != Mode::kSystem && !(*sched)->follows_tree()) {
    ctx.notes.push_back({"scheduler.tree", "the tree's wakeups and run-queue latency: following a tree needs the "
                                           "typed (tp_btf) programs", true});
  }
  return std::unique_ptr<Source>(make_scheduler_source(*sched, ctx.config.scheduler.hist_unit_ns));
}

Made make_block(SourceContext& ctx) {
  bool follow = ctx.target.mode() != Mode::kSystem;
  int members = ctx.members_fd();
  BpfLoadOptions target{
      .track_tree = follow && members >= 0, .members_fd = members, .hist_unit_ns = ctx.config.block_io.hist_unit_ns};
  auto block = make_block_source(target);
  if (block && follow && !target.track_tree) {
    ctx.notes.push_back({"block_io.tree", "the tree's bios: following a tree needs the typed (tp_btf) programs", true});
  }
  return up(std::move(block));
}

// Stacks (--stacks): the tree's threads (run, attach, --cgroup), or every task.
Made make_stacks(SourceContext& ctx) {
  bool follow = ctx.target.mode() != Mode::kSystem;
  BpfLoadOptions target{.track_tree = follow,
                        .members_fd = ctx.members_fd(),
                        .switch_clock_fd = ctx.switch_clock_fd(),
                        .switch_chain_fd = ctx.switch_chain_fd()};
  if (follow && target.members_fd < 0) {
    return make_error(Errc::kUnavailable, "following the target tree's stacks needs the scheduler's eBPF programs (tp_btf)");
  }
  return up(StackSource::create(ctx.config.stacks, target));
}

// Application probes: the --probe functions, and the target's request annotations (USDT
// perf_monitor:request_begin/end, and the thread context's perf_monitor:context_thread) when its
// executable has them.
Made make_probes(SourceContext& ctx) {
  // The command's executable, or one it names for a launcher to run (taskset, env, sh -c ...).
  std::vector<std::string> exes = ctx.target.executables();
  std::vector<ProbeTarget::Usdt> usdt;
  for (const std::string& exe : exes) {
    if (auto names = probes::usdt_probes(exe, "perf_monitor"); !names.empty()) usdt.push_back({exe, std::move(names)});
  }
  // OpenTelemetry thread context (OTEP 4947): where one of them or a library it loads at start
  // exports otel_thread_ctx_v1 (PERF_MONITOR_OTEL=0 turns it off, =1 on for any target).
  const char* otel_env = std::getenv("PERF_MONITOR_OTEL");
  bool otel = ctx.target.mode() != Mode::kSystem &&
              (otel_env != nullptr ? std::string_view(otel_env) == "1"
                                   : std::any_of(exes.begin(), exes.end(), [](const std::string& e) { return otel::may_publish(e); }));
  if (ctx.config.probes.empty() && usdt.empty() && !otel) return std::unique_ptr<Source>();
  BpfLoadOptions tree{.track_tree = ctx.target.mode() != Mode::kSystem, .members_fd = ctx.members_fd()};
  if (tree.track_tree && tree.members_fd < 0) {
    if (ctx.config.probes.empty() && usdt.empty()) return std::unique_ptr<Source>();
    return make_error(Errc::kUnavailable, "following the target tree needs the scheduler's eBPF programs (tp_btf)");
  }
  ProbeTarget target{tree, {}, std::move(usdt), otel};
  if (auto sched = ctx.sched(); sched && (*sched)->btf()) {
    target.runq_stamps_fd = (*sched)->runq_stamps_fd();
    target.tree.switch_clock_fd = (*sched)->switch_clock_fd();
    target.tree.switch_chain_fd = (*sched)->switch_chain_fd();
  }
  for (const ProbeSpec& p : ctx.config.probes) {
    auto r = probes::resolve_probe(p);  // checked at start-up; a binary replaced since fails here
    if (!r) return r.error();
    target.probes.push_back(std::move(*r));
  }
  return up(make_probe_source(target));
}

Result<std::string> check_tree(SourceContext& /*ctx*/) {
  auto sched = SchedObject::load({.track_tree = true, .count_system = false});
  if (sched && (*sched)->follows_tree()) return std::string("exact: kernel per-task accounting (eBPF)");
  return "sampled from /proc: exact kernel accounting unavailable (" +
         (sched ? std::string("no tp_btf") : sched.error().message) + ")";
}

Result<std::string> check_probes(SourceContext& /*ctx*/) {
  auto probe = make_probe_source({});  // loads and attaches no function: whether it could
  if (!probe) return probe.error();
  return std::string("uprobes and USDT can be attached");
}

// Who is using the machine: live mode, where it is on (--top N, N > 0). From every task's kernel
// counters (eBPF) where the scheduler programs load, else from /proc as top reads it (a normal
// user: the record's note says what that leaves out).
Made make_top(SourceContext& ctx) {
  if (ctx.target.mode() != Mode::kSystem) return std::unique_ptr<Source>();
  const Config::Top& c = ctx.config.top;
  auto from_proc = [&](const std::string& why) -> Made {
    ProcTopOptions p;
    p.count = c.view ? 0 : c.count;
    p.sort = c.sort;
    p.cgroup_depth = c.cgroup_depth;
    p.threads = c.threads || c.view;
    p.why = ::geteuid() != 0 ? "not root" : "eBPF unavailable (" + why + ")";
    return up(ProcTopSource::create(std::move(p)));
  };
  auto sched = ctx.sched();
  if (!sched) return from_proc(sched.error().message);
  TopOptions o;
  o.count = c.view ? 0 : c.count;  // the view sorts and cuts every row itself
  o.sort = c.sort;
  o.cgroup_depth = c.cgroup_depth;
  o.threads = c.threads || c.view;
  o.max_series = c.max_series;
  o.hist_unit_ns = ctx.config.scheduler.hist_unit_ns;  // the kernel side buckets in it (SchedObject::load)
  if (!c.prometheus_processes.empty()) o.process_groups.emplace(c.prometheus_processes);
  auto top = TopSource::create(*sched, std::move(o));
  if (!top) return from_proc(top.error().message);
  return up(std::move(top));
}

const SourceEntry kSources[] = {
    {.name = "process_tree",
     .what = "family process_tree (run/attach): CPU, on-CPU/run-queue/blocked time, faults, I/O, switches, memory of "
             "the whole tree: exact from the kernel's per-task accounting (eBPF), else sampled from /proc",
     .section = "process_tree",
     .rhythm = Rhythm::kTree,
     .enabled = always,
     .make = make_tree,
     .check = check_tree},
    {.name = "cpu",
     .what = "families cpu, sched: CPU time by mode per CPU, switches, forks, load (/proc/stat, /proc/loadavg)",
     .section = "file_poll",
     .rhythm = Rhythm::kInterval,
     .enabled = [](const Config& c) { return c.file_poll.cpu; },
     .make = [](SourceContext& /*ctx*/) { return make_cpu_source(FsRoots{}); }},
    {.name = "memory",
     .what = "family memory: used/cached/anon/swap, faults, swapping (/proc/meminfo, /proc/vmstat)",
     .section = "file_poll",
     .rhythm = Rhythm::kInterval,
     .enabled = [](const Config& c) { return c.file_poll.memory; },
     .make = [](SourceContext& /*ctx*/) { return make_memory_source(FsRoots{}); }},
    {.name = "pressure",
     .what = "family pressure: stall information for cpu, io, memory (/proc/pressure)",
     .section = "file_poll",
     .rhythm = Rhythm::kInterval,
     .enabled = [](const Config& c) { return c.file_poll.pressure; },
     .make = [](SourceContext& /*ctx*/) { return make_pressure_source(FsRoots{}); }},
    {.name = "numa",
     .what = "family numa: memory per NUMA node (/sys/devices/system/node)",
     .section = "file_poll",
     .rhythm = Rhythm::kFilePoll,
     .enabled = [](const Config& c) { return c.file_poll.numa; },
     .make = [](SourceContext& /*ctx*/) { return make_numa_source(FsRoots{}); }},
    {.name = "thermal",
     .what = "family thermal: zones and trip points (/sys/class/thermal)",
     .section = "file_poll",
     .rhythm = Rhythm::kFilePoll,
     .enabled = [](const Config& c) { return c.file_poll.thermal; },
     .make = [](SourceContext& /*ctx*/) { return make_thermal_source(FsRoots{}); }},
    {.name = "pmc",
     .what = "family pmc: hardware, software and energy counters (perf_event_open), system-wide or for the tree",
     .section = "pmc",
     .rhythm = Rhythm::kCounters,
     .enabled = [](const Config& c) { return c.pmc.enabled; },
     .make = make_counters},
    {.name = "energy",
     .what = "family energy: RAPL zones from /sys/class/powercap, where no power PMU counts energy",
     .rhythm = Rhythm::kInterval,
     .enabled = always,
     .make = make_energy,
     .after = "pmc"},  // SourceContext::counts_energy
    {.name = "scheduler",
     .what = "family scheduler (eBPF): switches, wakeups, run-queue latency; for a tree its wakeups and run-queue "
             "latency",
     .section = "scheduler",
     .rhythm = Rhythm::kInterval,
     .enabled = [](const Config& c) { return c.scheduler.enabled; },
     .make = make_scheduler},
    {.name = "block_io",
     .what = "family block_io (eBPF): bio bytes, request latency and queue depth per device; a tree's bytes",
     .section = "block_io",
     .rhythm = Rhythm::kInterval,
     .enabled = [](const Config& c) { return c.block_io.enabled; },
     .make = make_block},
    {.name = "top",
     .what = "the busiest processes and cgroups per interval (live mode): CPU, run-queue wait, blocked time, I/O, "
             "faults, switches, RSS, from every task's kernel counters (eBPF); families cgroup and process_group",
     .section = "top",
     .rhythm = Rhythm::kInterval,
     .enabled = [](const Config& c) { return c.top.count > 0; },
     .make = make_top},
    {.name = "probe",
     .what = "family probe (eBPF uprobes, USDT): --probe BINARY:FUNCTION[:argN]; requests marked with "
             "perf-monitor/annotate.h",
     .section = "probes",
     .rhythm = Rhythm::kInterval,
     .enabled = always,
     .make = make_probes,
     .check = check_probes},
    {.name = "stacks",
     .what = "--stacks: where the target ran (on-CPU samples, software cpu-clock) and where it waited (off-CPU time "
             "per stack, every switch), kernel and user stacks unwound with DWARF CFI (eBPF, libdw)",
     .rhythm = Rhythm::kInterval,
     .enabled = [](const Config& c) { return c.stacks.any(); },
     .make = make_stacks},
};

}  // namespace

std::span<const SourceEntry> source_registry() { return kSources; }

}  // namespace pm
