// SPDX-License-Identifier: Apache-2.0
// The configuration: built-in defaults, then a TOML file, then command-line flags. Every key has a
// default; an unknown key is an error that names the file, line and column.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/listen_address.h"
#include "core/top.h"
#include "core/clock.h"

namespace pm {

enum class OutputFormat { kText, kJson };

// An application probe: `--probe BINARY:FUNCTION[:argN]` or a [[probes]] table.
struct ProbeSpec {
  std::string binary;    // a path, a command on PATH, or a library name (libc.so.6)
  std::string function;  // C, C++ (demangled, optionally with parameters) or mangled name
  int arg = 0;           // 1..6: the integer argument that carries the request ID; 0: none
};

struct Config {
  // [output]
  OutputFormat format = OutputFormat::kText;
  std::string output_path;  // empty: standard output (standard error where report_on_stderr); "-": standard output
  // run and attach: the report goes to standard error unless -o says otherwise, so the
  // command's standard output is its own (as perf stat leaves it).
  bool report_on_stderr = false;
  Duration interval = std::chrono::seconds(1);
  // --interval or the file's interval was given: run and attach print intervals only then.
  bool intervals_asked = false;
  bool quiet = false;  // -q/--quiet: nothing said about what is not available here
  std::optional<Duration> duration;  // stop after this long
  // [prometheus] listen / --prometheus: serve /metrics there while monitoring (none: not served).
  // Parsed where it is written, so a mistake names the flag or the file's line.
  std::optional<ListenAddress> prometheus_listen;
  // --remote-write URL: every interval's series pushed there (Prometheus remote write 1.0), with
  // these labels besides their own (--remote-write-label NAME=VALUE; job, instance and, for
  // run, run are added where not given).
  std::string remote_write;
  // --otlp URL: spans exported with OTLP/HTTP to URL/v1/traces (also from OTEL_EXPORTER_OTLP_*).
  std::string otlp;
  std::vector<std::pair<std::string, std::string>> remote_write_labels;
  // [[probes]] / --probe.
  std::vector<ProbeSpec> probes;

  // Each source's section (its registry row names it: src/session/registry.cpp).
  struct ProcessTree {
    // How often the target's tree is walked and read. Unset: 100 ms in `run`, the output
    // interval in `attach`.
    std::optional<Duration> interval;
    // Learn of forks from the kernel's proc connector (else only by /proc walks).
    bool proc_events = true;
  } process_tree;
  // Slowly changing files (NUMA nodes, thermal zones), and which file sources run.
  struct FilePoll {
    Duration interval = std::chrono::seconds(5);
    bool cpu = true, memory = true, pressure = true, numa = true, thermal = true;
  } file_poll;
  struct Pmc {
    bool enabled = true;
    std::optional<Duration> interval;  // unset: read at every report interval
    std::vector<std::string> events;
  } pmc;
  // Unit of the latency histograms (bucket i counts latencies below 2^i units), in ns.
  struct Scheduler {
    bool enabled = true;
    uint64_t hist_unit_ns = 1000;
  } scheduler;
  struct BlockIo {
    bool enabled = true;
    uint64_t hist_unit_ns = 1000;
  } block_io;
  // Who is using the machine (live mode): the busiest processes and cgroups per interval.
  struct Top {
    int count = 10;                    // rows per list (--top N); 0: off, nothing loaded for it
    TopSort sort = TopSort::kCpu;      // --sort
    int cgroup_depth = 2;              // --cgroup-depth: deeper cgroups count for their ancestor there
    bool threads = false;              // --threads: a list of threads too
    std::string prometheus_processes;  // --prometheus-processes REGEX: per-group series for these
    int max_series = 1000;             // --max-series: cgroup and process-group rows exported at most
    // `perf-monitor top` on a terminal: the full-screen view, which sorts, filters and cuts the
    // lists itself (the top source then keeps every row, threads included).
    bool view = false;
  } top;
  // Stacks of the target (run, attach, or the system): where it ran (on-CPU samples) and where
  // it waited (off-CPU time per stack). Off unless asked for (--stacks, --stacks-out).
  struct Stacks {
    bool on_cpu = false;
    bool off_cpu = false;
    int rate_hz = 99;            // --stack-rate: on-CPU samples per second per CPU
    std::string on_cpu_out;      // --stacks-out FILE: folded, or pprof when FILE ends in .pb.gz
    std::string off_cpu_out;     // --off-stacks-out FILE
    [[nodiscard]] bool any() const { return on_cpu || off_cpu; }
  } stacks;
};

// Limits on what is handed to the TOML parser: a configuration is a few hundred bytes, and the
// parser recurses (and frees nested tables recursively) once per level of nesting.
inline constexpr size_t kMaxConfigBytes = 1 << 20;
inline constexpr size_t kMaxKeyParts = 16;     // a.b.c: parts of one dotted key or [table] header
inline constexpr size_t kMaxKeyBytes = 1024;   // one dotted key or header, quotes included
inline constexpr size_t kMaxValueNesting = 16;  // arrays and inline tables inside each other

// Checks the bounds above on TOML text without parsing it (strings and comments are skipped,
// so a dot or bracket inside them does not count). The error names origin:line:column.
Status check_toml_bounds(std::string_view text, std::string_view origin);

// The sections a configuration file may have ([output], [pmc], ..., [[probes]]), in order.
std::vector<std::string_view> config_sections();

// Applies a TOML document to `config`. `origin` names the file in error messages.
Status apply_toml(std::string_view text, std::string_view origin, Config& config);
// Reads a configuration file: a regular file of at most kMaxConfigBytes, or a pipe (`--config
// <(...)`) that delivers as much within a few seconds. A directory, a device (/dev/zero), or a
// FIFO nobody writes to is an error, never a read that does not end.
Result<std::string> read_config_text(const std::string& path);
Status load_config_file(const std::string& path, Config& config);

}  // namespace pm
