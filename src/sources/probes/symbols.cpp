// SPDX-License-Identifier: Apache-2.0
#include "sources/probes/symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

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
#include "sources/probes/inlined.h"

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
  ElfPtr elf;  // reads through fd (declared after it: ended before fd closes)
};

Status libelf_ready() {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(Errc::kUnavailable, "libelf is too old");
  return {};
}

}  // namespace

void ElfDeleter::operator()(Elf* e) const { elf_end(e); }

bool only_root_writes(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

ElfPtr begin_elf(int fd, uint64_t* read_bytes) {
  if (read_bytes != nullptr) *read_bytes = 0;
  struct stat st {};
  if (elf_version(EV_CURRENT) == EV_NONE || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
  if (only_root_writes(fd)) return ElfPtr(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
  if (static_cast<uint64_t>(st.st_size) > kMaxReadElfBytes) return nullptr;
  ElfPtr e(elf_begin(fd, ELF_C_READ, nullptr));
  if (e && read_bytes != nullptr) *read_bytes = static_cast<uint64_t>(st.st_size);
  return e;
}

namespace {

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
  f.elf = begin_elf(f.fd.get());
  if (!f.elf && !only_root_writes(f.fd.get()) && static_cast<uint64_t>(st.st_size) > kMaxReadElfBytes) {
    return invalid(path + " is larger than " + std::to_string(kMaxReadElfBytes >> 30) +
                   " GiB and a user other than root can write it: not read (probe a copy of root's own)");
  }
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

// Calls `each(type, name, desc)` for every note of every SHT_NOTE section.
void for_each_note(Elf* elf, const std::function<void(uint32_t, std::string_view, std::string_view)>& each) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr) continue;
    GElf_Nhdr nh;
    size_t off = 0, name_off = 0, desc_off = 0;
    const char* base = static_cast<const char*>(data->d_buf);
    while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
      std::string_view name(base + name_off, nh.n_namesz);
      if (!name.empty() && name.back() == '\0') name.remove_suffix(1);
      each(nh.n_type, name, std::string_view(base + desc_off, nh.n_descsz));
    }
  }
}

// The GNU build ID in hex ("" when none): what ties a binary to its debug file.
std::string build_id_of(Elf* elf) {
  std::string id;
  for_each_note(elf, [&](uint32_t type, std::string_view name, std::string_view desc) {
    if (type != NT_GNU_BUILD_ID || name != "GNU" || !id.empty() || desc.size() > 64) return;
    static constexpr char kHex[] = "0123456789abcdef";
    for (unsigned char c : desc) id += {kHex[c >> 4], kHex[c & 15]};
  });
  return id;
}

// .gnu_debuglink: the debug file's name (no directory) and the CRC-32 of its contents.
std::optional<std::pair<std::string, uint32_t>> debuglink_of(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return std::nullopt;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_PROGBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name == nullptr || std::strcmp(name, ".gnu_debuglink") != 0) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) return std::nullopt;
    std::string_view bytes(static_cast<const char*>(d->d_buf), d->d_size);
    size_t end = bytes.find('\0');
    size_t crc_at = end == std::string_view::npos ? end : (end + 4) & ~size_t{3};
    std::string file(bytes.substr(0, end));
    if (crc_at == std::string_view::npos || crc_at + 4 > bytes.size() || file.empty() || file.find('/') != std::string::npos ||
        file == "." || file == "..") {
      return std::nullopt;
    }
    uint32_t crc = 0;
    std::memcpy(&crc, bytes.data() + crc_at, 4);  // the binary's byte order: this host's (checked)
    return std::pair{file, crc};
  }
  return std::nullopt;
}

// CRC-32 of a whole file (the one .gnu_debuglink states: zlib's), or nullopt on a read error.
std::optional<uint32_t> crc32_of(int fd) {
  std::vector<unsigned char> buf(1 << 16);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf.data(), buf.size(), at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return static_cast<uint32_t>(crc);
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
    at += n;
  }
}

// A binary's symbols: its own tables, or, where it was stripped of .symtab, those of its
// separate debug file as gdb and perf find it: /usr/lib/debug/.build-id/xx/yyyy.debug (its
// build ID the binary's), else the file .gnu_debuglink names beside the binary, in its .debug/
// and under /usr/lib/debug/<its directory> (its CRC-32 the one stated).
struct SymbolSource {
  std::vector<ElfSymbol> symbols;
  std::optional<ElfFile> debug;  // the debug file they came from, held open
  std::vector<std::string> looked;  // stripped, no debug file: where one was looked for
};

bool has_symtab(Elf* elf) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) != nullptr && sh.sh_type == SHT_SYMTAB) return true;
  }
  return false;
}

