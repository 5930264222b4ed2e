// Loads empty eBPF programs on the scheduler and block hooks perf-monitor uses and waits for
// SIGINT or SIGTERM: what any eBPF monitor on those hooks costs at the least.
#include <bpf/libbpf.h>
#include <signal.h>

#include <cstdio>

#include "floor.skel.h"

int main() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  floor_bpf* skel = floor_bpf::open_and_load();
  if (skel == nullptr || floor_bpf::attach(skel) != 0) {
    std::perror("bpf_floor: loading the empty programs");
    return 1;
  }
  std::puts("bpf_floor: attached");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  floor_bpf::destroy(skel);
  return 0;
}
