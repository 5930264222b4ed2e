// SPDX-License-Identifier: Apache-2.0
#include "core/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pm {
namespace {

bool stdout_was_closed = false;
bool stderr_was_closed = false;

}  // namespace

bool guard_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int null = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null >= 0 && null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
    if (fd == 1) stdout_was_closed = true;
    if (fd == 2) stderr_was_closed = true;
  }
  return !stdout_was_closed;
}

Result<Output> Output::open(const std::string& path, bool on_stderr) {
  if (path.empty() && on_stderr) {
    Output out(STDERR_FILENO, std::nullopt, "standard error");
    if (stderr_was_closed) out.error_ = "standard error is closed: nowhere to write the report (use --output FILE)";
    return out;
  }
  if (path.empty() || path == "-") {
    Output out(STDOUT_FILENO, std::nullopt, "standard output");
    if (stdout_was_closed) out.error_ = "standard output is closed: nowhere to write the report (use --output FILE)";
    return out;
  }
  auto file = OutputFile::open(path);
  if (!file) return make_error(Errc::kInvalidArgument, "cannot write --output " + path + ": " + file.error().message);
  int fd = file->fd();
  return Output(fd, std::move(*file), path);
}

bool Output::write(std::string_view s) {
  if (failed()) return false;
  while (!s.empty()) {
    ssize_t n = ::write(fd_, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = "writing the report to " + name_ + ": " + (n < 0 ? std::strerror(errno) : "nothing written");
      return false;
    }
    s.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void say(std::string_view msg) {
  std::string line = "perf-monitor: ";
  line += msg;
  line += '\n';
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to say it
    rest.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace pm
