// SPDX-License-Identifier: Apache-2.0
// The workload of bench/probe_overhead.sh: calls one tiny function N times and prints the
// nanoseconds per call, so the cost a probe adds to each call is the difference to a bare run.
//   probe_target N
#include <time.h>

#include <cstdio>
#include <cstdlib>

// Written out so that it starts the way most compiled functions do (push %rbp), an instruction
// the kernel emulates at a uprobe; a first instruction it cannot emulate would be single-stepped
// out of line, a second trap per call.
#if defined(__x86_64__)
asm(".text\n"
    ".globl pm_bench_call\n"
    ".type pm_bench_call, @function\n"
    "pm_bench_call:\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  lea 1(%rdi,%rdi,1), %rax\n"
    "  pop %rbp\n"
    "  ret\n"
    ".size pm_bench_call, .-pm_bench_call\n");
extern "C" long pm_bench_call(long i);
#else
extern "C" __attribute__((noinline, noipa)) long pm_bench_call(long i) { return i * 2 + 1; }
#endif

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  timespec t0{}, t1{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long sum = 0;
  for (long i = 0; i < n; ++i) sum += pm_bench_call(i);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ns = static_cast<double>(t1.tv_sec - t0.tv_sec) * 1e9 + static_cast<double>(t1.tv_nsec - t0.tv_nsec);
  std::printf("%.1f\n", ns / static_cast<double>(n));
  return sum == 0 ? 1 : 0;
}
