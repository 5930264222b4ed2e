// SPDX-License-Identifier: Apache-2.0
#include "sources/top/proc_top_source.h"

#include <pwd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/aggregator.h"
#include "core/cgroup.h"
#include "core/clock.h"
#include "sources/files/proc_parsers.h"
#include "sources/top/cgroup_files.h"
#include "sources/top/cgroup_names.h"
#include "sources/top/proc_top_parsers.h"

namespace pm {

void ProcDetails::fill(TopProcess& row, uint64_t start, bool with_command) {
  std::string dir = proc_ + "/" + std::to_string(row.pid);
  std::string task = row.tid != 0 ? dir + "/task/" + std::to_string(row.tid) : dir;
  if (row.state == 0) {
    auto text = reader_.read(task + "/stat");
    if (!text && text.error().code == Errc::kNotFound) {
      row.state = 'X';  // gone since the kernel's reading: it ended in the interval
    } else if (text) {
      if (auto st = procfs::parse_pid_stat(*text)) {
        // A task on its way out (PF_EXITING) still says R or S for a moment after its memory
        // has gone: it is shown as ended (X), since nothing of it is left to read but its last
        // figures.
        constexpr uint64_t kExiting = 0x00000004;
        row.state = (st->flags & kExiting) != 0 ? 'X' : st->state;
        row.nice = st->nice;
        if (row.ppid == 0) row.ppid = st->ppid;
      }
    }
  }
  // The owner of /proc/PID is the process's effective uid (as htop reads it): one stat(2), no file.
  struct stat sb {};
  if (!row.uid && ::stat(dir.c_str(), &sb) == 0) row.uid = sb.st_uid;
  if (row.uid) row.user = user_name(*row.uid);
  if (with_command) row.command = command(row.pid, start, row.comm, row.kernel);
}

const std::string& ProcDetails::user_name(uint32_t uid) {
  auto it = users_.find(uid);
  if (it != users_.end()) return it->second;
  std::string name = std::to_string(uid);
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr && found->pw_name != nullptr &&
      found->pw_name[0] != '\0') {
    name = found->pw_name;
  }
  if (users_.size() > 4096) users_.clear();  // bounded, whatever uids come and go
  return users_.emplace(uid, std::move(name)).first->second;
}

const std::string& ProcDetails::command(int pid, uint64_t start, const std::string& comm, bool kernel) {
  Command& c = commands_[{pid, start}];
  c.used = true;
  if (!c.text.empty() && c.comm == comm) return c.text;
  c.comm = comm;
  c.text.clear();
  if (!kernel) {
    if (auto text = reader_.read(proc_ + "/" + std::to_string(pid) + "/cmdline")) c.text = command_line(*text);
  }
  // No arguments (a kernel thread, a zombie, one that cleared them): its name, as top shows it.
  if (c.text.empty()) c.text = "[" + comm + "]";
  return c.text;
}

void ProcDetails::next_reading() {
  for (auto it = commands_.begin(); it != commands_.end();) {
    if (!it->second.used) {
      it = commands_.erase(it);
    } else {
      it->second.used = false;
      ++it;
    }
  }
}

std::string proc_top_note(const std::string& why) {
  return why +
         ": figures from /proc; n/a: blocked time, cgroup run-queue p99, others' I/O; processes that live "
         "shorter than an interval may be missed";
}

