// The configuration file: the bounds check, then the TOML parser, then every section's rules.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  pm::Config config;
  (void)pm::apply_toml(text, "fuzz.toml", config);
  return 0;
}
