// SPDX-License-Identifier: Apache-2.0
#include "sources/stacks/unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/fd.h"
#include "core/file_reader.h"
#include "core/outside_text.h"
#include "core/text.h"
#include "sources/probes/symbols.h"

namespace pm::stacks {
namespace {

constexpr size_t kMaxProcesses = 256;      // processes whose mappings and names are kept
constexpr size_t kMaxNamesPerProcess = 65536;
constexpr int kMaxInlineDepth = 32;
constexpr size_t kMaxDiesPerLookup = 1 << 20;  // DIEs looked at for one pc's scopes

// One pc's frames (outermost first) and each one's source line.
struct Named {
  Frames frames;
  std::vector<SourceLine> lines;
};
constexpr size_t kMaxMapsBytes = 4 << 20;  // a /proc/PID/maps beyond this is read that far
constexpr uint64_t kRereadAfterNs = 500'000;  // a process's mappings are read at most this often
constexpr uint64_t kUprobesPageX86 = 0x7fffffffe000;  // where x86-64 kernels put the uprobes' page

// The mappings of files with code (one mapped executable: each of its mappings, the headers' too),
// the vDSO and the uprobes' page: what the modules and names are made from. Anonymous memory
// comes and goes with every malloc arena and JIT page, and changes neither; a file of data only
// (ld.so.cache, a locale archive) holds no pc, and as a module it would name the code mapped at
// its place once it is gone (a library dlopen'd where ld.so.cache was at start).
std::string file_mappings(std::string_view maps) {
  auto path_of = [](std::string_view line) {
    size_t at = line.find(" /");
    return at == std::string_view::npos ? std::string_view() : line.substr(at + 1);
  };
  std::set<std::string_view> code;
  for_each_line(maps, [&](std::string_view line) {
    size_t perms = line.find(' ');
    if (perms != std::string_view::npos && perms + 3 < line.size() && line[perms + 3] == 'x') {
      if (std::string_view path = path_of(line); !path.empty()) code.insert(path);
    }
  });
  std::string out;
  for_each_line(maps, [&](std::string_view line) {
    std::string_view path = path_of(line);
    if ((!path.empty() && code.count(path)) || line.ends_with("[vdso]") || line.ends_with("[uprobes]")) {
      out += line;
      out += '\n';
    }
  });
  return out;
}

// x86-64 pt_regs (r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax ip cs flags sp ss)
// in DWARF's register order (rax rdx rcx rbx rsi rdi rbp rsp r8 … r15, then the return address).
constexpr int kDwarfFromPtRegs[17] = {10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16};
constexpr size_t kPtRegsWords = 21;
constexpr size_t kIp = 16;

}  // namespace

struct Unwinder::Process {
  uint32_t tgid = 0;
  uint64_t read_at = 0;  // CLOCK_MONOTONIC ns when the mappings were read (or found unchanged)
  std::string files_mapped;  // the mappings of files as read then (file_mappings)
  // The uprobes' page: a return address there is a uretprobe's (a probed function's caller,
  // which the kernel keeps: the walk ends there).
  uint64_t uprobes_lo = 0, uprobes_hi = 0;
  Dwfl* dwfl = nullptr;
  bool attached = false;
  // Each mapped file by the path /proc/PID/maps gives it, held open.
  std::unordered_map<std::string, std::shared_ptr<UniqueFd>> files;
  const UserState* current = nullptr;
  std::unordered_map<uint64_t, Named> names;  // by pc (as looked up: a return address less 1)
  uint64_t used = 0;
  uint64_t read_elf_bytes = 0;  // of files read, not mapped (find_elf)
  ~Process();
};

namespace {

thread_local Unwinder::Process* g_current = nullptr;

uint64_t mono_ns();

// The vDSO: the kernel maps the same image into every process, so perf-monitor's own serves
// (its CFI unwinds a sample taken in clock_gettime, say).
constexpr const char* kVdso = "[vdso]";
std::span<const char> own_vdso() {
  static const std::span<const char> image = [] {
    auto base = static_cast<uintptr_t>(::getauxval(AT_SYSINFO_EHDR));
    if (base == 0) return std::span<const char>();
    FileReader r;
    auto maps = r.read("/proc/self/maps");
    size_t size = 0;
    if (maps) {
      for_each_line(*maps, [&](std::string_view line) {
        if (!line.ends_with(kVdso)) return;
        std::string_view range = line.substr(0, line.find(' '));
        uint64_t lo = std::strtoull(std::string(range.substr(0, range.find('-'))).c_str(), nullptr, 16);
        uint64_t hi = std::strtoull(std::string(range.substr(range.find('-') + 1)).c_str(), nullptr, 16);
        if (lo == base && hi > lo) size = hi - lo;
      });
    }
    return std::span<const char>(reinterpret_cast<const char*>(base), size);
  }();
  return image;
}

// Bytes of files another user can write that the processes' modules read into memory (those
// files are never mapped: probes::begin_elf), and the most they may: past it, such files are not
// read, and their frames are named by file and offset.
uint64_t g_read_elf_bytes = 0;
constexpr uint64_t kMaxReadElfTotal = 2ULL << 30;

}  // namespace

Unwinder::Process::~Process() {
  if (dwfl != nullptr) dwfl_end(dwfl);
  g_read_elf_bytes -= std::min(g_read_elf_bytes, read_elf_bytes);
}

namespace {

// The module's ELF: the file perf-monitor opened when it read the mappings, or the vDSO's image.
// Files it could not open are left unnamed. A file only root can change goes to libdwfl to map
// (a dup: libdwfl closes what it is given); any other is read, not mapped, through the held fd
// (a file its owner cuts short since reads as an ELF that ends there; through a mapping it
// would be a SIGBUS).
int find_elf(Dwfl_Module* /*mod*/, void** /*userdata*/, const char* name, Dwarf_Addr /*base*/, char** file_name,
             Elf** elfp) {
  if (g_current == nullptr || name == nullptr) return -1;
  if (std::string_view(name) == kVdso) {
    std::span<const char> image = own_vdso();
    if (image.empty()) return -1;
    *elfp = elf_memory(const_cast<char*>(image.data()), image.size());
    return -1;
  }
  auto it = g_current->files.find(name);
  if (it == g_current->files.end() || !it->second || !*it->second) return -1;
  int held = it->second->get();
  if (!probes::only_root_writes(held)) {
    struct stat st {};
    if (::fstat(held, &st) != 0 || g_read_elf_bytes + static_cast<uint64_t>(st.st_size) > kMaxReadElfTotal) return -1;
    uint64_t bytes = 0;
    *elfp = probes::begin_elf(held, &bytes).release();  // reads while the Process holds the fd
    g_current->read_elf_bytes += bytes;
    g_read_elf_bytes += bytes;
    if (*elfp != nullptr && file_name != nullptr) *file_name = ::strdup(name);
    return -1;
  }
  int fd = ::fcntl(held, F_DUPFD_CLOEXEC, 0);
  if (fd >= 0 && file_name != nullptr) *file_name = ::strdup(name);
  return fd;
}

// Separate debug information (by build ID, .gnu_debuglink beside the binary or under
// /usr/lib/debug): libdwfl maps it, so only a file only root can change is used.
int find_debuginfo(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, const char* file_name,
                   const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
  int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
  if (fd >= 0 && !probes::only_root_writes(fd)) {
    ::close(fd);
    if (debuginfo_file_name != nullptr) {
      std::free(*debuginfo_file_name);
      *debuginfo_file_name = nullptr;
    }
    return -1;
  }
  return fd;
}

char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    .find_elf = find_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

pid_t next_thread(Dwfl* /*dwfl*/, void* /*arg*/, void** /*thread_argp*/) { return 0; }

bool get_thread(Dwfl* /*dwfl*/, pid_t /*tid*/, void* arg, void** thread_argp) {
  *thread_argp = arg;
  return true;
}

// Memory is the stack's copy only: a read outside it ends the walk there.
bool memory_read(Dwfl* /*dwfl*/, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  auto* p = static_cast<Unwinder::Process*>(arg);
  const UserState* s = p->current;
  if (s == nullptr || addr < s->stack_start || addr - s->stack_start + sizeof(Dwarf_Word) > s->stack.size()) {
    return false;
  }
  std::memcpy(result, s->stack.data() + (addr - s->stack_start), sizeof(Dwarf_Word));
  return true;
}

bool set_initial_registers(Dwfl_Thread* thread, void* arg) {
  auto* p = static_cast<Unwinder::Process*>(arg);
  const UserState* s = p->current;
  if (s == nullptr || s->regs.size() < kPtRegsWords) return false;
  Dwarf_Word regs[17];
  for (int i = 0; i < 17; i++) regs[i] = s->regs[static_cast<size_t>(kDwarfFromPtRegs[i])];
  dwfl_thread_state_register_pc(thread, s->regs[kIp]);
  return dwfl_thread_state_registers(thread, 0, 17, regs);
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
    .detach = nullptr,
    .thread_detach = nullptr,
};

std::string clean_name(const char* raw) {
  // A dynamic symbol's version ("memcpy@@GLIBC_2.14") is not part of its name.
  std::string_view v(raw);
  std::string name = probes::demangle(std::string(v.substr(0, v.find('@'))));
  return clean_utf8(name);
}

// The function an inlined call's DIE is an instance of: its linkage name demangled, else its name.
std::string die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (s == nullptr) s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  if (s != nullptr) return clean_name(s);
  s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));  // its abstract origin's, for an inlined call
  return s != nullptr ? clean_utf8(s) : std::string();
}

