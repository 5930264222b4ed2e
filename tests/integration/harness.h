// SPDX-License-Identifier: Apache-2.0
// Runs the real perf-monitor binary, as a user would, and collects what it printed.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pm::test {

struct Outcome {
  int exit_code = -1;
  // Standard output and error. The report is on standard output in live mode and `top`, on
  // standard error in `run` and `attach` (standard output is the command's), or in -o FILE.
  std::string out, err;
  std::string report;  // the one of the two the report went to (by that rule; "" with -o FILE)
  std::vector<nlohmann::json> records;  // lines of stdout, then stderr, that are JSON objects
  nlohmann::json summary;               // the record with "type": "summary", or null
  double cpu_s = 0;  // perf-monitor's CPU time, user + system, with its reaped children's (run_pm)
  [[nodiscard]] size_t intervals() const;
};

struct RunOptions {
  std::optional<std::chrono::milliseconds> sigint_after;  // send SIGINT to perf-monitor then
  std::chrono::seconds timeout{60};
  std::string binary;  // a copy of perf-monitor to run instead of the build's ("": the build's)
};

Outcome run_pm(const std::vector<std::string>& args, const RunOptions& opts = {});
// Whether perf-monitor with these arguments reports on standard error: `run` and `attach`
// without -o (the rule of the CLI, which tests hold it to).
bool reports_on_stderr(const std::vector<std::string>& args);
// Starts perf-monitor with stdout and stderr to the given files, in a process group of its own.
pid_t start_pm(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path,
               const std::string& bin = "");
// Fills o.records and o.summary from the JSON lines of o.out and o.err.
void parse_records(Outcome& o);
// A fresh scratch path prefix; whatever the test makes under it is removed when the test
// process ends.
std::string temp_base();
// A file's whole text ("" when it cannot be read).
std::string slurp(const std::string& path);
// Whether process `pid` blocks `sig` (its /proc status): perf-monitor's own code blocks the
// signals it reads before anything else runs (a preinit function, ahead of constructors and
// main), so true once its code runs; before that, a signal takes its default action.
bool blocks_signal(pid_t pid, int sig);
// Waits until the file at `path` holds `text`; false after `timeout`, or at once when
// `still_running` (if given) says the writer has ended without it.
bool wait_for_text(const std::string& path, const std::string& text, std::chrono::seconds timeout,
                   const std::function<bool()>& still_running = {});
// Reaps `pid` and returns its CPU time (user + system, with its reaped descendants'): the
// kernel's own count.
double reap_cpu_s(pid_t pid);

// perf-monitor run with `args` (a --duration among them) while /proc/stat's context switch
// count is read when monitoring begins (its header is out) and when it has ended: the kernel's
// count over a window that holds the monitored one to the polling's few milliseconds.
struct SwitchWindow {
  Outcome o;
  double proc_switches = 0;
  double wall_s = 0;
};
SwitchWindow switches_while_monitoring(const std::vector<std::string>& args);

// perf-monitor attached (`attach --pid`, then `args`) to a workload tree started just before
// (pm-workload with `workload_args`), with the truth to hold it to: the tree's CPU time from the
// kernel at reap, and the most of it that can have passed before perf-monitor attached (every
// CPU busy from the fork until monitoring began: start-up is slow in a sanitizer build).
struct AttachedRun {
  Outcome o;
  double tree_cpu_s = 0;
  double before_attach_max_s = 0;
};
AttachedRun attach_to_workload(const std::vector<std::string>& workload_args, const std::vector<std::string>& args);

// perf-monitor running in the background, for tests that talk to it while it runs. Killed
// (SIGKILL) if still running when destroyed.
class RunningPm {
 public:
  explicit RunningPm(const std::vector<std::string>& args);
  ~RunningPm();
  RunningPm(const RunningPm&) = delete;
  RunningPm& operator=(const RunningPm&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }
  bool running();  // false once it exited (then reaped)
  [[nodiscard]] std::string out_so_far() const;
  [[nodiscard]] std::string err_so_far() const;
  // What it reported so far: its standard error in `run` and `attach`, else its standard output.
  [[nodiscard]] std::string report_so_far() const { return on_stderr_ ? err_so_far() : out_so_far(); }
  // Waits until its output holds `text` (JSON: "\"header\"" once monitoring has begun, its
  // sources open: start-up takes longer in a sanitizer build on a busy machine).
  bool wait_for_output(const std::string& text, std::chrono::seconds timeout = std::chrono::seconds(30));
  // The same for its standard error, whatever the mode.
  bool wait_for_err(const std::string& text, std::chrono::seconds timeout = std::chrono::seconds(30));
  // Sends sig (unless it already exited), waits for the end, and collects what it printed.
  Outcome stop(int sig = SIGINT, std::chrono::seconds timeout = std::chrono::seconds(30));

