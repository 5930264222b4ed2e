// SPDX-License-Identifier: Apache-2.0
#include "sources/files/process_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cmath>

#include "core/text.h"
#include "sources/files/proc_parsers.h"

namespace pm {
namespace {

using K = MetricKind;
const MetricDesc kProcesses{
    "process_tree",  "processes", K::kGauge, Unit::kNone, "Live processes in the tree (zombies excluded)",
    "proc_processes"};
const MetricDesc kSeen{
    "process_tree",       "processes_seen", K::kGauge, Unit::kNone, "Processes that have belonged to the tree so far",
    "proc_processes_seen"};
const MetricDesc kThreads{"process_tree", "threads", K::kGauge, Unit::kNone, "Threads in the tree", "proc_threads"};
const MetricDesc kVmSize{
    "process_tree", "vm_size_bytes", K::kGauge, Unit::kBytes, "Sum of the members' virtual memory sizes",
    "proc_vm_size"};
const MetricDesc kRss{"process_tree",
                      "rss_bytes",
                      K::kGauge,
                      Unit::kBytes,
                      "Sum of the members' RSS (pages shared between members count once per member)",
                      "proc_rss"};
const MetricDesc kPss{"process_tree",
                      "pss_bytes",
                      K::kGauge,
                      Unit::kBytes,
                      "Sum of the members' PSS: the tree's share of memory, shared pages split fairly",
                      "proc_pss"};
const MetricDesc kShared{"process_tree",
                         "shared_bytes",
                         K::kGauge,
                         Unit::kBytes,
                         "Sum of the members' shared resident pages (Shared_Clean + Shared_Dirty)",
                         "proc_shared"};
const MetricDesc kAnon{
    "process_tree", "anon_bytes", K::kGauge, Unit::kBytes, "Sum of the members' anonymous resident memory",
    "proc_anon"};
const MetricDesc kUser{"process_tree",
                       "cpu_user_seconds",
                       K::kCounter,
                       Unit::kSeconds,
                       "CPU time in user mode, exited members included",
                       "proc_cpu_user_seconds"};
const MetricDesc kSystem{"process_tree",
                         "cpu_system_seconds",
                         K::kCounter,
                         Unit::kSeconds,
                         "CPU time in kernel mode, exited members included",
                         "proc_cpu_system_seconds"};
const MetricDesc kMinflt{
    "process_tree",     "minor_faults", K::kCounter, Unit::kNone, "Minor page faults, exited members included",
    "proc_minor_faults"};
const MetricDesc kMajflt{
    "process_tree",     "major_faults", K::kCounter, Unit::kNone, "Major page faults, exited members included",
    "proc_major_faults"};
const MetricDesc kVcsw{"process_tree",
                       "voluntary_switches",
                       K::kCounter,
                       Unit::kNone,
                       "Voluntary context switches (the task blocked)",
                       "proc_voluntary_switches"};
const MetricDesc kIvcsw{"process_tree",
                        "involuntary_switches",
                        K::kCounter,
                        Unit::kNone,
                        "Involuntary context switches (the task was preempted)",
                        "proc_involuntary_switches"};
const MetricDesc kReadBytes{
    "process_tree",      "io_read_bytes", K::kCounter, Unit::kBytes, "Bytes the tree caused to be read from storage",
    "proc_io_read_bytes"};
const MetricDesc kWriteBytes{
    "process_tree",       "io_write_bytes", K::kCounter, Unit::kBytes, "Bytes the tree caused to be written to storage",
    "proc_io_write_bytes"};
const MetricDesc kRchar{"process_tree",
                        "io_rchar_bytes",
                        K::kCounter,
                        Unit::kBytes,
                        "Bytes the tree read with read()-like calls (cache hits included)",
                        "proc_io_rchar"};
const MetricDesc kWchar{
    "process_tree", "io_wchar_bytes", K::kCounter, Unit::kBytes, "Bytes the tree wrote with write()-like calls",
    "proc_io_wchar"};

// "1234 1240 " -> calls f for each pid
template <typename F>
void for_each_pid(std::string_view text, F&& f) {
  for (std::string_view field = next_field(text); !field.empty(); field = next_field(text)) {
    if (auto pid = parse_i64(field)) f(static_cast<int>(*pid));
  }
}

}  // namespace

void ProcessTree::Inclusive::add(const Inclusive& o) {
  user += o.user;
  system += o.system;
  minflt += o.minflt;
  majflt += o.majflt;
  rchar += o.rchar;
  wchar += o.wchar;
  read_bytes += o.read_bytes;
  write_bytes += o.write_bytes;
}

void ProcessTree::Inclusive::at_least(const Inclusive& o) {
  user = std::max(user, o.user);
  system = std::max(system, o.system);
  minflt = std::max(minflt, o.minflt);
  majflt = std::max(majflt, o.majflt);
  rchar = std::max(rchar, o.rchar);
  wchar = std::max(wchar, o.wchar);
  read_bytes = std::max(read_bytes, o.read_bytes);
  write_bytes = std::max(write_bytes, o.write_bytes);
}

std::vector<int> ProcessTree::pids() const {
  std::vector<int> out;
  out.reserve(members_.size());
  for (const auto& [pid, m] : members_) out.push_back(pid);
  return out;
}

void ProcessTree::note_denied(const Error& e, const char* what) {
  if (denied_.find(what) != std::string::npos) return;
  if (!denied_.empty()) denied_ += "; ";
  denied_ += e.message + ": " + what + " left out (run as root or with CAP_SYS_PTRACE)";
  if (std::string_view(what) == "I/O")
    io_denied_ = true;
  else
    smaps_denied_ = true;
}

ProcessTree::ProcessTree(std::string proc_root)
    : proc_(std::move(proc_root)),
      tick_seconds_(1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK))),
      page_size_(static_cast<double>(::sysconf(_SC_PAGESIZE))) {}

