// SPDX-License-Identifier: Apache-2.0
// User stacks walked in user space from a copy of their top, as `perf record --call-graph dwarf`
// does: the thread's registers and the bytes above its sp, unwound with each binary's DWARF CFI
// (.eh_frame, .debug_frame) by libdw, so code built without frame pointers (Debian's libc, most
// -O2 code, Rust's release builds) unwinds as well as code with them. Frames are named from the
// ELF symbol tables and the .debug files libdw finds (build ID, .gnu_debuglink), C++ and Rust
// demangled, and inlined calls named from DWARF where the binary has it.
//
// A process is known by (tgid, address space): its mappings are read from /proc once, the first
// time a stack of it comes, and each mapped file is held open (through /proc/PID/map_files: the
// very file mapped, not what its path names by then), so that stacks of a process that has
// exited since are named all the same.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/fd.h"
#include "core/profile.h"

namespace pm::stacks {

// One frame as shown: the function's name (or "[unknown]", or "[MODULE+0xOFF]" without one).
using Frames = std::vector<std::string>;  // outermost first

// A thread's user state at the sample, x86-64 pt_regs layout (r15 … ss).
struct UserState {
  std::span<const uint64_t> regs;
  uint64_t stack_start = 0;  // the address of stack[0] (its sp)
  std::span<const uint8_t> stack;
};

class Unwinder {
 public:
  Unwinder();
  ~Unwinder();
  Unwinder(const Unwinder&) = delete;
  Unwinder& operator=(const Unwinder&) = delete;

  // A process's address space: its tgid, and the kernel's mm and exec count at the sample (an mm
  // freed at exec may be reused by the next program).
  struct Space {
    uint32_t tgid = 0;
    uint64_t mm = 0, exec_id = 0;
    auto operator<=>(const Space&) const = default;
  };
  // The user frames of thread `tid` in `space`, outermost first; at most `max_frames`.
  // Empty only when nothing could be named (no registers); frames not in a known file read
  // "[unknown]".
  // `time_ns` (CLOCK_MONOTONIC) is when the sample was taken: a pc in no file mapped when the
  // mappings were read, before that time, has them read again (a library loaded since).
  Frames unwind(const Space& space, uint32_t tid, uint64_t time_ns, const UserState& state, size_t max_frames = 127) {
    return name(space, walk(space, tid, time_ns, state, false, max_frames));
  }
  // The two halves: the stack's pcs, innermost first (a return address less 1: its call); and
  // their frames, outermost first (a caller keeps the names per pc: the same pcs, the same frames).
  // `once`: the stack is named once for good (an off-CPU place): the mappings may be read again
  // for it however recently they were (else at most every 0.5 ms a process).
  std::vector<uint64_t> walk(const Space& space, uint32_t tid, uint64_t time_ns, const UserState& state,
                             bool once = false, size_t max_frames = 127);
  // `lines`, where given, gets each frame's source line (file "" where DWARF has none).
  Frames name(const Space& space, const std::vector<uint64_t>& pcs, std::vector<SourceLine>* lines = nullptr);

  // What it did: stacks unwound, and those that stopped before their outermost frame (their
  // copy ended, or no CFI covered a frame).
  [[nodiscard]] uint64_t unwound() const { return unwound_; }
  [[nodiscard]] uint64_t processes() const { return processes_seen_; }

  struct Process;

 private:
  Process* process(const Space& space, bool fresh);
  std::shared_ptr<UniqueFd> shared_file(UniqueFd fd);
  std::map<std::pair<uint64_t, uint64_t>, std::weak_ptr<UniqueFd>> open_files_;  // by device and inode
  std::map<Space, std::unique_ptr<Process>> procs_;
  uint64_t tick_ = 0;
  uint64_t unwound_ = 0;
  uint64_t processes_seen_ = 0;
};

}  // namespace pm::stacks
