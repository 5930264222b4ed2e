// SPDX-License-Identifier: Apache-2.0
// Where a probe goes: `BINARY:FUNCTION[:argN]` parsed, BINARY found on disk, FUNCTION found in
// its ELF symbol tables (.symtab, .dynsym and the compressed .gnu_debugdata) by the name a
// person reads (demangled C++, optionally with a parameter list to pick an overload) or the
// mangled one, and turned into the file offset a uprobe takes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/fd.h"

// libelf's handle (libelf.h).
extern "C" {
typedef struct Elf Elf;
}

namespace pm::probes {

// "BIN:FUNC", "BIN:ns::Class::f(int)", "BIN:f:arg2". C++ names keep their "::"; a trailing
// ":argN" (N 1..6) after a single colon is the request-ID argument.
Result<ProbeSpec> parse_probe_spec(std::string_view text);

struct ElfSymbol {
  std::string name;       // as in the symbol table (mangled for C++)
  std::string demangled;  // what a person reads; equal to name for C
  uint64_t addr = 0;      // st_value
  std::string note;       // what a match says about itself: "'f' is an async fn: probing …" ("" mostly)
};

// Bounds on what a probe's text and ELF file may make perf-monitor do.
inline constexpr size_t kMaxFunctionName = 4096;        // FUNCTION as written (demangled names run long)
inline constexpr size_t kMaxDemangledInput = 16384;      // longer mangled names are shown as they are
inline constexpr size_t kMaxDebugDataBytes = 32 << 20;  // .gnu_debugdata decompressed (MiniDebugInfo)
// Functions probed at once: the BPF side keeps per-function figures in a fixed array.
inline constexpr size_t kMaxProbes = 62;

// The defined function symbols of an ELF file, from every table it has. The file must be an
// executable or shared library for this host's CPU: one for another (an aarch64 or RISC-V
// binary) is an error, as is a .gnu_debugdata that decompresses beyond kMaxDebugDataBytes.
Result<std::vector<ElfSymbol>> read_function_symbols(const std::string& path);
// The same for an ELF image in memory (`what` names it in errors). libelf may use the buffer
// as it is, so it must outlive nothing returned (names are copied).
Result<std::vector<ElfSymbol>> read_function_symbols_in_memory(std::vector<char>& image, std::string_view what);

// The one symbol FUNCTION names: its mangled name, its demangled name with a parameter list
// (spaces are not significant; a template's return type may be left out), or without one when
// that names a single function (aliases at one address are one function); "Cart::checkout"
// also finds "shop::Cart::checkout" when that is the only one. Rust: with or without the crate
// and the legacy hash, "<T as Trait>::f" also as "T::f", closures, generic instances by their
// path (v0 "f::<u32>"), an async fn as its future's poll function (said in `note`). GCC's
// .cold/.part pieces are never the answer; its clones (.constprop, .isra) are their function.
// Ambiguous or unknown: an error listing the candidates, each as it can be named.
Result<ElfSymbol> match_symbol(const std::vector<ElfSymbol>& symbols, std::string_view function,
                               std::string_view binary);

// A path to BINARY: as given when it has a '/', else the first executable on PATH, else the
// first library of that name in the dynamic linker's usual directories.
Result<std::string> find_binary(std::string_view binary);

// The file offset of the instruction at virtual address `addr` (what a uprobe attaches to).
Result<uint64_t> file_offset(const std::string& path, uint64_t addr);

// The name a person reads, as c++filt -i and rustfilt print it (libiberty: C++, Rust legacy and
// v0, the legacy hash dropped), or the name itself when it is neither or is longer than
// kMaxDemangledInput. Exposed for tests and fuzzing.
std::string demangle(const std::string& name);

// A probe ready to attach.
struct ResolvedProbe {
  std::string path;      // as found from what was typed: for messages and labels
  std::string function;  // the demangled name, for output
  uint64_t offset = 0;
  int arg = 0;
  std::pair<uint64_t, uint64_t> file{};  // device and inode: one file under two paths is one
  // The file the symbols were read from, held open: the probe is attached to it, not to
  // whatever `path` names by then (the owner of a directory on the path could have put a
  // symlink to another file there, and the offset read here would land in that file).
  std::shared_ptr<const UniqueFd> fd;
  // Where the kernel finds that file (/proc/self/fd/N); `path` for a probe made by hand.
  [[nodiscard]] std::string attach_path() const {
    return fd && *fd ? "/proc/self/fd/" + std::to_string(fd->get()) : path;
  }
  std::string note;                      // ElfSymbol::note of the match, said once at start-up
  // Whether both probes go to the same instruction (however the function and file were named).
  [[nodiscard]] bool same_place(const ResolvedProbe& o) const {
    return offset == o.offset && (file != std::pair<uint64_t, uint64_t>{} ? file == o.file : path == o.path);
  }
};
// Finds the binary, opens it once and reads symbols and offset from that open file.
Result<ResolvedProbe> resolve_probe(const ProbeSpec& spec);

// libelf's reader of the ELF file open at `fd`, such that no other user can end perf-monitor
// through it. A file only root can change (owned by root, writable by no group or other) is
// mapped: read as it is used, shared with the page cache. Any other is read into memory as its
// sections are used, never mapped: its owner could truncate it under a mapping, and the next read
// of the mapping would be a SIGBUS; read, a file cut short ends there. Such a file larger than
// kMaxReadElfBytes (a sparse file's holes read as zeros, all of them) is not read: nullptr, as for
// a file that is no ELF. `read_bytes`, where given, gets the size of a file read (0 if mapped).
struct ElfDeleter {
  void operator()(Elf* e) const;
};
using ElfPtr = std::unique_ptr<Elf, ElfDeleter>;
constexpr uint64_t kMaxReadElfBytes = 1ULL << 30;
bool only_root_writes(int fd);
ElfPtr begin_elf(int fd, uint64_t* read_bytes = nullptr);

// The names of the ELF file's USDT probes (.note.stapsdt) of `provider`, each once.
std::vector<std::string> usdt_probes(const std::string& path, std::string_view provider);
// Whether the ELF file carries USDT probes of `provider`.
bool has_usdt_provider(const std::string& path, std::string_view provider);

// "shop::Cart::add(int, double) const" -> "shop::Cart::add"; "int max<int>(int, int)" ->
// "max<int>". Exposed for tests.
std::string base_name(std::string_view demangled);

}  // namespace pm::probes
