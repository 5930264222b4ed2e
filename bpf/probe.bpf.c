// Application probes: a uprobe/uretprobe pair per probed function and the perf_monitor:request
// USDT pair, with the kernel's side of every call (on-CPU, run-queue and blocked time from the
// scheduler hooks; switches and page faults from the thread's own counters; bios it submitted).
//
// Per thread a stack of open calls, each holding a snapshot of the thread's figures at entry;
// the return takes the difference. Per function the figures add up in a per-CPU array, exact
// whatever happens to the spans; each finished call also goes to user space through a ring
// buffer, which wakes it only when a quarter full (user space drains it on its tick anyway).
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "probe.h"
#include "tree.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 wake_bytes = PM_SPAN_RING_BYTES / 4;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PM_MAX_THREADS);
  __uint(map_flags, BPF_F_NO_PREALLOC);  // allocated as threads enter calls, freed at their exit
  __type(key, __u32);
  __type(value, struct pm_thread);
} threads SEC(".maps");

// Never written: the zeroes a new thread entry starts from (too big for the BPF stack).
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_thread);
} blank SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, PM_MAX_FUNCS);
  __type(key, __u32);
  __type(value, struct pm_func_stats);
} funcs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_probe_losses);
} losses SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, PM_SPAN_RING_BYTES);
} spans SEC(".maps");

static __always_inline struct pm_probe_losses *losses_here(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&losses, &zero);
}

// A thread has an entry only once it entered a call as a followed thread: finding it is the
// whole check, and the tree is looked up only for a thread's first call.
static __always_inline struct pm_thread *current_thread(bool create, __u64 now) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tid = (__u32)id;
  struct pm_thread *t = bpf_map_lookup_elem(&threads, &tid);
  if (t || !create) return t;
  if (track_tree && !tgid_in_tree(id >> 32)) return 0;
  __u32 zero = 0;
  struct pm_thread *b = bpf_map_lookup_elem(&blank, &zero);
  if (!b) return 0;
  bpf_map_update_elem(&threads, &tid, b, BPF_NOEXIST);
  t = bpf_map_lookup_elem(&threads, &tid);
  if (t) {
    t->on_cpu_at = now;  // it is running: on-CPU time counts from here
  } else {
    struct pm_probe_losses *l = losses_here();
    if (l) l->no_thread_slot++;
  }
  return t;
}

// The thread's figures now (it is running: its on-CPU time includes the current stretch).
static __always_inline void kside_now(struct pm_thread *t, __u64 now, __u64 *out) {
  struct task_struct *task = bpf_get_current_task_btf();
  out[PM_ON_CPU_NS] = t->acc[PM_ON_CPU_NS] + (t->on_cpu_at && now > t->on_cpu_at ? now - t->on_cpu_at : 0);
  out[PM_RUNQ_NS] = t->acc[PM_RUNQ_NS];
  out[PM_BLOCKED_NS] = t->acc[PM_BLOCKED_NS];
  out[PM_VOLUNTARY] = task->nvcsw;
  out[PM_INVOLUNTARY] = task->nivcsw;
  out[PM_BIO_READ] = t->acc[PM_BIO_READ];
  out[PM_BIO_WRITE] = t->acc[PM_BIO_WRITE];
  out[PM_FAULTS] = task->min_flt + task->maj_flt;
}

static __always_inline void open_frame(struct pm_thread *t, struct pm_frame *f, __u32 func, __u64 now) {
  f->func = func;
  f->start = now;
  kside_now(t, now, f->snap);
}

// Closes a call: adds it to its function and sends its span.
static __always_inline void close_frame(struct pm_thread *t, struct pm_frame *f, __u64 now) {
  __u32 func = f->func & (PM_MAX_FUNCS - 1);
  struct pm_func_stats *s = bpf_map_lookup_elem(&funcs, &func);
  if (!s) return;
  __u64 cur[PM_KSIDE];
  kside_now(t, now, cur);
  __u64 dur = now > f->start ? now - f->start : 0;
  s->calls++;
  s->latency_ns += dur;
  if (dur > s->max_ns) s->max_ns = dur;
  s->hist[PM_BUCKET(log2_bucket(dur), PM_CALL_BUCKETS)]++;
  struct pm_span *sp = bpf_ringbuf_reserve(&spans, sizeof(struct pm_span), 0);
  for (int i = 0; i < PM_KSIDE; ++i) {
    __u64 d = cur[i] > f->snap[i] ? cur[i] - f->snap[i] : 0;
    s->kside[i] += d;
    if (sp) sp->kside[i] = d;
  }
  if (!sp) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->spans_dropped++;
    return;
  }
  __u64 id = bpf_get_current_pid_tgid();
  sp->start_ns = f->start;
  sp->duration_ns = dur;
  sp->request_id = f->request_id;
  sp->func = func;
  sp->flags = f->flags;
  sp->pid = id >> 32;
  sp->tid = (__u32)id;
  __u64 wake = bpf_ringbuf_query(&spans, BPF_RB_AVAIL_DATA) >= wake_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
  bpf_ringbuf_submit(sp, wake);
}

