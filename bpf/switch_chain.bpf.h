// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// What a sched_switch program that runs after the scheduler object's shares with it:
//  - the clock at the switch, as that one read it (scheduler.h's pm_switch_clock), rather than
//    read it again, which costs 100-200 ns in a program on a slow VM;
//  - the chain: the scheduler's switch program ends in the off-CPU stacks' (slot
//    PM_CHAIN_OFF_CPU), which ends in the probes' (PM_CHAIN_PROBES), by tail calls, so a switch
//    runs one program however many sources want it (each run of a program is dear on some VMs).
//    An empty slot is passed over; a program attached on its own ends in an empty chain.
// User space replaces this object's switch_clock and switch_chain with the scheduler object's
// (bpf_map__reuse_fd) and sets shared_clock where that one is loaded.
#ifndef PERF_MONITOR_BPF_SWITCH_CHAIN_BPF_H
#define PERF_MONITOR_BPF_SWITCH_CHAIN_BPF_H

#include "scheduler.h"

const volatile __u32 shared_clock = 0;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_switch_clock);
} switch_clock SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, PM_CHAIN_SLOTS);
  __type(key, __u32);
  __type(value, __u32);
} switch_chain SEC(".maps");

// The clock at this switch: the scheduler's read where it was of this very switch (prev's pid
// and its switch count, which the kernel counts before the tracepoint), else read here.
static __always_inline __u64 switch_now(struct task_struct *prev) {
  if (shared_clock) {
    __u32 zero = 0;
    struct pm_switch_clock *c = bpf_map_lookup_elem(&switch_clock, &zero);
    if (c && c->pid == prev->pid && c->switches == prev->nvcsw + prev->nivcsw && c->now) return c->now;
  }
  return bpf_ktime_get_ns();
}

// The rest of the chain from slot `from`: the first program there (a tail call does not return).
static __always_inline void switch_chain_from(void *ctx, __u32 from) {
  if (from <= PM_CHAIN_OFF_CPU) bpf_tail_call(ctx, &switch_chain, PM_CHAIN_OFF_CPU);
  if (from <= PM_CHAIN_PROBES) bpf_tail_call(ctx, &switch_chain, PM_CHAIN_PROBES);
}

#endif
