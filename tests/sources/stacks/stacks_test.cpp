// SPDX-License-Identifier: Apache-2.0
// The stacks source's user-space parts: kernel symbols from a captured /proc/kallsyms, the
// unwinder on this very process's stack (its copy, as a sample carries it), and the files.
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sinks/stack_files.h"
#include "sources/stacks/kernel_symbols.h"
#include "sources/stacks/unwinder.h"

namespace pm {
namespace {

using stacks::KernelSymbols;

constexpr const char* kKallsyms =
    "ffffffff81000000 T _stext\n"
    "ffffffff81001000 t do_one_initcall\n"
    "ffffffff81002000 D some_data\n"
    "ffffffff81003000 W weak_fn\n"
    "ffffffff81004000 T schedule\n"
    "ffffffffc0201000 t ext4_sync_file\t[ext4]\n"
    "ffffffffc0202000 t evil\x1b[2Jname\t[mod]\n"
    "not an address T x\n";

TEST(KernelSymbols, NamesTheFunctionHoldingAnAddress) {
  KernelSymbols k = KernelSymbols::parse(kKallsyms);
  EXPECT_EQ(k.size(), 6u);  // functions only: the data symbol and the bad line left out
  EXPECT_EQ(k.name(0xffffffff81000000), "_stext");
  EXPECT_EQ(k.name(0xffffffff81001fff), "do_one_initcall");
  EXPECT_EQ(k.name(0xffffffff81002800), "do_one_initcall");  // data is no function's start
  EXPECT_EQ(k.name(0xffffffff81003004), "weak_fn");
  EXPECT_EQ(k.name(0xffffffff81004123), "schedule");
  EXPECT_EQ(k.name(0xffffffffc0201010), "ext4_sync_file");
  EXPECT_EQ(k.name(0x1000), "[kernel]");
  // A module's symbol is another's text: no control byte reaches a terminal or a file.
  EXPECT_EQ(k.name(0xffffffffc0202000), "evil\xEF\xBF\xBD[2Jname");
}

TEST(KernelSymbols, AReaderWithoutTheRightSeesZerosAndNamesNothing) {
  KernelSymbols k = KernelSymbols::parse("0000000000000000 T _stext\n0000000000000000 T schedule\n");
  EXPECT_EQ(k.size(), 0u);
  EXPECT_EQ(k.name(0xffffffff81004123), "[kernel]");
}

// A stack as a sample carries it: this thread's registers (getcontext) and a copy of the top of
// its stack, unwound by the binary's CFI after the frames that made it are gone.
struct Captured {
  std::vector<uint64_t> regs = std::vector<uint64_t>(40, 0);
  std::vector<uint8_t> stack;
  uint64_t sp = 0;
};

// Reads other frames' bytes, redzones included: not for the address sanitizer to check.
__attribute__((noinline, no_sanitize("address"))) void copy_stack(uint8_t* to, uint64_t from, size_t n) {
  for (size_t i = 0; i < n; i++) to[i] = reinterpret_cast<const volatile uint8_t*>(from)[i];
}

__attribute__((noinline)) void capture(Captured& c) {
  ucontext_t uc;
  getcontext(&uc);
  const greg_t* g = uc.uc_mcontext.gregs;
  // pt_regs order: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax ip cs flags sp ss
  const int from[21] = {REG_R15, REG_R14, REG_R13, REG_R12, REG_RBP, REG_RBX, REG_R11, REG_R10, REG_R9, REG_R8, REG_RAX,
                        REG_RCX, REG_RDX, REG_RSI, REG_RDI, -1, REG_RIP, -1, REG_EFL, REG_RSP, -1};
  for (int i = 0; i < 21; i++) c.regs[static_cast<size_t>(i)] = from[i] < 0 ? 0 : static_cast<uint64_t>(g[from[i]]);
  c.sp = static_cast<uint64_t>(g[REG_RSP]);
  // As much as is mapped above sp, up to 16 KiB (the kernel side copies the same way).
  uint64_t end = c.sp + 16384;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  unsigned long lo = 0, hi = 0;
  char line[512];
  while (maps != nullptr && std::fgets(line, sizeof line, maps) != nullptr) {
    if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2 && c.sp >= lo && c.sp < hi) end = std::min<uint64_t>(end, hi);
  }
  if (maps != nullptr) std::fclose(maps);
  c.stack.resize(end - c.sp);
  copy_stack(c.stack.data(), c.sp, c.stack.size());
}
constexpr uint32_t kCaptureCall = __LINE__ + 2;  // middle_frame's call of capture
__attribute__((noinline)) void middle_frame(Captured& c) {
  capture(c);
  asm volatile("" ::: "memory");  // not a tail call: this frame stays
}
__attribute__((noinline)) void outer_frame(Captured& c) {
  middle_frame(c);
  asm volatile("" ::: "memory");
}

#if defined(__x86_64__)
TEST(Unwinder, UnwindsACopiedStackByItsCfiAndNamesTheFrames) {
  Captured c;
  outer_frame(c);
  stacks::Unwinder u;
  stacks::UserState st{c.regs, c.sp, c.stack};
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
  stacks::Unwinder::Space space{static_cast<uint32_t>(::getpid()), 1, 1};
  std::vector<SourceLine> lines;
  stacks::Frames f = u.name(space, u.walk(space, static_cast<uint32_t>(::syscall(SYS_gettid)), now, st), &lines);
  ASSERT_EQ(lines.size(), f.size());
  std::string all;
  for (const std::string& s : f) all += s + "\n";
  auto at = [&](const std::string& name) {
    for (size_t i = 0; i < f.size(); i++) {
      if (f[i].find(name) != std::string::npos) return static_cast<long>(i);
    }
    return -1L;
  };
  // Outermost first: ... outer_frame, middle_frame, capture (getcontext's own frame, or not).
  ASSERT_GE(at("outer_frame"), 0) << all;
  ASSERT_GE(at("middle_frame"), 0) << all;
  ASSERT_GE(at("capture"), 0) << all;
  EXPECT_LT(at("outer_frame"), at("middle_frame")) << all;
  EXPECT_LT(at("middle_frame"), at("capture")) << all;
  EXPECT_EQ(f[static_cast<size_t>(at("middle_frame"))], "pm::(anonymous namespace)::middle_frame(pm::(anonymous namespace)::Captured&)")
      << all;
  // Its line: where it calls capture, in this file (DWARF's line table, this test built with -g).
  const SourceLine& middle = lines[static_cast<size_t>(at("middle_frame"))];
  EXPECT_EQ(middle.line, kCaptureCall) << middle.file;
  EXPECT_TRUE(middle.file.ends_with("stacks_test.cpp")) << middle.file;
  // The test's own body and gtest are beyond it: the walk went on past the frames it made.
  EXPECT_GE(at("UnwindsACopiedStack"), 0) << all;
  // A copy cut short ends the walk where it ends, without reading anything else.
  stacks::UserState shorter{c.regs, c.sp, std::span<const uint8_t>(c.stack.data(), 8)};
  stacks::Frames g = u.unwind({static_cast<uint32_t>(::getpid()), 1, 1}, 1, now, shorter);
  EXPECT_LT(g.size(), f.size());
  EXPECT_FALSE(g.empty());
}
#endif

StackProfile profile() {
  StackProfile p;
  p.on_cpu_wanted = p.off_cpu_wanted = true;
  p.period_ns = 10101010;
  p.on_cpu = {{{"app", "main", "ns::f(int, char const*)"}, 7, 7}, {{"a;b", "main", "g"}, 3, 3}};
  p.off_cpu = {{{"app", "main", "fsync", "do_fsync_[k]"}, 2500999, 4}, {{"app", "main", "tiny"}, 999, 1}};
  return p;
}

TEST(StackFiles, FoldedLinesKeepSpacesAndTurnSemicolonsOfANameIntoColons) {
  StackProfile p = profile();
  EXPECT_EQ(folded_stacks(p, StackKind::kOnCpu), "app;main;ns::f(int, char const*) 7\na:b;main;g 3\n");
  // Off-CPU in whole microseconds; a stack under one is left out (its time is in the JSON's ns).
  EXPECT_EQ(folded_stacks(p, StackKind::kOffCpu), "app;main;fsync;do_fsync_[k] 2500\n");
}

// Stacks told apart by line are one function in the file, at two locations, and its file is named.
TEST(StackFiles, PprofFunctionsHaveTheirFileAndLocationsTheirLines) {
  StackProfile p = profile();
  p.on_cpu_lines = {{{"app", "f"}, 2, 2, {{}, {"/src/a.cpp", 10}}}, {{"app", "f"}, 5, 5, {{}, {"/src/a.cpp", 12}}}};
  std::string on = pprof_profile(p, StackKind::kOnCpu);
  EXPECT_NE(on.find("/src/a.cpp"), std::string::npos);
  EXPECT_EQ(on.find("ns::f(int, char const*)"), std::string::npos) << "the lines' list, not the one by name";
  // Functions: "app" (no file) and "f" in a.cpp; locations: app, f:10, f:12.
  auto count = [&](const std::string& field) {
    size_t n = 0;
    for (size_t at = on.find(field); at != std::string::npos; at = on.find(field, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("/src/a.cpp"), 1u) << "the file once in the string table";
}

TEST(StackFiles, PprofPathsAndTheMessagesLastSampleType) {
  EXPECT_TRUE(is_pprof_path("x.pb.gz"));
  EXPECT_TRUE(is_pprof_path("dir/cpu.pprof"));
  EXPECT_FALSE(is_pprof_path("cpu.folded"));
  EXPECT_FALSE(is_pprof_path("pb.gz.txt"));
  std::string on = pprof_profile(profile(), StackKind::kOnCpu);
  std::string off = pprof_profile(profile(), StackKind::kOffCpu);
  // The string table holds each name once (a reader decodes the rest: tests/integration).
  EXPECT_NE(on.find("ns::f(int, char const*)"), std::string::npos);
  EXPECT_NE(on.find("nanoseconds"), std::string::npos);
  EXPECT_NE(off.find("off_cpu"), std::string::npos);
  EXPECT_EQ(on.find("off_cpu"), std::string::npos);
}

}  // namespace
}  // namespace pm
