// The exporter's request reader, fed whatever a client sends. A complete head lies within the
// bytes and the bounds, and every shorter prefix of it is still incomplete (never refused).
#include <cstdlib>
#include <string_view>

#include "sinks/http_request.h"

using pm::http::HeadStatus;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  pm::http::HeadParse p = pm::http::parse_request_head(bytes);
  if (p.status != HeadStatus::kComplete) return 0;
  const pm::http::RequestHead& h = p.head;
  if (h.size == 0 || h.size > bytes.size() || h.size > pm::http::kMaxHeadBytes) std::abort();
  if (h.fields > pm::http::kMaxHeaderFields || h.method.empty() || h.target.empty() || h.target.front() != '/') {
    std::abort();
  }
  auto inside = [&](std::string_view v) { return v.data() >= bytes.data() && v.data() + v.size() <= bytes.data() + h.size; };
  if (!inside(h.method) || !inside(h.target) || !inside(h.version)) std::abort();
  for (size_t cut : {h.size - 1, h.size / 2, size_t{1}}) {
    if (cut >= h.size) continue;
    if (pm::http::parse_request_head(bytes.substr(0, cut)).status != HeadStatus::kIncomplete) std::abort();
  }
  return 0;
}
