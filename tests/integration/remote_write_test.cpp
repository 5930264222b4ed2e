// SPDX-License-Identifier: Apache-2.0
// Prometheus remote write (--remote-write): into a real Prometheus server (Debian's, with its
// remote-write receiver on), whose PromQL answers must be perf-monitor's JSON figures for the
// same intervals; and delivery against a receiver of the test's own that answers 503 with
// Retry-After, 400, or is not there at all.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"
#include "integration/prom_harness.h"

namespace pm::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Every sample of a series in Prometheus, oldest first: the range query's values.
std::vector<double> stored(PrometheusServer& server, const std::string& selector, std::string* error) {
  nlohmann::json data = server.query(selector + "[1h]", std::nullopt, error);
  std::vector<double> out;
  if (data.is_null() || !data.contains("result") || data["result"].size() != 1) return out;
  for (const auto& v : data["result"][0]["values"]) out.push_back(std::stod(v[1].get<std::string>()));
  return out;
}

TEST(RemoteWrite, RunPushesToARealPrometheusWhatItsJsonSays) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the eBPF sources";
  if (std::string why = PrometheusServer::missing(); !why.empty()) GTEST_SKIP() << why;
  PrometheusServer server({});
  ASSERT_TRUE(server.wait_ready(seconds(60))) << server.log();
  std::string run = "rw-" + std::to_string(::getpid());
  std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/api/v1/write";
  Outcome o = run_pm({"run", "--format", "json", "-I", "500ms", "--remote-write", url, "--remote-write-label",
                      "run=" + run, "--", PM_WORKLOAD, "spin", "2500"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.err.find("not delivered"), std::string::npos) << o.err;
  size_t intervals = intervals_of(o).size();
  ASSERT_GE(intervals, 4u);
  // Counters (running totals) and a histogram's count, interval by interval.
  struct Check {
    std::string series;
    std::vector<std::string> json;
  };
  for (const Check& c : {Check{"perf_monitor_process_tree_cpu_user_seconds_total", {"process_tree", "cpu_user_seconds"}},
                         Check{"perf_monitor_process_tree_minor_faults_total", {"process_tree", "minor_faults"}},
                         Check{"perf_monitor_scheduler_runq_latency_seconds_count", {"scheduler", "runq_latency_seconds", "count"}}}) {
    std::vector<double> want = cumulative(o, c.json);
    std::string error;
    std::string selector = c.series + "{run=\"" + run + "\",job=\"perf-monitor\"}";
    std::vector<double> got = stored(server, selector, &error);
    ASSERT_EQ(got.size(), want.size()) << selector << " " << error;
    // (The JSON writes seconds to the microsecond: its running sum is off by up to that a step.)
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 0.5e-6 * static_cast<double>(i + 1) + 1e-12 * std::fabs(want[i]))
          << selector << " interval " << i;
    }
  }
  // Its own account of the push, in the pushed series: samples sent, none refused or dropped.
  {
    std::string error;
    std::vector<double> sent = stored(server, "perf_monitor_self_export_items_total{exporter=\"remote_write\",outcome=\"sent\",run=\"" + run + "\"}", &error);
    ASSERT_FALSE(sent.empty()) << error;
    EXPECT_GT(sent.back(), 0);
    std::vector<double> refused = stored(server, "perf_monitor_self_export_items_total{exporter=\"remote_write\",outcome=\"refused\",run=\"" + run + "\"}", &error);
    ASSERT_FALSE(refused.empty()) << error;
    EXPECT_EQ(refused.back(), 0);
  }
  // Nothing the server refused: no write request answered but 2xx, no sample out of order.
  std::string error;
  nlohmann::json bad = server.query(R"(sum(prometheus_http_requests_total{handler="/api/v1/write",code!~"2.."}))",
                                    std::nullopt, &error);
  EXPECT_TRUE(bad.is_null() || bad["result"].empty() || bad["result"][0]["value"][1] == "0") << bad.dump();
  nlohmann::json ooo = server.query("prometheus_tsdb_out_of_order_samples_total", std::nullopt, &error);
  ASSERT_FALSE(ooo.is_null()) << error;
  for (const auto& r : ooo["result"]) EXPECT_EQ(r["value"][1], "0") << ooo.dump();
}

TEST(RemoteWrite, LiveModePushesToARealPrometheusWhatItsJsonSays) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the eBPF sources";
  if (std::string why = PrometheusServer::missing(); !why.empty()) GTEST_SKIP() << why;
  PrometheusServer server({});
  ASSERT_TRUE(server.wait_ready(seconds(60))) << server.log();
  std::string run = "live-" + std::to_string(::getpid());
  std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/api/v1/write";
  Outcome o = run_pm({"--format", "json", "-I", "500ms", "--duration", "3s", "--remote-write", url,
                      "--remote-write-label", "instance=" + run});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  ASSERT_GE(intervals_of(o).size(), 4u);
  for (std::string cpu : {"0", "1"}) {
    std::vector<double> want = cumulative(o, {"scheduler", "context_switches", cpu});
    if (want.empty()) continue;  // (a one-CPU machine)
    std::string error;
    std::string selector = "perf_monitor_scheduler_context_switches_total{instance=\"" + run + "\",cpu=\"" + cpu + "\"}";
    std::vector<double> got = stored(server, selector, &error);
    ASSERT_EQ(got.size(), want.size()) << selector << " " << error;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << selector << " interval " << i;
  }
}

