// SPDX-License-Identifier: Apache-2.0
#include "core/cgroup.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace pm {

std::string unified_mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // ... MOUNT_POINT OPTIONS - FSTYPE SOURCE SUPER_OPTIONS
    auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root, mount;
    if (fields >> id >> parent >> dev >> root >> mount) return mount;
  }
  return {};
}

std::string cgroup_of(int pid) {
  std::ifstream in("/proc/" + (pid == 0 ? std::string("self") : std::to_string(pid)) + "/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

uint64_t cgroup_id(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  return st.st_ino;
}

}  // namespace pm
