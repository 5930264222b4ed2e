// SPDX-License-Identifier: Apache-2.0
#include "sources/top/cgroup_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "core/text.h"
#include "sources/files/system_parsers.h"

namespace pm {

std::optional<double> cpu_stat_usage_s(std::string_view text) {
  size_t at = text.find("usage_usec ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 11);
  auto v = parse_u64(next_field(rest));
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * 1e-6;
}

bool CgroupFiles::open(const std::string& dir, Open& f) {
  UniqueFd d(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!d) return false;
  auto at = [&](const char* name) { return UniqueFd(::openat(d.get(), name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)); };
  f.cpu_stat = at("cpu.stat");
  f.cpu_pressure = at("cpu.pressure");
  f.io_pressure = at("io.pressure");
  f.memory_pressure = at("memory.pressure");
  return true;
}

// The fuzzed /proc/pressure parser: a cgroup's pressure files have the same lines.
std::optional<double> CgroupFiles::avg10(const UniqueFd& fd) {
  if (!fd) return std::nullopt;
  auto text = reader_.reread_record(fd.get(), "pressure");
  if (!text) return std::nullopt;
  auto p = procfs::parse_pressure(*text);
  if (!p) return std::nullopt;
  return p->some.avg10;
}

void CgroupFiles::read(const std::string& mount, std::map<std::string, TopCgroup>& rows) {
  ++readings_;
  for (auto& [path, c] : rows) {
    std::string dir = mount + (path == "/" ? "" : path);
    auto it = open_.find(path);
    bool fresh = it == open_.end();
    if (fresh) it = open_.emplace(path, Open{}).first;
    Open& f = it->second;
    if (fresh && !open(dir, f)) {
      c.removed = true;  // its tasks ended and it was removed since: no file of its own to read
      open_.erase(it);
      continue;
    }
    std::optional<double> usage;
    // false: the file was there and could not be read.
    auto read_usage = [&] {
      if (!f.cpu_stat) return true;
      auto text = reader_.reread_record(f.cpu_stat.get(), "cpu.stat");
      if (text) usage = cpu_stat_usage_s(*text);
      return text.ok();
    };
    if (!read_usage() && !fresh) {
      // A file of a removed cgroup answers ENODEV; one made again under the same path since is
      // another cgroup: its files are opened anew, and its usage is no increase of the old one's.
      f = Open{};
      if (!open(dir, f)) {
        c.removed = true;
        open_.erase(it);
        continue;
      }
      read_usage();
    }
    if (usage && f.usage && f.reading + 1 == readings_) c.cpu_stat_s = std::max(0.0, *usage - *f.usage);
    f.usage = usage;
    f.reading = readings_;
  }
  std::erase_if(open_, [&](const auto& e) { return e.second.reading != readings_; });
}

void CgroupFiles::read_pressure(std::vector<TopCgroup>& shown) {
  for (TopCgroup& c : shown) {
    auto it = open_.find(c.path);
    if (c.removed || it == open_.end()) continue;
    c.cpu_pressure_pct = avg10(it->second.cpu_pressure);
    c.io_pressure_pct = avg10(it->second.io_pressure);
    c.memory_pressure_pct = avg10(it->second.memory_pressure);
  }
}

}  // namespace pm
