// SPDX-License-Identifier: Apache-2.0
// The top lists from /proc: the parsers on captured files (tests/fixtures/proc/top), and the
// source on a /proc written here, reading by reading (PID reuse, processes new in the interval).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/aggregator.h"
#include "sources/files/proc_parsers.h"
#include "sources/top/proc_top_parsers.h"
#include "sources/top/proc_top_source.h"

namespace pm {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(PM_FIXTURES_DIR) + "/proc/top/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProcTopParsers, StatOfAProcessAThreadAndAKernelThread) {
  auto st = procfs::parse_pid_stat(fixture("stat"));
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->comm, "python3");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 13430);
  EXPECT_EQ(st->minflt, 2950u);
  EXPECT_EQ(st->majflt, 1u);
  EXPECT_EQ(st->utime, 2u);
  EXPECT_EQ(st->stime, 1u);
  EXPECT_EQ(st->nice, 5);
  EXPECT_EQ(st->num_threads, 2);
  EXPECT_EQ(st->starttime, 8046812u);
  EXPECT_FALSE(st->kernel_thread());
  // A thread named "pm worker) x" by prctl: its comm runs to the last ')'.
  auto th = procfs::parse_pid_stat(fixture("task_stat"));
  ASSERT_TRUE(th) << th.error().message;
  EXPECT_EQ(th->comm, "pm worker) x");
  EXPECT_EQ(th->minflt, 4u);
  EXPECT_EQ(th->starttime, 8046823u);
  auto k = procfs::parse_pid_stat(fixture("kthreadd_stat"));
  ASSERT_TRUE(k);
  EXPECT_EQ(k->comm, "kthreadd");
  EXPECT_TRUE(k->kernel_thread());
  EXPECT_FALSE(procfs::parse_pid_stat("12 (cut) S 1 2"));
  EXPECT_FALSE(procfs::parse_pid_stat("no comm at all"));
}

TEST(ProcTopParsers, SchedstatStatusStatmCmdlineCgroup) {
  auto ss = parse_task_schedstat(fixture("schedstat"));
  ASSERT_TRUE(ss);
  EXPECT_EQ(ss->on_cpu_ns, 46711012u);
  EXPECT_EQ(ss->runq_ns, 4593476u);
  EXPECT_EQ(ss->timeslices, 31u);
  EXPECT_FALSE(parse_task_schedstat("12 x"));
  auto st = procfs::parse_pid_status(fixture("status"));
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->uid, 0u);
  EXPECT_EQ(st->voluntary_ctxt_switches, 22u);
  EXPECT_EQ(st->nonvoluntary_ctxt_switches, 9u);
  EXPECT_FALSE(procfs::parse_pid_status("Name:\tx\nUid:\tnot-a-number\n"));
  EXPECT_EQ(parse_statm_resident(fixture("statm")), 3460u);
  EXPECT_EQ(command_line(fixture("cmdline")),
            "/root/.pyenv/versions/3.11.7/bin/python3 /tmp/pmfix.py an arg with spaces second");
  EXPECT_EQ(command_line(std::string("a\0b\0\0", 5)), "a b");
  EXPECT_EQ(command_line(""), "");
  EXPECT_EQ(unified_cgroup_of(fixture("cgroup")), "/");
  EXPECT_EQ(unified_cgroup_of("1:cpu:/x\n0::/user.slice/a b\n"), "/user.slice/a b");
  EXPECT_FALSE(unified_cgroup_of("1:cpu:/x\n"));
}

