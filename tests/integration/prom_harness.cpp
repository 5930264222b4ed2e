// SPDX-License-Identifier: Apache-2.0
#include "integration/prom_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "integration/harness.h"

namespace pm::test {
namespace {

constexpr const char* kPrometheus = "/usr/bin/prometheus";

}  // namespace

HttpResponse http_get(int port, const std::string& target, std::chrono::milliseconds timeout,
                      const std::string& host) {
  HttpResponse r;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    r.error = "socket failed";
    return r;
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    r.error = "connect: " + std::string(std::strerror(errno));
    ::close(fd);
    return r;
  }
  std::string req = "GET " + target + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    r.error = "send failed";
    ::close(fd);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string raw;
  char buf[16384];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.error = "timed out";
      ::close(fd);
      return r;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      r.error = "recv: " + std::string(std::strerror(errno));
      ::close(fd);
      return r;
    }
    if (n == 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t split = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || split == std::string::npos) {
    r.error = "not an HTTP response: " + raw.substr(0, 80);
    return r;
  }
  r.headers = raw.substr(0, split);
  r.body = raw.substr(split + 4);
  r.status = std::atoi(raw.c_str() + 9);
  return r;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

std::map<std::string, double> parse_exposition(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    std::string v = line.substr(sp + 1);
    double value = v == "+Inf" ? HUGE_VAL : v == "-Inf" ? -HUGE_VAL : v == "NaN" ? NAN : std::strtod(v.c_str(), nullptr);
    out[line.substr(0, sp)] = value;
  }
  return out;
}

