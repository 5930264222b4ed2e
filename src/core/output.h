// SPDX-License-Identifier: Apache-2.0
// Where perf-monitor writes: its report (standard output or --output FILE) and its one-line
// messages (standard error). Every write of the report is checked: a full disk, a closed pipe
// (`| head`), a closed descriptor is recorded once, and the session ends with an error instead
// of writing into the void. Messages never fail loudly: an unwritable stderr loses them, never
// the process (no exception, no SIGPIPE: perf-monitor ignores it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/fd.h"
#include "core/safe_file.h"

namespace pm {

class Output {
 public:
  // "" is standard output, or standard error with `on_stderr` (run and attach: the command's
  // standard output is left to it); "-" is standard output. A file is opened as OutputFile does (core/safe_file.h): a regular
  // file is written beside it and put in place by commit(). A FIFO nobody reads, a directory, a
  // symbolic link planted by someone, another user's file, a file that cannot be created: an
  // error (Errc::kInvalidArgument: a usage error) that says which.
  static Result<Output> open(const std::string& path, bool on_stderr = false);
  // Writes to an fd someone else owns (tests: a tmpfile).
  static Output to_fd(int fd, std::string name) { return Output(fd, std::nullopt, std::move(name)); }

  // At the end of a session whose report was written whole: the file takes its place at the
  // path. Without it (a failure, an early return) the path is left as it was.
  Status commit() { return file_ ? file_->commit() : Status(); }

  // Writes all of s, or records why it could not (then every later write is dropped).
  bool write(std::string_view s);
  [[nodiscard]] bool failed() const { return !error_.empty(); }
  // "writing the report to standard output: Broken pipe", say.
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  Output(int fd, std::optional<OutputFile> file, std::string name)
      : fd_(fd), file_(std::move(file)), name_(std::move(name)) {}
  int fd_;
  std::optional<OutputFile> file_;
  std::string name_;
  std::string error_;
};

// "perf-monitor: MSG" and a newline on standard error, in one write; never throws.
void say(std::string_view msg);

// Makes sure descriptors 0, 1 and 2 are open (on /dev/null where they were closed), so that no
// file perf-monitor opens later takes their number and receives its report by accident. Returns
// whether standard output was open (and remembers whether standard error was, for a report
// written there).
bool guard_standard_fds();

}  // namespace pm
