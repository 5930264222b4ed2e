// SPDX-License-Identifier: Apache-2.0
// The Prometheus sink: renders at each interval close (event loop thread), serves the latest
// text from the HTTP server's thread. See prometheus.h for why it is split this way, and
// http_server.h for what a client may hold.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include "sinks/http_request.h"
#include "sinks/http_server.h"
#include "sinks/prometheus.h"

namespace pm {
namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

class HttpPrometheusSink final : public PrometheusSink {
 public:
  HttpPrometheusSink(ListenAddress addr, std::unique_ptr<http::Server> server)
      : addr_(std::move(addr)), server_(std::move(server)) {}
  HttpPrometheusSink(const HttpPrometheusSink&) = delete;
  HttpPrometheusSink& operator=(const HttpPrometheusSink&) = delete;
  ~HttpPrometheusSink() override { server_.reset(); }  // stops its thread before the text goes

  Status serve() override {
    publish(nullptr);  // a scrape before the first interval gets the self metrics
    return server_->start([this](std::string_view /*method*/, std::string_view target) {
      std::string_view path = http::target_path(target);
      if (path == "/metrics") return scrape();
      http::Response r;
      r.status = path == "/" ? 200 : 404;
      r.body = {std::make_shared<const std::string>(path == "/" ? "perf-monitor: Prometheus metrics at /metrics\n"
                                                                : "not found: the metrics are at /metrics\n")};
      return r;
    });
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

  // Server thread. The body is the latest rendered text, sent from the shared copy (no copy
  // per scrape), then the scrape's own figures.
  http::Response scrape() {
    auto start = std::chrono::steady_clock::now();
    http::Response r;
    r.content_type = kContentType;
    {
      std::lock_guard<std::mutex> lock(mu_);
      r.body.push_back(text_);
    }
    auto tail = std::make_shared<std::string>();
    render_scrape_self(*tail, scrapes_.fetch_add(1) + 1,
                       static_cast<double>(last_scrape_ns_.load(std::memory_order_relaxed)) * 1e-9);
    r.body.push_back(std::move(tail));
    r.written = [this, start] {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
      last_scrape_ns_.store(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
    };
    return r;
  }

  ListenAddress addr_;
  std::unique_ptr<http::Server> server_;
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
  auto server = http::Server::bind(addr);
  if (!server) return server.error();
  return std::unique_ptr<PrometheusSink>(std::make_unique<HttpPrometheusSink>(addr, std::move(*server)));
}

}  // namespace pm
