// SPDX-License-Identifier: Apache-2.0
// --probe against users who own the binary root is asked to probe: a path swapped for a
// symlink to another file while perf-monitor starts, and symbol names made of escape sequences
// and bytes that are not UTF-8.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "integration/harness.h"
#include "sources/probes/probe_source.h"
#include "sources/probes/symbols.h"

namespace pm::test {
namespace {

namespace fs = std::filesystem;
constexpr uid_t kNobody = 65534;

// A file mapped read-only and private, as a process running it maps its text: the kernel
// plants every uprobe registered on the file's inode in such a mapping, so a byte of the
// mapping that differs from the file's own bytes is a breakpoint someone put in that file.
class Mapped {
 public:
  explicit Mapped(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) return;
    size_ = static_cast<size_t>(st.st_size);
    pristine_.resize(size_);
    if (::pread(fd.get(), pristine_.data(), size_, 0) != static_cast<ssize_t>(size_)) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p != MAP_FAILED) at_ = static_cast<const unsigned char*>(p);
  }
  ~Mapped() {
    if (at_ != nullptr) ::munmap(const_cast<unsigned char*>(at_), size_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  [[nodiscard]] bool ok() const { return at_ != nullptr; }
  [[nodiscard]] bool untouched() const { return std::memcmp(at_, pristine_.data(), size_) == 0; }
  [[nodiscard]] unsigned char at(uint64_t off) const { return off < size_ ? at_[off] : 0; }

 private:
  const unsigned char* at_ = nullptr;
  size_t size_ = 0;
  std::vector<unsigned char> pristine_;
};

std::pair<uint64_t, uint64_t> id_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

// A directory where renames are quick: the racer makes thousands. /dev/shm where files there
// can be mapped for execution (a uprobe goes only into such mappings), else the scratch disk.
std::string fast_base() {
  struct statvfs vfs {};
  if (::statvfs("/dev/shm", &vfs) == 0 && (vfs.f_flag & ST_NOEXEC) == 0 && ::access("/dev/shm", W_OK) == 0) {
    return "/dev/shm/pm-probe-safety-" + std::to_string(::getpid());
  }
  return temp_base();
}

// A user's directory with their copy of pm-many-functions (app.real) and, beside it, a
// root-owned directory with a copy of pm-workload (which has no f37). A racer process of that
// user keeps replacing `app` by a hard link to app.real and by a symlink to root's file.
class SwappedBinary {
 public:
  SwappedBinary() {
    base_ = fast_base();
    root_dir_ = base_ + "-root";
    user_dir_ = base_ + "-user";
    fs::create_directories(root_dir_);
    fs::create_directories(user_dir_);
    ::chmod(root_dir_.c_str(), 0755);
    victim_ = root_dir_ + "/victim";
    real_ = user_dir_ + "/app.real";
    app_ = user_dir_ + "/app";
    fs::copy_file(workload(), victim_);
    fs::copy_file(PM_MANY_FUNCTIONS, real_);
    ::chmod(victim_.c_str(), 0755);
    ::chmod(real_.c_str(), 0755);
    ok_ = ::chown(user_dir_.c_str(), kNobody, kNobody) == 0 && ::chown(real_.c_str(), kNobody, kNobody) == 0 &&
          ::link(real_.c_str(), app_.c_str()) == 0;
  }
  ~SwappedBinary() {
    stop();
    std::error_code ec;
    fs::remove_all(root_dir_, ec);
    fs::remove_all(user_dir_, ec);
  }
  SwappedBinary(const SwappedBinary&) = delete;
  SwappedBinary& operator=(const SwappedBinary&) = delete;

  // The racer, as the unprivileged user: it can do this because the directory is theirs.
  // Returns once the racer has swapped the path at least once (on a loaded machine it may not
  // run at once).
  void start() {
    racer_ = ::fork();
    if (racer_ != 0) {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      struct stat st {};
      while (std::chrono::steady_clock::now() < until && !(::lstat(app_.c_str(), &st) == 0 && S_ISLNK(st.st_mode))) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      return;
    }
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(1);
    // Busy, but below perf-monitor: the machine has few CPUs.
    if (::nice(19) == -1) ::_exit(1);
    std::string tmp_link = user_dir_ + "/.l", tmp_hard = user_dir_ + "/.h";
    for (;;) {
      ::unlink(tmp_link.c_str());
      if (::symlink(victim_.c_str(), tmp_link.c_str()) == 0) ::rename(tmp_link.c_str(), app_.c_str());
      ::unlink(tmp_hard.c_str());
      if (::link(real_.c_str(), tmp_hard.c_str()) == 0) ::rename(tmp_hard.c_str(), app_.c_str());
    }
  }
  // The racer's winning move, made at once: `app` becomes a symlink to root's file.
  bool swap_to_symlink() {
    std::string tmp = user_dir_ + "/.s";
    ::unlink(tmp.c_str());
    return ::symlink(victim_.c_str(), tmp.c_str()) == 0 && ::rename(tmp.c_str(), app_.c_str()) == 0;
  }
  bool swap_to_hard_link() {
    std::string tmp = user_dir_ + "/.t";
    ::unlink(tmp.c_str());
    return ::link(real_.c_str(), tmp.c_str()) == 0 && ::rename(tmp.c_str(), app_.c_str()) == 0;
  }
  void stop() {
    if (racer_ <= 0) return;
    ::kill(racer_, SIGKILL);
    ::waitpid(racer_, nullptr, 0);
    racer_ = -1;
  }
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] const std::string& app() const { return app_; }
  [[nodiscard]] const std::string& real() const { return real_; }
  [[nodiscard]] const std::string& victim() const { return victim_; }

 private:
  std::string base_, root_dir_, user_dir_, victim_, real_, app_;
  pid_t racer_ = -1;
  bool ok_ = false;
};

class ProbeSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: attaching uprobes and loading BPF programs";
  }
};