bool ProcessTree::join(int pid, int ppid) {
  auto [it, inserted] = members_.try_emplace(pid);
  if (!inserted) return false;
  it->second.pid = pid;
  it->second.ppid = ppid;
  ++seen_;
  return true;
}

bool ProcessTree::add_root(int pid) {
  join(pid, 0);
  if (read_member(members_[pid]) != ReadResult::kOk) {
    members_.erase(pid);
    --seen_;
    return false;
  }
  return true;
}

void ProcessTree::on_fork(int parent_tgid, int child_pid, int child_tgid) {
  if (child_pid != child_tgid) return;  // a new thread, not a new process
  if (members_.count(parent_tgid) != 0) join(child_tgid, parent_tgid);
}

void ProcessTree::on_exit(int pid) {
  auto it = members_.find(pid);
  if (it != members_.end()) read_member(it->second);  // may still be a zombie: final figures
}

void ProcessTree::on_reaping(int pid) {
  // Only descendants of the tree are our children besides the root: one we never saw (it was
  // orphaned before any walk found it) still belongs.
  join(pid, 0);
  auto it = members_.find(pid);
  read_member(it->second);
  retire(it->second, /*absorbed_by_parent=*/false);
  members_.erase(it);
}

void ProcessTree::retire(const Member& m, bool absorbed_by_parent) {
  if (!absorbed_by_parent) exited_inc_.add(m.inc);
  exited_own_.voluntary += m.own.voluntary;
  exited_own_.involuntary += m.own.involuntary;
}

Result<std::string_view> ProcessTree::read_kept(UniqueFd& fd, const std::string& path) {
  if (!fd) {
    fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
      if (errno == EMFILE || errno == ENFILE) return reader_.read(path);  // out of fds: open per read
      return Error::from_errno(errno, path);
    }
  }
  auto text = reader_.reread(fd.get(), path.c_str());
  if (text && text->empty()) return make_error(Errc::kNotFound, path + ": empty");
  return text;
}

