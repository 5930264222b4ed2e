// SPDX-License-Identifier: Apache-2.0
// What the Prometheus tests need besides perf-monitor: a minimal HTTP client, free ports, the
// exposition format read back, and a real Prometheus server (Debian's /usr/bin/prometheus).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "integration/harness.h"

namespace pm::test {

struct HttpResponse {
  int status = 0;  // 0: no response (error says why)
  std::string headers, body, error;
};

// One GET over a new connection (HTTP/1.0: the server closes when done).
HttpResponse http_get(int port, const std::string& target, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                      const std::string& host = "127.0.0.1");
// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice of an ephemeral port).
int free_port();
std::string url_encode(const std::string& s);

// The samples of an exposition: "name{labels}" as written -> value.
std::map<std::string, double> parse_exposition(const std::string& text);

// The scrape of perf-monitor's /metrics once it holds an interval's metrics (a line starting
// with `wanted`), polling until `timeout`. Empty when it never did.
std::string scrape_when_ready(int port, const std::string& wanted,
                              std::chrono::milliseconds timeout = std::chrono::seconds(15));

// Runs `promtool check metrics` on text; returns its exit status, output in *report.
int promtool_check(const std::string& text, std::string* report);
// What breaks perf-monitor's naming rules in an exposition, one line each (empty: nothing):
// a counter without exactly one `total` (its `_total` suffix), a gauge or histogram ending in
// `_total`, more than one unit word or a unit word not last, a label encoded in a name (`per_cpu`,
// `cpu0`, a value of a breakdown label the family carries: `..._read_bytes` beside `op="read"`),
// and one concept under two names (the same name after the family, in two families that measure
// the same subject: the system, the target's tree, probed calls, NUMA nodes, cgroups, process
// groups, perf-monitor itself).
std::vector<std::string> naming_problems(const std::string& exposition);

// The interval records of a run (its JSON lines).
std::vector<const nlohmann::json*> intervals_of(const Outcome& o);
// Running totals of a counter as Prometheus should see them: the sums of the JSON interval
// increases up to each interval (both start when perf-monitor first read the counter).
std::vector<double> cumulative(const Outcome& o, const std::vector<std::string>& path);

// A real Prometheus server on 127.0.0.1 with its own configuration and storage in a scratch
// directory, scraping the given perf-monitor ports every second, and taking remote writes at
// /api/v1/write. Stopped (SIGTERM) and its directory removed on destruction.
class PrometheusServer {
 public:
  // Why no server can be run here, or empty.
  static std::string missing();
  explicit PrometheusServer(const std::vector<int>& target_ports);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // Polls /-/ready until it answers 200.
  bool wait_ready(std::chrono::seconds timeout);
  // /api/v1/query: the "data" object of the answer (null on failure, *error says why).
  nlohmann::json query(const std::string& promql, std::optional<double> time = {}, std::string* error = nullptr);
  // Polls an instant query until pred(data) holds; returns the last data.
  template <typename Pred>
  nlohmann::json wait_for(const std::string& promql, Pred pred, std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    nlohmann::json data;
    for (;;) {
      data = query(promql);
      if (!data.is_null() && pred(data)) return data;
      if (std::chrono::steady_clock::now() > deadline) return data;
      poll_pause();
    }
  }
  [[nodiscard]] std::string log() const;
  [[nodiscard]] int port() const { return port_; }

 private:
  static void poll_pause();
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// The value of a sample of an instant vector ("value": [time, "text"]).
double sample_value(const nlohmann::json& sample);

}  // namespace pm::test
