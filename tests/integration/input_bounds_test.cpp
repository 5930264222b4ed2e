// SPDX-License-Identifier: Apache-2.0
// Input that is too deep, too large, empty, duplicated or for another machine, given to the real
// binary as a clumsy user or an attacker would: each is one line on stderr and exit 2, at once —
// never a crash, a wait without end, a silent zero, or two series of one name.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

using std::chrono::milliseconds;

std::string write_temp_file(const std::string& name, const std::string& text) {
  std::string path = temp_base() + "-" + name;
  std::ofstream(path) << text;
  return path;
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// Runs perf-monitor, expects a usage error: exit 2, one line that contains `what`, within `limit`.
// `limit` bounds perf-monitor's CPU time (the kernel's count, whatever else the machine runs);
// its wall time, that it never waits on the input, is bounded by ten seconds.
void expect_usage_error(const std::vector<std::string>& args, const std::string& what,
                        milliseconds limit = milliseconds(3000)) {
  auto start = std::chrono::steady_clock::now();
  Outcome o = run_pm(args, RunOptions{{}, std::chrono::seconds(20)});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "waited on its input";
  auto took = milliseconds(static_cast<long>(o.cpu_s * 1000));
  std::string call;
  for (const auto& a : args) call += " '" + a.substr(0, 60) + (a.size() > 60 ? "...'" : "'");
  EXPECT_EQ(o.exit_code, 2) << call << "\n" << o.err;
  EXPECT_EQ(lines(o.err), 1u) << call << "\n" << o.err;
  EXPECT_NE(o.err.find(what), std::string::npos) << call << "\n" << o.err;
  EXPECT_LT(took, limit) << call;
}

// The issue's repros: `[a.a.a…]` of 50,000 parts was a SIGSEGV in the TOML parser; so was a key
// of 100,000 parts. Arrays nested deep are the same class.
TEST(InputBounds, DeepConfigIsAUsageError) {
  std::string deep = write_temp_file("deep.toml", "[" + repeat("a.", 49999) + "a]\n");
  expect_usage_error({"--config", deep, "list"}, deep + ":1:2: a dotted key or table name has more than 16 parts");
  std::string key = write_temp_file("key.toml", "[output]\n" + repeat("a.", 99999) + "a = 1\n");
  expect_usage_error({"--config", key, "list"}, key + ":2:1:");
  std::string arrays = write_temp_file("arrays.toml", "[output]\nx = " + repeat("[", 100000) + "\n");
  expect_usage_error({"--config", arrays, "list"}, "nest more than 16 deep");
  std::string tables = write_temp_file("tables.toml", "x = " + repeat("{a=", 100000) + "\n");
  expect_usage_error({"--config", tables, "list"}, "nest more than 16 deep");
}

// /dev/zero and /dev/urandom were read forever (700 MB/s), a FIFO without a writer blocked
// forever, a directory was read as an empty configuration.
TEST(InputBounds, ConfigThatIsNoFileIsAUsageError) {
  expect_usage_error({"--config", "/dev/zero", "list"}, "/dev/zero: it is a character device");
  expect_usage_error({"--config", "/dev/urandom", "list"}, "/dev/urandom: it is a character device");
  std::string dir = temp_base() + "-dir";
  ::mkdir(dir.c_str(), 0700);
  expect_usage_error({"--config", dir, "list"}, "it is a directory");
  std::string fifo = temp_base() + "-fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_usage_error({"--config", fifo, "list"}, "a FIFO or pipe that nothing was written to", milliseconds(1500));
  std::string big = write_temp_file("big.toml", "#" + std::string(2 << 20, 'x') + "\n");
  expect_usage_error({"--config", big, "list"}, "larger than 1 MiB");
  ::unlink(fifo.c_str());
  ::rmdir(dir.c_str());
}

// `--duration ''` meant "no duration"; every flag's empty value is now a mistake, in every
// subcommand, and so is an empty string in the configuration file.
TEST(InputBounds, EmptyValuesAreUsageErrors) {
  for (const char* flag : {"--duration", "-d", "--interval", "-i", "-o", "--output", "--prometheus", "-e", "--events",
                           "--probe", "--config", "-c", "--tree-interval", "--format", "-f"}) {
    expect_usage_error({flag, "", "list"}, "an empty value is not allowed");
    expect_usage_error({"run", flag, "", "--", "true"}, "an empty value is not allowed");
  }
  expect_usage_error({"attach", "--pid", ""}, "--pid: an empty value is not allowed");
  // Not the live monitor of the whole system (with --duration: a failure, never a wait).
  expect_usage_error({"--cgroup", "", "--duration", "1s"}, "--cgroup: an empty value is not allowed");
  expect_usage_error({"--duration=", "list"}, "--duration");
  std::string file = write_temp_file("empty.toml", "[output]\nfile = \"\"\n");
  expect_usage_error({"--config", file, "list"}, file + ":2:8: [output] file must be a non-empty string");
  std::string listen = write_temp_file("listen.toml", "[prometheus]\nlisten = \"\"\n");
  expect_usage_error({"--config", listen, "list"}, "[prometheus] listen must be a non-empty string");
  std::string events = write_temp_file("events.toml", "[pmc]\nevents = []\n");
  expect_usage_error({"--config", events, "list"}, "[pmc] events must be a non-empty array");
}

// Every key of an object, as written (nlohmann::json keeps only the last of duplicate keys, so
// the raw line is read).
std::multiset<std::string> keys_of_object(const std::string& line, const std::string& object) {
  std::multiset<std::string> keys;
  size_t at = line.find("\"" + object + "\":{");
  if (at == std::string::npos) return keys;
  at += object.size() + 4;
  int depth = 1;
  for (size_t i = at; i < line.size() && depth > 0; ++i) {
    if (line[i] == '{') ++depth;
    if (line[i] == '}') --depth;
    if (depth == 1 && line[i] == '"' && (line[i - 1] == '{' || line[i - 1] == ',')) {
      size_t end = line.find('"', i + 1);
      keys.insert(line.substr(i + 1, end - i - 1));
      i = end;
    }
  }
  return keys;
}

// The issue's repro: two spellings of one event were two counters under one key (one value lost
// in JSON, a duplicate series for Prometheus). Now they are one event, counted once.
TEST(InputBounds, TwoSpellingsOfOneEventAreOneCounter) {
  for (const char* list : {"software/config=1/,software/config= 1/", "task-clock,software/config=0x1/",
                                   "cycles,cpu-cycles,task-clock,task_clock"}) {
    Outcome o = run_pm({"--format", "json", "--duration", "1s", "-e", list});
    ASSERT_EQ(o.exit_code, 0) << list << "\n" << o.err;
    std::istringstream in(o.out);
    int checked = 0;
    for (std::string line; std::getline(in, line);) {
      std::multiset<std::string> keys = keys_of_object(line, "pmc");
      for (const std::string& k : keys) EXPECT_EQ(keys.count(k), 1u) << list << ": key " << k << " twice in " << line;
      checked += !keys.empty();
    }
    EXPECT_GE(checked, 1) << list << "\n" << o.out;
  }
  // The same list in the configuration file.
  std::string cfg = write_temp_file("events-dup.toml", "[pmc]\nevents = [\"software/config=1/\", \"software/config= 1/\"]\n");
  Outcome o = run_pm({"--format", "json", "--duration", "1s", "--config", cfg});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  ASSERT_GE(o.intervals(), 1u) << o.out;
  for (const auto& r : o.records) {
    if (r.value("type", "") != "interval") continue;
    EXPECT_TRUE(r["pmc"].contains("software_config_0x1")) << r["pmc"].dump();
  }
  EXPECT_EQ(o.out.find("software_config_1\""), std::string::npos);
}

// A copy of the example service that claims to be for another CPU: a real ELF with the same
// symbols, whose code a uprobe would patch at offsets that are not its instructions.
std::string foreign_copy(uint16_t machine, const std::string& name) {
  std::string path = temp_base() + "-" + name;
  std::ifstream in(PM_SHOP, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes[18] = static_cast<char>(machine & 0xff);  // e_machine, little-endian
  bytes[19] = static_cast<char>(machine >> 8);
  std::ofstream(path, std::ios::binary) << bytes;
  ::chmod(path.c_str(), 0755);
  return path;
}

// Probes on an aarch64 or RISC-V binary attached and counted 0, silently.
TEST(InputBounds, ProbesOnAnotherCpusCodeAreRefused) {
  std::string arm = foreign_copy(183, "aarch64");  // EM_AARCH64
  expect_usage_error({"--probe", arm + ":shop::process_request", "list"},
                     "is aarch64 code: perf-monitor probes only 64-bit x86-64 executables and libraries here");
  std::string riscv = foreign_copy(243, "riscv");  // EM_RISCV
  expect_usage_error({"--probe", riscv + ":process_request", "--duration", "1s"}, "is RISC-V code");
  std::string garbage = write_temp_file("garbage", "\x7f" "ELF" + std::string(100, '\xff'));
  expect_usage_error({"--probe", garbage + ":main", "list"}, "--probe:");
}

// 200 --probe gave "probe: not available: too many probes (62)" and exit 0.
TEST(InputBounds, TooManyProbesIsAUsageErrorThatSaysTheLimit) {
  std::vector<std::string> args;
  for (int i = 0; i < 200; ++i) {
    args.push_back("--probe");
    args.push_back(std::string(PM_MANY_FUNCTIONS) + ":f" + std::to_string(i % 80));
  }
  args.emplace_back("list");
  expect_usage_error(args, "--probe: at most 62 functions can be probed at once (200 given)");
  // Written twice, or through another path to the file, a function is one probe: 62 of them,
  // each named three times, are within the limit.
  std::string path = PM_MANY_FUNCTIONS;
  std::string other = path.substr(0, path.rfind('/')) + "/./" + path.substr(path.rfind('/') + 1);
  args.clear();
  for (int i = 0; i < 62; ++i) {
    for (const std::string& spelling : {path, path, other}) {
      args.push_back("--probe");
      args.push_back(spelling + ":f" + std::to_string(i));
    }
  }
  args.emplace_back("list");
  Outcome o = run_pm(args);
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

// The 131 KB function name took 11.4 s to find the closest symbols; now it is refused at once,
// and a long name within the bound is looked up quickly.
TEST(InputBounds, LongFunctionNamesAreBounded) {
  std::string shop = PM_SHOP;
  // (An argument is at most 128 KiB, its NUL included; the configuration file has no such limit.)
  expect_usage_error({"--probe", shop + ":" + std::string(130000, 'x'), "list"}, "a function name is at most 4096",
                     milliseconds(1000));
  std::string cfg = write_temp_file("long-function.toml", "[[probes]]\nbinary = \"" + shop + "\"\nfunction = \"" +
                                                         std::string(200000, 'y') + "\"\n");
  expect_usage_error({"--config", cfg, "list"}, "a function name is at most 4096", milliseconds(1000));
  expect_usage_error({"--probe", shop + ":" + std::string(4000, 'p'), "list"}, "no function 'ppp",
                     milliseconds(1000));
  expect_usage_error({"--probe", shop + ":shop::" + repeat("process_request", 250), "list"}, "no function",
                     milliseconds(1000));
}

// A binary another user can write is read, not mapped (they could cut it short under a mapping:
// a SIGBUS); a sparse one of gigabytes would be gigabytes of memory. Over 1 GiB it is refused
// with one line, at once; the same file of root's own is mapped, and probed.
TEST(InputBounds, AHugeBinaryOfAnotherUserIsNotRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a file of another user";
  std::string huge = temp_base() + "-huge";
  ASSERT_EQ(run_shell(std::string("cp ") + PM_SHOP + " " + huge + " && truncate -s 1100M " + huge), 0);
  EXPECT_EQ(::chown(huge.c_str(), 65534, 65534), 0);
  expect_usage_error({"--probe", huge + ":shop::process_request", "list"}, "larger than 1 GiB and a user other than root can write it",
                     milliseconds(1000));
  EXPECT_EQ(::chown(huge.c_str(), 0, 0), 0);
  Outcome o = run_pm({"--probe", huge + ":shop::process_request", "list"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  ::unlink(huge.c_str());
}

// An xz bomb in .gnu_debugdata (78 KB decompressing to gigabytes) took 960 MB; now the
// decompression stops at its bound with one line, and the peak memory stays small.
TEST(InputBounds, DebugDataBombIsRefusedWithLittleMemory) {
  if (std::system("command -v objcopy >/dev/null && command -v xz >/dev/null") != 0) {
    GTEST_SKIP() << "objcopy (binutils) or xz (xz-utils) missing: cannot build a .gnu_debugdata binary";
  }
  std::string base = temp_base();
  std::string bomb = base + "-bomb";
  std::string cmd = "set -e; head -c 256M /dev/zero | xz -1 -T1 > " + base + ".xz; objcopy --add-section .gnu_debugdata=" +
                    base + ".xz " + PM_SHOP + " " + bomb;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  struct stat st {};
  ASSERT_EQ(::stat((base + ".xz").c_str(), &st), 0);
  EXPECT_LT(st.st_size, 1 << 20);  // a small file...
  // Peak RSS of `perf-monitor --probe BINARY:... list`, in KiB.
  const std::string pm = pm::test::binary();
  auto peak_kib = [&pm](const std::string& binary) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(pm.c_str(), pm.c_str(), "--probe", (binary + ":shop::process_request").c_str(), "list", nullptr);
      ::_exit(127);
    }
    int status = 0;
    rusage ru{};
    EXPECT_EQ(::wait4(pid, &status, 0, &ru), pid);
    return ru.ru_maxrss;
  };
  long plain = peak_kib(PM_SHOP);
  long with_bomb = peak_kib(bomb);
  // The bomb's peak is that of the plain binary's: it is refused from the size its xz index
  // states, without decompressing (it was 960 MB).
  EXPECT_LT(with_bomb, plain + 16 * 1024) << "peak RSS in KiB, " << plain << " for the plain binary";
  expect_usage_error({"--probe", bomb + ":shop::process_request", "list"},
                     "its .gnu_debugdata decompresses to more than 32 MiB");
  std::remove(bomb.c_str());
  std::remove((base + ".xz").c_str());
}

}  // namespace
}  // namespace pm::test