std::optional<ElfFile> open_debug_file(const ElfFile& bin, std::vector<std::string>& looked) {
  std::string id = build_id_of(bin.elf.get());
  if (id.size() >= 4) {
    std::string path = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
    looked.push_back(path);
    auto f = open_elf(path);
    if (f && build_id_of(f->elf.get()) == id) return std::move(*f);
  }
  auto link = debuglink_of(bin.elf.get());
  if (!link) return std::nullopt;
  // The directory of the file held open, wherever the path typed led.
  char real[PATH_MAX] = {};
  ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(bin.fd.get())).c_str(), real, sizeof real - 1);
  if (n <= 0) return std::nullopt;
  std::string dir(real, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  for (const std::string& path : {dir + "/" + link->first, dir + "/.debug/" + link->first,
                                  "/usr/lib/debug" + dir + "/" + link->first}) {
    looked.push_back(path);
    auto f = open_elf(path);
    if (!f) continue;
    struct stat a {}, b {};
    if (::fstat(f->fd.get(), &a) == 0 && ::fstat(bin.fd.get(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      continue;  // the binary itself
    }
    std::string its = build_id_of(f->elf.get());
    if (!id.empty() && !its.empty() ? its == id : crc32_of(f->fd.get()) == link->second) return std::move(*f);
  }
  return std::nullopt;
}

Result<SymbolSource> load_symbols(const ElfFile& bin, const std::string& path) {
  SymbolSource src;
  auto own = symbols_of(bin.elf.get(), path);
  if (!own) return own.error();
  src.symbols = std::move(*own);
  if (has_symtab(bin.elf.get())) return src;
  src.debug = open_debug_file(bin, src.looked);
  if (src.debug) {
    // Its addresses are the binary's; only the tables are read (its code sections are empty).
    PM_TRY(collect_functions(src.debug->elf.get(), src.symbols, nullptr, path));
    src.looked.clear();
  }
  return src;
}

// What a stripped binary's "no function" error adds: where its debug file was looked for.
std::string not_found_in_stripped(const SymbolSource& src, const std::string& path) {
  std::string where;
  for (size_t i = 0; i < src.looked.size(); ++i) {
    where += (i == 0 ? "" : i + 1 == src.looked.size() ? " or " : ", ") + src.looked[i];
  }
  return " (" + path + " is stripped of its symbol table, and no debug file was found" +
         (where.empty() ? std::string(" (it names none)") : " at " + where) +
         ": install its debug symbols (Debian: its -dbgsym package) or probe an unstripped build)";
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
  auto src = load_symbols(*f, path);
  if (!src) return src.error();
  return std::move(src->symbols);
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
  auto src = load_symbols(*f, *path);
  if (!src) return src.error();
  auto sym = match_symbol(src->symbols, spec.function, spec.binary);
  if (!sym && sym.error().code == Errc::kNotFound) {
    // No symbol: where DWARF says it was inlined, the error says so; a stripped binary's says
    // where its debug file was looked for.
    const ElfFile& dwarf = src->debug ? *src->debug : *f;
    std::vector<std::string> sites = inlined_call_sites(dwarf.fd.get(), spec.function, spec.binary);
    std::string msg = sym.error().message, at;
    for (size_t i = 0; i < sites.size(); ++i) at += (i ? ", " : "") + sites[i];
    if (!sites.empty() && msg.starts_with("no function '")) {
      msg = "'" + spec.function + "' has no symbol in " + spec.binary + ": it was inlined into every caller, into " + at;
    } else if (!sites.empty()) {
      msg += "; inlined into " + at;
    } else if (!src->debug && !has_symtab(f->elf.get())) {
      msg += not_found_in_stripped(*src, *path);
    }
    return make_error(Errc::kNotFound, printable(msg));
  }
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

std::vector<std::string> usdt_probes(const std::string& path, std::string_view provider) {
  std::vector<std::string> names;
  auto f = open_elf(path);
  if (!f || !check_probeable(f->elf.get(), path)) return names;
  // stapsdt note: three addresses (probe, base, semaphore), then provider\0name\0args\0.
  size_t skip = 3 * (gelf_getclass(f->elf.get()) == ELFCLASS64 ? 8 : 4);
  for_each_note(f->elf.get(), [&](uint32_t type, std::string_view name, std::string_view desc) {
    if (type != 3 || name != "stapsdt" || desc.size() <= skip) return;
    desc.remove_prefix(skip);
    size_t end = desc.find('\0');
    if (end == std::string_view::npos || desc.substr(0, end) != provider) return;
    desc.remove_prefix(end + 1);
    std::string probe(desc.substr(0, desc.find('\0')));
    if (std::find(names.begin(), names.end(), probe) == names.end()) names.push_back(std::move(probe));
  });
  return names;
}

bool has_usdt_provider(const std::string& path, std::string_view provider) {
  return !usdt_probes(path, provider).empty();
}

}  // namespace pm::probes
