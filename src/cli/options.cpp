// SPDX-License-Identifier: Apache-2.0
#include "cli/options.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <regex>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/duration.h"
#include "core/output.h"
#include "core/listen_address.h"
#include "core/text.h"
#include "core/version.h"
#include "sinks/http_client.h"
#include "sinks/otlp.h"
#include "sinks/sink.h"
#include "sources/counters/event_catalogue.h"
#include "sources/probes/symbols.h"

namespace pm {
namespace {

constexpr const char* kExamples = R"(
Examples:
  perf-monitor                              live system-wide monitor, one block per second
  perf-monitor --interval 5s --duration 1m  a block every 5 s for one minute, then a summary
  perf-monitor run -- make -j2              profile a build's whole process tree (the report
                                            on standard error: make's output is left alone)
  perf-monitor run --format json -o out.jsonl -- ./app --flag
                                            JSON Lines, one object per interval and a summary
  perf-monitor attach --pid 1234            follow a running process tree until it exits
  perf-monitor list                         which sources work on this host, and why not
  perf-monitor top                          who uses the machine: processes, cgroups, threads
                                            (interactive on a terminal, keys: see top --help)
  perf-monitor report out.jsonl             a self-contained HTML report of a JSON recording
  perf-monitor report --compare a*.jsonl -- b*.jsonl
                                            did b get faster or slower than a, beyond the noise?
  perf-monitor --config perf-monitor.toml   settings from a file; flags override it
  perf-monitor run --probe ./shop:process_request:arg1 -- ./shop
                                            each call of process_request: latency, and what
                                            the kernel did to it; its first argument is the
                                            request ID (the slowest requests are listed)
  perf-monitor run --probe 'app:shop::Cart::add(int)' --probe libc.so.6:malloc -- ./app
                                            a C++ overload by its parameters; a library function
  perf-monitor run --stacks -- ./app        where ./app ran and where it waited: the top stacks
  perf-monitor run --stacks-out cpu.folded --off-stacks-out off.pb.gz -- ./app
                                            flame graph input, and a pprof file (go tool pprof)
  perf-monitor --prometheus 9464            also serve http://127.0.0.1:9464/metrics to Prometheus
  perf-monitor --prometheus 0.0.0.0:9464 --output /dev/null
                                            serve on every interface (for a fleet), no text output

Requests an application marks with PERF_MONITOR_REQUEST_BEGIN/END (include/perf-monitor/
annotate.h) are followed by default in run and attach; so are the polls of an async server that
publishes thread context (perf_monitor_poll_begin/end: no trap per request, requests followed
across worker threads, their time between polls reported as pending), and the spans of an
application whose OpenTelemetry SDK publishes thread context (OTEP 4947: otel_thread_ctx_v1),
with the application's trace and span IDs.

Exit status: the command's own in `run` (128+N when killed by signal N), 127 when it cannot
be found, 126 when it cannot be executed, 2 for usage errors, 1 for other failures.
)";

constexpr const char* kTopKeys = R"(
On a terminal (standard input and output), a full-screen view refreshed every interval:
  P R B I F M     sort by CPU, run-queue wait, blocked time, I/O, page faults, memory
  p g H            list processes, cgroups, threads
  t                the processes as a tree (children under their parents)
  c                the command line (COMMAND) or the name (COMM)
  Enter (e, Right) a cgroup's processes, a process's threads; Left or Backspace: back
  /                filter by name or PID (Enter keeps it, Esc clears it)
  Up Down PgUp PgDn Home End   move the selection
  k                send the selected process a signal (asks which, TERM by default; y/n)
  r                renice the selected process (asks the value); k and r: one's own
                   processes unless root
  space            pause          h ?   help          q Ctrl-C   quit
Shares (CPU% RUNQ% BLK% ...) are of one CPU: a process sums its threads, a cgroup its
processes, so theirs reach 100 times the CPUs. Without root (or eBPF) the lists come from
/proc: blocked time and run-queue latency are n/a, one line says so.
Elsewhere (a pipe, a file, --format json) the lists are printed once per interval, with
the command line as COMMAND (JSON: "command", "user", "state").

Examples:
  perf-monitor top                          the interactive view
  perf-monitor top --interval 2s            refreshed every 2 seconds
  perf-monitor top --duration 10s | less    text: the system block and the tables, 10 times
)";

