// SPDX-License-Identifier: Apache-2.0
// Workloads with known behaviour, for the integration tests and benchmarks: the truth they
// measure perf-monitor against.
//
//   pm-workload touch MIB HOLD_MS        wait 250 ms (so a monitor sees the small process first),
//                                        map MIB of anonymous memory, touch every page, hold
//   pm-workload write MIB PATH           write MIB to PATH in 1 MiB chunks, fsync, unlink
//   pm-workload spin MS                  burn MS milliseconds of CPU time
//   pm-workload children N MIB WMIB MS   N children each touch MIB, write WMIB (fsync) and spin
//                                        MS; they all exit, then the parent lingers 300 ms
//   pm-workload forks N                  N children that exit at once; then linger 300 ms
//   pm-workload orphan WMIB MS           a child forks a grandchild and exits at once; the
//                                        grandchild writes WMIB (fsync), spins MS and exits;
//                                        the parent waits for the grandchild's end
//   pm-workload sleepers N MS            a tree of N processes (the parent and N-1 children)
//                                        that sleep MS
//   pm-workload pingpong N               N round trips of one byte between the process and a
//                                        child over two pipes, both pinned to one CPU and
//                                        SCHED_FIFO (no preemption), so that every trip is
//                                        exactly 2 blocking switches and 2 wakeups
//   pm-workload crosspong N              N round trips of one byte between two ordinary processes
//                                        pinned to two CPUs (each wakeup wakes an idle CPU)
//   pm-workload naps N MS                sleep N times for MS (blocked, off CPU)
//   pm-workload direct MIB PATH          write MIB to PATH with O_DIRECT (1 MiB aligned writes,
//                                        straight to the device), fsync, unlink
//   pm-workload cputime MS               spin MS of CPU time, then print this process's own
//                                        rusage as "cpu_seconds=S" (the kernel's truth)
//   pm-workload exit CODE                exit with CODE
//   pm-workload sleep MS                 sleep
//   pm-workload measure OUT CMD ARGS...  the independent truth of a tree: runs CMD as a child
//                                        subreaper, reaps every descendant, then writes to OUT
//                                        what the kernel's own reap accounting says of them and of
//                                        itself (getrusage SELF + CHILDREN, /proc/self/io):
//                                        key=value lines; exits with CMD's status
//   pm-workload latereap N MS WMIB       N children each spin 100 ms and write then read back
//                                        WMIB (fsync) and exit; the parent reaps them MS later
//   pm-workload threads N MS             N threads each spin MS and nap 20 times 1 ms, then
//                                        exit; the process lingers 200 ms after them
//   pm-workload shared MIB N HOLD_MS     MIB of MAP_SHARED memory touched by the parent, then
//                                        read by N children: all hold it HOLD_MS (the tree's
//                                        PSS is then MIB plus what each has of its own)
//   pm-workload forktree N M             N children one after the other, each forking M
//                                        grandchildren that exit at once: 1 + N + N*M processes
//   pm-workload writes N                 N write() calls of one byte to /dev/null
//   pm-workload blip MIB                 touch MIB of anonymous memory and exit at once (a short
//                                        process whose peak RSS no sampling catches)
//   pm-workload shortlived N MS NAME     N children started one after another, each named NAME
//                                        (its comm), spinning MS and exiting; the parent reaps them
//   pm-workload cloneinto DIR MS         a child forked straight into cgroup DIR (clone3's
//                                        CLONE_INTO_CGROUP) spins MS; the parent waits for it
//   pm-workload ignchld N MS             ignore SIGCHLD (the kernel reaps the children itself, and
//                                        their figures reach no parent), fork N children that each
//                                        spin MS, wait until all are gone
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kMiB = 1 << 20;

