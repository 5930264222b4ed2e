// SPDX-License-Identifier: Apache-2.0
#include "cli/target.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace pm {

Result<HeldChild> HeldChild::spawn(const std::vector<std::string>& argv, const ExecState& exec) {
  if (argv.empty()) return make_error(Errc::kInvalidArgument, "no command given");
  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return Error::from_errno(errno, "pipe");
  UniqueFd go_r(go[0]), go_w(go[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return Error::from_errno(errno, "pipe");
  UniqueFd err_r(err[0]), err_w(err[1]);

  // argv is built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return Error::from_errno(errno, "fork");
  if (pid == 0) {
    ::close(go_w.get());
    ::close(err_r.get());
    char byte = 0;
    ssize_t n;
    do {
      n = ::read(go_r.get(), &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(127);  // the monitor gave up before releasing us
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &dfl, nullptr);
    ::setrlimit(RLIMIT_NOFILE, &exec.nofile);
    ::sigprocmask(SIG_SETMASK, &exec.mask, nullptr);
    ::execvp(args[0], args.data());
    int e = errno;
    [[maybe_unused]] ssize_t w = ::write(err_w.get(), &e, sizeof e);
    ::_exit(127);
  }
  go_r.reset();
  err_w.reset();
  return HeldChild(pid, std::move(go_w), std::move(err_r));
}

Status HeldChild::release() {
  char byte = 1;
  if (::write(go_.get(), &byte, 1) != 1) return Error::from_errno(errno, "releasing the command");
  go_.reset();
  int e = 0;
  ssize_t n;
  do {
    n = ::read(err_.get(), &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  err_.reset();
  if (n == static_cast<ssize_t>(sizeof e)) return Error::from_errno(e, "cannot execute");
  return {};  // EOF: the close-on-exec pipe closed, exec succeeded
}

Result<UniqueFd> open_pidfd(int pid) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return Error::from_errno(errno, "pidfd_open");
  return UniqueFd(fd);
}

}  // namespace pm
