// SPDX-License-Identifier: Apache-2.0
#include "session/target.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/cgroup.h"
#include "core/file_reader.h"
#include "core/output.h"
#include "session/run_cgroup.h"
#include "sources/files/descendants.h"
#include "sources/tree/tree_source.h"

extern char** environ;

namespace pm {
namespace {

// What perf-monitor changed for itself, given back to the command: its signal mask (the session
// blocks the signals it reads) and its open-files limit (raised for large trees).
sigset_t original_mask;
bool mask_saved = false;
rlimit original_nofile{};
// The session signals perf-monitor inherited as ignored (SIG_IGN): nohup's SIGHUP, a script's
// background job's SIGINT and SIGQUIT.
sigset_t ignored_at_start;

// Whether pid ignores sig now (SigIgn in its /proc status).
bool ignores(int pid, int sig) {
  FileReader reader;
  auto status = reader.read("/proc/" + std::to_string(pid) + "/status");
  if (!status) return false;
  std::string_view text = *status;
  size_t at = text.find("\nSigIgn:");
  if (at == std::string_view::npos) return false;
  uint64_t mask = std::strtoull(std::string(text.substr(at + 9, 24)).c_str(), nullptr, 16);
  return ((mask >> (sig - 1)) & 1U) != 0;
}

// The candidates exec tries for argv[0], as execvp would: the name itself when it has a '/',
// else each PATH entry (an empty one is the current directory).
std::vector<std::string> exec_candidates(const std::string& file) {
  if (file.find('/') != std::string::npos) return {file};
  const char* env = std::getenv("PATH");
  std::string path = env != nullptr ? env : "/usr/local/bin:/bin:/usr/bin";
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    out.push_back((dir.empty() ? "." : dir) + "/" + file);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

Result<UniqueFd> open_pidfd(int pid) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return Error::from_errno(errno, "pidfd_open");
  return UniqueFd(fd);
}

}  // namespace

const std::vector<int>& session_signals() {
  static const std::vector<int> signals = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGCHLD,
                                           SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH};
  return signals;
}

void block_session_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : session_signals()) sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, &original_mask);
  mask_saved = true;
  // Blocked, an ignored signal still waits to be read: whether it was ignored is kept here.
  sigemptyset(&ignored_at_start);
  for (int s : session_signals()) {
    struct sigaction old {};
    if (::sigaction(s, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) sigaddset(&ignored_at_start, s);
  }
  ::getrlimit(RLIMIT_NOFILE, &original_nofile);
  // A closed output pipe must be an error perf-monitor reports (EPIPE), not its silent death.
  ::signal(SIGPIPE, SIG_IGN);
  // An inherited SIG_IGN would make the kernel reap our children before we can read them.
  ::signal(SIGCHLD, SIG_DFL);
}

bool ignored_when_started(int sig) { return sigismember(&ignored_at_start, sig) == 1; }

void unblock_session_signals() {
  if (mask_saved) ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
}

// The command of `run`: forked and held before exec until the session has registered it; then
// released. A close-on-exec pipe tells whether exec worked (EOF) or why not (an errno).
struct Target::Run {
  int pid = 0;
  UniqueFd go, err;
  std::optional<RunCgroup> cgroup;
};

Target::Target(TargetSpec spec) : spec_(std::move(spec)) {}

Target::~Target() {
  if (run_ && run_->go) {
    // Never released (the session failed to start): it has run nothing of its own.
    ::kill(run_->pid, SIGKILL);
    ::waitpid(run_->pid, nullptr, 0);
  }
  if (run_ && run_->cgroup) {
    run_->cgroup->dissolve();
    run_->cgroup->release();
  }
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kRun:
      return "run";
    case Mode::kAttach:
      return "attach";
    case Mode::kCgroup:
      return "cgroup";
    case Mode::kSystem:
      break;
  }
  return "system";
}