// Every flag's value must say something: `--duration ''` is a mistake (an unset variable in a
// script, say), never "no value".
const CLI::Validator kNonEmpty(
    [](std::string& v) { return v.empty() ? std::string("an empty value is not allowed") : std::string(); }, "", "");

// A whole number from lo to hi, with a message in words ("--top: wants a whole number from 0
// to 64, not '-1'") instead of the command-line library's range in floating point.
CLI::Validator whole_number(long long lo, long long hi, const std::string& what = "a whole number") {
  return CLI::Validator(
      [=](std::string& v) {
        auto n = parse_u64(v.starts_with("-") ? std::string_view() : std::string_view(v));
        bool in = n && *n >= static_cast<unsigned long long>(std::max(lo, 0LL)) && *n <= static_cast<unsigned long long>(hi);
        if (in) return std::string();
        std::string range = hi == std::numeric_limits<int>::max() ? "from " + std::to_string(lo) + " up"
                                                                     : "from " + std::to_string(lo) + " to " + std::to_string(hi);
        return "wants " + what + " " + range + ", not '" + printable(v) + "'";
      },
      "", "");
}

// The closest of `names` to `typed` when it is close enough to be a typo ("" when none).
std::string closest_name(std::string_view typed, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = std::max<size_t>(2, typed.size() / 3) + 1;
  for (const std::string& n : names) {
    size_t d = edit_distance(typed, n);
    if (d < best_d || (!typed.empty() && n.starts_with(typed) && d == best_d)) {
      best = n;
      best_d = d;
    }
  }
  return best;
}

// The command-line library's "arguments were not expected" said as perf-monitor says things:
// which word is wrong, and what was probably meant (a flag of this or another subcommand, or a
// subcommand).
std::string explain_extras(const CLI::App& app, int argc, char** argv) {
  const CLI::App* here = &app;
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) subcommands.push_back(sub->get_name());
  auto flags_of = [](const CLI::App* a) {
    std::vector<std::string> out;
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
      for (const std::string& s : o->get_snames()) out.push_back("-" + s);
    }
    return out;
  };
  auto option_of = [](const CLI::App* a, std::string_view flag) -> const CLI::Option* {
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& l : o->get_lnames()) {
        if (flag == "--" + l) return o;
      }
      for (const std::string& s : o->get_snames()) {
        if (flag == "-" + s) return o;
      }
    }
    return nullptr;
  };
  bool value_next = false, seen_subcommand = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (value_next) {
      value_next = false;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      std::string flag = a.substr(0, a.find('='));
      if (const CLI::Option* o = option_of(here, flag); o != nullptr) {
        value_next = o->get_expected_min() > 0 && a.find('=') == std::string::npos;
        continue;
      }
      // A flag of another subcommand (or of live mode): say where it belongs.
      std::vector<std::string> belongs;
      if (here != &app && option_of(&app, flag) != nullptr) belongs.emplace_back("live mode");
      for (const CLI::App* sub : app.get_subcommands({})) {
        if (sub != here && option_of(sub, flag) != nullptr) belongs.push_back("`perf-monitor " + sub->get_name() + "`");
      }
      if (!belongs.empty()) {
        std::string list;
        for (size_t k = 0; k < belongs.size(); ++k) {
          list += (k == 0 ? "" : k + 1 == belongs.size() ? " and " : ", ") + belongs[k];
        }
        return printable(flag) + " does not apply to " +
               (here == &app ? std::string("live mode") : "`perf-monitor " + here->get_name() + "`") +
               ": it is a flag of " + list;
      }
      std::string msg = "unknown flag " + printable(flag);
      if (here != &app) msg += " for " + here->get_name();
      std::string near = closest_name(flag, flags_of(here));
      return msg + (near.empty() ? "" : " (did you mean " + near + "?)");
    }
    if (!seen_subcommand && here == &app) {
      if (std::find(subcommands.begin(), subcommands.end(), a) != subcommands.end()) {
        here = app.get_subcommand(a);
        seen_subcommand = true;
        continue;
      }
      std::string near = closest_name(a, subcommands);
      return "unknown subcommand '" + printable(a) + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
             "; the subcommands are run, attach, top, list and report";
    }
    return "unexpected argument '" + printable(a) + "'" +
           (here->get_name() == "run" ? ": the command to run comes after --, e.g. perf-monitor run -- make" : "");
  }
  return "";
}

