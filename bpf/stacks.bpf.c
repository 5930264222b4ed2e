// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Stacks of the target: where it runs (on-CPU samples) and where it waits (off-CPU time summed
// per place in the kernel). See stacks.h for what crosses to user space and when.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#ifdef PM_CROSS_ARCH_REGS
#include "pm_arch_regs.h"  // the target architecture's registers (bpf/arch/)
#endif
#include "stacks.h"
#include "tree.bpf.h"
#include "switch_chain.bpf.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PF_KTHREAD 0x00200000
#define PM_EFAULT 14  // bpf_get_stackid of a context with no kernel stack (a sample in user mode)

const volatile __u32 self_tgid = 0;
// Off-CPU: 0 is the whole system (but perf-monitor and the idle tasks).

struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, PM_MAX_KSTACKS);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, PM_STACK_DEPTH * sizeof(__u64));
} kstacks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 8 << 20);
} records SEC(".maps");

// Stretches off the CPU this long or longer go to user space one by one (0: none), read on its
// tick and when a span comes (never a wakeup of their own).
const volatile __u64 stretch_min_ns = 0;
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 2 << 20);
} stretches SEC(".maps");

// The places, each with its slot in off_values (given out in turn: off_slots_used). A place is
// one thread's, so only that thread's switch in adds to its value, and a thread that leaves
// from the place it left from last time finds its slot in its own state: the hot path looks
// nothing up by key, and adds where the verifier computes the address (an array).
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PM_MAX_OFF_SLOTS);
  __type(key, struct pm_off_key);
  __type(value, __u32);
} off_slots SEC(".maps");
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, PM_MAX_OFF_SLOTS);
  __type(key, __u32);
  __type(value, struct pm_off_value);
} off_values SEC(".maps");
__u32 off_slots_used = 0;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_stack_counters);
} counters SEC(".maps");

// The address spaces seen, with their on-CPU records so far (an off-CPU record, a place's first,
// always wakes user space). User space reads a process's mappings when its first record comes, and again when a later one has a pc in none of them (the dynamic
// linker maps the libraries after exec; dlopen): so the 1st, 2nd, 4th, 8th... record of each
// wakes it at once (the process may not live long), and the rest wait until the ring buffer is a
// quarter full, or user space's tick.
struct pm_space_key {
  __u32 tgid;
  __u32 pad;
  __u64 mm;
  __u64 exec_id;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, struct pm_space_key);
  __type(value, __u32);
} spaces SEC(".maps");
#define PM_WAKE_BYTES (2 << 20)

static __always_inline __u64 wake_flags(struct task_struct *t) {
  struct pm_space_key k = {};
  k.tgid = t->tgid;
  k.mm = (__u64)t->mm;
  k.exec_id = t->self_exec_id;
  __u32 *n = bpf_map_lookup_elem(&spaces, &k);
  if (!n) {
    __u32 one = 1;
    bpf_map_update_elem(&spaces, &k, &one, BPF_ANY);
    return BPF_RB_FORCE_WAKEUP;
  }
  __u32 seen = __sync_fetch_and_add(n, 1) + 1;
  if ((seen & (seen - 1)) == 0) return BPF_RB_FORCE_WAKEUP;
  return bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) >= PM_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

// A thread off the CPU: since when, and the slot its time goes to; and the kernel stack last
// walked at its switch-out, with where in user space it was (pc, sp, system call).
struct pm_off_state {
  __u64 out_ns;
  struct pm_off_key key;
  __u32 slot;     // key's slot in off_values
  __u32 slot_ok;  // 0: key has none (the maps were full, or its record found no room)
  __u64 walk_uip, walk_usp;
  __s64 walk_nr;
  __s32 walk_kstack;
  __u32 walk_reused;
};

static __always_inline bool same_place(const struct pm_off_key *a, const struct pm_off_key *b) {
  return a->pid == b->pid && a->tgid == b->tgid && a->kstack == b->kstack && a->preempted == b->preempted &&
         a->uip == b->uip && a->usp == b->usp;
}

// Walking the kernel stack is most of a switch's cost here (2.9 of 3.3 us in a VM). A thread
// that goes off the CPU again from the same place in user space (pc and sp), in the same system
// call and the same way (blocked or preempted), takes the kernel stack walked there last time:
// walked again every kstack_every-th time (1: always), so a system call that blocks on more than
// one path (a pipe's wait, or its mutex) has each path's share as often as it is walked.
const volatile __u32 kstack_every = 64;

