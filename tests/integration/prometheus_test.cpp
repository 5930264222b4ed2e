// SPDX-License-Identifier: Apache-2.0
// Prometheus export, end to end: the real binary serving /metrics, checked by Prometheus' own
// tools — promtool's linter, and a real Prometheus server that scrapes it every second and is
// asked through its HTTP API. Values are compared with perf-monitor's own JSON of the same run
// and with independent truths (the clock, the kernel's socket table, the workload's shape).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"
#include "integration/prom_harness.h"

namespace pm::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The index of the running total v among sums (within tol), or -1.
int index_of(const std::vector<double>& sums, double v, double tol = 0) {
  for (size_t i = 0; i < sums.size(); ++i) {
    if (std::fabs(sums[i] - v) <= tol) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::string> pm_args(int port, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--prometheus", "127.0.0.1:" + std::to_string(port)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Every histogram of a scrape is well formed: per series, `le` buckets cumulative, +Inf equal
// to _count. Returns how many histogram series there were.
int check_histograms(const std::map<std::string, double>& samples) {
  struct Series {
    std::vector<std::pair<double, double>> buckets;  // le, cumulative count
    double inf = -1;
  };
  std::map<std::string, Series> series;  // name{other labels}
  for (const auto& [key, value] : samples) {
    size_t b = key.find("_bucket{");
    if (b == std::string::npos) continue;
    size_t le = key.find("le=\"", b);
    if (le == std::string::npos) {
      ADD_FAILURE() << "bucket without le: " << key;
      continue;
    }
    size_t le_end = key.find('"', le + 4);
    std::string bound = key.substr(le + 4, le_end - le - 4);
    std::string rest = key.substr(0, le) + key.substr(le_end + 1);
    Series& s = series[key.substr(0, b) + "|" + rest.substr(b)];
    if (bound == "+Inf") {
      s.inf = value;
    } else {
      s.buckets.emplace_back(std::strtod(bound.c_str(), nullptr), value);
    }
  }
  for (auto& [name, s] : series) {
    std::sort(s.buckets.begin(), s.buckets.end());
    EXPECT_GE(s.inf, 0) << name << ": no +Inf bucket";
    for (size_t i = 1; i < s.buckets.size(); ++i) EXPECT_LE(s.buckets[i - 1].second, s.buckets[i].second) << name;
    if (!s.buckets.empty()) {
      EXPECT_LE(s.buckets.back().second, s.inf) << name;
    }
    // _count carries the same labels as the +Inf bucket, without le.
    std::string metric = name.substr(0, name.find('|'));
    std::string labels = name.substr(name.find('|') + 1 + std::string("_bucket").size());
    if (labels == "{}") labels.clear();
    if (labels.size() > 1 && labels[labels.size() - 2] == ',') labels.erase(labels.size() - 2, 1);
    auto count = samples.find(metric + "_count" + labels);
    EXPECT_NE(count, samples.end()) << metric << "_count" << labels;
    if (count != samples.end()) {
      EXPECT_EQ(count->second, s.inf) << name;
    }
  }
  return static_cast<int>(series.size());
}

// The local address of the TCP socket listening on `port`, as the kernel shows it in
// /proc/net/tcp (hex, network order: 0100007F is 127.0.0.1), or empty.
std::string listening_address(int port) {
  std::ifstream in("/proc/net/tcp");
  char want[8];
  std::snprintf(want, sizeof want, "%04X", port);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string sl, local, remote, state;
    f >> sl >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 4) == want) {
      return local.substr(0, local.find(':'));
    }
  }
  return {};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every `perf_monitor_…` name docs/metrics.md gives, with {a,b} alternatives expanded.
std::set<std::string> documented_names() {
  std::set<std::string> names;
  std::string doc = read_file(std::string(PM_SOURCE_DIR) + "/docs/metrics.md");
  std::vector<std::string> pending;
  for (size_t at = doc.find("`perf_monitor_"); at != std::string::npos; at = doc.find("`perf_monitor_", at + 1)) {
    size_t end = doc.find('`', at + 1);
    pending.push_back(doc.substr(at + 1, end - at - 1));
  }
  while (!pending.empty()) {
    std::string n = pending.back();
    pending.pop_back();
    size_t open = n.find('{');
    if (open == std::string::npos) {
      names.insert(n);
      continue;
    }
    size_t close = n.find('}', open);
    std::string alts = n.substr(open + 1, close - open - 1);
    for (size_t from = 0;;) {
      size_t comma = alts.find(',', from);
      pending.push_back(n.substr(0, open) + alts.substr(from, comma - from) + n.substr(close + 1));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
  }
  return names;
}

// The metric names (TYPE lines) of an exposition that docs/metrics.md does not give. Counter
// events are documented by their pattern, perf_monitor_pmc_<event>_total.
std::vector<std::string> undocumented(const std::string& exposition) {
  std::set<std::string> docs = documented_names();
  std::vector<std::string> missing;
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::string name = line.substr(7, line.find(' ', 7) - 7);
    if (docs.count(name) == 0 && name.rfind("perf_monitor_pmc_", 0) != 0) missing.push_back(name);
  }
  return missing;
}

// The naming check itself, on the names perf-monitor 0.1.0 exported: each rule catches its case.
TEST(Prometheus, NamingCheckFlagsDuplicatesEncodedLabelsAndRepeatedSuffixes) {
  std::string old = R"(# TYPE perf_monitor_build_info gauge
perf_monitor_build_info{version="0.1.0",mode="system"} 1
# TYPE perf_monitor_sched_context_switches_total counter
perf_monitor_sched_context_switches_total 1
# TYPE perf_monitor_scheduler_context_switches_total counter
perf_monitor_scheduler_context_switches_total 1
# TYPE perf_monitor_pmc_task_clock_seconds_per_cpu_total counter
perf_monitor_pmc_task_clock_seconds_per_cpu_total{cpu="0"} 1
# TYPE perf_monitor_block_io_total_bytes_total counter
perf_monitor_block_io_total_bytes_total 1
# TYPE perf_monitor_block_io_read_bytes_total counter
perf_monitor_block_io_read_bytes_total 1
# TYPE perf_monitor_block_io_bio_bytes_total counter
perf_monitor_block_io_bio_bytes_total{device="vda",op="read"} 1
# TYPE perf_monitor_memory_used_bytes_total gauge
perf_monitor_memory_used_bytes_total 1
# TYPE perf_monitor_process_tree_context_switches_total counter
perf_monitor_process_tree_context_switches_total 1
)";
  std::vector<std::string> p = naming_problems(old);
  auto flagged = [&](const std::string& name, const std::string& why) {
    return std::any_of(p.begin(), p.end(), [&](const std::string& x) {
      return x.rfind(name + ":", 0) == 0 && x.find(why) != std::string::npos;
    });
  };
  std::string all;
  for (const auto& x : p) all += x + "\n";
  EXPECT_TRUE(flagged("perf_monitor_scheduler_context_switches_total", "same concept")) << all;
  EXPECT_TRUE(flagged("perf_monitor_pmc_task_clock_seconds_per_cpu_total", "label encoded")) << all;
  EXPECT_TRUE(flagged("perf_monitor_pmc_task_clock_seconds_per_cpu_total", "unit is not the last")) << all;
  EXPECT_TRUE(flagged("perf_monitor_block_io_total_bytes_total", "`total` once")) << all;
  EXPECT_TRUE(flagged("perf_monitor_block_io_read_bytes_total", "label value")) << all;
  EXPECT_TRUE(flagged("perf_monitor_memory_used_bytes_total", "only a counter")) << all;
  // The tree is another subject than the system: the same words there are no duplicate.
  EXPECT_FALSE(flagged("perf_monitor_process_tree_context_switches_total", "")) << all;
}

