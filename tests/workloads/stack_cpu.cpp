// SPDX-License-Identifier: Apache-2.0
// CPU in two known functions, about 70/30, built -O2 without frame pointers: hot_a() and hot_b()
// each burn the thread's CPU clock for 7 and 3 ms at a time. Its own clock is the truth, printed
// at the end as
//   cpu_ns hot_a=N hot_b=N
// Usage: stack_cpu SECONDS (of its own CPU time: on a loaded machine it runs longer, and is
// sampled as often)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {
uint64_t clock_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}
volatile uint64_t g_sink;
}  // namespace

// The clock is read between rounds of arithmetic, so that nearly every sample is in the
// function's own code (not in the clock's vDSO call).
__attribute__((noinline)) uint64_t hot_a(uint64_t ns) {
  uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID), now = start;
  while (now - start < ns) {
    uint64_t x = g_sink;
    for (int i = 0; i < 20000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    g_sink = x;
    now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  }
  return now - start;
}

__attribute__((noinline)) uint64_t hot_b(uint64_t ns) {
  uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID), now = start;
  while (now - start < ns) {
    uint64_t x = g_sink;
    for (int i = 0; i < 20000; i++) x = (x ^ (x >> 7)) * 0x9E3779B97F4A7C15ULL;
    g_sink = x;
    now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  }
  return now - start;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: stack_cpu SECONDS\n");
    return 2;
  }
  auto want = static_cast<uint64_t>(std::atof(argv[1]) * 1e9);
  uint64_t a = 0, b = 0;
  while (a + b < want) {
    a += hot_a(7000000);
    b += hot_b(3000000);
  }
  std::printf("cpu_ns hot_a=%llu hot_b=%llu\n", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return 0;
}
