// SPDX-License-Identifier: Apache-2.0
#include "sinks/remote_write.h"

#include <signal.h>
#include <snappy-c.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/outside_text.h"
#include "core/text.h"
#include "core/version.h"

namespace pm {
namespace {

// Protocol buffers' wire format, the few pieces a WriteRequest needs.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void key(std::string& out, uint32_t field, uint32_t wire) { varint(out, (uint64_t{field} << 3) | wire); }
void bytes_field(std::string& out, uint32_t field, std::string_view b) {
  key(out, field, 2);
  varint(out, b.size());
  out.append(b);
}

// Each sample of the exposition as a TimeSeries of one sample:
//   WriteRequest { repeated TimeSeries timeseries = 1; }
//   TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
//   Label { string name = 1; string value = 2; }   Sample { double value = 1; int64 timestamp = 2; }
// Labels sorted by name, __name__ among them, as the protocol requires; values valid UTF-8
// with no control character (as the text exposition has them).
class Encoder final : public ExpositionWriter {
 public:
  Encoder(std::string& out, const std::vector<std::pair<std::string, std::string>>& external, int64_t ts)
      : out_(out), external_(external), ts_(ts) {}
  void header(std::string_view /*name*/, std::string_view /*help*/, std::string_view /*type*/) override {}
  void sample(std::string_view name, std::string_view suffix, const Labels& labels, double value,
              std::string_view extra_key, std::string_view extra_value) override {
    labels_.clear();
    std::string n(name);
    n += suffix;
    labels_.emplace_back("__name__", std::move(n));
    for (const auto& [k, v] : labels) add(k, v);
    if (!extra_key.empty()) add(extra_key, extra_value);
    for (const auto& [k, v] : external_) {
      bool own = std::any_of(labels_.begin(), labels_.end(), [&](const auto& l) { return l.first == k; });
      if (!own) add(k, v);
    }
    std::sort(labels_.begin(), labels_.end());
    series_.clear();
    for (const auto& [k, v] : labels_) {
      label_.clear();
      bytes_field(label_, 1, k);
      bytes_field(label_, 2, v);
      bytes_field(series_, 1, label_);
    }
    label_.clear();
    key(label_, 1, 1);
    char raw[8];
    std::memcpy(raw, &value, 8);  // little-endian IEEE 754, as fixed64 wants (x86-64, arm64)
    label_.append(raw, 8);
    key(label_, 2, 0);
    varint(label_, static_cast<uint64_t>(ts_));
    bytes_field(series_, 2, label_);
    bytes_field(out_, 1, series_);
    ++samples_;
  }
  [[nodiscard]] size_t samples() const { return samples_; }

 private:
  // (An empty value is no label, as in the text format: a receiver may refuse it.)
  void add(std::string_view k, std::string_view v) {
    if (v.empty()) return;
    std::string name;
    append_name(name, k);
    labels_.emplace_back(std::move(name), clean_utf8(v));
  }
  std::string& out_;
  const std::vector<std::pair<std::string, std::string>>& external_;
  int64_t ts_;
  std::vector<std::pair<std::string, std::string>> labels_;
  std::string series_, label_;
  size_t samples_ = 0;
};

struct Batch {
  std::string body;  // snappy-compressed WriteRequest
  size_t samples = 0;
  uint64_t seq = 0;
};

class HttpRemoteWriteSink final : public RemoteWriteSink {
 public:
  explicit HttpRemoteWriteSink(RemoteWriteOptions o) : opt_(std::move(o)) {}
  HttpRemoteWriteSink(const HttpRemoteWriteSink&) = delete;
  HttpRemoteWriteSink& operator=(const HttpRemoteWriteSink&) = delete;
  ~HttpRemoteWriteSink() override { stop(std::chrono::milliseconds(0)); }

  Status start() override {
    // The thread blocks every signal: they stay with the event loop (as the HTTP server's).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      thread_ = std::thread([this] { send_loop(); });
    } catch (const std::system_error& e) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      return make_error(Errc::kUnavailable, std::string("remote write: no thread: ") + e.what());
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return {};
  }
  void session(const SessionStatus& status) override { status_ = status; }
  void unavailable(const std::vector<Unavailable>& /*list*/) override {}
  void interval(const IntervalRecord& rec) override {
    int64_t ts = std::chrono::duration_cast<std::chrono::milliseconds>(rec.timestamp.time_since_epoch()).count();
    std::string raw;
    raw.reserve(last_raw_ + last_raw_ / 8);
    size_t n = encode_write_request(raw, &rec, status_, opt_.labels, ts);
    n += encode_self(raw, ts);
    last_raw_ = raw.size();
    Batch b;
    b.samples = n;
    size_t max = snappy_max_compressed_length(raw.size());
    b.body.resize(max);
    if (snappy_compress(raw.data(), raw.size(), b.body.data(), &max) != SNAPPY_OK) {
      std::lock_guard<std::mutex> lock(mu_);
      dropped_ += n;
      return;
    }
    b.body.resize(max);
    std::lock_guard<std::mutex> lock(mu_);
    b.seq = ++seq_;
    queued_total_ += n;
    if (queue_.size() >= kMaxQueued) {
      dropped_ += queue_.front().samples;
      queue_.pop_front();
      why_ = "the queue was full (the receiver was too slow or down)";
    }
    queue_.push_back(std::move(b));
    cv_.notify_all();
  }
  void summary(const SummaryRecord& /*rec*/, const RunInfo& /*info*/, const std::vector<Unavailable>& /*list*/) override {
    stop(opt_.flush_timeout);
    std::lock_guard<std::mutex> lock(mu_);
    size_t left = 0;
    for (const Batch& b : queue_) left += b.samples;
    size_t lost = dropped_ + left + failed_;
    if (lost > 0) {
      std::fprintf(stderr, "perf-monitor: remote write to %s: %zu of %zu samples not delivered (%s)\n",
                   printable(opt_.url.text).c_str(), lost, queued_total_,
                   left > 0 ? "the receiver did not take them before the end" : why_.c_str());
    }
  }