// A source file named by the compiler (DW_AT_name of a line table's file, an inlined call's
// DW_AT_call_file): printable UTF-8, whatever its bytes.
SourceLine source_line(const char* file, int line) {
  if (file == nullptr || line <= 0) return {};
  return {clean_utf8(file), static_cast<uint32_t>(line)};
}

// Where an inlined call's DIE was called from: DW_AT_call_file (an index into its CU's files)
// and DW_AT_call_line.
SourceLine call_site(Dwarf_Die* cu, Dwarf_Die* inlined) {
  Dwarf_Attribute attr;
  Dwarf_Word file = 0, line = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &file) != 0 ||
      dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &line) != 0 || line > UINT32_MAX) {
    return {};
  }
  Dwarf_Files* files = nullptr;
  size_t n = 0;
  if (dwarf_getsrcfiles(cu, &files, &n) != 0 || file >= n) return {};
  return source_line(dwarf_filesrc(files, file, nullptr, nullptr), static_cast<int>(line));
}

// The DIEs holding `pc` (a CU-relative address), innermost first, as dwarf_getscopes gives them;
// also below DIEs without addresses that hold functions (namespaces, types: where Rust puts its
// functions, and where libdw 0.188's dwarf_getscopes does not look).
// `budget`: DIEs it may still look at (a hostile file's siblings could run in a circle).
bool scopes_at(Dwarf_Die* parent, Dwarf_Addr pc, std::vector<Dwarf_Die>& out, size_t& budget, int depth = 0) {
  Dwarf_Die child;
  if (depth > 64 || dwarf_child(parent, &child) != 0) return false;
  do {
    if (budget == 0) return false;
    --budget;
    int tag = dwarf_tag(&child);
    bool container = tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
                     tag == DW_TAG_union_type || tag == DW_TAG_enumeration_type;
    if (dwarf_haspc(&child, pc) > 0) {
      scopes_at(&child, pc, out, budget, depth + 1);  // the inner ones first
      out.push_back(child);
      return true;
    }
    if (container && scopes_at(&child, pc, out, budget, depth + 1)) return true;
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

// The frames of one pc: the function holding it and, where DWARF says calls were inlined there,
// each inlined function, outermost first; and each one's line: the pc's for the innermost, the
// inlined call's site for the others.
Named name_pc(Dwfl* dwfl, uint64_t pc) {
  Dwfl_Module* mod = dwfl_addrmodule(dwfl, pc);
  if (mod == nullptr) return {{"[unknown]"}, {{}}};
  GElf_Off off = 0;
  GElf_Sym sym;
  const char* raw = dwfl_module_addrinfo(mod, pc, &off, &sym, nullptr, nullptr, nullptr);
  Named out;
  if (raw != nullptr && *raw != '\0') {
    out.frames.push_back(clean_name(raw));
  } else {
    Dwarf_Addr low = 0;
    const char* mname = dwfl_module_info(mod, nullptr, &low, nullptr, nullptr, nullptr, nullptr, nullptr);
    std::string base = mname != nullptr ? mname : "?";
    if (auto slash = base.rfind('/'); slash != std::string::npos) base = base.substr(slash + 1);
    out.frames.push_back(clean_utf8(fmt::format("[{}+{:#x}]", base, pc - low)));
    out.lines.emplace_back();
    return out;
  }
  SourceLine at_pc;
  if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc); line != nullptr) {
    int lineno = 0;
    const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    at_pc = source_line(file, lineno);
  }
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(mod, pc, &bias);
  Dwarf_Die* found = nullptr;
  int n = cu != nullptr ? dwarf_getscopes(cu, pc - bias, &found) : 0;
  std::vector<Dwarf_Die> scopes(found, found + std::max(n, 0));
  std::free(found);
  size_t budget = kMaxDiesPerLookup;
  if (n <= 0 && cu != nullptr) scopes_at(cu, pc - bias, scopes, budget);
  n = static_cast<int>(scopes.size());
  // Innermost first: each inlined function, and the line it is at (the pc's, then each one's
  // call site is its caller's line).
  std::vector<std::pair<std::string, SourceLine>> inlined;
  SourceLine line = at_pc;
  for (int i = 0; i < n && i < kMaxInlineDepth; i++) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    std::string name = die_name(&scopes[i]);
    // (an inlined call without a name is no frame: its line goes with it, its caller has its own)
    if (!name.empty()) inlined.emplace_back(name + " (inlined)", std::move(line));
    line = call_site(cu, &scopes[i]);
  }
  out.lines.push_back(std::move(line));
  for (auto it = inlined.rbegin(); it != inlined.rend(); ++it) {
    out.frames.push_back(std::move(it->first));
    out.lines.push_back(std::move(it->second));
  }
  return out;
}

}  // namespace

