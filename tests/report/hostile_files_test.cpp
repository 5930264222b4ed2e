// SPDX-License-Identifier: Apache-2.0
// `perf-monitor report` and `report --compare` on files made to hurt them: nested deep, wide,
// sparse, many functions, lines of a GiB, devices, FIFOs, numbers beyond a double. Each is run
// on the real binary, which must end by itself with exit 0 (and a warning) or exit 2 (and one
// line saying why), never by a signal, within 10 s and 4 x the input's size + 100 MB of peak
// RSS (the kernel's own count: wait4's rusage of the child).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

// Under the sanitizers: ASan's shadow memory and the quarantine of freed blocks (256 MiB at
// most), and its slowness.
const double kSlackMb = sanitized() ? 400 : 0;
const double kSeconds = sanitized() ? 40 : 10;
// Other builds and tests share the CPUs: the wall clock may stretch this much.
constexpr double kLoadFactor = 3;

struct Ran {
  bool signalled = false;
  int signal = 0;
  int exit_code = -1;
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // user + system: what it cost, whatever else the machine runs
  double max_rss_mb = 0;
  std::string out, err;
};

// Runs perf-monitor with `args`; its standard input is `stdin_path` (or /dev/null), or, when
// `feed` is given, a pipe that `feed` writes into from a thread of this process.
Ran run(const std::vector<std::string>& args, const std::string& stdin_path = "/dev/null",
        const std::function<void(int)>& feed = {}) {
  std::string err_path = temp_base() + ".err", out_path = temp_base() + ".out";
  int pipe_fds[2] = {-1, -1};
  if (feed) {
    EXPECT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  }
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    int in = feed ? pipe_fds[0] : ::open(stdin_path.c_str(), O_RDONLY | O_NONBLOCK);
    if (!feed && in >= 0) ::fcntl(in, F_SETFL, 0);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<std::string> argv_s{binary(), "report"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::thread writer;
  if (feed) {
    ::close(pipe_fds[0]);
    writer = std::thread([&, fd = pipe_fds[1]] {
      feed(fd);
      ::close(fd);
    });
  }
  Ran r;
  int status = 0;
  struct rusage ru {};
  // Reaped here whatever happens: past twice the limit it is killed (and fails below).
  while (true) {
    pid_t got = ::wait4(pid, &status, WNOHANG, &ru);
    if (got == pid) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(2 * kLoadFactor * kSeconds)) {
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (writer.joinable()) writer.join();
  r.signalled = WIFSIGNALED(status);
  r.signal = r.signalled ? WTERMSIG(status) : 0;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.max_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024;  // KiB on Linux
  r.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  r.err = slurp(err_path);
  r.out = slurp(out_path);
  std::filesystem::remove(err_path);
  std::filesystem::remove(out_path);
  return r;
}

// The bounds every hostile input must keep. `input_mb`: the bytes it had to read.
void check(const Ran& r, double input_mb, const std::string& what) {
  std::cout << fmt::format(
                   "[ INFO     ] {}: exit {}, {:.2f} s ({:.2f} s CPU), {:.0f} MB peak RSS (input {:.1f} MB): {}", what,
                   r.signalled ? -r.signal : r.exit_code, r.seconds, r.cpu_seconds, r.max_rss_mb, input_mb,
                   r.err.substr(0, r.err.find('\n')).substr(0, 160))
            << "\n";
  EXPECT_FALSE(r.signalled) << what << ": killed by signal " << r.signal << "\n" << r.err;
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << what << ": exit " << r.exit_code << "\n" << r.err;
  // The CPU it took within the bound; the wall clock within a loaded machine's share of it (a
  // hang shows either way: the child is killed at twice the wall bound).
  EXPECT_LT(r.cpu_seconds, kSeconds) << what;
  EXPECT_LT(r.seconds, kSeconds * kLoadFactor) << what;
  EXPECT_LT(r.max_rss_mb, 4 * input_mb + 100 + kSlackMb) << what;
  EXPECT_EQ(r.err.find("json.exception.out_of_range"), std::string::npos) << what << ": " << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << what << ": " << r.err;
  if (r.exit_code == 2) {
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": one line, said\n" << r.err;
  }
  if (r.exit_code == 0) {
    EXPECT_NE(r.err.find("warning: "), std::string::npos) << what << ": no warning\n" << r.err;
  }
}

const std::string kHeader = R"({"type":"header","schema_version":1,"mode":"run","command":["x"]})"
                            "\n";
const std::string kSummary =
    R"({"type":"summary","mode":"run","exit_code":0,"duration_s":1.5,"proc_cpu_user_seconds":0.5})"
    "\n";

// Made one at a time and freed before perf-monitor runs: a forked child's peak RSS counts the
// pages it shared with this process before exec.
struct Hostile {
  std::string name;
  std::function<std::string()> make;
  std::string warns = {};  // what `report` says of it, where it reads it with a warning
};

double mb(size_t bytes) { return static_cast<double>(bytes) / 1e6; }

std::string nest(size_t depth, const char* open, const char* close, const std::string& type) {
  std::string s = R"({"type":")" + type + R"(","a":)";
  for (size_t i = 0; i < depth; ++i) s += open;
  s += "1";
  for (size_t i = 0; i < depth; ++i) s += close;
  return s + "}\n";
}

std::vector<Hostile> hostile_files() {
  std::vector<Hostile> out;
  out.push_back(
      {"12,000 nested arrays in an interval", [] { return kHeader + nest(12000, "[", "]", "interval") + kSummary; }});
  out.push_back({"12,000 nested objects in an interval",
                 [] { return kHeader + nest(12000, R"({"a":)", "}", "interval") + kSummary; }});
  out.push_back({"a summary nested 40,000 deep", [] { return kHeader + nest(40000, R"({"b":)", "}", "summary"); }});
  out.push_back({"1,000,000 keys in one record", [] {
                   std::string wide = kHeader + R"({"type":"interval","interval_s":1)";
                   for (int i = 0; i < 1000000; ++i) wide += fmt::format(R"(,"k{}":1)", i);
                   return wide + "}\n" + kSummary;
                 }});
  out.push_back({"200,000 keys in a summary",
                 [] {
                   std::string wide = kHeader + R"({"type":"summary","exit_code":0)";
                   for (int i = 0; i < 200000; ++i) wide += fmt::format(R"(,"k{}_seconds":{})", i, i % 7);
                   return wide + "}\n";
                 },
                 ""});
  out.push_back({"4,000 records x 25 new keys",
                 [] {
                   std::string sparse = kHeader;
                   for (int r = 0; r < 4000; ++r) {
                     sparse += R"({"type":"interval","interval_s":1,"m":{)";
                     for (int k = 0; k < 25; ++k) sparse += fmt::format(R"({}"k{}":{})", k ? "," : "", r * 25 + k, k);
                     sparse += "}}\n";
                   }
                   return sparse + kSummary;
                 },
                 "more than 20000 different paths"});
  const int n_spans = sanitized() ? 100000 : 300000;
  out.push_back(
      {fmt::format("{} spans of distinct functions", n_spans),
       [n_spans] {
         std::string spans = kHeader;
         for (int i = 0; i < n_spans; ++i) {
           spans += fmt::format(R"({{"type":"span","function":"fn{}","latency_s":0.001,"on_cpu_s":0.0005}})", i) + "\n";
         }
         return spans + kSummary;
       },
       "spans of more than 1000 functions"});
  out.push_back({"a key of 8 MB over 20,000 leaves, in an interval and a summary",
                 [] {
                   std::string key(8 << 20, 'k'), leaves;
                   for (int i = 0; i < 20000; ++i) leaves += fmt::format(R"({}"x{}":1)", i ? "," : "", i);
                   return kHeader + R"({"type":"interval","interval_s":1,")" + key + R"(":{)" + leaves + "}}\n" +
                          R"({"type":"summary","exit_code":0,")" + key + R"(":{)" + leaves + "}}\n";
                 },
                 "paths longer than 4096 bytes"});
  // Strings that do not compress, 4 MB each, in the header, intervals and the summary: what the
  // page carries grows with them, and the memory must not grow by more than a few times.
  out.push_back({"incompressible 4 MB strings in every record",
                 [] {
                   std::string noise(4 << 20, 'a');
                   uint64_t x = 0x9e3779b97f4a7c15;
                   for (char& ch : noise) {
                     x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                     ch = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[x & 63];
                   }
                   std::string text = R"({"type":"header","schema_version":1,"host":")" + noise + "\"}\n";
                   for (int i = 0; i < 2; ++i) {
                     noise[i] = '#';
                     text += R"({"type":"interval","interval_s":1,"s":")" + noise + "\"}\n";
                   }
                   return text + R"({"type":"summary","exit_code":0,"s":")" + noise + "\"}\n";
                 },
                 ""});
  out.push_back({"1e400 in an interval", [] {
                   return kHeader +
                          R"({"type":"interval","interval_s":1e400})"
                          "\n" +
                          kSummary;
                 }});
  out.push_back({"a 400-digit integer in a summary",
                 [] { return kHeader + R"({"type":"summary","x":)" + std::string(400, '9') + "}\n"; }});
  out.push_back(
      {"huge exponents everywhere", [] {
         return kHeader +
                R"({"type":"interval","a":1e308,"b":-1e308})"
                "\n" +
                R"({"type":"summary","a":1e308,"b":1e308,"c":{"count":1e308,"sum":1e308,"bucket_base":1e308,"buckets":[1e308,1e308]}})"
                "\n";
       }});
  return out;
}

