// SPDX-License-Identifier: Apache-2.0
#include "sources/probes/otel.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/fd.h"
#include "core/text.h"
#include "sources/probes/symbols.h"

namespace pm::otel {
namespace {

// What one ELF file says about the variable.
struct Object {
  bool defines = false;  // a defined TLS symbol of that name in .dynsym
  uint64_t value = 0;    // its offset in the file's TLS segment
  bool referenced = false;  // named in .dynsym at all (defined, or used from another file)
  uint64_t tls_memsz = 0, tls_align = 1, tls_vaddr = 0;
  uint64_t load_vaddr = UINT64_MAX;  // the first PT_LOAD's, page aligned
  struct Reloc {
    uint32_t type;
    uint64_t offset;
    int64_t addend;
  };
  std::vector<Reloc> relocs;  // the dynamic relocations against it
  std::vector<std::string> needed, search;  // DT_NEEDED, DT_RUNPATH/DT_RPATH entries
};

bool libelf_ready() { return elf_version(EV_CURRENT) != EV_NONE; }

// Reads what the variable needs from an open ELF file; nullopt for a file that is not a 64-bit
// ELF executable or library of this CPU.
std::optional<Object> analyse(int fd) {
  if (!libelf_ready()) return std::nullopt;
  probes::ElfPtr elf = probes::begin_elf(fd);  // (never mapped where another user could cut it short)
  GElf_Ehdr eh;
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF || gelf_getclass(elf.get()) != ELFCLASS64 ||
      gelf_getehdr(elf.get(), &eh) == nullptr || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
    return std::nullopt;
  }
#if defined(__x86_64__)
  if (eh.e_machine != EM_X86_64) return std::nullopt;
#elif defined(__aarch64__)
  if (eh.e_machine != EM_AARCH64) return std::nullopt;
#endif
  Object o;
  size_t phnum = 0;
  if (elf_getphdrnum(elf.get(), &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf.get(), static_cast<int>(i), &ph) == nullptr) continue;
      if (ph.p_type == PT_LOAD) o.load_vaddr = std::min<uint64_t>(o.load_vaddr, ph.p_vaddr & ~uint64_t{4095});
      if (ph.p_type == PT_TLS) {
        o.tls_memsz = ph.p_memsz;
        o.tls_align = ph.p_align ? ph.p_align : 1;
        o.tls_vaddr = ph.p_vaddr;
      }
    }
  }
  // .dynsym: the symbol's index; then the relocations that name it, and the dynamic section.
  size_t dynsym_index = 0;
  uint64_t sym = 0;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr) continue;
    size_t n = d->d_size / sh.sh_entsize;
    for (size_t i = 1; i < n; ++i) {
      GElf_Sym s;
      if (gelf_getsym(d, static_cast<int>(i), &s) == nullptr) break;
      const char* name = elf_strptr(elf.get(), sh.sh_link, s.st_name);
      if (name == nullptr || std::strcmp(name, kSymbol) != 0 || GELF_ST_TYPE(s.st_info) != STT_TLS) continue;
      dynsym_index = elf_ndxscn(scn);
      sym = i;
      o.referenced = true;
      if (s.st_shndx != SHN_UNDEF) {
        o.defines = true;
        o.value = s.st_value;
      }
      break;
    }
    break;
  }
  scn = nullptr;
  while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr || sh.sh_entsize == 0) continue;
    size_t n = d->d_size / sh.sh_entsize;
    if (sh.sh_type == SHT_RELA && o.referenced && sh.sh_link == dynsym_index) {
      for (size_t i = 0; i < n; ++i) {
        GElf_Rela r;
        if (gelf_getrela(d, static_cast<int>(i), &r) == nullptr) break;
        if (GELF_R_SYM(r.r_info) == sym) o.relocs.push_back({static_cast<uint32_t>(GELF_R_TYPE(r.r_info)), r.r_offset, r.r_addend});
      }
    } else if (sh.sh_type == SHT_DYNAMIC) {
      for (size_t i = 0; i < n; ++i) {
        GElf_Dyn dyn;
        if (gelf_getdyn(d, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH) continue;
        const char* str = elf_strptr(elf.get(), sh.sh_link, dyn.d_un.d_val);
        if (str == nullptr) continue;
        (dyn.d_tag == DT_NEEDED ? o.needed : o.search).emplace_back(str);
      }
    }
  }
  return o;
}

