// SPDX-License-Identifier: Apache-2.0
// An async server in C++20 coroutines for perf-monitor's thread context (annotate.h): W worker
// threads poll tasks from one queue, and every request is a coroutine whose polls land on
// whichever worker is free. Each request, in four polls:
//   1. burns CPU for --burn-us, then yields (back to the queue: its next poll may run elsewhere);
//   2. sleeps --sleep-us inside the poll (the worker blocks), then awaits a timer of --timer-us
//      (the request waits with no thread: pending);
//   3. writes --bytes (a multiple of 4096) to its worker's file with O_DIRECT and fdatasyncs it
//      (the worker blocks on I/O), then yields;
//   4. burns CPU for half of --burn-us, and is done.
// Each poll is marked with perf_monitor_poll_begin/end: no trap per request.
//
//   coro_server [--workers W] [--requests N] [--in-flight C] [--burn-us U] [--sleep-us U]
//               [--timer-us U] [--bytes B] [--dir DIR] [--truth FILE]
//
// --truth FILE writes what each poll did as the kernel tells the thread itself, one line per poll:
//   id tid wall_ns cpu_ns runq_ns wall_in_ns cpu_in_ns runq_in_ns bytes done
// (cpu: CLOCK_THREAD_CPUTIME_ID; runq: the thread's run_delay in /proc/thread-self/schedstat;
// over the window just outside perf_monitor_poll_begin/end, then the one just inside: the poll's
// own figures lie between; bytes: what it wrote), to compare perf-monitor's figures with. Try it:
//   perf-monitor run -- build/examples/coro_server --requests 200
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "perf-monitor/annotate.h"

namespace {

struct Options {
  int workers = 4;
  long requests = 1000;
  int in_flight = 16;
  long burn_us = 300, sleep_us = 200, timer_us = 500;
  long bytes = 8192;
  std::string dir = "/var/tmp";
  std::string truth;
};
Options opt;

uint64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

volatile uint64_t sink;
void burn(long us) {
  uint64_t until = now_ns(CLOCK_THREAD_CPUTIME_ID) + static_cast<uint64_t>(us) * 1000;
  uint64_t x = sink;
  while (now_ns(CLOCK_THREAD_CPUTIME_ID) < until) {
    for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  sink = x;
}

// ---- the executor ----

struct Task {
  struct promise_type {
    uint64_t id = 0;
    Task get_return_object() { return Task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::abort(); }
  };
  std::coroutine_handle<promise_type> h;
};
using Handle = std::coroutine_handle<Task::promise_type>;

std::mutex mu;
std::condition_variable ready_cv;
std::deque<Handle> ready;
std::multimap<uint64_t, Handle> timers;  // deadline (CLOCK_MONOTONIC ns) -> task
std::condition_variable timer_cv;
std::atomic<long> finished{0}, started{0};
bool stopping = false;

void schedule(Handle h) {
  {
    std::lock_guard<std::mutex> l(mu);
    ready.push_back(h);
  }
  ready_cv.notify_one();
}

// Back to the queue: the next poll runs on whichever worker takes it.
struct Yield {
  bool await_ready() const noexcept { return false; }
  void await_suspend(Handle h) const { schedule(h); }
  void await_resume() const noexcept {}
};

// A timer: the task waits with no thread until the timer thread queues it again.
struct Sleep {
  long us;
  bool await_ready() const noexcept { return us <= 0; }
  void await_suspend(Handle h) const {
    {
      std::lock_guard<std::mutex> l(mu);
      timers.emplace(now_ns(CLOCK_MONOTONIC) + static_cast<uint64_t>(us) * 1000, h);
    }
    timer_cv.notify_one();
  }
  void await_resume() const noexcept {}
};

// What each worker's current poll wrote (bytes), for the truth.
thread_local long poll_bytes = 0;

// Each worker's file: written in place with O_DIRECT, so that a request's bios are its bytes and
// nothing else (no block to allocate, no page cache); made and filled before the worker's first
// poll. Where the file system has no O_DIRECT (tmpfs), written through the page cache.
struct WorkerFile {
  int fd = -1;
  void* buf = nullptr;
  std::string path;
  void open_it(int worker) {
    path = opt.dir + "/coro_server." + std::to_string(::getpid()) + "." + std::to_string(worker);
    int plain = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t size = static_cast<size_t>(opt.bytes);
    if (plain < 0 || ::posix_memalign(&buf, 4096, size == 0 ? 4096 : size) != 0) {
      std::perror("coro_server: open");
      std::exit(1);
    }
    std::memset(buf, 'x', size);
    if (::write(plain, buf, size) != static_cast<ssize_t>(size) || ::fsync(plain) != 0) {
      std::perror("coro_server: write");
      std::exit(1);
    }
    ::close(plain);
    fd = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  }
  ~WorkerFile() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
    std::free(buf);
  }
};
thread_local WorkerFile file;

void write_and_sync(uint64_t /*id*/) {
  size_t size = static_cast<size_t>(opt.bytes);
  if (::pwrite(file.fd, file.buf, size, 0) != static_cast<ssize_t>(size) || ::fdatasync(file.fd) != 0) {
    std::perror("coro_server: write");
    std::exit(1);
  }
  poll_bytes += opt.bytes;
}

Task request(uint64_t id) {
  burn(opt.burn_us);
  co_await Yield{};
  timespec ts{opt.sleep_us / 1000000, (opt.sleep_us % 1000000) * 1000};
  ::nanosleep(&ts, nullptr);  // blocking, inside the poll
  co_await Sleep{opt.timer_us};
  write_and_sync(id);
  co_await Yield{};
  burn(opt.burn_us / 2);
}

void start_request(uint64_t id) {
  Handle h = request(id).h;
  h.promise().id = id;
  schedule(h);
}

// A poll as its thread's clocks saw it, over two windows: the outer one read just before
// perf_monitor_poll_begin and just after perf_monitor_poll_end, the inner one just after begin
// and just before end. What the poll itself did lies between the two.
struct PollTruth {
  uint64_t id;
  int tid;
  uint64_t wall, cpu, runq;           // outer
  uint64_t wall_in, cpu_in, runq_in;  // inner
  long bytes;
  bool done;
};

uint64_t run_delay(int fd) {
  char buf[128];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long long run = 0, delay = 0;
  std::sscanf(buf, "%llu %llu", &run, &delay);
  return delay;
}

void worker(int me, std::vector<PollTruth>* truth) {
  file.open_it(me);
  int sched = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  int tid = static_cast<int>(::gettid());
  for (;;) {
    Handle h;
    {
      std::unique_lock<std::mutex> l(mu);
      ready_cv.wait(l, [] { return stopping || !ready.empty(); });
      if (ready.empty()) return;
      h = ready.front();
      ready.pop_front();
    }
    uint64_t id = h.promise().id;
    poll_bytes = 0;
    bool done = false;
    if (truth == nullptr) {
      perf_monitor_poll_begin(id);
      h.resume();
      done = h.done();
      perf_monitor_poll_end(done);
    } else {
      uint64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), q0 = run_delay(sched);
      perf_monitor_poll_begin(id);
      uint64_t q0i = run_delay(sched), c0i = now_ns(CLOCK_THREAD_CPUTIME_ID), w0i = now_ns(CLOCK_MONOTONIC);
      h.resume();
      done = h.done();
      uint64_t w1i = now_ns(CLOCK_MONOTONIC), c1i = now_ns(CLOCK_THREAD_CPUTIME_ID), q1i = run_delay(sched);
      perf_monitor_poll_end(done);
      uint64_t q1 = run_delay(sched), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID), w1 = now_ns(CLOCK_MONOTONIC);
      truth->push_back({id, tid, w1 - w0, c1 - c0, q1 - q0, w1i - w0i, c1i - c0i, q1i - q0i, poll_bytes, done});
    }
    if (done) {
      h.destroy();
      long n = ++finished;
      long next = started++;
      if (next < opt.requests) start_request(static_cast<uint64_t>(next) + 1);
      if (n == opt.requests) {
        {
          std::lock_guard<std::mutex> l(mu);
          stopping = true;
        }
        ready_cv.notify_all();
        timer_cv.notify_all();
      }
    }
  }
}

