// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Empty programs on the hooks perf-monitor's kernel sources use: the floor of what any eBPF
// monitor attached there costs. Only bench/bpf_floor loads them.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#ifdef PM_CROSS_ARCH_REGS
#include "pm_arch_regs.h"  // the target architecture's registers (bpf/arch/)
#endif

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

// The parts: what each primitive a switch program can be made of costs on this machine, one at a
// time on top of the clock floor (`bpf_floor --part NAME`, with kernel.bpf_stats_enabled: the
// switch program's ns per run less the clock floor's). Not perf-monitor's programs: their parts.
//   1 task     a thread's state in task storage: prev's (made once) and next's, looked up
//   2 array    the same in an array indexed by the pid's low bits, the pid checked (inlined)
//   3 regs     prev's user registers (bpf_task_pt_regs): its pc and sp
//   4 user     16 bytes of prev's user memory, at its user sp (bpf_probe_read_user)
//   5 ring     a 48-byte record to a ring buffer that user space reads every 10 ms
//   6 kstack   prev's kernel stack, walked (bpf_get_stackid)
const volatile __u32 part = 0;
struct part_state {
  __u32 pid;
  __u32 start;
  __u64 v[3];
};
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct part_state);
} part_tasks SEC(".maps");
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 65536);
  __type(key, __u32);
  __type(value, struct part_state);
} part_slots SEC(".maps");
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20);
} part_ring SEC(".maps");
struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, 1024);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, 64 * sizeof(__u64));
} part_stacks SEC(".maps");
__u64 part_sink;

static __always_inline struct part_state *part_slot(struct task_struct *t) {
  __u32 pid = t->pid, key = pid & 0xffff;
  struct part_state *s = bpf_map_lookup_elem(&part_slots, &key);
  if (s && (s->pid != pid || s->start != (__u32)t->start_time)) {
    s->pid = pid;
    s->start = (__u32)t->start_time;
  }
  return s;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(part_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  __u64 now = bpf_ktime_get_ns();
  if (part == 1) {
    struct part_state *p = bpf_task_storage_get(&part_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    struct part_state *n = bpf_task_storage_get(&part_tasks, next, 0, 0);
    if (p) p->v[0] = now;
    if (n) n->v[1] += now - n->v[0];
  } else if (part == 2) {
    struct part_state *p = part_slot(prev), *n = part_slot(next);
    if (p) p->v[0] = now;
    if (n) n->v[1] += now - n->v[0];
  } else if (part == 3) {
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
    if (regs && prev->mm) part_sink += PT_REGS_IP_CORE(regs) ^ PT_REGS_SP_CORE(regs);
  } else if (part == 4) {
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
    __u64 buf[2];
    if (regs && prev->mm && bpf_probe_read_user(buf, sizeof buf, (void *)PT_REGS_SP_CORE(regs)) == 0)
      part_sink += buf[0] ^ buf[1];
  } else if (part == 5) {
    __u64 rec[6] = {now, prev->pid, next->pid, 0, 0, 0};
    bpf_ringbuf_output(&part_ring, rec, sizeof rec, BPF_RB_NO_WAKEUP);
  } else if (part == 6) {
    part_sink += bpf_get_stackid(ctx, &part_stacks, 0);
  } else if (now == 0) {
    clock_zero++;
  }
  return 0;
}
