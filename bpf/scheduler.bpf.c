// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Scheduler hooks, aggregated in the kernel: counters and log2 histograms live in per-CPU maps
// that user space reads on its tick; nothing goes through a ring buffer.
//
// Each hook exists twice: as tp_btf (cheap, typed) and as raw_tp (the fallback where BTF
// programs cannot attach). User space turns off autoload for the pair it does not use. The
// handlers read task fields with BPF_CORE_READ so one body serves both.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "scheduler.h"
#include "tree.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_sched_counters);
} counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_tree_stats);
} tree SEC(".maps");

// Per task of the target tree: when it blocked, when it got the CPU.
struct task_times {
  __u64 blocked_at;
  __u64 on_cpu_at;
};

// Keyed by thread id, only for tasks of the target tree. An LRU map, so threads that exited
// age out instead of filling it; and not task storage, which raw_tp programs cannot use for a
// task other than the current one.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, PM_MAX_TARGETS);
  __type(key, __u32);
  __type(value, struct task_times);
} times SEC(".maps");

static __always_inline struct task_times *times_of(struct task_struct *t) {
  __u32 pid = BPF_CORE_READ(t, pid);
  struct task_times *tt = bpf_map_lookup_elem(&times, &pid);
  if (tt) return tt;
  struct task_times zero = {};
  bpf_map_update_elem(&times, &pid, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&times, &pid);
}

static __always_inline int on_wakeup(struct task_struct *p) {
  __u32 zero = 0;
  struct pm_sched_counters *c = bpf_map_lookup_elem(&counters, &zero);
  if (!c) return 0;
  c->wakeups++;
  struct pm_tree_stats *s = in_tree(p) ? bpf_map_lookup_elem(&tree, &zero) : 0;
  if (!s) return 0;
  s->wakeups++;
  // A full map (or one busy on this CPU) loses the times, not the event; the loss is counted.
  struct task_times *tt = times_of(p);
  if (!tt) {
    c->storage_misses++;
    return 0;
  }
  __u64 now = bpf_ktime_get_ns();
  if (tt->blocked_at && now > tt->blocked_at) s->blocked_ns += now - tt->blocked_at;
  tt->blocked_at = 0;
  return 0;
}

// The hottest path of the kernel, kept to reading fields and adding to counters. Run-queue
// latency comes from the scheduler's own stamp: a task put on a run queue (woken, or preempted
// while runnable) carries sched_info.last_queued in rq clock time, which the scheduler turns
// into its run_delay right after this tracepoint; we take the same difference. Only tasks of
// the target tree have per-task times (their on-CPU and blocked time).
// `preempted`: prev was switched out in TASK_RUNNING. The tp_btf entry reads the fields
// directly (BTF-typed pointers), the raw_tp one through CO-RE probe reads.
static __always_inline int on_switch(struct task_struct *prev, struct task_struct *next, bool preempted,
                                     bool next_is_idle, __u64 next_queued, __u64 rq_clock) {
  __u32 zero = 0;
  struct pm_sched_counters *c = bpf_map_lookup_elem(&counters, &zero);
  if (!c) return 0;
  c->switches++;
  if (preempted) c->involuntary++;
  else c->voluntary++;

  __u64 now = 0;
  struct pm_tree_stats *ps = in_tree(prev) ? bpf_map_lookup_elem(&tree, &zero) : 0;
  if (ps) {
    ps->switches++;
    if (preempted) ps->involuntary++;
    else ps->voluntary++;
    struct task_times *pt = times_of(prev);
    if (!pt) {
      c->storage_misses++;
    } else {
      now = bpf_ktime_get_ns();
      if (pt->on_cpu_at && now > pt->on_cpu_at) ps->on_cpu_ns += now - pt->on_cpu_at;
      pt->on_cpu_at = 0;
      pt->blocked_at = preempted ? 0 : now;
    }
  }

  if (next_is_idle) return 0;  // the idle task is never on a run queue
  struct pm_tree_stats *ns = in_tree(next) ? bpf_map_lookup_elem(&tree, &zero) : 0;
  if (next_queued) {
    if (rq_clock > next_queued) {
      __u64 wait = rq_clock - next_queued;
      __u32 b = PM_BUCKET(log2_bucket(in_hist_units(wait)), PM_RUNQ_BUCKETS);
      c->runq_count++;
      c->runq_ns += wait;
      c->runq_hist[b]++;
      if (ns) {
        ns->runq_ns += wait;
        ns->runq_count++;
        ns->runq_hist[b]++;
      }
    }
  }
  if (ns) {
    struct task_times *nt = times_of(next);
    if (!nt) {
      c->storage_misses++;
      return 0;
    }
    nt->on_cpu_at = now ? now : bpf_ktime_get_ns();
  }
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  // next's run queue is this CPU's: its clock is the one last_queued was stamped with. (The
  // run queue is reached through the task's cfs_rq: the per-CPU `runqueues` symbol is not in
  // kallsyms without CONFIG_KALLSYMS_ALL.)
  __u64 clock = bpf_core_field_exists(struct cfs_rq, rq) ? next->se.cfs_rq->rq->clock : 0;
  return on_switch(prev, next, prev->__state == 0, next->pid == 0, clock ? next->sched_info.last_queued : 0, clock);
}
SEC("tp_btf/sched_waking")
int BPF_PROG(btf_wakeup, struct task_struct *p) { return on_wakeup(p); }
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(btf_wakeup_new, struct task_struct *p) { return on_wakeup(p); }
SEC("tp_btf/sched_process_fork")
int BPF_PROG(btf_fork, struct task_struct *parent, struct task_struct *child) { return on_fork(parent, child); }

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  __u64 clock = bpf_core_field_exists(struct cfs_rq, rq) ? BPF_CORE_READ(next, se.cfs_rq, rq, clock) : 0;
  return on_switch(prev, next, BPF_CORE_READ(prev, __state) == 0, BPF_CORE_READ(next, pid) == 0,
                   clock ? BPF_CORE_READ(next, sched_info.last_queued) : 0, clock);
}
SEC("raw_tp/sched_waking")
int BPF_PROG(raw_wakeup, struct task_struct *p) { return on_wakeup(p); }
SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_wakeup_new, struct task_struct *p) { return on_wakeup(p); }
SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_fork, struct task_struct *parent, struct task_struct *child) { return on_fork(parent, child); }
