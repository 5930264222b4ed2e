// SPDX-License-Identifier: Apache-2.0
// Protocol buffers' wire format, the few pieces the pushed messages need (remote write's
// WriteRequest, OTLP's requests), written by hand from their .proto field numbers: no protobuf
// runtime in the binary. Tests decode what they make with the protocols' own code (a real
// Prometheus; OpenTelemetry's generated messages).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace pm::wire {

inline void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
inline void key(std::string& out, uint32_t field, uint32_t type) { varint(out, (uint64_t{field} << 3) | type); }
// A length-delimited field: bytes, a string, or a nested message.
inline void bytes_field(std::string& out, uint32_t field, std::string_view b) {
  key(out, field, 2);
  varint(out, b.size());
  out.append(b);
}
// A fixed64 (or a double's bits): little-endian, as on x86-64 and arm64.
inline void fixed64(std::string& out, uint32_t field, uint64_t v) {
  key(out, field, 1);
  char raw[8];
  std::memcpy(raw, &v, 8);
  out.append(raw, 8);
}
inline void double_field(std::string& out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  fixed64(out, field, bits);
}

}  // namespace pm::wire
