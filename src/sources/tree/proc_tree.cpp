// SPDX-License-Identifier: Apache-2.0
#include "sources/tree/proc_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <tuple>

#include "core/text.h"
#include "sources/files/proc_parsers.h"

namespace pm {
namespace {

// "1234 1240 " -> calls f for each pid
template <typename F>
void for_each_pid(std::string_view text, F&& f) {
  for (std::string_view field = next_field(text); !field.empty(); field = next_field(text)) {
    if (auto pid = parse_i64(field)) f(static_cast<int>(*pid));
  }
}

}  // namespace

ProcTree::ProcTree(std::string proc_root)
    : proc_(std::move(proc_root)),
      pss_(proc_),
      tick_seconds_(1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK))),
      page_size_(static_cast<double>(::sysconf(_SC_PAGESIZE))) {}

std::vector<int> ProcTree::pids() {
  std::vector<int> out;
  out.reserve(members_.size());
  for (const auto& [pid, m] : members_) out.push_back(pid);
  return out;
}

std::string ProcTree::denied() const {
  std::string d = io_denied_;
  if (!pss_.denied().empty()) d += (d.empty() ? "" : "; ") + pss_.denied();
  return d;
}

Status ProcTree::listen() {
  auto ev = ProcEvents::open();
  if (!ev) return ev.error();
  events_.emplace(std::move(*ev));
  return {};
}

void ProcTree::on_wake() {
  if (!events_) return;
  events_->drain({[this](int ptgid, int cpid, int ctgid) { on_fork(ptgid, cpid, ctgid); },
                  [this](int pid, int tgid) {
                    if (pid == tgid) on_exit(pid);
                  }});
}

std::optional<TreeSource::Notifications> ProcTree::notifications() const {
  if (!events_) return std::nullopt;
  return Notifications{events_->events(), events_->overruns()};
}

bool ProcTree::join(int pid, int ppid) {
  auto [it, inserted] = members_.try_emplace(pid);
  if (!inserted) return false;
  it->second.pid = pid;
  it->second.ppid = ppid;
  ++seen_;
  return true;
}

bool ProcTree::add_root(int pid) {
  join(pid, 0);
  if (read_member(members_[pid]) != ReadResult::kOk) {
    members_.erase(pid);
    --seen_;
    return false;
  }
  return true;
}

void ProcTree::on_fork(int parent_tgid, int child_pid, int child_tgid) {
  if (child_pid != child_tgid) return;  // a new thread, not a new process
  if (members_.count(parent_tgid) != 0) join(child_tgid, parent_tgid);
}

void ProcTree::on_exit(int pid) {
  auto it = members_.find(pid);
  if (it != members_.end()) read_member(it->second);  // may still be a zombie: final figures
}

void ProcTree::on_reaping(int pid) {
  // Only descendants of the tree are our children besides the root: one we never saw (it was
  // orphaned before any walk found it) still belongs.
  join(pid, 0);
  read_member(members_[pid]);
}

// Its CPU time from the reap, not in clock ticks: a command that ran for less than a tick is not
// 0 s. (Were it never reaped here, the next walk finds it gone and keeps its /proc figures.)
void ProcTree::on_reaped(int pid, const Reaped& usage) {
  auto it = members_.find(pid);
  if (it == members_.end()) return;
  Member& m = it->second;
  m.inc[TaskFig::kUser] = usage.user_s;
  m.inc[TaskFig::kSystem] = usage.system_s;
  m.inc[TaskFig::kMinorFaults] = std::max(m.inc[TaskFig::kMinorFaults], usage.minflt);
  m.inc[TaskFig::kMajorFaults] = std::max(m.inc[TaskFig::kMajorFaults], usage.majflt);
  retire(m, /*absorbed_by_parent=*/false);
  members_.erase(it);
}

bool ProcTree::was_member(int pid, uint64_t started_before) const {
  auto it = ever_.find(pid);
  return it != ever_.end() && it->second <= started_before;
}

void ProcTree::retire(const Member& m, bool absorbed_by_parent) {
  if (!absorbed_by_parent) exited_inc_.add(m.inc);
  exited_own_.add(m.own);
}

