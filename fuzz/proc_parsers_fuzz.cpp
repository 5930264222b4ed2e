// /proc/PID/{stat,status,smaps_rollup,io,schedstat,statm,cmdline,cgroup} and a cgroup's cpu.stat:
// the first byte picks the parser, the rest is the file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sources/files/proc_parsers.h"
#include "sources/top/proc_top_parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 9) {
    case 0: {
      auto r = pm::procfs::parse_pid_stat(text);
      if (r) (void)r->comm.size();
      break;
    }
    case 1:
      (void)pm::procfs::parse_pid_status(text);
      break;
    case 2:
      (void)pm::procfs::parse_smaps_rollup(text);
      break;
    case 3:
      (void)pm::procfs::parse_pid_io(text);
      break;
    case 4:
      (void)pm::parse_task_schedstat(text);
      break;
    case 5:
      (void)pm::parse_statm_resident(text);
      break;
    case 6:
      (void)pm::command_line(text).size();
      break;
    case 7:
      (void)pm::unified_cgroup_of(text);
      break;
    case 8:
      (void)pm::cpu_stat_usage_s(text);
      break;
  }
  return 0;
}
