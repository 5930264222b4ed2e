// SPDX-License-Identifier: Apache-2.0
#include "sources/probes/symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <functional>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "core/fd.h"
#include "core/text.h"

namespace pm::probes {
namespace {

// Messages carry names from outside (symbols, paths, what was typed): printable() keeps
// escape sequences in a symbol's name away from the terminal that shows the error.
Error invalid(const std::string& msg) { return make_error(Errc::kInvalidArgument, printable(msg)); }

// The CPU whose code this build of perf-monitor probes: its BPF programs read that CPU's
// registers, and the kernel places uprobes as that CPU's breakpoints.
#if defined(__x86_64__)
constexpr unsigned kHostMachine = EM_X86_64;
constexpr const char* kHostArch = "x86-64";
#elif defined(__aarch64__)
constexpr unsigned kHostMachine = EM_AARCH64;
constexpr const char* kHostArch = "aarch64";
#else
#error "perf-monitor's probes know x86-64 and aarch64"
#endif

std::string machine_name(unsigned m) {
  switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "32-bit x86";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "32-bit ARM";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390";
    case EM_MIPS: return "MIPS";
    case EM_LOONGARCH: return "LoongArch";
    default: return "machine " + std::to_string(m);
  }
}

// Only an executable or shared library of this host's CPU can carry a uprobe that means
// anything: another CPU's code (an aarch64 binary run by qemu-user, say) would be patched at
// offsets that are not its instructions.
Status check_probeable(Elf* elf, std::string_view what) {
  GElf_Ehdr eh;
  if (gelf_getehdr(elf, &eh) == nullptr) return invalid(std::string(what) + " is not an ELF executable or library");
  if (eh.e_machine != kHostMachine || gelf_getclass(elf) != ELFCLASS64) {
    return invalid(std::string(what) + " is " + machine_name(eh.e_machine) + (gelf_getclass(elf) == ELFCLASS32 ? " (32-bit)" : "") +
                   " code: perf-monitor probes only 64-bit " + kHostArch + " executables and libraries here");
  }
  if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
    return invalid(std::string(what) + " is an ELF " + (eh.e_type == ET_REL ? "object file" : eh.e_type == ET_CORE ? "core dump" : "file of another kind") +
                   ", not an executable or shared library");
  }
  return {};
}

struct ElfFile {
  UniqueFd fd;
  std::unique_ptr<Elf, int (*)(Elf*)> elf{nullptr, elf_end};
};

Status libelf_ready() {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(Errc::kUnavailable, "libelf is too old");
  return {};
}

// O_NONBLOCK: a FIFO put where the binary was does not hold start-up; it is refused below.
Result<ElfFile> open_elf(const std::string& path) {
  PM_TRY(libelf_ready());
  ElfFile f;
  f.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!f.fd) return Error::from_errno(errno, "cannot open " + printable(path));
  struct stat st {};
  if (::fstat(f.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return invalid(path + " is not a regular file: not an ELF executable or library");
  }
  f.elf.reset(elf_begin(f.fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!f.elf || elf_kind(f.elf.get()) != ELF_K_ELF) {
    return invalid(path + " is not an ELF executable or library");
  }
  return f;
}

Result<uint64_t> offset_in(Elf* elf, uint64_t addr, const std::string& path) {
  size_t n = 0;
  if (elf_getphdrnum(elf, &n) != 0) return invalid(path + " has no program headers");
  for (size_t i = 0; i < n; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
    if ((ph.p_flags & PF_X) && addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_memsz) {
      return addr - ph.p_vaddr + ph.p_offset;
    }
  }
  return invalid("the function's address is in no executable segment of " + path);
}

// xz-compressed bytes (the MiniDebugInfo of .gnu_debugdata) decompressed. Corrupt data is
// nothing (the other tables may still name the function); data that would decompress beyond
// kMaxDebugDataBytes, or need more memory to do so, is an error: an xz bomb.
// The uncompressed size an xz stream's index states (the last stream's, read from its footer:
// MiniDebugInfo is one stream), or nullopt where it cannot be read. It may lie: it only saves
// decompressing what it says is too large, and sizes the buffer.
std::optional<uint64_t> xz_stated_size(const uint8_t* data, size_t size) {
  if (size < 2 * LZMA_STREAM_HEADER_SIZE) return std::nullopt;
  lzma_stream_flags footer;
  if (lzma_stream_footer_decode(&footer, data + size - LZMA_STREAM_HEADER_SIZE) != LZMA_OK) return std::nullopt;
  if (footer.backward_size > size - 2 * LZMA_STREAM_HEADER_SIZE) return std::nullopt;
  lzma_index* index = nullptr;
  uint64_t memlimit = 1 << 20;
  size_t pos = 0;
  const uint8_t* at = data + size - LZMA_STREAM_HEADER_SIZE - footer.backward_size;
  if (lzma_index_buffer_decode(&index, &memlimit, nullptr, at, &pos, footer.backward_size) != LZMA_OK) {
    return std::nullopt;
  }
  uint64_t n = lzma_index_uncompressed_size(index);
  lzma_index_end(index, nullptr);
  return n;
}

Result<std::vector<char>> unxz(const char* data, size_t size, std::string_view what) {
  auto too_large = [&] {
    return invalid(std::string(what) + ": its .gnu_debugdata decompresses to more than " +
                   std::to_string(kMaxDebugDataBytes >> 20) + " MiB: not MiniDebugInfo");
  };
  auto stated = xz_stated_size(reinterpret_cast<const uint8_t*>(data), size);
  if (stated && *stated > kMaxDebugDataBytes) return too_large();  // refused unread
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, kMaxDebugDataBytes, 0) != LZMA_OK) return std::vector<char>{};
  std::unique_ptr<lzma_stream, void (*)(lzma_stream*)> guard(&strm, lzma_end);
  // One byte more than stated: a stream that goes on past its index's word is seen to.
  std::vector<char> out(std::min(stated ? *stated + 1 : size * 4 + 4096, kMaxDebugDataBytes));
  strm.next_in = reinterpret_cast<const uint8_t*>(data);
  strm.avail_in = size;
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {
    if (strm.total_out == out.size()) {
      if (out.size() >= kMaxDebugDataBytes) return too_large();
      out.resize(std::min(out.size() * 2, kMaxDebugDataBytes));
    }
    strm.next_out = reinterpret_cast<uint8_t*>(out.data()) + strm.total_out;
    strm.avail_out = out.size() - strm.total_out;
    ret = lzma_code(&strm, LZMA_FINISH);
  }
  if (ret == LZMA_MEMLIMIT_ERROR) return too_large();
  if (ret != LZMA_STREAM_END) return std::vector<char>{};
  out.resize(strm.total_out);
  return out;
}