namespace {

// A process's running figures: CPU time and faults from its stat (its dead threads in),
// run-queue wait and switches as the sums of its live threads' increases, storage I/O where its
// io file could be read.
struct ProcessTotals {
  TaskFigures fig;
  bool io = false;  // its read and write bytes were read
};

uint64_t boottime_ticks(double tick_s) {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>((static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9) / tick_s);
}

bool numeric(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

}  // namespace

struct ProcTopSource::State {
  using Key = std::pair<int, uint64_t>;  // (pid or tid, start time in ticks)
  struct Process {
    ProcessTotals last;
    std::string cgroup;        // as read, uncut
    uint64_t cgroup_read = 0;  // the reading it was read at
  };
  struct Task {
    TaskFigures last;
  };
  std::map<Key, Process> processes;
  std::map<Key, Task> tasks;
  CgroupFiles cgroup_files;  // the rows' own files, kept open
  ProcDetails details;
  FileReader reader;
  double tick_s = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  double page_size = static_cast<double>(::sysconf(_SC_PAGESIZE));
  MonoClock::time_point last_read{};
  uint64_t last_ticks = 0;  // boot time in ticks at the last reading
  uint64_t readings = 0;
  std::string mount = unified_mount();
  std::shared_ptr<TopRecord> record;
  explicit State(const std::string& proc) : details(proc) {}
};

ProcTopSource::ProcTopSource(ProcTopOptions options)
    : opts_(std::move(options)), state_(std::make_unique<State>(opts_.proc)) {}
ProcTopSource::~ProcTopSource() = default;

Result<std::unique_ptr<ProcTopSource>> ProcTopSource::create(ProcTopOptions options) {
  auto src = std::make_unique<ProcTopSource>(std::move(options));
  if (auto l = list_dir(src->opts_.proc); !l) return l.error();
  Samples ignored;
  src->collect(ignored);  // the baseline: what processes did before monitoring began is not this interval's
  src->state_->record.reset();
  return src;
}

void ProcTopSource::collect(Samples& /*out*/) {
  State& s = *state_;
  auto names = list_dir(opts_.proc);
  if (!names) return;
  auto now = MonoClock::now();
  double seconds = s.readings == 0 ? 0 : std::chrono::duration<double>(now - s.last_read).count();
  uint64_t ticks_now = boottime_ticks(s.tick_s);
  // A task started after the last reading counts from zero; one not seen before that started
  // earlier (the baseline's, or missed) has no baseline: no row this time, its figures from now.
  uint64_t since = s.last_ticks;
  bool baseline = s.readings == 0;
  s.details.next_reading();

  auto rec = std::make_shared<TopRecord>();
  rec->seconds = seconds;
  rec->sort = opts_.sort;
  rec->note = proc_top_note(opts_.why);
  std::map<State::Key, State::Process> processes;
  std::map<State::Key, State::Task> tasks;
  std::vector<TopProcess> rows, threads;
  const std::string& proc = opts_.proc;

  // A task's totals and, when it had a baseline, its interval's figures (CPU from schedstat, split
  // in its ticks' ratio).
  auto task_delta = [&](const State::Key& key, const TaskFigures& t, bool counts_from_zero, TopFigures* f) -> bool {
    tasks[key].last = t;
    auto prev = s.tasks.find(key);
    if (prev == s.tasks.end() && !counts_from_zero) return false;
    *f = top_delta(t, prev != s.tasks.end() ? prev->second.last : TaskFigures{});
    f->blocked_known = false;
    f->io_known = false;
    return true;
  };
  auto cpu_and_faults = [&](const procfs::PidStat& st, TaskFigures& t) {
    t[TaskFig::kUser] = static_cast<double>(st.utime) * s.tick_s;
    t[TaskFig::kSystem] = static_cast<double>(st.stime) * s.tick_s;
    t[TaskFig::kMinorFaults] = static_cast<double>(st.minflt);
    t[TaskFig::kMajorFaults] = static_cast<double>(st.majflt);
  };
  auto read_task = [&](const std::string& dir, const procfs::PidStat& st, TaskFigures& t) {
    cpu_and_faults(st, t);
    if (auto text = s.reader.read(dir + "/schedstat")) {
      if (auto ss = parse_task_schedstat(*text)) {
        t[TaskFig::kOnCpu] = static_cast<double>(ss->on_cpu_ns) * 1e-9;
        t[TaskFig::kRunq] = static_cast<double>(ss->runq_ns) * 1e-9;
      }
    }
    std::optional<uint32_t> uid;
    if (auto text = s.reader.read(dir + "/status")) {
      if (auto ts = procfs::parse_pid_status(*text)) {
        t[TaskFig::kVoluntary] = static_cast<double>(ts->voluntary_ctxt_switches);
        t[TaskFig::kInvoluntary] = static_cast<double>(ts->nonvoluntary_ctxt_switches);
        uid = ts->uid;
      }
    }
    return uid;
  };
  // What the process's threads' increases sum to: run-queue wait and switches.
  auto add_thread = [](TaskFigures& sum, const TopFigures& f) {
    for (TaskFig i : {TaskFig::kRunq, TaskFig::kVoluntary, TaskFig::kInvoluntary}) sum[i] += f[i];
  };

  for (const std::string& name : *names) {
    if (!numeric(name)) continue;
    std::string dir = proc + "/" + name;
    auto text = s.reader.read(dir + "/stat");
    if (!text) continue;  // gone since the listing
    auto st = procfs::parse_pid_stat(*text);
    if (!st) continue;
    int pid = std::stoi(name);
    State::Key key{pid, st->starttime};
    bool fresh = !baseline && st->starttime >= since;
    auto prev = s.processes.find(key);
    State::Process& p = processes[key];
    if (prev != s.processes.end()) p = prev->second;
    ProcessTotals then = p.last;
    bool had = prev != s.processes.end();
    ProcessTotals& now_t = p.last;
    cpu_and_faults(*st, now_t.fig);

    TopProcess row;
    row.pid = pid;
    row.comm = st->comm;
    row.ppid = st->ppid;
    row.state = st->state;
    row.nice = st->nice;
    row.kernel = st->kernel_thread() || pid == 2 || st->ppid == 2;
    TaskFigures runq_sw;  // the process's threads' increases summed
    // Its threads: one (the process itself), or each under task/.
    bool one = st->num_threads <= 1;
    std::optional<uint32_t> uid;
    if (one) {
      TaskFigures t;
      uid = read_task(dir, *st, t);
      TopFigures f;
      if (task_delta(key, t, fresh, &f)) {
        add_thread(runq_sw, f);
        if (opts_.threads && !baseline) {
          TopProcess th = row;
          th.tid = pid;
          th.f = f;
          threads.push_back(std::move(th));
        }
      }
    } else {
      if (auto ts = s.reader.read(dir + "/status")) {
        if (auto parsed = procfs::parse_pid_status(*ts)) uid = parsed->uid;
      }
      if (auto tids = list_dir(dir + "/task")) {
        for (const std::string& tid_name : *tids) {
          if (!numeric(tid_name)) continue;
          std::string tdir = dir + "/task/" + tid_name;
          auto ttext = s.reader.read(tdir + "/stat");
          if (!ttext) continue;
          auto tst = procfs::parse_pid_stat(*ttext);
          if (!tst) continue;
          int tid = std::stoi(tid_name);
          TaskFigures t;
          read_task(tdir, *tst, t);
          TopFigures f;
          if (!task_delta({tid, tst->starttime}, t, !baseline && tst->starttime >= since, &f)) continue;
          add_thread(runq_sw, f);
          if (opts_.threads && !baseline) {
            TopProcess th = row;
            th.tid = tid;
            th.comm = tst->comm;
            th.state = tst->state;
            th.nice = tst->nice;
            th.f = f;
            threads.push_back(std::move(th));
          }
        }
      }
    }
    for (TaskFig i : {TaskFig::kRunq, TaskFig::kVoluntary, TaskFig::kInvoluntary})
      now_t.fig[i] = then.fig[i] + runq_sw[i];
    // Storage I/O: readable for one's own processes (others' need CAP_SYS_PTRACE).
    now_t.io = false;
    now_t.fig[TaskFig::kReadBytes] = now_t.fig[TaskFig::kWriteBytes] = 0;
    if (auto io_text = s.reader.read(dir + "/io")) {
      if (auto io = procfs::parse_pid_io(*io_text)) {
        now_t.io = true;
        now_t.fig[TaskFig::kReadBytes] = static_cast<double>(io->read_bytes);
        now_t.fig[TaskFig::kWriteBytes] = static_cast<double>(io->write_bytes);
      }
    }
    std::optional<double> rss;
    if (!row.kernel) {
      if (auto statm = s.reader.read(dir + "/statm")) {
        if (auto pages = parse_statm_resident(*statm)) rss = static_cast<double>(*pages) * s.page_size;
      }
    }
    // Its cgroup: at first sight, then every few readings (a move is rare; a file less each time).
    if (p.cgroup_read == 0 || s.readings - p.cgroup_read >= 4) {
      if (auto cg = s.reader.read(dir + "/cgroup")) {
        if (auto path = unified_cgroup_of(*cg)) p.cgroup = *path;
      }
      p.cgroup_read = s.readings + 1;
    }
    if (baseline || (!had && !fresh)) continue;
    TopFigures& f = row.f;
    static_cast<TaskFigures&>(f) = now_t.fig.since(then.fig);
    f.blocked_known = false;
    f.io_known = now_t.io && (then.io || !had);
    if (!f.io_known) f[TaskFig::kReadBytes] = f[TaskFig::kWriteBytes] = 0;
    f.rss_bytes = rss;
    row.uid = uid;
    if (!p.cgroup.empty()) row.cgroup = cut_cgroup_path(p.cgroup, opts_.cgroup_depth);
    s.details.fill(row, st->starttime);
    rows.push_back(std::move(row));
  }
  // The threads' users, commands and cgroups are their process's.
  if (!threads.empty()) {
    std::map<int, const TopProcess*> of;
    for (const TopProcess& r : rows) of[r.pid] = &r;
    for (TopProcess& t : threads) {
      auto it = of.find(t.pid);
      if (it == of.end()) continue;
      t.uid = it->second->uid;
      t.user = it->second->user;
      t.command = it->second->command;
      t.cgroup = it->second->cgroup;
      t.f.rss_bytes = it->second->f.rss_bytes;
    }
  }
  s.processes = std::move(processes);
  s.tasks = std::move(tasks);
  s.last_read = now;
  s.last_ticks = ticks_now;
  ++s.readings;
  if (baseline) return;

  // Cgroups: their processes' figures summed, and their own files.
  std::map<std::string, TopCgroup> cgroups;
  for (const TopProcess& r : rows) {
    if (r.cgroup.empty()) continue;
    TopCgroup& c = cgroups[r.cgroup];
    c.path = r.cgroup;
    c.with_descendants = cgroup_depth_of(r.cgroup) >= opts_.cgroup_depth;
    ++c.processes;
    c.f.add(r.f);
  }
  for (auto& [path, c] : cgroups) rec->cgroups.push_back(std::move(c));
  rec->processes = std::move(rows);
  rec->threads = std::move(threads);
  rec->count = opts_.count;
  s.cgroup_files.read(s.mount, *rec);
  s.record = std::move(rec);
}

void ProcTopSource::annotate(IntervalRecord& rec) {
  if (state_->record) rec.top = std::move(state_->record);
}

}  // namespace pm
