// SPDX-License-Identifier: Apache-2.0
#include "core/event_loop.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace pm {

Result<std::unique_ptr<EventLoop>> EventLoop::create() {
  UniqueFd epfd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epfd) return Error::from_errno(errno, "epoll_create1");
  return std::unique_ptr<EventLoop>(new EventLoop(std::move(epfd)));
}

Status EventLoop::register_fd(int fd, std::shared_ptr<Handler> h) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (::epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return Error::from_errno(errno, "epoll_ctl");
  handlers_[fd] = std::move(h);
  return {};
}

Result<int> EventLoop::add_timer(Duration interval, Callback cb) {
  if (interval.count() <= 0) return make_error(Errc::kInvalidArgument, "timer interval must be positive");
  UniqueFd tfd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!tfd) return Error::from_errno(errno, "timerfd_create");
  itimerspec spec{};
  spec.it_interval.tv_sec = static_cast<time_t>(interval.count() / 1'000'000'000);
  spec.it_interval.tv_nsec = static_cast<long>(interval.count() % 1'000'000'000);
  spec.it_value = spec.it_interval;
  if (::timerfd_settime(tfd.get(), 0, &spec, nullptr) != 0) return Error::from_errno(errno, "timerfd_settime");
  int fd = tfd.get();
  auto h = std::make_shared<Handler>();
  h->owned = std::move(tfd);
  h->is_timer = true;
  h->cb = std::move(cb);
  if (auto st = register_fd(fd, std::move(h)); !st) return st.error();
  return fd;
}

Status EventLoop::add_fd(int fd, Callback cb) {
  auto h = std::make_shared<Handler>();
  h->cb = std::move(cb);
  return register_fd(fd, std::move(h));
}

void EventLoop::remove(int fd) {
  auto it = handlers_.find(fd);
  if (it == handlers_.end()) return;
  ::epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  handlers_.erase(it);
}

Status EventLoop::watch_signals(const std::vector<int>& signals, SignalCallback cb) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return Error::from_errno(errno, "sigprocmask");
  UniqueFd sfd(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!sfd) return Error::from_errno(errno, "signalfd");
  int fd = sfd.get();
  auto h = std::make_shared<Handler>();
  h->owned = std::move(sfd);
  h->cb = [fd, cb = std::move(cb)] {
    signalfd_siginfo info{};
    while (::read(fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) cb(info);
  };
  return register_fd(fd, std::move(h));
}

Status EventLoop::run() {
  std::array<epoll_event, 16> events{};
  while (!stopped_) {
    int n = ::epoll_wait(epfd_.get(), events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno(errno, "epoll_wait");
    }
    for (int i = 0; i < n && !stopped_; ++i) {
      auto it = handlers_.find(events[static_cast<size_t>(i)].data.fd);
      if (it == handlers_.end()) continue;      // removed by an earlier callback in this batch
      std::shared_ptr<Handler> h = it->second;  // keeps it alive if the callback removes itself
      if (h->is_timer) {
        uint64_t expirations = 0;
        if (::read(h->owned.get(), &expirations, sizeof expirations) != sizeof expirations) continue;
        if (expirations > 1) missed_ticks_ += expirations - 1;
      }
      h->cb();
    }
  }
  return {};
}

}  // namespace pm
