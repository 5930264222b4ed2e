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

char LICENSE[] SEC("license") = "GPL";

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

// Per task: when it last became runnable (woken or preempted), left the CPU, got the CPU.
struct task_times {
  __u64 runnable_at;
  __u64 blocked_at;
  __u64 on_cpu_at;
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct task_times);
} times SEC(".maps");

static __always_inline int on_wakeup(struct task_struct *p) {
  __u32 zero = 0;
  struct pm_sched_counters *c = bpf_map_lookup_elem(&counters, &zero);
  if (!c) return 0;
  c->wakeups++;
  struct pm_tree_stats *s = in_tree(p) ? bpf_map_lookup_elem(&tree, &zero) : 0;
  if (s) s->wakeups++;
  // Task storage refuses re-entry on a CPU (a wakeup from an interrupt while a program uses
  // it): the event is counted above, only its times are lost, and the loss is counted.
  struct task_times *tt = bpf_task_storage_get(&times, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!tt) {
    c->storage_misses++;
    return 0;
  }
  __u64 now = bpf_ktime_get_ns();
  tt->runnable_at = now;
  if (s && tt->blocked_at && now > tt->blocked_at) s->blocked_ns += now - tt->blocked_at;
  tt->blocked_at = 0;
  return 0;
}

// The hottest path of the kernel: touch task storage and the clock only when there is something
// to measure. A task that blocks needs nothing unless it belongs to the tree; a task switched in
// needs its storage only if a wakeup or preemption left a timestamp there.
// `preempted`: prev was switched out in TASK_RUNNING, so it goes back to the run queue. The
// tp_btf entry reads the fields directly (BTF-typed pointers), the raw_tp one through CO-RE
// probe reads; a helper call per field is measurable on this path.
static __always_inline int on_switch(struct task_struct *prev, struct task_struct *next, bool preempted,
                                     bool next_is_idle) {
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
  }
  if (preempted || ps) {
    struct task_times *pt = bpf_task_storage_get(&times, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!pt) {
      c->storage_misses++;
    } else {
      now = bpf_ktime_get_ns();
      if (ps && pt->on_cpu_at && now > pt->on_cpu_at) ps->on_cpu_ns += now - pt->on_cpu_at;
      pt->on_cpu_at = 0;
      if (preempted) {
        pt->runnable_at = now;
      } else {
        pt->blocked_at = now;
        pt->runnable_at = 0;
      }
    }
  }

  // The idle task is never on a run queue: it has no latency to measure.
  if (next_is_idle) return 0;
  struct pm_tree_stats *ns = in_tree(next) ? bpf_map_lookup_elem(&tree, &zero) : 0;
  struct task_times *nt = bpf_task_storage_get(&times, next, 0, ns ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
  if (!nt) return 0;  // never woken or preempted since we attached: nothing to measure
  if (!nt->runnable_at && !ns) return 0;
  if (!now) now = bpf_ktime_get_ns();
  if (ns) nt->on_cpu_at = now;
  if (nt->runnable_at && now > nt->runnable_at) {
    __u64 wait = now - nt->runnable_at;
    __u32 b = PM_BUCKET(log2_bucket(wait / 1000), PM_RUNQ_BUCKETS);
    c->runq_count++;
    c->runq_ns += wait;
    c->runq_hist[b]++;
    if (ns) {
      ns->runq_ns += wait;
      ns->runq_count++;
      ns->runq_hist[b]++;
    }
  }
  nt->runnable_at = 0;
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  return on_switch(prev, next, prev->__state == 0, next->pid == 0);
}
SEC("tp_btf/sched_waking")
int BPF_PROG(btf_wakeup, struct task_struct *p) { return on_wakeup(p); }
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(btf_wakeup_new, struct task_struct *p) { return on_wakeup(p); }
SEC("tp_btf/sched_process_fork")
int BPF_PROG(btf_fork, struct task_struct *parent, struct task_struct *child) { return on_fork(parent, child); }

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  return on_switch(prev, next, BPF_CORE_READ(prev, __state) == 0, BPF_CORE_READ(next, pid) == 0);
}
SEC("raw_tp/sched_waking")
int BPF_PROG(raw_wakeup, struct task_struct *p) { return on_wakeup(p); }
SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_wakeup_new, struct task_struct *p) { return on_wakeup(p); }
SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_fork, struct task_struct *parent, struct task_struct *child) { return on_fork(parent, child); }
