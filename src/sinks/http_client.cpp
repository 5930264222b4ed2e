// SPDX-License-Identifier: Apache-2.0
#include "sinks/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/fd.h"
#include "core/text.h"

namespace pm::http {

Result<Url> parse_url(std::string_view text) {
  Url u;
  u.text = std::string(text);
  constexpr std::string_view kScheme = "http://";
  if (text.substr(0, kScheme.size()) != kScheme) {
    return make_error(Errc::kInvalidArgument,
                      "'" + printable(text) + "' is not an http:// URL (https is not supported: use a local relay)");
  }
  std::string_view rest = text.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  u.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) {
    return make_error(Errc::kInvalidArgument, "'" + printable(text) + "': credentials in the URL are not taken");
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return make_error(Errc::kInvalidArgument, "'" + printable(text) + "': unclosed '['");
    u.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() == ':') port = after.substr(1);
    else if (!after.empty()) return make_error(Errc::kInvalidArgument, "'" + printable(text) + "': bad address");
  } else {
    size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return make_error(Errc::kInvalidArgument, "'" + printable(text) + "' names no host");
  u.port = port.empty() ? "80" : std::string(port);
  for (char c : u.port) {
    if (c < '0' || c > '9') return make_error(Errc::kInvalidArgument, "'" + printable(text) + "': the port is not a number");
  }
  long p = std::atol(u.port.c_str());
  if (p < 1 || p > 65535) return make_error(Errc::kInvalidArgument, "'" + printable(text) + "': the port is not 1-65535");
  for (char c : u.path) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return make_error(Errc::kInvalidArgument, "'" + printable(text) + "': the path has a space or control byte");
    }
  }
  return u;
}

std::optional<Reply> parse_response_head(std::string_view bytes, size_t* head_size) {
  size_t end = bytes.find("\r\n\r\n");
  size_t skip = 4;
  if (end == std::string_view::npos) {
    end = bytes.find("\n\n");
    skip = 2;
  }
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view head = bytes.substr(0, end);
  if (head.substr(0, 5) != "HTTP/") return std::nullopt;
  size_t sp = head.find(' ');
  if (sp == std::string_view::npos || sp + 4 > head.size()) return std::nullopt;
  Reply r;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    if (head[i] < '0' || head[i] > '9') return std::nullopt;
    r.status = r.status * 10 + (head[i] - '0');
  }
  size_t at = head.find('\n');
  while (at != std::string_view::npos && at < head.size()) {
    size_t next = head.find('\n', at + 1);
    std::string_view line = head.substr(at + 1, (next == std::string_view::npos ? head.size() : next) - at - 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string field(line.substr(0, colon));
      for (char& c : field) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      if (field == "retry-after" && !value.empty() && value.size() < 12 &&
          value.find_first_not_of("0123456789") == std::string_view::npos) {
        r.retry_after = std::atof(std::string(value).c_str());  // (an HTTP date is not taken)
      }
    }
    at = next;
  }
  *head_size = end + skip;
  return r;
}

namespace {

using Clock = std::chrono::steady_clock;

// Waits for `events` on fd until `deadline`; false on timeout or error.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

}  // namespace

Result<Reply> post(const Url& url, const std::vector<std::pair<std::string, std::string>>& headers,
                   std::string_view body, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &found); rc != 0) {
    return make_error(Errc::kUnavailable, "cannot resolve " + printable(url.host) + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, ::freeaddrinfo);
  UniqueFd fd;
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    UniqueFd s(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!s) continue;
    if (::connect(s.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::strerror(errno);
      continue;
    }
    if (!wait_for(s.get(), POLLOUT, deadline)) {
      why = "timed out";
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      why = std::strerror(err != 0 ? err : errno);
      continue;
    }
    fd = std::move(s);
    break;
  }
  if (!fd) return make_error(Errc::kUnavailable, "cannot connect to " + printable(url.text) + ": " + why);
  std::string head = fmt::format("POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Length: {}\r\nConnection: close\r\n",
                                 url.path, url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host,
                                 url.port, body.size());
  for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
  head += "\r\n";
  for (std::string_view part : {std::string_view(head), body}) {
    while (!part.empty()) {
      ssize_t n = ::send(fd.get(), part.data(), part.size(), MSG_NOSIGNAL);
      if (n > 0) {
        part.remove_prefix(static_cast<size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!wait_for(fd.get(), POLLOUT, deadline)) return make_error(Errc::kUnavailable, "sending timed out");
      } else {
        return Error::from_errno(errno, "sending to " + printable(url.text));
      }
    }
  }
  // The response: its head, and up to 4 KiB of body (the receiver's reason on an error).
  std::string got;
  size_t head_size = 0;
  std::optional<Reply> reply;
  for (;;) {
    char buf[4096];
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n > 0) {
      got.append(buf, static_cast<size_t>(n));
      if (!reply) reply = parse_response_head(got, &head_size);
      if (reply && got.size() >= head_size + 4096) break;
      if (!reply && got.size() > 65536) return make_error(Errc::kUnavailable, "the response's head is too long");
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!wait_for(fd.get(), POLLIN, deadline)) {
        if (reply) break;  // a body that never ends: the status is what counts
        return make_error(Errc::kUnavailable, "no response from " + printable(url.text) + " in time");
      }
    } else {
      if (reply) break;
      return Error::from_errno(errno, "reading the response of " + printable(url.text));
    }
  }
  if (!reply) return make_error(Errc::kUnavailable, "no HTTP response from " + printable(url.text));
  reply->body = got.substr(std::min(head_size, got.size()), 4096);
  return *reply;
}

}  // namespace pm::http
