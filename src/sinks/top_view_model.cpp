// SPDX-License-Identifier: Apache-2.0
#include "sinks/top_view_model.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>

#include <fmt/format.h>

namespace pm {
namespace {

std::string_view label(const IntervalValue& v, std::string_view key) {
  for (const auto& [k, val] : *v.labels) {
    if (k == key) return val;
  }
  return {};
}

// "12.3%", or n/a.
std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", *v) : "n/a"; }
std::string bytes(const std::optional<double>& v) { return v ? short_bytes(*v) : "n/a"; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string fit(std::string s, int width) {
  auto w = static_cast<size_t>(std::max(width, 0));
  if (s.size() > w) s.resize(w);
  return s + std::string(w - s.size(), ' ');
}

// Lines of at most `width` characters, broken at spaces; continuation lines indented.
std::vector<std::string> wrap(const std::string& text, int width, size_t indent = 2) {
  std::vector<std::string> out;
  auto w = static_cast<size_t>(std::max(width, static_cast<int>(indent) + 10));
  std::string rest = text;
  while (rest.size() > w) {
    size_t cut = rest.rfind(' ', w);
    if (cut == std::string::npos || cut <= indent) cut = w;
    out.push_back(rest.substr(0, cut));
    rest = std::string(indent, ' ') + rest.substr(rest[cut] == ' ' ? cut + 1 : cut);
  }
  out.push_back(rest);
  return out;
}

const char* list_name(TopList l) {
  switch (l) {
    case TopList::kProcesses:
      return "processes";
    case TopList::kCgroups:
      return "cgroups";
    case TopList::kThreads:
      return "threads";
  }
  return "processes";
}

// At most 22 lines of at most 80 characters: the whole of it on an 80x24 terminal, with the
// title above and the footer below.
const std::vector<std::string> kHelp = {
    "Sort (largest first)  P CPU   R run-queue wait   B blocked   I I/O",
    "                      F page faults   M memory (RSS)",
    "Lists                 p processes  g cgroups  H threads  t tree (children",
    "                      under their parents)   c command line or name",
    "Expand                Enter (e, Right): a cgroup's processes, a process's",
    "                      threads; Left, Backspace: back",
    "Filter                / then part of a name or a PID, Enter; Esc clears it",
    "Act on the selected   k send a signal (asks which, then y/n)  r renice",
    "                      (asks the value); one's own processes unless root",
    "Move                  Up Down  PgUp PgDn  Home End",
    "Pause                 space (keys still work on the paused interval)",
    "Quit                  q, Ctrl-C",
    "Shares of the interval, 100 = one CPU: CPU% USR% SYS% running, RUNQ%",
    "waiting for a CPU, BLK% blocked. A thread's stay within 100; a process",
    "sums its threads, a cgroup its processes: up to 100 x CPUs. READ/s WRITE/s",
    "storage I/O, FLT/s faults, CSW/s switches; RSS now. S: R run(nable), S",
    "sleep, D disk, Z zombie, T stopped, I idle, X ended in the interval; k a",
    "kernel thread. Cgroups: + counts its descendants, CGCPU% cpu.stat, PSCPU%",
    "PSIO% PSMEM% pressure (avg10), RQP99 run-queue wait p99. n/a: not here.",
};

// A signal by name (TERM, SIGTERM, term) or number; 0 when not one.
int signal_of(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.rfind("SIG", 0) == 0) s.erase(0, 3);
  if (s.empty()) return SIGTERM;
  if (s.find_first_not_of("0123456789") == std::string::npos) {
    int n = s.size() <= 2 ? std::stoi(s) : 0;
    return n >= 1 && n <= SIGRTMAX ? n : 0;
  }
  static const std::map<std::string, int> kNames = {
      {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"TERM", SIGTERM},
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}, {"TSTP", SIGTSTP},
      {"ALRM", SIGALRM}, {"PIPE", SIGPIPE}, {"WINCH", SIGWINCH}};
  auto it = kNames.find(s);
  return it != kNames.end() ? it->second : 0;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : std::to_string(sig);
}

// Children under their parents, each level's siblings in the rows' order (the sort key), as ps f
// draws them.
std::vector<TopRow> as_tree(std::vector<TopRow> rows) {
  std::map<int, size_t> at;
  for (size_t i = 0; i < rows.size(); ++i) at[rows[i].process->pid] = i;
  std::vector<std::vector<size_t>> children(rows.size());
  std::vector<size_t> roots;
  for (size_t i = 0; i < rows.size(); ++i) {
    int ppid = rows[i].process->ppid;
    auto parent = ppid != rows[i].process->pid ? at.find(ppid) : at.end();
    if (parent == at.end()) {
      roots.push_back(i);
    } else {
      children[parent->second].push_back(i);
    }
  }
  std::vector<TopRow> out;
  out.reserve(rows.size());
  std::vector<bool> placed(rows.size(), false);
  // Depth-first without recursion: (row, depth), the next sibling below its elder's children.
  std::vector<std::pair<size_t, int>> stack;
  auto push_all = [&](const std::vector<size_t>& list, int depth) {
    for (auto it = list.rbegin(); it != list.rend(); ++it) stack.emplace_back(*it, depth);
  };
  push_all(roots, 0);
  while (!stack.empty() || out.size() < rows.size()) {
    if (stack.empty()) {  // a cycle of parents (a PID reused as its own ancestor's parent): roots too
      for (size_t i = 0; i < rows.size(); ++i) {
        if (!placed[i]) {
          stack.emplace_back(i, 0);
          break;
        }
      }
    }
    auto [i, depth] = stack.back();
    stack.pop_back();
    if (placed[i]) continue;
    placed[i] = true;
    TopRow r = rows[i];
    if (depth > 0) r.tree = std::string(static_cast<size_t>(4 * std::min(depth - 1, 20) + 1), ' ') + "\\_ ";
    out.push_back(std::move(r));
    push_all(children[i], depth + 1);
  }
  return out;
}

}  // namespace