// The race won outright: the path is swapped for a symlink to root's file after the symbols
// were read and before the probe is attached, once with a uprobe_multi link and once with
// perf-event uprobes. The breakpoint is in the user's file (seen in a mapping of it), and
// root's file, mapped the same way, is untouched.
TEST_F(ProbeSafetyTest, ASwappedPathNeverPutsTheUprobeInAnotherFile) {
  SwappedBinary bin;
  ASSERT_TRUE(bin.ok()) << "setting up the user's directory";
  Mapped victim(bin.victim()), real(bin.real());
  ASSERT_TRUE(victim.ok() && real.ok());
  for (const char* multi : {"1", "0"}) {
    SCOPED_TRACE(std::string("PERF_MONITOR_UPROBE_MULTI=") + multi);
    ::setenv("PERF_MONITOR_UPROBE_MULTI", multi, 1);
    ASSERT_TRUE(bin.swap_to_hard_link());
    auto r = probes::resolve_probe({bin.app(), "f37", 0});
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->file, id_of(bin.real()));
    ASSERT_TRUE(bin.swap_to_symlink());
    ProbeTarget target{BpfLoadOptions{}, {*r}, {}};
    auto source = make_probe_source(target);
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ(real.at(r->offset), 0xCC) << "the breakpoint is in the file the symbols came from";
    EXPECT_TRUE(victim.untouched()) << "a uprobe landed in root's file";
  }
  ::unsetenv("PERF_MONITOR_UPROBE_MULTI");
}

