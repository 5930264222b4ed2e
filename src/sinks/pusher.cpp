// SPDX-License-Identifier: Apache-2.0
#include "sinks/pusher.h"

#include <signal.h>

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "core/text.h"

namespace pm {

Pusher::Pusher(http::Url url, std::vector<std::pair<std::string, std::string>> headers,
               std::chrono::milliseconds timeout, Rejected rejected)
    : url_(std::move(url)), headers_(std::move(headers)), timeout_(timeout), rejected_(std::move(rejected)) {}

Pusher::~Pusher() { finish(std::chrono::milliseconds(0)); }

Status Pusher::start() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread([this] { loop(); });
  } catch (const std::system_error& e) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return make_error(Errc::kUnavailable, std::string("no thread to push to ") + printable(url_.text) + ": " + e.what());
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return {};
}

void Pusher::push(std::string body, size_t items) {
  std::lock_guard<std::mutex> lock(mu_);
  counts_.queued += items;
  if (queue_.size() >= kMaxQueued) {
    counts_.dropped += queue_.front().items;
    queue_.pop_front();
    counts_.why = "the queue was full (the receiver was too slow or down)";
  }
  queue_.push_back({std::move(body), items, ++seq_});
  cv_.notify_all();
}

void Pusher::finish(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closing_) deadline_ = std::chrono::steady_clock::now() + grace;
    closing_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

Pusher::Counts Pusher::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c = counts_;
  for (const Item& i : queue_) c.left += i.items;
  return c;
}

SessionStatus::Export Pusher::export_counts(std::string exporter) const {
  Counts c = counts();
  return {std::move(exporter), c.sent, c.refused, c.dropped, c.requests, c.retries, c.bytes};
}

void Pusher::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  auto backoff = std::chrono::milliseconds(100);
  auto over = [&] { return closing_ && std::chrono::steady_clock::now() >= deadline_; };
  for (;;) {
    cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty() || over()) return;
    std::string body = queue_.front().body;  // (a copy: the queue may drop its oldest meanwhile)
    size_t items = queue_.front().items;
    uint64_t seq = queue_.front().seq;
    lock.unlock();
    auto reply = http::post(url_, headers_, body, timeout_);
    lock.lock();
    ++counts_.requests;
    bool sent = reply && reply->status >= 200 && reply->status < 300;
    bool refused = reply && reply->status >= 400 && reply->status < 500 && reply->status != 429;
    if (sent || refused) {
      if (!queue_.empty() && queue_.front().seq == seq) {  // (still there: not dropped meanwhile)
        queue_.pop_front();
        size_t rejected = sent && rejected_ ? std::min(rejected_(*reply), items) : 0;
        counts_.sent += sent ? items - rejected : 0;
        counts_.refused += sent ? rejected : items;
        if (sent) counts_.bytes += body.size();
        if (rejected > 0) counts_.why = fmt::format("the receiver rejected {} of them (partial success)", rejected);
      }
      if (refused) {
        std::string first = reply->body.substr(0, std::min(reply->body.find('\n'), size_t{200}));
        counts_.why = fmt::format("the receiver refused them: {} {}", reply->status, printable(first));
      }
      backoff = std::chrono::milliseconds(100);
      continue;
    }
    ++counts_.retries;
    counts_.why = reply ? fmt::format("the receiver answered {}", reply->status) : reply.error().message;
    auto wait = backoff;
    if (reply && reply->retry_after) {
      wait = std::chrono::milliseconds(static_cast<long>(std::min(*reply->retry_after, 60.0) * 1000));
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    // (The end may come meanwhile: then its deadline bounds the wait.)
    auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      auto limit = closing_ ? std::min(until, deadline_) : until;
      if (std::chrono::steady_clock::now() >= limit) break;
      cv_.wait_until(lock, limit);
    }
    if (over()) return;
  }
}

}  // namespace pm
