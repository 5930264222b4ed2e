// SPDX-License-Identifier: Apache-2.0
// Kernel frames named from /proc/kallsyms (read once; a module's symbols carry its name).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pm::stacks {

class KernelSymbols {
 public:
  // Parses kallsyms text (exposed for tests on a captured file). Addresses of 0 (what a reader
  // without the right to see them gets) leave the table empty.
  static KernelSymbols parse(std::string_view text);
  static KernelSymbols load();  // /proc/kallsyms
  // The function holding addr, or "[kernel]" when none is known.
  [[nodiscard]] std::string name(uint64_t addr) const;
  [[nodiscard]] size_t size() const { return syms_.size(); }

 private:
  struct Sym {
    uint64_t addr;
    std::string name;
  };
  std::vector<Sym> syms_;
};

}  // namespace pm::stacks