// 200 resolutions while the user's racer swaps the path as fast as it can: each one that
// finds f37 holds the user's file open, reads its offset from it, and hands the kernel a path
// to that very file; each other met root's file (which has no f37). Both happened: the race
// was live.
TEST_F(ProbeSafetyTest, ResolvingWhileThePathIsSwappedHoldsTheFileItRead) {
  SwappedBinary bin;
  ASSERT_TRUE(bin.ok()) << "setting up the user's directory";
  const auto real_id = id_of(bin.real());
  auto truth = probes::resolve_probe({bin.real(), "f37", 0});
  ASSERT_TRUE(truth) << truth.error().message;
  bin.start();
  int held = 0, met_symlink = 0, tries = 0;
  // 200, and more while one outcome has not happened yet (the racer preempted a while).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (; tries < 200 || ((held == 0 || met_symlink == 0) && std::chrono::steady_clock::now() < until); ++tries) {
    auto r = probes::resolve_probe({bin.app(), "f37", 0});
    if (!r) {
      EXPECT_NE(r.error().message.find("no function 'f37'"), std::string::npos) << r.error().message;
      ++met_symlink;
      continue;
    }
    ++held;
    EXPECT_EQ(r->file, real_id);
    EXPECT_EQ(r->offset, truth->offset);
    EXPECT_EQ(id_of(r->attach_path()), real_id) << r->attach_path();
  }
  bin.stop();
  std::printf("%d resolutions: %d held the user's file, %d met the symlink\n", tries, held, met_symlink);
  EXPECT_GT(held, 0);
  EXPECT_GT(met_symlink, 0) << "the racer never won an open: the race was not tried";
}