void timer_thread() {
  std::unique_lock<std::mutex> l(mu);
  while (!stopping) {
    if (timers.empty()) {
      timer_cv.wait(l);
      continue;
    }
    uint64_t now = now_ns(CLOCK_MONOTONIC);
    auto first = timers.begin();
    if (first->first <= now) {
      ready.push_back(first->second);
      timers.erase(first);
      ready_cv.notify_one();
      continue;
    }
    timer_cv.wait_for(l, std::chrono::nanoseconds(first->first - now));
  }
}

long number(const char* flag, const char* v) {
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*v == 0 || *end != 0 || n < 0) {
    std::fprintf(stderr, "coro_server: %s takes a number, not '%s'\n", flag, v);
    std::exit(2);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "coro_server: %s needs a value (see the comment at the top of coro_server.cpp)\n", a.c_str());
      return 2;
    }
    const char* v = argv[++i];
    if (a == "--workers") opt.workers = static_cast<int>(number("--workers", v));
    else if (a == "--requests") opt.requests = number("--requests", v);
    else if (a == "--in-flight") opt.in_flight = static_cast<int>(number("--in-flight", v));
    else if (a == "--burn-us") opt.burn_us = number("--burn-us", v);
    else if (a == "--sleep-us") opt.sleep_us = number("--sleep-us", v);
    else if (a == "--timer-us") opt.timer_us = number("--timer-us", v);
    else if (a == "--bytes") opt.bytes = number("--bytes", v);
    else if (a == "--dir") opt.dir = v;
    else if (a == "--truth") opt.truth = v;
    else {
      std::fprintf(stderr, "coro_server: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (opt.workers < 1 || opt.in_flight < 1 || opt.requests < 1 || opt.bytes < 4096 || opt.bytes % 4096 != 0) {
    std::fprintf(stderr, "coro_server: --workers, --in-flight and --requests are at least 1, --bytes a multiple of 4096\n");
    return 2;
  }
  std::vector<std::vector<PollTruth>> truth(static_cast<size_t>(opt.workers));
  for (int i = 0; i < opt.in_flight && started < opt.requests; ++i) start_request(static_cast<uint64_t>(started++) + 1);
  std::thread timer(timer_thread);
  std::vector<std::thread> workers;
  for (int i = 0; i < opt.workers; ++i) {
    workers.emplace_back(worker, i, opt.truth.empty() ? nullptr : &truth[static_cast<size_t>(i)]);
  }
  for (std::thread& t : workers) t.join();
  timer.join();
  if (!opt.truth.empty()) {
    FILE* f = std::fopen(opt.truth.c_str(), "w");
    if (f == nullptr) {
      std::perror("coro_server: --truth");
      return 1;
    }
    for (const auto& list : truth) {
      for (const PollTruth& p : list) {
        auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
        std::fprintf(f, "%llu %d %llu %llu %llu %llu %llu %llu %ld %d\n", u(p.id), p.tid, u(p.wall), u(p.cpu),
                     u(p.runq), u(p.wall_in), u(p.cpu_in), u(p.runq_in), p.bytes, p.done ? 1 : 0);
      }
    }
    std::fclose(f);
  }
  std::printf("coro_server: %ld requests on %d workers\n", finished.load(), opt.workers);
  return 0;
}