 private:
  void stop(std::chrono::milliseconds grace) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      closing_ = true;
      deadline_ = std::chrono::steady_clock::now() + grace;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  void send_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    auto backoff = std::chrono::milliseconds(100);
    for (;;) {
      cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty() || (closing_ && std::chrono::steady_clock::now() >= deadline_)) return;
      std::string body = queue_.front().body;  // (a copy: the queue may drop its oldest meanwhile)
      size_t samples = queue_.front().samples;
      uint64_t seq = queue_.front().seq;
      lock.unlock();
      auto timeout = opt_.request_timeout;
      auto reply = http::post(opt_.url,
                              {{"Content-Type", "application/x-protobuf"},
                               {"Content-Encoding", "snappy"},
                               {"X-Prometheus-Remote-Write-Version", "0.1.0"},
                               {"User-Agent", std::string("perf-monitor/") + PERF_MONITOR_VERSION}},
                              body, timeout);
      lock.lock();
      ++requests_;
      bool sent = reply && reply->status >= 200 && reply->status < 300;
      bool refused = reply && reply->status >= 400 && reply->status < 500 && reply->status != 429;
      if (sent || refused) {
        // Done with it either way (if it is still there: the queue may have dropped it).
        if (!queue_.empty() && queue_.front().seq == seq) {
          queue_.pop_front();
          (sent ? sent_ : failed_) += samples;
          if (sent) bytes_ += body.size();
        }
        if (refused) why_ = fmt::format("the receiver refused them: {} {}", reply->status, printable(first_line(reply->body)));
        backoff = std::chrono::milliseconds(100);
        continue;
      }
      // Retry: after the receiver's Retry-After, or the backoff; never past the end's deadline.
      ++retries_;
      why_ = reply ? fmt::format("the receiver answered {}", reply->status) : reply.error().message;
      auto wait = backoff;
      if (reply && reply->retry_after) {
        wait = std::chrono::milliseconds(static_cast<long>(std::min(*reply->retry_after, 60.0) * 1000));
      }
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
      auto until = std::chrono::steady_clock::now() + wait;
      if (closing_) until = std::min(until, deadline_);
      cv_.wait_until(lock, until, [&] { return closing_ && std::chrono::steady_clock::now() >= deadline_; });
      if (closing_ && std::chrono::steady_clock::now() >= deadline_) return;
    }
  }

  // The sink's own figures so far, as series of the request (not on /metrics: they are this
  // sink's): samples by outcome, requests, retries, bytes sent.
  size_t encode_self(std::string& raw, int64_t ts) {
    size_t sent, refused, dropped, requests, retries, bytes;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent = sent_, refused = failed_, dropped = dropped_, requests = requests_, retries = retries_, bytes = bytes_;
    }
    Encoder e(raw, opt_.labels, ts);
    for (auto [outcome, v] : {std::pair{"sent", sent}, std::pair{"refused", refused}, std::pair{"dropped", dropped}}) {
      e.sample("perf_monitor_self_remote_write_samples_total", "", Labels{{"outcome", outcome}}, static_cast<double>(v), {}, {});
    }
    const Labels none;
    e.sample("perf_monitor_self_remote_write_requests_total", "", none, static_cast<double>(requests), {}, {});
    e.sample("perf_monitor_self_remote_write_retries_total", "", none, static_cast<double>(retries), {}, {});
    e.sample("perf_monitor_self_remote_write_sent_bytes_total", "", none, static_cast<double>(bytes), {}, {});
    return e.samples();
  }

  static std::string first_line(const std::string& s) { return s.substr(0, std::min(s.find('\n'), size_t{200})); }

  RemoteWriteOptions opt_;
  SessionStatus status_;  // event loop thread only
  size_t last_raw_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  bool closing_ = false;
  std::chrono::steady_clock::time_point deadline_;
  size_t queued_total_ = 0, sent_ = 0, failed_ = 0, dropped_ = 0, requests_ = 0, retries_ = 0, bytes_ = 0;
  uint64_t seq_ = 0;
  std::string why_;
  std::thread thread_;
};

}  // namespace

size_t encode_write_request(std::string& out, const IntervalRecord* rec, const SessionStatus& status,
                            const std::vector<std::pair<std::string, std::string>>& labels, int64_t timestamp_ms) {
  Encoder e(out, labels, timestamp_ms);
  write_exposition(e, rec, status, 0);
  return e.samples();
}

std::unique_ptr<RemoteWriteSink> RemoteWriteSink::create(RemoteWriteOptions options) {
  return std::make_unique<HttpRemoteWriteSink>(std::move(options));
}

}  // namespace pm
