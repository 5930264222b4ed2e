// SPDX-License-Identifier: Apache-2.0
// Naming a function as people write it, against symbol tables of real symbols: those rustc 1.95
// emitted for tests/workloads/hcrust.rs (-O, legacy and v0 mangling) and g++ 12 -O2 for
// tests/workloads/clones.cpp. The expected demangled names are rustfilt's and c++filt's
// (checked for every symbol of freshly built binaries in tests/integration/rust_probe_test.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sources/probes/symbols.h"

namespace pm::probes {
namespace {

std::vector<ElfSymbol> table(const std::vector<std::string>& mangled) {
  std::vector<ElfSymbol> out;
  uint64_t addr = 0x1000;
  for (const std::string& m : mangled) out.push_back({m, demangle(m), addr += 0x40});
  return out;
}

const std::vector<std::string> kLegacy = {
    "_ZN6hcrust3app7handler15process_request17he101d76de978f911E",
    "_ZN60_$LT$hcrust..app..Server$u20$as$u20$hcrust..app..Handler$GT$6handle17h05d8f6a31c9af672E",
    "_ZN6hcrust3app5scale17h27e835dfd4d8756fE",
    "_ZN6hcrust3app5scale17hdcfb8c2c6f467a7cE",
    "_ZN6hcrust3app5fetch28_$u7b$$u7b$closure$u7d$$u7d$17hde94a245d3e74551E",
    "_ZN4core3ptr68drop_in_place$LT$hcrust..app..fetch..$u7b$$u7b$closure$u7d$$u7d$$GT$17h3e2a4d3d8e9175faE",
    "_ZN6hcrust4main17h07335c905c723342E",
    "_ZN6hcrust4main28_$u7b$$u7b$closure$u7d$$u7d$17h8872a956d17497b2E",
};
const std::vector<std::string> kV0 = {
    "_RNvNtNtCs7HmO6rPmj2E_6hcrust3app7handler15process_request",
    "_RNvXNtCs7HmO6rPmj2E_6hcrust3appNtB2_6ServerNtB2_7Handler6handle",
    "_RINvNtCs7HmO6rPmj2E_6hcrust3app5scalemEB4_",
    "_RINvNtCs7HmO6rPmj2E_6hcrust3app5scaleyEB4_",
    "_RNCNvNtCs7HmO6rPmj2E_6hcrust3app5fetch0B5_",
    "_RINvNtCsgEmfK2I1SDS_4core3ptr13drop_in_placeNCNvNtCs7HmO6rPmj2E_6hcrust3app5fetch0EBM_",
    "_RNvCs7HmO6rPmj2E_6hcrust4main",
    "_RNCNvCs7HmO6rPmj2E_6hcrust4mains0_0B3_",
    "_RNSNvYNCNvCs7HmO6rPmj2E_6hcrust4mains0_0INtNtNtCsgEmfK2I1SDS_4core3ops8function6FnOnceTyEE9call_once6vtableB8_",
};
const std::vector<std::string> kGcc = {
    "_ZN7billing6Engine6handleEli",
    "_ZN7billing6Engine6handleEli.cold",
    "_ZN4shop5twiceIlEET_S1_",
    "_ZN4shop5twiceIiEET_S1_",
    "_ZL6scaledll.constprop.0",
    "_ZL6lookupPK5Tablel.part.0",
    "_Z8lookup_aPK5Tablel",
    "parse_header",
    "parse_header.cold",
};

// The name `function` resolves to, or the error's message after "!".
std::string named(const std::vector<ElfSymbol>& syms, std::string_view function) {
  auto m = match_symbol(syms, function, "BIN");
  return m ? m->demangled : "!" + m.error().message;
}

TEST(ProbeNames, RustSymbolsDemangleAsRustfiltPrintsThem) {
  EXPECT_EQ(demangle("_RNvNtCs1234_7mycrate3foo3bar"), "mycrate::foo::bar");
  EXPECT_EQ(demangle(kLegacy[0]), "hcrust::app::handler::process_request");  // the hash dropped
  EXPECT_EQ(demangle(kV0[0]), "hcrust::app::handler::process_request");
  EXPECT_EQ(demangle(kLegacy[1]), "<hcrust::app::Server as hcrust::app::Handler>::handle");
  EXPECT_EQ(demangle(kV0[2]), "hcrust::app::scale::<u32>");
  EXPECT_EQ(demangle(kLegacy[7]), "hcrust::main::{{closure}}");
  EXPECT_EQ(demangle(kV0[7]), "hcrust::main::{closure#2}");
  EXPECT_EQ(demangle(kGcc[1]), "billing::Engine::handle(long, int) [clone .cold]");
  EXPECT_EQ(demangle("_RNvMissing"), "_RNvMissing");  // not a valid name: shown as it is
  EXPECT_EQ(demangle("process_request"), "process_request");
}

TEST(ProbeNames, ARustFunctionIsNamedWithOrWithoutItsCrate) {
  for (const auto& mangled : {kLegacy, kV0}) {
    auto syms = table(mangled);
    for (const char* name : {"app::handler::process_request", "hcrust::app::handler::process_request",
                             "process_request", "handler::process_request"}) {
      EXPECT_EQ(named(syms, name), "hcrust::app::handler::process_request") << name << " in " << mangled[0];
    }
    EXPECT_EQ(named(syms, mangled[0]), "hcrust::app::handler::process_request");  // mangled
    // A trait method by its impl's path, with or without the crate, or as Type::method.
    for (const char* name : {"<app::Server as app::Handler>::handle",
                             "<hcrust::app::Server as hcrust::app::Handler>::handle", "app::Server::handle"}) {
      EXPECT_EQ(named(syms, name), "<hcrust::app::Server as hcrust::app::Handler>::handle") << name;
    }
    EXPECT_EQ(named(syms, "app::handler::proces_request"),
              "!no function 'app::handler::proces_request' in BIN (closest: hcrust::app::handler::process_request)");
  }
  // With the legacy hash, as older perf-monitor and c++filt showed it.
  EXPECT_EQ(named(table(kLegacy), "hcrust::app::handler::process_request::he101d76de978f911"),
            "hcrust::app::handler::process_request");
}

TEST(ProbeNames, InstancesOfAGenericFunctionAreListedWithTheNameOfEach) {
  auto v0 = table(kV0);
  EXPECT_EQ(named(v0, "app::scale"),
            "!'app::scale' names 2 functions in BIN (instances of one generic function): hcrust::app::scale::<u32>; "
            "hcrust::app::scale::<u64> (probe one by the name listed, e.g. 'BIN:hcrust::app::scale::<u32>')");
  EXPECT_EQ(named(v0, "hcrust::app::scale::<u32>"), "hcrust::app::scale::<u32>");
  EXPECT_EQ(named(v0, "app::scale<u64>"), "hcrust::app::scale::<u64>");
  // Legacy mangling tells them apart by hash alone: that is the name to give, and the label.
  auto legacy = table(kLegacy);
  std::string both = named(legacy, "app::scale");
  EXPECT_NE(both.find("names 2 functions in BIN (instances of one generic function): "
                      "hcrust::app::scale::h27e835dfd4d8756f; hcrust::app::scale::hdcfb8c2c6f467a7c"),
            std::string::npos)
      << both;
  auto one = match_symbol(legacy, "app::scale::hdcfb8c2c6f467a7c", "BIN");
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->name, kLegacy[3]);
  EXPECT_EQ(one->demangled, "hcrust::app::scale::hdcfb8c2c6f467a7c");
}

TEST(ProbeNames, ClosuresAreNamedByTheirFunction) {
  auto v0 = table(kV0);
  EXPECT_EQ(named(v0, "main::{closure#2}"), "hcrust::main::{closure#2}");
  EXPECT_EQ(named(v0, "main::{{closure}}"), "hcrust::main::{closure#2}");  // legacy spelling: any index
  // v0 numbers closures: #0 is another one (inlined), the hint names the one there is.
  EXPECT_TRUE(named(v0, "main::{closure#0}")
                  .starts_with("!no function 'main::{closure#0}' in BIN (closest: hcrust::main::{closure#2}"))
      << named(v0, "main::{closure#0}");
  auto legacy = table(kLegacy);  // legacy does not number them
  EXPECT_EQ(named(legacy, "main::{{closure}}"), "hcrust::main::{{closure}}");
  EXPECT_EQ(named(legacy, "main::{closure#2}"), "hcrust::main::{{closure}}");
}

TEST(ProbeNames, AnAsyncFnIsProbedAtItsFuturesPollFunction) {
  for (const auto& mangled : {kLegacy, kV0}) {
    auto m = match_symbol(table(mangled), "app::fetch", "BIN");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->name, mangled[4]);
    EXPECT_NE(m->note.find("'app::fetch' is an async fn: probing its future's poll function hcrust::app::fetch::{"),
              std::string::npos)
        << m->note;
    // Named as the closure it is, it is that, without a word.
    auto direct = match_symbol(table(mangled), "app::fetch::{closure#0}", "BIN");
    ASSERT_TRUE(direct.ok()) << direct.error().message;
    EXPECT_EQ(direct->name, mangled[4]);
    EXPECT_EQ(direct->note, "");
  }
  // Where the fn kept a symbol (a debug build): the future it makes still says it is async.
  auto debug = kV0;
  debug.push_back("_RNvNtCs7HmO6rPmj2E_6hcrust3app5fetch");
  auto m = match_symbol(table(debug), "app::fetch", "BIN");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->name, kV0[4]);
  EXPECT_FALSE(m->note.empty());
  // A sync fn with a closure of Copy captures (no drop glue) is itself.
  auto main = match_symbol(table(kV0), "hcrust::main", "BIN");
  ASSERT_TRUE(main.ok());
  EXPECT_EQ(main->name, kV0[6]);
  EXPECT_EQ(main->note, "");
}