SystemFigures system_figures(const IntervalRecord& rec) {
  SystemFigures s;
  s.timestamp = rec.timestamp;
  s.seconds = rec.seconds;
  using F = SystemFigure;
  for (const IntervalValue& v : rec.values) {
    // The figures the header shows, found by their mark (core/metric.h), never by name.
    switch (F f = v.desc->system) {
      case F::kNone:
        break;
      case F::kCpuUtilisation:
        if (label(v, "cpu") != "all") break;
        for (size_t m = 0; m < SystemFigures::kCpuModes.size(); ++m) {
          if (label(v, "mode") == SystemFigures::kCpuModes[m]) s.cpu_pct[m] = v.value;
        }
        break;
      case F::kPressureStall:
        for (size_t r = 0; r < SystemFigures::kPsiResources.size(); ++r) {
          if (label(v, "resource") != SystemFigures::kPsiResources[r]) continue;
          std::string_view kind = label(v, "kind");
          if (kind == "some") s.psi[r][0] = std::clamp(100 * v.rate, 0.0, 100.0);  // a share of the interval
          if (kind == "full") s.psi[r][1] = std::clamp(100 * v.rate, 0.0, 100.0);
        }
        break;
      default:
        for (auto [mark, field] :
             {std::pair{F::kMemUsed, &s.mem_used}, std::pair{F::kMemTotal, &s.mem_total},
              std::pair{F::kMemAvailable, &s.mem_available}, std::pair{F::kMemCached, &s.mem_cached},
              std::pair{F::kSwapTotal, &s.swap_total}, std::pair{F::kSwapFree, &s.swap_free},
              std::pair{F::kLoad1, &s.load1}, std::pair{F::kLoad5, &s.load5}, std::pair{F::kLoad15, &s.load15},
              std::pair{F::kProcsRunning, &s.running}, std::pair{F::kProcsBlocked, &s.blocked}}) {
          if (f == mark && v.labels->empty()) *field = v.value;
        }
    }
  }
  return s;
}

void TopViewModel::update(std::shared_ptr<const TopRecord> top, const SystemFigures& sys) {
  latest_ = std::move(top);
  sys_latest_ = sys;
  if (!paused_ || !have_system_) {
    shown_ = latest_;
    sys_shown_ = sys;
    have_system_ = true;
  }
}