std::string write_temp(const std::string& text, const std::string& suffix) {
  std::string path = temp_base() + suffix;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(ReportHostile, FilesEndCleanlyWithinTimeAndMemory) {
  std::string good = write_temp(kHeader +
                                    R"({"type":"interval","interval_s":1,"cpu":{"u":1}})"
                                    "\n" +
                                    kSummary,
                                "-good.jsonl");
  for (const Hostile& h : hostile_files()) {
    std::string path = write_temp(h.make(), ".jsonl"), html = temp_base() + ".html";
    double size = mb(std::filesystem::file_size(path));
    ::malloc_trim(0);
    Ran r = run({path, "-o", html});
    check(r, size, "report: " + h.name);
    if (!h.warns.empty()) {
      EXPECT_NE(r.err.find(h.warns), std::string::npos) << h.name << "\n" << r.err;
    }
    Ran c = run({"--compare", path, "--", good});
    check(c, size, "report --compare: " + h.name);
    if (h.name.find("keys in a summary") != std::string::npos) {
      EXPECT_NE(c.out.find("more than 20000 figures"), std::string::npos) << c.out.substr(0, 2000);
    }
    std::filesystem::remove(path);
    std::filesystem::remove(html);
  }
  std::filesystem::remove(good);
}

TEST(ReportHostile, NumbersBeyondADoubleAreOneClearLine) {
  std::string path = write_temp(kHeader +
                                    R"({"type":"interval","interval_s":1e400})"
                                    "\n" +
                                    kSummary,
                                ".jsonl");
  Ran r = run({path, "-o", temp_base() + ".html"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(":2: the number 1e400 is beyond the range of a double"), std::string::npos) << r.err;
  std::filesystem::remove(path);
}

// Devices and FIFOs: refused by name at once (a FIFO without a writer would block the open, a
// device never ends); a FIFO is read only as standard input ('-'), a device never.
TEST(ReportHostile, DevicesAndFifosAreRefused) {
  std::string fifo = temp_base() + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string good = write_temp(kHeader + kSummary, "-good.jsonl");
  for (const std::string& path : {std::string("/dev/zero"), std::string("/dev/urandom"), fifo}) {
    Ran r = run({path, "-o", temp_base() + ".html"});
    check(r, 0, "report " + path);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("not a JSON Lines file"), std::string::npos) << r.err;
    Ran c = run({"--compare", path, "--", good});
    check(c, 0, "report --compare " + path);
    EXPECT_EQ(c.exit_code, 2);
  }
  // A device as standard input.
  for (const char* dev : {"/dev/zero", "/dev/urandom"}) {
    Ran r = run({"-", "-o", temp_base() + ".html"}, dev);
    check(r, 0, std::string("report - < ") + dev);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("standard input is a character device"), std::string::npos) << r.err;
  }
  // A pipe as standard input is read: a whole recording through it makes a page.
  std::string html = temp_base() + ".html";
  std::string text = kHeader +
                     R"({"type":"interval","interval_s":1,"cpu":{"u":1}})"
                     "\n" +
                     kSummary;
  Ran p = run({"-", "-o", html}, "",
              [&](int fd) { EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size())); });
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(std::filesystem::exists(html));
  std::filesystem::remove(html);
  std::filesystem::remove(fifo);
  std::filesystem::remove(good);
}

