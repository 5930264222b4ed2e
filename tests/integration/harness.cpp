// SPDX-License-Identifier: Apache-2.0
#include "integration/harness.h"

#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace pm::test {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool blocks_signal(pid_t pid, int sig) {
  std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigBlk:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1;
  }
  return false;
}

bool wait_for_text(const std::string& path, const std::string& text, std::chrono::seconds timeout,
                   const std::function<bool()>& still_running) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (slurp(path).find(text) == std::string::npos) {
    if ((still_running && !still_running()) || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

double reap_cpu_s(pid_t pid) {
  rusage ru{};
  ::wait4(pid, nullptr, 0, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

namespace {

}  // namespace

size_t Outcome::intervals() const {
  size_t n = 0;
  for (const auto& r : records) n += r.value("type", "") == "interval" ? 1 : 0;
  return n;
}

pid_t start_pm(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path,
               const std::string& other) {
  std::vector<char*> argv;
  std::string bin = other.empty() ? binary() : other;
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

bool reports_on_stderr(const std::vector<std::string>& args) {
  bool target = false;
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "-o" || a == "--output" || a.starts_with("--output=")) return false;
    if (a == "run" || a == "attach") target = true;
  }
  return target;
}

Outcome run_pm(const std::vector<std::string>& args, const RunOptions& opts) {
  std::string base = temp_base();
  std::string out_path = base + ".out", err_path = base + ".err";
  pid_t pid = start_pm(args, out_path, err_path, opts.binary);
  Outcome o;
  auto start = std::chrono::steady_clock::now();
  bool signalled = false;
  int status = 0;
  rusage ru{};
  for (;;) {
    pid_t r = ::wait4(pid, &status, WNOHANG, &ru);
    if (r == pid) break;
    auto elapsed = std::chrono::steady_clock::now() - start;
    if (opts.sigint_after && !signalled && elapsed >= *opts.sigint_after) {
      ::kill(pid, SIGINT);
      signalled = true;
    }
    if (elapsed > opts.timeout) {
      ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &ru);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  o.out = slurp(out_path);
  o.err = slurp(err_path);
  o.report = reports_on_stderr(args) ? o.err : o.out;
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  parse_records(o);
  return o;
}

namespace {

// PSS is a part of RSS: no reading, no interval of any test, may show more (the tree's figures).
void expect_pss_within_rss(const nlohmann::json& r) {
  if (r.value("type", "") == "interval") {
    auto tree = r.find("process_tree");
    if (tree == r.end() || !tree->is_object()) return;
    auto rss = tree->find("rss_bytes"), pss = tree->find("pss_bytes");
    if (rss == tree->end() || pss == tree->end() || !rss->is_number() || !pss->is_number()) return;
    EXPECT_LE(pss->get<double>(), rss->get<double>()) << "PSS above RSS in an interval: " << tree->dump();
  } else if (r.value("type", "") == "summary" && r.contains("proc_pss_max") && r["proc_pss_max"].is_number() &&
             r.contains("proc_rss_max") && r["proc_rss_max"].is_number()) {
    EXPECT_LE(r["proc_pss_max"].get<double>(), r["proc_rss_max"].get<double>()) << "the run's PSS above its RSS";
  }
}

}  // namespace

void parse_records(Outcome& o) {
  o.records.clear();
  // Live mode reports on standard output, run and attach on standard error (the command's
  // standard output is its own): the records are wherever they were written.
  for (const std::string* text : {&o.out, &o.err}) {
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line.front() != '{') continue;
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) continue;
      if (j.value("type", "") == "summary") o.summary = j;
      expect_pss_within_rss(j);
      o.records.push_back(std::move(j));
    }
  }
}

namespace {

// The scratch names this test process handed out: every file and directory whose name begins
// with one is removed when the process ends (by the process that made them: a forked child that
// exits runs this too, and must leave them).
struct ScratchNames {
  pid_t owner = ::getpid();
  std::vector<std::string> names;  // file names in scratch_dir()
  ~ScratchNames() {
    if (::getpid() != owner || names.empty()) return;
    std::error_code ec;
    std::vector<std::filesystem::path> doomed;
    for (const auto& entry : std::filesystem::directory_iterator(scratch_dir(), ec)) {
      std::string name = entry.path().filename().string();
      for (const std::string& n : names) {
        if (name.starts_with(n)) {
          doomed.push_back(entry.path());
          break;
        }
      }
    }
    for (const auto& p : doomed) std::filesystem::remove_all(p, ec);
  }
};
ScratchNames scratch_names;

}  // namespace

std::string temp_base() {
  std::string name = "pm-test-" + std::to_string(::getpid()) + "-" +
                     std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  if (::getpid() == scratch_names.owner) scratch_names.names.push_back(name);
  return scratch_dir() + "/" + name;
}

RunningPm::RunningPm(const std::vector<std::string>& args) : base_(temp_base()), on_stderr_(reports_on_stderr(args)) {
  pid_ = start_pm(args, base_ + ".out", base_ + ".err");
}

RunningPm::~RunningPm() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::unlink((base_ + ".out").c_str());
  ::unlink((base_ + ".err").c_str());
}