TEST(Prometheus, HelpShowsTheFlagWithAnExample) {
  Outcome o = run_pm({"--help"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("--prometheus ADDR:PORT"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("perf-monitor --prometheus 9464"), std::string::npos) << o.out;
}

TEST(Prometheus, PromtoolAcceptsALiveScrapeOfEveryFamily) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool (Debian package prometheus) not installed";
  int port = free_port();
  RunningPm pm(pm_args(port, {"--format", "json", "--interval", "300ms"}));
  // Two intervals in: counters have moved and the first-interval-only families are there.
  ASSERT_FALSE(scrape_when_ready(port, "perf_monitor_cpu_").empty()) << pm.err_so_far();
  std::this_thread::sleep_for(milliseconds(700));
  HttpResponse r = http_get(port, "/metrics");
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_NE(r.headers.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r.headers;
  Outcome o = pm.stop();
  ASSERT_EQ(o.exit_code, 0) << o.err;

  std::string report;
  EXPECT_EQ(promtool_check(r.body, &report), 0) << report;
  EXPECT_EQ(report, "");
  // One name per concept, labels as labels, one unit and `_total` once.
  EXPECT_EQ(naming_problems(r.body), std::vector<std::string>{}) << r.body;

  // Every family the JSON output has on this host is exported, and the derived ratios are
  // left to PromQL.
  std::set<std::string> families;
  for (const nlohmann::json* rec : intervals_of(o)) {
    for (const auto& [key, value] : rec->items()) {
      if (value.is_object()) families.insert(key);
    }
  }
  ASSERT_FALSE(families.empty());
  for (const std::string& f : families) {
    EXPECT_NE(r.body.find("\nperf_monitor_" + f + "_"), std::string::npos) << "family " << f << " not exported";
  }
  EXPECT_EQ(r.body.find("\nperf_monitor_cpu_utilisation"), std::string::npos);  // a ratio: rate() / rate()

  EXPECT_EQ(undocumented(r.body), std::vector<std::string>{}) << "add them to docs/metrics.md";
  auto samples = parse_exposition(r.body);
  check_histograms(samples);
  // Availability: what the summary says could not start is 0, what runs is 1.
  EXPECT_EQ(samples["perf_monitor_source_up{source=\"cpu\"}"], 1);
  EXPECT_EQ(samples["perf_monitor_source_up{source=\"memory\"}"], 1);
  for (const auto& [source, why] : o.summary["unavailable"].items()) {
    auto it = samples.find("perf_monitor_source_up{source=\"" + source + "\"}");
    ASSERT_NE(it, samples.end()) << source << " (" << why << ") has no perf_monitor_source_up";
    EXPECT_EQ(it->second, 0) << source;
  }
  EXPECT_EQ(samples["perf_monitor_build_info{version=\"" PM_VERSION "\",mode=\"system\"}"], 1);
  EXPECT_GE(samples["perf_monitor_self_scrapes_total"], 2);
  EXPECT_GT(samples["perf_monitor_self_samples_total"], 0);
}

TEST(Prometheus, ProbesAreExportedAsHistogramsPerFunction) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool (Debian package prometheus) not installed";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: attaching uprobes";
  // 30 requests of 100 ms each: scraped while they run.
  int port = free_port();
  const std::string shop = PM_SHOP;
  RunningPm run(pm_args(port, {"--interval", "300ms", "--output", "/dev/null", "run", "--probe",
                               shop + ":process_request:arg1", "--", shop, "--kind", "sleep", "--ms", "100",
                               "--requests", "30"}));
  std::string body = scrape_when_ready(port, "perf_monitor_probe_calls_total{function=\"shop::process_request\"} ");
  ASSERT_FALSE(body.empty()) << run.err_so_far();
  std::this_thread::sleep_for(milliseconds(700));  // some calls finished
  body = http_get(port, "/metrics").body;
  std::string report;
  EXPECT_EQ(promtool_check(body, &report), 0) << report;
  EXPECT_EQ(naming_problems(body), std::vector<std::string>{}) << body;
  EXPECT_EQ(undocumented(body), std::vector<std::string>{}) << "add them to docs/metrics.md";
  auto samples = parse_exposition(body);
  check_histograms(samples);
  // One scrape is one reading: the histogram counts exactly the calls, each call >= 100 ms,
  // and the annotated requests (USDT, attached by default) are the same requests.
  double calls = samples["perf_monitor_probe_calls_total{function=\"shop::process_request\"}"];
  EXPECT_GT(calls, 0) << body;
  EXPECT_LE(calls, 30);
  EXPECT_EQ(samples["perf_monitor_probe_latency_seconds_count{function=\"shop::process_request\"}"], calls);
  EXPECT_GE(samples["perf_monitor_probe_latency_seconds_sum{function=\"shop::process_request\"}"], 0.1 * calls);
  EXPECT_EQ(samples["perf_monitor_probe_latency_seconds_bucket{function=\"shop::process_request\",le=\"0.067108864\"}"],
            0);  // no call under 2^26 ns
  // (END runs just before process_request returns: a reading may fall in between.)
  EXPECT_NEAR(samples["perf_monitor_probe_calls_total{function=\"request\"}"], calls, 1);
  EXPECT_EQ(samples["perf_monitor_source_up{source=\"probe\"}"], 1);
  run.stop(SIGINT);
}

TEST(Prometheus, ServesTheTreeInRunAndAttach) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool (Debian package prometheus) not installed";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: /proc/PID/io of the tree's children";
  // run: a tree of 2 processes that sleep.
  int port = free_port();
  RunningPm run(pm_args(port, {"--interval", "300ms", "--output", "/dev/null", "run", "--", workload(), "sleepers",
                               "2", "2500"}));
  std::string body = scrape_when_ready(port, "perf_monitor_process_tree_processes ");
  ASSERT_FALSE(body.empty()) << run.err_so_far();
  auto samples = parse_exposition(body);
  EXPECT_EQ(samples["perf_monitor_process_tree_processes"], 2) << body;
  EXPECT_EQ(samples["perf_monitor_build_info{version=\"" PM_VERSION "\",mode=\"run\"}"], 1);
  EXPECT_EQ(samples["perf_monitor_source_up{source=\"process_tree\"}"], 1);
  std::string report;
  EXPECT_EQ(promtool_check(body, &report), 0) << report;
  EXPECT_EQ(undocumented(body), std::vector<std::string>{}) << "add them to docs/metrics.md";
  EXPECT_EQ(naming_problems(body), std::vector<std::string>{}) << body;
  check_histograms(samples);
  Outcome ro = run.stop(SIGINT);
  EXPECT_EQ(ro.exit_code, 128 + SIGINT) << ro.err;  // the command's status: SIGINT was passed on

  // attach: a tree of 3.
  pid_t child = ::fork();
  if (child == 0) {
    ::execl(workload().c_str(), "pm-workload", "sleepers", "3", "3000", nullptr);
    ::_exit(127);
  }
  std::this_thread::sleep_for(milliseconds(100));
  int aport = free_port();
  RunningPm attach(pm_args(aport, {"--interval", "300ms", "--output", "/dev/null", "attach", "--pid",
                                   std::to_string(child)}));
  body = scrape_when_ready(aport, "perf_monitor_process_tree_processes ");
  EXPECT_FALSE(body.empty()) << attach.err_so_far();
  samples = parse_exposition(body);
  EXPECT_EQ(samples["perf_monitor_process_tree_processes"], 3) << body;
  EXPECT_EQ(samples["perf_monitor_build_info{version=\"" PM_VERSION "\",mode=\"attach\"}"], 1);
  EXPECT_EQ(promtool_check(body, &report), 0) << report;
  EXPECT_EQ(naming_problems(body), std::vector<std::string>{}) << body;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(attach.stop().exit_code, 0);
}

