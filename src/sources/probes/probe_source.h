// SPDX-License-Identifier: Apache-2.0
// Application probes (family "probe"): per probed function its calls, latency histogram and the
// kernel's side of its calls (on-CPU, run queue, blocked, switches, bio bytes, page faults);
// every finished call also as a Span. Requests marked with include/perf-monitor/annotate.h are
// followed the same way, as function "request".
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/source.h"
#include "core/span.h"
#include "sources/kernel/skeleton.h"
#include "sources/probes/symbols.h"

namespace pm {

struct ProbeTarget {
  BpfLoadOptions tree;  // system-wide when track_tree is false
  std::vector<probes::ResolvedProbe> probes;
  // Where to attach perf_monitor's USDT probes (request_begin/end, context_thread), and which
  // each binary has.
  struct Usdt {
    std::string binary;
    std::vector<std::string> probes;
  };
  std::vector<Usdt> usdt;
  bool otel = false;  // it may publish OpenTelemetry thread context (followed in a tree only)
  // The scheduler object's run-queue stamps, shared (-1: none); its clock is tree.switch_clock_fd.
  int runq_stamps_fd = -1;
  [[nodiscard]] bool has_usdt(std::string_view name) const {
    return std::any_of(usdt.begin(), usdt.end(), [name](const Usdt& u) {
      return std::find(u.probes.begin(), u.probes.end(), name) != u.probes.end();
    });
  }
};

class ProbeSource : public Source {
 public:
  struct Impl;
  explicit ProbeSource(std::unique_ptr<Impl> impl);
  ~ProbeSource() override;
  [[nodiscard]] std::string_view name() const override { return "probe"; }
  void collect(Samples& out) override;

  // Readable (epoll) when spans wait, or when the threads' context records are due to be read;
  // drain() hands at most `bound` spans to the handler, so a storm of calls cannot hold the
  // event loop.
  [[nodiscard]] int ring_fd() const;
  void drain(size_t bound);
  void on_span(std::function<void(const Span&)> handler) override;
  [[nodiscard]] int wake_fd() const override;
  void on_wake() override;
  // How often the threads' context records are read: a log of 4,096 polls (annotate.h's
  // default) holds 40 ms of a thread that finishes 100,000 a second.
  static constexpr int kContextReadMs = 10;
  void finish() override { stop(); }
  void report(EndReport& r) const override { r.slowest_requests = slowest_requests(); }
  static constexpr size_t kSpansPerWake = 4096;
  // Stops the probes taking calls in and hands on every span still in the kernel (the CPUs send
  // spans in batches): call before the last collect. They are detached when the source is
  // destroyed (taking uprobes down waits for the kernel: after the summary, not before).
  void stop();
  // The slowest spans that carry their own request ID, longest first.
  [[nodiscard]] std::vector<Span> slowest_requests() const;

 private:
  std::unique_ptr<Impl> impl_;
};

// The slowest requests kept for the run summary.
inline constexpr size_t kSlowestRequests = 5;

Result<std::unique_ptr<ProbeSource>> make_probe_source(const ProbeTarget& target);

}  // namespace pm
