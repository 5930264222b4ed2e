// SPDX-License-Identifier: Apache-2.0
// Process fork/exit notifications from the kernel's proc connector (netlink, CONFIG_PROC_EVENTS).
// With it the process tree learns of a child the moment it is forked, so even a child that lives
// a millisecond is counted. Needs CAP_NET_ADMIN; without it the tree falls back to /proc walks.
#pragma once

#include <cstdint>
#include <functional>

#include "core/error.h"
#include "core/fd.h"

namespace pm {

class ProcEvents {
 public:
  struct Handlers {
    std::function<void(int parent_tgid, int child_pid, int child_tgid)> on_fork;
    std::function<void(int pid, int tgid)> on_exit;
  };

  static Result<ProcEvents> open();
  [[nodiscard]] int fd() const { return fd_.get(); }
  // Reads every queued notification (the socket is non-blocking).
  void drain(const Handlers& h);
  // Notifications the kernel dropped because the socket buffer was full.
  [[nodiscard]] uint64_t overruns() const { return overruns_; }
  // Notifications read (every kind, not only fork and exit).
  [[nodiscard]] uint64_t events() const { return events_; }

 private:
  explicit ProcEvents(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  uint64_t overruns_ = 0;
  uint64_t events_ = 0;
};

}  // namespace pm
