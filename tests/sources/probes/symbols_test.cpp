// SPDX-License-Identifier: Apache-2.0
// The probe resolver against real ELF files: the example service built with this tree (C++
// namespaces, classes, overloads), the system's libc, and a stripped copy of the service that
// keeps its symbols only in an xz-compressed .gnu_debugdata section.
#include "sources/probes/symbols.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace pm::probes {
namespace {

const std::string kShop = PM_SHOP;

TEST(ProbeSpec, SplitsBinaryFunctionAndArgument) {
  auto s = parse_probe_spec("./shop:process_request");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->binary, "./shop");
  EXPECT_EQ(s->function, "process_request");
  EXPECT_EQ(s->arg, 0);

  s = parse_probe_spec("shop:shop::Cart::add(int):arg2");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->function, "shop::Cart::add(int)");
  EXPECT_EQ(s->arg, 2);

  // "ns::arg1" is a function named arg1 in ns, not an argument.
  s = parse_probe_spec("app:ns::arg1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->function, "ns::arg1");
  EXPECT_EQ(s->arg, 0);
}

TEST(ProbeSpec, BadSpecsSayHowToWriteOne) {
  for (const char* bad : {"process_request", ":f", "app:", "app:f:arg7", "app:f:arg0"}) {
    auto s = parse_probe_spec(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, Errc::kInvalidArgument);
    EXPECT_NE(s.error().message.find("BINARY:FUNCTION"), std::string::npos) << s.error().message;
  }
}

TEST(ProbeSymbols, BaseNameDropsParametersQualifiersAndReturnType) {
  EXPECT_EQ(base_name("shop::Cart::add(int, double) const"), "shop::Cart::add");
  EXPECT_EQ(base_name("int max<int>(int, int)"), "max<int>");
  EXPECT_EQ(base_name("malloc"), "malloc");
  EXPECT_EQ(base_name("ns::S::operator()(int)"), "ns::S::operator()");
  EXPECT_EQ(base_name("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<int, std::allocator<int> >::push_back");
}

TEST(ProbeSymbols, DemangledNamesResolveInTheExampleService) {
  auto syms = read_function_symbols(kShop);
  ASSERT_TRUE(syms.ok()) << syms.error().message;
  auto m = match_symbol(*syms, "shop::process_request", "shop");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->name.starts_with("_ZN4shop15process_request")) << m->name;
  // The mangled name names the same function; so does the short name when it is the only one.
  auto mangled = match_symbol(*syms, m->name, "shop");
  ASSERT_TRUE(mangled.ok());
  EXPECT_EQ(mangled->addr, m->addr);
  auto shorter = match_symbol(*syms, "process_request", "shop");
  ASSERT_TRUE(shorter.ok()) << shorter.error().message;
  EXPECT_EQ(shorter->addr, m->addr);
  // Its file offset is where the function's bytes are in the file.
  auto off = file_offset(kShop, m->addr);
  ASSERT_TRUE(off.ok());
  EXPECT_GT(*off, 0u);
}

TEST(ProbeSymbols, AnOverloadIsPickedByItsParameters) {
  auto syms = read_function_symbols(kShop);
  ASSERT_TRUE(syms.ok());
  auto both = match_symbol(*syms, "shop::Cart::add", "shop");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().code, Errc::kInvalidArgument);
  EXPECT_NE(both.error().message.find("shop::Cart::add(int)"), std::string::npos) << both.error().message;
  EXPECT_NE(both.error().message.find("shop::Cart::add(char const*, int)"), std::string::npos);
  auto one = match_symbol(*syms, "shop::Cart::add(int)", "shop");
  auto other = match_symbol(*syms, "shop::Cart::add(char const *,int)", "shop");  // spacing is free
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_NE(one->addr, other->addr);
  EXPECT_EQ(one->demangled, "shop::Cart::add(int)");
}

TEST(ProbeSymbols, AnUnknownNameListsTheClosest) {
  auto syms = read_function_symbols(kShop);
  ASSERT_TRUE(syms.ok());
  auto m = match_symbol(*syms, "shop::proces_request", "shop");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Errc::kNotFound);
  EXPECT_NE(m.error().message.find("closest: shop::process_request("), std::string::npos) << m.error().message;
}

