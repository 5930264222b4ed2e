// SPDX-License-Identifier: Apache-2.0
// Writes a file of a copied fixture tree (the file sources' tests).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace pm::test {

inline void write_text(const std::string& path, const char* text) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text, f);
  std::fclose(f);
}

}  // namespace pm::test
