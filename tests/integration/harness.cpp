#include "integration/harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace pm::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

size_t Outcome::intervals() const {
  size_t n = 0;
  for (const auto& r : records) n += r.value("type", "") == "interval" ? 1 : 0;
  return n;
}

pid_t start_pm(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path) {
  std::vector<char*> argv;
  std::string bin = binary();
  argv.push_back(bin.data());
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid == 0) {
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(out, 1);
    ::dup2(err, 2);
    // perf-monitor gets its own process group: a SIGINT sent to it alone is then like a
    // `kill -INT`, not a Ctrl-C at a terminal.
    ::setpgid(0, 0);
    ::execv(argv[0], argv.data());
    ::_exit(126);
  }
  return pid;
}

Outcome run_pm(const std::vector<std::string>& args, const RunOptions& opts) {
  std::string base = scratch_dir() + "/pm-test-" + std::to_string(::getpid()) + "-" +
                     std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::string out_path = base + ".out", err_path = base + ".err";
  pid_t pid = start_pm(args, out_path, err_path);
  Outcome o;
  auto start = std::chrono::steady_clock::now();
  bool signalled = false;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    auto elapsed = std::chrono::steady_clock::now() - start;
    if (opts.sigint_after && !signalled && elapsed >= *opts.sigint_after) {
      ::kill(pid, SIGINT);
      signalled = true;
    }
    if (elapsed > opts.timeout) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.out = slurp(out_path);
  o.err = slurp(err_path);
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  std::istringstream lines(o.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    if (j.value("type", "") == "summary") o.summary = j;
    o.records.push_back(std::move(j));
  }
  return o;
}

}  // namespace pm::test
