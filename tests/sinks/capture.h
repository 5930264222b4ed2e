// SPDX-License-Identifier: Apache-2.0
// What a sink wrote to a temporary FILE*, read back (the sinks' tests).
#pragma once

#include <cstdio>
#include <string>

namespace pm::test {

// Reads back everything written to f.
inline std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

}  // namespace pm::test