static __always_inline long syscall_nr(struct pt_regs *regs) {
#if defined(__TARGET_ARCH_x86)
  return regs->orig_ax;
#elif defined(__TARGET_ARCH_arm64)
  return ((const struct user_pt_regs *)regs)->regs[8];
#else
  return -1;
#endif
}
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct pm_off_state);
} off_state SEC(".maps");

static __always_inline struct pm_stack_counters *counts(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&counters, &zero);
}

// Whether t's stacks are wanted: the tree's members, or (system-wide) every task but
// perf-monitor's own and the idle tasks.
static __always_inline bool wanted(struct task_struct *t) {
  if (track_tree) return member_of(t) != 0;
  return t->pid != 0 && (__u32)t->tgid != self_tgid;
}

static __always_inline bool has_user(struct task_struct *t) { return !(t->flags & PF_KTHREAD) && t->mm != 0; }

// The record's user part: the registers saved at the thread's entry into the kernel (a system
// call, or the interrupt that took the sample while it ran in user mode) and the stack above
// their sp, as far as it is mapped (chunk by chunk: a read that crosses the top of the stack
// fails whole). Short of PM_STACK_BYTES by less than a chunk where sp is not aligned.
static __always_inline void copy_user(struct pm_stack_record *r, struct task_struct *t) {
  r->user = 0;
  r->stack_len = 0;
  if (!has_user(t)) return;
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
  if (!regs) return;
  __u32 size = sizeof(struct pt_regs) < sizeof(r->regs) ? sizeof(struct pt_regs) : sizeof(r->regs);
  if (bpf_probe_read_kernel(r->regs, size, regs) != 0) return;
  r->user = 1;
  __u64 sp = PT_REGS_SP_CORE(regs);
  // The chunks are aligned to their size (a divisor of the page's): none straddles the end of the
  // stack's mapping, wherever sp lies in its page (the main thread's can lie less than a chunk
  // below the top, its place there random). The first runs from sp to its chunk's end.
  __u32 first = PM_STACK_CHUNK - (__u32)(sp & (PM_STACK_CHUNK - 1));
  if (first > PM_STACK_CHUNK) first = PM_STACK_CHUNK;  // (1..CHUNK: for the verifier)
  __u32 len = 0;
  if (first > 0 && bpf_probe_read_user(r->stack, first, (void *)sp) == 0) {
    len = first;
    for (int i = 0; i < PM_STACK_CHUNKS - 1; i++) {
      __u32 off = first + i * PM_STACK_CHUNK;
      if (off > PM_STACK_BYTES - PM_STACK_CHUNK) break;
      if (bpf_probe_read_user(r->stack + off, PM_STACK_CHUNK, (void *)(sp + off)) != 0) break;
      len = off + PM_STACK_CHUNK;
    }
  }
  r->stack_len = len;
  if (len <= PM_STACK_BYTES - PM_STACK_CHUNK) {
    struct pm_stack_counters *c = counts();
    if (c) c->stack_copy_short++;
  }
}

static __always_inline struct pm_stack_record *reserve(struct pm_stack_counters *c) {
  struct pm_stack_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
  if (!r && c) c->records_lost++;
  return r;
}

static __always_inline void fill(struct pm_stack_record *r, __u32 kind, struct task_struct *t, __s32 kstack) {
  r->kind = kind;
  r->tgid = t->tgid;
  r->pid = t->pid;
  r->kstack = kstack;
  r->mm = (__u64)t->mm;
  r->exec_id = t->self_exec_id;
  r->time_ns = bpf_ktime_get_ns();
  __builtin_memset(&r->key, 0, sizeof(r->key));
  bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), t->comm);
}

// On-CPU: a software cpu-clock sample on each CPU.
SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx) {
  struct task_struct *t = bpf_get_current_task_btf();
  if (!wanted(t)) return 0;
  struct pm_stack_counters *c = counts();
  if (c) c->samples++;
  __s32 kstack = bpf_get_stackid(ctx, &kstacks, 0);
  if (kstack < 0 && kstack != -PM_EFAULT && c) c->kstack_lost++;
  struct pm_stack_record *r = reserve(c);
  if (!r) return 0;
  fill(r, PM_STACK_ON_CPU, t, kstack);
  copy_user(r, t);
  bpf_ringbuf_submit(r, wake_flags(t));
  return 0;
}