Status collect_functions(Elf* elf, std::vector<ElfSymbol>& out, std::vector<char>* debugdata, std::string_view what) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) shstrndx = 0;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    if (debugdata != nullptr && sh.sh_type == SHT_PROGBITS) {
      const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
      Elf_Data* d = name && std::strcmp(name, ".gnu_debugdata") == 0 ? elf_getdata(scn, nullptr) : nullptr;
      if (d && d->d_buf) {
        auto bytes = unxz(static_cast<const char*>(d->d_buf), d->d_size, what);
        if (!bytes) return bytes.error();
        *debugdata = std::move(*bytes);
      }
      continue;
    }
    if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) continue;
    size_t n = std::min<size_t>(sh.sh_size / sh.sh_entsize, INT32_MAX);
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;  // past the table's data
      int type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (name == nullptr || *name == '\0') continue;
      out.push_back({name, demangle(name), sym.st_value});
    }
  }
  return {};
}

// Every table of a checked ELF image, the MiniDebugInfo's too.
Result<std::vector<ElfSymbol>> symbols_of(Elf* elf, std::string_view what) {
  PM_TRY(check_probeable(elf, what));
  std::vector<ElfSymbol> out;
  std::vector<char> debugdata;
  PM_TRY(collect_functions(elf, out, &debugdata, what));
  if (!debugdata.empty()) {
    std::unique_ptr<Elf, int (*)(Elf*)> mini(elf_memory(debugdata.data(), debugdata.size()), elf_end);
    // Its own .gnu_debugdata is not followed: MiniDebugInfo does not nest.
    if (mini && elf_kind(mini.get()) == ELF_K_ELF) PM_TRY(collect_functions(mini.get(), out, nullptr, what));
  }
  return out;
}

}  // namespace

Result<ProbeSpec> parse_probe_spec(std::string_view text) {
  auto usage = [&](std::string why) {
    return invalid("bad --probe '" + std::string(text) + "': " + why +
                   "; write BINARY:FUNCTION or BINARY:FUNCTION:argN, e.g. ./app:process_request:arg1 or "
                   "libc.so.6:malloc");
  };
  size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return usage("no binary");
  ProbeSpec spec;
  spec.binary = std::string(text.substr(0, colon));
  std::string_view fn = text.substr(colon + 1);
  size_t last = fn.rfind(':');
  if (last != std::string_view::npos && last > 0 && fn[last - 1] != ':' && fn.substr(last + 1).starts_with("arg")) {
    auto n = parse_u64(fn.substr(last + 4));
    if (!n || *n < 1 || *n > 6) return usage("the request ID argument is arg1 to arg6");
    spec.arg = static_cast<int>(*n);
    fn = fn.substr(0, last);
  }
  if (fn.empty()) return usage("no function");
  if (fn.size() > kMaxFunctionName || spec.binary.size() >= PATH_MAX) {
    return invalid("bad --probe: a function name is at most " + std::to_string(kMaxFunctionName) +
                   " characters and a binary's path at most " + std::to_string(PATH_MAX - 1));
  }
  spec.function = std::string(fn);
  return spec;
}

