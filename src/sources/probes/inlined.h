// SPDX-License-Identifier: Apache-2.0
// Where a function that has no symbol went: the call sites the compiler inlined it at, read
// from the DWARF (libdw) of a binary or its debug file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pm::probes {

// The places `function` (named as for --probe) was inlined at, in the DWARF of the ELF file
// open at `fd` (not closed): "main (clones.cpp:91)", each once, in the order found, at most
// `limit` (one more, "...", says there are others). Empty when the file has no DWARF, or none
// of its functions is that one inlined. DWARF is outside input: its depth and size are bounded.
std::vector<std::string> inlined_call_sites(int fd, std::string_view function, std::string_view binary, size_t limit = 4);

}  // namespace pm::probes
