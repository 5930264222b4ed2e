// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The clock at a switch, as the scheduler object's switch program read it (scheduler.h's
// pm_switch_clock): an object whose own sched_switch program runs after that one (attached
// later) takes it rather than read the clock again, which costs 100-200 ns in a program on a
// slow VM. User space replaces this object's switch_clock with the scheduler object's
// (bpf_map__reuse_fd) and sets shared_clock where that one is loaded.
#ifndef PERF_MONITOR_BPF_SWITCH_CLOCK_BPF_H
#define PERF_MONITOR_BPF_SWITCH_CLOCK_BPF_H

#include "scheduler.h"

const volatile __u32 shared_clock = 0;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_switch_clock);
} switch_clock SEC(".maps");

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

#endif
