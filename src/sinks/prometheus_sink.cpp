// SPDX-License-Identifier: Apache-2.0
// The Prometheus sink: renders at each interval close (event loop thread), serves the latest
// text from cpp-httplib's server thread. See prometheus.h for why it is split this way.
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#include <arpa/inet.h>
#include <httplib.h>

#include "core/fd.h"
#include "sinks/prometheus.h"

namespace pm {
namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// Settings of the HTTP server, and why.
// - Each connection is closed after its response. cpp-httplib 0.11 waits for a kept-alive
//   connection's next request by polling it every 10 ms; closing keeps an exporter asleep
//   between scrapes, and a new loopback or LAN connection per scrape costs far less.
// - Two seconds for a client to send its request and take the response: a scraper sends at
//   once and reads at once; a client that does neither gives its worker back quickly.
// - Four workers: scrapers of an HA pair and a person with curl are served at once even while
//   a broken client holds a worker.
constexpr int kWorkers = 4;
constexpr time_t kRequestWaitSeconds = 1;  // for a new connection's request to begin
constexpr time_t kClientTimeoutSeconds = 2;  // for each read or write once it has
constexpr size_t kMaxRequestBody = 4096;  // a scrape has no body

Error bind_error(const ListenAddress& a) {
  // cpp-httplib says only that binding failed: bind a socket the same way to learn why.
  int family = a.ipv6 ? AF_INET6 : AF_INET;
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int err = errno;
  if (fd) {
    int yes = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (a.ipv6) {
      auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
      s6->sin6_family = AF_INET6;
      s6->sin6_port = htons(a.port);
      ::inet_pton(AF_INET6, a.host.c_str(), &s6->sin6_addr);
      len = sizeof *s6;
    } else {
      auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
      s4->sin_family = AF_INET;
      s4->sin_port = htons(a.port);
      ::inet_pton(AF_INET, a.host.c_str(), &s4->sin_addr);
      len = sizeof *s4;
    }
    err = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) == 0 && ::listen(fd.get(), 1) == 0 ? 0 : errno;
  }
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
    case 0:
      return make_error(Errc::kIo, where + "the HTTP server could not listen there (try again)");
    default:
      return make_error(Errc::kInvalidArgument, where + std::strerror(err));
  }
}

class HttpPrometheusSink final : public PrometheusSink {
 public:
  explicit HttpPrometheusSink(ListenAddress addr) : addr_(std::move(addr)) {}
  HttpPrometheusSink(const HttpPrometheusSink&) = delete;
  HttpPrometheusSink& operator=(const HttpPrometheusSink&) = delete;
  ~HttpPrometheusSink() override {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }

  Status bind() {
    server_.new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
    // Only SO_REUSEADDR (a restart finds the port free while old connections linger in
    // TIME_WAIT). cpp-httplib's default adds SO_REUSEPORT, with which a second perf-monitor
    // on the same port would bind too and the kernel would split the scrapes between them.
    // Close-on-exec: the command of `run` must not inherit the listening socket.
    server_.set_socket_options([](int fd) {
      int yes = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    });
    server_.set_keep_alive_max_count(1);
    server_.set_keep_alive_timeout(kRequestWaitSeconds);
    server_.set_read_timeout(kClientTimeoutSeconds, 0);
    server_.set_write_timeout(kClientTimeoutSeconds, 0);
    server_.set_payload_max_length(kMaxRequestBody);
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { scrape(res); });
    server_.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("perf-monitor: Prometheus metrics at /metrics\n", "text/plain; charset=utf-8");
    });
    if (!server_.bind_to_port(addr_.host, addr_.port)) return bind_error(addr_);
    return {};
  }

  Status serve() override {
    publish(nullptr);  // a scrape before the first interval gets the self metrics
    // The server's threads take no signal: they stay with the event loop's signalfd (a
    // SIGINT delivered to a thread that does not block it would end the process at once).
    sigset_t all, old;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      thread_ = std::thread([this] {
        try {
          server_.listen_after_bind();
        } catch (...) {  // nothing crosses the thread's boundary; scrapes just stop
        }
      });
    } catch (const std::system_error& e) {
      ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
      return make_error(Errc::kIo, std::string("starting the Prometheus server thread: ") + e.what());
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    // stop() only stops a server that is running: wait until it is, so the destructor's
    // stop() cannot come first and leave the thread in accept() forever.
    for (int i = 0; i < 2000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return {};
  }

  void session(const SessionStatus& status) override { status_ = status; }
  [[nodiscard]] const ListenAddress& address() const override { return addr_; }

  void unavailable(const std::vector<Unavailable>& /*list*/) override {}  // in SessionStatus
  void interval(const IntervalRecord& rec) override { publish(&rec); }
  void summary(const SummaryRecord& /*rec*/, const RunInfo& /*info*/,
               const std::vector<Unavailable>& /*list*/) override {}

 private:
  // Renders in the calling (event loop) thread; the lock is held only to swap the pointer.
  void publish(const IntervalRecord* rec) {
    auto start = std::chrono::steady_clock::now();
    auto text = std::make_shared<std::string>();
    text->reserve(last_size_ + last_size_ / 8);
    render_exposition(*text, rec, status_, render_seconds_);
    last_size_ = text->size();
    render_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(mu_);
    text_ = std::move(text);
  }

  // Server thread. The body is the latest rendered text, written from the shared copy (no
  // copy per scrape), then the scrape's own figures.
  void scrape(httplib::Response& res) {
    auto start = std::chrono::steady_clock::now();
    std::shared_ptr<const std::string> text;
    {
      std::lock_guard<std::mutex> lock(mu_);
      text = text_;
    }
    auto tail = std::make_shared<std::string>();
    render_scrape_self(*tail, scrapes_.fetch_add(1) + 1,
                       static_cast<double>(last_scrape_ns_.load(std::memory_order_relaxed)) * 1e-9);
    size_t size = text->size() + tail->size();
    res.set_content_provider(
        size, kContentType, [this, text, tail, start, size](size_t offset, size_t length, httplib::DataSink& sink) {
          size_t end = offset + length;
          if (offset < text->size()) {
            size_t n = std::min(end, text->size()) - offset;
            if (!sink.write(text->data() + offset, n)) return false;
            offset += n;
          }
          if (offset < end && !sink.write(tail->data() + (offset - text->size()), end - offset)) return false;
          if (end == size) {
            auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
            last_scrape_ns_.store(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
          }
          return true;
        });
  }

  ListenAddress addr_;
  httplib::Server server_;
  std::thread thread_;
  // Event loop thread only.
  SessionStatus status_;
  size_t last_size_ = 0;
  double render_seconds_ = 0;
  // Shared with the server thread.
  std::mutex mu_;
  std::shared_ptr<const std::string> text_ = std::make_shared<std::string>();
  std::atomic<uint64_t> scrapes_{0};
  std::atomic<uint64_t> last_scrape_ns_{0};
};

}  // namespace

Result<std::unique_ptr<PrometheusSink>> PrometheusSink::bind(const ListenAddress& addr) {
  auto sink = std::make_unique<HttpPrometheusSink>(addr);
  if (auto st = sink->bind(); !st) return st.error();
  return std::unique_ptr<PrometheusSink>(std::move(sink));
}

}  // namespace pm