TEST(Prometheus, ListensOnLoopbackUnlessAnotherAddressIsWritten) {
  int port = free_port();
  RunningPm a({"--prometheus", std::to_string(port), "--output", "/dev/null"});
  ASSERT_FALSE(scrape_when_ready(port, "perf_monitor_build_info").empty()) << a.err_so_far();
  EXPECT_EQ(listening_address(port), "0100007F");  // 127.0.0.1, in the kernel's own table
  // (Said on standard error as it starts serving: on a busy machine the scrape may come first.)
  EXPECT_TRUE(a.wait_for_err("Prometheus metrics at http://127.0.0.1:" + std::to_string(port) + "/metrics\n",
                             std::chrono::seconds(10)))
      << a.err_so_far();
  a.stop();

  int any = free_port();
  RunningPm b({"--prometheus", "0.0.0.0:" + std::to_string(any), "--output", "/dev/null"});
  ASSERT_FALSE(scrape_when_ready(any, "perf_monitor_build_info").empty()) << b.err_so_far();
  EXPECT_EQ(listening_address(any), "00000000");  // every interface: written out
  b.stop();
}

TEST(Prometheus, BusyPortIsAUsageError) {
  // Another program holds the port.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  std::string port = std::to_string(ntohs(sa.sin_port));
  Outcome o = run_pm({"--prometheus", port, "--duration", "5s"}, {.timeout = seconds(10)});
  ::close(fd);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("127.0.0.1:" + port), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("in use"), std::string::npos) << o.err;
  EXPECT_TRUE(o.out.empty()) << o.out;  // nothing started

  // Another perf-monitor holds it: the second must not share the port (SO_REUSEPORT would
  // let it, and the kernel would split scrapes between the two).
  int p2 = free_port();
  RunningPm first(pm_args(p2, {"--output", "/dev/null"}));
  ASSERT_FALSE(scrape_when_ready(p2, "perf_monitor_build_info").empty()) << first.err_so_far();
  Outcome second = run_pm(pm_args(p2, {"--duration", "5s"}), {.timeout = seconds(10)});
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_EQ(lines(second.err), 1u) << second.err;
  EXPECT_NE(second.err.find("in use"), std::string::npos) << second.err;
  first.stop();
}