ProcessTree::ReadResult ProcessTree::read_member(Member& m, Detail detail) {
  std::string base = proc_ + "/" + std::to_string(m.pid) + "/";
  auto stat_text = read_kept(m.stat_fd, base + "stat");
  if (!stat_text) {
    // ENOENT/ESRCH: the process is gone. Anything else (out of fds, say) skips this pass.
    return stat_text.error().code == Errc::kNotFound ? ReadResult::kGone : ReadResult::kSkipped;
  }
  auto st = procfs::parse_pid_stat(*stat_text);
  if (!st) return ReadResult::kSkipped;
  if (m.starttime != 0 && st->starttime != m.starttime) return ReadResult::kGone;  // pid reused
  m.starttime = st->starttime;
  m.ppid = st->ppid;
  // A leader that exited while its threads run shows 'Z' too: that process is still alive.
  m.zombie = (st->state == 'Z' || st->state == 'X') && st->num_threads <= 1;
  auto ticks = [&](uint64_t own, int64_t children) {
    return static_cast<double>(own + static_cast<uint64_t>(std::max<int64_t>(children, 0))) * tick_seconds_;
  };
  m.inc.user = ticks(st->utime, st->cutime);
  m.inc.system = ticks(st->stime, st->cstime);
  m.inc.minflt = static_cast<double>(st->minflt + st->cminflt);
  m.inc.majflt = static_cast<double>(st->majflt + st->cmajflt);
  m.mem.threads = static_cast<double>(st->num_threads);
  m.mem.vm_size = static_cast<double>(st->vsize);
  m.mem.rss = m.zombie ? 0 : static_cast<double>(std::max<int64_t>(st->rss_pages, 0)) * page_size_;

  auto io_text = read_kept(m.io_fd, base + "io");
  if (!io_text && io_text.error().code == Errc::kPermissionDenied) note_denied(io_text.error(), "I/O");
  if (io_text) {
    if (auto io = procfs::parse_pid_io(*io_text)) {
      m.inc.rchar = static_cast<double>(io->rchar);
      m.inc.wchar = static_cast<double>(io->wchar);
      m.inc.read_bytes = static_cast<double>(io->read_bytes);
      m.inc.write_bytes = static_cast<double>(io->write_bytes);
    }
  }

  auto now = std::chrono::steady_clock::now();
  bool moved = std::abs(m.mem.rss - m.rss_at_detail) > std::max(1024.0 * 1024.0, 0.05 * m.rss_at_detail);
  if (detail == Detail::kAlways || moved || m.zombie || now - m.detail_at >= std::chrono::seconds(1)) {
    m.detail_at = now;
    m.rss_at_detail = m.mem.rss;
    read_detail(m, base, st->num_threads);
  }
  return ReadResult::kOk;
}

void ProcessTree::read_detail(Member& m, const std::string& base, int64_t threads) {
  if (m.zombie) {
    m.mem.pss = m.mem.shared = m.mem.anon = 0;  // a zombie has no memory left
  } else if (auto sm_text = reader_.read(base + "smaps_rollup"); !sm_text) {
    if (sm_text.error().code == Errc::kPermissionDenied) note_denied(sm_text.error(), "PSS, shared and anon");
  } else {
    if (auto sm = procfs::parse_smaps_rollup(*sm_text)) {
      m.mem.rss = static_cast<double>(sm->rss);
      m.mem.pss = static_cast<double>(sm->pss);
      m.mem.shared = static_cast<double>(sm->shared());
      m.mem.anon = static_cast<double>(sm->anonymous);
    }
  }

  // Context switches are per thread: one status file when single-threaded, else one per thread.
  Own own;
  auto add_status = [&](const std::string& path) {
    if (auto text = reader_.read(path)) {
      if (auto status = procfs::parse_pid_status(*text)) {
        own.voluntary += static_cast<double>(status->voluntary_ctxt_switches);
        own.involuntary += static_cast<double>(status->nonvoluntary_ctxt_switches);
      }
    }
  };
  if (threads <= 1) {
    add_status(base + "status");
  } else if (auto tids = list_dir(base + "task")) {
    for (const std::string& tid : *tids)
      add_status(base + "task/" + tid + "/status");  // NOLINT(performance-inefficient-string-concatenation)
  }
  // A thread that ended takes its switches with it; a member's count never goes back.
  m.own.voluntary = std::max(m.own.voluntary, own.voluntary);
  m.own.involuntary = std::max(m.own.involuntary, own.involuntary);
}

void ProcessTree::children_of(Member& m, std::vector<int>& out) {
  std::string task = proc_ + "/" + std::to_string(m.pid) + "/task/";
  auto add = [&](const Result<std::string_view>& text) {
    if (text) for_each_pid(*text, [&](int pid) { out.push_back(pid); });
  };
  if (m.mem.threads <= 1) {
    std::string path = task + std::to_string(m.pid) + "/children";
    // An empty children file is normal: read_kept's "empty means gone" does not apply here.
    if (!m.children_fd) m.children_fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    add(m.children_fd ? reader_.reread(m.children_fd.get(), path.c_str()) : reader_.read(path));
  } else if (auto tids = list_dir(task)) {
    for (const std::string& tid : *tids) add(reader_.read(task + tid + "/children"));
  }
}