Result<std::string_view> ProcTree::read_kept(UniqueFd& fd, const std::string& path) {
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

ProcTree::ReadResult ProcTree::read_member(Member& m) {
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
  ever_[m.pid] = m.starttime;
  m.ppid = st->ppid;
  // A leader that exited while its threads run shows 'Z' too: that process is still alive.
  m.zombie = (st->state == 'Z' || st->state == 'X') && st->num_threads <= 1;
  auto ticks = [&](uint64_t own, int64_t children) {
    return static_cast<double>(own + static_cast<uint64_t>(std::max<int64_t>(children, 0))) * tick_seconds_;
  };
  m.inc[TaskFig::kUser] = ticks(st->utime, st->cutime);
  m.inc[TaskFig::kSystem] = ticks(st->stime, st->cstime);
  m.inc[TaskFig::kMinorFaults] = static_cast<double>(st->minflt + st->cminflt);
  m.inc[TaskFig::kMajorFaults] = static_cast<double>(st->majflt + st->cmajflt);
  m.threads = static_cast<double>(st->num_threads);
  m.vm_size = static_cast<double>(st->vsize);
  m.rss = m.zombie ? 0 : static_cast<double>(std::max<int64_t>(st->rss_pages, 0)) * page_size_;

  auto io_text = read_kept(m.io_fd, base + "io");
  if (!io_text && io_text.error().code == Errc::kPermissionDenied && io_denied_.empty()) {
    io_denied_ = io_text.error().message + ": I/O left out (run as root or with CAP_SYS_PTRACE)";
  }
  if (io_text) {
    if (auto io = procfs::parse_pid_io(*io_text)) {
      m.inc[TaskFig::kRchar] = static_cast<double>(io->rchar);
      m.inc[TaskFig::kWchar] = static_cast<double>(io->wchar);
      m.inc[TaskFig::kReadBytes] = static_cast<double>(io->read_bytes);
      m.inc[TaskFig::kWriteBytes] = static_cast<double>(io->write_bytes);
    }
  }
  read_switches(m, base);
  // 'X' (EXIT_DEAD): its parent is reaping it, and the kernel has already moved (or is moving)
  // its figures into the parent's cutime and I/O while its /proc entry still exists. Counted
  // now, a parent read after that move would hold it twice; it is gone, and retired as such.
  return st->state == 'X' ? ReadResult::kGone : ReadResult::kOk;
}

void ProcTree::read_switches(Member& m, const std::string& base) {
  // Context switches are per thread: one status file when single-threaded, else one per thread.
  TaskFigures own;
  bool memory = false;
  auto add_status = [&](const std::string& path) {
    if (auto text = reader_.read(path)) {
      if (auto status = procfs::parse_pid_status(*text)) {
        own[TaskFig::kVoluntary] += static_cast<double>(status->voluntary_ctxt_switches);
        own[TaskFig::kInvoluntary] += static_cast<double>(status->nonvoluntary_ctxt_switches);
        // The process's memory (any thread's status shows its mm), summed over the per-CPU
        // counters where the kernel sums them (6.16 on), unlike stat's RSS: stat's stands else.
        if (!memory && !m.zombie && status->vm_rss > 0) {
          memory = true;
          m.rss = static_cast<double>(status->vm_rss);
          m.anon = static_cast<double>(status->rss_anon);
        }
      }
    }
  };
  if (m.threads <= 1) {
    add_status(base + "status");
  } else if (auto tids = list_dir(base + "task")) {
    for (const std::string& tid : *tids)
      add_status(base + "task/" + tid + "/status");  // NOLINT(performance-inefficient-string-concatenation)
  }
  // A thread that ended takes its switches with it; a member's count never goes back.
  m.own.at_least(own);
}

void ProcTree::children_of(Member& m, std::vector<int>& out) {
  std::string task = proc_ + "/" + std::to_string(m.pid) + "/task/";
  auto add = [&](const Result<std::string_view>& text) {
    if (text) for_each_pid(*text, [&](int pid) { out.push_back(pid); });
  };
  if (m.threads <= 1) {
    std::string path = task + std::to_string(m.pid) + "/children";
    // An empty children file is normal: read_kept's "empty means gone" does not apply here.
    if (!m.children_fd) m.children_fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    add(m.children_fd ? reader_.reread(m.children_fd.get(), path.c_str()) : reader_.read(path));
  } else if (auto tids = list_dir(task)) {
    for (const std::string& tid : *tids) add(reader_.read(task + tid + "/children"));
  }
}

void ProcTree::collect(Samples& out) {
  on_wake();  // forks not yet read join before the walk
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
  // Start times are clock ticks, and a child often starts in its parent's tick: within one, a
  // parent goes first by its depth in the tree (PIDs do not order them once they wrap).
  std::unordered_map<int, int> depth;
  auto set_depth = [&](int pid) {
    std::vector<int> chain;
    int d = 0;
    for (int p = pid; members_.count(p) != 0 && chain.size() <= members_.size(); p = members_[p].ppid) {
      if (auto it = depth.find(p); it != depth.end()) {
        d = it->second + 1;
        break;
      }
      chain.push_back(p);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) depth[*it] = d++;
  };
  for (int pid : scratch_) set_depth(pid);
  std::sort(scratch_.begin(), scratch_.end(), [&](int a, int b) {
    return std::tuple(start_of(a), depth[a], a) < std::tuple(start_of(b), depth[b], b);
  });
  std::vector<int> gone;
  for (int pid : scratch_) {
    if (read_member(members_[pid]) == ReadResult::kGone) gone.push_back(pid);
  }
  // A gone member whose parent is, or was, a member was reaped by it: that parent's figures hold
  // it, even if the parent is gone too (then the parent's final figures, which we counted, did).
  for (int pid : gone) {
    const Member& m = members_[pid];
    retire(m, was_member(m.ppid, m.starttime));
  }
  for (int pid : gone) members_.erase(pid);

  TaskFigures inc = exited_inc_;
  TaskFigures own = exited_own_;
  TreeFigures f;
  std::vector<PssSampler::Member> live;
  double anon = 0;
  for (const auto& [pid, m] : members_) {
    inc.add(m.inc);
    own.add(m.own);
    if (m.zombie) continue;
    f.processes += 1;
    f.threads += m.threads;
    f.vm_size += m.vm_size;
    f.rss += m.rss;
    anon += m.anon;
    live.push_back({pid, m.rss, m.vm_size});
  }
  // The tree's: the members' inclusive figures and their own switches.
  TaskFigures c = inc;
  c[TaskFig::kVoluntary] = own[TaskFig::kVoluntary];
  c[TaskFig::kInvoluntary] = own[TaskFig::kInvoluntary];
  reported_.at_least(c);
  f.counters = reported_;
  f.io_known = io_denied_.empty();
  f.processes_seen = static_cast<double>(seen_);
  pss_.update(live, PssSampler::Clock::now());
  f.pss = pss_.pss();
  f.shared = pss_.shared();
  f.pss_max_lower_bound = pss_.max_lower_bound();
  if (f.processes > 0) f.anon = anon;
  append_tree_samples(f, out);
}

}  // namespace pm
