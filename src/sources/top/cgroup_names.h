// SPDX-License-Identifier: Apache-2.0
// Cgroup ids (what the kernel side reports) to paths in the v2 hierarchy, by walking it: on v2 a
// cgroup's id is its directory's inode. Walked again at once when an id is unknown and the last
// walk is older than the first time it was asked for (a cgroup made since): each unknown id costs
// one walk at most, and ids asked for together share it. An id still unknown after a walk that
// began after it was first asked for is gone (ids are never reused). A cgroup a walk knew and
// the next one does not find was removed: its name is kept for kRemovedReadings readings
// (next_reading()), so that its last interval is still its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace pm {

class CgroupNames {
 public:
  explicit CgroupNames(std::string mount);
  // The path of a cgroup ("/", "/system.slice/cron.service"); absent when unknown even after a walk
  // (the cgroup is gone).
  std::optional<std::string> path(uint64_t id);
  [[nodiscard]] const std::string& mount() const { return mount_; }
  // A cgroup made (the kernel said so, with its path): named as if a walk had found it, so even
  // if it is removed before one; its name ages only once a walk misses it. Every
  // kMadeBeforeWalk of them a walk is made, which bounds what cgroup churn keeps.
  void made(uint64_t id, std::string path);
  // Called once per reading: ages the names of removed cgroups.
  void next_reading();
  // Changes whenever a name may have: a walk, a cgroup made, a removed one's name let go. What
  // path() gave stands while it does not change.
  [[nodiscard]] uint64_t generation() const { return generation_; }
  static constexpr uint64_t kRemovedReadings = 2;
  static constexpr size_t kMadeBeforeWalk = 1024;

 private:
  void walk();
  std::string mount_;
  std::unordered_map<uint64_t, std::string> paths_;
  std::chrono::steady_clock::time_point walked_{};
  // Ids asked for and not found: when first asked for.
  std::unordered_map<uint64_t, std::chrono::steady_clock::time_point> unknown_;
  struct Removed {
    std::string path;
    uint64_t reading;  // when a walk first missed it
  };
  std::unordered_map<uint64_t, Removed> removed_;
  size_t made_since_walk_ = 0;
  uint64_t generation_ = 0;
  uint64_t readings_ = 0;
};

// The first `depth` components of a cgroup path ("/a/b/c", 2 -> "/a/b"); the root stays "/".
std::string cut_cgroup_path(const std::string& path, int depth);
int cgroup_depth_of(const std::string& path);

}  // namespace pm
