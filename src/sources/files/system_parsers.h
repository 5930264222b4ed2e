// SPDX-License-Identifier: Apache-2.0
// Pure parsers for system-wide procfs/sysfs files: string_view in, struct or error out.
// Memory sizes are converted to bytes; CPU times stay in clock ticks (USER_HZ).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace pm::procfs {

// One "cpu"/"cpuN" line of /proc/stat, in ticks. cpu == -1 for the aggregate line.
struct CpuTimes {
  int cpu = -1;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0, guest = 0,
           guest_nice = 0;
  // user and nice already include guest and guest_nice, so those are not added again.
  [[nodiscard]] uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

// /proc/stat
struct ProcStat {
  CpuTimes all;                // the "cpu" line
  std::vector<CpuTimes> cpus;  // "cpuN" lines in file order (offline CPUs are absent)
  uint64_t ctxt = 0, btime = 0, processes = 0;
  uint64_t procs_running = 0, procs_blocked = 0;
};
Result<ProcStat> parse_proc_stat(std::string_view text);

// /proc/meminfo and /sys/devices/system/node/nodeN/meminfo ("Node N " prefix). Bytes; a field
// missing from the file stays 0 except where noted.
struct MemInfo {
  uint64_t mem_total = 0, mem_free = 0, buffers = 0, cached = 0, swap_cached = 0;
  std::optional<uint64_t> mem_available;  // absent in node meminfo and very old kernels
  uint64_t active = 0, inactive = 0, anon_pages = 0, mapped = 0, shmem = 0;
  uint64_t slab = 0, s_reclaimable = 0, dirty = 0, writeback = 0;
  uint64_t swap_total = 0, swap_free = 0;
  std::optional<uint64_t> mem_used;  // node meminfo prints MemUsed
  uint64_t file_pages = 0;           // node meminfo "FilePages" (its page cache)
};
Result<MemInfo> parse_meminfo(std::string_view text);       // /proc/meminfo
Result<MemInfo> parse_node_meminfo(std::string_view text);  // nodeN/meminfo

// /proc/vmstat, the counters we report.
struct VmStat {
  uint64_t pgfault = 0, pgmajfault = 0, pswpin = 0, pswpout = 0, pgpgin = 0, pgpgout = 0;
  uint64_t oom_kill = 0;
};
Result<VmStat> parse_vmstat(std::string_view text);

// /proc/pressure/{cpu,io,memory}. total is in microseconds.
struct PressureLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;
  uint64_t total_us = 0;
};
struct Pressure {
  PressureLine some;
  std::optional<PressureLine> full;  // cpu has a "full" line only on newer kernels
};
Result<Pressure> parse_pressure(std::string_view text);

// /proc/loadavg
struct LoadAvg {
  double load1 = 0, load5 = 0, load15 = 0;
  uint64_t runnable = 0, total_tasks = 0;
};
Result<LoadAvg> parse_loadavg(std::string_view text);

// A thermal zone's sysfs files (/sys/class/thermal/thermal_zoneN): temp and trip temps are in
// millidegrees Celsius. parse_millicelsius("67000\n") == 67.0.
Result<double> parse_millicelsius(std::string_view text);

}  // namespace pm::procfs