bool RunningPm::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = status;
    pid_ = -1;
    return false;
  }
  return true;
}

std::string RunningPm::out_so_far() const { return slurp(base_ + ".out"); }
std::string RunningPm::err_so_far() const { return slurp(base_ + ".err"); }

AttachedRun attach_to_workload(const std::vector<std::string>& workload_args, const std::vector<std::string>& args) {
  AttachedRun r;
  auto forked = std::chrono::steady_clock::now();
  pid_t child = ::fork();
  if (child == 0) {
    std::vector<char*> argv = {const_cast<char*>("pm-workload")};
    for (const auto& a : workload_args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(workload().c_str(), argv.data());
    ::_exit(127);
  }
  std::vector<std::string> all = {"attach", "--pid", std::to_string(child)};
  all.insert(all.end(), args.begin(), args.end());
  r.o = run_pm(all);
  r.tree_cpu_s = reap_cpu_s(child);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - forked).count();
  double monitored = r.o.summary.is_object() ? r.o.summary.value("duration_s", 0.0) : 0.0;
  double cpus = static_cast<double>(::sysconf(_SC_NPROCESSORS_ONLN));
  r.before_attach_max_s = std::max(0.0, wall - monitored) * cpus;
  return r;
}

namespace {
double proc_stat_ctxt() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    double v = 0;
    if (key == "ctxt" && in >> v) return v;
  }
  return 0;
}
}  // namespace

SwitchWindow switches_while_monitoring(const std::vector<std::string>& args) {
  SwitchWindow w;
  RunningPm pm(args);
  if (!pm.wait_for_output("\"header\"")) {
    w.o = pm.stop(SIGKILL);
    return w;
  }
  auto begun = std::chrono::steady_clock::now();
  double before = proc_stat_ctxt();
  while (pm.running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  w.proc_switches = proc_stat_ctxt() - before;
  w.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  w.o = pm.stop(SIGINT);
  return w;
}

bool RunningPm::wait_for_err(const std::string& text, std::chrono::seconds timeout) {
  return wait_for_text(base_ + ".err", text, timeout, [this] { return running(); });
}

bool RunningPm::wait_for_output(const std::string& text, std::chrono::seconds timeout) {
  return wait_for_text(base_ + (on_stderr_ ? ".err" : ".out"), text, timeout, [this] { return running(); });
}

Outcome RunningPm::stop(int sig, std::chrono::seconds timeout) {
  Outcome o;
  if (running()) {
    ::kill(pid_, sig);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &exit_status_, 0);
      pid_ = -1;
    }
  }
  o.exit_code = WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : 128 + WTERMSIG(exit_status_);
  o.out = out_so_far();
  o.err = err_so_far();
  o.report = report_so_far();
  parse_records(o);
  return o;
}

// Printed by each script's BEGIN: every probe is attached.
constexpr const char* kBpftraceReady = "pm-bpftrace-probes-attached";

Bpftrace::Bpftrace(const std::string& script, const std::vector<std::pair<std::string, std::string>>& env)
    : script_(temp_base() + ".bt"), out_(script_ + ".out") {
  std::ofstream(script_) << "BEGIN { printf(\"" << kBpftraceReady << "\\n\"); }\n" << script;
  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execlp("bpftrace", "bpftrace", script_.c_str(), nullptr);
    ::_exit(127);
  }
}

Bpftrace::~Bpftrace() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::unlink(script_.c_str());
  ::unlink(out_.c_str());
}

bool Bpftrace::attached(std::chrono::seconds timeout) {
  return pid_ > 0 && wait_for_text(out_, kBpftraceReady, timeout, [this] {
           if (::waitpid(pid_, nullptr, WNOHANG) != pid_) return true;
           pid_ = -1;
           return false;
         });
}