TEST(ProbeNames, GccPiecesAreNeverProbedAndClonesAreTheFunction) {
  auto syms = table(kGcc);
  // The issue's: "names 2 functions", one of them the .cold fragment.
  EXPECT_EQ(named(syms, "billing::Engine::handle"), "billing::Engine::handle(long, int)");
  EXPECT_EQ(named(syms, "Engine::handle"), "billing::Engine::handle(long, int)");
  EXPECT_EQ(named(syms, "billing::Engine::handle(long,int)"), "billing::Engine::handle(long, int)");
  auto entry = match_symbol(syms, "billing::Engine::handle", "BIN");
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->name, kGcc[0]);
  EXPECT_EQ(named(syms, "parse_header"), "parse_header");  // C: "parse_header.cold"
  // Named by its own symbol, a fragment is refused, with the function to probe instead.
  EXPECT_EQ(
      named(syms, "_ZN7billing6Engine6handleEli.cold"),
      "!'_ZN7billing6Engine6handleEli.cold' is a piece the compiler split off billing::Engine::handle(long, int), not "
      "called as a function: probe BIN:billing::Engine::handle(long, int)");
  // All that is left of an inlined function is a piece: said so.
  EXPECT_EQ(named(syms, "lookup"),
            "!'lookup' has no symbol in BIN: it was inlined into its callers (only lookup(Table const*, long) [clone "
            ".part.0], a piece split off it, is left, and is not called as the function)");
  // Never a hint.
  std::string hint = named(syms, "billing::Engine::handel");
  EXPECT_EQ(hint, "!no function 'billing::Engine::handel' in BIN (closest: billing::Engine::handle(long, int))");
  // A clone for a constant argument is what the callers call: the function.
  EXPECT_EQ(named(syms, "scaled"), "scaled(long, long)");
  EXPECT_EQ(named(syms, "scaled(long, long)"), "scaled(long, long)");
}

