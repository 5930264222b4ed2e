// SPDX-License-Identifier: Apache-2.0
// Who is using the machine without eBPF (a normal user, or a host where the scheduler programs
// cannot load): the top lists from /proc, as top and htop read it. Per process /proc/PID/stat
// (CPU time by mode, state, faults, threads, start time), schedstat (run-queue wait), status
// (user, context switches), io where readable, statm (RSS), cmdline and cgroup; per thread the
// same files under /proc/PID/task/TID. What /proc cannot give (blocked time, run-queue latency
// per cgroup) is n/a, and the record's note says why in one line. Deltas are per (PID, start
// time): a reused PID is a new process, never a negative figure. A process that starts and ends
// between two readings is not seen (the note says so too).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/file_reader.h"
#include "core/source.h"
#include "core/top.h"

namespace pm {

// What the top lists show of a task besides its figures: state, nice, user, command line, read
// from /proc. The eBPF source asks it for what its task records lack.
class ProcDetails {
 public:
  explicit ProcDetails(std::string proc = "/proc") : proc_(std::move(proc)) {}
  // A live row's state, nice, user and command (tid 0: the process's). `start`: its identity
  // with the PID (any clock), so a reused PID's command is read anew. A task gone meanwhile
  // keeps what it had and is shown as ended (X), as is one on its way out. A state already set
  // is kept (and stat not read).
  void fill(TopProcess& row, uint64_t start, bool with_command = true);
  // The uid's name from the user database, else the number (raw: sanitized where shown).
  const std::string& user_name(uint32_t uid);
  // The command line of process `pid` (cached per identity; read again when its comm changes,
  // an exec). Kernel threads: "[comm]", as top shows them.
  const std::string& command(int pid, uint64_t start, const std::string& comm, bool kernel);
  // Forgets the commands not asked for since the reading before.
  void next_reading();

 private:
  struct Command {
    std::string comm, text;
    bool used = true;
  };
  std::string proc_;
  FileReader reader_;
  std::map<std::pair<int, uint64_t>, Command> commands_;
  std::unordered_map<uint32_t, std::string> users_;
};

struct ProcTopOptions {
  int count = 10;  // rows per list; <= 0: every row
  TopSort sort = TopSort::kCpu;
  int cgroup_depth = 2;
  bool threads = false;
  std::string why;  // why not from eBPF: the note's start ("not root", ...)
  std::string proc = "/proc";
};

class ProcTopSource final : public Source {
 public:
  static Result<std::unique_ptr<ProcTopSource>> create(ProcTopOptions options);
  ~ProcTopSource() override;
  [[nodiscard]] std::string_view name() const override { return "top"; }
  void collect(Samples& out) override;
  void annotate(IntervalRecord& rec) override;

  struct State;
  explicit ProcTopSource(ProcTopOptions options);

 private:
  ProcTopOptions opts_;
  std::unique_ptr<State> state_;
};

// The note of the /proc lists: "not root: per-task figures from /proc (...)".
std::string proc_top_note(const std::string& why);

}  // namespace pm
