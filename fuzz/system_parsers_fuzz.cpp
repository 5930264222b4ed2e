// System-wide /proc and /sys files: the first byte picks the parser, the rest is the file.
// Sizes come out in bytes: whatever the text, no multiplication may wrap (UBSan would say).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/text.h"
#include "sources/files/system_parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 8) {
    case 0: {
      auto r = pm::procfs::parse_proc_stat(text);
      if (r) (void)r->all.total();
      break;
    }
    case 1:
      (void)pm::procfs::parse_meminfo(text);
      break;
    case 2:
      (void)pm::procfs::parse_node_meminfo(text);
      break;
    case 3:
      (void)pm::procfs::parse_vmstat(text);
      break;
    case 4:
      (void)pm::procfs::parse_pressure(text);
      break;
    case 5:
      (void)pm::procfs::parse_loadavg(text);
      break;
    case 6:
      (void)pm::procfs::parse_millicelsius(text);
      break;
    case 7: {
      // /sys/devices/system/cpu/online and a PMU's cpumask: never longer than the bound.
      auto cpus = pm::parse_cpu_list(text);
      if (cpus && cpus->size() > pm::kMaxCpuListEntries) std::abort();
      break;
    }
  }
  return 0;
}