void sleep_ms(long ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void touch(size_t mib, long hold_ms) {
  size_t len = mib * kMiB;
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  auto* bytes = static_cast<volatile char*>(p);
  long page = ::sysconf(_SC_PAGESIZE);
  for (size_t off = 0; off < len; off += static_cast<size_t>(page)) bytes[off] = 1;
  sleep_ms(hold_ms);
  ::munmap(p, len);
}

void write_file(size_t mib, const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::vector<char> chunk(kMiB, 'x');
  for (size_t i = 0; i < mib; ++i) {
    if (::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
      std::perror("write");
      std::exit(1);
    }
  }
  ::fsync(fd);
  ::close(fd);
  ::unlink(path.c_str());
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Burns `ms` of CPU time (not wall time: with more spinners than CPUs each still gets its share).
void spin(long ms) {
  double end = thread_cpu_seconds() + static_cast<double>(ms) / 1000.0;
  volatile uint64_t x = 0;
  while (thread_cpu_seconds() < end) {
    for (int i = 0; i < 10000; ++i) x = x + static_cast<uint64_t>(i);
  }
}

std::string tmp_path(const char* tag) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/pm-workload-" + tag + "-" + std::to_string(::getpid());
}

// /proc/self/io, or one thread's /proc/self/task/TID/io, as "key: value" pairs.
std::vector<std::pair<std::string, unsigned long long>> read_io(const std::string& path) {
  std::vector<std::pair<std::string, unsigned long long>> out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return out;
  buf[n] = 0;
  char key[64];
  unsigned long long v = 0;
  for (char* line = std::strtok(buf, "\n"); line != nullptr; line = std::strtok(nullptr, "\n")) {
    if (std::sscanf(line, "%63[^:]: %llu", key, &v) == 2) out.emplace_back(key, v);
  }
  return out;
}

// measure's report: the reap accounting and I/O, formatted into `text`; its length.
int format_truth(char* text, size_t size, const rusage& before, const rusage& self, const rusage& children,
                 const std::vector<std::pair<std::string, unsigned long long>>& own,
                 const std::vector<std::pair<std::string, unsigned long long>>& whole) {
  auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  int len = std::snprintf(
      text, size,
      "children_user_s=%.6f\nchildren_system_s=%.6f\nchildren_minflt=%ld\nchildren_majflt=%ld\n"
      "children_nvcsw=%ld\nchildren_nivcsw=%ld\nchildren_maxrss_kib=%ld\n"
      "self_user_s=%.6f\nself_system_s=%.6f\nself_minflt=%ld\nself_majflt=%ld\nself_nvcsw=%ld\nself_nivcsw=%ld\n",
      sec(children.ru_utime), sec(children.ru_stime), children.ru_minflt, children.ru_majflt, children.ru_nvcsw,
      children.ru_nivcsw, children.ru_maxrss, sec(self.ru_utime), sec(self.ru_stime), self.ru_minflt, self.ru_majflt,
      self.ru_nvcsw, self.ru_nivcsw);
  for (const auto& [key, v] : whole) {
    unsigned long long mine = 0;
    for (const auto& [k, o] : own) {
      if (k == key) mine = o;
    }
    len += std::snprintf(text + len, size - static_cast<size_t>(len), "children_io_%s=%llu\nself_io_%s=%llu\n",
                         key.c_str(), v - std::min(v, mine), key.c_str(), mine);
  }
  len += std::snprintf(text + len, size - static_cast<size_t>(len),
                       "start_nvcsw=%ld\nstart_nivcsw=%ld\nstart_minflt=%ld\n", before.ru_nvcsw, before.ru_nivcsw,
                       before.ru_minflt);
  return len;
}

// The measure mode: the kernel's reap accounting of a whole tree, as the truth to compare with.
int measure(const char* out_path, char** cmd) {
  // What this process did before it was measure: perf-monitor's own code between its fork and
  // the exec (held there until monitoring began), and the exec. A tree is counted from that hold
  // on, so this bounds what the truth holds and the tree cannot.
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  // Created before the command runs: creating it after the measurement would dirty directory and
  // inode blocks that the measurement cannot include.
  int out = ::open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return 1;
  // Everything done after the measurement is done once before it: what perf-monitor counts and
  // the measurement cannot (a page of code or data touched for the first time is a minor fault)
  // is then only the few steps from the measurement to the exit, which fault in nothing new.
  std::string own_path = "/proc/self/task/" + std::to_string(::getpid()) + "/io";
  static char text[4096];
  format_truth(text, sizeof text, before, before, before, read_io(own_path), read_io("/proc/self/io"));
  if (::write(out, text, 0) != 0) return 1;
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // posix_spawn (a child sharing this memory until its exec), not fork: a fork would make every
  // page of this process copy-on-write, and each one written after it (the stack, the heap, the
  // report's buffer) a fault of its own after the measurement.
  pid_t child = -1;
  int status = 0, root_status = 127 << 8;
  if (::posix_spawnp(&child, cmd[0], nullptr, nullptr, cmd, environ) != 0) child = -1;
  for (;;) {
    pid_t p = ::wait(&status);
    if (p < 0) break;  // ECHILD: every descendant reaped
    if (p == child) root_status = status;
  }
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  // The process's I/O holds its reaped children's; its own thread's is taken out. Its own is read
  // first: I/O of its own in between (a page of its code read in from disk) is then in the
  // whole too, and the part is never more than the whole.
  auto own = read_io(own_path);
  auto whole = read_io("/proc/self/io");
  int len = format_truth(text, sizeof text, before, self, children, own, whole);
  if (::write(out, text, static_cast<size_t>(len)) != len) ::_exit(1);
  ::close(out);
  // No exit handlers, destructors or stdio flush: nothing more of this process to count.
  ::_exit(WIFEXITED(root_status) ? WEXITSTATUS(root_status) : 128 + WTERMSIG(root_status));
}

int usage() {
  std::fprintf(stderr, "usage: pm-workload touch|write|spin|children|forks|orphan|exit|sleep ARGS (see source)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string mode = argv[1];
  auto arg = [&](int i) { return i < argc ? std::atol(argv[i]) : 0L; };
  if (mode == "touch" && argc == 4) {
    sleep_ms(250);
    touch(static_cast<size_t>(arg(2)), arg(3));
  } else if (mode == "write" && argc == 4) {
    write_file(static_cast<size_t>(arg(2)), argv[3]);
  } else if (mode == "spin" && argc == 3) {
    spin(arg(2));
  } else if (mode == "cloneinto" && argc == 4) {
    int dir = ::open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return 1;
    clone_args ca{};
    ca.flags = CLONE_INTO_CGROUP;
    ca.exit_signal = SIGCHLD;
    ca.cgroup = static_cast<uint64_t>(dir);
    long pid = ::syscall(SYS_clone3, &ca, sizeof ca);
    if (pid < 0) return 1;
    if (pid == 0) {
      spin(arg(3));
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(static_cast<pid_t>(pid), &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  } else if (mode == "children" && argc == 6) {
    for (long i = 0; i < arg(2); ++i) {
      if (::fork() == 0) {
        touch(static_cast<size_t>(arg(3)), 0);
        write_file(static_cast<size_t>(arg(4)), tmp_path("child"));
        spin(arg(5));
        ::_exit(0);
      }
    }
    while (::wait(nullptr) > 0) {
    }
    sleep_ms(300);
  } else if (mode == "forks" && argc == 3) {
    for (long i = 0; i < arg(2); ++i) {
      if (::fork() == 0) ::_exit(0);
    }
    while (::wait(nullptr) > 0) {
    }
    sleep_ms(300);
  } else if (mode == "orphan" && argc == 4) {
    int done[2];
    if (::pipe(done) != 0) return 1;
    pid_t child = ::fork();
    if (child == 0) {
      if (::fork() == 0) {
        ::close(done[0]);
        sleep_ms(150);  // let the parent exit first: this process is now an orphan
        write_file(static_cast<size_t>(arg(2)), tmp_path("orphan"));
        spin(arg(3));
        ::_exit(0);  // closing the pipe's write end tells the top process we are done
      }
      ::_exit(0);
    }
    ::close(done[1]);
    ::waitpid(child, nullptr, 0);
    char c;
    while (::read(done[0], &c, 1) > 0) {
    }
    sleep_ms(200);
  } else if (mode == "sleepers" && argc == 4) {
    for (long i = 1; i < arg(2); ++i) {
      if (::fork() == 0) {
        sleep_ms(arg(3));
        ::_exit(0);
      }
    }
    sleep_ms(arg(3));
    while (::wait(nullptr) > 0) {
    }
  } else if (mode == "pingpong" && argc == 3) {
    // On two CPUs a reader may find its byte already there and not block; on one it always does.
    cpu_set_t allowed;
    if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &allowed)) {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(c, &one);
          ::sched_setaffinity(0, sizeof one, &one);
          break;
        }
      }
    }
    // A woken SCHED_NORMAL task may preempt its waker, and any other task may preempt either:
    // the preempted one then finds its byte waiting and never blocks (one wakeup for that trip
    // instead of two). Two SCHED_FIFO tasks of one priority preempt neither each other nor are
    // preempted by ordinary tasks; without the privilege, SCHED_BATCH at least does not
    // preempt on wakeup.
    sched_param fifo{};
    fifo.sched_priority = 1;
    if (::sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) {
      sched_param batch{};
      ::sched_setscheduler(0, SCHED_BATCH, &batch);
    }
    int ping[2], pong[2];
    if (::pipe(ping) != 0 || ::pipe(pong) != 0) return 1;
    long n = arg(2);
    char c = 0;
    pid_t child = ::fork();
    if (child == 0) {
      // Only our own ends stay open: if the other side dies, a read sees EOF and we exit.
      ::close(ping[1]);
      ::close(pong[0]);
      for (long i = 0; i < n; ++i) {
        if (::read(ping[0], &c, 1) != 1 || ::write(pong[1], &c, 1) != 1) ::_exit(1);
      }
      ::_exit(0);
    }
    ::close(ping[0]);
    ::close(pong[1]);
    sleep_ms(20);  // let the child block in its first read: then the first trip wakes it too
    for (long i = 0; i < n; ++i) {
      if (::write(ping[1], &c, 1) != 1 || ::read(pong[0], &c, 1) != 1) return 1;
    }
    ::waitpid(child, nullptr, 0);
  } else if (mode == "crosspong" && argc == 3) {
    // Ordinary tasks, one per CPU (the first two this process may use): each wakeup reaches a
    // CPU that idles until it comes, the case where the woken task preempts the idle task.
    cpu_set_t allowed;
    int cpus[2] = {-1, -1};
    if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
      for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; ++c) {
        if (CPU_ISSET(c, &allowed)) cpus[k++] = c;
      }
    }
    auto pin = [](int cpu) {
      if (cpu < 0) return;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      ::sched_setaffinity(0, sizeof one, &one);
    };
    int ping[2], pong[2];
    if (::pipe(ping) != 0 || ::pipe(pong) != 0) return 1;
    long n = arg(2);
    char c = 0;
    pid_t child = ::fork();
    if (child == 0) {
      pin(cpus[1]);
      ::close(ping[1]);
      ::close(pong[0]);
      for (long i = 0; i < n; ++i) {
        if (::read(ping[0], &c, 1) != 1 || ::write(pong[1], &c, 1) != 1) ::_exit(1);
      }
      ::_exit(0);
    }
    pin(cpus[0]);
    ::close(ping[0]);
    ::close(pong[1]);
    for (long i = 0; i < n; ++i) {
      if (::write(ping[1], &c, 1) != 1 || ::read(pong[0], &c, 1) != 1) return 1;
    }
    ::waitpid(child, nullptr, 0);
  } else if (mode == "cputime" && argc == 3) {
    spin(arg(2));
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
    std::printf("cpu_seconds=%.6f\n", sec(ru.ru_utime) + sec(ru.ru_stime));
  } else if (mode == "direct" && argc == 4) {
    int fd = ::open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0) {
      std::perror(argv[3]);
      return 1;
    }
    void* buf = nullptr;
    if (::posix_memalign(&buf, 4096, kMiB) != 0) return 1;
    std::memset(buf, 'x', kMiB);
    for (long i = 0; i < arg(2); ++i) {
      if (::write(fd, buf, kMiB) != static_cast<ssize_t>(kMiB)) {
        std::perror("write");
        return 1;
      }
    }
    ::fsync(fd);
    ::close(fd);
    ::unlink(argv[3]);
    std::free(buf);
  } else if (mode == "naps" && argc == 4) {
    for (long i = 0; i < arg(2); ++i) sleep_ms(arg(3));
  } else if (mode == "exit" && argc == 3) {
    return static_cast<int>(arg(2));
  } else if (mode == "sleep" && argc == 3) {
    sleep_ms(arg(2));
  } else if (mode == "measure" && argc >= 4) {
    return measure(argv[2], argv + 3);
  } else if (mode == "latereap" && argc == 5) {
    for (long i = 0; i < arg(2); ++i) {
      if (::fork() == 0) {
        spin(100);
        std::string path = tmp_path("late");
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        std::vector<char> chunk(kMiB, 'x');
        for (long m = 0; m < arg(4); ++m) {
          if (::write(fd, chunk.data(), chunk.size()) < 0) ::_exit(1);
        }
        ::fsync(fd);
        ::lseek(fd, 0, SEEK_SET);
        while (::read(fd, chunk.data(), chunk.size()) > 0) {
        }
        ::close(fd);
        ::unlink(path.c_str());
        ::_exit(0);
      }
    }
    sleep_ms(arg(3));  // the children are zombies by now
    while (::wait(nullptr) > 0) {
    }
  } else if (mode == "threads" && argc == 4) {
    std::vector<std::thread> threads;
    for (long i = 0; i < arg(2); ++i) {
      threads.emplace_back([&] {
        spin(arg(3));
        for (int n = 0; n < 20; ++n) sleep_ms(1);
      });
    }
    for (auto& t : threads) t.join();
    sleep_ms(200);
  } else if (mode == "shared" && argc == 5) {
    size_t len = static_cast<size_t>(arg(2)) * kMiB;
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    auto* bytes = static_cast<volatile char*>(p);
    long page = ::sysconf(_SC_PAGESIZE);
    for (size_t off = 0; off < len; off += static_cast<size_t>(page)) bytes[off] = 1;
    for (long i = 0; i < arg(3); ++i) {
      if (::fork() == 0) {
        volatile char sum = 0;
        for (size_t off = 0; off < len; off += static_cast<size_t>(page)) sum = static_cast<char>(sum + bytes[off]);
        sleep_ms(arg(4));
        ::_exit(0);
      }
    }
    sleep_ms(arg(4));
    while (::wait(nullptr) > 0) {
    }
  } else if (mode == "forktree" && argc == 4) {
    for (long i = 0; i < arg(2); ++i) {
      pid_t child = ::fork();
      if (child == 0) {
        for (long j = 0; j < arg(3); ++j) {
          if (::fork() == 0) ::_exit(0);
        }
        while (::wait(nullptr) > 0) {
        }
        ::_exit(0);
      }
      if (child < 0) return 1;
      ::waitpid(child, nullptr, 0);
    }
  } else if (mode == "shortlived" && argc == 5) {
    for (long i = 0; i < arg(2); ++i) {
      pid_t c = ::fork();
      if (c == 0) {
        ::prctl(PR_SET_NAME, argv[4]);
        spin(arg(3));
        ::_exit(0);
      }
      // Two at a time at most: each lives no longer than its spin.
      if (i % 2 == 1) {
        while (::waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        ::wait(nullptr);
      }
    }
    while (::wait(nullptr) > 0) {
    }
  } else if (mode == "blip" && argc == 3) {
    touch(static_cast<size_t>(arg(2)), 0);
  } else if (mode == "ignchld" && argc == 4) {
    ::signal(SIGCHLD, SIG_IGN);
    for (long i = 0; i < arg(2); ++i) {
      if (::fork() == 0) {
        spin(arg(3));
        ::_exit(0);
      }
    }
    while (::wait(nullptr) > 0 || errno == EINTR) {
    }
  } else if (mode == "writes" && argc == 3) {
    int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    char c = 0;
    for (long i = 0; i < arg(2); ++i) {
      if (::write(fd, &c, 1) != 1) return 1;
    }
    ::close(fd);
  } else {
    return usage();
  }
  return 0;
}
