// SPDX-License-Identifier: Apache-2.0
// Reads small kernel files (procfs, sysfs) into a reused buffer: one open, one or few reads, no
// allocation once the buffer has grown. A file that vanished reads as Errc::kNotFound.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace pm {

class FileReader {
 public:
  // Reads the whole file at path; the view stays valid until the next read.
  Result<std::string_view> read(const char* path);
  Result<std::string_view> read(const std::string& path) { return read(path.c_str()); }
  // Reads a file kept open, from its start again: procfs regenerates it. Saves the path lookup
  // and open/close of every pass; an fd of /proc/PID/... fails (ESRCH) once the process is gone,
  // even if its PID is reused.
  Result<std::string_view> reread(int fd, const char* what);
  // The same for a file the kernel generates as one record (single_open in procfs, a cgroup's
  // cpu.stat or pressure): one read gives all of it when it fits, so a read shorter than asked
  // is the end, and no second read makes the kernel generate the file again to say so. (Not for
  // files of many records, such as /proc/vmstat: there a read stops at a page.)
  Result<std::string_view> reread_record(int fd, const char* what);

 private:
  Result<std::string_view> reread(int fd, const char* what, bool one_record);
  std::string buf_ = std::string(4096, '\0');
};

}  // namespace pm

namespace pm {
// Names in a directory, without "." and "..", that start with `prefix`. A directory that vanished
// reads as Errc::kNotFound.
Result<std::vector<std::string>> list_dir(const std::string& path, std::string_view prefix = {});
// The CPUs that are online (/sys/devices/system/cpu/online; all configured ones if unreadable).
std::vector<int> online_cpus();
}  // namespace pm
