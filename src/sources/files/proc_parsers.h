// SPDX-License-Identifier: Apache-2.0
// Pure parsers for per-process procfs files: string_view in, struct or error out. File reading is
// elsewhere (procfs.h), so tests feed these captured files. Memory sizes are converted to bytes;
// CPU times stay in clock ticks (USER_HZ) as the kernel writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace pm::procfs {

// /proc/PID/stat. comm may hold spaces and ')': it runs from the first '(' to the LAST ')'.
// A thread's (/proc/PID/task/TID/stat) reads the same.
struct PidStat {
  int pid = 0;
  std::string comm;
  char state = '?';
  int ppid = 0;
  uint64_t flags = 0;  // PF_* (PF_KTHREAD: a kernel thread; PF_EXITING: on its way out)
  int nice = 0;
  uint64_t minflt = 0, cminflt = 0, majflt = 0, cmajflt = 0;
  uint64_t utime = 0, stime = 0;   // ticks, this process (all its threads, live and dead)
  int64_t cutime = 0, cstime = 0;  // ticks, reaped children (and their reaped children)
  int64_t num_threads = 0;
  uint64_t starttime = 0;  // ticks after boot; with pid, identifies a process
  uint64_t vsize = 0;      // bytes
  int64_t rss_pages = 0;
  [[nodiscard]] bool kernel_thread() const { return (flags & 0x00200000) != 0; }  // PF_KTHREAD
};
Result<PidStat> parse_pid_stat(std::string_view text);

// /proc/PID/status (kB fields converted to bytes; a field the kernel did not print stays 0).
struct PidStatus {
  std::string name;
  int tgid = 0, pid = 0, ppid = 0;
  std::optional<uint32_t> uid;  // the real one (Uid's first)
  int64_t threads = 0;
  uint64_t vm_size = 0, vm_rss = 0, vm_hwm = 0, rss_anon = 0, rss_file = 0, rss_shmem = 0, vm_swap = 0;
  uint64_t voluntary_ctxt_switches = 0, nonvoluntary_ctxt_switches = 0;
};
Result<PidStatus> parse_pid_status(std::string_view text);

// /proc/PID/smaps_rollup, all in bytes. Shared = Shared_Clean + Shared_Dirty.
struct SmapsRollup {
  uint64_t rss = 0, pss = 0, pss_anon = 0, pss_file = 0, pss_shmem = 0;
  uint64_t shared_clean = 0, shared_dirty = 0, private_clean = 0, private_dirty = 0;
  uint64_t anonymous = 0, swap = 0, swap_pss = 0;
  [[nodiscard]] uint64_t shared() const { return shared_clean + shared_dirty; }
};
// An empty file (a kernel thread or a zombie has no mm) parses to all zeros.
Result<SmapsRollup> parse_smaps_rollup(std::string_view text);

// /proc/PID/io. rchar/wchar count read()/write() bytes; read_bytes/write_bytes reach storage.
// For a process this includes its dead threads and its reaped children.
struct PidIo {
  uint64_t rchar = 0, wchar = 0, syscr = 0, syscw = 0;
  uint64_t read_bytes = 0, write_bytes = 0, cancelled_write_bytes = 0;
};
Result<PidIo> parse_pid_io(std::string_view text);

}  // namespace pm::procfs