// The same through the binary: `run --probe` while the user swaps the path, and a thread that
// keeps comparing a mapping of root's file with its bytes. Each run either probes the user's
// file (its f37 counted exactly) or stops at a usage error (the symlink met, no f37 there).
TEST_F(ProbeSafetyTest, RunWithASwappedPathProbesOnlyTheUsersFile) {
  SwappedBinary bin;
  ASSERT_TRUE(bin.ok()) << "setting up the user's directory";
  Mapped victim(bin.victim());
  ASSERT_TRUE(victim.ok());
  bin.start();
  std::atomic<bool> done{false}, touched{false};
  std::thread watch([&] {
    while (!done && !touched) {
      if (!victim.untouched()) touched = true;
      // A planted probe stays for the whole run: a look per millisecond sees it.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  // Until one run probed (each meets the symlink at one of its two resolutions about three
  // times in four, and then ends at once), at most 20.
  int probed = 0, runs = 0;
  for (; runs < 20 && probed < 1; ++runs) {
    Outcome o = run_pm({"run", "--format", "json", "--probe", bin.app() + ":f37", "--", bin.real(), "1000"});
    // The command line is checked first (a usage error), then the probe source resolves again
    // (unavailable, the rest runs): either may meet the symlink.
    const auto& unavailable = o.summary.is_null() ? nlohmann::json() : o.summary["unavailable"];
    if (o.exit_code == 0 && !unavailable.contains("probe")) {
      ++probed;
      EXPECT_EQ(o.summary["probe"]["calls"]["f37"], 1000) << o.out;
    } else if (o.exit_code == 0) {
      EXPECT_NE(unavailable["probe"].get<std::string>().find("no function 'f37'"), std::string::npos) << unavailable;
    } else {
      EXPECT_EQ(o.exit_code, 2) << o.err;
      EXPECT_NE(o.err.find("no function 'f37'"), std::string::npos) << o.exit_code << ": " << o.err;
    }
  }
  done = true;
  watch.join();
  bin.stop();
  EXPECT_FALSE(touched) << "a uprobe landed in root's file";
  EXPECT_TRUE(victim.untouched());
  std::printf("%d runs: %d probed the user's file\n", runs, probed);
}

// Bytes a terminal would act on, or that are not UTF-8: none in text output.
std::string bad_bytes(const std::string& s) {
  std::string why;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      why += "control byte " + std::to_string(c) + " at " + std::to_string(i) + "; ";
      continue;
    }
    if (c < 0x80) continue;
    size_t n = c >= 0xf0 && c < 0xf5 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : 0;
    bool valid = n > 0 && i + n < s.size();
    for (size_t k = 1; valid && k <= n; ++k) valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (!valid) why += "invalid UTF-8 at " + std::to_string(i) + "; ";
    if (valid && n == 1 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      why += "C1 control at " + std::to_string(i) + "; ";
    }
    if (valid) i += n;
  }
  return why;
}

// A copy of pm-many-functions whose f37 and f38 are renamed to names that set the terminal's
// title, clear the screen and are not UTF-8 (objcopy), probed by the exact name, and misspelt.
TEST_F(ProbeSafetyTest, SymbolNamesWithEscapeSequencesNeverReachTheTerminal) {
  if (std::system("objcopy --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs objcopy (binutils)";
  const std::string evil = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mf37\xff\xfe\x9b";
  const std::string evil2 = "f38\x1b[6n\xc3";
  std::string bin = temp_base() + "-odd-names";
  fs::copy_file(PM_MANY_FUNCTIONS, bin);
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string a = "f37=" + evil, b = "f38=" + evil2;
    ::execlp("objcopy", "objcopy", "--redefine-sym", a.c_str(), "--redefine-sym", b.c_str(), bin.c_str(),
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "objcopy failed";
  ::chmod(bin.c_str(), 0755);

  // Misspelt: the hint lists the name.
  Outcome miss = run_pm({"run", "--probe", bin + ":" + evil.substr(0, evil.size() - 1), "--", "true"});
  EXPECT_EQ(miss.exit_code, 2) << miss.err;
  EXPECT_NE(miss.err.find("closest:"), std::string::npos) << miss.err;
  EXPECT_NE(miss.err.find("PWNED"), std::string::npos) << miss.err;
  EXPECT_EQ(bad_bytes(miss.err), "") << miss.err;
  EXPECT_EQ(bad_bytes(miss.out), "");

  // Probed by the exact bytes: counted, and shown without them in intervals and summary.
  Outcome text = run_pm({"run", "--interval", "100ms", "--probe", bin + ":" + evil + ":arg1", "--probe",
                         bin + ":" + evil2, "--", "sh", "-c", "\"$0\" 1000 && sleep 0.35", bin});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.report.find("PWNED"), std::string::npos) << text.report;
  EXPECT_NE(text.report.find("calls/s"), std::string::npos) << "an interval line of the probe: " << text.report;
  size_t request = text.report.find("\n  request ");
  ASSERT_NE(request, std::string::npos) << "the slowest requests: " << text.report;
  EXPECT_NE(text.report.substr(request, text.report.find('\n', request + 1) - request).find("PWNED"), std::string::npos);
  EXPECT_EQ(bad_bytes(text.out), "");
  EXPECT_EQ(bad_bytes(text.err), "") << text.err;

  // JSON Lines: every line parses, the name's control bytes escaped, its invalid bytes replaced.
  Outcome json = run_pm({"run", "--format", "json", "--probe", bin + ":" + evil + ":arg1", "--", bin, "1000"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  // On standard error the records and perf-monitor's own one-line messages ("perf-monitor: ...").
  std::istringstream lines(json.report);
  int parsed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("perf-monitor: ")) continue;
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
    EXPECT_EQ(bad_bytes(line), "") << line;
    ++parsed;
  }
  EXPECT_GT(parsed, 1);
  ASSERT_FALSE(json.summary.is_null()) << json.report;
  double calls = -1;
  for (const auto& [name, v] : json.summary["probe"]["calls"].items()) {
    if (name.find("\x1b]0;PWNED\x07") != std::string::npos) calls = v.get<double>();
  }
  EXPECT_EQ(calls, 1000) << json.summary["probe"].dump();
  ASSERT_TRUE(json.summary["slowest_requests"].is_array()) << json.report;
  EXPECT_NE(json.summary["slowest_requests"][0]["function"].get<std::string>().find("PWNED"), std::string::npos);
  EXPECT_EQ(bad_bytes(json.err), "") << json.err;
  fs::remove(bin);
}

}  // namespace
}  // namespace pm::test
