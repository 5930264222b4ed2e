// SPDX-License-Identifier: Apache-2.0
// The single-threaded event loop: epoll over timerfds (one per rhythm), a signalfd and whatever fds
// sources register (a pidfd, a netlink socket, a ring buffer). Nothing here knows about /proc.
#pragma once

#include <sys/signalfd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>
#include <map>
#include <memory>

#include "core/clock.h"
#include "core/error.h"
#include "core/fd.h"

namespace pm {


class EventLoop {
 public:
  using Callback = std::function<void()>;
  using SignalCallback = std::function<void(const signalfd_siginfo&)>;

  static Result<std::unique_ptr<EventLoop>> create();

  // Calls cb every `interval`, the first time after one interval. Returns a timer id.
  Result<int> add_timer(Duration interval, Callback cb);
  // Calls cb when fd is readable (EPOLLIN) or hung up. The loop does not own fd.
  Status add_fd(int fd, Callback cb);
  void remove(int fd_or_timer_id);
  // Blocks the signals for the process and delivers them through a signalfd.
  Status watch_signals(const std::vector<int>& signals, SignalCallback cb);

  // Runs until stop() is called; a stop() before run() (a target that ended while the session
  // was starting) makes run() return at once.
  Status run();
  void stop() { stopped_ = true; }

  // Timer expirations that arrived while the loop was busy (a tick that came late).
  [[nodiscard]] uint64_t missed_ticks() const { return missed_ticks_; }

 private:
  explicit EventLoop(UniqueFd epfd) : epfd_(std::move(epfd)) {}
  struct Handler {
    UniqueFd owned;  // timerfds and the signalfd belong to the loop
    bool is_timer = false;
    Callback cb;
  };
  Status register_fd(int fd, std::shared_ptr<Handler> h);

  UniqueFd epfd_;
  std::map<int, std::shared_ptr<Handler>> handlers_;
  bool stopped_ = false;
  uint64_t missed_ticks_ = 0;
};

}  // namespace pm