// One file's analysis, by identity (device, inode, size, change time): a process's libraries are
// mostly the files every other process maps.
const Object* analysed(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
  using Id = std::array<uint64_t, 5>;
  static std::map<Id, std::optional<Object>> cache;
  Id id{st.st_dev, st.st_ino, static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_ctim.tv_sec),
        static_cast<uint64_t>(st.st_ctim.tv_nsec)};
  auto it = cache.find(id);
  if (it == cache.end()) {
    if (cache.size() >= 1024) cache.clear();
    it = cache.emplace(id, analyse(fd)).first;
  }
  return it->second ? &*it->second : nullptr;
}

// A file a process has mapped: its first mapping's range (to open it through map_files: the
// very file mapped, whatever its path names now) and where its offset 0 is mapped.
struct Mapped {
  uint64_t dev = 0, ino = 0;
  std::string range;
  uint64_t base = UINT64_MAX;
};

std::vector<Mapped> mapped_files(int pid) {
  std::vector<Mapped> out;
  UniqueFd fd(::open(fmt::format("/proc/{}/maps", pid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return out;
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0 && text.size() < (32u << 20)) text.append(buf, static_cast<size_t>(n));
  size_t at = 0;
  while (at < text.size() && out.size() < 4096) {
    size_t eol = text.find('\n', at);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(at, eol - at);
    at = eol + 1;
    unsigned long long start = 0, end = 0, offset = 0, inode = 0;
    unsigned major = 0, minor = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &offset, &major, &minor, &inode,
                    &path_at) < 7 || inode == 0 || path_at <= 0 || line[static_cast<size_t>(path_at)] != '/') {
      continue;
    }
    uint64_t dev = makedev(major, minor);
    auto it = std::find_if(out.begin(), out.end(), [&](const Mapped& m) { return m.dev == dev && m.ino == inode; });
    if (it == out.end()) {
      out.push_back({dev, inode, fmt::format("{:x}-{:x}", start, end)});
      it = out.end() - 1;
    }
    if (offset == 0) it->base = std::min<uint64_t>(it->base, start);
  }
  return out;
}

bool read_memory(int pid, uint64_t addr, void* dst, size_t len) {
  iovec local{dst, len}, remote{reinterpret_cast<void*>(addr), len};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

Error not_found(const std::string& why) { return make_error(Errc::kNotFound, why); }
Error unavailable(const std::string& why) { return make_error(Errc::kUnavailable, why); }

}  // namespace