namespace {

// The processes of a cgroup and of every cgroup below it.
void cgroup_processes(const std::string& dir, std::vector<int>& out) {
  std::ifstream in(dir + "/cgroup.procs");
  int pid = 0;
  while (in >> pid) out.push_back(pid);
  if (auto subdirs = list_dir(dir)) {
    for (const std::string& name : *subdirs) {
      struct stat st {};
      std::string sub = dir + "/" + name;
      if (::stat(sub.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) cgroup_processes(sub, out);
    }
  }
}

}  // namespace

Result<std::unique_ptr<Target>> Target::create(const TargetSpec& spec) {
  std::unique_ptr<Target> t(new Target(spec));
  if (spec.mode == Mode::kCgroup) {
    std::string mount = unified_mount();
    if (mount.empty()) return make_error(Errc::kUnavailable, "--cgroup: no cgroup v2 (unified) hierarchy is mounted");
    std::string dir = spec.cgroup.rfind(mount, 0) == 0 ? spec.cgroup : mount + (spec.cgroup.starts_with('/') ? "" : "/") + spec.cgroup;
    while (dir.size() > mount.size() && dir.back() == '/') dir.pop_back();
    t->cgroup_id_ = pm::cgroup_id(dir);
    if (t->cgroup_id_ == 0 || ::access((dir + "/cgroup.procs").c_str(), R_OK) != 0) {
      return make_error(Errc::kNotFound, "--cgroup " + spec.cgroup + ": no such cgroup under " + mount +
                                             " (see its directories, or /proc/PID/cgroup's 0:: line)");
    }
    t->cgroup_dir_ = dir;
    cgroup_processes(dir, t->roots_);
    return t;
  }
  if (spec.mode == Mode::kAttach) {
    auto pidfd = open_pidfd(spec.pid);
    std::vector<int> found = pidfd ? process_and_descendants(spec.pid) : std::vector<int>{};
    if (found.empty()) {
      return make_error(Errc::kNotFound,
                        "no process with PID " + std::to_string(spec.pid) + ": check the PID (ps -e) and try again");
    }
    t->roots_ = std::move(found);
    t->root_ = spec.pid;
    t->pidfd_ = std::move(*pidfd);
    return t;
  }
  if (spec.mode == Mode::kSystem) return t;

  if (spec.command.empty()) return make_error(Errc::kInvalidArgument, "no command given");
  t->run_ = std::make_unique<Run>();
  Run& r = *t->run_;
  // The cgroup and its watchdog first: the watchdog must not become our child (a subreaper's).
  if (auto cg = RunCgroup::create(); cg) {
    r.cgroup.emplace(std::move(*cg));
    if (auto st = r.cgroup->watch(); !st) {
      r.cgroup->dissolve();
      r.cgroup.reset();
      t->note_ = "if perf-monitor is killed, the command's descendants keep running (no watchdog: " +
                 st.error().message + ")";
    }
  } else {
    t->note_ = "if perf-monitor is killed, the command's descendants keep running (" + cg.error().message + ")";
  }
  // Orphaned descendants are reparented to us: we reap them, and the tree keeps them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return Error::from_errno(errno, "pipe");
  UniqueFd go_r(go[0]), go_w(go[1]), err_r(err[0]), err_w(err[1]);
  // Everything the child needs is built before fork: it only calls async-signal-safe functions.
  std::vector<char*> args;
  for (const auto& a : spec.command) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> candidates = exec_candidates(spec.command[0]);
  // Until its exec the child goes by the name the kernel gives it at exec (the file's base name,
  // 15 bytes), not perf-monitor's: its first moments, in the profiles and lists, are the command's.
  std::string comm = spec.command[0].substr(spec.command[0].rfind('/') + 1).substr(0, 15);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Error::from_errno(errno, "fork");
  if (pid == 0) {
    if (!comm.empty()) ::prctl(PR_SET_NAME, comm.c_str());
    ::close(go_w.get());
    ::close(err_r.get());
    // If perf-monitor dies, so does the command (the watchdog ends its descendants).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    char byte = 0;
    ssize_t n;
    do {
      n = ::read(go_r.get(), &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(127);  // the monitor gave up before releasing us
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &dfl, nullptr);
    ::setrlimit(RLIMIT_NOFILE, &original_nofile);
    ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    // execvp's search without its fallback: a file the kernel cannot execute is an error, never
    // a shell script.
    int e = ENOENT;
    bool denied = false;
    for (const std::string& c : candidates) {
      ::execve(c.c_str(), args.data(), environ);
      if (errno == EACCES) {
        denied = true;
      } else if (errno != ENOENT && errno != ENOTDIR) {
        e = errno;
        break;
      }
    }
    if (e == ENOENT && denied) e = EACCES;
    [[maybe_unused]] ssize_t w = ::write(err_w.get(), &e, sizeof e);
    ::_exit(127);
  }
  r.pid = pid;
  r.go = std::move(go_w);
  r.err = std::move(err_r);
  t->root_ = pid;
  t->roots_ = {pid};
  if (r.cgroup) {
    if (auto st = r.cgroup->add(pid); !st) {
      t->note_ = "if perf-monitor is killed, the command's descendants keep running (" + st.error().message + ")";
      r.cgroup->release();
      r.cgroup->dissolve();
      r.cgroup.reset();
    } else if (std::string mount = unified_mount(); !mount.empty() && r.cgroup->path().starts_with(mount)) {
      // The command's tree is its cgroup's tasks (the kernel reads it by cgroup).
      t->cgroup_id_ = pm::cgroup_id(r.cgroup->path());
    }
  }
  // The open-files limit is raised for perf-monitor itself (a large tree's /proc files).
  rlimit raised = original_nofile;
  raised.rlim_cur = original_nofile.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &raised);
  return t;
}

std::vector<int> Target::threads() const {
  std::vector<int> tids;
  for (int pid : roots_) {
    if (auto tasks = list_dir("/proc/" + std::to_string(pid) + "/task")) {
      for (const std::string& t : *tasks) tids.push_back(std::atoi(t.c_str()));
    }
  }
  return tids;
}

namespace {

// What exec would run for `file` (execvp's search): a regular file with execute permission.
std::string resolve_executable(const std::string& file) {
  for (const std::string& c : exec_candidates(file)) {
    struct stat st {};
    if (::stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(c.c_str(), X_OK) == 0) return c;
  }
  return {};
}

}  // namespace

std::string Target::executable() const {
  if (spec_.mode == Mode::kAttach) return "/proc/" + std::to_string(root_) + "/exe";
  if (spec_.mode != Mode::kRun) return {};
  return resolve_executable(spec_.command[0]);
}

std::vector<std::string> Target::executables() const {
  std::vector<std::string> out;
  if (std::string exe = executable(); !exe.empty()) out.push_back(std::move(exe));
  if (spec_.mode != Mode::kRun) return out;
  // Each word of each argument (a shell's -c string is words too), but options (-c), variable
  // assignments (A=1) and a shell's punctuation: those are no program a launcher runs.
  size_t words = 0;
  for (size_t i = 1; i < spec_.command.size() && out.size() < kMaxNamedExecutables; ++i) {
    std::string_view arg = spec_.command[i];
    while (!arg.empty() && out.size() < kMaxNamedExecutables && words < 64) {
      size_t start = arg.find_first_not_of(" \t\n;&|()'\"");
      if (start == std::string_view::npos) break;
      size_t end = arg.find_first_of(" \t\n;&|()'\"", start);
      std::string word(arg.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
      arg = end == std::string_view::npos ? std::string_view() : arg.substr(end);
      ++words;
      if (word.empty() || word[0] == '-' || word.find('=') != std::string::npos || word.size() > 4096) continue;
      std::string exe = resolve_executable(word);
      if (!exe.empty() && std::find(out.begin(), out.end(), exe) == out.end()) out.push_back(std::move(exe));
    }
  }
  return out;
}

std::vector<int> Target::rediscover() {
  if (spec_.mode == Mode::kCgroup) {
    std::vector<int> now, added;
    cgroup_processes(cgroup_dir_, now);
    for (int pid : now) {
      if (std::find(roots_.begin(), roots_.end(), pid) == roots_.end()) {
        added.push_back(pid);
        roots_.push_back(pid);
      }
    }
    return added;
  }
  if (spec_.mode != Mode::kAttach) return {};
  std::vector<int> added;
  for (int pid : process_and_descendants(root_)) {
    if (std::find(roots_.begin(), roots_.end(), pid) == roots_.end()) {
      added.push_back(pid);
      roots_.push_back(pid);
    }
  }
  return added;
}

Status Target::start(EventLoop& loop, std::function<void()> ended) {
  ended_ = std::move(ended);
  if (spec_.mode == Mode::kAttach) {
    return loop.add_fd(pidfd_.get(), [this] {
      if (root_exited_) return;
      root_exited_ = true;
      end_reason_ = terminations_ > 0 ? "interrupted" : "exited";
      ended_();
    });
  }
  if (spec_.mode != Mode::kRun) return {};
  Run& r = *run_;
  char byte = 1;
  if (::write(r.go.get(), &byte, 1) != 1) return Error::from_errno(errno, "releasing the command");
  r.go.reset();
  int e = 0;
  ssize_t n;
  do {
    n = ::read(r.err.get(), &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  r.err.reset();
  if (n == static_cast<ssize_t>(sizeof e)) {
    ::waitpid(r.pid, nullptr, 0);
    root_exited_ = true;
    exit_code_ = e == ENOENT ? kExitNotFound : kExitCannotExecute;
    return Error::from_errno(e, "cannot execute '" + spec_.command[0] + "'");
  }
  return {};  // EOF: the close-on-exec pipe closed, exec succeeded
}

void Target::reap() {
  for (;;) {
    siginfo_t si{};
    if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) return;
    int pid = si.si_pid;
    if (tree_ != nullptr) tree_->on_reaping(pid);  // a zombie: its last chance to be read
    int status = 0;
    rusage ru{};
    if (::wait4(pid, &status, 0, &ru) != pid) return;
    if (tree_ != nullptr) {
      auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; };
      tree_->on_reaped(pid, {sec(ru.ru_utime), sec(ru.ru_stime), static_cast<double>(ru.ru_minflt),
                             static_cast<double>(ru.ru_majflt)});
    }
    if (pid != root_ || root_exited_) continue;
    root_exited_ = true;
    if (WIFSIGNALED(status)) {
      signal_ = WTERMSIG(status);
      exit_code_ = 128 + WTERMSIG(status);
    } else {
      exit_code_ = WEXITSTATUS(status);
    }
    end_reason_ = duration_expired_ ? "duration" : terminations_ > 0 ? "interrupted" : "exited";
    if (ended_) ended_();
  }
}

bool Target::running() const { return (spec_.mode == Mode::kRun || spec_.mode == Mode::kAttach) && !root_exited_; }

void Target::signal_tree(int sig) {
  std::vector<int> pids = tree_ != nullptr ? tree_->pids() : roots_;
  if (std::find(pids.begin(), pids.end(), root_) == pids.end() && !root_exited_) pids.push_back(root_);
  for (int pid : pids) ::kill(pid, sig);
  // A stopped process would keep an ending signal pending until continued (as timeout(1) does).
  if (sig != SIGKILL && sig != SIGCONT && sig != SIGUSR1 && sig != SIGUSR2) {
    for (int pid : pids) ::kill(pid, SIGCONT);
  }
}

void Target::kill_tree() {
  if (run_ && run_->cgroup && run_->cgroup->kill()) return;
  signal_tree(SIGKILL);
}

bool Target::on_terminate(int sig, bool from_user) {
  ++terminations_;
  if (spec_.mode != Mode::kRun || root_exited_) {
    if (end_reason_.empty()) end_reason_ = "interrupted";
    return true;
  }
  if (terminations_ == 1) {
    // Ctrl-C at a terminal reaches the command too; a signal sent to us alone is passed on. One
    // the command ignores (a background job of a script inherits SIGINT and SIGQUIT ignored)
    // would end nothing: it gets SIGTERM instead, as from --duration.
    if (from_user) {
      if (sig != SIGTERM && !root_exited_ && ignores(root_, sig)) {
        say(std::string("the command ignores SIG") + sigabbrev_np(sig) + ": it is sent SIGTERM instead");
        sig = SIGTERM;
      }
      signal_tree(sig);
    }
    return false;
  }
  // A second one: the user wants out now. The whole tree is killed, and the summary says how
  // the command really ended (reaped: SIGKILL, 137), never a status it did not have.
  kill_tree();
  return false;
}

void Target::on_other_signal(int sig) {
  if (spec_.mode == Mode::kRun && !root_exited_) signal_tree(sig);
}

void Target::on_duration(EventLoop& loop, Duration grace) {
  if (spec_.mode != Mode::kRun || root_exited_) {
    end_reason_ = "duration";
    if (ended_) ended_();
    return;
  }
  duration_expired_ = true;
  signal_tree(SIGTERM);
  // Like timeout --kill-after: a command that ignores SIGTERM is killed, with its tree.
  auto id = std::make_shared<int>(-1);
  auto timer = loop.add_timer(grace, [this, &loop, id] {
    loop.remove(*id);
    if (!root_exited_) kill_tree();
  });
  if (timer) *id = *timer;
}

void Target::finish() {
  if (tree_ != nullptr) tree_->settle();
  if (run_ && run_->cgroup) {
    run_->cgroup->dissolve();
    run_->cgroup->release();
    run_->cgroup.reset();
  }
}

void Target::describe(RunInfo& info) const {
  info.mode = mode_name(spec_.mode);
  info.command = spec_.command;
  info.pid = root_;
  info.exit_code = exit_code_;
  info.signal = signal_;
  info.end_reason = end_reason_.empty() ? "interrupted" : end_reason_;
}

}  // namespace pm
