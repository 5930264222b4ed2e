// SPDX-License-Identifier: Apache-2.0
// The JSON header record (host, kernel, CPU model, version, schema version) and the
// /proc/cpuinfo parser behind it.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/utsname.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/host.h"
#include "core/version.h"
#include "sinks/json_schema.h"
#include "core/output.h"
#include "sinks/sink.h"

namespace pm {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CpuInfo, X86ModelName) {
  std::string text = read_file(std::string(PM_FIXTURES_DIR) + "/proc/cpuinfo");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(cpu_model_from_cpuinfo(text), "Intel(R) Xeon(R) Processor");
}

TEST(CpuInfo, OtherArchitecturesAndNone) {
  // arm64 (a Raspberry Pi): no "model name", a board "Model" line at the end.
  EXPECT_EQ(cpu_model_from_cpuinfo("processor\t: 0\nBogoMIPS\t: 108.00\nCPU part\t: 0xd08\n\n"
                                   "Revision\t: c03111\nModel\t\t: Raspberry Pi 4 Model B Rev 1.1\n"),
            "Raspberry Pi 4 Model B Rev 1.1");
  EXPECT_EQ(cpu_model_from_cpuinfo("system type\t: MT7621\ncpu model\t: MIPS 1004Kc V2.15\n"), "MIPS 1004Kc V2.15");
  EXPECT_EQ(cpu_model_from_cpuinfo("processor : 0\nflags : fpu\n"), "");
  EXPECT_EQ(cpu_model_from_cpuinfo(""), "");
}

TEST(HostInfo, MatchesUnameAndSysconf) {
  HostInfo h = read_host_info();
  struct utsname u {};
  ASSERT_EQ(::uname(&u), 0);
  EXPECT_EQ(h.kernel, u.release);
  EXPECT_EQ(h.arch, u.machine);
  EXPECT_EQ(h.cpus, ::sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_FALSE(h.hostname.empty());
}

TEST(JsonSink, HeaderRecordComesFirstWithHostAndVersions) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Output out = Output::to_fd(fileno(f), "a tmpfile");
  auto sink = make_json_sink(out);
  RunHeader h;
  h.mode = "run";
  h.command = {"./app", "--flag"};
  h.pid = 4242;
  h.host = HostInfo{"box", "6.1.0-18-amd64", "x86_64", "Intel(R) Xeon(R) Processor", 16};
  h.interval_s = 0.5;
  h.start = WallClock::time_point{std::chrono::seconds(1'800'000'000)};
  h.unavailable = {{"thermal", "no thermal zones"}};
  sink->header(h);
  std::rewind(f);
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  std::fclose(f);
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.back(), '\n');
  ASSERT_EQ(text.find('\n'), text.size() - 1);  // one line
  nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["type"], "header");
  EXPECT_EQ(j["schema_version"], kJsonSchemaVersion);
  EXPECT_EQ(j["perf_monitor_version"], PERF_MONITOR_VERSION);
  EXPECT_EQ(j["mode"], "run");
  EXPECT_EQ(j["command"], (std::vector<std::string>{"./app", "--flag"}));
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["host"], "box");
  EXPECT_EQ(j["kernel"], "6.1.0-18-amd64");
  EXPECT_EQ(j["arch"], "x86_64");
  EXPECT_EQ(j["cpu_model"], "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(j["cpus"], 16);
  EXPECT_EQ(j["interval_s"], 0.5);
  EXPECT_EQ(j["start"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(j["unavailable"]["thermal"], "no thermal zones");
}

}  // namespace
}  // namespace pm