Result<std::vector<ElfSymbol>> read_function_symbols(const std::string& path) {
  auto f = open_elf(path);
  if (!f) return f.error();
  return symbols_of(f->elf.get(), path);
}

Result<std::vector<ElfSymbol>> read_function_symbols_in_memory(std::vector<char>& image, std::string_view what) {
  PM_TRY(libelf_ready());
  std::unique_ptr<Elf, int (*)(Elf*)> elf(elf_memory(image.data(), image.size()), elf_end);
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return invalid(std::string(what) + " is not an ELF executable or library");
  return symbols_of(elf.get(), what);
}

Result<std::string> find_binary(std::string_view binary) {
  std::string b(binary);
  auto usable = [](const std::string& p) { return ::access(p.c_str(), R_OK) == 0; };
  if (b.find('/') != std::string::npos) {
    if (usable(b)) return b;
    return make_error(Errc::kNotFound, "no binary " + printable(b) + ": check the path");
  }
  std::vector<std::string> dirs;
  for (const char* var : {"PATH", "LD_LIBRARY_PATH"}) {
    const char* list = std::getenv(var);
    for (std::string_view p = list ? list : ""; !p.empty();) {
      size_t c = p.find(':');
      dirs.emplace_back(p.substr(0, c));
      p = c == std::string_view::npos ? std::string_view() : p.substr(c + 1);
    }
  }
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
                        "/usr/lib", "/usr/local/lib"}) {
    dirs.emplace_back(d);
  }
  for (const std::string& d : dirs) {
    std::string p = (d.empty() ? "." : d) + "/" + b;
    if (usable(p)) return p;
  }
  return make_error(Errc::kNotFound, "no binary or library '" + printable(b) +
                                         "' on PATH or in the library directories: give its path, e.g. "
                                         "/usr/lib/x86_64-linux-gnu/" + printable(b));
}

Result<uint64_t> file_offset(const std::string& path, uint64_t addr) {
  auto f = open_elf(path);
  if (!f) return f.error();
  return offset_in(f->elf.get(), addr, path);
}

Result<ResolvedProbe> resolve_probe(const ProbeSpec& spec) {
  // Also for [[probes]] of the configuration, which parse_probe_spec does not see.
  if (spec.function.size() > kMaxFunctionName || spec.binary.size() >= PATH_MAX) {
    return invalid("a function name is at most " + std::to_string(kMaxFunctionName) +
                   " characters and a binary's path at most " + std::to_string(PATH_MAX - 1) + " (this one: " +
                   std::to_string(spec.function.size()) + " and " + std::to_string(spec.binary.size()) + ")");
  }
  auto path = find_binary(spec.binary);
  if (!path) return path.error();
  // One open: symbols, offset, identity and the attachment all come from this file.
  auto f = open_elf(*path);
  if (!f) return f.error();
  auto symbols = symbols_of(f->elf.get(), *path);
  if (!symbols) return symbols.error();
  auto sym = match_symbol(*symbols, spec.function, spec.binary);
  if (!sym) return sym.error();
  auto off = offset_in(f->elf.get(), sym->addr, *path);
  if (!off) return off.error();
  ResolvedProbe r{*path, sym->demangled, *off, spec.arg};
  r.note = sym->note;
  struct stat st {};
  if (::fstat(f->fd.get(), &st) == 0) r.file = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  r.fd = std::make_shared<const UniqueFd>(std::move(f->fd));
  return r;
}

bool has_usdt_provider(const std::string& path, std::string_view provider) {
  auto f = open_elf(path);
  if (!f || !check_probeable(f->elf.get(), path)) return false;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(f->elf.get(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) continue;
    GElf_Nhdr nh;
    size_t off = 0, name_off = 0, desc_off = 0;
    while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
      const char* base = static_cast<const char*>(data->d_buf);
      // stapsdt note: three addresses (probe, base, semaphore), then provider\0name\0args\0.
      if (nh.n_type != 3 || nh.n_namesz != 8 || std::strncmp(base + name_off, "stapsdt", 8) != 0) continue;
      size_t skip = 3 * (gelf_getclass(f->elf.get()) == ELFCLASS64 ? 8 : 4);
      if (nh.n_descsz <= skip) continue;
      std::string_view desc(base + desc_off + skip, nh.n_descsz - skip);
      if (desc.substr(0, desc.find('\0')) == provider) return true;
    }
  }
  return false;
}

}  // namespace pm::probes
