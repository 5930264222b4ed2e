// SPDX-License-Identifier: Apache-2.0
// Stacks and what they cost: the on-CPU samples and the off-CPU time of the target, per stack.
// A source fills it at the end; the sinks and the stack files print it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pm {

// Where a frame's pc lies in the source, from DWARF's line table: the file as the compiler named
// it (as hostile as any name: cleaned to printable UTF-8) and its line; line 0: not known.
struct SourceLine {
  std::string file;
  uint32_t line = 0;
  auto operator<=>(const SourceLine&) const = default;
};

struct StackProfile {
  // One stack: its frames outermost first, the thread's name first, kernel frames (suffixed
  // "_[k]", as FlameGraph marks them) last.
  struct Entry {
    std::vector<std::string> frames;
    uint64_t value = 0;  // on-CPU: samples; off-CPU: nanoseconds off the CPU
    uint64_t count = 0;  // off-CPU: switch-ins that ended such a stretch (on-CPU: = value)
    std::vector<SourceLine> lines;  // in the *_lines lists only: each frame's line (a caller's: its call)
  };
  bool on_cpu_wanted = false, off_cpu_wanted = false;
  uint64_t period_ns = 0;          // on-CPU: CPU time one sample stands for
  std::vector<Entry> on_cpu;       // most samples first
  std::vector<Entry> off_cpu;      // most time first
  // The same stacks told apart by source line too (a function sampled at two of its lines is two
  // entries here, one above), with `lines` filled: what the pprof files hold.
  std::vector<Entry> on_cpu_lines, off_cpu_lines;
  uint64_t start_unix_ns = 0;      // when profiling began
  uint64_t duration_ns = 0;
  // What was not caught: records the ring buffer had no room for (their samples, or the first
  // stretch of an off-CPU place), off-CPU time that found no place (map full), kernel stacks the
  // stack map could not hold.
  uint64_t records_lost = 0;
  uint64_t off_lost_ns = 0;
  uint64_t kernel_stacks_lost = 0;

  [[nodiscard]] uint64_t on_cpu_samples() const {
    uint64_t n = 0;
    for (const Entry& e : on_cpu) n += e.value;
    return n;
  }
  [[nodiscard]] uint64_t off_cpu_ns() const {
    uint64_t n = 0;
    for (const Entry& e : off_cpu) n += e.value;
    return n;
  }
};

}  // namespace pm
