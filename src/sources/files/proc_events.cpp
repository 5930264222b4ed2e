// SPDX-License-Identifier: Apache-2.0
#include "sources/files/proc_events.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace pm {

Result<ProcEvents> ProcEvents::open() {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR));
  if (!fd) return Error::from_errno(errno, "proc connector socket");
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = CN_IDX_PROC;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Error::from_errno(errno, "proc connector bind");
  }
  // A larger receive buffer rides out fork storms between two reads of the event loop.
  int rcvbuf = 4 << 20;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);

  // nlmsghdr, then cn_msg (whose payload is a flexible array), then the listen operation.
  constexpr size_t kLen = NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_cn_mcast_op));
  alignas(nlmsghdr) std::array<char, NLMSG_SPACE(sizeof(cn_msg) + sizeof(proc_cn_mcast_op))> req{};
  auto* nl = reinterpret_cast<nlmsghdr*>(req.data());
  nl->nlmsg_len = kLen;
  nl->nlmsg_type = NLMSG_DONE;
  nl->nlmsg_pid = static_cast<__u32>(::getpid());
  auto* cn = reinterpret_cast<cn_msg*>(NLMSG_DATA(nl));
  cn->id.idx = CN_IDX_PROC;
  cn->id.val = CN_VAL_PROC;
  cn->len = sizeof(proc_cn_mcast_op);
  const proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
  std::memcpy(cn->data, &op, sizeof op);
  if (::send(fd.get(), req.data(), kLen, 0) != static_cast<ssize_t>(kLen)) {
    return Error::from_errno(errno, "proc connector subscribe");
  }
  return ProcEvents(std::move(fd));
}

void ProcEvents::drain(const Handlers& h) {
  alignas(nlmsghdr) std::array<char, 8192> buf{};
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        ++overruns_;
        continue;
      }
      return;  // EAGAIN: drained
    }
    auto len = static_cast<unsigned>(n);
    for (auto* nl = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(nl, len); nl = NLMSG_NEXT(nl, len)) {
      if (nl->nlmsg_type == NLMSG_ERROR || nl->nlmsg_type == NLMSG_NOOP) continue;
      const auto* cn = reinterpret_cast<const cn_msg*>(NLMSG_DATA(nl));
      if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC) continue;
      ++events_;
      proc_event ev{};
      std::memcpy(&ev, cn->data, std::min<size_t>(sizeof ev, cn->len));
      if (ev.what == proc_event::PROC_EVENT_FORK && h.on_fork) {
        h.on_fork(ev.event_data.fork.parent_tgid, ev.event_data.fork.child_pid, ev.event_data.fork.child_tgid);
      } else if (ev.what == proc_event::PROC_EVENT_EXIT && h.on_exit) {
        h.on_exit(ev.event_data.exit.process_pid, ev.event_data.exit.process_tgid);
      }
    }
  }
}

}  // namespace pm
