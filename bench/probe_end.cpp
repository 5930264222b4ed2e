// SPDX-License-Identifier: Apache-2.0
// How quickly a `run` with many probes ends: from the command's exit to the summary on
// perf-monitor's output, and to perf-monitor's own exit (when its caller gets the status).
//
//   probe_end PERF_MONITOR MANY_FUNCTIONS [PROBES] [ROUNDS]
//
// MANY_FUNCTIONS is tests/pm-many-functions (80 functions f0..f79, each called once per round
// of its loop). Each round runs `perf-monitor run --probe MANY:f0 ... -- sh -c 'MANY 1000;
// date'` twice: as perf-monitor chooses (uprobe_multi links where the kernel has them) and with
// PERF_MONITOR_UPROBE_MULTI=0 (one perf-event uprobe per function and return, as on kernels
// before 6.6). Prints the median of each figure.
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

double now() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Round {
  double summary_after = -1;  // seconds from the command's exit to the summary's first line
  double exit_after = -1;     // ... to perf-monitor's exit
};

Round run(const std::string& pm, const std::string& many, int probes, bool classic) {
  std::string stamp = "/tmp/pm-probe-end-" + std::to_string(::getpid());
  std::vector<std::string> args = {pm, "run", "-o", "/dev/stdout"};
  for (int i = 0; i < probes; ++i) {
    args.emplace_back("--probe");
    args.push_back(many + ":f" + std::to_string(i));
  }
  args.insert(args.end(), {"--", "sh", "-c", many + " 1000 > /dev/null; date +%s.%N > " + stamp});
  int out[2];
  if (::pipe(out) != 0) std::exit(1);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (classic) ::setenv("PERF_MONITOR_UPROBE_MULTI", "0", 1);
    ::dup2(out[1], 1);
    ::freopen("/dev/null", "w", stderr);  // the usual "not available" lines
    ::close(out[0]);
    ::close(out[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(pm.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  Round r;
  double summary_at = -1;
  std::string seen;
  char buf[65536];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) {
    seen.append(buf, static_cast<size_t>(n));
    if (summary_at < 0 && seen.find("=== perf-monitor summary") != std::string::npos) summary_at = now();
    if (seen.size() > (1 << 20)) seen.erase(0, seen.size() - 64);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  double exit_at = now();
  ::close(out[0]);
  double ended = 0;
  std::ifstream(stamp) >> ended;
  std::remove(stamp.c_str());
  if (ended <= 0 || summary_at < 0) {
    std::fprintf(stderr, "probe_end: the run failed (status %d)\n", status);
    return r;
  }
  r.summary_after = summary_at - ended;
  r.exit_after = exit_at - ended;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: probe_end PERF_MONITOR MANY_FUNCTIONS [PROBES] [ROUNDS]\n");
    return 2;
  }
  std::string pm = argv[1], many = argv[2];
  int probes = argc > 3 ? std::atoi(argv[3]) : 62;
  int rounds = argc > 4 ? std::atoi(argv[4]) : 3;
  std::printf("%d probes; seconds from the command's exit (median of %d)\n", probes, rounds);
  std::printf("%-44s %10s %10s\n", "attachment", "summary", "exit");
  for (bool classic : {false, true}) {
    std::vector<double> summary, exit;
    for (int i = 0; i < rounds; ++i) {
      Round r = run(pm, many, probes, classic);
      summary.push_back(r.summary_after);
      exit.push_back(r.exit_after);
    }
    std::printf("%-44s %10.3f %10.3f\n",
                classic ? "a perf-event uprobe per function and return" : "as chosen (uprobe_multi links on 6.6+)",
                median(summary), median(exit));
  }
  return 0;
}