// A line of a GiB: through a pipe (written as it is read, never whole anywhere) and as a sparse
// file. Reading stops at the line bound; memory stays at that bound, not at the line.
TEST(ReportHostile, AGibLineIsRefusedWithoutHoldingIt) {
  ::signal(SIGPIPE, SIG_IGN);  // the writer's pipe closes when perf-monitor gives up
  constexpr size_t kGiB = size_t{1} << 30;
  size_t written = 0;
  Ran r = run({"-", "-o", temp_base() + ".html"}, "", [&](int fd) {
    std::string head = R"({"type":"interval","s":")";
    std::string chunk(1 << 20, 'x');
    if (::write(fd, head.data(), head.size()) < 0) return;
    while (written < kGiB) {
      ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n <= 0) return;  // EPIPE: it stopped reading
      written += static_cast<size_t>(n);
    }
  });
  check(r, 20, "report - < a 1 GiB line");  // budget: the line bound it reads (16 MiB), not the GiB
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("longer than 16 MiB"), std::string::npos) << r.err;
  EXPECT_LT(written, kGiB) << "it read the whole line";

  std::string sparse = temp_base() + ".jsonl";
  {
    int fd = ::open(sparse.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kGiB)), 0);  // a GiB of NUL bytes, no newline
    ::close(fd);
  }
  Ran s = run({sparse, "-o", temp_base() + ".html"});
  check(s, 20, "report on a sparse 1 GiB file");
  EXPECT_EQ(s.exit_code, 2);
  Ran c = run({"--compare", sparse, "--", sparse});
  check(c, 20, "report --compare on a sparse 1 GiB file");
  std::filesystem::remove(sparse);
}

}  // namespace
}  // namespace pm::test