void ProcessTree::collect(Samples& out) {
  // Discover: each member's children, and theirs, until nothing new turns up.
  scratch_.clear();
  for (const auto& [pid, m] : members_) scratch_.push_back(pid);
  std::vector<int> kids;
  if (adopter_ != 0) {
    auto text =
        reader_.read(proc_ + "/" + std::to_string(adopter_) + "/task/" + std::to_string(adopter_) + "/children");
    if (text) {
      for_each_pid(*text, [&](int pid) {
        if (join(pid, adopter_)) scratch_.push_back(pid);
      });
    }
  }
  for (size_t i = 0; i < scratch_.size(); ++i) {
    auto it = members_.find(scratch_[i]);
    if (it == members_.end() || it->second.zombie) continue;
    kids.clear();
    children_of(it->second, kids);
    for (int kid : kids) {
      if (join(kid, scratch_[i])) scratch_.push_back(kid);
    }
  }

  // Read every member, parents before children (a parent starts before its child; members not
  // read yet go last): a child reaped during the pass may then be missed once, never counted
  // twice. Settle the ones that are gone.
  scratch_.clear();
  for (const auto& [pid, m] : members_) scratch_.push_back(pid);
  auto start_of = [&](int pid) {
    uint64_t t = members_[pid].starttime;
    return t == 0 ? UINT64_MAX : t;
  };
  std::sort(scratch_.begin(), scratch_.end(),
            [&](int a, int b) { return std::pair(start_of(a), a) < std::pair(start_of(b), b); });
  std::vector<int> gone;
  for (int pid : scratch_) {
    if (read_member(members_[pid], Detail::kIfChanged) == ReadResult::kGone) gone.push_back(pid);
  }
  // A gone member whose parent is (or was until this tick) a member was reaped by it: the
  // parent's figures hold it now. Decide for all before erasing any.
  std::vector<bool> absorbed;
  absorbed.reserve(gone.size());
  for (int pid : gone) absorbed.push_back(members_.count(members_[pid].ppid) != 0);
  for (size_t i = 0; i < gone.size(); ++i) {
    retire(members_[gone[i]], absorbed[i]);
    members_.erase(gone[i]);
  }

  Inclusive inc = exited_inc_;
  Own own = exited_own_;
  Memory mem;
  double processes = 0;
  for (const auto& [pid, m] : members_) {
    inc.add(m.inc);
    own.voluntary += m.own.voluntary;
    own.involuntary += m.own.involuntary;
    if (m.zombie) continue;
    ++processes;
    mem.threads += m.mem.threads;
    mem.vm_size += m.mem.vm_size;
    mem.rss += m.mem.rss;
    mem.pss += m.mem.pss;
    mem.shared += m.mem.shared;
    mem.anon += m.mem.anon;
  }
  reported_inc_.at_least(inc);
  reported_own_.voluntary = std::max(reported_own_.voluntary, own.voluntary);
  reported_own_.involuntary = std::max(reported_own_.involuntary, own.involuntary);
  inc = reported_inc_;
  own = reported_own_;

  auto add = [&](const MetricDesc& d, double v) { out.push_back({&d, {}, v}); };
  add(kSeen, static_cast<double>(seen_));
  // An empty tree (before exec, after the end) has no size: reporting zeros would make every
  // minimum zero.
  if (processes > 0) {
    add(kProcesses, processes);
    add(kThreads, mem.threads);
    add(kVmSize, mem.vm_size);
    add(kRss, mem.rss);
    if (!smaps_denied_) {
      add(kPss, mem.pss);
      add(kShared, mem.shared);
      add(kAnon, mem.anon);
    }
  }
  add(kUser, inc.user);
  add(kSystem, inc.system);
  add(kMinflt, inc.minflt);
  add(kMajflt, inc.majflt);
  add(kVcsw, own.voluntary);
  add(kIvcsw, own.involuntary);
  if (!io_denied_) {  // partial sums would pass for totals
    add(kReadBytes, inc.read_bytes);
    add(kWriteBytes, inc.write_bytes);
    add(kRchar, inc.rchar);
    add(kWchar, inc.wchar);
  }
}

}  // namespace pm
