// SPDX-License-Identifier: Apache-2.0
// Where a probe goes: `BINARY:FUNCTION[:argN]` parsed, BINARY found on disk, FUNCTION found in
// its ELF symbol tables (.symtab, .dynsym and the compressed .gnu_debugdata) by the name a
// person reads (demangled C++, optionally with a parameter list to pick an overload) or the
// mangled one, and turned into the file offset a uprobe takes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/error.h"

namespace pm::probes {

// "BIN:FUNC", "BIN:ns::Class::f(int)", "BIN:f:arg2". C++ names keep their "::"; a trailing
// ":argN" (N 1..6) after a single colon is the request-ID argument.
Result<ProbeSpec> parse_probe_spec(std::string_view text);

struct ElfSymbol {
  std::string name;       // as in the symbol table (mangled for C++)
  std::string demangled;  // what a person reads; equal to name for C
  uint64_t addr = 0;      // st_value
};

// The defined function symbols of an ELF file, from every table it has.
Result<std::vector<ElfSymbol>> read_function_symbols(const std::string& path);

// The one symbol FUNCTION names: its mangled name, its demangled name with a parameter list
// (spaces are not significant), or without one when that names a single function (aliases at
// one address are one function); "Cart::checkout" also finds "shop::Cart::checkout" when that
// is the only one. Ambiguous or unknown: an error listing the candidates.
Result<ElfSymbol> match_symbol(const std::vector<ElfSymbol>& symbols, std::string_view function,
                               std::string_view binary);

// A path to BINARY: as given when it has a '/', else the first executable on PATH, else the
// first library of that name in the dynamic linker's usual directories.
Result<std::string> find_binary(std::string_view binary);

// The file offset of the instruction at virtual address `addr` (what a uprobe attaches to).
Result<uint64_t> file_offset(const std::string& path, uint64_t addr);

// A probe ready to attach.
struct ResolvedProbe {
  std::string path;
  std::string function;  // the demangled name, for output
  uint64_t offset = 0;
  int arg = 0;
};
Result<ResolvedProbe> resolve_probe(const ProbeSpec& spec);

// Whether the ELF file carries USDT probes (.note.stapsdt) of `provider`.
bool has_usdt_provider(const std::string& path, std::string_view provider);

// "shop::Cart::add(int, double) const" -> "shop::Cart::add"; "int max<int>(int, int)" ->
// "max<int>". Exposed for tests.
std::string base_name(std::string_view demangled);

}  // namespace pm::probes
