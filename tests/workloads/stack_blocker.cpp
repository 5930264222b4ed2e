// SPDX-License-Identifier: Apache-2.0
// A thread that blocks in three known places, built -O2 without frame pointers: fsync under f(),
// nanosleep under g(), a contended mutex under h(), about 50/30/20 of its blocked time (g and h
// wait for what keeps their totals at 3/5 and 2/5 of f's so far). Its own clocks are the truth: for each function,
// the time its blocking call took less the thread's CPU time in it, printed at the end as
//   blocked_ns f=N g=N h=N
// Usage: stack_blocker SECONDS FILE (FILE on a disk: fsync of tmpfs does not wait).
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cstring>

namespace {

uint64_t clock_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Wall minus CPU time across one blocking call: the time the thread was off the CPU for it.
struct OffClock {
  uint64_t wall = clock_ns(CLOCK_MONOTONIC), cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  uint64_t off() const {
    uint64_t w = clock_ns(CLOCK_MONOTONIC) - wall, c = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    return w > c ? w - c : 0;
  }
};

int g_fd = -1;
char g_block[4096];
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
sem_t g_take;                   // h() asks the holder to take the mutex
std::atomic<int> g_held{0};     // the holder has it
std::atomic<uint64_t> g_hold_ns{1000000};
uint64_t g_off_f = 0, g_off_g = 0, g_off_h = 0;  // each function's blocked time so far

// What keeps `mine` at num/5 of f's total (at most 20 ms; 0: it is ahead, no wait this time).
uint64_t catch_up(uint64_t mine, uint64_t num) {
  uint64_t want = g_off_f * num / 5;
  uint64_t ns = want > mine ? want - mine : 0;
  return ns > 20000000 ? 20000000 : ns;
}

}  // namespace

// noinline, and work after each call (the clocks), so each function is a frame of its own when
// its thread blocks.
// Each measures its whole body: any time off the CPU under it (a yield, a write) is its own.
__attribute__((noinline)) uint64_t f() {
  OffClock c;
  if (pwrite(g_fd, g_block, sizeof g_block, 0) != static_cast<ssize_t>(sizeof g_block)) std::abort();
  if (fsync(g_fd) != 0) std::abort();
  return c.off();
}

__attribute__((noinline)) uint64_t g() {
  uint64_t ns = catch_up(g_off_g, 3);  // 30 against f's 50
  if (ns == 0) return 0;
  timespec ts{static_cast<time_t>(ns / 1000000000ULL), static_cast<long>(ns % 1000000000ULL)};
  OffClock c;
  nanosleep(&ts, nullptr);
  return c.off();
}

__attribute__((noinline)) uint64_t h() {
  g_hold_ns = catch_up(g_off_h, 2);  // 20 against f's 50
  if (g_hold_ns == 0) return 0;
  OffClock c;
  sem_post(&g_take);
  while (g_held.load() == 0) sched_yield();
  pthread_mutex_lock(&g_mutex);
  pthread_mutex_unlock(&g_mutex);
  g_held = 0;
  return c.off();
}

static void* holder(void*) {
  for (;;) {
    sem_wait(&g_take);
    pthread_mutex_lock(&g_mutex);
    g_held = 1;
    uint64_t ns = g_hold_ns;
    timespec ts{static_cast<time_t>(ns / 1000000000ULL), static_cast<long>(ns % 1000000000ULL)};
    nanosleep(&ts, nullptr);
    pthread_mutex_unlock(&g_mutex);
  }
  return nullptr;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: stack_blocker SECONDS FILE\n");
    return 2;
  }
  double seconds = std::atof(argv[1]);
  g_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (g_fd < 0) {
    std::perror(argv[2]);
    return 1;
  }
  std::memset(g_block, 'x', sizeof g_block);
  sem_init(&g_take, 0, 0);
  pthread_t t;
  pthread_create(&t, nullptr, holder, nullptr);
  pthread_setname_np(t, "holder");
  pthread_setname_np(pthread_self(), "blocker");
  uint64_t end = clock_ns(CLOCK_MONOTONIC) + static_cast<uint64_t>(seconds * 1e9);
  while (clock_ns(CLOCK_MONOTONIC) < end) {
    g_off_f += f();
    g_off_g += g();
    g_off_h += h();
  }
  std::printf("blocked_ns f=%llu g=%llu h=%llu\n", static_cast<unsigned long long>(g_off_f),
              static_cast<unsigned long long>(g_off_g), static_cast<unsigned long long>(g_off_h));
  unlink(argv[2]);
  return 0;
}
