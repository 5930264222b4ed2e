// SPDX-License-Identifier: Apache-2.0
#include "sources/probes/symbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <lzma.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "core/fd.h"
#include "core/text.h"

namespace pm::probes {
namespace {

Error invalid(std::string msg) { return make_error(Errc::kInvalidArgument, std::move(msg)); }

std::string demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

// Spaces only matter between two identifier characters ("unsigned int"): elsewhere they are
// dropped, so "add(int,double)" matches the demangler's "add(int, double)".
std::string normalise(std::string_view s) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != ' ') {
      out += s[i];
      continue;
    }
    size_t j = i;
    while (j < s.size() && s[j] == ' ') ++j;
    if (!out.empty() && j < s.size() && word(out.back()) && word(s[j])) out += ' ';
    i = j - 1;
  }
  return out;
}

struct ElfFile {
  UniqueFd fd;
  std::unique_ptr<Elf, int (*)(Elf*)> elf{nullptr, elf_end};
};

Result<ElfFile> open_elf(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(Errc::kUnavailable, "libelf is too old");
  ElfFile f;
  f.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.fd) return Error::from_errno(errno, "cannot open " + path);
  f.elf.reset(elf_begin(f.fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!f.elf || elf_kind(f.elf.get()) != ELF_K_ELF) return invalid(path + " is not an ELF executable or library");
  return f;
}

// xz-compressed bytes (the MiniDebugInfo of .gnu_debugdata) decompressed.
std::optional<std::vector<char>> unxz(const char* data, size_t size) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK) return std::nullopt;
  std::vector<char> out(size * 4 + 4096);
  strm.next_in = reinterpret_cast<const uint8_t*>(data);
  strm.avail_in = size;
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {
    if (strm.total_out == out.size()) out.resize(out.size() * 2);
    strm.next_out = reinterpret_cast<uint8_t*>(out.data()) + strm.total_out;
    strm.avail_out = out.size() - strm.total_out;
    ret = lzma_code(&strm, LZMA_FINISH);
  }
  out.resize(strm.total_out);
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) return std::nullopt;
  return out;
}

void collect_functions(Elf* elf, std::vector<ElfSymbol>& out, std::vector<char>* debugdata) {
  size_t shstrndx = 0;
  elf_getshdrstrndx(elf, &shstrndx);
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    if (debugdata != nullptr && sh.sh_type == SHT_PROGBITS) {
      const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
      Elf_Data* d = name && std::strcmp(name, ".gnu_debugdata") == 0 ? elf_getdata(scn, nullptr) : nullptr;
      if (d && d->d_buf) {
        if (auto bytes = unxz(static_cast<const char*>(d->d_buf), d->d_size)) *debugdata = std::move(*bytes);
      }
      continue;
    }
    if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) continue;
    size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
      int type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (name == nullptr || *name == '\0') continue;
      out.push_back({name, demangle(name), sym.st_value});
    }
  }
}

// Which candidates to show: the closest by edit distance of their short names, then the rest
// that contain the query.
std::string closest(const std::vector<ElfSymbol>& symbols, std::string_view query) {
  std::string q = base_name(normalise(query));
  std::string last = q.substr(q.rfind("::") == std::string::npos ? 0 : q.rfind("::") + 2);
  std::vector<std::pair<size_t, std::string>> scored;
  std::set<std::string> seen;
  for (const ElfSymbol& s : symbols) {
    if (!seen.insert(s.demangled).second) continue;
    std::string b = base_name(s.demangled);
    std::string tail = b.substr(b.rfind("::") == std::string::npos ? 0 : b.rfind("::") + 2);
    size_t d = std::min(edit_distance(q, b), edit_distance(last, tail));
    if (b.find(last) != std::string::npos) d = std::min<size_t>(d, 1);
    scored.emplace_back(d, s.demangled);
  }
  std::sort(scored.begin(), scored.end());
  size_t limit = std::max<size_t>(2, last.size() / 3);
  std::string hints;
  for (size_t i = 0; i < scored.size() && i < 5 && scored[i].first <= limit; ++i) {
    hints += (i ? ", " : "") + scored[i].second;
  }
  return hints;
}

}  // namespace

std::string base_name(std::string_view demangled) {
  std::string s(demangled);
  // Drop cv/ref qualifiers after the parameter list, then the list itself.
  size_t close = s.rfind(')');
  if (close != std::string::npos && s.find('(') != std::string::npos) {
    int depth = 0;
    size_t i = close + 1;
    while (i-- > 0) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) break;
    }
    if (depth == 0 && i > 0 && !std::string_view(s).substr(0, i).ends_with("operator")) s.resize(i);
  }
  // A function template's demangled name begins with its return type: keep what follows the
  // last space outside template brackets.
  int angle = 0;
  size_t cut = std::string::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++angle;
    if (s[i] == '>') --angle;
    if (s[i] == ' ' && angle == 0 && !std::string_view(s).substr(0, i).ends_with("operator")) cut = i;
  }
  return cut == std::string::npos ? s : s.substr(cut + 1);
}

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
  spec.function = std::string(fn);
  return spec;
}