 private:
  std::string base_;
  pid_t pid_ = -1;
  int exit_status_ = 0;
  bool on_stderr_ = false;
};

// bpftrace running a script in the background (its stdout and stderr to a file), the independent
// truth some tests hold perf-monitor to. Every wait is bounded, so a slow or stuck bpftrace on a
// loaded machine fails or skips a test with a reason instead of hanging it; killed (SIGKILL) if
// still running when destroyed.
class Bpftrace {
 public:
  explicit Bpftrace(const std::string& script, const std::vector<std::pair<std::string, std::string>>& env = {});
  ~Bpftrace();
  Bpftrace(const Bpftrace&) = delete;
  Bpftrace& operator=(const Bpftrace&) = delete;
  // Waits until its probes are in (its BEGIN, which bpftrace runs once every probe is attached,
  // prints a mark; "Attaching" comes before they are, and a loaded machine can take seconds
  // between the two); false when it ended without or `timeout` passed.
  bool attached(std::chrono::seconds timeout = std::chrono::seconds(40));
  // Sends SIGINT (its END block and maps print), waits at most `timeout`, then SIGKILL (a test
  // failure, unless `may_retry`: then ended() says so and the caller measures again); returns
  // all it printed.
  std::string stop(std::chrono::seconds timeout = std::chrono::seconds(20), bool may_retry = false);
  [[nodiscard]] bool ended() const { return ended_; }  // after stop: it ended of itself
  [[nodiscard]] std::string output() const { return slurp(out_); }

 private:
  std::string script_, out_;
  pid_t pid_ = -1;
  bool ended_ = true;
};
// "" when bpftrace and tracefs are there, else why not (a reason for GTEST_SKIP).
std::string bpftrace_missing();

// A shell command's exit status (-1: it did not exit).
int run_shell(const std::string& cmd);
// The first line a command prints ("" when none).
std::string first_line(const std::string& cmd);
// The first file matching a glob pattern, or "".
std::string first_file(const std::string& pattern);
// A tool the tests need: on PATH (or at the glob `also`), else Debian's package installed now
// (install-deps.sh lists them; a machine without them is set up here, not skipped). "" when
// that failed.
std::string find_tool(const std::string& name, const std::string& package, const std::string& also = "");

// A Rust program built once per mangling (legacy and v0) by rustc -O into the scratch
// directory, and kept there while its source and the compiler stay the same. Test processes run
// side by side (ctest -j): one builds, the others wait for it and use its files.
struct RustBuild {
  std::string rustc, legacy, v0, error;  // error: why not (rustc missing and not installable, …)
};
// `flags`: more of rustc's (`-g`), a build of their own.
RustBuild build_rust(const std::string& source, const std::string& crate, const std::string& flags = "");

// An npm package (NAME@VERSION) installed once into the scratch directory, under `dir`: its
// node_modules, or "" and why (no node, no registry). `check` is a file of the package (relative
// to node_modules) that proves the install whole.
std::string npm_modules(const std::string& package, const std::string& dir, const std::string& check, std::string& why);

// The binary under test: this build's, or the one PM_TEST_BINARY names (make test's pass under
// the sanitizers drives the sanitizer build's binary with the release build's test programs).
inline std::string binary() {
  const char* b = std::getenv("PM_TEST_BINARY");
  return b != nullptr && *b != '\0' ? b : PM_BINARY;
}
// That binary is a sanitizer build's (PM_TEST_SANITIZED=1): slower, and it holds more memory.
inline bool sanitized() {
  const char* s = std::getenv("PM_TEST_SANITIZED");
  return s != nullptr && s[0] == '1';
}
inline std::string workload() { return PM_WORKLOAD; }
// A directory on a real disk (not tmpfs), so writes reach storage and count as write_bytes.
inline std::string scratch_dir() { return PM_SCRATCH_DIR; }

inline constexpr double kMiB = 1024.0 * 1024.0;

// Lines of a text (its newlines).
inline size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }
// CPU seconds of a top row (user + system).
inline double cpu_of(const nlohmann::json& row) { return row["cpu_user_s"].get<double>() + row["cpu_system_s"].get<double>(); }

}  // namespace pm::test