TEST(ProbeSymbols, LibraryFunctionsResolveByLibraryName) {
  auto p = resolve_probe({"libc.so.6", "malloc", 0});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_NE(p->path.find("libc.so.6"), std::string::npos);
  EXPECT_GT(p->offset, 0u);
  auto missing = find_binary("libdoesnotexist.so.9");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Errc::kNotFound);
}

TEST(ProbeSymbols, MiniDebugInfoIsRead) {
  if (std::system("command -v objcopy >/dev/null && command -v xz >/dev/null") != 0) {
    GTEST_SKIP() << "objcopy (binutils) or xz (xz-utils) missing: cannot build a .gnu_debugdata binary";
  }
  // The MiniDebugInfo recipe: the symbol table alone, xz-compressed, in a stripped binary.
  std::string dir = ::testing::TempDir() + "pm-minidebug-" + std::to_string(::getpid());
  std::string cmd = "set -e; mkdir -p " + dir + "; cd " + dir + "; objcopy --only-keep-debug " + kShop +
                    " mini; xz -f mini; objcopy --strip-all " + kShop +
                    " stripped; objcopy --add-section .gnu_debugdata=mini.xz stripped";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string stripped = dir + "/stripped";
  auto syms = read_function_symbols(stripped);
  ASSERT_TRUE(syms.ok()) << syms.error().message;
  ASSERT_EQ(std::system(("readelf -S " + stripped + " | grep -q '\\.symtab'").c_str()) == 0, false)
      << "the stripped copy still has a .symtab";
  auto m = match_symbol(*syms, "shop::Cart::checkout", "stripped");
  ASSERT_TRUE(m.ok()) << m.error().message;
  // The same address as in the unstripped file.
  auto full = read_function_symbols(kShop);
  ASSERT_TRUE(full.ok());
  auto same = match_symbol(*full, "shop::Cart::checkout", "shop");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(m->addr, same->addr);
  std::system(("rm -rf " + dir).c_str());
}

// An xz bomb in .gnu_debugdata (the issue's: 78 KB that decompressed to 960 MB of peak memory)
// is refused: from the size its index states, or, where that cannot be read (stream padding
// after the footer), when decompressing reaches the bound.
TEST(ProbeSymbols, DebugDataBombsAreRefused) {
  if (std::system("command -v objcopy >/dev/null && command -v xz >/dev/null") != 0) {
    GTEST_SKIP() << "objcopy (binutils) or xz (xz-utils) missing: cannot build a .gnu_debugdata binary";
  }
  std::string dir = ::testing::TempDir() + "pm-bomb-" + std::to_string(::getpid());
  std::string cmd = "set -e; mkdir -p " + dir + "; cd " + dir +
                    "; head -c 64M /dev/zero | xz -1 -T1 > bomb.xz; cp bomb.xz padded.xz;"
                    " head -c 8 /dev/zero >> padded.xz; objcopy --add-section .gnu_debugdata=bomb.xz " + kShop +
                    " indexed; objcopy --add-section .gnu_debugdata=padded.xz " + kShop + " padded";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char* name : {"indexed", "padded"}) {
    auto syms = read_function_symbols(dir + "/" + name);
    ASSERT_FALSE(syms.ok()) << name;
    EXPECT_EQ(syms.error().code, Errc::kInvalidArgument);
    EXPECT_NE(syms.error().message.find("decompresses to more than 32 MiB"), std::string::npos)
        << syms.error().message;
  }
  std::system(("rm -rf " + dir).c_str());
}

TEST(ProbeSymbols, UsdtNotesOfTheAnnotationHeaderAreFound) {
  EXPECT_TRUE(has_usdt_provider(kShop, "perf_monitor"));
  EXPECT_FALSE(has_usdt_provider(kShop, "other"));
  auto libc = find_binary("libc.so.6");
  ASSERT_TRUE(libc.ok());
  EXPECT_FALSE(has_usdt_provider(*libc, "perf_monitor"));
}

}  // namespace
}  // namespace pm::probes
