// SPDX-License-Identifier: Apache-2.0
// What a session watches, and its life: the whole system (live mode), a command perf-monitor
// starts (`run`) or a tree that is already running (`attach`). The target starts and ends the
// command, passes signals on, reaps, and knows how it ended; the session only asks.
//
// `run`: perf-monitor forks the command and holds it before exec until every source is
// following it (nothing it runs escapes), is its child subreaper (orphaned descendants come back
// to it, and stay in the tree), and puts it in a cgroup of its own with a watchdog, so that the
// tree never outlives a killed perf-monitor. The exec searches PATH as execvp does, but a file
// that is not an executable (a corrupt ELF, a script without #!) is an error (126), never handed
// to /bin/sh.
#pragma once

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/event_loop.h"
#include "core/run_info.h"

namespace pm {

class TreeSource;

enum class Mode { kSystem, kRun, kAttach, kCgroup };

struct TargetSpec {
  Mode mode = Mode::kSystem;
  std::vector<std::string> command;  // run
  int pid = 0;                       // attach
  std::string cgroup;                // --cgroup: a v2 cgroup (a path in the hierarchy, or its directory)
};

// "system", "run", "attach" or "cgroup".
const char* mode_name(Mode mode);

// Exit statuses besides the command's own.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

class Target {
 public:
  // run: forks the command, held; attach: finds the tree in /proc (no such PID: kNotFound).
  static Result<std::unique_ptr<Target>> create(const TargetSpec& spec);
  ~Target();
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  [[nodiscard]] Mode mode() const { return spec_.mode; }
  // What the sources follow: the processes now (run: the held command; attach: the tree), their
  // threads (attach), whether counting starts at exec (run), and the executable (USDT probes).
  [[nodiscard]] const std::vector<int>& roots() const { return roots_; }
  [[nodiscard]] std::vector<int> threads() const;
  [[nodiscard]] std::string executable() const;
  // The executables the target may run, for its request annotations and thread context: the
  // command's own (executable()) first, then (run) those its arguments name, as a launcher
  // passes them on: `taskset -c 0 ./server`, `env A=1 server`, `sh -c './server --port 80'`.
  // Regular files with execute permission only; at most kMaxNamedExecutables.
  [[nodiscard]] std::vector<std::string> executables() const;
  static constexpr size_t kMaxNamedExecutables = 8;
  // --cgroup: its directory; its id in the v2 hierarchy, also run's own cgroup's (the kernel
  // follows its tasks, also those that join later; 0 when there is none).
  [[nodiscard]] const std::string& cgroup_dir() const { return cgroup_dir_; }
  [[nodiscard]] uint64_t cgroup_id() const { return cgroup_id_; }
  // The tree's source (the session owns it), for signals and reaping.
  void follow(TreeSource* tree) { tree_ = tree; }
  // Processes found after the first look (attach: forked while the sources opened).
  [[nodiscard]] std::vector<int> rediscover();

  // Lets the command exec (run) or watches the root's end (attach). `ended` is called once the
  // target is over (run: the command exited and was reaped; attach: the root exited). An error
  // when the command could not be executed (its exit status: exit_code()).
  Status start(EventLoop& loop, std::function<void()> ended);
  // SIGCHLD: reaps perf-monitor's children (the command, and orphans of its tree).
  void reap();
  // A signal meant to end perf-monitor (SIGINT, SIGTERM, SIGHUP, SIGQUIT). `from_user`: sent to
  // perf-monitor alone (kill), not by the terminal to the whole foreground group. Returns true
  // when monitoring must end now: always but in `run`, where the first one goes to the command
  // and monitoring ends with it; a second one kills the command's whole tree.
  bool on_terminate(int sig, bool from_user);
  // Any other signal (SIGUSR1, ...): passed on to the command in `run`, else ignored.
  void on_other_signal(int sig);
  // --duration in `run`: ends the command as timeout(1) does (SIGTERM, SIGCONT for a stopped
  // one), and kills its tree if it is still there `grace` later.
  void on_duration(EventLoop& loop, Duration grace);
  [[nodiscard]] bool running() const;

  // At the end, before the last reading: waits for the tree's accounting to settle, and cleans up
  // (the command's leftovers leave its cgroup, the watchdog goes).
  void finish();
  // What the summary says of the target, and perf-monitor's exit status.
  void describe(RunInfo& info) const;
  [[nodiscard]] std::optional<int> exit_code() const { return exit_code_; }
  // An extra line for the summary's unavailable list (why the tree may outlive a killed
  // perf-monitor), empty when none.
  [[nodiscard]] const std::string& note() const { return note_; }

  struct Run;

 private:
  explicit Target(TargetSpec spec);
  void signal_tree(int sig);
  void kill_tree();

  TargetSpec spec_;
  std::vector<int> roots_;
  TreeSource* tree_ = nullptr;
  std::unique_ptr<Run> run_;  // run: the held child, its cgroup
  UniqueFd pidfd_;            // attach: readable when the root exits
  std::string cgroup_dir_;
  uint64_t cgroup_id_ = 0;
  int root_ = 0;
  bool root_exited_ = false;
  int terminations_ = 0;      // terminating signals received
  bool duration_expired_ = false;
  std::optional<int> exit_code_, signal_;
  std::string end_reason_;
  std::string note_;
  std::function<void()> ended_;
};

// The signals a session reads (by signalfd): blocked from the very start of main, so one that
// arrives before the session is ready waits for it instead of ending perf-monitor unreported.
const std::vector<int>& session_signals();
void block_session_signals();
void unblock_session_signals();
// Whether sig was ignored (SIG_IGN) when perf-monitor started: blocked, it is read all the same.
bool ignored_when_started(int sig);

}  // namespace pm
