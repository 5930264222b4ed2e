// SPDX-License-Identifier: Apache-2.0
// Parser tests against files captured from a real kernel (tests/fixtures, see its README) plus
// hand-written edge cases. Expected numbers are copied from the fixture files on purpose.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/text.h"
#include "sources/files/proc_parsers.h"
#include "sources/files/system_parsers.h"

namespace pm::procfs {
namespace {

constexpr uint64_t kKiB = 1024;

std::string fixture(const std::string& rel) {
  std::ifstream in(std::string(PM_FIXTURES_DIR) + "/" + rel, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << rel;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- /proc/PID/stat --------------------------------------------------------------------------

TEST(PidStat, CapturedSleep) {
  auto r = parse_pid_stat(fixture("proc/pid/stat"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->pid, 2690);
  EXPECT_EQ(r->comm, "sleep");
  EXPECT_EQ(r->state, 'S');
  EXPECT_EQ(r->ppid, 2679);
  EXPECT_EQ(r->minflt, 197u);
  EXPECT_EQ(r->cminflt, 277u);
  EXPECT_EQ(r->majflt, 1u);
  EXPECT_EQ(r->cmajflt, 2u);
  EXPECT_EQ(r->utime, 0u);
  EXPECT_EQ(r->stime, 0u);
  EXPECT_EQ(r->cutime, 0);
  EXPECT_EQ(r->cstime, 0);
  EXPECT_EQ(r->num_threads, 1);
  EXPECT_EQ(r->starttime, 22735u);
  EXPECT_EQ(r->vsize, 2990080u);
  EXPECT_EQ(r->rss_pages, 420);
}

TEST(PidStat, CapturedCommWithParenAndSpaces) {
  auto r = parse_pid_stat(fixture("proc/pid/stat_weird_comm"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->pid, 2702);
  EXPECT_EQ(r->comm, "a) b (c");
  EXPECT_EQ(r->state, 'S');
  EXPECT_EQ(r->ppid, 2699);
  EXPECT_EQ(r->minflt, 101u);
  EXPECT_EQ(r->starttime, 22836u);
  EXPECT_EQ(r->vsize, 2990080u);
  EXPECT_EQ(r->rss_pages, 408);
}

TEST(PidStat, InlineCommEndingInParenSpace) {
  // A comm of ") R 1 (" would fool a parser that stops at the first ')'.
  auto r = parse_pid_stat("42 (x) R 1 () S 7 42 42 0 -1 0 11 12 13 14 150 250 -3 4 20 0 3 0 999 4096 5 rest\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->pid, 42);
  EXPECT_EQ(r->comm, "x) R 1 (");
  EXPECT_EQ(r->state, 'S');
  EXPECT_EQ(r->ppid, 7);
  EXPECT_EQ(r->minflt, 11u);
  EXPECT_EQ(r->cmajflt, 14u);
  EXPECT_EQ(r->utime, 150u);
  EXPECT_EQ(r->stime, 250u);
  EXPECT_EQ(r->cutime, -3);
  EXPECT_EQ(r->cstime, 4);
  EXPECT_EQ(r->num_threads, 3);
  EXPECT_EQ(r->starttime, 999u);
  EXPECT_EQ(r->vsize, 4096u);
  EXPECT_EQ(r->rss_pages, 5);
}

TEST(PidStat, EmptyComm) {
  auto r = parse_pid_stat("9 () Z 1 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->comm, "");
  EXPECT_EQ(r->state, 'Z');
  EXPECT_EQ(r->starttime, 77u);
}

TEST(PidStat, TruncatedLineIsError) {
  auto r = parse_pid_stat("2690 (sleep) S 2679 2679 2279 0 -1 4194304 197 277 1 2 0 0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kParse);
  EXPECT_NE(r.error().message.find("/proc/PID/stat"), std::string::npos);
  EXPECT_NE(r.error().message.find("fewer than"), std::string::npos);
}

TEST(PidStat, NoParenIsError) {
  auto r = parse_pid_stat("2690 sleep S 2679");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kParse);
}

TEST(PidStat, GarbageNumberIsError) {
  auto r = parse_pid_stat("5 (a) S 1 0 0 0 -1 0 1x 0 0 0 0 0 0 0 20 0 1 0 77 0 0\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kParse);
  auto bad_pid = parse_pid_stat("abc (a) S 1 0 0 0 -1 0 1 0 0 0 0 0 0 0 20 0 1 0 77 0 0\n");
  EXPECT_FALSE(bad_pid.ok());
}

// ---- /proc/PID/status, smaps_rollup, io ------------------------------------------------------

TEST(PidStatus, Captured) {
  auto r = parse_pid_status(fixture("proc/pid/status"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->name, "sleep");
  EXPECT_EQ(r->tgid, 2690);
  EXPECT_EQ(r->pid, 2690);
  EXPECT_EQ(r->ppid, 2679);
  EXPECT_EQ(r->threads, 1);
  EXPECT_EQ(r->vm_size, 2920 * kKiB);
  EXPECT_EQ(r->vm_rss, 1788 * kKiB);
  EXPECT_EQ(r->vm_hwm, 1788 * kKiB);
  EXPECT_EQ(r->rss_anon, 108 * kKiB);
  EXPECT_EQ(r->rss_file, 1680 * kKiB);
  EXPECT_EQ(r->rss_shmem, 0u);
  EXPECT_EQ(r->vm_swap, 0u);
  EXPECT_EQ(r->voluntary_ctxt_switches, 10u);
  EXPECT_EQ(r->nonvoluntary_ctxt_switches, 0u);
}

TEST(PidStatus, KernelThreadWithoutVmLines) {
  auto r = parse_pid_status(
      "Name:\tkworker/0:1 x\nState:\tI (idle)\nTgid:\t12\nPid:\t12\nPPid:\t2\nThreads:\t1\n"
      "voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t6\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->name, "kworker/0:1 x");
  EXPECT_EQ(r->pid, 12);
  EXPECT_EQ(r->ppid, 2);
  EXPECT_EQ(r->vm_rss, 0u);
  EXPECT_EQ(r->voluntary_ctxt_switches, 5u);
  EXPECT_EQ(r->nonvoluntary_ctxt_switches, 6u);
}

TEST(PidStatus, MissingPidIsError) {
  auto r = parse_pid_status("Name:\tx\nTgid:\t1\nPPid:\t0\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kParse);
  EXPECT_NE(r.error().message.find("Pid"), std::string::npos);
}

TEST(PidStatus, GarbageKbValueIsError) {
  auto r = parse_pid_status("Name:\tx\nTgid:\t1\nPid:\t1\nPPid:\t0\nVmRSS:\t  12x kB\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("VmRSS"), std::string::npos);
}

TEST(SmapsRollup, Captured) {
  auto r = parse_smaps_rollup(fixture("proc/pid/smaps_rollup"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rss, 1788 * kKiB);
  EXPECT_EQ(r->pss, 537 * kKiB);
  EXPECT_EQ(r->pss_anon, 108 * kKiB);
  EXPECT_EQ(r->pss_file, 429 * kKiB);
  EXPECT_EQ(r->pss_shmem, 0u);
  EXPECT_EQ(r->shared_clean, 1644 * kKiB);
  EXPECT_EQ(r->shared_dirty, 0u);
  EXPECT_EQ(r->private_clean, 36 * kKiB);
  EXPECT_EQ(r->private_dirty, 108 * kKiB);
  EXPECT_EQ(r->anonymous, 108 * kKiB);
  EXPECT_EQ(r->swap, 0u);
  EXPECT_EQ(r->swap_pss, 0u);
  EXPECT_EQ(r->shared(), 1644 * kKiB);
}

TEST(SmapsRollup, EmptyIsZeros) {
  auto r = parse_smaps_rollup("");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rss, 0u);
  EXPECT_EQ(r->pss, 0u);
  EXPECT_EQ(r->shared(), 0u);
  EXPECT_EQ(r->swap, 0u);
}

TEST(SmapsRollup, SharedSumsCleanAndDirty) {
  auto r = parse_smaps_rollup("Rss: 10 kB\nPss: 4 kB\nShared_Clean: 3 kB\nShared_Dirty: 2 kB\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->shared(), 5 * kKiB);
  EXPECT_EQ(r->pss_anon, 0u);  // pre-5.8 kernels lack Pss_Anon
}

TEST(PidIo, Captured) {
  auto r = parse_pid_io(fixture("proc/pid/io"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rchar, 2129036u);
  EXPECT_EQ(r->wchar, 2097152u);
  EXPECT_EQ(r->syscr, 73u);
  EXPECT_EQ(r->syscw, 24u);
  EXPECT_EQ(r->read_bytes, 331776u);
  EXPECT_EQ(r->write_bytes, 1056768u);
  EXPECT_EQ(r->cancelled_write_bytes, 0u);
}

TEST(PidIo, MissingLineIsError) {
  auto r = parse_pid_io("rchar: 1\nwchar: 2\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kParse);
  EXPECT_NE(r.error().message.find("/proc/PID/io"), std::string::npos);
}

// ---- /proc/stat ------------------------------------------------------------------------------

TEST(ProcStat, Captured) {
  auto r = parse_proc_stat(fixture("proc/stat"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->all.cpu, -1);
  EXPECT_EQ(r->all.user, 962u);
  EXPECT_EQ(r->all.system, 1070u);
  EXPECT_EQ(r->all.idle, 42994u);
  EXPECT_EQ(r->all.iowait, 210u);
  EXPECT_EQ(r->all.softirq, 19u);
  EXPECT_EQ(r->all.steal, 6u);
  EXPECT_EQ(r->all.total(), 45261u);
  ASSERT_EQ(r->cpus.size(), 2u);
  EXPECT_EQ(r->cpus[0].cpu, 0);
  EXPECT_EQ(r->cpus[0].user, 348u);
  EXPECT_EQ(r->cpus[0].idle, 21877u);
  EXPECT_EQ(r->cpus[1].cpu, 1);
  EXPECT_EQ(r->cpus[1].user, 614u);
  EXPECT_EQ(r->cpus[1].iowait, 207u);
  EXPECT_EQ(r->ctxt, 229081u);
  EXPECT_EQ(r->btime, 1795995487u);
  EXPECT_EQ(r->processes, 2683u);
  EXPECT_EQ(r->procs_running, 1u);
  EXPECT_EQ(r->procs_blocked, 0u);
}

TEST(ProcStat, OldKernelShortCpuLinesAndOfflineCpu) {
  auto r = parse_proc_stat(
      "cpu 1 2 3 4\ncpu0 1 2 3 4\ncpu3 5 6 7 8 9 10 11 12 13 14\nctxt 1\nbtime 2\nprocesses 3\n"
      "procs_running 4\nprocs_blocked 5\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->all.idle, 4u);
  EXPECT_EQ(r->all.steal, 0u);
  ASSERT_EQ(r->cpus.size(), 2u);
  EXPECT_EQ(r->cpus[1].cpu, 3);
  EXPECT_EQ(r->cpus[1].guest, 13u);
  EXPECT_EQ(r->cpus[1].guest_nice, 14u);
  // guest/guest_nice are already inside user/nice, so total() leaves them out.
  EXPECT_EQ(r->cpus[1].total(), 5u + 6 + 7 + 8 + 9 + 10 + 11 + 12);
}

TEST(ProcStat, GarbageAndMissingAreErrors) {
  auto bad = parse_proc_stat("cpu 1 2 x 4\nctxt 1\nbtime 2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kParse);
  auto no_cpu = parse_proc_stat("ctxt 1\nbtime 2\nprocesses 3\nprocs_running 4\nprocs_blocked 5\n");
  ASSERT_FALSE(no_cpu.ok());
  EXPECT_NE(no_cpu.error().message.find("cpu"), std::string::npos);
}

// ---- meminfo ---------------------------------------------------------------------------------

TEST(MemInfo, Captured) {
  auto r = parse_meminfo(fixture("proc/meminfo"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->mem_total, 24684092 * kKiB);
  EXPECT_EQ(r->mem_free, 24523244 * kKiB);
  ASSERT_TRUE(r->mem_available.has_value());
  EXPECT_EQ(*r->mem_available, 24442896 * kKiB);
  EXPECT_EQ(r->buffers, 2104 * kKiB);
  EXPECT_EQ(r->cached, 37628 * kKiB);
  EXPECT_EQ(r->swap_cached, 0u);
  EXPECT_EQ(r->active, 18604 * kKiB);  // not Active(anon)/Active(file)
  EXPECT_EQ(r->inactive, 16356 * kKiB);
  EXPECT_EQ(r->anon_pages, 6476 * kKiB);
  EXPECT_EQ(r->mapped, 10708 * kKiB);
  EXPECT_EQ(r->shmem, 8856 * kKiB);
  EXPECT_EQ(r->slab, 74100 * kKiB);
  EXPECT_EQ(r->s_reclaimable, 52436 * kKiB);
  EXPECT_EQ(r->dirty, 140 * kKiB);
  EXPECT_EQ(r->writeback, 0u);
  EXPECT_EQ(r->swap_total, 0u);
  EXPECT_EQ(r->swap_free, 0u);
  EXPECT_FALSE(r->mem_used.has_value());
}

TEST(MemInfo, UnknownKeyIgnored) {
  auto r = parse_meminfo("MemTotal: 100 kB\nFancyNewThing: garbage here\nMemFree: 40 kB\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->mem_total, 100 * kKiB);
  EXPECT_EQ(r->mem_free, 40 * kKiB);
  EXPECT_FALSE(r->mem_available.has_value());
}

TEST(MemInfo, GarbageAndMissingAreErrors) {
  auto bad = parse_meminfo("MemTotal: 1x0 kB\nMemFree: 40 kB\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kParse);
  EXPECT_NE(bad.error().message.find("MemTotal"), std::string::npos);
  auto missing = parse_meminfo("MemFree: 40 kB\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("missing MemTotal"), std::string::npos);
}

TEST(NodeMemInfo, Captured) {
  auto r = parse_node_meminfo(fixture("sys/devices/system/node/node0/meminfo"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->mem_total, 4548820 * kKiB);
  EXPECT_EQ(r->mem_free, 4388024 * kKiB);
  ASSERT_TRUE(r->mem_used.has_value());
  EXPECT_EQ(*r->mem_used, 160796 * kKiB);
  EXPECT_FALSE(r->mem_available.has_value());
  EXPECT_EQ(r->file_pages, 39732 * kKiB);
  EXPECT_EQ(r->active, 18604 * kKiB);
  EXPECT_EQ(r->inactive, 16456 * kKiB);
  EXPECT_EQ(r->dirty, 140 * kKiB);
  EXPECT_EQ(r->shmem, 8856 * kKiB);
  EXPECT_EQ(r->slab, 74100 * kKiB);
  EXPECT_EQ(r->cached, 0u);  // node meminfo has FilePages, not Cached
}

TEST(NodeMemInfo, ProcMeminfoFormatIsRejected) {
  auto r = parse_node_meminfo("MemTotal: 100 kB\nMemFree: 40 kB\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kParse);
}

// ---- vmstat, pressure, loadavg ---------------------------------------------------------------

TEST(VmStat, Captured) {
  auto r = parse_vmstat(fixture("proc/vmstat"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->pgfault, 752788u);
  EXPECT_EQ(r->pgmajfault, 793u);
  EXPECT_EQ(r->pgpgin, 943697u);
  EXPECT_EQ(r->pgpgout, 245568u);
  EXPECT_EQ(r->pswpin, 0u);
  EXPECT_EQ(r->pswpout, 0u);
  EXPECT_EQ(r->oom_kill, 0u);
}

TEST(VmStat, GarbageIsErrorAndOldKernelOk) {
  EXPECT_FALSE(parse_vmstat("pgfault 12a\npgmajfault 1\n").ok());
  auto old = parse_vmstat("nr_free_pages 5\npgfault 12\npgmajfault 1\n");  // no oom_kill pre-4.13
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->pgfault, 12u);
  EXPECT_EQ(old->oom_kill, 0u);
}

TEST(Pressure, CapturedCpu) {
  auto r = parse_pressure(fixture("proc/pressure/cpu"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->some.avg10, 0.19);
  EXPECT_DOUBLE_EQ(r->some.avg60, 0.21);
  EXPECT_DOUBLE_EQ(r->some.avg300, 0.42);
  EXPECT_EQ(r->some.total_us, 2851671u);
  ASSERT_TRUE(r->full.has_value());
  EXPECT_DOUBLE_EQ(r->full->avg10, 0.0);
  EXPECT_EQ(r->full->total_us, 0u);
}

TEST(Pressure, CapturedIo) {
  auto r = parse_pressure(fixture("proc/pressure/io"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->some.avg60, 0.18);
  EXPECT_DOUBLE_EQ(r->some.avg300, 0.33);
  EXPECT_EQ(r->some.total_us, 2017508u);
  ASSERT_TRUE(r->full.has_value());
  EXPECT_DOUBLE_EQ(r->full->avg60, 0.18);
  EXPECT_DOUBLE_EQ(r->full->avg300, 0.32);
  EXPECT_EQ(r->full->total_us, 1937590u);
}

TEST(Pressure, CapturedMemory) {
  auto r = parse_pressure(fixture("proc/pressure/memory"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->some.total_us, 0u);
  ASSERT_TRUE(r->full.has_value());
  EXPECT_EQ(r->full->total_us, 0u);
}

TEST(Pressure, CpuWithoutFullLine) {
  auto r = parse_pressure("some avg10=1.50 avg60=2.25 avg300=0.75 total=123456\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->some.avg10, 1.5);
  EXPECT_DOUBLE_EQ(r->some.avg60, 2.25);
  EXPECT_DOUBLE_EQ(r->some.avg300, 0.75);
  EXPECT_EQ(r->some.total_us, 123456u);
  EXPECT_FALSE(r->full.has_value());
}

TEST(Pressure, GarbageAndMissingAreErrors) {
  EXPECT_FALSE(parse_pressure("some avg10=x avg60=0 avg300=0 total=1\n").ok());
  EXPECT_FALSE(parse_pressure("some avg10=0.1 avg60=0 avg300=0\n").ok());  // no total
  auto r = parse_pressure("full avg10=0 avg60=0 avg300=0 total=1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("some"), std::string::npos);
}

TEST(LoadAvg, Captured) {
  auto r = parse_loadavg(fixture("proc/loadavg"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->load1, 0.02);
  EXPECT_DOUBLE_EQ(r->load5, 0.04);
  EXPECT_DOUBLE_EQ(r->load15, 0.01);
  EXPECT_EQ(r->runnable, 1u);
  EXPECT_EQ(r->total_tasks, 82u);
}

TEST(LoadAvg, MalformedIsError) {
  EXPECT_FALSE(parse_loadavg("0.1 0.2\n").ok());
  EXPECT_FALSE(parse_loadavg("0.1 0.2 0.3 182 99\n").ok());
  EXPECT_FALSE(parse_loadavg("0.1 zz 0.3 1/82 99\n").ok());
}

// ---- thermal ---------------------------------------------------------------------------------

TEST(Thermal, Zone0Fixture) {
  EXPECT_EQ(fixture("sys/class/thermal/thermal_zone0/type"), "x86_pkg_temp\n");
  auto t = parse_millicelsius(fixture("sys/class/thermal/thermal_zone0/temp"));
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(*t, 67.0);
  EXPECT_EQ(fixture("sys/class/thermal/thermal_zone0/trip_point_0_type"), "passive\n");
  auto trip0 = parse_millicelsius(fixture("sys/class/thermal/thermal_zone0/trip_point_0_temp"));
  ASSERT_TRUE(trip0.ok());
  EXPECT_DOUBLE_EQ(*trip0, 95.0);
  EXPECT_EQ(fixture("sys/class/thermal/thermal_zone0/trip_point_1_type"), "critical\n");
  auto trip1 = parse_millicelsius(fixture("sys/class/thermal/thermal_zone0/trip_point_1_temp"));
  ASSERT_TRUE(trip1.ok());
  EXPECT_DOUBLE_EQ(*trip1, 105.0);
}

TEST(Thermal, Zone1Fixture) {
  EXPECT_EQ(fixture("sys/class/thermal/thermal_zone1/type"), "acpitz\n");
  auto t = parse_millicelsius(fixture("sys/class/thermal/thermal_zone1/temp"));
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(*t, 27.8);
  EXPECT_EQ(fixture("sys/class/thermal/thermal_zone1/trip_point_0_type"), "critical\n");
  auto trip = parse_millicelsius(fixture("sys/class/thermal/thermal_zone1/trip_point_0_temp"));
  ASSERT_TRUE(trip.ok());
  EXPECT_DOUBLE_EQ(*trip, 105.0);
}

TEST(Thermal, NegativeAndGarbage) {
  auto neg = parse_millicelsius("-5000\n");
  ASSERT_TRUE(neg.ok());
  EXPECT_DOUBLE_EQ(*neg, -5.0);
  auto bad = parse_millicelsius("abc");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::kParse);
  EXPECT_FALSE(parse_millicelsius("").ok());
  EXPECT_FALSE(parse_millicelsius("12.5\n").ok());
}

// sysfs CPU lists (cpu/online, a PMU's cpumask): ranges, and a bound on what a corrupt file
// can make perf-monitor allocate.
TEST(CpuList, RangesAndBounds) {
  EXPECT_EQ(pm::parse_cpu_list(" 0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_FALSE(pm::parse_cpu_list("3-1").has_value());
  EXPECT_FALSE(pm::parse_cpu_list("0,,1").has_value());
  auto all = pm::parse_cpu_list("0-1048575");
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->size(), pm::kMaxCpuListEntries);
  EXPECT_FALSE(pm::parse_cpu_list("0-1048576").has_value());
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "0-1048575,";
  EXPECT_FALSE(pm::parse_cpu_list(many + "0").has_value());  // was 4 GB
}

}  // namespace
}  // namespace pm::procfs
