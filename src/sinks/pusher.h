// SPDX-License-Identifier: Apache-2.0
// Delivery of pushed requests (remote write, OTLP): a queue the event loop fills and a thread of
// its own that POSTs it, in order, with the rules both protocols ask for: 2xx sent; 429, 502,
// 503, 504 (any 5xx) and no response at all retried after the receiver's Retry-After, else a
// backoff from 100 ms doubling to 5 s; another 4xx is the request's fault: dropped, never
// retried. At most kMaxQueued requests wait (the oldest go first, counted). finish() gives what is
// queued until a deadline, then counts what is left.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sinks/http_client.h"
#include "sinks/prometheus.h"

namespace pm {

class Pusher {
 public:
  static constexpr size_t kMaxQueued = 256;  // requests: four minutes of 1 s intervals
  struct Counts {
    size_t queued = 0;              // items (samples, spans) handed to push()
    size_t sent = 0, refused = 0, dropped = 0, left = 0;
    size_t requests = 0, retries = 0, bytes = 0;
    std::string why;  // the last reason something was not delivered
  };
  // `accepted(reply)`: the items of a 2xx reply the receiver still rejected (OTLP's
  // partial_success); nullptr where a 2xx takes them all.
  using Rejected = std::function<size_t(const http::Reply&)>;
  Pusher(http::Url url, std::vector<std::pair<std::string, std::string>> headers, std::chrono::milliseconds timeout,
         Rejected rejected = nullptr);
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;
  ~Pusher();

  Status start();  // the thread (it blocks every signal: they stay with the event loop)
  // Queues a request body carrying `items` items.
  void push(std::string body, size_t items);
  // The end: up to `grace` for what is queued, then the thread stops.
  void finish(std::chrono::milliseconds grace);
  [[nodiscard]] Counts counts() const;
  // The same as the session's self metrics have them.
  [[nodiscard]] SessionStatus::Export export_counts(std::string exporter) const;
  [[nodiscard]] const http::Url& url() const { return url_; }

 private:
  struct Item {
    std::string body;
    size_t items = 0;
    uint64_t seq = 0;
  };
  void loop();

  http::Url url_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::chrono::milliseconds timeout_;
  Rejected rejected_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool closing_ = false;
  std::chrono::steady_clock::time_point deadline_;
  Counts counts_;
  uint64_t seq_ = 0;
  std::thread thread_;
};

}  // namespace pm