// A /proc of our own: one process per call, its files as the kernel writes them.
class FakeProc {
 public:
  FakeProc() : dir_(fs::temp_directory_path() / ("pm-proc-top-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~FakeProc() { fs::remove_all(dir_); }
  FakeProc(const FakeProc&) = delete;
  FakeProc& operator=(const FakeProc&) = delete;
  [[nodiscard]] std::string path() const { return dir_.string(); }
  void process(int pid, uint64_t start, uint64_t utime, uint64_t on_cpu_ns, uint64_t runq_ns,
               const std::string& cmdline) {
    fs::path p = dir_ / std::to_string(pid);
    fs::create_directories(p);
    std::ofstream(p / "stat") << pid << " (worker) R 1 1 1 0 -1 4194304 10 0 0 0 " << utime << " 0 0 0 20 0 1 0 "
                              << start << " 1000 100 0\n";
    std::ofstream(p / "schedstat") << on_cpu_ns << " " << runq_ns << " 5\n";
    std::ofstream(p / "status") << "Name:\tworker\nTgid:\t" << pid << "\nPid:\t" << pid
                                << "\nPPid:\t1\nUid:\t4242\t4242\t4242\t4242\nvoluntary_ctxt_switches:\t3\n"
                                   "nonvoluntary_ctxt_switches:\t1\n";
    std::ofstream(p / "statm") << "100 25 10 1 0 50 0\n";
    std::ofstream(p / "cgroup") << "0::/user.slice\n";
    std::ofstream(p / "cmdline", std::ios::binary) << cmdline;
  }
  void remove(int pid) { fs::remove_all(dir_ / std::to_string(pid)); }

 private:
  fs::path dir_;
};

TEST(ProcTopSource, DeltasPerPidAndStartTimeNeverNegativeOnReuse) {
  FakeProc proc;
  // Far in the future, in ticks after boot: started after any reading.
  constexpr uint64_t kLate = 1ULL << 50;
  proc.process(100, 5, 1000, 10'000'000'000, 1'000'000'000, std::string("old\0", 4));
  proc.process(200, 6, 10, 1'000'000'000, 0, std::string("stays\0--flag\0", 13));
  ProcTopOptions o;
  o.count = 0;
  o.threads = true;
  o.why = "not root";
  o.proc = proc.path();
  auto src = ProcTopSource::create(o);
  ASSERT_TRUE(src) << src.error().message;
  // PID 100 reused by a new process with less CPU time; 200 ran 50 ticks; 300 began since.
  proc.remove(100);
  proc.process(100, kLate, 3, 30'000'000, 0, std::string("new\0", 4));
  proc.process(200, 6, 60, 1'500'000'000, 250'000'000, std::string("stays\0--flag\0", 13));
  proc.process(300, kLate, 7, 70'000'000, 1'000'000, std::string("born\0", 5));
  Samples ignored;
  (*src)->collect(ignored);
  IntervalRecord rec;
  (*src)->annotate(rec);
  ASSERT_TRUE(rec.top);
  const TopRecord& top = *rec.top;
  EXPECT_NE(top.note.find("not root: figures from /proc"), std::string::npos) << top.note;
  double tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::map<int, const TopProcess*> by_pid;
  for (const TopProcess& p : top.processes) by_pid[p.pid] = &p;
  ASSERT_EQ(by_pid.size(), 3u);
  EXPECT_NEAR(by_pid[100]->f.cpu_s(), 3 * tick, 1e-9);  // from zero: a new process, not 3 - 1000
  EXPECT_EQ(by_pid[100]->command, "new");
  EXPECT_NEAR(by_pid[200]->f.cpu_s(), 50 * tick, 1e-9);
  EXPECT_NEAR(by_pid[200]->f.runq_s(), 0.25, 1e-9);
  EXPECT_EQ(by_pid[200]->command, "stays --flag");
  EXPECT_EQ(by_pid[200]->uid, 4242u);
  EXPECT_EQ(by_pid[200]->user, "4242");  // no name in the user database: the number
  EXPECT_EQ(by_pid[200]->state, 'R');
  EXPECT_EQ(by_pid[200]->cgroup, "/user.slice");
  EXPECT_FALSE(by_pid[200]->f.blocked_known);
  EXPECT_FALSE(by_pid[200]->f.io_known);  // no io file
  EXPECT_NEAR(by_pid[200]->f.rss_bytes.value_or(0), 25.0 * static_cast<double>(::sysconf(_SC_PAGESIZE)), 1);
  EXPECT_NEAR(by_pid[300]->f.cpu_s(), 7 * tick, 1e-9);
  for (const TopProcess& p : top.processes) {
    EXPECT_GE(p.f.user_s(), 0);
    EXPECT_GE(p.f.runq_s(), 0);
  }
  // Threads: one each (the process itself), CPU from schedstat.
  std::map<int, const TopProcess*> by_tid;
  for (const TopProcess& t : top.threads) by_tid[t.tid] = &t;
  ASSERT_EQ(by_tid.count(200), 1u);
  EXPECT_NEAR(by_tid[200]->f.cpu_s(), 0.5, 1e-9);
  EXPECT_EQ(by_tid[200]->command, "stays --flag");
  ASSERT_EQ(top.cgroups.size(), 1u);
  EXPECT_EQ(top.cgroups[0].path, "/user.slice");
  EXPECT_EQ(top.cgroups[0].processes, 3);
  EXPECT_FALSE(top.cgroups[0].runq_read);
}

// A task past exit_mm() still says R in its stat, with no memory left to read: PF_EXITING in
// its flags shows it as ended (X), never as a running row with n/a; so is one whose /proc entry
// is already gone.
TEST(ProcDetails, ATaskOnItsWayOutIsShownAsEnded) {
  FakeProc proc;
  proc.process(100, 5, 1, 1, 0, std::string("leaving\0", 8));
  proc.process(200, 5, 1, 1, 0, std::string("staying\0", 8));
  std::ofstream(fs::path(proc.path()) / "100" / "stat")
      << "100 (worker) R 1 1 1 0 -1 4194308 10 0 0 0 1 0 0 0 20 0 1 0 5 1000 100 0\n";
  ProcDetails details(proc.path());
  TopProcess leaving, staying;
  leaving.pid = 100;
  staying.pid = 200;
  details.fill(leaving, 5);
  details.fill(staying, 5);
  EXPECT_EQ(leaving.state, 'X');
  EXPECT_EQ(staying.state, 'R');
  TopProcess gone;  // its /proc entry went between the kernel's reading and this one
  gone.pid = 300;
  details.fill(gone, 5);
  EXPECT_EQ(gone.state, 'X');
}

// This machine's own /proc: the test process itself is a row, with its user and command line.
TEST(ProcTopSource, ThisProcessFromTheRealProc) {
  ProcTopOptions o;
  o.count = 0;
  o.why = "test";
  auto src = ProcTopSource::create(o);
  ASSERT_TRUE(src) << src.error().message;
  Samples ignored;
  (*src)->collect(ignored);
  IntervalRecord rec;
  (*src)->annotate(rec);
  ASSERT_TRUE(rec.top);
  const TopProcess* me = nullptr;
  for (const TopProcess& p : rec.top->processes) {
    if (p.pid == ::getpid()) me = &p;
  }
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(me->state, 'R');
  EXPECT_EQ(me->uid, ::getuid());
  EXPECT_FALSE(me->user.empty());
  EXPECT_NE(me->command.find("unit_tests"), std::string::npos) << me->command;
  EXPECT_TRUE(me->f.io_known);  // one's own /proc/PID/io is readable
}

}  // namespace
}  // namespace pm