std::string scrape_when_ready(int port, const std::string& wanted, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    HttpResponse r = http_get(port, "/metrics", std::chrono::seconds(3));
    if (r.status == 200 && (r.body.rfind(wanted, 0) == 0 || r.body.find("\n" + wanted) != std::string::npos)) {
      return r.body;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return {};
}

int promtool_check(const std::string& text, std::string* report) {
  std::string base = temp_base();
  std::ofstream(base + ".prom") << text;
  std::string cmd = "promtool check metrics < " + base + ".prom > " + base + ".promtool 2>&1";
  int rc = std::system(cmd.c_str());
  *report = slurp(base + ".promtool");
  ::unlink((base + ".prom").c_str());
  ::unlink((base + ".promtool").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string PrometheusServer::missing() {
  if (::access(kPrometheus, X_OK) != 0) {
    return std::string(kPrometheus) + " not installed (Debian package prometheus; scripts/install-deps.sh installs it)";
  }
  return {};
}

std::vector<const nlohmann::json*> intervals_of(const Outcome& o) {
  std::vector<const nlohmann::json*> out;
  for (const auto& r : o.records) {
    if (r.value("type", "") == "interval") out.push_back(&r);
  }
  return out;
}

std::vector<double> cumulative(const Outcome& o, const std::vector<std::string>& path) {
  std::vector<double> sums;
  double sum = 0;
  for (const nlohmann::json* r : intervals_of(o)) {
    const nlohmann::json* node = r;
    for (const std::string& key : path) {
      if (!node->contains(key)) {
        node = nullptr;
        break;
      }
      node = &(*node)[key];
    }
    if (node == nullptr || !node->is_number()) continue;
    sum += node->get<double>();
    sums.push_back(sum);
  }
  return sums;
}

PrometheusServer::PrometheusServer(const std::vector<int>& target_ports) {
  dir_ = temp_base() + ".prometheus";
  std::filesystem::create_directories(dir_ + "/data");
  std::string targets;
  for (int p : target_ports) targets += (targets.empty() ? "'" : ", '") + ("127.0.0.1:" + std::to_string(p)) + "'";
  // One-second scrapes (the same rhythm as perf-monitor's default interval); the timeout is the
  // interval, the most Prometheus allows.
  std::ofstream(dir_ + "/prometheus.yml") << "global:\n"
                                             "  scrape_interval: 1s\n"
                                             "  scrape_timeout: 1s\n"
                                             "scrape_configs:\n"
                                             "  - job_name: perf-monitor\n"
                                             "    static_configs:\n"
                                             "      - targets: ["
                                          << targets << "]\n";
  port_ = free_port();
  std::vector<std::string> args = {kPrometheus,
                                   "--config.file=" + dir_ + "/prometheus.yml",
                                   "--storage.tsdb.path=" + dir_ + "/data",
                                   "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                   // Targets reach the scrape loop after the discovery
                                   // manager's fixed 5 s throttle plus this reload interval
                                   // (5 s by default): the test waits ~5 s instead of ~10.
                                   "--scrape.discovery-reload-interval=100ms",
                                   "--web.enable-remote-write-receiver",
                                   "--log.level=warn"};
  std::string log = dir_ + "/prometheus.log";
  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
}

PrometheusServer::~PrometheusServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PrometheusServer::poll_pause() { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

bool PrometheusServer::wait_ready(std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (http_get(port_, "/-/ready", std::chrono::seconds(1)).status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

nlohmann::json PrometheusServer::query(const std::string& promql, std::optional<double> time, std::string* error) {
  std::string target = "/api/v1/query?query=" + url_encode(promql);
  if (time) target += "&time=" + std::to_string(*time);
  HttpResponse r = http_get(port_, target, std::chrono::seconds(5));
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (r.status != 200 || j.is_discarded() || j.value("status", "") != "success") {
    if (error != nullptr) *error = "query " + promql + ": HTTP " + std::to_string(r.status) + " " + r.error + r.body;
    return nullptr;
  }
  return j["data"];
}

std::string PrometheusServer::log() const { return slurp(dir_ + "/prometheus.log"); }

double sample_value(const nlohmann::json& sample) {
  return std::strtod(sample["value"][1].get<std::string>().c_str(), nullptr);
}

namespace {

std::vector<std::string> words_of(const std::string& name) {
  std::vector<std::string> out;
  std::stringstream ss(name);
  for (std::string w; std::getline(ss, w, '_');) out.push_back(w);
  return out;
}

}  // namespace

std::vector<std::string> naming_problems(const std::string& exposition) {
  static const std::set<std::string> kUnits = {"seconds", "bytes", "joules", "celsius", "ratio", "percent", "watts"};
  static const std::set<std::string> kBreakdowns = {"cpu", "device", "op", "mode", "resource", "kind", "node"};
  static const std::vector<std::string> kTwoWordFamilies = {"block_io", "process_tree", "process_group"};
  std::vector<std::string> problems;
  std::map<std::string, std::string> types;                       // name -> type
  std::map<std::string, std::set<std::string>> breakdown_values;  // family -> values of breakdown labels
  std::string mode = "system";
  auto family_of = [&](const std::string& name) {
    std::string rest = name.substr(std::string("perf_monitor_").size());
    for (const std::string& f : kTwoWordFamilies) {
      if (rest.rfind(f + "_", 0) == 0) return f;
    }
    return rest.substr(0, rest.find('_'));
  };
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      types[name] = type;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    size_t open = line.find('{');
    if (open == std::string::npos) continue;
    std::string name = line.substr(0, open);
    if (name.rfind("perf_monitor_", 0) != 0) continue;
    std::string labels = line.substr(open + 1, line.find('}') - open - 1);
    for (size_t at = 0; at < labels.size();) {
      size_t eq = labels.find("=\"", at);
      size_t end = labels.find('"', eq + 2);
      if (eq == std::string::npos || end == std::string::npos) break;
      std::string key = labels.substr(at, eq - at), value = labels.substr(eq + 2, end - eq - 2);
      if (kBreakdowns.count(key) != 0) breakdown_values[family_of(name)].insert(value);
      if (name == "perf_monitor_build_info" && key == "mode") mode = value;
      at = end + 2;  // past '",'
    }
  }
  // The subject a family measures: pmc counts the tree in run and attach.
  auto subject_of = [&](const std::string& family) -> std::string {
    if (family == "process_tree" || (family == "pmc" && mode != "system")) return "tree";
    if (family == "probe" || family == "numa" || family == "self" || family == "build" || family == "source" ||
        family == "cgroup" || family == "process_group" || family == "top") {
      return family;
    }
    return "system";
  };
  std::map<std::string, std::string> concept_of;  // subject + stem -> the first name with it
  for (const auto& [name, type] : types) {
    if (name.rfind("perf_monitor_", 0) != 0) {
      problems.push_back(name + ": not under perf_monitor_");
      continue;
    }
    std::vector<std::string> w = words_of(name);
    size_t totals = static_cast<size_t>(std::count(w.begin(), w.end(), "total"));
    bool ends_total = w.back() == "total";
    if (type == "counter" && (!ends_total || totals != 1))
      problems.push_back(name + ": a counter has `total` once, last");
    if (type != "counter" && ends_total) problems.push_back(name + ": only a counter ends in _total");
    std::vector<std::string> units;
    for (const std::string& x : w) {
      if (kUnits.count(x) != 0) units.push_back(x);
    }
    size_t last = w.size() - (ends_total ? 2 : 1);
    if (units.size() > 1) problems.push_back(name + ": more than one unit");
    if (units.size() == 1 && w[last] != units[0]) problems.push_back(name + ": the unit is not the last word");
    if (units.size() == 1 && units[0] == "percent") problems.push_back(name + ": a percentage is a _ratio");
    std::string family = family_of(name);
    for (size_t i = 0; i < w.size(); ++i) {
      bool number = !w[i].empty() && std::all_of(w[i].begin(), w[i].end(), ::isdigit) && i > 0 &&
                    (w[i - 1] == "cpu" || w[i - 1] == "node");
      bool cpu_n = w[i].size() > 3 && w[i].rfind("cpu", 0) == 0 && std::isdigit(static_cast<unsigned char>(w[i][3]));
      if (w[i] == "per" || number || cpu_n) problems.push_back(name + ": a label encoded in the name (" + w[i] + ")");
      if (i >= 2 && breakdown_values[family].count(w[i]) != 0 && w[i] != "total") {
        problems.push_back(name + ": `" + w[i] + "` is a label value of family " + family);
      }
    }
    std::string stem = name.substr(std::string("perf_monitor_").size() + family.size() + 1);
    if (ends_total) stem.resize(stem.size() - 6);
    std::string key = subject_of(family) + " " + stem;
    auto [it, inserted] = concept_of.try_emplace(key, name);
    if (!inserted) problems.push_back(name + ": the same concept as " + it->second);
  }
  return problems;
}

}  // namespace pm::test