// Integer argument n (1..6). All six are read and one is picked by index: a switch would be
// folded into a variable offset into the context, which the verifier refuses.
static __always_inline __u64 arg_of(struct pt_regs *ctx, __u32 n) {
  __u64 args[8] = {0, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx),
                   PT_REGS_PARM5(ctx), ctx->r9 /* the sixth on x86-64 */, 0};
  return args[PM_BUCKET(n, 8)];
}

SEC("uprobe")
int call_entry(struct pt_regs *ctx) {
  __u64 now = bpf_ktime_get_ns();
  struct pm_thread *t = current_thread(true, now);
  if (!t) return 0;  // not the target's, or no slot (counted)
  __u32 d = t->depth++;
  if (d >= PM_MAX_DEPTH) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->too_deep++;
    return 0;
  }
  __u64 cookie = bpf_get_attach_cookie(ctx);
  struct pm_frame *f = &t->frames[d & (PM_MAX_DEPTH - 1)];
  __u32 arg = (cookie >> 16) & 0xff;
  if (arg) {
    f->request_id = arg_of(ctx, arg);
    f->flags = PM_SPAN_HAS_REQUEST;
  } else if (t->in_request) {
    f->request_id = t->request.request_id;
    f->flags = PM_SPAN_IN_REQUEST;
  } else {
    f->request_id = 0;
    f->flags = 0;
  }
  open_frame(t, f, cookie & 0xffff, now);
  return 0;
}

SEC("uretprobe")
int call_return(struct pt_regs *ctx) {
  __u64 now = bpf_ktime_get_ns();
  struct pm_thread *t = current_thread(false, now);
  struct pm_probe_losses *l = losses_here();
  if (!t || t->depth == 0) {
    if (l) l->unmatched++;  // the call began before perf-monitor attached
    return 0;
  }
  __u32 func = bpf_get_attach_cookie(ctx) & 0xffff;
  __u32 d = --t->depth;
  if (d >= PM_MAX_DEPTH) {
    // Too deep to keep: still a call of its function.
    __u32 key = func & (PM_MAX_FUNCS - 1);
    struct pm_func_stats *s = bpf_map_lookup_elem(&funcs, &key);
    if (s) s->calls++;
    return 0;
  }
  // A call that never returned normally (longjmp, an exception) leaves frames above its
  // caller's: they are dropped until this function's own.
  bool found = false;
  for (int i = 0; i < PM_MAX_DEPTH; ++i) {
    if (t->frames[d & (PM_MAX_DEPTH - 1)].func == func) {
      found = true;
      break;
    }
    if (l) l->unmatched++;
    if (d == 0) break;
    d = --t->depth;
  }
  if (found) close_frame(t, &t->frames[d & (PM_MAX_DEPTH - 1)], now);
  return 0;
}

SEC("usdt")
int BPF_USDT(request_begin, __u64 id) {
  __u64 now = bpf_ktime_get_ns();
  struct pm_thread *t = current_thread(true, now);
  if (!t) return 0;
  if (t->in_request) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->unmatched++;  // BEGIN twice: the first request is given up
  }
  t->in_request = 1;
  t->request.request_id = id;
  t->request.flags = PM_SPAN_HAS_REQUEST;
  open_frame(t, &t->request, PM_REQUEST_FUNC, now);
  return 0;
}

SEC("usdt")
int BPF_USDT(request_end, __u64 id) {
  __u64 now = bpf_ktime_get_ns();
  struct pm_thread *t = current_thread(false, now);
  if (!t || !t->in_request) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->unmatched++;
    return 0;
  }
  t->in_request = 0;
  close_frame(t, &t->request, now);
  return 0;
}

