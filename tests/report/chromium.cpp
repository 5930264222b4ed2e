// SPDX-License-Identifier: Apache-2.0
#include "report/chromium.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace pm::test {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("writing to chromium: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::string base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) continue;
    acc = acc << 6 | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(acc >> bits & 0xff);
    }
  }
  return out;
}

std::optional<std::string> Chromium::find() {
  if (const char* env = std::getenv("PM_CHROMIUM"); env != nullptr && *env != '\0') {
    return executable(env) ? std::optional<std::string>(env) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t at = 0;
  while (at <= dirs.size()) {
    size_t colon = dirs.find(':', at);
    std::string dir = dirs.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
    for (const char* name : {"chromium", "chromium-browser"}) {
      std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
      if (executable(candidate)) return candidate;
    }
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  return std::nullopt;
}

std::unique_ptr<Chromium> Chromium::launch(int width, int height, std::string* error) {
  auto binary = find();
  if (!binary) {
    *error = "no chromium on PATH (Debian: apt-get install chromium)";
    return nullptr;
  }
  ::signal(SIGPIPE, SIG_IGN);  // a browser that died is an error to report, not a reason to die
  std::unique_ptr<Chromium> c(new Chromium());
  char tmpl[] = "/tmp/pm-chromium-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    *error = std::string("mkdtemp: ") + std::strerror(errno);
    return nullptr;
  }
  c->profile_dir_ = tmpl;
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return nullptr;
  }
  std::vector<std::string> args{*binary,
                                "--headless",
                                "--no-sandbox",
                                "--disable-gpu",
                                "--disable-dev-shm-usage",  // containers give /dev/shm 64 MiB
                                "--disable-background-networking",
                                "--disable-component-update",
                                "--disable-sync",
                                "--disable-default-apps",
                                "--disable-extensions",
                                "--no-first-run",
                                "--no-default-browser-check",
                                "--mute-audio",
                                "--hide-scrollbars",
                                "--user-data-dir=" + c->profile_dir_,
                                "--window-size=" + std::to_string(width) + "," + std::to_string(height),
                                "--remote-debugging-pipe",
                                "about:blank"};
  std::string log = c->profile_dir_ + "/chromium.log";
  pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return nullptr;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: the renderer and GPU helpers go with it
    // Out of the way first: a pipe end may already be fd 3 or 4 (and close-on-exec).
    int in = ::fcntl(to[0], F_DUPFD_CLOEXEC, 10), out = ::fcntl(from[1], F_DUPFD_CLOEXEC, 10);
    ::dup2(in, 3);
    ::dup2(out, 4);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    int logfd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(logfd, 1);
    ::dup2(logfd, 2);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  c->pid_ = pid;
  c->to_ = to[1];
  c->from_ = from[0];
  try {
    Json target = c->call("Target.createTarget", {{"url", "about:blank"}}, false, std::chrono::seconds(60));
    Json attached = c->call("Target.attachToTarget", {{"targetId", target["targetId"]}, {"flatten", true}}, false);
    c->session_ = attached["sessionId"].get<std::string>();
    for (const char* domain : {"Runtime.enable", "Log.enable", "Network.enable", "Page.enable"})
      c->call(domain, Json::object());
    c->call("Emulation.setDeviceMetricsOverride",
            {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", false}});
  } catch (const std::exception& e) {
    std::string tail;
    if (std::FILE* f = std::fopen(log.c_str(), "r")) {
      char buf[2048];
      size_t n = std::fread(buf, 1, sizeof buf, f);
      tail.assign(buf, n);
      std::fclose(f);
    }
    *error = std::string("chromium did not start: ") + e.what() + (tail.empty() ? "" : "; its output: " + tail);
    return nullptr;
  }
  return c;
}

Chromium::~Chromium() {
  if (pid_ > 0) {
    try {
      call("Browser.close", Json::object(), false, std::chrono::seconds(5));
    } catch (const std::exception&) {
    }
    auto deadline = Clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
  if (!profile_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(profile_dir_, ec);
  }
}

bool Chromium::read_message(Json* out, Clock::time_point deadline) {
  while (true) {
    size_t nul = buffer_.find('\0');
    if (nul != std::string::npos) {
      *out = Json::parse(buffer_.substr(0, nul));
      buffer_.erase(0, nul + 1);
      return true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{from_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char buf[65536];
    ssize_t n = ::read(from_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("chromium closed its pipe");
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void Chromium::on_event(const Json& ev) {
  const std::string method = ev.value("method", "");
  const Json& p = ev.contains("params") ? ev["params"] : Json::object();
  if (method == "Runtime.consoleAPICalled") {
    std::string type = p.value("type", "");
    if (type == "error" || type == "assert") {
      std::string text;
      for (const Json& a : p["args"])
        text += (text.empty() ? "" : " ") + (a.contains("value") ? a["value"].dump() : a.value("description", "?"));
      errors_.push_back("console." + type + ": " + text);
    }
  } else if (method == "Runtime.exceptionThrown") {
    const Json& d = p["exceptionDetails"];
    std::string text = d.value("text", "exception");
    if (d.contains("exception")) text += " " + d["exception"].value("description", "");
    errors_.push_back("uncaught: " + text);
  } else if (method == "Log.entryAdded") {
    const Json& e = p["entry"];
    if (e.value("level", "") == "error") errors_.push_back("log: " + e.value("text", "") + " " + e.value("url", ""));
  } else if (method == "Network.requestWillBeSent") {
    requests_.push_back(p["request"].value("url", ""));
  }
}

Json Chromium::call(const std::string& method, Json params, bool session, std::chrono::milliseconds timeout) {
  int id = next_id_++;
  Json msg{{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (session && !session_.empty()) msg["sessionId"] = session_;
  write_all(to_, msg.dump() + std::string(1, '\0'));
  auto deadline = Clock::now() + timeout;
  Json in;
  while (read_message(&in, deadline)) {
    if (in.contains("id") && in["id"] == id) {
      if (in.contains("error")) throw std::runtime_error(method + ": " + in["error"].dump());
      return in.value("result", Json::object());
    }
    if (in.contains("method")) on_event(in);
  }
  throw std::runtime_error(method + ": no answer within " + std::to_string(timeout.count()) + " ms");
}

Chromium::Load Chromium::open(const std::string& url, std::chrono::milliseconds timeout) {
  errors_.clear();
  requests_.clear();
  Load load;
  auto start = Clock::now();
  Json nav = call("Page.navigate", {{"url", url}});
  if (nav.contains("errorText")) {
    load.errors.push_back("navigation: " + nav["errorText"].get<std::string>());
    return load;
  }
  auto deadline = start + timeout;
  while (Clock::now() < deadline) {
    Json r = call("Runtime.evaluate", {{"expression", "document.body ? (document.body.dataset.ready || '') : ''"},
                                       {"returnByValue", true}});
    std::string state = r["result"].value("value", "");
    if (!state.empty()) {
      load.ready_state = state;
      load.ready = state == "yes";
      break;
    }
    // Wait a little, serving events meanwhile.
    Json ev;
    auto until = Clock::now() + std::chrono::milliseconds(5);
    while (read_message(&ev, until)) {
      if (ev.contains("method")) on_event(ev);
    }
  }
  load.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  // Drain what arrived with the last answer.
  Json ev;
  while (read_message(&ev, Clock::now() + std::chrono::milliseconds(50))) {
    if (ev.contains("method")) on_event(ev);
  }
  load.errors = errors_;
  load.requests = requests_;
  return load;
}

Json Chromium::eval(const std::string& expression) {
  Json r = call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}}, true,
                std::chrono::seconds(120));
  if (r.contains("exceptionDetails")) {
    const Json& d = r["exceptionDetails"];
    std::string text = d.value("text", "exception");
    if (d.contains("exception")) text += " " + d["exception"].value("description", "");
    throw std::runtime_error("evaluating `" + expression.substr(0, 80) + "`: " + text);
  }
  return r["result"].value("value", Json());
}

std::string Chromium::screenshot_png(int max_height, int from_y) {
  Json m = call("Page.getLayoutMetrics", Json::object());
  const Json& size = m.contains("cssContentSize") ? m["cssContentSize"] : m["contentSize"];
  double w = size["width"].get<double>();
  double h = std::min<double>(size["height"].get<double>() - from_y, max_height);
  Json r = call("Page.captureScreenshot",
                {{"format", "png"},
                 {"captureBeyondViewport", true},
                 {"clip", {{"x", 0}, {"y", from_y}, {"width", w}, {"height", h}, {"scale", 1}}}},
                true, std::chrono::seconds(120));
  return base64_decode(r["data"].get<std::string>());
}

}  // namespace pm::test