TEST(Prometheus, BadAddressIsAUsageError) {
  struct Case {
    std::string arg, says;
  };
  for (const Case& c : {Case{"300.1.1.1:9464", "not a numeric IPv4 address"}, Case{"metrics.example:9464", "numeric"},
                        Case{"[::1]9464", "no ':PORT'"}, Case{"::1:9464", "brackets"}, Case{"9464x", "not a port"},
                        Case{":0", "between 1 and 65535"}, Case{"127.0.0.1:70000", "between 1 and 65535"}}) {
    Outcome o = run_pm({"--prometheus", c.arg, "--duration", "2s"});
    EXPECT_EQ(o.exit_code, 2) << c.arg;
    EXPECT_EQ(lines(o.err), 1u) << o.err;
    EXPECT_NE(o.err.find("--prometheus"), std::string::npos) << o.err;
    EXPECT_NE(o.err.find(c.says), std::string::npos) << o.err;
  }
  // Well formed, but not an address of this host (TEST-NET-1, never assigned).
  Outcome o = run_pm({"--prometheus", "192.0.2.1:" + std::to_string(free_port()), "--duration", "2s"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("192.0.2.1 is not an address of this host"), std::string::npos) << o.err;
  // The same in the configuration file names the file, line and column.
  std::string path = temp_base() + ".toml";
  std::ofstream(path) << "[prometheus]\nlisten = \"localhost:nine\"\n";
  Outcome f = run_pm({"--config", path, "--duration", "2s"});
  ::unlink(path.c_str());
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_EQ(lines(f.err), 1u) << f.err;
  EXPECT_NE(f.err.find(path + ":2:"), std::string::npos) << f.err;
  EXPECT_NE(f.err.find("[prometheus] listen"), std::string::npos) << f.err;
}

// Clients that connect and say nothing, send half a request, or ask and never read: the event
// loop must tick on as if they were not there.
TEST(Prometheus, SlowClientsDoNotStallSampling) {
  int port = free_port();
  RunningPm pm(pm_args(port, {"--format", "json", "--interval", "200ms"}));
  ASSERT_FALSE(scrape_when_ready(port, "perf_monitor_cpu_").empty()) << pm.err_so_far();

  std::vector<int> bad;
  auto connect_one = [&](int rcvbuf) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);  // before connect: the window
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    bad.push_back(fd);
    return fd;
  };
  for (int i = 0; i < 8; ++i) connect_one(0);  // silent: more than the server has workers
  for (int i = 0; i < 2; ++i) {
    int fd = connect_one(1024);  // asks, never reads, with a tiny receive window
    std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  }
  ::send(connect_one(0), "GET /metr", 9, MSG_NOSIGNAL);  // half a request line

  size_t before = lines(pm.out_so_far());
  std::this_thread::sleep_for(seconds(3));
  size_t during = lines(pm.out_so_far()) - before;
  for (int fd : bad) ::close(fd);

  // Served again once they are gone.
  HttpResponse r = http_get(port, "/metrics", seconds(5));
  EXPECT_EQ(r.status, 200) << r.error;
  Outcome o = pm.stop();
  ASSERT_EQ(o.exit_code, 0) << o.err;
  // 3 s of 200 ms intervals is 15 records; a loop stalled by a client would write few, and
  // the interval that spanned the stall would be long (interval_s is measured on the
  // monotonic clock). Slack for a loaded or sanitized build.
  EXPECT_GE(during, 12u);
  double longest = 0;
  for (const nlohmann::json* rec : intervals_of(o)) longest = std::max(longest, (*rec)["interval_s"].get<double>());
  EXPECT_LT(longest, 0.5);
}

