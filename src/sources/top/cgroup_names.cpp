// SPDX-License-Identifier: Apache-2.0
#include "sources/top/cgroup_names.h"

#include <sys/stat.h>

#include <filesystem>

namespace pm {

CgroupNames::CgroupNames(std::string mount) : mount_(std::move(mount)) { walk(); }

void CgroupNames::made(uint64_t id, std::string path) {
  if (!paths_.try_emplace(id, std::move(path)).second) return;
  ++generation_;
  if (++made_since_walk_ >= kMadeBeforeWalk) walk();
}

void CgroupNames::walk() {
  walked_ = std::chrono::steady_clock::now();
  made_since_walk_ = 0;
  ++generation_;
  // What the last walk knew is kept a while for the ids this one no longer finds (removed since):
  // a cgroup removed within an interval still names its last interval's rows.
  std::unordered_map<uint64_t, std::string> before;
  before.swap(paths_);
  namespace fs = std::filesystem;
  std::error_code ec;
  struct stat st {};
  if (::stat(mount_.c_str(), &st) == 0) paths_.emplace(st.st_ino, std::string(1, '/'));
  for (fs::recursive_directory_iterator it(mount_, fs::directory_options::skip_permission_denied, ec), end;
       it != end; it.increment(ec)) {
    if (ec) break;
    if (!it->is_directory(ec)) continue;
    if (::stat(it->path().c_str(), &st) != 0) continue;
    const std::string& full = it->path().native();
    paths_[st.st_ino] = full.size() > mount_.size() ? std::string(full, mount_.size()) : std::string("/");
  }
  for (auto& [id, path] : before) {
    if (paths_.count(id) == 0) removed_.try_emplace(id, Removed{std::move(path), readings_});
  }
}

void CgroupNames::next_reading() {
  ++readings_;
  for (auto it = removed_.begin(); it != removed_.end();) {
    bool old = readings_ - it->second.reading > kRemovedReadings;
    generation_ += old;
    it = old ? removed_.erase(it) : std::next(it);
  }
}

std::optional<std::string> CgroupNames::path(uint64_t id) {
  auto it = paths_.find(id);
  if (it != paths_.end()) return it->second;
  if (auto r = removed_.find(id); r != removed_.end()) return r->second.path;
  auto now = std::chrono::steady_clock::now();
  if (unknown_.size() > 65536) unknown_.clear();  // bounded: an id forgotten here costs one more walk
  auto [u, first] = unknown_.try_emplace(id, now);
  if (!first && walked_ > u->second) return std::nullopt;  // a walk since it was first asked for: gone
  walk();
  it = paths_.find(id);
  if (it == paths_.end()) {
    if (auto r = removed_.find(id); r != removed_.end()) return r->second.path;
    return std::nullopt;
  }
  unknown_.erase(id);
  return it->second;
}

std::string cut_cgroup_path(const std::string& path, int depth) {
  if (path.empty() || path == "/") return "/";
  size_t at = 0;
  for (int level = 0; level < depth; ++level) {
    at = path.find('/', at + 1);
    if (at == std::string::npos) return path;
  }
  return depth == 0 ? "/" : path.substr(0, at);
}

int cgroup_depth_of(const std::string& path) {
  if (path.empty() || path == "/") return 0;
  int depth = 0;
  for (char c : path) depth += c == '/';
  return depth;
}

}  // namespace pm