// Usage errors exit 2 even where standard error cannot be written (closed, a full disk).
int usage_error(const std::string& msg) {
  say(msg + " (see 'perf-monitor --help')");
  return 2;
}

// --help and --version: CLI11 prints to std::cout; a reader that cannot take it (a full disk,
// a closed pipe) makes the exit status 1, as with any write that fails.
int printed(int status) {
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    say("cannot write to standard output");
    return 1;
  }
  return status;
}

}  // namespace

Invocation parse_command_line(int argc, char** argv) {
  Invocation inv;
  CLI::App app{"perf-monitor " PERF_MONITOR_VERSION
               " - system and process-tree performance monitor for Linux\n\n"
               "Without a subcommand: live system-wide monitor until Ctrl-C or --duration.",
               "perf-monitor"};
  app.footer(kExamples);
  app.set_version_flag("-V,--version", PERF_MONITOR_VERSION_LINE);
  app.require_subcommand(0, 1);

  std::string format, output, interval, duration, config_path, tree_interval, events, prometheus, remote_write, otlp;
  std::vector<std::string> probe_texts, remote_write_labels;
  std::string stacks_kinds, stacks_out, off_stacks_out;
  std::optional<int> stack_rate;
  std::vector<CLI::Option*> stacks_flags;  // --stacks of each subcommand: given with no value too
  std::optional<int> top_count, cgroup_depth, max_series;
  std::string top_sort, prometheus_processes, cgroup;
  bool top_threads = false;
  bool quiet = false;
  // Each subcommand takes only the flags that mean something to it; one given where it does not
  // apply is a usage error that says where it belongs (explain_extras).
  auto add_output = [&](CLI::App* a, bool own_streams) {
    a->add_option("-f,--format", format, "Output format: text (default) or json (JSON Lines)")
        ->check(kNonEmpty)
        ->check(CLI::IsMember({"text", "json"}))
        ->type_name("FORMAT");
    a->add_option("-o,--output", output,
                  std::string("Write the output to FILE instead of standard output") +
                      (own_streams ? " (here, standard error: standard output is the command's alone; -o - writes "
                                     "there)"
                                   : "") +
                      ". A file is written as .FILE.XXXXXXXX beside it and renamed to FILE at the end (a failed run "
                      "leaves FILE as it was); a symbolic link or another user's file at FILE is an error; a FIFO or "
                      "device is written directly")
        ->check(kNonEmpty)
        ->type_name("FILE");
    a->add_option("-c,--config", config_path, "TOML configuration file; flags override its settings")
        ->check(kNonEmpty)
        ->type_name("FILE");
  };
  auto add_timing = [&](CLI::App* a, bool own_streams) {
    a->add_option("-i,-I,--interval", interval,
                  own_streams ? "Also report every DURATION while the command runs, e.g. 500ms, 1s, 5s (default: "
                                "the summary only, as perf stat -I)"
                              : "Time between interval reports, e.g. 500ms, 1s, 5s (default 1s)")
        ->check(kNonEmpty)
        ->type_name("DURATION");
    a->add_option("-d,--duration", duration,
                  own_streams ? "Stop after this long (in run, the command is sent SIGTERM, like timeout(1))"
                              : "Stop after this long, e.g. 10s, 5m")
        ->check(kNonEmpty)
        ->type_name("DURATION");
    a->add_flag("-q,--quiet", quiet, "Say nothing about sources this host lacks (see `perf-monitor list`)");
  };
  auto add_sources = [&](CLI::App* a) {
    a->add_option("-e,--events", events,
                  "Counters to read, comma-separated: cycles, instructions, cache_misses, L1-dcache-load-misses, "
                  "r01c2, cpu/event=0x2e,umask=0x41/, power/energy-pkg/ ... (see `perf-monitor list`)")
        ->check(kNonEmpty)
        ->type_name("EVENTS");
    a->add_option("--tree-interval", tree_interval,
                  "How often the process tree is read (default 100ms in run, the interval in attach and --cgroup)")
        ->check(kNonEmpty)
        ->type_name("DURATION");
    a->add_option("--probe", probe_texts,
                  "Probe a function: BINARY:FUNCTION[:argN] (repeatable). FUNCTION is a C name, a C++ name "
                  "(ns::Class::method, optionally with its parameter list), a Rust path (app::handler::process_request, "
                  "with or without the crate) or a mangled name; :argN takes the request ID from integer argument N "
                  "(1-6), and probed calls inside that call carry it too")
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->check(kNonEmpty)
        ->type_name("BINARY:FUNCTION[:argN]");
    a->add_option("--prometheus", prometheus,
                  "Also serve /metrics for Prometheus at ADDR:PORT while monitoring, e.g. 9464 (127.0.0.1:9464), "
                  "0.0.0.0:9464 (every interface), [::1]:9464; alongside the text or JSON output")
        ->check(kNonEmpty)
        ->type_name("ADDR:PORT");
    a->add_option("--remote-write", remote_write,
                  "Also push every interval's series to URL with Prometheus remote write, e.g. "
                  "http://127.0.0.1:9090/api/v1/write (Prometheus with --web.enable-remote-write-receiver, "
                  "an agent, Grafana Alloy)")
        ->check(kNonEmpty)
        ->type_name("URL");
    a->add_option("--otlp", otlp,
                  "Also export every span (probed calls, requests, thread context) with OTLP/HTTP to URL/v1/traces, "
                  "e.g. http://127.0.0.1:4318 (an OpenTelemetry Collector, Jaeger, Tempo); the OTEL_EXPORTER_OTLP_* "
                  "variables are read as OpenTelemetry's SDKs read them")
        ->check(kNonEmpty)
        ->type_name("URL");
    a->add_option("--remote-write-label", remote_write_labels,
                  "With --remote-write: a label every pushed series carries (repeatable); job=perf-monitor, "
                  "instance=<host name> and, for run, run=<command>-<time> are added unless given")
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->check(kNonEmpty)
        ->type_name("NAME=VALUE");
    stacks_flags.push_back(a->add_option("--stacks", stacks_kinds,
                  "Record the target's stacks: cpu (where it ran, sampled), off (where it waited, every switch), or "
                  "cpu,off (--stacks alone: both); the summary shows the top ones, and where each slow request blocked. "
                  "Unwound with the binaries' DWARF CFI, so code without frame pointers unwinds too")
        ->expected(0, 1)
        ->type_name("cpu,off"));
    a->add_option("--stacks-out", stacks_out,
                  "Write the on-CPU stacks to FILE: folded (FlameGraph's input, samples) or, for FILE ending in .pb.gz, "
                  "pprof (go tool pprof, Parca, Pyroscope); turns on --stacks=cpu")
        ->check(kNonEmpty)
        ->type_name("FILE");
    a->add_option("--off-stacks-out", off_stacks_out,
                  "Write the off-CPU stacks to FILE: folded (microseconds, as offcputime -f) or pprof (.pb.gz); turns on "
                  "--stacks=off")
        ->check(kNonEmpty)
        ->type_name("FILE");
    a->add_option("--stack-rate", stack_rate, "On-CPU samples per second per CPU (default 99)")
        ->check(whole_number(1, 10000))
        ->type_name("HZ");
  };
  auto add_lists = [&](CLI::App* a) {
    a->add_option("--top", top_count, "The N busiest processes and cgroups per interval (default 10; 0: off)")
        ->check(whole_number(0, std::numeric_limits<int>::max()))
        ->type_name("N");
    a->add_option("--sort", top_sort, "Rank them by " + top_sort_names() + " (default cpu)")
        ->check(CLI::IsMember(top_sort_list()))
        ->type_name("KEY");
    a->add_option("--cgroup-depth", cgroup_depth, "Cgroups deeper than N count for their ancestor at depth N (default 2)")
        ->check(whole_number(0, 64))
        ->type_name("N");
    a->add_flag("--threads", top_threads, "A list of the busiest threads too (a thread's RSS is its process's)");
  };
  add_output(&app, false);
  add_timing(&app, false);
  add_sources(&app);
  add_lists(&app);
  app.add_option("--prometheus-processes", prometheus_processes,
                 "With --prometheus: series per process group for processes whose name matches REGEX")
      ->type_name("REGEX");
  app.add_option("--max-series", max_series,
                 "With --prometheus: at most N cgroup rows and N process-group rows (default 1000)")
      ->check(whole_number(1, std::numeric_limits<int>::max()))
      ->type_name("N");
  app.add_option("--cgroup", cgroup,
                 "Monitor a cgroup (v2): every process in it or below it, present and future, until Ctrl-C or "
                 "--duration, with the same summary as run (e.g. /system.slice/nginx.service)")
      ->check(kNonEmpty)
      ->type_name("PATH");

  CLI::App* run = app.add_subcommand("run", "Run CMD and monitor its whole process tree until it exits");
  add_output(run, true);
  add_timing(run, true);
  add_sources(run);
  std::vector<std::string> command;
  run->add_option("command", command, "The command and its arguments (after --)")->required()->type_name("CMD");
  run->positionals_at_end();
  run->footer(
      "Examples:\n"
      "  perf-monitor run -- make -j2                the summary on standard error when make ends\n"
      "  perf-monitor run -I 1s -- ./app             and a block every second while it runs\n"
      "  perf-monitor run --format json -o out.jsonl -- ./app --threads 4\n"
      "  perf-monitor run --probe ./shop:process_request:arg1 -- ./shop\n");

  CLI::App* attach = app.add_subcommand("attach", "Monitor an already running process tree until it exits");
  add_output(attach, true);
  add_timing(attach, true);
  add_sources(attach);
  int pid = 0;
  attach->add_option("-p,--pid", pid, "PID of the tree's root process")
      ->required()
      ->check(kNonEmpty)
      ->check(whole_number(1, std::numeric_limits<int>::max(), "a process ID,"))
      ->type_name("PID");

  CLI::App* list = app.add_subcommand("list", "Show every source and whether it is available here");
  add_output(list, false);

  CLI::App* top = app.add_subcommand(
      "top", "Show who is using the machine: processes, cgroups and threads (interactive on a terminal)");
  add_output(top, false);
  add_timing(top, false);
  add_lists(top);
  top->footer(kTopKeys);

  CLI::App* report = report::add_report_command(app, inv.report);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    inv.kind = Invocation::Kind::kDone;
    inv.exit_code = printed(app.exit(e));
    return inv;
  } catch (const CLI::CallForAllHelp& e) {
    inv.kind = Invocation::Kind::kDone;
    inv.exit_code = printed(app.exit(e));
    return inv;
  } catch (const CLI::CallForVersion& e) {
    inv.kind = Invocation::Kind::kDone;
    inv.exit_code = printed(app.exit(e));
    return inv;
  } catch (const CLI::ExtrasError& e) {
    inv.kind = Invocation::Kind::kDone;
    std::string why = explain_extras(app, argc, argv);
    inv.exit_code = usage_error(why.empty() ? std::string(e.what()) : why);
    return inv;
  } catch (const CLI::ParseError& e) {
    inv.kind = Invocation::Kind::kDone;
    inv.exit_code = usage_error(e.what());
    return inv;
  }

  if (report->parsed()) {
    inv.kind = Invocation::Kind::kReport;
    return inv;
  }

  auto fail = [&](const std::string& msg) {
    inv.kind = Invocation::Kind::kDone;
    inv.exit_code = usage_error(msg);
    return inv;
  };
  if (!config_path.empty()) {
    if (auto st = load_config_file(config_path, inv.config); !st) return fail(st.error().message);
  }
  Config& c = inv.config;
  if (!format.empty()) c.format = format == "json" ? OutputFormat::kJson : OutputFormat::kText;
  if (!output.empty()) c.output_path = output;
  if (!prometheus.empty()) {
    auto addr = parse_listen_address(prometheus);
    if (!addr) return fail("--prometheus " + addr.error().message);
    c.prometheus_listen = *addr;
  }
  if (!remote_write.empty()) {
    auto url = http::parse_url(remote_write);
    if (!url) return fail("--remote-write: " + url.error().message);
    c.remote_write = remote_write;
  }
  if (!otlp.empty()) {
    auto o = otlp_options(otlp);
    if (!o) return fail("--otlp: " + o.error().message);
    c.otlp = otlp;
  }
  bool stacks_given = std::any_of(stacks_flags.begin(), stacks_flags.end(), [](CLI::Option* o) { return o->count() > 0; });
  if (stacks_given || !stacks_out.empty() || !off_stacks_out.empty() || stack_rate) {
    std::string_view kinds = stacks_given && stacks_kinds.empty() ? "cpu,off" : std::string_view(stacks_kinds);
    while (!kinds.empty()) {
      std::string_view k = kinds.substr(0, kinds.find(','));
      kinds.remove_prefix(std::min(kinds.size(), k.size() + 1));
      if (k == "cpu") {
        c.stacks.on_cpu = true;
      } else if (k == "off") {
        c.stacks.off_cpu = true;
      } else {
        return fail("--stacks '" + printable(k) + "': not cpu, off or cpu,off");
      }
    }
    if (!stacks_out.empty()) {
      c.stacks.on_cpu = true;
      c.stacks.on_cpu_out = stacks_out;
    }
    if (!off_stacks_out.empty()) {
      c.stacks.off_cpu = true;
      c.stacks.off_cpu_out = off_stacks_out;
    }
    if (stack_rate) {
      if (!c.stacks.any()) return fail("--stack-rate needs --stacks or --stacks-out");
      c.stacks.rate_hz = *stack_rate;
    }
  }
  for (const std::string& l : remote_write_labels) {
    size_t eq = l.find('=');
    std::string name = l.substr(0, eq);
    bool ok = eq != std::string::npos && !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
              name.rfind("__", 0) != 0 &&
              name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
    if (!ok) {
      return fail("--remote-write-label '" + printable(l) +
                  "': not NAME=VALUE with a label name of [a-zA-Z_][a-zA-Z0-9_]* (not starting with __)");
    }
    if (remote_write.empty()) return fail("--remote-write-label needs --remote-write URL");
    c.remote_write_labels.emplace_back(name, l.substr(eq + 1));
  }
  auto set_duration = [&](const std::string& text, const char* flag, auto& field) -> bool {
    if (text.empty()) return true;
    auto d = parse_duration(text);
    if (!d) {
      fail(std::string(flag) + ": " + d.error().message);
      return false;
    }
    field = *d;
    return true;
  };
  if (!interval.empty()) c.intervals_asked = true;
  if (quiet) c.quiet = true;
  if (!set_duration(interval, "--interval", c.interval) || !set_duration(duration, "--duration", c.duration) ||
      !set_duration(tree_interval, "--tree-interval", c.process_tree.interval)) {
    return inv;
  }

  // Event names are parsed now, once, so a typo is a usage error before anything starts.
  counters::Catalogue catalogue;
  auto specs = !events.empty() ? catalogue.parse_list(events) : catalogue.parse_set(c.pmc.events);
  if (!specs) return fail((!events.empty() ? "--events: " : "[pmc] events: ") + specs.error().message);
  inv.events = std::move(*specs);

  if (top_count) c.top.count = *top_count;
  if (!top_sort.empty()) c.top.sort = *parse_top_sort(top_sort);
  if (cgroup_depth) c.top.cgroup_depth = *cgroup_depth;
  if (top_threads) c.top.threads = true;
  if (max_series) c.top.max_series = *max_series;
  if (!prometheus_processes.empty()) {
    try {
      std::regex check(prometheus_processes);
    } catch (const std::regex_error& e) {
      return fail("--prometheus-processes: not a regular expression: " + std::string(e.what()));
    }
    c.top.prometheus_processes = prometheus_processes;
  }

  // Probes are found now, so an unknown binary or symbol is a usage error before anything starts.
  for (const std::string& text : probe_texts) {
    auto spec = probes::parse_probe_spec(text);
    if (!spec) return fail(spec.error().message);
    c.probes.push_back(*spec);
  }
  // One probe per function: the same function named twice (by two spellings, or two paths to
  // one file) is probed once, and would otherwise be two series of one name.
  std::vector<ProbeSpec> unique;
  std::vector<probes::ResolvedProbe> places;
  for (const ProbeSpec& p : c.probes) {
    bool written_before = std::any_of(unique.begin(), unique.end(), [&](const ProbeSpec& u) {
      return u.binary == p.binary && u.function == p.function && u.arg == p.arg;
    });
    if (written_before) continue;
    auto r = probes::resolve_probe(p);
    if (!r) return fail("--probe: " + r.error().message);
    if (!r->note.empty()) say("--probe: " + r->note);
    auto same = std::find_if(places.begin(), places.end(), [&](const auto& q) { return q.same_place(*r); });
    if (same != places.end()) {
      if (same->arg != r->arg) {
        return fail(printable("--probe: " + p.binary + ":" + p.function + " is " + same->function +
                              " again, with another request ID argument: give one"));
      }
      continue;
    }
    if (places.size() == probes::kMaxProbes) {
      return fail("--probe: at most " + std::to_string(probes::kMaxProbes) + " functions can be probed at once (" +
                  std::to_string(c.probes.size()) + " given)");
    }
    places.push_back(std::move(*r));
    unique.push_back(p);
  }
  c.probes = std::move(unique);

  if (run->parsed()) {
    inv.target.mode = Mode::kRun;
    inv.target.command = command;
    c.report_on_stderr = true;
  } else if (attach->parsed()) {
    inv.target.mode = Mode::kAttach;
    inv.target.pid = pid;
    c.report_on_stderr = true;
  } else if (list->parsed()) {
    inv.kind = Invocation::Kind::kList;
  } else if (!cgroup.empty()) {
    inv.target.mode = Mode::kCgroup;
    inv.target.cgroup = cgroup;
  }
  if (top->parsed()) {
    if (c.top.count <= 0) return fail("top: the lists need rows: --top N with N > 0 (0 turns them off)");
    c.top.view = c.format == OutputFormat::kText && c.output_path.empty() && top_view_possible();
  }
  return inv;
}

}  // namespace pm
