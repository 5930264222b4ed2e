// SPDX-License-Identifier: Apache-2.0
// The system sources read captured procfs and sysfs trees (tests/fixtures, see its README).
// Expected numbers are copied from the fixture files on purpose.
#include "sources/files/system_sources.h"
#include "write_text.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace pm {
namespace {

constexpr double kKiB = 1024;

FsRoots fixture_roots() { return FsRoots{PM_FIXTURES_DIR "/proc", PM_FIXTURES_DIR "/sys"}; }

Samples collect(Result<std::unique_ptr<Source>> src) {
  EXPECT_TRUE(src.ok()) << (src.ok() ? "" : src.error().message);
  Samples out;
  if (src.ok()) (*src)->collect(out);
  return out;
}

const Sample* find(const Samples& samples, std::string_view family, std::string_view name, const Labels& labels = {}) {
  for (const Sample& s : samples) {
    if (s.desc->family == family && s.desc->name == name && s.labels == labels) return &s;
  }
  return nullptr;
}

size_t count(const Samples& samples, std::string_view family, std::string_view name) {
  size_t n = 0;
  for (const Sample& s : samples) n += s.desc->family == family && s.desc->name == name ? 1 : 0;
  return n;
}

double clk_tck() { return static_cast<double>(::sysconf(_SC_CLK_TCK)); }

TEST(SystemSources, Cpu) {
  auto src = make_cpu_source(fixture_roots());
  ASSERT_TRUE(src.ok()) << src.error().message;
  EXPECT_EQ((*src)->name(), "cpu");
  Samples out;
  (*src)->collect(out);

  // "cpu  962 0 1070 42994 210 0 19 6 0 0"
  const Sample* user = find(out, "cpu", "time_seconds", {{"cpu", "all"}, {"mode", "user"}});
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->desc->kind, MetricKind::kCounter);
  EXPECT_EQ(user->desc->unit, Unit::kSeconds);
  EXPECT_DOUBLE_EQ(user->value, 962 / clk_tck());
  const Sample* idle = find(out, "cpu", "time_seconds", {{"cpu", "all"}, {"mode", "idle"}});
  ASSERT_NE(idle, nullptr);
  EXPECT_DOUBLE_EQ(idle->value, 42994 / clk_tck());
  const Sample* total = find(out, "cpu", "total_seconds", {{"cpu", "all"}});
  ASSERT_NE(total, nullptr);
  EXPECT_DOUBLE_EQ(total->value, (962 + 0 + 1070 + 42994 + 210 + 0 + 19 + 6) / clk_tck());
  // "cpu1 614 0 673 21117 207 0 12 4 0 0"
  const Sample* cpu1_iowait = find(out, "cpu", "time_seconds", {{"cpu", "1"}, {"mode", "iowait"}});
  ASSERT_NE(cpu1_iowait, nullptr);
  EXPECT_DOUBLE_EQ(cpu1_iowait->value, 207 / clk_tck());
  // 8 modes for all, cpu0 and cpu1.
  EXPECT_EQ(count(out, "cpu", "time_seconds"), 24u);
  EXPECT_EQ(count(out, "cpu", "total_seconds"), 3u);

  const Sample* ctxt = find(out, "scheduler", "context_switches", {{"cpu", "all"}});
  ASSERT_NE(ctxt, nullptr);
  EXPECT_DOUBLE_EQ(ctxt->value, 229081);
  ASSERT_NE(find(out, "scheduler", "forks"), nullptr);
  EXPECT_DOUBLE_EQ(find(out, "scheduler", "forks")->value, 2683);
  ASSERT_NE(find(out, "scheduler", "procs_running"), nullptr);
  EXPECT_DOUBLE_EQ(find(out, "scheduler", "procs_running")->value, 1);
  // loadavg "0.02 0.04 0.01 1/82 2685"
  ASSERT_NE(find(out, "scheduler", "load5"), nullptr);
  EXPECT_DOUBLE_EQ(find(out, "scheduler", "load5")->value, 0.04);

  // Utilisation: time{cpu,mode} over total{cpu}, in percent.
  auto ratios = (*src)->ratios();
  ASSERT_EQ(ratios.size(), 1u);
  EXPECT_EQ(ratios[0].numerator, user->desc);
  EXPECT_EQ(ratios[0].denominator, total->desc);
  EXPECT_DOUBLE_EQ(ratios[0].scale, 100.0);
}

