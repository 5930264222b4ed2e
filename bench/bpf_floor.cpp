// SPDX-License-Identifier: Apache-2.0
// Loads empty eBPF programs and waits for SIGINT or SIGTERM: what any eBPF monitor on the same
// hooks costs at the least.
//   bpf_floor                      the scheduler and block hooks perf-monitor's kernel sources use
//   bpf_floor --clock              the same with a clock read in each switch and wakeup program:
//                                  the floor of timing run-queue waits on the wall clock (runqlat)
//   bpf_floor --probe BIN:FUNC     an empty uprobe + uretprobe pair on one function (the floor of
//                                  an application probe)
//   bpf_floor --part NAME          the clock floor whose switch program also does one thing a
//                                  switch program can be made of (floor.bpf.c: task, array, regs,
//                                  user, ring, kstack), so that its cost shows in bpf_stats
#include <bpf/libbpf.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "floor.skel.h"
#include "sources/probes/symbols.h"

int main(int argc, char** argv) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  libbpf_set_print(nullptr);
  static const char* const kParts[] = {"", "task", "array", "regs", "user", "ring", "kstack"};
  unsigned part = 0;
  if (argc == 3 && std::strcmp(argv[1], "--part") == 0) {
    for (unsigned i = 1; i < sizeof kParts / sizeof kParts[0]; ++i)
      if (std::strcmp(argv[2], kParts[i]) == 0) part = i;
    if (part == 0) {
      std::fprintf(stderr, "bpf_floor: no part '%s' (task, array, regs, user, ring, kstack)\n", argv[2]);
      return 2;
    }
  }
  floor_bpf* skel = floor_bpf::open();
  if (skel != nullptr) skel->rodata->part = part;
  if (skel != nullptr && floor_bpf::load(skel) != 0) {
    floor_bpf::destroy(skel);
    skel = nullptr;
  }
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
    // The empty switch and wakeup programs, or (--clock) the ones that read the clock; with
    // --part, the clock floor's switch program doing that part too.
    bool clock = part != 0 || (argc == 2 && std::strcmp(argv[1], "--clock") == 0);
    for (bpf_program* p : {skel->progs.floor_switch, skel->progs.floor_waking, skel->progs.floor_wakeup_new})
      bpf_program__set_autoattach(p, !clock);
    for (bpf_program* p : {skel->progs.clock_wakeup, skel->progs.clock_wakeup_new}) bpf_program__set_autoattach(p, clock);
    bpf_program__set_autoattach(skel->progs.clock_switch, clock && part == 0);
    bpf_program__set_autoattach(skel->progs.part_switch, part != 0);
    if (floor_bpf::attach(skel) != 0) {
      std::perror("bpf_floor: attaching the empty programs");
      return 1;
    }
  }
  // The ring's reader, on a timer of its own as perf-monitor's (no record wakes it).
  std::atomic<bool> done{false};
  ring_buffer* ring = part == 5 ? ring_buffer__new(bpf_map__fd(skel->maps.part_ring),
                                                   [](void*, void*, size_t) { return 0; }, nullptr, nullptr)
                                : nullptr;
  std::thread reader([&] {
    while (ring != nullptr && !done) {
      ring_buffer__consume(ring);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::puts("bpf_floor: attached");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  done = true;
  reader.join();
  ring_buffer__free(ring);
  floor_bpf::destroy(skel);
  return 0;
}
