// SPDX-License-Identifier: Apache-2.0
// System-wide sources read from procfs and sysfs: CPU and scheduler activity (/proc/stat,
// /proc/loadavg), memory and paging (/proc/meminfo, /proc/vmstat), pressure stall information
// (/proc/pressure), NUMA nodes and thermal zones (sysfs). Each factory fails, saying why, when
// its files are not on this host.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "core/source.h"

namespace pm {

// Where procfs and sysfs are mounted; tests point these at captured trees.
struct FsRoots {
  std::string proc = "/proc";
  std::string sys = "/sys";
};

Result<std::unique_ptr<Source>> make_cpu_source(const FsRoots& roots);
Result<std::unique_ptr<Source>> make_memory_source(const FsRoots& roots);
Result<std::unique_ptr<Source>> make_pressure_source(const FsRoots& roots);
Result<std::unique_ptr<Source>> make_numa_source(const FsRoots& roots);
Result<std::unique_ptr<Source>> make_thermal_source(const FsRoots& roots);

}  // namespace pm