Unwinder::Unwinder() = default;
Unwinder::~Unwinder() = default;

// One fd per file, whatever the processes that map it (libc, the dynamic linker: all of them).
std::shared_ptr<UniqueFd> Unwinder::shared_file(UniqueFd fd) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::make_shared<UniqueFd>(std::move(fd));
  auto key = std::make_pair(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
  if (auto known = open_files_[key].lock()) return known;  // fd closes: the file is open already
  if (open_files_.size() > 4 * kMaxProcesses) {  // forget the files no process holds any more
    std::erase_if(open_files_, [](const auto& e) { return e.second.expired(); });
  }
  auto held = std::make_shared<UniqueFd>(std::move(fd));
  open_files_[key] = held;
  return held;
}

// The process's mappings as read the first time (fresh: read again, a stack had a pc in none of
// them: a library loaded since; kept as they were when they read the same, or the process is
// gone by then).
Unwinder::Process* Unwinder::process(const Space& key, bool fresh) {
  auto old = procs_.find(key);
  if (old != procs_.end()) {
    old->second->used = ++tick_;
    if (!fresh) return old->second.get();
    // Most such pcs are not code at all (where a walk ended in garbage): reading the mappings
    // is cheap, making the process's modules again is not; only a change makes them again.
    FileReader reader;
    auto text = reader.read(fmt::format("/proc/{}/maps", key.tgid));
    if (text && file_mappings(text->substr(0, kMaxMapsBytes)) == old->second->files_mapped) {
      old->second->read_at = mono_ns();
      return old->second.get();
    }
  }
  if (old == procs_.end() && procs_.size() >= kMaxProcesses) {  // the one used longest ago makes room
    auto oldest = procs_.begin();
    for (auto it = procs_.begin(); it != procs_.end(); ++it) {
      if (it->second->used < oldest->second->used) oldest = it;
    }
    procs_.erase(oldest);
  }
  auto p = std::make_unique<Process>();
  uint32_t tgid = key.tgid;
  p->tgid = tgid;
  p->read_at = mono_ns();
  p->used = ++tick_;
  processes_seen_++;
  std::string dir = fmt::format("/proc/{}", tgid);
  std::string maps;
  FileReader reader;
  if (auto text = reader.read(dir + "/maps"); text) maps = file_mappings(text->substr(0, kMaxMapsBytes));
  p->files_mapped = maps;
  // Each file once, opened through map_files by the range of its first mapping.
  for_each_line(maps, [&](std::string_view line) {
    std::string_view rest = line;
    std::string_view range = next_field(rest);
    for (int i = 0; i < 4; i++) next_field(rest);  // perms, offset, device, inode
    std::string_view path = trim(rest);
    if (path.empty() || path[0] != '/' || p->files.count(std::string(path))) return;
    // map_files names a range without the leading zeros /proc/PID/maps pads it with (00400000).
    auto bare = [](std::string_view hex) {
      size_t nz = hex.find_first_not_of('0');
      return std::string(nz == std::string_view::npos ? std::string_view("0") : hex.substr(nz));
    };
    size_t dash = range.find('-');
    std::string name = bare(range.substr(0, dash)) + "-" + bare(range.substr(dash + 1));
    int fd = ::open((dir + "/map_files/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    p->files.emplace(std::string(path), fd >= 0 ? shared_file(UniqueFd(fd)) : nullptr);
  });
  p->dwfl = dwfl_begin(&kCallbacks);
  if (p->dwfl != nullptr && !maps.empty()) {
    g_current = p.get();
    dwfl_report_begin(p->dwfl);
    if (FILE* f = ::fmemopen(maps.data(), maps.size(), "r"); f != nullptr) {
      dwfl_linux_proc_maps_report(p->dwfl, f);
      std::fclose(f);
    }
    for_each_line(maps, [&](std::string_view line) {
      if (line.ends_with("[uprobes]")) {
        std::string_view range = line.substr(0, line.find(' '));
        p->uprobes_lo = std::strtoull(std::string(range.substr(0, range.find('-'))).c_str(), nullptr, 16);
        p->uprobes_hi = std::strtoull(std::string(range.substr(range.find('-') + 1)).c_str(), nullptr, 16);
        return;
      }
      if (!line.ends_with(kVdso)) return;
      std::string_view range = line.substr(0, line.find(' '));
      uint64_t lo = std::strtoull(std::string(range.substr(0, range.find('-'))).c_str(), nullptr, 16);
      uint64_t hi = std::strtoull(std::string(range.substr(range.find('-') + 1)).c_str(), nullptr, 16);
      if (hi > lo && hi - lo == own_vdso().size()) dwfl_report_module(p->dwfl, kVdso, lo, hi);
    });
    dwfl_report_end(p->dwfl, nullptr, nullptr);
    p->attached = dwfl_attach_state(p->dwfl, nullptr, static_cast<pid_t>(tgid), &kThreadCallbacks, p.get());
    g_current = nullptr;
  }
  if (old != procs_.end()) {
    if (p->files.empty()) {
      old->second->read_at = p->read_at;  // gone: what was read before is all there is
      return old->second.get();
    }
    old->second = std::move(p);
    return old->second.get();
  }
  Process* raw = p.get();
  procs_.emplace(key, std::move(p));
  return raw;
}

namespace {
uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}
struct Walk {
  std::vector<uint64_t> pcs;
  size_t max;
};
int on_frame(Dwfl_Frame* state, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
  if (pc == 0) return DWARF_CB_ABORT;
  // A return address points past its call: the call is the instruction before it.
  w->pcs.push_back(activation ? pc : pc - 1);
  return w->pcs.size() >= w->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}
}  // namespace

std::vector<uint64_t> Unwinder::walk(const Space& space, uint32_t tid, uint64_t time_ns, const UserState& state,
                                     bool once, size_t max_frames) {
  if (state.regs.size() < kPtRegsWords) return {};
  Process* p = process(space, false);
  Walk w{{}, max_frames};
  auto run = [&] {
    w.pcs.clear();
    p->current = &state;
    g_current = p;
    if (p->attached) dwfl_getthread_frames(p->dwfl, static_cast<pid_t>(tid), on_frame, &w);
    if (w.pcs.empty()) w.pcs.push_back(state.regs[kIp]);
    p->current = nullptr;
    g_current = nullptr;
  };
  run();
  // A pc in no file mapped when the mappings were read, before the sample: a library loaded
  // since (a program's first moments, before the dynamic linker mapped its libraries; dlopen).
  // Read again once, and walk again.
  if (p->dwfl != nullptr && p->read_at < time_ns && (once || mono_ns() - p->read_at >= kRereadAfterNs) &&
      std::any_of(w.pcs.begin(), w.pcs.end(), [&](uint64_t pc) { return dwfl_addrmodule(p->dwfl, pc) == nullptr; })) {
    p = process(space, true);
    run();
  }
  unwound_++;
  return std::move(w.pcs);
}

Frames Unwinder::name(const Space& space, const std::vector<uint64_t>& pcs, std::vector<SourceLine>* lines) {
  if (pcs.empty()) return {};
  Process* p = process(space, false);
  g_current = p;
  Frames out;
  for (auto it = pcs.rbegin(); it != pcs.rend(); ++it) {
    auto found = p->names.find(*it);
    if (found == p->names.end()) {
      // (a return address less 1: the page's first byte less 1). Where the mappings were read
      // before the page was made (the process gone when its stack came), the kernel's place for
      // it: the page below the top of user space (x86-64: TASK_SIZE is 0x7ffffffff000).
      bool uretprobe = p->uprobes_lo != 0 ? *it + 1 >= p->uprobes_lo && *it < p->uprobes_hi
                                          : *it + 1 == kUprobesPageX86 && dwfl_addrmodule(p->dwfl, *it) == nullptr;
      Named f = uretprobe ? Named{{"[uretprobe]"}, {{}}}
                : p->dwfl != nullptr ? name_pc(p->dwfl, *it)
                                     : Named{{"[unknown]"}, {{}}};
      if (p->names.size() >= kMaxNamesPerProcess) p->names.clear();
      found = p->names.emplace(*it, std::move(f)).first;
    }
    out.insert(out.end(), found->second.frames.begin(), found->second.frames.end());
    if (lines != nullptr) lines->insert(lines->end(), found->second.lines.begin(), found->second.lines.end());
  }
  g_current = nullptr;
  return out;
}

}  // namespace pm::stacks