// The scheduler's side, for threads that entered a probed call (two hash lookups per switch).
static __always_inline void switch_out(struct pm_thread *t, bool preempted) {
  __u64 now = bpf_ktime_get_ns();
  if (t->on_cpu_at && now > t->on_cpu_at) t->acc[PM_ON_CPU_NS] += now - t->on_cpu_at;
  t->on_cpu_at = 0;
  if (preempted) t->queued_at = now;
  else t->blocked_at = now;
}

static __always_inline void switch_in(struct pm_thread *t) {
  __u64 now = bpf_ktime_get_ns();
  if (t->queued_at && now > t->queued_at) t->acc[PM_RUNQ_NS] += now - t->queued_at;
  if (t->blocked_at && now > t->blocked_at) t->acc[PM_BLOCKED_NS] += now - t->blocked_at;  // no waking seen
  t->queued_at = t->blocked_at = 0;
  t->on_cpu_at = now;
}

static __always_inline int on_switch(struct task_struct *prev, struct task_struct *next, bool preempted) {
  __u32 ptid = BPF_CORE_READ(prev, pid), ntid = BPF_CORE_READ(next, pid);
  struct pm_thread *pt = bpf_map_lookup_elem(&threads, &ptid);
  if (pt) switch_out(pt, preempted);
  struct pm_thread *nt = bpf_map_lookup_elem(&threads, &ntid);
  if (nt) switch_in(nt);
  return 0;
}

static __always_inline int on_wakeup(struct task_struct *p) {
  __u32 tid = BPF_CORE_READ(p, pid);
  struct pm_thread *t = bpf_map_lookup_elem(&threads, &tid);
  if (!t || !t->blocked_at) return 0;  // not followed, or woken before it left the CPU
  __u64 now = bpf_ktime_get_ns();
  if (now > t->blocked_at) t->acc[PM_BLOCKED_NS] += now - t->blocked_at;
  t->blocked_at = 0;
  t->queued_at = now;
  return 0;
}

static __always_inline int on_bio(struct bio *bio) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct pm_thread *t = bpf_map_lookup_elem(&threads, &tid);
  if (!t) return 0;
  __u32 op = BPF_CORE_READ(bio, bi_opf) & 0xff;  // REQ_OP_READ 0, REQ_OP_WRITE 1
  if (op > 1) return 0;
  t->acc[op ? PM_BIO_WRITE : PM_BIO_READ] += BPF_CORE_READ(bio, bi_iter.bi_size);
  return 0;
}

// A thread that exits inside calls: they are counted as open at exit, and its entry freed.
static __always_inline int on_exit(struct task_struct *p) {
  __u32 tid = BPF_CORE_READ(p, pid);
  struct pm_thread *t = bpf_map_lookup_elem(&threads, &tid);
  if (!t) return 0;
  for (int i = 0; i < PM_MAX_DEPTH; ++i) {
    if (i >= t->depth) break;
    __u32 func = t->frames[i].func & (PM_MAX_FUNCS - 1);
    struct pm_func_stats *s = bpf_map_lookup_elem(&funcs, &func);
    if (s) s->open_at_exit++;
  }
  if (t->in_request) {
    __u32 func = PM_REQUEST_FUNC;
    struct pm_func_stats *s = bpf_map_lookup_elem(&funcs, &func);
    if (s) s->open_at_exit++;
  }
  bpf_map_delete_elem(&threads, &tid);
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  return on_switch(prev, next, prev->__state == 0);
}
SEC("tp_btf/sched_waking")
int BPF_PROG(btf_wakeup, struct task_struct *p) { return on_wakeup(p); }
SEC("tp_btf/block_bio_queue")
int BPF_PROG(btf_bio_queue, struct bio *bio) { return on_bio(bio); }
SEC("tp_btf/sched_process_exit")
int BPF_PROG(btf_exit, struct task_struct *p) { return on_exit(p); }
SEC("tp_btf/sched_process_fork")
int BPF_PROG(btf_fork, struct task_struct *parent, struct task_struct *child) { return on_fork(parent, child); }

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  return on_switch(prev, next, BPF_CORE_READ(prev, __state) == 0);
}
SEC("raw_tp/sched_waking")
int BPF_PROG(raw_wakeup, struct task_struct *p) { return on_wakeup(p); }
SEC("raw_tp/block_bio_queue")
int BPF_PROG(raw_bio_queue, struct bio *bio) { return on_bio(bio); }
SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_exit, struct task_struct *p) { return on_exit(p); }
SEC("raw_tp/sched_process_fork")
int BPF_PROG(raw_fork, struct task_struct *parent, struct task_struct *child) { return on_fork(parent, child); }