// A real Prometheus scrapes perf-monitor every second; its answers agree with perf-monitor's
// own JSON of the same run, and with the clock.
TEST(Prometheus, ScrapedByARealPrometheus) {
  if (std::string why = PrometheusServer::missing(); !why.empty()) GTEST_SKIP() << why;
  int port = free_port();
  RunningPm pm(pm_args(port, {"--format", "json", "--interval", "1s"}));
  PrometheusServer prom({port});
  ASSERT_TRUE(prom.wait_ready(seconds(15))) << prom.log();
  std::string instance = "127.0.0.1:" + std::to_string(port);

  // Four scrapes after Prometheus found the target (its discovery takes ~5 s).
  std::string faults = "perf_monitor_memory_page_faults_total{instance=\"" + instance + "\"}";
  prom.wait_for(
      "count_over_time(" + faults + "[1m])",
      [](const nlohmann::json& d) { return !d["result"].empty() && sample_value(d["result"][0]) >= 4; }, seconds(30));

  nlohmann::json up = prom.query("up{job=\"perf-monitor\"}");
  ASSERT_EQ(up["result"].size(), 1u) << up.dump() << prom.log();
  EXPECT_EQ(sample_value(up["result"][0]), 1);

  // Raw samples of a counter, a clock-driven counter and a histogram's count. Where the
  // selector matches several series (CPU 0's time in each mode), their sum at each scrape: one
  // scrape gives every series the same timestamp.
  auto raw = [&](const std::string& selector) {
    std::vector<double> values;
    nlohmann::json d = prom.query(selector + "[1m]");
    if (d.is_null() || d["result"].empty()) return values;
    for (const auto& series : d["result"]) {
      size_t i = 0;
      for (const auto& v : series["values"]) {
        double x = std::strtod(v[1].get<std::string>().c_str(), nullptr);
        if (i < values.size()) {
          values[i] += x;
        } else {
          values.push_back(x);
        }
        ++i;
      }
    }
    return values;
  };
  std::vector<double> prom_faults = raw(faults);
  std::vector<double> prom_cpu = raw("perf_monitor_cpu_time_seconds_total{cpu=\"0\",instance=\"" + instance + "\"}");
  std::string runq = "perf_monitor_scheduler_runq_latency_seconds";
  std::vector<double> prom_runq = raw(runq + "_count{instance=\"" + instance + "\"}");
  nlohmann::json buckets = prom.query(runq + "_bucket{instance=\"" + instance + "\"}");
  nlohmann::json p99 = prom.query("histogram_quantile(0.99, " + runq + "_bucket{instance=\"" + instance + "\"})");
  Outcome o = pm.stop();
  ASSERT_EQ(o.exit_code, 0) << o.err;

  // A counter increasing.
  ASSERT_GE(prom_cpu.size(), 3u);
  for (size_t i = 1; i < prom_cpu.size(); ++i) EXPECT_LE(prom_cpu[i - 1], prom_cpu[i]);
  EXPECT_GT(prom_cpu.back(), prom_cpu.front());

  // Every value Prometheus stored is a running total of the JSON intervals: exactly, for an
  // integral count (both are the same sum, written in full); to the JSON's rounding (6
  // decimals per interval) for CPU seconds. And later scrapes saw later intervals.
  std::vector<double> json_faults = cumulative(o, {"memory", "page_faults"});
  ASSERT_GE(prom_faults.size(), 3u);
  int last = -1;
  for (double v : prom_faults) {
    int k = index_of(json_faults, v);
    EXPECT_GE(k, 0) << v << " is no running total of the JSON's memory.page_faults";
    EXPECT_GE(k, last);
    last = k;
  }
  std::vector<double> json_cpu;
  for (const char* mode : {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}) {
    std::vector<double> m = cumulative(o, {"cpu", "time_seconds", "0", mode});
    if (json_cpu.empty()) json_cpu.resize(m.size());
    for (size_t i = 0; i < m.size() && i < json_cpu.size(); ++i) json_cpu[i] += m[i];
  }
  std::vector<double> elapsed = cumulative(o, {"interval_s"});
  double v0 = 0, t0 = 0;
  for (double v : prom_cpu) {
    int k = index_of(json_cpu, v, 8e-6 * static_cast<double>(json_cpu.size()));
    ASSERT_GE(k, 0) << v << " is no running total of the JSON's cpu.time_seconds.0 (all modes)";
    // The truth: CPU 0's time (all modes) passes at one second per second. The kernel counts
    // it in 10 ms ticks: allow 2 ticks and 2 %. From the first scrape on: the first interval
    // begins at the start's reading of every source, whose time (its first reads, slow on a
    // loaded machine: 140 ms once) it spans beyond its interval_s.
    double t = elapsed[static_cast<size_t>(k)];
    if (&v == &prom_cpu.front()) {
      v0 = v;
      t0 = t;
      continue;
    }
    EXPECT_NEAR(v - v0, t - t0, 0.02 * (t - t0) + 0.02);
  }

  if (o.summary["unavailable"].contains("scheduler")) {
    GTEST_SKIP() << "no histogram to check: scheduler unavailable (" << o.summary["unavailable"]["scheduler"] << ")";
  }
  // A histogram with buckets: cumulative `le` series and +Inf, their count a running total of
  // the JSON's, and a quantile Prometheus can compute.
  ASSERT_GE(buckets["result"].size(), 10u) << buckets.dump();
  std::set<std::string> les;
  for (const auto& s : buckets["result"]) les.insert(s["metric"]["le"].get<std::string>());
  EXPECT_EQ(les.count("+Inf"), 1u);
  EXPECT_EQ(les.count("1e-06"), 1u);  // the first bound: 1 us, written as such
  std::vector<double> json_runq = cumulative(o, {"scheduler", "runq_latency_seconds", "count"});
  ASSERT_FALSE(prom_runq.empty());
  for (double v : prom_runq) EXPECT_GE(index_of(json_runq, v), 0) << v;
  ASSERT_FALSE(p99["result"].empty()) << p99.dump();
  double q = sample_value(p99["result"][0]);
  EXPECT_TRUE(std::isfinite(q) && q > 0) << p99.dump();
}

