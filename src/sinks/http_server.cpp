// SPDX-License-Identifier: Apache-2.0
#include "sinks/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <system_error>
#include <thread>

#include "core/fd.h"
#include "sinks/http_request.h"

namespace pm::http {
namespace {

using Clock = std::chrono::steady_clock;

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

Error bind_error(const ListenAddress& a, int err) {
  std::string where = "cannot serve Prometheus metrics on " + a.text() + ": ";
  switch (err) {
    case EADDRINUSE:
      return make_error(Errc::kInvalidArgument,
                        where + "the port is in use: choose another with --prometheus (or [prometheus] listen), "
                                "or see who holds it with: ss -ltnp 'sport = :" +
                            std::to_string(a.port) + "'");
    case EADDRNOTAVAIL:
      return make_error(Errc::kInvalidArgument, where + a.host +
                                                    " is not an address of this host: use one it has (ip -brief "
                                                    "address), 127.0.0.1, or 0.0.0.0 for every interface");
    case EACCES:
    case EPERM:
      return make_error(Errc::kInvalidArgument,
                        where + "ports below 1024 need CAP_NET_BIND_SERVICE: choose a port above 1023, e.g. 9464");
    case EAFNOSUPPORT:
      return make_error(Errc::kInvalidArgument, where + "this host has no IPv6: use an IPv4 address");
    default:
      return make_error(Errc::kInvalidArgument, where + std::strerror(err));
  }
}

struct Connection {
  enum class State { kReading, kWriting, kLingering };
  UniqueFd fd;
  uint64_t serial = 0;  // accept order: the oldest is closed first when the table is full
  State state = State::kReading;
  Clock::time_point deadline;
  std::string in;  // the request head so far (at most kMaxHeadBytes)
  // The response: its head, then the body's parts; `part` and `offset` say how far it went.
  std::string head;
  std::vector<std::shared_ptr<const std::string>> body;
  size_t part = 0, offset = 0;  // part 0 is `head`, part i the body's part i-1
  std::function<void()> written;
  size_t discarded = 0;  // bytes read and dropped while lingering
};

class EpollServer final : public Server {
 public:
  EpollServer(ListenAddress addr, Limits limits, UniqueFd listener)
      : addr_(std::move(addr)), limits_(limits), listener_(std::move(listener)) {}
  EpollServer(const EpollServer&) = delete;
  EpollServer& operator=(const EpollServer&) = delete;

  ~EpollServer() override {
    if (thread_.joinable()) {
      uint64_t one = 1;
      ssize_t n = ::write(stop_.get(), &one, sizeof one);
      (void)n;  // an eventfd write of 1 cannot fail short of overflow
      thread_.join();
    }
  }

  Status start(Handler handler) override {
    handler_ = std::move(handler);
    epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
    stop_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!epoll_ || !stop_) return Error::from_errno(errno, "starting the Prometheus server");
    if (!watch(listener_.get(), EPOLLIN, kListenKey) || !watch(stop_.get(), EPOLLIN, kStopKey)) {
      return Error::from_errno(errno, "starting the Prometheus server");
    }
    // The thread takes no signal: they stay with the event loop's signalfd (a SIGINT delivered
    // to a thread that does not block it would end the process at once).
    sigset_t all, old;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      thread_ = std::thread([this] { loop(); });
    } catch (const std::system_error& e) {
      ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
      return make_error(Errc::kIo, std::string("starting the Prometheus server thread: ") + e.what());
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return {};
  }

 private:
  static constexpr uint64_t kListenKey = ~uint64_t{0};
  static constexpr uint64_t kStopKey = ~uint64_t{0} - 1;
  static constexpr size_t kMaxLingerDiscard = 64 << 10;

  bool watch(int fd, uint32_t events, uint64_t key, int op = EPOLL_CTL_ADD) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = key;
    return ::epoll_ctl(epoll_.get(), op, fd, &ev) == 0;
  }

  void loop() {
    epoll_event events[64];
    for (;;) {
      int n = ::epoll_wait(epoll_.get(), events, 64, wait_ms());
      if (n < 0 && errno != EINTR) return;
      for (int i = 0; i < n; ++i) {
        uint64_t key = events[i].data.u64;
        if (key == kStopKey) return;
        if (key == kListenKey) {
          accept_all();
          continue;
        }
        auto it = conns_.find(static_cast<int>(key));
        if (it != conns_.end()) on_event(it->second, events[i].events);
      }
      expire();
    }
  }