std::vector<TopRow> TopViewModel::rows() const {
  std::vector<TopRow> out;
  if (!shown_) return out;
  std::string want = lower(filter_);
  auto matches = [&](const std::string& name, int pid) {
    if (want.empty()) return true;
    return lower(name).find(want) != std::string::npos || std::to_string(pid) == want;
  };
  if (list_ == TopList::kCgroups) {
    for (const TopCgroup& c : shown_->cgroups) {
      if (matches(c.path, -1)) out.push_back({nullptr, &c});
    }
  } else {
    const auto& from = list_ == TopList::kThreads ? shown_->threads : shown_->processes;
    for (const TopProcess& p : from) {
      if (!in_cgroup_.empty() && p.cgroup != in_cgroup_) continue;
      if (of_pid_ != 0 && p.pid != of_pid_) continue;
      if (matches(p.comm, list_ == TopList::kThreads ? p.tid : p.pid)) out.push_back({&p, nullptr});
    }
  }
  TopSort sort = sort_;
  auto key = [sort](const TopRow& r) {
    const TopFigures& f = r.process != nullptr ? r.process->f : r.cgroup->f;
    return f.key(sort);
  };
  std::sort(out.begin(), out.end(), [&](const TopRow& a, const TopRow& b) {
    double ka = key(a), kb = key(b);
    if (ka != kb) return ka > kb;
    // Ties (idle processes) in a stable order, so rows do not jump between refreshes.
    if (a.process != nullptr)
      return std::pair(a.process->pid, a.process->tid) < std::pair(b.process->pid, b.process->tid);
    return a.cgroup->path < b.cgroup->path;
  });
  if (tree_ && list_ == TopList::kProcesses) return as_tree(std::move(out));
  return out;
}

std::string TopViewModel::key_of(const TopRow& r) {
  if (r.cgroup != nullptr) return "c" + r.cgroup->path;
  return fmt::format("p{}/{}", r.process->pid, r.process->tid);
}

void TopViewModel::show_list(TopList list) {
  list_ = list;
  in_cgroup_.clear();
  of_pid_ = 0;
  follow_top_ = true;
  selected_ = scroll_ = 0;
}

void TopViewModel::expand(const std::vector<TopRow>& rows) {
  if (selected_ < 0 || selected_ >= static_cast<int>(rows.size())) return;
  const TopRow& r = rows[static_cast<size_t>(selected_)];
  if (r.cgroup != nullptr) {
    cgroup_row_ = key_of(r);
    std::string path = r.cgroup->path;
    show_list(TopList::kProcesses);
    in_cgroup_ = std::move(path);
  } else if (list_ == TopList::kProcesses) {
    int pid = r.process->pid;
    std::string cgroup = in_cgroup_;
    show_list(TopList::kThreads);
    of_pid_ = pid;
    threads_from_cgroup_ = cgroup;  // back to the cgroup's processes, if that is where it came from
  } else {
    return;
  }
  filter_.clear();
}

// Back from an expanded list to the one it came from; false when not expanded.
bool TopViewModel::collapse() {
  if (of_pid_ != 0) {
    std::string cgroup = threads_from_cgroup_;
    std::string back = fmt::format("p{}/0", of_pid_);
    show_list(TopList::kProcesses);
    in_cgroup_ = cgroup;
    follow_top_ = false;
    selected_key_ = back;
    return true;
  }
  if (!in_cgroup_.empty()) {
    show_list(TopList::kCgroups);
    follow_top_ = false;
    selected_key_ = cgroup_row_;
    return true;
  }
  return false;
}

void TopViewModel::move_selection(int to, const std::vector<TopRow>& rows) {
  int n = static_cast<int>(rows.size());
  selected_ = std::clamp(to, 0, std::max(n - 1, 0));
  follow_top_ = false;
  if (selected_ < n) selected_key_ = key_of(rows[static_cast<size_t>(selected_)]);
}

TopViewModel::Action TopViewModel::key(const ViewKey& k) {
  Action a = act(k);
  settle(rows());
  return a;
}

