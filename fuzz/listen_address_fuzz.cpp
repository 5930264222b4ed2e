// --prometheus ADDR:PORT: an accepted address written back (as perf-monitor shows it) parses to
// the same address.
#include <cstdlib>
#include <string_view>

#include "core/listen_address.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto a = pm::parse_listen_address(text);
  if (!a) return 0;
  auto again = pm::parse_listen_address(a->text());
  if (!again || again->host != a->host || again->port != a->port || again->ipv6 != a->ipv6) std::abort();
  return 0;
}