  // Until the nearest deadline (the table is small: a scan is cheaper than a heap).
  int wait_ms() {
    if (listen_paused_until_) {
      resume_listening_if_due();
    }
    Clock::time_point next = Clock::time_point::max();
    for (const auto& [fd, c] : conns_) next = std::min(next, c.deadline);
    if (listen_paused_until_) next = std::min(next, *listen_paused_until_);
    if (next == Clock::time_point::max()) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
    return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
  }

  void resume_listening_if_due() {
    if (Clock::now() < *listen_paused_until_) return;
    listen_paused_until_.reset();
    watch(listener_.get(), EPOLLIN, kListenKey, EPOLL_CTL_MOD);
  }

  void accept_all() {
    for (int i = 0; i < 256; ++i) {
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
          // Out of descriptors: give the oldest connection's back, and if there is none, stop
          // accepting for a moment rather than spin on a listener that stays readable.
          if (!close_oldest()) pause_listening();
          continue;
        }
        return;  // EAGAIN: all taken
      }
      if (conns_.size() >= limits_.max_connections) close_oldest();
      Connection c;
      c.fd = UniqueFd(fd);
      c.serial = ++serial_;
      c.deadline = Clock::now() + limits_.request_time;
      if (!watch(fd, EPOLLIN | EPOLLRDHUP, static_cast<uint64_t>(fd))) continue;  // closed by ~Connection
      conns_.emplace(fd, std::move(c));
    }
  }

  void pause_listening() {
    listen_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
    watch(listener_.get(), 0, kListenKey, EPOLL_CTL_MOD);
  }

  bool close_oldest() {
    if (conns_.empty()) return false;
    auto oldest = std::min_element(conns_.begin(), conns_.end(),
                                   [](const auto& a, const auto& b) { return a.second.serial < b.second.serial; });
    close(oldest->first);
    return true;
  }

  void close(int fd) {
    conns_.erase(fd);  // closing the fd also removes it from the epoll set
  }

  void expire() {
    auto now = Clock::now();
    std::vector<int> late;
    for (const auto& [fd, c] : conns_) {
      if (c.deadline <= now) late.push_back(fd);
    }
    for (int fd : late) {
      Connection& c = conns_.at(fd);
      if (c.state == Connection::State::kReading && !c.in.empty()) {
        // A request that did not arrive in time is answered, if the client is listening.
        respond(c, simple(408, "request not received in time\n"));
        if (conns_.count(fd) && c.state != Connection::State::kLingering) close(fd);
      } else {
        close(fd);
      }
    }
  }

  void on_event(Connection& c, uint32_t events) {
    int fd = c.fd.get();
    if (events & EPOLLERR) {
      close(fd);
      return;
    }
    switch (c.state) {
      case Connection::State::kReading:
        read_request(c);
        break;
      case Connection::State::kWriting:
        if (events & EPOLLHUP) {
          close(fd);
          return;
        }
        write_response(c);
        break;
      case Connection::State::kLingering:
        linger(c);
        break;
    }
  }

  void read_request(Connection& c) {
    int fd = c.fd.get();
    // One byte past the bound is enough to know a head is too large.
    char buf[kMaxHeadBytes + 1];
    size_t want = kMaxHeadBytes + 1 - c.in.size();
    ssize_t n = ::recv(fd, buf, want, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      close(fd);  // the client went away (or half-closed without a whole request)
      return;
    }
    if (n < 0) return;
    c.in.append(buf, static_cast<size_t>(n));
    HeadParse p = parse_request_head(c.in);
    switch (p.status) {
      case HeadStatus::kIncomplete:
        return;
      case HeadStatus::kBad:
        respond(c, simple(400, std::string(p.why) + "\n"));
        return;
      case HeadStatus::kTooLarge:
        respond(c, simple(431, std::string(p.why) + "\n"));
        return;
      case HeadStatus::kComplete:
        break;
    }
    bool head_only = p.head.method == "HEAD";  // the same headers, no body
    Response r = p.head.method == "GET" || head_only ? handler_(p.head.method, p.head.target)
                                                     : simple(405, "only GET and HEAD\n");
    respond(c, std::move(r), !head_only);
  }

  static size_t body_size(const Response& r) {
    size_t n = 0;
    for (const auto& part : r.body) n += part ? part->size() : 0;
    return n;
  }

  static Response simple(int status, std::string text) {
    Response r;
    r.status = status;
    r.body = {std::make_shared<const std::string>(std::move(text))};
    return r;
  }

  void respond(Connection& c, Response r, bool send_body = true) {
    c.head = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\nContent-Type: " +
             r.content_type + "\r\nContent-Length: " + std::to_string(body_size(r)) + "\r\n" +
             (r.status == 405 ? "Allow: GET, HEAD\r\n" : "") + "Connection: close\r\n\r\n";
    c.body = send_body ? std::move(r.body) : std::vector<std::shared_ptr<const std::string>>{};
    c.written = std::move(r.written);
    c.part = c.offset = 0;
    c.in.clear();
    c.in.shrink_to_fit();
    c.state = Connection::State::kWriting;
    c.deadline = Clock::now() + limits_.response_time;
    watch(c.fd.get(), EPOLLOUT, static_cast<uint64_t>(c.fd.get()), EPOLL_CTL_MOD);
    write_response(c);
  }

  void write_response(Connection& c) {
    int fd = c.fd.get();
    for (;;) {
      iovec iov[8];
      int n_iov = 0;
      size_t part = c.part, offset = c.offset;
      while (n_iov < 8 && part <= c.body.size()) {
        const std::string* s = part == 0 ? &c.head : c.body[part - 1].get();
        if (s != nullptr && offset < s->size()) {
          iov[n_iov].iov_base = const_cast<char*>(s->data() + offset);
          iov[n_iov].iov_len = s->size() - offset;
          ++n_iov;
        }
        ++part;
        offset = 0;
      }
      if (n_iov == 0) break;  // all sent
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n_iov);
      ssize_t sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent < 0) {
        if (errno == EAGAIN || errno == EINTR) return;  // EPOLLOUT brings us back
        close(fd);
        return;
      }
      advance(c, static_cast<size_t>(sent));
    }
    if (c.written) c.written();
    // Done: say so, then wait briefly for the client to close first, so that unread bytes it
    // sent cannot turn our close into a reset that destroys the response in flight.
    ::shutdown(fd, SHUT_WR);
    c.head.clear();
    c.body.clear();
    c.state = Connection::State::kLingering;
    c.deadline = Clock::now() + limits_.linger_time;
    watch(fd, EPOLLIN | EPOLLRDHUP, static_cast<uint64_t>(fd), EPOLL_CTL_MOD);
  }

  static void advance(Connection& c, size_t sent) {
    while (sent > 0 && c.part <= c.body.size()) {
      const std::string* s = c.part == 0 ? &c.head : c.body[c.part - 1].get();
      size_t left = s == nullptr ? 0 : s->size() - c.offset;
      if (sent < left) {
        c.offset += sent;
        return;
      }
      sent -= left;
      ++c.part;
      c.offset = 0;
    }
  }

  void linger(Connection& c) {
    char buf[4096];
    ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
    if (n > 0) {
      c.discarded += static_cast<size_t>(n);
      if (c.discarded <= kMaxLingerDiscard) return;
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      return;
    }
    close(c.fd.get());
  }

  ListenAddress addr_;
  Limits limits_;
  UniqueFd listener_;
  UniqueFd epoll_, stop_;
  Handler handler_;
  std::thread thread_;
  // Server thread only.
  std::map<int, Connection> conns_;
  uint64_t serial_ = 0;
  std::optional<Clock::time_point> listen_paused_until_;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::bind(const ListenAddress& addr, Limits limits) {
  int family = addr.ipv6 ? AF_INET6 : AF_INET;
  // Close-on-exec: the command of `run` must not inherit the listening socket.
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return bind_error(addr, errno);
  // SO_REUSEADDR only: a restart finds the port free while old connections linger in
  // TIME_WAIT. Not SO_REUSEPORT, with which a second perf-monitor on the same port would bind
  // too and the kernel would split the scrapes between them.
  int yes = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (addr.ipv6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(addr.port);
    if (::inet_pton(AF_INET6, addr.host.c_str(), &s6->sin6_addr) != 1) return bind_error(addr, EINVAL);
    len = sizeof *s6;
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(addr.port);
    if (::inet_pton(AF_INET, addr.host.c_str(), &s4->sin_addr) != 1) return bind_error(addr, EINVAL);
    len = sizeof *s4;
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) return bind_error(addr, errno);
  if (::listen(fd.get(), 128) != 0) return bind_error(addr, errno);
  return std::unique_ptr<Server>(std::make_unique<EpollServer>(addr, limits, std::move(fd)));
}

}  // namespace pm::http
