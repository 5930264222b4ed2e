// SPDX-License-Identifier: Apache-2.0
// Loads empty eBPF programs and waits for SIGINT or SIGTERM: what any eBPF monitor on the same
// hooks costs at the least.
//   bpf_floor                      the scheduler and block hooks perf-monitor's kernel sources use
//   bpf_floor --clock              the same with a clock read in each switch and wakeup program:
//                                  the floor of timing run-queue waits on the wall clock (runqlat)
//   bpf_floor --probe BIN:FUNC     an empty uprobe + uretprobe pair on one function (the floor of
//                                  an application probe)
#include <bpf/libbpf.h>
#include <signal.h>

#include <cstdio>
#include <cstring>

#include "floor.skel.h"
#include "sources/probes/symbols.h"

int main(int argc, char** argv) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  libbpf_set_print(nullptr);
  floor_bpf* skel = floor_bpf::open_and_load();
  if (skel == nullptr) {
    std::perror("bpf_floor: loading the empty programs");
    return 1;
  }
  if (argc == 3 && std::strcmp(argv[1], "--probe") == 0) {
    auto spec = pm::probes::parse_probe_spec(argv[2]);
    auto probe = spec ? pm::probes::resolve_probe(*spec) : pm::Result<pm::probes::ResolvedProbe>(spec.error());
    if (!probe) {
      std::fprintf(stderr, "bpf_floor: %s\n", probe.error().message.c_str());
      return 2;
    }
    for (bool ret : {false, true}) {
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret);
      bpf_program* prog = ret ? skel->progs.floor_call_return : skel->progs.floor_call_entry;
      if (bpf_program__attach_uprobe_opts(prog, -1, probe->path.c_str(), probe->offset, &opts) == nullptr) {
        std::perror("bpf_floor: attaching the uprobes");
        return 1;
      }
    }
  } else {
    // The empty switch and wakeup programs, or (--clock) the ones that read the clock.
    bool clock = argc == 2 && std::strcmp(argv[1], "--clock") == 0;
    for (bpf_program* p : {skel->progs.floor_switch, skel->progs.floor_waking, skel->progs.floor_wakeup_new})
      bpf_program__set_autoattach(p, !clock);
    for (bpf_program* p : {skel->progs.clock_switch, skel->progs.clock_wakeup, skel->progs.clock_wakeup_new})
      bpf_program__set_autoattach(p, clock);
    if (floor_bpf::attach(skel) != 0) {
      std::perror("bpf_floor: attaching the empty programs");
      return 1;
    }
  }
  std::puts("bpf_floor: attached");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  floor_bpf::destroy(skel);
  return 0;
}
