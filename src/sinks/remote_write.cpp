// SPDX-License-Identifier: Apache-2.0
#include "sinks/remote_write.h"

#include "sinks/protobuf_wire.h"
#include "sinks/pusher.h"

#include <snappy-c.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "core/outside_text.h"
#include "core/text.h"
#include "core/version.h"

namespace pm {
namespace {

using wire::bytes_field;
using wire::key;
using wire::varint;

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
    wire::double_field(label_, 1, value);
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

class HttpRemoteWriteSink final : public RemoteWriteSink {
 public:
  explicit HttpRemoteWriteSink(RemoteWriteOptions o)
      : opt_(std::move(o)),
        pusher_(opt_.url,
                {{"Content-Type", "application/x-protobuf"},
                 {"Content-Encoding", "snappy"},
                 {"X-Prometheus-Remote-Write-Version", "0.1.0"},
                 {"User-Agent", std::string("perf-monitor/") + PERF_MONITOR_VERSION}},
                opt_.request_timeout) {}

  Status start() override { return pusher_.start(); }
  [[nodiscard]] SessionStatus::Export counts() const override { return pusher_.export_counts("remote_write"); }
  void session(const SessionStatus& status) override { status_ = status; }
  void unavailable(const std::vector<Unavailable>& /*list*/) override {}
  void interval(const IntervalRecord& rec) override {
    int64_t ts = std::chrono::duration_cast<std::chrono::milliseconds>(rec.timestamp.time_since_epoch()).count();
    std::string raw;
    raw.reserve(last_raw_ + last_raw_ / 8);
    size_t n = encode_write_request(raw, &rec, status_, opt_.labels, ts);
    last_raw_ = raw.size();
    std::string body;
    size_t max = snappy_max_compressed_length(raw.size());
    body.resize(max);
    if (snappy_compress(raw.data(), raw.size(), body.data(), &max) != SNAPPY_OK) return;
    body.resize(max);
    pusher_.push(std::move(body), n);
  }
  void summary(const SummaryRecord& /*rec*/, const RunInfo& /*info*/, const std::vector<Unavailable>& /*list*/) override {
    pusher_.finish(opt_.flush_timeout);
    Pusher::Counts c = pusher_.counts();
    size_t lost = c.dropped + c.refused + c.left;
    if (lost > 0) {
      std::fprintf(stderr, "perf-monitor: remote write to %s: %zu of %zu samples not delivered (%s)\n",
                   printable(opt_.url.text).c_str(), lost, c.queued,
                   c.left > 0 ? "the receiver did not take them before the end" : c.why.c_str());
    }
  }

 private:
  RemoteWriteOptions opt_;
  SessionStatus status_;  // event loop thread only
  size_t last_raw_ = 0;
  Pusher pusher_;
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