// Set by user space once off_switch is in the scheduler object's chain: only then does it go on
// along the chain (attached on its own, it would run the programs after it a second time).
bool in_chain = false;

// Off-CPU: at its switch out a thread's place is found (made, with its one record, the first
// time); at its switch in the time since goes to that place's value.
SEC("tp_btf/sched_switch")
int BPF_PROG(off_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  __u64 now = switch_now(prev);
  long state = TASK_STATE_BTF(prev);
  struct pm_off_state *s = 0;
  if (state != PM_TASK_DEAD) {
    // A thread has state only once it was wanted (a member stays one until it dies).
    s = bpf_task_storage_get(&off_state, prev, 0, 0);
    if (!s && wanted(prev)) s = bpf_task_storage_get(&off_state, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (s) {
      struct pm_off_key key = {};
      key.tgid = prev->tgid;
      key.pid = prev->pid;
      key.preempted = state == 0;
      long nr = -1;
      if (has_user(prev)) {
        struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
        if (regs) {
          key.uip = PT_REGS_IP_CORE(regs);
          key.usp = PT_REGS_SP_CORE(regs);
          nr = syscall_nr(regs);
        }
      }
      if (s->walk_reused + 1 < kstack_every && s->walk_uip == key.uip && s->walk_usp == key.usp &&
          s->walk_nr == (nr << 1 | key.preempted) && s->walk_kstack >= 0) {
        key.kstack = s->walk_kstack;
        s->walk_reused++;
      } else {
        // The current task is prev: its kernel stack is the one going to sleep.
        key.kstack = bpf_get_stackid(ctx, &kstacks, 0);
        if (key.kstack < 0 && key.kstack != -PM_EFAULT) {
          struct pm_stack_counters *c = counts();
          if (c) c->kstack_lost++;
        }
        s->walk_uip = key.uip;
        s->walk_usp = key.usp;
        s->walk_nr = nr << 1 | key.preempted;
        s->walk_kstack = key.kstack;
        s->walk_reused = 0;
      }
      if (!s->slot_ok || !same_place(&key, &s->key)) {
        __u32 *slot = bpf_map_lookup_elem(&off_slots, &key);
        s->slot_ok = 0;
        if (slot) {
          s->slot = *slot;
          s->slot_ok = 1;
        } else {
          __u32 n = off_slots_used < PM_MAX_OFF_SLOTS ? __sync_fetch_and_add(&off_slots_used, 1) : PM_MAX_OFF_SLOTS;
          if (n < PM_MAX_OFF_SLOTS && bpf_map_update_elem(&off_slots, &key, &n, BPF_NOEXIST) == 0) {
            struct pm_stack_record *r = reserve(counts());
            if (r) {
              fill(r, PM_STACK_OFF_CPU, prev, key.kstack);
              r->key = key;
              copy_user(r, prev);
              bpf_ringbuf_submit(r, 0);  // a place's first time (rare): user space reads it now
              s->slot = n;
              s->slot_ok = 1;
            } else {
              bpf_map_delete_elem(&off_slots, &key);  // its place is sent the next time
            }
          }
        }
      }
      s->out_ns = now;
      s->key = key;
    }
  }
  s = bpf_task_storage_get(&off_state, next, 0, 0);
  if (s && s->out_ns != 0) {
    __u64 off = now - s->out_ns;
    __u32 slot = s->slot;
    struct pm_off_value *v = s->slot_ok ? bpf_map_lookup_elem(&off_values, &slot) : 0;
    if (v) {
      // The place is this thread's: no other CPU adds to it.
      v->ns += off;
      v->switches++;
      if (stretch_min_ns != 0 && off >= stretch_min_ns) {
        struct pm_stretch e = {};
        e.out_ns = s->out_ns;
        e.in_ns = now;
        e.key = s->key;
        if (bpf_ringbuf_output(&stretches, &e, sizeof(e), BPF_RB_NO_WAKEUP) != 0) {
          struct pm_stack_counters *c = counts();
          if (c) c->stretches_lost++;
        }
      }
    } else {
      struct pm_stack_counters *c = counts();
      if (c) {
        c->off_slots_full++;
        c->off_lost_ns += off;
      }
    }
    s->out_ns = 0;
  }
  if (in_chain) switch_chain_from(ctx, PM_CHAIN_PROBES);
  return 0;
}