std::string Bpftrace::stop(std::chrono::seconds timeout, bool may_retry) {
  if (pid_ > 0) {
    ::kill(pid_, SIGINT);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (::waitpid(pid_, nullptr, WNOHANG) != pid_) {
      if (std::chrono::steady_clock::now() > deadline) {
        ended_ = false;
        if (may_retry) {
          std::printf("bpftrace did not end within %lld s of SIGINT: killed; measuring again\n",
                      static_cast<long long>(timeout.count()));
        } else {
          ADD_FAILURE() << "bpftrace did not end within " << timeout.count() << " s of SIGINT: killed";
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }
  return output();
}

std::string bpftrace_missing() {
  if (std::system("command -v bpftrace >/dev/null") != 0) {
    return "bpftrace is not installed (scripts/install-deps.sh installs it)";
  }
  if (std::system("mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing") != 0) {
    return "tracefs cannot be mounted: bpftrace's tracepoints need it";
  }
  return "";
}

int run_shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string first_line(const std::string& cmd) {
  FILE* f = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  char buf[4096] = {};
  std::string out = f != nullptr && std::fgets(buf, sizeof buf, f) != nullptr ? std::string(buf) : "";
  if (f != nullptr) ::pclose(f);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string first_file(const std::string& pattern) {
  glob_t g{};
  std::string out = ::glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0 ? g.gl_pathv[0] : "";
  ::globfree(&g);
  return out;
}

std::string find_tool(const std::string& name, const std::string& package, const std::string& also) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string found = first_line("command -v " + name);
    if (found.empty() && !also.empty()) found = first_file(also);
    if (!found.empty()) return found;
    if (attempt == 0) {
      std::fprintf(stderr, "tests: %s missing: apt-get install %s\n", name.c_str(), package.c_str());
      run_shell("DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends " + package + " >&2");
    }
  }
  return "";
}

RustBuild build_rust(const std::string& source, const std::string& crate, const std::string& flags) {
  RustBuild r;
  // One builds, the others wait: two building at once each renamed its own over the other's, and
  // a test whose probes were attached to the file it renamed ran the other's.
  int lock = ::open((scratch_dir() + "/" + crate + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  r.rustc = find_tool("rustc", "rustc", "/root/.cargo/bin/rustc");
  if (r.rustc.empty()) {
    r.error = "no rustc, and apt-get install rustc failed";
  } else {
    std::string key = slurp(source) + first_line(r.rustc + " --version") + flags;
    std::string kept = scratch_dir() + "/" + crate + "-" + std::to_string(std::hash<std::string>{}(key));
    r.legacy = kept + "-legacy";
    r.v0 = kept + "-v0";
    if (::access(r.legacy.c_str(), X_OK) != 0 || ::access(r.v0.c_str(), X_OK) != 0) {
      // Both at once, then renamed: a test process running beside this one sees whole files.
      // v0 is stable since Rust 1.59 (older compilers know it as -Z).
      std::string base = temp_base() + crate, legacy = base + "-legacy", v0 = base + "-v0";
      std::string common = r.rustc + " --edition 2021 -O " + flags + " --crate-name " + crate + " " + source + " -o ";
      std::string cmd = "(" + common + legacy + ") & (" + common + v0 +
                        " -C symbol-mangling-version=v0 || RUSTC_BOOTSTRAP=1 " + common + v0 +
                        " -Z symbol-mangling-version=v0); s=$?; wait $! && exit $s";
      if (run_shell(cmd) != 0) {
        r.error = "rustc failed: " + cmd;
      } else if (std::rename(legacy.c_str(), r.legacy.c_str()) != 0 || std::rename(v0.c_str(), r.v0.c_str()) != 0) {
        r.error = "cannot keep the binaries as " + kept + "-*";
      }
    }
  }
  if (lock >= 0) ::close(lock);
  return r;
}

std::string npm_modules(const std::string& package, const std::string& dir, const std::string& check, std::string& why) {
  std::string base = scratch_dir() + "/" + dir;
  int lock = ::open((base + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  std::string node = find_tool("node", "nodejs", ""), npm = find_tool("npm", "npm", "");
  std::string modules = base + "/node_modules", found;
  if (node.empty() || npm.empty()) {
    why = "no node or npm, and apt-get install nodejs npm failed";
  } else if (::access((modules + "/" + check).c_str(), R_OK) == 0 ||
             (run_shell("mkdir -p " + base + " && cd " + base + " && " + npm +
                        " install --silent --no-audit --no-fund --no-save " + package + " > /dev/null 2>&1") == 0 &&
              ::access((modules + "/" + check).c_str(), R_OK) == 0)) {
    found = modules;
  } else {
    why = "npm could not install " + package + " (the npm registry is not reachable?)";
  }
  if (lock >= 0) ::close(lock);
  return found;
}

}  // namespace pm::test
