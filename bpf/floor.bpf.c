// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Empty programs on the hooks perf-monitor's kernel sources use: the floor of what any eBPF
// monitor attached there costs. Only bench/bpf_floor loads them.
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch) { return 0; }
SEC("tp_btf/sched_waking")
int BPF_PROG(floor_waking) { return 0; }
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(floor_wakeup_new) { return 0; }
SEC("tp_btf/sched_process_fork")
int BPF_PROG(floor_fork) { return 0; }
SEC("tp_btf/block_bio_queue")
int BPF_PROG(floor_bio_queue) { return 0; }
SEC("tp_btf/block_rq_issue")
int BPF_PROG(floor_rq_issue) { return 0; }
SEC("tp_btf/block_rq_complete")
int BPF_PROG(floor_rq_complete) { return 0; }

// The clock floor: what any monitor that times run-queue waits on the wall clock, as runqlat
// does, adds at the least: one clock read per switch and per wakeup (the hooks' floor included).
// `bpf_floor --clock` loads these in place of the empty switch and wakeup programs.
__u64 clock_zero;  // never written in practice: the read is kept without a store that other CPUs' caches would feel
SEC("tp_btf/sched_switch")
int BPF_PROG(clock_switch) {
  if (bpf_ktime_get_ns() == 0) clock_zero++;
  return 0;
}
SEC("tp_btf/sched_wakeup")
int BPF_PROG(clock_wakeup) {
  if (bpf_ktime_get_ns() == 0) clock_zero++;
  return 0;
}
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(clock_wakeup_new) {
  if (bpf_ktime_get_ns() == 0) clock_zero++;
  return 0;
}

// The floor of an application probe: an empty uprobe and uretprobe on the same function.
SEC("uprobe")
int floor_call_entry(struct pt_regs *ctx) { return 0; }
SEC("uretprobe")
int floor_call_return(struct pt_regs *ctx) { return 0; }
