// SPDX-License-Identifier: Apache-2.0
// OpenTelemetry thread context (OTEP 4947) on perf-monitor's side. An SDK publishes the running
// span of each thread through the TLS variable otel_thread_ctx_v1 (exported in .dynsym): a
// pointer to a record of trace ID, span ID, a valid flag, trace flags and attributes. The
// kernel programs read it at each switch out and bio of a thread (probe.bpf.c); here perf-monitor
// finds where each process keeps the variable (Locator) and adds the kernel's stretches up per
// span (Join). The spans it hands on are children of the application's own: same trace ID, the
// application's span as parent.
#pragma once

#include <linux/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/span.h"
#include "probe.h"

namespace pm::otel {

inline constexpr const char* kSymbol = "otel_thread_ctx_v1";

// Where a process's variable is: pm_otel_tls's mode, off and modid.
struct Tls {
  uint32_t mode = 0;  // PM_OTEL_STATIC, PM_OTEL_DTV
  int64_t off = 0;
  uint64_t modid = 0;
  std::string object;  // the ELF file that defines it (for messages)
};

// Looks for the variable in the executable and libraries `pid` has mapped, and works out where a
// thread's copy is: in the executable, from its TLS segment (the first block below the thread
// pointer on x86-64); in a library loaded at start, from the slot the dynamic linker filled
// (TLSDESC, initial-exec or the older module/offset pair), read from the process. Errors:
// kNotFound where no mapped file defines it or its slot is not filled yet (look again later),
// kUnavailable where it cannot be read (dynamic TLS of a library loaded late, another CPU).
Result<Tls> locate(int pid);

// Whether `exe`, or a library it needs (found as the dynamic linker would: its RPATH/RUNPATH,
// LD_LIBRARY_PATH, the usual directories; at most 64 files), exports the variable; for a running
// process (attach: /proc/PID/exe), whether a file it has mapped does.
bool may_publish(const std::string& exe);

// The kernel's stretches and bios of threads in a span, added up per span: a span is handed on
// once no thread has it and nothing came for it for kIdleNs (it may be entered again later, by
// another thread: that is a second span of the same IDs), or at the end.
class Join {
 public:
  using Out = std::function<void(const Span&)>;
  static constexpr uint64_t kIdleNs = 200'000'000;
  static constexpr uint64_t kHeldNs = 10'000'000'000;  // a thread's last context, not seen again
  static constexpr size_t kMaxOpen = 1u << 16;         // spans open at once; more are counted
  void event(const pm_otel_event& e);
  void round(uint64_t now_ns, const Out& out, WallClock::time_point wall_at_mono_zero);
  void flush(const Out& out, WallClock::time_point wall_at_mono_zero);
  [[nodiscard]] uint64_t spans() const { return spans_out_; }
  [[nodiscard]] uint64_t stretches() const { return stretches_; }
  [[nodiscard]] uint64_t dropped() const { return dropped_; }

 private:
  struct Key {
    int pid;
    std::array<uint8_t, 24> ids;  // trace ID, span ID
    bool operator<(const Key& o) const { return pid != o.pid ? pid < o.pid : ids < o.ids; }
    bool operator==(const Key& o) const { return pid == o.pid && ids == o.ids; }
  };
  struct Agg {
    uint64_t first = UINT64_MAX, last = 0, on_cpu = 0, runq = 0, blocked[PM_BLOCK_REASONS] = {};
    uint64_t voluntary = 0, involuntary = 0, bio_read = 0, bio_write = 0, faults = 0, stretches = 0;
    uint8_t flags = 0;
    int first_tid = 0;
    uint32_t holders = 0;  // threads whose last switch out had it
    std::vector<int> tids;
  };
  Agg* find(int pid, int tid, const pm_otel_ctx& c, uint64_t at);
  void hold(int tid, int pid, const pm_otel_ctx& c);
  void emit(const Key& k, Agg& a, const Out& out, WallClock::time_point wall_at_mono_zero);

  std::map<Key, Agg> open_;
  std::unordered_map<int, Key> holding_;  // tid -> the span it left the CPU in
  uint64_t spans_out_ = 0, stretches_ = 0, dropped_ = 0;
};

}  // namespace pm::otel