// The selection: the top row, or the same row as before wherever it went, else the same place.
void TopViewModel::settle(const std::vector<TopRow>& all) {
  if (follow_top_) {
    selected_ = 0;
    return;
  }
  auto it = std::find_if(all.begin(), all.end(), [&](const TopRow& r) { return key_of(r) == selected_key_; });
  if (it != all.end()) selected_ = static_cast<int>(it - all.begin());
  selected_ = std::clamp(selected_, 0, std::max(static_cast<int>(all.size()) - 1, 0));
  if (!all.empty()) selected_key_ = key_of(all[static_cast<size_t>(selected_)]);
}

TopViewModel::Action TopViewModel::act(const ViewKey& k) {
  if (prompt_ != Prompt::kNone) return answer(k);
  status_.clear();
  if (editing_) {
    switch (k.kind) {
      case ViewKey::kEnter:
        editing_ = false;
        break;
      case ViewKey::kEscape:
        editing_ = false;
        filter_.clear();
        break;
      case ViewKey::kBackspace:
        if (!filter_.empty()) filter_.pop_back();
        break;
      case ViewKey::kChar:
        if (k.ch >= 0x20 && k.ch < 0x7f && filter_.size() < 64) filter_ += static_cast<char>(k.ch);
        break;
      default:
        return Action::kNone;
    }
    follow_top_ = true;
    selected_ = scroll_ = 0;
    return Action::kRedraw;
  }
  if (k.kind == ViewKey::kChar && (k.ch == 'q' || k.ch == 'Q' || k.ch == 3)) return Action::kQuit;
  if (help_) {
    help_ = false;
    return Action::kRedraw;
  }
  std::vector<TopRow> now = rows();
  settle(now);
  switch (k.kind) {
    case ViewKey::kUp:
      move_selection(selected_ - 1, now);
      return Action::kRedraw;
    case ViewKey::kDown:
      move_selection(selected_ + 1, now);
      return Action::kRedraw;
    case ViewKey::kPageUp:
      move_selection(selected_ - page_, now);
      return Action::kRedraw;
    case ViewKey::kPageDown:
      move_selection(selected_ + page_, now);
      return Action::kRedraw;
    case ViewKey::kHome:
      move_selection(0, now);
      follow_top_ = true;
      return Action::kRedraw;
    case ViewKey::kEnd:
      move_selection(static_cast<int>(now.size()) - 1, now);
      return Action::kRedraw;
    case ViewKey::kEnter:
    case ViewKey::kRight:
      expand(now);
      return Action::kRedraw;
    case ViewKey::kLeft:
    case ViewKey::kBackspace:
      return collapse() ? Action::kRedraw : Action::kNone;
    case ViewKey::kEscape:
      if (!filter_.empty()) {
        filter_.clear();
        return Action::kRedraw;
      }
      return collapse() ? Action::kRedraw : Action::kNone;
    case ViewKey::kChar:
      break;
  }
  switch (k.ch) {
    case 'P':
      sort_ = TopSort::kCpu;
      break;
    case 'R':
      sort_ = TopSort::kRunq;
      break;
    case 'B':
      sort_ = TopSort::kBlocked;
      break;
    case 'I':
      sort_ = TopSort::kIo;
      break;
    case 'F':
      sort_ = TopSort::kFaults;
      break;
    case 'M':
      sort_ = TopSort::kMemory;
      break;
    case 'p':
      show_list(TopList::kProcesses);
      break;
    case 'g':
      show_list(TopList::kCgroups);
      break;
    case 'H':
      show_list(TopList::kThreads);
      break;
    case 't':
      // The processes under their parents (or sorted again); from another list, its processes.
      tree_ = list_ != TopList::kProcesses || !tree_;
      if (list_ != TopList::kProcesses) show_list(TopList::kProcesses);
      break;
    case 'c':
      command_ = !command_;
      break;
    case 'k':
      ask(Prompt::kSignal, now);
      break;
    case 'r':
      ask(Prompt::kNice, now);
      break;
    case 'e':
      expand(now);
      break;
    case '/':
      editing_ = true;
      break;
    case ' ':
      paused_ = !paused_;
      if (!paused_) update(latest_, sys_latest_);
      break;
    case 'h':
    case '?':
      help_ = true;
      break;
    default:
      return Action::kNone;
  }
  return Action::kRedraw;
}

