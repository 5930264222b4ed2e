// SPDX-License-Identifier: Apache-2.0
#include "sources/stacks/kernel_symbols.h"

#include <algorithm>

#include "core/file_reader.h"
#include "core/outside_text.h"
#include "core/text.h"

namespace pm::stacks {

KernelSymbols KernelSymbols::parse(std::string_view text) {
  KernelSymbols k;
  for_each_line(text, [&](std::string_view line) {
    std::string_view rest = line;
    std::string_view addr = next_field(rest);
    std::string_view type = next_field(rest);
    std::string_view name = next_field(rest);
    if (type.size() != 1 || name.empty()) return;
    char t = type[0];
    if (t != 't' && t != 'T' && t != 'w' && t != 'W') return;  // functions only
    uint64_t a = 0;
    for (char c : addr) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return;
      a = a * 16 + static_cast<uint64_t>(d);
    }
    if (a == 0) return;
    k.syms_.push_back({a, clean_utf8(name)});
  });
  std::stable_sort(k.syms_.begin(), k.syms_.end(), [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
  return k;
}

KernelSymbols KernelSymbols::load() {
  FileReader r;
  auto text = r.read("/proc/kallsyms");
  return text ? parse(*text) : KernelSymbols{};
}

std::string KernelSymbols::name(uint64_t addr) const {
  auto it = std::upper_bound(syms_.begin(), syms_.end(), addr, [](uint64_t a, const Sym& s) { return a < s.addr; });
  if (it == syms_.begin()) return "[kernel]";
  return std::prev(it)->name;
}

}  // namespace pm::stacks
