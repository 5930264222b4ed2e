// SPDX-License-Identifier: Apache-2.0
// A library cut short under a profiler: `cut_short LIB A_MS B_MS` loads LIB (built from this file
// with -DCUT_SHORT_LIB), burns A_MS of CPU in its cut_short_spin(), truncates LIB to nothing, then
// burns B_MS in its own main_spin() and leaves with _exit (the library's pages are gone: nothing
// of it may run again). A profiler that mapped LIB to name its frames must not die of it.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {
uint64_t cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

#ifdef CUT_SHORT_LIB
extern "C" __attribute__((noinline)) uint64_t cut_short_spin(uint64_t ns) {
  volatile uint64_t x = 0;
  for (uint64_t start = cpu_ns(); cpu_ns() - start < ns;) {
    for (int i = 0; i < 10000; i++) x = x + static_cast<uint64_t>(i) * 7;
  }
  return x;
}
#else
__attribute__((noinline)) uint64_t main_spin(uint64_t ns) {
  volatile uint64_t x = 0;
  for (uint64_t start = cpu_ns(); cpu_ns() - start < ns;) {
    for (int i = 0; i < 10000; i++) x = x + static_cast<uint64_t>(i) * 3;
  }
  return x;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: cut_short LIB A_MS B_MS\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (lib == nullptr) {
    std::fprintf(stderr, "cut_short: %s\n", dlerror());
    return 1;
  }
  auto spin = reinterpret_cast<uint64_t (*)(uint64_t)>(dlsym(lib, "cut_short_spin"));
  if (spin == nullptr) return 1;
  spin(static_cast<uint64_t>(std::atol(argv[2])) * 1000000);
  int fd = open(argv[1], O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    std::perror("cut_short: truncate");
    return 1;
  }
  close(fd);
  std::printf("truncated\n");
  std::fflush(stdout);
  main_spin(static_cast<uint64_t>(std::atol(argv[3])) * 1000000);
  _exit(0);
}
#endif
