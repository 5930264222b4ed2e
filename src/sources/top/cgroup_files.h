// SPDX-License-Identifier: Apache-2.0
// A cgroup row's own files, as the top lists read them: cpu.stat's usage and the pressure files'
// "some avg10". The files stay open between readings and are read again from their start (the
// kernel regenerates them), so a reading costs a pread per file, not a path lookup, an open and
// a close per file (a thousand cgroups: 4,000 of each every interval).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fd.h"
#include "core/file_reader.h"
#include "core/top.h"

namespace pm {

class CgroupFiles {
 public:
  // At most this many files stay open (a thousand cgroups' worth; the rest read by path).
  static constexpr size_t kMaxKept = 4096;

  // Every row's cpu.stat increase since the previous reading (none for a row that was not in
  // it: an increase needs the reading before, whether or not the row was shown then). A row
  // whose cgroup is gone is marked removed. The files of cgroups without a row are closed.
  void read(const std::string& mount, const std::vector<TopCgroup*>& rows);
  void read(const std::string& mount, std::vector<TopCgroup>& rows);
  // Both for a record's cgroups: the cpu.stat of the rows its lists show and of as many again
  // after them (a row that comes into the list mostly comes from there, with its reading before;
  // one from further down shows n/a for its first interval), the pressure of those shown. A
  // thousand cgroups cost no more than the twenty read (every row when the lists show every one).
  void read(const std::string& mount, TopRecord& rec);
  // The pressure files' some avg10, for the rows shown (the first N, after read() of this
  // reading): a gauge needs no history, and the kernel's pressure files cost the most to make.
  void read_pressure(const std::vector<TopCgroup*>& shown);

 private:
  struct Open {
    std::string dir;
    UniqueFd cpu_stat, cpu_pressure, io_pressure, memory_pressure;
    bool by_path = false;  // past kMaxKept or out of fds when opened: the files are read by path
    size_t kept = 0;       // of the fds above, those open
    std::optional<double> usage;  // cpu.stat's at the last reading
    uint64_t reading = 0;         // the last reading that had the row
  };
  // Opens the cgroup's files; false when its directory is gone.
  bool open(const std::string& dir, Open& f);
  // Closes its files (the count of kept ones with them); an empty entry stays.
  void forget(Open& f);
  std::optional<double> avg10(const Open& f, const UniqueFd& fd, const char* name);

  std::map<std::string, Open> open_;  // by the row's path
  FileReader reader_;
  uint64_t readings_ = 0;
  size_t kept_ = 0;  // files open, over every row
};

}  // namespace pm
