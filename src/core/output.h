// SPDX-License-Identifier: Apache-2.0
// Where perf-monitor writes: its report (standard output or --output FILE) and its one-line
// messages (standard error). Every write of the report is checked: a full disk, a closed pipe
// (`| head`), a closed descriptor is recorded once, and the session ends with an error instead
// of writing into the void. Messages never fail loudly: an unwritable stderr loses them, never
// the process (no exception, no SIGPIPE: perf-monitor ignores it).
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "core/fd.h"

namespace pm {

class Output {
 public:
  // "" is standard output. A FIFO nobody reads, a directory, a file that cannot be created: an
  // error (Errc::kInvalidArgument: a usage error) that says which.
  static Result<Output> open(const std::string& path);
  // Writes to an fd someone else owns (tests: a tmpfile).
  static Output to_fd(int fd, std::string name) { return Output(fd, UniqueFd(), std::move(name)); }

  // Writes all of s, or records why it could not (then every later write is dropped).
  bool write(std::string_view s);
  [[nodiscard]] bool failed() const { return !error_.empty(); }
  // "writing the report to standard output: Broken pipe", say.
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  Output(int fd, UniqueFd owned, std::string name) : fd_(fd), owned_(std::move(owned)), name_(std::move(name)) {}
  int fd_;
  UniqueFd owned_;
  std::string name_;
  std::string error_;
};

// "perf-monitor: MSG" and a newline on standard error, in one write; never throws.
void say(std::string_view msg);

// Makes sure descriptors 0, 1 and 2 are open (on /dev/null where they were closed), so that no
// file perf-monitor opens later takes their number and receives its report by accident. Returns
// whether standard output was open.
bool guard_standard_fds();

}  // namespace pm
