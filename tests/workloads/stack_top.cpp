// SPDX-License-Identifier: Apache-2.0
// A function that sleeps with its stack pointer a few hundred bytes below the end of its stack's
// mapping (a PROT_NONE page above it, as where the main thread's stack may end): its stacks must
// unwind all the same. Built -O2 without frame pointers, it runs on a ucontext stack:
//   climb() -> at_the_top() -> nanosleep, 1 ms at a time, for SECONDS.
// Usage: stack_top SECONDS
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {
ucontext_t g_main, g_top;
double g_seconds = 1;
volatile uint64_t g_naps;

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

__attribute__((noinline)) void at_the_top() {
  uint64_t end = now_ns() + static_cast<uint64_t>(g_seconds * 1e9);
  timespec nap{0, 1000000};
  while (now_ns() < end) {
    nanosleep(&nap, nullptr);
    g_naps = g_naps + 1;
  }
}

__attribute__((noinline)) void climb() {
  at_the_top();
  asm volatile("" ::: "memory");  // not a tail call: this frame stays
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: stack_top SECONDS\n");
    return 2;
  }
  g_seconds = std::atof(argv[1]);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), size = 16 * page;
  auto* base = static_cast<char*>(mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (base == MAP_FAILED || mprotect(base + size, page, PROT_NONE) != 0) {
    std::perror("mmap");
    return 1;
  }
  getcontext(&g_top);
  g_top.uc_stack.ss_sp = base;
  g_top.uc_stack.ss_size = size;  // its top: the PROT_NONE page
  g_top.uc_link = &g_main;
  makecontext(&g_top, climb, 0);
  swapcontext(&g_main, &g_top);
  std::printf("naps=%llu\n", static_cast<unsigned long long>(g_naps));
  return 0;
}
