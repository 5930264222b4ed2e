// SPDX-License-Identifier: Apache-2.0
// A program with 80 small functions, f0 … f79 (C names), each called ROUNDS times:
//   pm-many-functions ROUNDS
// For tests and benchmarks that probe many functions at once (the probes' limit, and how fast
// 62 probes are taken down at the end).
#include <cstdio>
#include <cstdlib>

#define PM_F(n) \
  extern "C" __attribute__((noinline)) long f##n(long x) { \
    asm volatile("");                                      \
    return x + n;                                          \
  }
#define PM_F10(t) PM_F(t##0) PM_F(t##1) PM_F(t##2) PM_F(t##3) PM_F(t##4) PM_F(t##5) PM_F(t##6) PM_F(t##7) PM_F(t##8) PM_F(t##9)
PM_F(0) PM_F(1) PM_F(2) PM_F(3) PM_F(4) PM_F(5) PM_F(6) PM_F(7) PM_F(8) PM_F(9)
PM_F10(1) PM_F10(2) PM_F10(3) PM_F10(4) PM_F10(5) PM_F10(6) PM_F10(7)

#define PM_C(n) s += f##n(r);
#define PM_C10(t) PM_C(t##0) PM_C(t##1) PM_C(t##2) PM_C(t##3) PM_C(t##4) PM_C(t##5) PM_C(t##6) PM_C(t##7) PM_C(t##8) PM_C(t##9)

int main(int argc, char** argv) {
  long rounds = argc > 1 ? std::atol(argv[1]) : 1;
  long s = 0;
  for (long r = 0; r < rounds; ++r) {
    PM_C(0) PM_C(1) PM_C(2) PM_C(3) PM_C(4) PM_C(5) PM_C(6) PM_C(7) PM_C(8) PM_C(9)
    PM_C10(1) PM_C10(2) PM_C10(3) PM_C10(4) PM_C10(5) PM_C10(6) PM_C10(7)
  }
  std::printf("%ld\n", s);
  return 0;
}