Result<Tls> locate(int pid) {
#if !defined(__x86_64__)
  (void)pid;
  return unavailable("OpenTelemetry thread context is read on x86-64 only");
#else
  struct stat exe {};
  if (::stat(fmt::format("/proc/{}/exe", pid).c_str(), &exe) != 0) return Error::from_errno(errno, "the process is gone");
  struct Seen {
    const Object* o;
    Mapped m;
    bool is_exe;
  };
  std::vector<Seen> seen;
  const Seen* definer = nullptr;
  for (const Mapped& m : mapped_files(pid)) {
    UniqueFd fd(::open(fmt::format("/proc/{}/map_files/{}", pid, m.range).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) continue;
    const Object* o = analysed(fd.get());
    if (o == nullptr || !o->referenced) continue;
    seen.push_back({o, m, m.dev == exe.st_dev && m.ino == exe.st_ino});
  }
  for (const Seen& s : seen) {
    if (s.o->defines) definer = &s;
  }
  if (definer == nullptr) return not_found(std::string("no file the process has mapped exports ") + kSymbol);
  Tls t;
  t.mode = PM_OTEL_STATIC;
  if (definer->is_exe) {
    // The executable's block is the first below the thread pointer (glibc and musl on x86-64):
    // its TLS segment's size rounded up to its alignment, keeping the segment's offset in it.
    const Object& o = *definer->o;
    uint64_t align = o.tls_align, first = (0 - o.tls_vaddr) & (align - 1);
    if (o.tls_memsz == 0 || (align & (align - 1)) != 0 || o.value >= o.tls_memsz) {
      return unavailable(std::string(kSymbol) + " lies outside the executable's TLS segment");
    }
    uint64_t block = (o.tls_memsz - first + align - 1) / align * align + first;
    t.off = static_cast<int64_t>(o.value) - static_cast<int64_t>(block);
    return t;
  }
  // A library's: the slot its dynamic linker filled for a relocation that names it, the
  // library's own first.
  std::stable_sort(seen.begin(), seen.end(), [&](const Seen& a, const Seen& b) { return &a == definer && &b != definer; });
  for (const Seen& s : seen) {
    if (s.m.base == UINT64_MAX || s.o->load_vaddr == UINT64_MAX) continue;
    uint64_t bias = s.m.base - s.o->load_vaddr;
    for (const Object::Reloc& r : s.o->relocs) {
      uint64_t at = bias + r.offset, word[2] = {};
      if (r.type == R_X86_64_TLSDESC) {
        if (!read_memory(pid, at, word, sizeof word)) continue;
        auto arg = static_cast<int64_t>(word[1]);
        if (word[1] == 0) return not_found("its TLS descriptor is not filled in yet");
        // Static TLS (a library loaded at start): the argument is the offset from the thread
        // pointer. Anything else points at the dynamic linker's data for dynamic TLS.
        if (arg >= 0 || arg < -(int64_t{1} << 32)) {
          return unavailable(std::string(kSymbol) + " is in dynamic TLS (a library loaded with dlopen): not read");
        }
        t.off = arg - r.addend;
        return t;
      }
      if (r.type == R_X86_64_TPOFF64) {
        if (!read_memory(pid, at, word, 8)) continue;
        auto off = static_cast<int64_t>(word[0]);
        if (off == 0) return not_found("its TLS offset is not filled in yet");
        if (off > 0 || off < -(int64_t{1} << 32)) continue;
        t.off = off - r.addend;
        return t;
      }
      if (r.type == R_X86_64_DTPMOD64) {
        if (!read_memory(pid, at, word, 8)) continue;
        if (word[0] == 0) return not_found("its TLS module is not filled in yet");
        if (word[0] > 65536) continue;
        t.mode = PM_OTEL_DTV;
        t.modid = word[0];
        t.off = static_cast<int64_t>(definer->o->value) + r.addend;
        return t;
      }
    }
  }
  return not_found(std::string("no relocation of ") + kSymbol + " is filled in yet");
#endif
}

namespace {

// Where the dynamic linker would find library `name` needed by the file in `dir`.
std::optional<std::string> find_library(const std::string& name, const std::string& dir, const std::vector<std::string>& search) {
  if (name.find('/') != std::string::npos) return name;
  std::vector<std::string> dirs;
  for (const std::string& entry : search) {
    size_t at = 0;
    while (at <= entry.size()) {
      size_t colon = entry.find(':', at);
      if (colon == std::string::npos) colon = entry.size();
      std::string d = entry.substr(at, colon - at);
      for (const char* origin : {"${ORIGIN}", "$ORIGIN"}) {
        size_t o = d.find(origin);
        if (o != std::string::npos) d.replace(o, std::strlen(origin), dir);
      }
      if (!d.empty()) dirs.push_back(d);
      at = colon + 1;
    }
  }
  if (const char* env = std::getenv("LD_LIBRARY_PATH")) {
    std::string e = env;
    size_t at = 0;
    while (at <= e.size()) {
      size_t colon = e.find(':', at);
      if (colon == std::string::npos) colon = e.size();
      if (colon > at) dirs.push_back(e.substr(at, colon - at));
      at = colon + 1;
    }
  }
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                        "/usr/lib/aarch64-linux-gnu", "/usr/local/lib", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}) {
    dirs.emplace_back(d);
  }
  for (const std::string& d : dirs) {
    std::string p = d + "/" + name;
    if (::access(p.c_str(), R_OK) == 0) return p;
  }
  return std::nullopt;
}