// Three perf-monitors (three hosts, as far as Prometheus can tell) scraped by one Prometheus:
// a fleet-wide sum.
TEST(Prometheus, ThreeInstancesSummedByOnePrometheus) {
  if (std::string why = PrometheusServer::missing(); !why.empty()) GTEST_SKIP() << why;
  std::vector<int> ports = {free_port(), free_port(), free_port()};
  std::vector<std::unique_ptr<RunningPm>> pms;
  for (int p : ports) pms.push_back(std::make_unique<RunningPm>(pm_args(p, {"--format", "json", "--interval", "1s"})));
  PrometheusServer prom(ports);
  ASSERT_TRUE(prom.wait_ready(seconds(15))) << prom.log();

  nlohmann::json up = prom.wait_for(
      "count(up{job=\"perf-monitor\"} == 1)",
      [](const nlohmann::json& d) { return !d["result"].empty() && sample_value(d["result"][0]) == 3; }, seconds(30));
  ASSERT_FALSE(up["result"].empty()) << prom.log();
  EXPECT_EQ(sample_value(up["result"][0]), 3);
  prom.wait_for(
      "min(count_over_time(perf_monitor_memory_page_faults_total[1m]))",
      [](const nlohmann::json& d) { return !d["result"].empty() && sample_value(d["result"][0]) >= 2; }, seconds(15));

  // At one evaluation time: the fleet's sum, and each instance's value.
  double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json sum = prom.query("sum(perf_monitor_memory_page_faults_total)", now);
  nlohmann::json each = prom.query("perf_monitor_memory_page_faults_total", now);
  nlohmann::json hosts = prom.query("count(count by (instance) (perf_monitor_build_info))", now);
  std::vector<Outcome> outs;
  for (auto& pm : pms) outs.push_back(pm->stop());

  ASSERT_EQ(sum["result"].size(), 1u) << sum.dump();
  ASSERT_EQ(each["result"].size(), 3u) << each.dump();
  EXPECT_EQ(sample_value(hosts["result"][0]), 3);
  double total = 0;
  for (const auto& s : each["result"]) {
    std::string instance = s["metric"]["instance"];
    int port = std::stoi(instance.substr(instance.find(':') + 1));
    size_t i = static_cast<size_t>(std::find(ports.begin(), ports.end(), port) - ports.begin());
    ASSERT_LT(i, ports.size()) << instance;
    ASSERT_EQ(outs[i].exit_code, 0) << outs[i].err;
    // Each instance's value is one of its own running totals (its JSON of the same run).
    EXPECT_GE(index_of(cumulative(outs[i], {"memory", "page_faults"}), sample_value(s)), 0) << instance;
    total += sample_value(s);
  }
  EXPECT_EQ(sample_value(sum["result"][0]), total);
  EXPECT_GT(total, 0);
}

