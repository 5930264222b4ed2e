// SPDX-License-Identifier: Apache-2.0
#include "session/run_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/cgroup.h"
#include "core/file_reader.h"
#include "core/text.h"

namespace pm {
namespace {

bool write_file(const std::string& path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

bool populated(const std::string& dir) {
  std::ifstream in(dir + "/cgroup.events");
  std::string key, value;
  while (in >> key >> value) {
    if (key == "populated") return value != "0";
  }
  return false;
}

// Removes dir once its last process has left it, for up to 5 s: a process that is exiting (or
// was killed) is gone from cgroup.procs a moment before it leaves the cgroup, and rmdir says
// EBUSY until then. With move_to, each round first moves the processes still in it there (one
// forking while it is moved may leave a child behind).
void remove_when_empty(const std::string& dir, const std::string& move_to = {}) {
  for (int round = 0; round < 1000; ++round) {
    if (!move_to.empty() && populated(dir)) {
      std::ifstream in(dir + "/cgroup.procs");
      std::string pid;
      while (in >> pid) write_file(move_to + "/cgroup.procs", pid);
    }
    if (::rmdir(dir.c_str()) == 0 || errno != EBUSY) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The watchdog's command line is the one it inherited from perf-monitor: `pkill -9 -f
// 'perf-monitor run'` would kill it along with perf-monitor, and the tree would outlive both. The
// inherited argument area (which /proc/PID/cmdline shows) is written over with its own name.
void rename_command_line() {
  FileReader reader;
  auto cmdline = reader.read("/proc/self/cmdline");
  char* start = program_invocation_name;  // glibc: argv[0], the start of the argument area
  if (!cmdline || cmdline->size() < sizeof("pm-watchdog") || start == nullptr ||
      std::memcmp(start, cmdline->data(), cmdline->size()) != 0) {
    return;
  }
  std::memset(start, 0, cmdline->size());
  std::memcpy(start, "pm-watchdog", sizeof("pm-watchdog"));
}

[[noreturn]] void watchdog(int pipe_fd, const std::string& dir) {
  // Its own session: the terminal's Ctrl-C and hangup are for perf-monitor and the command.
  ::setsid();
  for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE}) ::signal(sig, SIG_IGN);
  ::prctl(PR_SET_NAME, "pm-watchdog");
  rename_command_line();
  // Nothing of perf-monitor's stays open here (a reader waiting for its output to end would wait
  // for the watchdog too).
  int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
  ::dup2(pipe_fd, 3);
  ::syscall(SYS_close_range, 4U, ~0U, 0U);
  char byte = 0;
  ssize_t n;
  do {
    n = ::read(3, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1) ::_exit(0);  // released: perf-monitor ended normally
  // perf-monitor is gone without a word: end what it left running.
  write_file(dir + "/cgroup.kill", "1");
  remove_when_empty(dir);
  ::_exit(0);
}

}  // namespace

Result<RunCgroup> RunCgroup::create() {
  std::string mount = unified_mount(), own = cgroup_of(0);
  if (mount.empty() || own.empty()) {
    return make_error(Errc::kUnavailable, "no cgroup v2 (unified) hierarchy is mounted");
  }
  std::string parent = mount + (own == "/" ? "" : own);
  if (::access((parent + "/cgroup.kill").c_str(), F_OK) != 0 && own != "/") {
    return make_error(Errc::kUnavailable, "this kernel's cgroups have no cgroup.kill (Linux 5.14+)");
  }
  std::string dir = parent + "/perf-monitor-run-" + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0755) != 0) return Error::from_errno(errno, "creating the command's cgroup " + dir);
  if (::access((dir + "/cgroup.kill").c_str(), F_OK) != 0) {
    ::rmdir(dir.c_str());
    return make_error(Errc::kUnavailable, "this kernel's cgroups have no cgroup.kill (Linux 5.14+)");
  }
  return RunCgroup(dir, parent);
}

RunCgroup::~RunCgroup() = default;

Status RunCgroup::add(int pid) const {
  if (!write_file(dir_ + "/cgroup.procs", std::to_string(pid))) {
    return Error::from_errno(errno, "moving the command into its cgroup " + dir_);
  }
  return {};
}

Status RunCgroup::kill() const {
  if (!write_file(dir_ + "/cgroup.kill", "1")) return Error::from_errno(errno, "killing the command's cgroup");
  return {};
}

void RunCgroup::dissolve() {
  if (dir_.empty()) return;
  // Processes the command left running (daemons, background jobs) go back to perf-monitor's
  // cgroup.
  remove_when_empty(dir_, parent_);
  dir_.clear();
}

Status RunCgroup::watch() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::from_errno(errno, "pipe");
  UniqueFd r(fds[0]), w(fds[1]);
  // Forked twice, so it is init's child and not perf-monitor's (which reaps its own children).
  pid_t first = ::fork();
  if (first < 0) return Error::from_errno(errno, "fork");
  if (first == 0) {
    w.reset();
    if (::fork() == 0) watchdog(r.get(), dir_);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  watchdog_ = std::move(w);
  return {};
}

void RunCgroup::release() {
  if (!watchdog_) return;
  char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(watchdog_.get(), &byte, 1);
  watchdog_.reset();
}

}  // namespace pm