// k or r on the selected row: asked only where the answer can be acted on.
void TopViewModel::ask(Prompt p, const std::vector<TopRow>& rows) {
  const char* what = p == Prompt::kSignal ? "k (signal)" : "r (renice)";
  if (selected_ < 0 || selected_ >= static_cast<int>(rows.size()) || rows[static_cast<size_t>(selected_)].process == nullptr) {
    status_ = std::string(what) + ": select a process first (p: the processes)";
    return;
  }
  const TopProcess& proc = *rows[static_cast<size_t>(selected_)].process;
  if (proc.exited) {
    status_ = fmt::format("{}: process {} has ended", what, proc.pid);
    return;
  }
  uid_t me = ::geteuid();
  if (me != 0 && proc.uid && *proc.uid != me) {
    status_ = fmt::format("{}: process {} is {}'s; only root may act on others' processes", what, proc.pid,
                          proc.user.empty() ? std::to_string(*proc.uid) : printable(proc.user));
    return;
  }
  target_pid_ = proc.pid;
  target_tid_ = proc.tid != 0 ? proc.tid : proc.pid;
  target_name_ = printable(proc.comm);
  target_nice_ = proc.nice;
  // The process as it is now: a PID reused before the answer is a pidfd of the gone process.
  target_fd_ = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, proc.pid, 0)));
  input_.clear();
  prompt_ = p;
}

TopViewModel::Action TopViewModel::answer(const ViewKey& k) {
  if (k.kind == ViewKey::kEscape || (k.kind == ViewKey::kChar && k.ch == 3)) {
    status_ = prompt_ == Prompt::kNice ? "not reniced" : "no signal sent";
    prompt_ = Prompt::kNone;
    target_fd_ = UniqueFd();
    return Action::kRedraw;
  }
  if (prompt_ == Prompt::kConfirm) {
    bool yes = k.kind == ViewKey::kChar && (k.ch == 'y' || k.ch == 'Y');
    prompt_ = Prompt::kNone;
    if (yes) {
      send_signal();
    } else {
      status_ = "no signal sent";
    }
    target_fd_ = UniqueFd();
    return Action::kRedraw;
  }
  if (k.kind == ViewKey::kBackspace) {
    if (!input_.empty()) input_.pop_back();
  } else if (k.kind == ViewKey::kEnter) {
    if (prompt_ == Prompt::kSignal) {
      signal_ = signal_of(input_);
      if (signal_ == 0) {
        status_ = "not a signal: " + input_ + " (a name as TERM, KILL, HUP, or a number)";
        prompt_ = Prompt::kNone;
        target_fd_ = UniqueFd();
      } else {
        prompt_ = Prompt::kConfirm;
      }
    } else {
      prompt_ = Prompt::kNone;
      renice();
      target_fd_ = UniqueFd();
    }
  } else if (k.kind == ViewKey::kChar && k.ch > 0x20 && k.ch < 0x7f && input_.size() < 12) {
    input_ += static_cast<char>(k.ch);
  }
  return Action::kRedraw;
}

void TopViewModel::send_signal() {
  std::string who = fmt::format("{} ({})", target_pid_, target_name_);
  int rc = target_fd_ ? static_cast<int>(::syscall(SYS_pidfd_send_signal, target_fd_.get(), signal_, nullptr, 0))
                      : ::kill(target_pid_, signal_);
  if (rc == 0) {
    status_ = fmt::format("sent {} to {}", signal_name(signal_), who);
  } else if (errno == ESRCH) {
    status_ = fmt::format("{}: {} has ended", signal_name(signal_), who);
  } else {
    status_ = fmt::format("kill {} {}: {}", signal_name(signal_), who, std::strerror(errno));
  }
}

void TopViewModel::renice() {
  std::string who = fmt::format("{} ({})", target_tid_, target_name_);
  std::string text = input_;
  auto value = parse_i64(text);
  if (!value || *value < -20 || *value > 19) {
    status_ = "not a nice value: " + text + " (-20 to 19)";
    return;
  }
  // Still the process that was asked about (its pidfd says whether it lives).
  if (target_fd_ && ::syscall(SYS_pidfd_send_signal, target_fd_.get(), 0, nullptr, 0) != 0 && errno == ESRCH) {
    status_ = fmt::format("renice: {} has ended", who);
    return;
  }
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(target_tid_), static_cast<int>(*value)) == 0) {
    status_ = fmt::format("{}: nice {}", who, *value);
  } else {
    int e = errno;
    status_ = fmt::format("renice {} {}: {}{}", who, *value, std::strerror(e),
                          e == EACCES || e == EPERM ? " (only root may lower a nice value or renice others')" : "");
  }
}