TEST(SystemSources, Memory) {
  Samples out = collect(make_memory_source(fixture_roots()));
  // MemTotal 24684092 kB, MemFree 24523244 kB, MemAvailable 24442896 kB, AnonPages 6476 kB
  const Sample* used = find(out, "memory", "used_bytes");
  ASSERT_NE(used, nullptr);
  EXPECT_EQ(used->desc->kind, MetricKind::kGauge);
  EXPECT_EQ(used->desc->unit, Unit::kBytes);
  EXPECT_DOUBLE_EQ(used->value, (24684092.0 - 24442896.0) * kKiB);
  ASSERT_NE(find(out, "memory", "total_bytes"), nullptr);
  EXPECT_DOUBLE_EQ(find(out, "memory", "total_bytes")->value, 24684092 * kKiB);
  ASSERT_NE(find(out, "memory", "free_bytes"), nullptr);
  EXPECT_DOUBLE_EQ(find(out, "memory", "free_bytes")->value, 24523244 * kKiB);
  ASSERT_NE(find(out, "memory", "anon_bytes"), nullptr);
  EXPECT_DOUBLE_EQ(find(out, "memory", "anon_bytes")->value, 6476 * kKiB);
  ASSERT_NE(find(out, "memory", "page_faults"), nullptr);
  EXPECT_EQ(find(out, "memory", "page_faults")->desc->kind, MetricKind::kCounter);
}

TEST(SystemSources, Pressure) {
  Samples out = collect(make_pressure_source(fixture_roots()));
  // io: "full avg10=0.00 avg60=0.18 avg300=0.32 total=1937590" (microseconds)
  const Sample* io_full = find(out, "pressure", "stall_seconds", {{"resource", "io"}, {"kind", "full"}});
  ASSERT_NE(io_full, nullptr);
  EXPECT_EQ(io_full->desc->kind, MetricKind::kCounter);
  EXPECT_DOUBLE_EQ(io_full->value, 1937590 / 1e6);
  // cpu: "some avg10=0.19 avg60=0.21 avg300=0.42 total=2851671"
  const Sample* cpu_some = find(out, "pressure", "stall_seconds", {{"resource", "cpu"}, {"kind", "some"}});
  ASSERT_NE(cpu_some, nullptr);
  EXPECT_DOUBLE_EQ(cpu_some->value, 2851671 / 1e6);
  const Sample* cpu_avg10 = find(out, "pressure", "avg10_percent", {{"resource", "cpu"}, {"kind", "some"}});
  ASSERT_NE(cpu_avg10, nullptr);
  EXPECT_DOUBLE_EQ(cpu_avg10->value, 0.19);
  // cpu, io and memory, some and full each.
  EXPECT_EQ(count(out, "pressure", "stall_seconds"), 6u);
}

TEST(SystemSources, Numa) {
  Samples out = collect(make_numa_source(fixture_roots()));
  // Node 0 MemTotal 4548820 kB, MemFree 4388024 kB, MemUsed 160796 kB
  const Sample* total = find(out, "numa", "total_bytes", {{"node", "0"}});
  const Sample* free_b = find(out, "numa", "free_bytes", {{"node", "0"}});
  const Sample* used = find(out, "numa", "used_bytes", {{"node", "0"}});
  ASSERT_NE(total, nullptr);
  ASSERT_NE(free_b, nullptr);
  ASSERT_NE(used, nullptr);
  EXPECT_DOUBLE_EQ(total->value, 4548820 * kKiB);
  EXPECT_DOUBLE_EQ(free_b->value, 4388024 * kKiB);
  EXPECT_DOUBLE_EQ(used->value, 160796 * kKiB);
  EXPECT_EQ(out.size(), 3u);  // one node
}

TEST(SystemSources, Thermal) {
  Samples out = collect(make_thermal_source(fixture_roots()));
  EXPECT_EQ(count(out, "thermal", "temp_celsius"), 2u);
  const Sample* pkg = find(out, "thermal", "temp_celsius", {{"zone", "x86_pkg_temp"}});
  ASSERT_NE(pkg, nullptr);
  EXPECT_EQ(pkg->desc->unit, Unit::kCelsius);
  EXPECT_DOUBLE_EQ(pkg->value, 67.0);
  const Sample* acpi = find(out, "thermal", "temp_celsius", {{"zone", "acpitz"}});
  ASSERT_NE(acpi, nullptr);
  EXPECT_DOUBLE_EQ(acpi->value, 27.8);

  const Sample* passive = find(out, "thermal", "trip_celsius", {{"zone", "x86_pkg_temp"}, {"type", "passive"}});
  const Sample* critical = find(out, "thermal", "trip_celsius", {{"zone", "x86_pkg_temp"}, {"type", "critical"}});
  ASSERT_NE(passive, nullptr);
  ASSERT_NE(critical, nullptr);
  EXPECT_DOUBLE_EQ(passive->value, 95.0);
  EXPECT_DOUBLE_EQ(critical->value, 105.0);
  const Sample* acpi_crit = find(out, "thermal", "trip_celsius", {{"zone", "acpitz"}, {"type", "critical"}});
  ASSERT_NE(acpi_crit, nullptr);
  EXPECT_DOUBLE_EQ(acpi_crit->value, 105.0);
  EXPECT_EQ(count(out, "thermal", "trip_celsius"), 3u);
}