std::string dir_of(const std::string& path) {
  char real[PATH_MAX];
  std::string p = ::realpath(path.c_str(), real) != nullptr ? std::string(real) : path;
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
}

}  // namespace

bool may_publish(const std::string& exe) {
  int pid = 0;
  if (std::sscanf(exe.c_str(), "/proc/%d/exe", &pid) == 1 && pid > 0) {
    for (const Mapped& m : mapped_files(pid)) {
      UniqueFd fd(::open(fmt::format("/proc/{}/map_files/{}", pid, m.range).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
      const Object* o = fd ? analysed(fd.get()) : nullptr;
      if (o != nullptr && o->defines) return true;
    }
    return false;
  }
  std::deque<std::string> todo{exe};
  std::set<std::string> looked;
  while (!todo.empty() && looked.size() < 64) {
    std::string path = todo.front();
    todo.pop_front();
    if (!looked.insert(path).second) continue;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    const Object* o = fd ? analysed(fd.get()) : nullptr;
    if (o == nullptr) continue;
    if (o->defines) return true;
    std::string dir = dir_of(path);
    for (const std::string& n : o->needed) {
      if (auto lib = find_library(n, dir, o->search)) todo.push_back(*lib);
    }
  }
  return false;
}

// ---- Join ----

namespace {
std::string hex(const uint8_t* b, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[b[i] >> 4];
    s[2 * i + 1] = kDigits[b[i] & 15];
  }
  return s;
}
bool same(const pm_otel_ctx& a, const pm_otel_ctx& b) {
  return std::memcmp(a.trace_id, b.trace_id, 16) == 0 && std::memcmp(a.span_id, b.span_id, 8) == 0;
}
}  // namespace

Join::Agg* Join::find(int pid, int tid, const pm_otel_ctx& c, uint64_t at) {
  Key k{pid, {}};
  std::memcpy(k.ids.data(), c.trace_id, 16);
  std::memcpy(k.ids.data() + 16, c.span_id, 8);
  auto it = open_.find(k);
  if (it == open_.end()) {
    if (open_.size() >= kMaxOpen) {
      ++dropped_;
      return nullptr;
    }
    it = open_.emplace(k, Agg{}).first;
    it->second.first_tid = tid;
    it->second.flags = c.trace_flags;
  }
  Agg& a = it->second;
  if (std::find(a.tids.begin(), a.tids.end(), tid) == a.tids.end() && a.tids.size() < 64) a.tids.push_back(tid);
  a.last = std::max(a.last, at);
  return &a;
}

void Join::hold(int tid, int pid, const pm_otel_ctx& c) {
  auto it = holding_.find(tid);
  if (it != holding_.end()) {
    auto a = open_.find(it->second);
    if (a != open_.end() && a->second.holders > 0) --a->second.holders;
    holding_.erase(it);
  }
  if (c.valid != 1) return;
  Key k{pid, {}};
  std::memcpy(k.ids.data(), c.trace_id, 16);
  std::memcpy(k.ids.data() + 16, c.span_id, 8);
  auto a = open_.find(k);
  if (a == open_.end()) return;
  ++a->second.holders;
  holding_.emplace(tid, k);
}

void Join::event(const pm_otel_event& e) {
  int pid = static_cast<int>(e.pid), tid = static_cast<int>(e.tid);
  ++stretches_;
  if (e.kind == PM_OTEL_RUN) {
    // A stretch on the CPU: the context it began and ended with. Where they differ, the change
    // came at a moment no kernel event marks: a stretch between a span and no span counts for
    // the span; between two spans, half for each.
    const pm_otel_ctx& a = e.ctx[0];
    const pm_otel_ctx& b = e.ctx[1];
    bool av = e.start_known && a.valid == 1, bv = b.valid == 1;
    std::vector<std::pair<const pm_otel_ctx*, double>> parts;
    if (av && bv && same(a, b)) {
      parts.push_back({&a, 1.0});
    } else if (av && bv) {
      parts = {{&a, 0.5}, {&b, 0.5}};
    } else if (av) {
      parts.push_back({&a, 1.0});
    } else if (bv) {
      parts.push_back({&b, 1.0});
    }
    for (auto [c, share] : parts) {
      Agg* g = find(pid, tid, *c, e.to_ns);
      if (g == nullptr) continue;
      g->first = std::min<uint64_t>(g->first, e.from_ns);
      g->on_cpu += static_cast<uint64_t>(static_cast<double>(e.value) * share);
      g->faults += static_cast<uint64_t>(static_cast<double>(e.faults) * share);
      ++g->stretches;
    }
    hold(tid, pid, b);
  } else if (e.kind == PM_OTEL_GAP) {
    Agg* g = find(pid, tid, e.ctx[0], e.to_ns);
    if (g == nullptr) return;
    uint64_t off = e.to_ns > e.from_ns ? e.to_ns - e.from_ns : 0, wait = std::min<uint64_t>(e.value, off);
    g->first = std::min<uint64_t>(g->first, e.from_ns);
    g->runq += wait;
    g->blocked[std::min<uint32_t>(e.reason, PM_BLOCK_OTHER)] += off - wait;
    ++(e.involuntary ? g->involuntary : g->voluntary);
    ++g->stretches;
    if (holding_.find(tid) == holding_.end()) hold(tid, pid, e.ctx[0]);
  } else if (e.kind == PM_OTEL_BIO) {
    Agg* g = find(pid, tid, e.ctx[0], e.from_ns);
    if (g == nullptr) return;
    g->first = std::min<uint64_t>(g->first, e.from_ns);
    (e.reason ? g->bio_write : g->bio_read) += e.value;
  }
}

void Join::emit(const Key& k, Agg& a, const Out& out, WallClock::time_point wall_at_mono_zero) {
  Span s;
  s.function = "request";
  s.pid = k.pid;
  s.tid = a.first_tid;
  s.own_request = true;
  s.trace_id = hex(k.ids.data(), 16);
  s.parent_span_id = hex(k.ids.data() + 16, 8);
  uint64_t first = a.first == UINT64_MAX ? a.last : a.first;
  s.start = wall_at_mono_zero + std::chrono::duration_cast<WallClock::duration>(std::chrono::nanoseconds(first));
  s.seconds = static_cast<double>(a.last - first) * 1e-9;
  s.on_cpu_seconds = static_cast<double>(a.on_cpu) * 1e-9;
  s.runq_seconds = static_cast<double>(a.runq) * 1e-9;
  uint64_t blocked = 0;
  for (uint64_t b : a.blocked) blocked += b;
  s.blocked_seconds = static_cast<double>(blocked) * 1e-9;
  s.blocked_io_seconds = static_cast<double>(a.blocked[PM_BLOCK_IO]) * 1e-9;
  s.blocked_sleep_seconds = static_cast<double>(a.blocked[PM_BLOCK_SLEEP]) * 1e-9;
  s.blocked_lock_seconds = static_cast<double>(a.blocked[PM_BLOCK_LOCK]) * 1e-9;
  s.blocked_other_seconds = static_cast<double>(a.blocked[PM_BLOCK_OTHER]) * 1e-9;
  s.voluntary_switches = a.voluntary;
  s.involuntary_switches = a.involuntary;
  s.bio_read_bytes = a.bio_read;
  s.bio_write_bytes = a.bio_write;
  s.page_faults = a.faults;
  s.threads = static_cast<uint32_t>(a.tids.size());
  ++spans_out_;
  out(s);
}

void Join::round(uint64_t now_ns, const Out& out, WallClock::time_point wall_at_mono_zero) {
  for (auto it = open_.begin(); it != open_.end();) {
    Agg& a = it->second;
    uint64_t idle = now_ns > a.last ? now_ns - a.last : 0;
    if (idle >= (a.holders ? kHeldNs : kIdleNs)) {
      if (a.holders) {
        for (auto h = holding_.begin(); h != holding_.end();) h = h->second == it->first ? holding_.erase(h) : std::next(h);
      }
      emit(it->first, a, out, wall_at_mono_zero);
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

void Join::flush(const Out& out, WallClock::time_point wall_at_mono_zero) {
  for (auto& [k, a] : open_) emit(k, a, out, wall_at_mono_zero);
  open_.clear();
  holding_.clear();
}

}  // namespace pm::otel
