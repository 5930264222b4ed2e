// SPDX-License-Identifier: Apache-2.0
// C++ as g++ -O2 emits it, for the probe naming tests: `pm-clones N` calls each of these N times.
// billing::Engine::handle has an unlikely error path GCC moves to a "handle(long, int) [clone
// .cold]" fragment; shop::twice is a template (its demangled name begins with its return type);
// scaled is cloned for the one constant it is called with (".constprop.0", no other copy);
// lookup's cheap test is inlined into its callers and the rest outlined (".part.0", no whole
// function left); tiny is inlined into main, its only caller, and has no symbol at all.
// `pm-clones N FILE` also writes and fsyncs FILE in each handle call: a probed call nested in
// handle's.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace billing {
struct Engine {
  long total = 0;
  int fd = -1;
  long handle(long id, int kind);
};

__attribute__((noinline)) long Engine::handle(long id, int kind) {
  if (__builtin_expect(kind < 0, 0)) {
    std::fprintf(stderr, "bad kind %d for %ld\n", kind, id);
    throw std::runtime_error("bad kind " + std::to_string(kind));
  }
  total += id * kind;
  if (fd >= 0 && (::write(fd, &id, sizeof id) != sizeof id || ::fsync(fd) != 0)) std::perror("fsync");
  return total;
}
}  // namespace billing

namespace shop {
template <typename T>
__attribute__((noinline)) T twice(T x) {
  asm volatile("" : "+r"(x));
  return x * 2;
}
}  // namespace shop

// Never inlined, always called with one constant: GCC clones it for that constant (.constprop).
__attribute__((noinline)) static long scaled(long x, long factor) {
  long s = 0;
  for (long i = 0; i < factor; ++i) {
    asm volatile("" : "+r"(s));
    s += x ^ i;
  }
  return s;
}

// A cheap test before costly work: GCC inlines the test into callers and outlines the rest
// (".part.0").
struct Table {
  long slots[64];
};
static long lookup(const Table* t, long key) {
  if (__builtin_expect(key < 8, 1)) return key;
  long s = 0;
  for (int round = 0; round < 4; ++round) {
    for (long i = 0; i < 64; ++i) {
      asm volatile("" : "+r"(s));
      s += t->slots[(key + i + round) & 63] * (i + 1);
      if (s % 7 == 3) std::fputs("", stderr);
      if (s % 11 == 3) s ^= t->slots[i] << 3;
      if (s % 13 == 3) s ^= t->slots[63 - i] >> 2;
    }
  }
  return s;
}
__attribute__((noinline)) long lookup_a(const Table* t, long k) { return lookup(t, k) + 1; }
__attribute__((noinline)) long lookup_b(const Table* t, long k) { return lookup(t, k + 1) + 2; }
__attribute__((noinline)) long lookup_c(const Table* t, long k) { return lookup(t, k + 2) + 3; }

static inline long tiny(long x) { return x * 3 + 1; }

int main(int argc, char** argv) {
  long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 10;
  billing::Engine e;
  if (argc > 2) e.fd = ::open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  long sum = 0;
  static Table table;
  for (long i = 0; i < 64; ++i) table.slots[i] = i * argc;
  for (long i = 1; i <= n; ++i) {
    sum += e.handle(i, argc);
    sum += shop::twice<long>(i) + shop::twice<int>(static_cast<int>(i));
    sum += scaled(i, 37);
    sum += lookup_a(&table, i) + lookup_b(&table, i) + lookup_c(&table, i);
    sum += tiny(sum);  // the call tiny is inlined at
  }
  std::printf("%ld\n", sum);
}
