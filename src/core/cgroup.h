// SPDX-License-Identifier: Apache-2.0
// Where cgroup v2 lives on this host: the unified hierarchy's mount (/sys/fs/cgroup on a pure v2
// host, /sys/fs/cgroup/unified on a hybrid one) and a process's cgroup in it.
#pragma once

#include <cstdint>
#include <string>

namespace pm {

// The unified hierarchy's mount point, empty when none is mounted.
std::string unified_mount();
// A process's cgroup path in it ("/system.slice/foo.service"), empty when unknown.
std::string cgroup_of(int pid);
// A cgroup directory's id (its inode on v2: what bpf_get_current_cgroup_id() returns); 0 if none.
uint64_t cgroup_id(const std::string& dir);

}  // namespace pm
