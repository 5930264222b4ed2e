// SPDX-License-Identifier: Apache-2.0
// perf-monitor runs as root and writes where it is told, often into a directory another user
// owns (`report ~user/run.jsonl` writes ~user/run.html). Tried as that user would: a symbolic
// link planted at the output path to a root-owned file, or a file of their own there, must be
// refused with one line and exit 2, the link's target and their file unchanged; an ordinary
// output must still come out whole, replace an older one only at the end, and leave nothing
// behind.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "integration/harness.h"

namespace pm::test {
namespace {

constexpr uid_t kNobody = 65534;

// The error lines of stderr: `report` may also warn about its input first (a short recording).
size_t error_lines(const std::string& err) {
  size_t n = 0;
  for (size_t at = 0; at < err.size();) {
    size_t end = err.find('\n', at);
    if (end == std::string::npos) end = err.size();
    if (err.compare(at, 23, "perf-monitor: warning: ") != 0) ++n;
    at = end + 1;
  }
  return n;
}

void write_to(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string link_target(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

class OutputSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the attacker's directory belongs to uid " << kNobody;
    base_ = temp_base();
    // What the attacker wants overwritten: a root-owned file outside their reach.
    victim_ = base_ + "-victim";
    write_to(victim_, kVictimText);
    ::chmod(victim_.c_str(), 0644);
    // The attacker's own directory, where root is asked to write.
    home_ = base_ + "-home";
    ASSERT_EQ(::mkdir(home_.c_str(), 0755), 0);
    ASSERT_EQ(::chown(home_.c_str(), kNobody, kNobody), 0);
  }
  void TearDown() override {
    for (const std::string& n : entries(home_)) ::unlink((home_ + "/" + n).c_str());
    ::rmdir(home_.c_str());
    ::unlink(victim_.c_str());
  }

  // A link at name in the attacker's directory to the victim, owned by them.
  std::string plant_link(const std::string& name) {
    std::string link = home_ + "/" + name;
    EXPECT_EQ(::symlink(victim_.c_str(), link.c_str()), 0);
    EXPECT_EQ(::lchown(link.c_str(), kNobody, kNobody), 0);
    return link;
  }
  // A small recording of the attacker's, for `report` to read.
  std::string plant_recording(const std::string& name) {
    std::string rec = home_ + "/" + name;
    std::string made = base_ + "-made.jsonl";
    Outcome o = run_pm({"run", "--format", "json", "--interval", "100ms", "-o", made, "--", "sleep", "0.3"});
    EXPECT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(std::rename(made.c_str(), rec.c_str()), 0);
    EXPECT_EQ(::chown(rec.c_str(), kNobody, kNobody), 0);
    return rec;
  }
  void expect_refused(const Outcome& o, const std::string& what, const std::string& words) {
    EXPECT_EQ(o.exit_code, 2) << what << ": " << o.err;
    EXPECT_EQ(error_lines(o.err), 1u) << what << ": " << o.err;
    EXPECT_NE(o.err.find(words), std::string::npos) << what << ": " << o.err;
    EXPECT_EQ(slurp(victim_), kVictimText) << what << ": the link's target was written";
  }

  static constexpr const char* kVictimText = "root:only-root-may-change-this\n";
  std::string base_, victim_, home_;
};

TEST_F(OutputSafetyTest, LinkPlantedAtOutputIsNotFollowed) {
  std::string link = plant_link("out.jsonl");
  expect_refused(run_pm({"run", "--duration", "1s", "-o", link, "--", "true"}), "run -o LINK", "symbolic link");
  expect_refused(run_pm({"--duration", "1s", "--format", "json", "-o", link}), "live -o LINK", "symbolic link");
  // A link root made itself is refused too where the attacker could have replaced it.
  std::string own = home_ + "/root-made";
  ASSERT_EQ(::symlink(victim_.c_str(), own.c_str()), 0);
  expect_refused(run_pm({"run", "-o", own, "--", "true"}), "root's link in their directory", "symbolic link");
  EXPECT_EQ(link_target(link), victim_);  // the link itself left as it was, nothing else created
  EXPECT_EQ(entries(home_), (std::vector<std::string>{"out.jsonl", "root-made"}));
}

TEST_F(OutputSafetyTest, ReportDoesNotFollowALinkBesideItsInput) {
  std::string rec = plant_recording("run.jsonl");
  std::string page = plant_link("run.html");
  expect_refused(run_pm({"report", rec}), "report REC (REC.html a link)", "symbolic link");
  std::string other = plant_link("elsewhere.html");
  expect_refused(run_pm({"report", rec, "-o", other}), "report -o LINK", "symbolic link");
  expect_refused(run_pm({"report", rec, "--format", "json", "-o", other}), "report --format json -o LINK",
                 "symbolic link");
  EXPECT_EQ(link_target(page), victim_);
  EXPECT_EQ(entries(home_), (std::vector<std::string>{"elsewhere.html", "run.html", "run.jsonl"}));
}

TEST_F(OutputSafetyTest, AnotherUsersFileIsNotOverwritten) {
  std::string theirs = home_ + "/theirs.jsonl";
  write_to(theirs, "their data\n");
  ASSERT_EQ(::chown(theirs.c_str(), kNobody, kNobody), 0);
  Outcome o = run_pm({"run", "-o", theirs, "--", "true"});
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("another user (uid 65534)"), std::string::npos) << o.err;
  std::string rec = plant_recording("run.jsonl");
  std::string page = home_ + "/run.html";
  write_to(page, "their page\n");
  ASSERT_EQ(::chown(page.c_str(), kNobody, kNobody), 0);
  Outcome r = run_pm({"report", rec});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(error_lines(r.err), 1u) << r.err;
  EXPECT_EQ(slurp(theirs), "their data\n");
  EXPECT_EQ(slurp(page), "their page\n");
  EXPECT_EQ(entries(home_), (std::vector<std::string>{"run.html", "run.jsonl", "theirs.jsonl"}));
}

// The ordinary cases are unchanged for the user: a new file, an own file replaced (its
// permissions kept), devices, a report beside its recording.
TEST_F(OutputSafetyTest, OrdinaryOutputsAreWrittenWhole) {
  std::string dir = base_ + "-mine";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  std::string fresh = dir + "/new.jsonl";
  Outcome o = run_pm({"run", "--format", "json", "-o", fresh, "--", "true"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::string text = slurp(fresh);
  EXPECT_EQ(text.rfind("{\"type\":\"header\"", 0), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("\"type\":\"summary\""), std::string::npos);
  EXPECT_EQ(text.back(), '\n');

  std::string old = dir + "/old.txt";
  write_to(old, std::string(100000, 'x'));  // longer than the report: a leftover tail would show
  ::chmod(old.c_str(), 0600);
  o = run_pm({"run", "-o", old, "--", "true"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  text = slurp(old);
  EXPECT_EQ(text.rfind("=== perf-monitor summary", 0), 0u) << text.substr(0, 200);
  EXPECT_EQ(text.find('x' + std::string(10, 'x')), std::string::npos) << "the old file's bytes are left";
  struct stat st {};
  ASSERT_EQ(::stat(old.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  std::string page = dir + "/new.html";
  Outcome r = run_pm({"report", fresh});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(page).find("</html>"), std::string::npos);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"new.html", "new.jsonl", "old.txt"}));  // no temporary left

  EXPECT_EQ(run_pm({"run", "-o", "/dev/null", "--", "true"}).exit_code, 0);
  // The caller's own link (/dev/stdout, in root's /dev) is followed: here to the harness's file.
  o = run_pm({"run", "-o", "/dev/stdout", "--", "true"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("=== perf-monitor summary", 0), 0u) << o.out.substr(0, 200);
  for (const std::string& n : entries(dir)) ::unlink((dir + "/" + n).c_str());
  ::rmdir(dir.c_str());
}

// Until monitoring ends the data is in a temporary file beside FILE, and FILE is as it was;
// Ctrl-C puts the whole recording in its place; a run that fails leaves FILE alone.
TEST_F(OutputSafetyTest, FileIsReplacedOnlyWhenMonitoringEnds) {
  std::string dir = base_ + "-live";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  std::string path = dir + "/live.jsonl";
  write_to(path, "previous recording\n");
  RunningPm pm({"--format", "json", "--interval", "200ms", "-o", path});
  std::string temp;
  for (int i = 0; i < 1500 && temp.empty(); ++i) {
    for (const std::string& n : entries(dir)) {
      if (n.rfind(".live.jsonl.", 0) == 0 && slurp(dir + "/" + n).find("\"type\":\"interval\"") != std::string::npos) {
        temp = n;
      }
    }
    if (temp.empty()) ::usleep(20000);
  }
  ASSERT_FALSE(temp.empty()) << "no temporary file with an interval beside " << path << ": " << pm.err_so_far();
  EXPECT_EQ(slurp(path), "previous recording\n");
  Outcome o = pm.stop(SIGINT);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::string text = slurp(path);
  EXPECT_EQ(text.rfind("{\"type\":\"header\"", 0), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("\"type\":\"summary\""), std::string::npos) << text.substr(0, 200);
  EXPECT_EQ(entries(dir), std::vector<std::string>{"live.jsonl"});

  write_to(path, "keep\n");
  o = run_pm({"run", "-o", path, "--", dir + "/no-such-command"});
  EXPECT_EQ(o.exit_code, 127) << o.err;
  EXPECT_EQ(slurp(path), "keep\n");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"live.jsonl"});
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

// The attacker plants the link only once perf-monitor writes its temporary file: the rename
// at the end does not replace what they put there, and the data stays where it was written.
TEST_F(OutputSafetyTest, LinkPlantedWhileMonitoringIsNotReplaced) {
  std::string path = home_ + "/late.jsonl";
  RunningPm pm({"--format", "json", "--interval", "200ms", "-o", path});
  std::string temp;
  for (int i = 0; i < 1500 && temp.empty(); ++i) {
    for (const std::string& n : entries(home_)) {
      if (n.rfind(".late.jsonl.", 0) == 0 && slurp(home_ + "/" + n).find("\"type\":\"header\"") != std::string::npos) {
        temp = n;
      }
    }
    if (temp.empty()) ::usleep(20000);
  }
  ASSERT_FALSE(temp.empty()) << "no temporary file beside " << path << ": " << pm.err_so_far();
  plant_link("late.jsonl");
  Outcome o = pm.stop(SIGINT);
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_NE(o.err.find("the output is in " + home_ + "/" + temp), std::string::npos) << o.err;
  EXPECT_EQ(slurp(victim_), kVictimText);
  EXPECT_EQ(link_target(path), victim_);
  EXPECT_NE(slurp(home_ + "/" + temp).find("\"type\":\"summary\""), std::string::npos);
}

}  // namespace
}  // namespace pm::test