TEST(SystemSources, MissingSysfsIsUnavailableAndNamesThePath) {
  const std::string missing = "/nonexistent/perf-monitor-test-sys";
  FsRoots roots{PM_FIXTURES_DIR "/proc", missing};

  auto numa = make_numa_source(roots);
  ASSERT_FALSE(numa.ok());
  EXPECT_EQ(numa.error().code, Errc::kUnavailable);
  EXPECT_NE(numa.error().message.find(missing + "/devices/system/node"), std::string::npos) << numa.error().message;

  auto thermal = make_thermal_source(roots);
  ASSERT_FALSE(thermal.ok());
  EXPECT_EQ(thermal.error().code, Errc::kUnavailable);
  EXPECT_NE(thermal.error().message.find(missing + "/class/thermal"), std::string::npos) << thermal.error().message;

  // The proc-based sources still work with that root.
  EXPECT_TRUE(make_cpu_source(roots).ok());
}

TEST(SystemSources, MissingProcfsIsUnavailable) {
  const std::string missing = "/nonexistent/perf-monitor-test-proc";
  FsRoots roots{missing, PM_FIXTURES_DIR "/sys"};
  auto cpu = make_cpu_source(roots);
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(cpu.error().code, Errc::kUnavailable);
  EXPECT_NE(cpu.error().message.find(missing + "/stat"), std::string::npos) << cpu.error().message;

  auto psi = make_pressure_source(roots);
  ASSERT_FALSE(psi.ok());
  EXPECT_EQ(psi.error().code, Errc::kUnavailable);
  EXPECT_NE(psi.error().message.find(missing + "/pressure"), std::string::npos) << psi.error().message;

  auto mem = make_memory_source(roots);
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.error().code, Errc::kUnavailable);
}

}  // namespace
}  // namespace pm

namespace pm {
namespace {

using test::write_text;

TEST(SystemSources, ThermalZonesAndTripsOfTheSameTypeStayApart) {
  // Two "acpitz" zones, one with two "active" trips: a sysfs tree made the way the kernel lays it out.
  char tmpl[] = "/tmp/pm-thermal-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  std::string dir = root + "/class/thermal";
  ASSERT_EQ(std::system(("mkdir -p " + dir + "/thermal_zone0 " + dir + "/thermal_zone1").c_str()), 0);
  write_text(dir + "/thermal_zone0/type", "acpitz\n");
  write_text(dir + "/thermal_zone0/temp", "40000\n");
  write_text(dir + "/thermal_zone0/trip_point_0_type", "active\n");
  write_text(dir + "/thermal_zone0/trip_point_0_temp", "70000\n");
  write_text(dir + "/thermal_zone0/trip_point_1_type", "active\n");
  write_text(dir + "/thermal_zone0/trip_point_1_temp", "60000\n");
  write_text(dir + "/thermal_zone0/trip_point_2_type", "critical\n");
  write_text(dir + "/thermal_zone0/trip_point_2_temp", "105000\n");
  write_text(dir + "/thermal_zone1/type", "acpitz\n");
  write_text(dir + "/thermal_zone1/temp", "45500\n");

  Samples s = collect(make_thermal_source(FsRoots{"/proc", root}));
  ASSERT_NE(find(s, "thermal", "temp_celsius", {{"zone", "acpitz.0"}}), nullptr);
  ASSERT_NE(find(s, "thermal", "temp_celsius", {{"zone", "acpitz.1"}}), nullptr);
  EXPECT_DOUBLE_EQ(find(s, "thermal", "temp_celsius", {{"zone", "acpitz.0"}})->value, 40.0);
  EXPECT_DOUBLE_EQ(find(s, "thermal", "temp_celsius", {{"zone", "acpitz.1"}})->value, 45.5);
  const Sample* a0 = find(s, "thermal", "trip_celsius", {{"zone", "acpitz.0"}, {"type", "active.0"}});
  const Sample* a1 = find(s, "thermal", "trip_celsius", {{"zone", "acpitz.0"}, {"type", "active.1"}});
  const Sample* crit = find(s, "thermal", "trip_celsius", {{"zone", "acpitz.0"}, {"type", "critical"}});
  ASSERT_NE(a0, nullptr);
  ASSERT_NE(a1, nullptr);
  ASSERT_NE(crit, nullptr);
  EXPECT_DOUBLE_EQ(a0->value, 70.0);
  EXPECT_DOUBLE_EQ(a1->value, 60.0);
  EXPECT_DOUBLE_EQ(crit->value, 105.0);
  EXPECT_EQ(std::system(("rm -rf " + root).c_str()), 0);
}

}  // namespace
}  // namespace pm
