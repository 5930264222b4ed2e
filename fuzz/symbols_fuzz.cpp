// What a user writes for --probe and what symbol tables hold: BINARY:FUNCTION[:argN], the
// demangler, the base name of a demangled name, and the matcher with its closest-name search
// over a fixed table (which the input may name in part or in full).
#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

#include "sources/probes/symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      (void)pm::probes::parse_probe_spec(in.ConsumeRemainingBytesAsString());
      break;
    case 1:
      (void)pm::probes::base_name(pm::probes::demangle("_Z" + in.ConsumeRemainingBytesAsString()));
      break;
    case 2:
      (void)pm::probes::base_name(in.ConsumeRemainingBytesAsString());
      break;
    case 3: {
      std::vector<pm::probes::ElfSymbol> table;
      for (const char* n : {"_ZN4shop15process_requestEm", "_ZN4shop4Cart3addEi", "_ZN4shop4Cart3addEPKci", "malloc",
                            "_Z3maxIiET_S0_S0_", "_ZN2ns1SclEi"}) {
        table.push_back({n, pm::probes::demangle(n), table.size() + 1});
      }
      int extra = in.ConsumeIntegralInRange(0, 4);
      for (int i = 0; i < extra; ++i) {
        std::string n = in.ConsumeRandomLengthString(256);
        table.push_back({n, pm::probes::demangle(n), in.ConsumeIntegral<uint64_t>()});
      }
      (void)pm::probes::match_symbol(table, in.ConsumeRemainingBytesAsString(), "fuzz");
      break;
    }
  }
  return 0;
}
