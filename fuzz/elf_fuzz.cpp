// An ELF file given to --probe: its header, section and symbol tables, and the xz-compressed
// MiniDebugInfo (.gnu_debugdata) inside it, read with the bounds perf-monitor sets.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sources/probes/symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> image(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  auto symbols = pm::probes::read_function_symbols_in_memory(image, "fuzz.elf");
  if (symbols) {
    for (const auto& s : *symbols) (void)pm::probes::base_name(s.demangled);
  }
  return 0;
}
