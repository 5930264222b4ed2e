// SPDX-License-Identifier: Apache-2.0
#include "sources/probes/inlined.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "sources/probes/symbols.h"

namespace pm::probes {
namespace {

// Bounds on what a binary's DWARF can make this walk do.
constexpr int kMaxDepth = 128;
constexpr size_t kMaxDies = 20'000'000;

// A function's name as --probe matches it: its linkage name demangled where it has one (C++,
// Rust), else DW_AT_name (C). Through DW_AT_abstract_origin and DW_AT_specification.
std::pair<std::string, std::string> names_of(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (linkage == nullptr) linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  if (linkage != nullptr) return {linkage, demangle(linkage)};
  if (name != nullptr) return {name, name};
  return {};
}

// Calls `visit(die, enclosing function)` for every DIE of every unit, depth first, within the
// bounds; `enclosing` is the nearest subprogram or inlined subroutine above.
template <typename Visit>
void walk(Dwarf* dw, Visit&& visit) {
  size_t dies = 0;
  Dwarf_CU* cu = nullptr;
  Dwarf_Die cudie, subdie;
  uint8_t unit_type = 0;
  while (dwarf_get_units(dw, cu, &cu, nullptr, &unit_type, &cudie, &subdie) == 0) {
    struct Level {
      Dwarf_Die die;
      Dwarf_Die* function;  // null at the unit's top
    };
    std::vector<Level> stack;
    stack.reserve(kMaxDepth);
    Dwarf_Die first;
    if (dwarf_child(&cudie, &first) != 0) continue;
    stack.push_back({first, nullptr});
    while (!stack.empty()) {
      if (++dies > kMaxDies) return;
      Level& top = stack.back();
      Dwarf_Die die = top.die;
      Dwarf_Die* function = top.function;
      visit(&cudie, &die, function);
      // Next: the first child, else the next sibling, else the parent's next sibling.
      int tag = dwarf_tag(&die);
      Dwarf_Die child;
      if (stack.size() < kMaxDepth && dwarf_haschildren(&die) && dwarf_child(&die, &child) == 0) {
        bool is_function = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
        // The enclosing function's DIE lives in the level below: its address is stable while
        // the stack only grows past it (reserved).
        stack.push_back({child, is_function ? &top.die : function});
        continue;
      }
      while (!stack.empty()) {
        Dwarf_Die next;
        if (dwarf_siblingof(&stack.back().die, &next) == 0) {
          stack.back().die = next;
          break;
        }
        stack.pop_back();
      }
    }
  }
}

std::string file_name_of(Dwarf_Die* cudie, Dwarf_Die* site) {
  Dwarf_Attribute attr;
  Dwarf_Word index = 0;
  Dwarf_Files* files = nullptr;
  size_t n = 0;
  if (dwarf_formudata(dwarf_attr(site, DW_AT_call_file, &attr), &index) != 0 ||
      dwarf_getsrcfiles(cudie, &files, &n) != 0 || index >= n) {
    return "";
  }
  const char* path = dwarf_filesrc(files, index, nullptr, nullptr);
  if (path == nullptr) return "";
  std::string_view p(path);
  return std::string(p.substr(p.rfind('/') == std::string_view::npos ? 0 : p.rfind('/') + 1));
}

}  // namespace

std::vector<std::string> inlined_call_sites(int fd, std::string_view function, std::string_view binary, size_t limit) {
  std::unique_ptr<Dwarf, int (*)(Dwarf*)> dw(dwarf_begin(fd, DWARF_C_READ), dwarf_end);
  if (!dw) return {};
  // The functions that have an abstract (inlined) instance, as symbols match_symbol can choose
  // among, one per name (a header's inline function has one in each unit that inlined it): the
  // address is the index into `instances`.
  std::vector<ElfSymbol> abstract;
  std::vector<std::set<Dwarf_Off>> instances;
  std::map<std::string, size_t> by_name;
  walk(dw.get(), [&](Dwarf_Die*, Dwarf_Die* die, Dwarf_Die*) {
    if (dwarf_tag(die) != DW_TAG_subprogram || !dwarf_hasattr(die, DW_AT_inline)) return;
    auto [name, shown] = names_of(die);
    if (name.empty()) return;
    auto [at, fresh] = by_name.emplace(name, instances.size());
    if (fresh) {
      instances.emplace_back();
      abstract.push_back({name, shown, instances.size()});
    }
    instances[at->second].insert(dwarf_dieoffset(die));
  });
  if (abstract.empty()) return {};
  auto match = match_symbol(abstract, function, binary);
  if (!match) return {};
  const std::set<Dwarf_Off>& targets = instances[match->addr - 1];
  std::vector<std::string> sites;
  bool more = false;
  walk(dw.get(), [&](Dwarf_Die* cudie, Dwarf_Die* die, Dwarf_Die* enclosing) {
    if (more || dwarf_tag(die) != DW_TAG_inlined_subroutine) return;
    Dwarf_Attribute attr;
    Dwarf_Die origin;
    if (dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &attr), &origin) == nullptr ||
        !targets.count(dwarf_dieoffset(&origin))) {
      return;
    }
    std::string caller = enclosing ? base_name(names_of(enclosing).second) : "";
    std::string where = file_name_of(cudie, die);
    Dwarf_Word line = 0;
    if (!where.empty() && dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) == 0 && line > 0) {
      where.append(":").append(std::to_string(line));
    }
    // Built by append: GCC 12's -Wrestrict misreads `":" + std::to_string(...)` in a Release build.
    std::string site = caller.empty() ? "?" : caller;
    if (!where.empty()) site.append(" (").append(where).append(")");
    if (std::find(sites.begin(), sites.end(), site) != sites.end()) return;
    if (sites.size() == limit) {
      more = true;
      return;
    }
    sites.push_back(site);
  });
  if (more) sites.emplace_back("...");
  return sites;
}

}  // namespace pm::probes