std::string TopViewModel::prompt_text() const {
  switch (prompt_) {
    case Prompt::kSignal:
      return fmt::format("Signal for {} ({}) [TERM; Esc: none]: {}_", target_pid_, target_name_, input_);
    case Prompt::kConfirm:
      return fmt::format("Send {} to {} ({})? y/n", signal_name(signal_), target_pid_, target_name_);
    case Prompt::kNice:
      return fmt::format("Nice value for {} ({}), now {}, -20 to 19 [Esc: none]: {}_", target_tid_, target_name_,
                         target_nice_ ? std::to_string(*target_nice_) : "n/a", input_);
    case Prompt::kNone:
      break;
  }
  return "";
}

std::vector<std::string> TopViewModel::system_lines(int width) const {
  const SystemFigures& s = sys_shown_;
  auto num = [](const std::optional<double>& v, const char* f) {
    return v ? fmt::format(fmt::runtime(f), *v) : std::string("n/a");
  };
  // Items in order of importance, as many as the width takes.
  auto line = [width](std::string head, const std::vector<std::string>& items) {
    for (const std::string& i : items) {
      if (static_cast<int>(head.size() + 2 + i.size()) > width) break;
      head += "  " + i;
    }
    return head;
  };
  std::vector<std::string> out;
  // Busy: neither idle nor waiting for I/O, as the text output counts it.
  const auto& idle = s.cpu_pct[7];
  const auto& iowait = s.cpu_pct[3];
  std::vector<std::string> modes;
  for (size_t m : {0, 1, 3, 6, 2, 4, 5})
    modes.push_back(fmt::format("{} {}", SystemFigures::kCpuModes[m], pct(s.cpu_pct[m])));
  out.push_back(
      line("CPU  busy " + (idle ? pct(std::max(0.0, 100 - *idle - iowait.value_or(0))) : std::string("n/a")), modes));
  std::string swap = s.swap_total && s.swap_free
                         ? short_bytes(*s.swap_total - *s.swap_free) + " of " + short_bytes(*s.swap_total)
                         : "n/a";
  out.push_back(line("MEM  used " + bytes(s.mem_used) + " of " + bytes(s.mem_total),
                     {"available " + bytes(s.mem_available), "cached " + bytes(s.mem_cached), "swap used " + swap}));
  out.push_back(
      line(fmt::format("LOAD {} {} {}", num(s.load1, "{:.2f}"), num(s.load5, "{:.2f}"), num(s.load15, "{:.2f}")),
           {"running " + num(s.running, "{:.0f}"), "blocked " + num(s.blocked, "{:.0f}")}));
  std::vector<std::string> psi;
  for (size_t r = 0; r < SystemFigures::kPsiResources.size(); ++r) {
    psi.push_back(fmt::format("{} {}/{}", SystemFigures::kPsiResources[r], pct(s.psi[r][0]), pct(s.psi[r][1])));
  }
  psi.emplace_back("(some/full of the time)");
  out.push_back(line("PSI", psi));
  return out;
}

std::string TopViewModel::caption(size_t rows) const {
  std::string s = list_name(list_);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!in_cgroup_.empty()) s += " in cgroup " + printable(in_cgroup_);
  if (of_pid_ != 0) {
    s += fmt::format(" of process {}", of_pid_);
    if (shown_) {
      for (const TopProcess& p : shown_->processes) {
        if (p.pid == of_pid_) s += " (" + printable(p.comm) + ")";
      }
    }
  }
  s += fmt::format(" ({}) by {}", rows, to_string(sort_));
  if (tree_ && list_ == TopList::kProcesses) s += ", as a tree";
  if (!filter_.empty() || editing_) s += "  filter: " + filter_;
  if (!in_cgroup_.empty() || of_pid_ != 0) s += "  (Left: back)";
  return s;
}

