// SPDX-License-Identifier: Apache-2.0
// What the benchmarks need of a Prometheus scraper: a free loopback port and one GET /metrics.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace pm::bench {

// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice of an ephemeral port).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

// One GET /metrics on 127.0.0.1:port, as a scraper does: the whole response in buf, its size,
// or -1 when nothing was served.
inline ssize_t get_metrics(int port, std::string& buf) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  static const char kReq[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::send(fd, kReq, sizeof kReq - 1, MSG_NOSIGNAL) < 0) {
    ::close(fd);
    return -1;
  }
  size_t total = 0;
  for (;;) {
    if (buf.size() < total + 65536) buf.resize(total + 65536);
    ssize_t n = ::recv(fd, buf.data() + total, buf.size() - total, 0);
    if (n <= 0) break;
    total += static_cast<size_t>(n);
  }
  ::close(fd);
  return static_cast<ssize_t>(total);
}

}  // namespace pm::bench
