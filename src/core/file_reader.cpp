// SPDX-License-Identifier: Apache-2.0
#include "core/file_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/fd.h"
#include "core/text.h"

namespace pm {

Result<std::string_view> FileReader::read(const char* path) {
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno(errno, path);
  return reread(fd.get(), path);
}

Result<std::string_view> FileReader::reread(int fd, const char* what) { return reread(fd, what, false); }
Result<std::string_view> FileReader::reread_record(int fd, const char* what) { return reread(fd, what, true); }

Result<std::string_view> FileReader::reread(int fd, const char* what, bool one_record) {
  size_t len = 0;
  for (;;) {
    if (len == buf_.size()) buf_.resize(buf_.size() * 2);
    ssize_t n = ::pread(fd, buf_.data() + len, buf_.size() - len, static_cast<off_t>(len));
    if (n < 0) {
      if (errno == EINTR) continue;
      // A process that exits while we read its files answers ESRCH: that is "gone", not a fault.
      return Error::from_errno(errno, what);
    }
    if (n == 0) break;
    const bool short_read = static_cast<size_t>(n) < buf_.size() - len;
    len += static_cast<size_t>(n);
    if (one_record && short_read) break;
  }
  return std::string_view(buf_.data(), len);
}

}  // namespace pm

#include <dirent.h>

#include <memory>

namespace pm {

Result<std::vector<std::string>> list_dir(const std::string& path, std::string_view prefix) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), ::closedir);
  if (!dir) return Error::from_errno(errno, path);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir.get())) {
    std::string_view n = e->d_name;
    if (n == "." || n == ".." || n.substr(0, prefix.size()) != prefix) continue;
    names.emplace_back(n);
  }
  return names;
}

std::vector<int> online_cpus() {
  std::vector<int> cpus;
  FileReader reader;
  auto text = reader.read("/sys/devices/system/cpu/online");
  if (text) {
    if (auto list = parse_cpu_list(*text)) cpus = std::move(*list);
  }
  if (cpus.empty()) {
    for (long c = 0; c < ::sysconf(_SC_NPROCESSORS_ONLN); ++c) cpus.push_back(static_cast<int>(c));
  }
  return cpus;
}

}  // namespace pm