Result<std::vector<ElfSymbol>> read_function_symbols(const std::string& path) {
  auto f = open_elf(path);
  if (!f) return f.error();
  std::vector<ElfSymbol> out;
  std::vector<char> debugdata;
  collect_functions(f->elf.get(), out, &debugdata);
  if (!debugdata.empty()) {
    std::unique_ptr<Elf, int (*)(Elf*)> mini(elf_memory(debugdata.data(), debugdata.size()), elf_end);
    if (mini) collect_functions(mini.get(), out, nullptr);
  }
  return out;
}

Result<ElfSymbol> match_symbol(const std::vector<ElfSymbol>& symbols, std::string_view function,
                               std::string_view binary) {
  std::string query = normalise(function);
  bool with_params = query.find('(') != std::string::npos && !base_name(query).empty() && base_name(query) != query;
  // Candidates in order of how exactly they were named; the first rule that matches decides.
  std::vector<std::vector<const ElfSymbol*>> rules(4);
  for (const ElfSymbol& s : symbols) {
    if (s.name == query) rules[0].push_back(&s);
    if (with_params && normalise(s.demangled) == query) rules[1].push_back(&s);
    std::string b = base_name(s.demangled);
    if (!with_params && b == query) rules[2].push_back(&s);
    if (!with_params && b.size() > query.size() && b.ends_with(query) && b.ends_with("::" + query)) {
      rules[3].push_back(&s);
    }
  }
  for (auto& found : rules) {
    if (found.empty()) continue;
    std::map<uint64_t, const ElfSymbol*> by_addr;  // aliases at one address are one function
    for (const ElfSymbol* s : found) by_addr.emplace(s->addr, s);
    if (by_addr.size() == 1) return *by_addr.begin()->second;
    std::string names;
    int shown = 0;
    std::set<std::string> listed;
    for (const auto& [addr, s] : by_addr) {
      if (!listed.insert(s->demangled).second || shown == 8) continue;
      names += (shown++ ? "; " : "") + s->demangled;
    }
    return invalid("'" + std::string(function) + "' names " + std::to_string(by_addr.size()) + " functions in " +
                   std::string(binary) + ": " + names + " (pick one with its parameter list, e.g. '" +
                   std::string(binary) + ":" + by_addr.begin()->second->demangled + "')");
  }
  std::string msg = "no function '" + std::string(function) + "' in " + std::string(binary);
  std::string hints = closest(symbols, function);
  if (!hints.empty()) msg += " (closest: " + hints + ")";
  if (symbols.empty()) msg += " (it has no symbol table: it was stripped)";
  return make_error(Errc::kNotFound, msg);
}

Result<std::string> find_binary(std::string_view binary) {
  std::string b(binary);
  auto usable = [](const std::string& p) { return ::access(p.c_str(), R_OK) == 0; };
  if (b.find('/') != std::string::npos) {
    if (usable(b)) return b;
    return make_error(Errc::kNotFound, "no binary " + b + ": check the path");
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
  return make_error(Errc::kNotFound, "no binary or library '" + b +
                                         "' on PATH or in the library directories: give its path, e.g. "
                                         "/usr/lib/x86_64-linux-gnu/" + b);
}

Result<uint64_t> file_offset(const std::string& path, uint64_t addr) {
  auto f = open_elf(path);
  if (!f) return f.error();
  size_t n = 0;
  if (elf_getphdrnum(f->elf.get(), &n) != 0) return invalid(path + " has no program headers");
  for (size_t i = 0; i < n; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(f->elf.get(), static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
    if ((ph.p_flags & PF_X) && addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_memsz) {
      return addr - ph.p_vaddr + ph.p_offset;
    }
  }
  return invalid("the function's address is in no executable segment of " + path);
}

Result<ResolvedProbe> resolve_probe(const ProbeSpec& spec) {
  auto path = find_binary(spec.binary);
  if (!path) return path.error();
  auto symbols = read_function_symbols(*path);
  if (!symbols) return symbols.error();
  auto sym = match_symbol(*symbols, spec.function, spec.binary);
  if (!sym) return sym.error();
  auto off = file_offset(*path, sym->addr);
  if (!off) return off.error();
  return ResolvedProbe{*path, sym->demangled, *off, spec.arg};
}

bool has_usdt_provider(const std::string& path, std::string_view provider) {
  auto f = open_elf(path);
  if (!f) return false;
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