TEST(ProbeNames, TemplatesArePickedByParameterListWithoutTheReturnType) {
  auto syms = table(kGcc);
  EXPECT_EQ(demangle(kGcc[2]), "long shop::twice<long>(long)");
  EXPECT_EQ(named(syms, "shop::twice<long>(long)"), "long shop::twice<long>(long)");
  EXPECT_EQ(named(syms, "long shop::twice<long>(long)"), "long shop::twice<long>(long)");
  EXPECT_EQ(named(syms, "twice<int>"), "int shop::twice<int>(int)");
  EXPECT_EQ(named(syms, "shop::twice"),
            "!'shop::twice' names 2 functions in BIN (instances of one template): shop::twice<long>(long); "
            "shop::twice<int>(int) (probe one by the name listed, e.g. 'BIN:shop::twice<long>(long)')");
}

TEST(ProbeNames, BaseNamesOfRustAndGccNames) {
  EXPECT_EQ(base_name("long shop::twice<long>(long)"), "shop::twice<long>");
  EXPECT_EQ(base_name("billing::Engine::handle(long, int)"), "billing::Engine::handle");
  EXPECT_EQ(base_name("hcrust::app::handler::process_request"), "hcrust::app::handler::process_request");
  EXPECT_EQ(base_name("<hcrust::app::Server as hcrust::app::Handler>::handle"),
            "<hcrust::app::Server as hcrust::app::Handler>::handle");
}

}  // namespace
}  // namespace pm::probes
