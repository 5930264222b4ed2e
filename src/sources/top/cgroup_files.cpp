// SPDX-License-Identifier: Apache-2.0
#include "sources/top/cgroup_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "core/text.h"
#include "sources/files/system_parsers.h"
#include "sources/top/proc_top_parsers.h"

namespace pm {

bool CgroupFiles::open(const std::string& dir, Open& f) {
  // Past kMaxKept fds, or out of fds: read by path, as each row's files were before they were
  // kept open (fds are left for the rest of the monitor). Only a directory that is not there is
  // a removed cgroup.
  if (kept_ + 4 > kMaxKept) {
    f.by_path = true;
    return ::access(dir.c_str(), F_OK) == 0;
  }
  UniqueFd d(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  f.by_path = !d && (errno == EMFILE || errno == ENFILE);
  if (!d) return f.by_path;
  auto at = [&](const char* name) {
    UniqueFd fd(::openat(d.get(), name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd && (errno == EMFILE || errno == ENFILE)) f.by_path = true;
    return fd;
  };
  f.cpu_stat = at("cpu.stat");
  f.cpu_pressure = at("cpu.pressure");
  f.io_pressure = at("io.pressure");
  f.memory_pressure = at("memory.pressure");
  f.kept = (f.cpu_stat ? 1 : 0) + (f.cpu_pressure ? 1 : 0) + (f.io_pressure ? 1 : 0) + (f.memory_pressure ? 1 : 0);
  kept_ += f.kept;
  return true;
}

void CgroupFiles::forget(Open& f) {
  kept_ -= f.kept;
  f = Open{};
}

// The fuzzed /proc/pressure parser: a cgroup's pressure files have the same lines.
std::optional<double> CgroupFiles::avg10(const Open& f, const UniqueFd& fd, const char* name) {
  if (!fd && !f.by_path) return std::nullopt;
  auto text = fd ? reader_.reread_record(fd.get(), name) : reader_.read(f.dir + "/" + name);
  if (!text) return std::nullopt;
  auto p = procfs::parse_pressure(*text);
  if (!p) return std::nullopt;
  return p->some.avg10;
}

void CgroupFiles::read(const std::string& mount, std::vector<TopCgroup>& rows) {
  std::vector<TopCgroup*> all;
  all.reserve(rows.size());
  for (TopCgroup& c : rows) all.push_back(&c);
  read(mount, all);
}

void CgroupFiles::read(const std::string& mount, const std::vector<TopCgroup*>& rows) {
  ++readings_;
  for (TopCgroup* row : rows) {
    TopCgroup& c = *row;
    const std::string& path = c.path;
    std::string dir = mount + (path == "/" ? "" : path);
    auto it = open_.find(path);
    bool fresh = it == open_.end();
    if (fresh) it = open_.emplace(path, Open{}).first;
    Open& f = it->second;
    f.dir = dir;
    if (fresh && !open(dir, f)) {
      c.removed = true;  // its tasks ended and it was removed since: no file of its own to read
      forget(f);
      open_.erase(it);
      continue;
    }
    std::optional<double> usage;
    // false: the file was there and could not be read.
    auto read_usage = [&] {
      if (!f.cpu_stat && !f.by_path) return true;
      auto text = f.cpu_stat ? reader_.reread_record(f.cpu_stat.get(), "cpu.stat") : reader_.read(dir + "/cpu.stat");
      if (text) usage = cpu_stat_usage_s(*text);
      return text.ok();
    };
    if (!read_usage() && !fresh && !f.by_path) {
      // A file of a removed cgroup answers ENODEV; one made again under the same path since is
      // another cgroup: its files are opened anew, and its usage is no increase of the old one's.
      forget(f);
      f.dir = dir;
      if (!open(dir, f)) {
        c.removed = true;
        forget(f);
        open_.erase(it);
        continue;
      }
      read_usage();
    }
    if (usage && f.usage && f.reading + 1 == readings_) c.cpu_stat_s = std::max(0.0, *usage - *f.usage);
    f.usage = usage;
    f.reading = readings_;
  }
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.reading == readings_) {
      ++it;
      continue;
    }
    forget(it->second);
    it = open_.erase(it);
  }
}

void CgroupFiles::read(const std::string& mount, TopRecord& rec) {
  std::vector<TopCgroup*> rows = top_first(rec.cgroups, rec.sort, rec.count > 0 ? 2 * rec.count : 0);
  read(mount, rows);
  if (rec.count > 0 && rows.size() > static_cast<size_t>(rec.count)) rows.resize(static_cast<size_t>(rec.count));
  read_pressure(rows);
}

void CgroupFiles::read_pressure(const std::vector<TopCgroup*>& shown) {
  for (TopCgroup* row : shown) {
    TopCgroup& c = *row;
    auto it = open_.find(c.path);
    if (c.removed || it == open_.end()) continue;
    const Open& f = it->second;
    c.cpu_pressure_pct = avg10(f, f.cpu_pressure, "cpu.pressure");
    c.io_pressure_pct = avg10(f, f.io_pressure, "io.pressure");
    c.memory_pressure_pct = avg10(f, f.memory_pressure, "memory.pressure");
  }
}

}  // namespace pm
