// SPDX-License-Identifier: Apache-2.0
// Prometheus remote write (protocol 1.0): at each interval close the sink encodes the series
// /metrics would show (the same names, labels and values, with the interval's timestamp) as a
// protobuf WriteRequest, compresses it with snappy and queues it; a thread of its own POSTs the
// queue in order to the receiver (Prometheus with --web.enable-remote-write-receiver, an agent,
// Grafana Alloy, Mimir...). So a slow or absent receiver never delays a tick.
//
// Delivery as the protocol asks (sinks/pusher.h): 429 and 5xx retried in order with backoff and
// Retry-After, another 4xx dropped, a bounded queue. At the end, what is queued gets up to
// flush_timeout; what was not delivered is counted and said.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinks/http_client.h"
#include "sinks/prometheus.h"

namespace pm {

struct RemoteWriteOptions {
  http::Url url;
  // Labels every series carries (job, instance, run, and the user's), in addition to its own;
  // a series' own label of the same name wins.
  std::vector<std::pair<std::string, std::string>> labels;
  std::chrono::milliseconds flush_timeout{2000};
  std::chrono::milliseconds request_timeout{10000};
};

class RemoteWriteSink : public Sink {
 public:
  static std::unique_ptr<RemoteWriteSink> create(RemoteWriteOptions options);
  // The session's self metrics for the next request (as PrometheusSink::session).
  virtual void session(const SessionStatus& status) = 0;
  // Starts the sending thread (after `run` has forked the command, as PrometheusSink::serve).
  virtual Status start() = 0;
  // What it pushed so far (the session's self metrics).
  [[nodiscard]] virtual SessionStatus::Export counts() const = 0;
};

// One interval's series as a WriteRequest (uncompressed protobuf), for the sink and tests.
// Returns the number of samples in it.
size_t encode_write_request(std::string& out, const IntervalRecord* rec, const SessionStatus& status,
                            const std::vector<std::pair<std::string, std::string>>& labels, int64_t timestamp_ms);

}  // namespace pm