// The examples shipped in packaging/: the scrape configuration is one Prometheus accepts, and
// every query of the Grafana dashboard is valid PromQL over documented metric names.
TEST(Prometheus, PackagingExamplesAreValid) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool (Debian package prometheus) not installed";
  std::string dir = std::string(PM_SOURCE_DIR) + "/packaging";
  std::string base = temp_base();
  std::string cmd = "promtool check config " + dir + "/prometheus.yml > " + base + ".out 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(base + ".out");

  auto dash = nlohmann::json::parse(read_file(dir + "/grafana-dashboard.json"), nullptr, false);
  ASSERT_FALSE(dash.is_discarded()) << "grafana-dashboard.json is not JSON";
  std::vector<std::string> exprs;
  for (const auto& panel : dash["panels"]) {
    for (const auto& t : panel.value("targets", nlohmann::json::array())) exprs.push_back(t["expr"]);
  }
  ASSERT_GE(exprs.size(), 10u);
  // As recording rules, with Grafana's variables replaced by what Grafana would put there.
  std::set<std::string> docs = documented_names();
  std::ofstream rules(base + ".rules.yml");
  rules << "groups:\n  - name: dashboard\n    rules:\n";
  for (size_t i = 0; i < exprs.size(); ++i) {
    std::string e = exprs[i];
    for (auto [var, value] : {std::pair{"$__rate_interval", "1m"}, std::pair{"$instance", ".*"}}) {
      for (size_t at; (at = e.find(var)) != std::string::npos;) e.replace(at, std::string(var).size(), value);
    }
    rules << "      - record: dashboard:query" << i << "\n        expr: " << nlohmann::json(e).dump() << "\n";
    for (size_t at = e.find("perf_monitor_"); at != std::string::npos; at = e.find("perf_monitor_", at + 1)) {
      size_t end = e.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_", at);
      std::string name = e.substr(at, end - at);
      if (e.compare(end, 2, ".*") == 0) continue;  // a regular expression over names
      for (const char* suffix : {"_bucket", "_count", "_sum"}) {
        if (docs.count(name) == 0 && name.size() > std::strlen(suffix) &&
            name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0) {
          name.resize(name.size() - std::strlen(suffix));
        }
      }
      EXPECT_EQ(docs.count(name), 1u) << name << " (dashboard) is not in docs/metrics.md";
    }
  }
  rules.close();
  cmd = "promtool check rules " + base + ".rules.yml > " + base + ".out 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(base + ".out");
  ::unlink((base + ".rules.yml").c_str());
  ::unlink((base + ".out").c_str());
}

}  // namespace
}  // namespace pm::test
