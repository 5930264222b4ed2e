// SPDX-License-Identifier: Apache-2.0
// Reading a configuration file (core/config.h): a regular file of bounded size, or a pipe that
// delivers within a deadline; never a read that does not end.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "core/config.h"
#include "core/fd.h"

namespace pm {

namespace {

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// How long a pipe may take to deliver the whole configuration.
constexpr auto kPipeDeadline = std::chrono::seconds(2);

}  // namespace

Result<std::string> read_config_text(const std::string& path) {
  const std::string what = "cannot read config file " + path;
  struct stat st {};
  // stat before open: opening a device can have effects of its own (a tape rewinds).
  if (::stat(path.c_str(), &st) != 0) return Error::from_errno(errno, what);
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    return make_error(Errc::kInvalidArgument, what + ": it is " + file_type(st.st_mode) + ", not a file");
  }
  // Non-blocking: opening a FIFO nobody writes to does not wait for a writer.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return Error::from_errno(errno, what);
  if (::fstat(fd.get(), &st) != 0) return Error::from_errno(errno, what);
  const bool pipe = S_ISFIFO(st.st_mode);
  if (!S_ISREG(st.st_mode) && !pipe) {
    return make_error(Errc::kInvalidArgument, what + ": it is " + file_type(st.st_mode) + ", not a file");
  }
  auto too_large = [&] {
    return make_error(Errc::kInvalidArgument, what + ": larger than " + std::to_string(kMaxConfigBytes >> 20) +
                                                  " MiB: not a perf-monitor configuration");
  };
  if (!pipe && static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) return too_large();
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + kPipeDeadline;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      // A file that grows while it is read (or a pipe that does not stop) is cut off here.
      if (text.size() + static_cast<size_t>(n) > kMaxConfigBytes) return too_large();
      text.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      // A FIFO that no process has open for writing reads as at its end at once.
      if (pipe && text.empty()) {
        return make_error(Errc::kInvalidArgument, what + ": it is a FIFO or pipe that nothing was written to");
      }
      break;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return Error::from_errno(errno, what);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return make_error(Errc::kInvalidArgument, what + ": the pipe did not reach its end within " +
                                                    std::to_string(kPipeDeadline.count()) + " s");
    }
    pollfd p{fd.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
  return text;
}

Status load_config_file(const std::string& path, Config& config) {
  auto text = read_config_text(path);
  if (!text) return text.error();
  return apply_toml(*text, path, config);
}

}  // namespace pm