std::vector<ScreenLine> TopViewModel::screen(int width, int height) {
  std::vector<ScreenLine> out;
  auto add = [&](std::string text, ScreenLine::Style style = ScreenLine::kPlain) {
    if (static_cast<int>(out.size()) < height) out.push_back({fit(std::move(text), width), style});
  };
  // Title: when, how often, the state; the keys that matter most on the right.
  std::string title = " perf-monitor top";
  if (have_system_) {
    std::time_t t = WallClock::to_time_t(sys_shown_.timestamp);
    std::tm tm{};
    ::localtime_r(&t, &tm);
    title +=
        fmt::format("  {:02}:{:02}:{:02}  interval {:.2f} s", tm.tm_hour, tm.tm_min, tm.tm_sec, sys_shown_.seconds);
  }
  if (paused_) title += "  PAUSED (space: resume)";
  std::string right = "h: help  q: quit ";
  if (static_cast<int>(title.size() + right.size()) < width) {
    title += std::string(static_cast<size_t>(width) - title.size() - right.size(), ' ') + right;
  }
  add(title, ScreenLine::kTitle);
  if (help_) {
    // The whole screen but the title and footer: on 80x24 all of it shows, then the notes.
    for (const std::string& l : kHelp) add(l);
    if (shown_ && !shown_->note.empty()) {
      for (std::string& l : wrap("Here: " + printable(shown_->note), width)) add(std::move(l));
    }
    for (const std::string& n : notes_) {
      for (std::string& l : wrap(n, width)) add(std::move(l));
    }
    while (static_cast<int>(out.size()) < height - 1) add("");
    add("Any key: back to the lists", ScreenLine::kFooter);
    return out;
  }
  if (have_system_) {
    for (std::string& l : system_lines(width)) add(std::move(l));
  } else {
    add("CPU  collecting the first interval...");
    for (int i = 0; i < 3; ++i) add("");
  }
  std::vector<TopRow> all = rows();
  settle(all);
  add(caption(all.size()), ScreenLine::kCaption);
  // What the lists cannot show here (from /proc without root), one line.
  if (shown_ && !shown_->note.empty()) add(printable(shown_->note));
  int body = std::max(height - static_cast<int>(out.size()) - 2, 0);  // header and footer apart
  page_ = std::max(body - 1, 1);
  {
    auto cols = fit_top_columns(list_, width, sort_, command_ && list_ != TopList::kCgroups);
    add(top_header(cols, width), ScreenLine::kHeader);
    if (selected_ < scroll_) scroll_ = selected_;
    if (selected_ >= scroll_ + body) scroll_ = selected_ - body + 1;
    scroll_ = std::clamp(scroll_, 0, std::max(static_cast<int>(all.size()) - body, 0));
    double seconds = shown_ ? shown_->seconds : 0;
    for (int i = scroll_; i < static_cast<int>(all.size()) && i < scroll_ + body; ++i) {
      add(top_line(cols, all[static_cast<size_t>(i)], seconds, width),
          i == selected_ ? ScreenLine::kSelected : ScreenLine::kPlain);
    }
    if (all.empty() && !no_lists_.empty()) {
      for (std::string& l : wrap("  the lists are not available here: " + no_lists_, width, 4)) add(std::move(l));
    } else if (all.empty()) {
      add(shown_ ? (filter_.empty() ? "  (none)" : "  (none matches the filter)") : "  collecting...");
    }
  }
  while (static_cast<int>(out.size()) < height - 1) add("");
  // Footer: the filter being typed, else news (a message perf-monitor printed), else the keys.
  std::string footer;
  if (prompt_ != Prompt::kNone) {
    footer = prompt_text();
  } else if (editing_) {
    footer = "filter (Enter: keep, Esc: clear): " + filter_ + "_";
  } else if (!status_.empty()) {
    footer = status_;
  } else if (!flash_.empty()) {
    footer = flash_;
  } else {
    footer = "sort P R B I F M  list p g H t  c cmd  k kill  r nice  / filter  h help  q quit";
    if (!notes_.empty()) footer = fmt::format("{} notes (h)  ", notes_.size()) + footer;
  }
  add(footer, ScreenLine::kFooter);
  return out;
}

}  // namespace pm