// A receiver of the test's own: answers each POST as `answer` says (by how long it has been
// listening), and counts the requests.
class Receiver {
 public:
  using Answer = std::function<std::string(double seconds_since_start)>;
  explicit Receiver(Answer answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    start_ = std::chrono::steady_clock::now();
    thread_ = std::thread([this] { serve(); });
  }
  ~Receiver() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  [[nodiscard]] int port() const { return port_; }
  std::atomic<int> requests{0}, accepted{0};

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      // The head, then Content-Length bytes of body.
      std::string got;
      char buf[65536];
      size_t need = std::string::npos;
      while (need == std::string::npos || got.size() < need) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
        size_t end = got.find("\r\n\r\n");
        size_t cl = got.find("Content-Length: ");
        if (end != std::string::npos && cl != std::string::npos && need == std::string::npos) {
          need = end + 4 + std::stoul(got.substr(cl + 16));
        }
      }
      ++requests;
      std::string status = answer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
      if (status.rfind("204", 0) == 0) ++accepted;
      std::string reply = "HTTP/1.1 " + status + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  Answer answer_;
  int fd_ = -1, port_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string url_of(int port) { return "http://127.0.0.1:" + std::to_string(port) + "/api/v1/write"; }

TEST(RemoteWrite, A503WithRetryAfterIsRetriedAsToldAndNothingIsLost) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the eBPF sources";
  Receiver r([](double t) { return t < 3 ? std::string("503 Service Unavailable\r\nRetry-After: 1") : "204 No Content"; });
  Outcome o = run_pm({"run", "--format", "json", "-I", "500ms", "--remote-write", url_of(r.port()), "--", PM_WORKLOAD,
                      "spin", "5000"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  size_t intervals = intervals_of(o).size();
  EXPECT_EQ(o.err.find("not delivered"), std::string::npos) << o.err;
  EXPECT_EQ(static_cast<size_t>(r.accepted.load()), intervals) << "every interval delivered, once";
  // While it answered 503 (3 s), one try a second: no storm.
  EXPECT_LE(r.requests.load() - r.accepted.load(), 5) << r.requests.load() << " requests";
}

TEST(RemoteWrite, A400IsDroppedNotRetriedAndSaid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the eBPF sources";
  Receiver r([](double) { return std::string("400 Bad Request"); });
  Outcome o = run_pm({"run", "--format", "json", "-I", "500ms", "--remote-write", url_of(r.port()), "--", PM_WORKLOAD,
                      "spin", "2000"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(static_cast<size_t>(r.requests.load()), intervals_of(o).size()) << "one request per interval, no retry";
  EXPECT_NE(o.err.find("not delivered (the receiver refused them: 400"), std::string::npos) << o.err;
}

TEST(RemoteWrite, AReceiverThatIsNotThereDoesNotHoldTheRunAndIsSaid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the eBPF sources";
  int port = free_port();  // nothing listens there
  // The end is timed from the command's own end (its last act writes the time), so that a slow
  // start on a loaded machine does not count.
  std::string ended = temp_base() + "command.end";
  Outcome o = run_pm({"run", "--format", "json", "--remote-write", url_of(port), "--", "sh", "-c",
                      std::string(PM_WORKLOAD) + " spin 1500; date +%s.%N > " + ended});
  double exited = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  double command_ended = 0;
  std::ifstream(ended) >> command_ended;
  ASSERT_EQ(o.exit_code, 0) << o.err;
  ASSERT_GT(command_ended, 0) << "the command wrote when it ended";
  ASSERT_FALSE(o.summary.is_null()) << "the summary is written";
  EXPECT_NE(o.err.find("samples not delivered"), std::string::npos) << o.err;
  EXPECT_LT(exited - command_ended, 2.0 + 2.0) << "the end waits at most the flush's 2 s for the receiver";
}

TEST(RemoteWrite, ABadUrlOrLabelIsAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--remote-write", "https://example.com/api/v1/write", "--duration", "1s"},
        std::vector<std::string>{"--remote-write", "http://127.0.0.1:99999/x", "--duration", "1s"},
        std::vector<std::string>{"--remote-write", "http://127.0.0.1:9/x", "--remote-write-label", "__name__=x",
                                 "--duration", "1s"},
        std::vector<std::string>{"--remote-write-label", "a=b", "--duration", "1s"}}) {
    Outcome o = run_pm(args);
    EXPECT_EQ(o.exit_code, 2) << o.err;
    EXPECT_NE(o.err.find("remote-write"), std::string::npos) << o.err;
  }
}

}  // namespace
}  // namespace pm::test
