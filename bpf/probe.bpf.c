// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Application probes: a uprobe/uretprobe pair per probed function and the perf_monitor:request
// USDT pair, with the kernel's side of every call (on-CPU, run-queue and blocked time split at
// the thread's switches and checked against its own scheduler counters; switches and page faults
// from its own counters; bios it submitted).
//
// Per thread (task-local storage: a pointer away from the task, no hash lookup) a stack of open
// calls, each holding a snapshot of the thread's figures at entry; the return takes the
// difference. tp_btf only: every kernel with attach cookies (5.15+) has it, and task storage
// needs the typed task pointers of tp_btf. Per function the figures add up in a per-CPU array, exact
// whatever happens to the spans; each finished call also goes to user space, gathered per CPU
// and sent through a ring buffer a batch at a time, which wakes it only when a quarter full
// (user space drains it on its tick, and takes what is left in the batches at the end).
#include "vmlinux.h"
#ifdef PM_CROSS_ARCH_REGS
#include "pm_arch_regs.h"  // the target architecture's registers (bpf/arch/)
#endif

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "core_fixes.bpf.h"
#include "probe.h"
#include "scheduler.h"
#include "tree.bpf.h"
#include "switch_chain.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 wake_bytes = PM_SPAN_RING_BYTES / 4;
// perf-monitor's own process: never followed (a probe on libc's malloc would otherwise see the
// monitor's own work on the spans it reports, and feed on itself).
const volatile __u32 self_tgid = 0;

// Set by user space when monitoring ends: no call or request is taken in from then on, so what
// the kernel holds can be drained and reported while the probes are still attached (taking a
// uprobe down waits for the kernel's RCU grace periods: that comes after the summary).
volatile __u32 stopping = 0;

// Created at a thread's first probed call, freed with the thread.
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct pm_thread);
} threads SEC(".maps");

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
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_span_batch);
} batches SEC(".maps");  // each CPU's spans not yet sent

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, PM_SPAN_RING_BYTES);
} spans SEC(".maps");

// The scheduler object's run-queue stamps (scheduler.h), shared where it is loaded with the typed
// programs (always, where a tree is followed), with its clock (switch_chain.bpf.h): a thread woken
// inside a poll waits for a CPU from its stamp, and no wakeup program of this object is needed
// (ctx_wakeup: the fallback).
const volatile __u32 shared_stamps = 0;
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, PM_RUNQ_STAMP_SLOTS);  // 1 where not shared (user space)
  __type(key, __u32);
  __type(value, struct pm_runq_stamp);
} runq_stamps SEC(".maps");

// Thread context events (see pm_ctx_event), one record each, as they happen.
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, PM_CTX_RING_BYTES);
} ctx_events SEC(".maps");

static __always_inline struct pm_probe_losses *losses_here(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&losses, &zero);
}

// Whose calls count: the target tree's threads (all but perf-monitor's own, system-wide).
static __always_inline bool followed(struct task_struct *task) {
  if (track_tree) return member_of(task) != 0;
  return (bpf_get_current_pid_tgid() >> 32) != self_tgid;
}

// A thread has storage only once it entered a call as a followed thread: finding it is the
// whole check, and the tree is looked up only for a thread's first call.
static __always_inline struct pm_thread *current_thread(struct task_struct *task, bool create, __u64 now) {
  struct pm_thread *t = bpf_task_storage_get(&threads, task, 0, 0);
  if (t || !create) return t;
  if (!followed(task)) return 0;
  t = bpf_task_storage_get(&threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (t) {
    // It is running: its time counts from here, on CPU.
    t->out_at = t->in_at = now;
    t->exec_at_out = task->se.sum_exec_runtime;
    t->delay_at_out = task->sched_info.run_delay;
    t->switches_at_out = task->nvcsw + task->nivcsw;
    t->out_runnable = 1;
  } else {
    struct pm_probe_losses *l = losses_here();
    if (l) l->no_thread_slot++;
  }
  return t;
}

static __always_inline struct pm_func_stats *stats_of(__u32 func) {
  __u32 key = func & (PM_MAX_FUNCS - 1);
  return bpf_map_lookup_elem(&funcs, &key);
}

// The time from the thread's last switch out to now, split into running, waiting for a CPU and
// blocked; the three always add up to the span, on one clock (ktime), when both switches of the
// stretch were seen (the thread's switch count says no other came in between):
// - on the CPU from its switch in to now, as perf's task-clock counts it (a vCPU's stolen time
//   included: the thread was running as far as the guest can tell);
// - off it before that: if it left runnable (preempted, or yielding) all of it was a wait for a
//   CPU; if it slept, the wait is its run_delay since (wakeup to switch in), the rest blocked.
// A switch the kernel did not trace for us leaves the exact counters: the running part is its
// sum_exec_runtime since the last switch out seen (behind by up to a tick while it runs), the
// wait its run_delay, the rest blocked.
static __always_inline void split_since_out(struct task_struct *task, struct pm_thread *t, __u64 now, bool at_out,
                                            __u64 *run, __u64 *wait, __u64 *blocked) {
  __u64 gap = now > t->out_at ? now - t->out_at : 0;
  __u64 switches = task->nvcsw + task->nivcsw - (at_out ? 1 : 0);  // at a switch out it has counted it
  __u64 delay = task->sched_info.run_delay;
  __u64 waited = delay > t->delay_at_out ? delay - t->delay_at_out : 0;
  bool seen = t->in_at && t->in_at >= t->out_at && switches == t->switches_at_out;
  __u64 r;
  if (seen) {
    r = now > t->in_at ? now - t->in_at : 0;
  } else {
    __u64 exec = task->se.sum_exec_runtime;
    r = exec > t->exec_at_out ? exec - t->exec_at_out : 0;
  }
  if (r > gap) r = gap;
  __u64 w = seen && t->out_runnable ? gap - r : waited;
  if (w > gap - r) w = gap - r;
  *run = r;
  *wait = w;
  *blocked = gap - r - w;
}

// The thread's figures now (it is running: the current stretch is in).
static __always_inline void kside_now(struct task_struct *task, struct pm_thread *t, __u64 now, __u64 *out) {
  __u64 run, wait, blocked;
  split_since_out(task, t, now, false, &run, &wait, &blocked);
  out[PM_ON_CPU_NS] = t->acc[PM_ON_CPU_NS] + run;
  out[PM_RUNQ_NS] = t->acc[PM_RUNQ_NS] + wait;
  out[PM_BLOCKED_NS] = t->acc[PM_BLOCKED_NS] + blocked;
  out[PM_VOLUNTARY] = task->nvcsw;
  out[PM_INVOLUNTARY] = task->nivcsw;
  out[PM_BIO_READ] = t->acc[PM_BIO_READ];
  out[PM_BIO_WRITE] = t->acc[PM_BIO_WRITE];
  out[PM_FAULTS] = task->min_flt + task->maj_flt;
}

static __always_inline void open_frame(struct task_struct *task, struct pm_thread *t, struct pm_frame *f, __u32 func,
                                       __u64 now) {
  struct pm_func_stats *s = stats_of(func);
  if (s) s->entered++;
  f->func = func;
  f->start = now;
  kside_now(task, t, now, f->snap);
}

// Sends a CPU's batch as one record. User space is woken only when the ring is a quarter full
// (it drains the ring on its tick anyway): no wake-up per record.
static __always_inline void send_batch(struct pm_span_batch *b) {
  __u64 n = b->n;
  __u64 size = n * sizeof(struct pm_span);
  asm volatile("" : "+r"(size));  // keep the bound check below where the verifier sees it
  if (size == 0 || size > sizeof(b->spans)) return;
  __u64 flags = bpf_ringbuf_query(&spans, BPF_RB_AVAIL_DATA) >= wake_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(&spans, b->spans, size, flags) != 0) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->spans_dropped += n;
  }
  b->n = 0;
}

// Closes a call: adds it to its function and sends its span.
static __always_inline void close_frame(struct task_struct *task, struct pm_thread *t, struct pm_frame *f, __u64 now) {
  __u32 func = f->func & (PM_MAX_FUNCS - 1);
  struct pm_func_stats *s = stats_of(func);
  if (!s) return;
  __u64 cur[PM_KSIDE];
  kside_now(task, t, now, cur);
  __u64 dur = now > f->start ? now - f->start : 0;
  s->calls++;
  s->latency_ns += dur;
  if (dur > s->max_ns) s->max_ns = dur;
  s->hist[PM_BUCKET(log2_bucket(dur), PM_CALL_BUCKETS)]++;
  __u32 zero = 0;
  struct pm_span_batch *b = bpf_map_lookup_elem(&batches, &zero);
  struct pm_span *sp = 0;
  if (b) {
    if (b->n >= PM_SPAN_BATCH) b->n = 0;  // never: a full batch is sent at once
    if (b->n == 0) b->first_ns = now;
    sp = &b->spans[b->n & (PM_SPAN_BATCH - 1)];
  }
  __u64 d[PM_KSIDE];
  for (int i = 0; i < PM_KSIDE; ++i) d[i] = cur[i] > f->snap[i] ? cur[i] - f->snap[i] : 0;
  // The time parts add up to the span, also when a stretch fell back on the kernel's counters
  // (behind by up to a tick while the thread runs, exact at its next switch out).
  if (d[PM_ON_CPU_NS] > dur) d[PM_ON_CPU_NS] = dur;
  if (d[PM_RUNQ_NS] > dur - d[PM_ON_CPU_NS]) d[PM_RUNQ_NS] = dur - d[PM_ON_CPU_NS];
  d[PM_BLOCKED_NS] = dur - d[PM_ON_CPU_NS] - d[PM_RUNQ_NS];
  for (int i = 0; i < PM_KSIDE; ++i) {
    s->kside[i] += d[i];
    if (sp) sp->kside[i] = d[i];
  }
  if (!b || !sp) return;
  sp->start_ns = f->start;
  sp->duration_ns = dur;
  sp->request_id = f->request_id;
  sp->func = func;
  sp->flags = f->flags;
  sp->pid = task->tgid;
  sp->tid = task->pid;
  b->n++;
  if (b->n >= PM_SPAN_BATCH || now - b->first_ns >= PM_SPAN_BATCH_NS) send_batch(b);
}

// ---- Thread context ----

// User space reads the ring on a timer of its own (every 10 ms: 1 MiB holds 14,000 events), so
// no event wakes it.
static __always_inline void ctx_send(struct pm_ctx_event *e) {
  if (bpf_ringbuf_output(&ctx_events, e, sizeof(*e), BPF_RB_NO_WAKEUP) != 0) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->ctx_events_dropped++;
  }
}

// The head of the current thread's record (it is the current task: its memory is the one read).
// The page may be absent (never touched, swapped out): the read fails, is counted, and the event
// counts for no poll.
static __always_inline bool ctx_read(struct pm_thread *t, struct pm_ctx_head *h) {
  if (bpf_probe_read_user(h, sizeof(*h), (const void *)t->ctx_addr) == 0) return true;
  struct pm_probe_losses *l = losses_here();
  if (l) l->ctx_read_failed++;
  return false;
}

static __always_inline __u64 faults_of(struct task_struct *task) { return task->min_flt + task->maj_flt; }

// An event of `task`: its kind and thread, the rest zero.
static __always_inline void ctx_event(struct pm_ctx_event *e, __u32 kind, struct task_struct *task) {
  __builtin_memset(e, 0, sizeof(*e));
  e->kind = kind;
  e->pid = task->tgid;
  e->tid = task->pid;
}

// The stretch `task` spent off the CPU from its switch out at t->out_at, `off` long, inside the
// poll it was in then; its last `runq` waiting for a CPU.
static __always_inline void ctx_send_gap(struct task_struct *task, struct pm_thread *t, __u64 off, __u64 runq,
                                         __u64 faults) {
  struct pm_ctx_event e;
  ctx_event(&e, PM_CTX_GAP, task);
  e.reason = t->ctx_reason;
  e.involuntary = t->out_runnable;
  e.poll = t->ctx_poll;
  e.id = t->ctx_id;
  e.out_ns = t->out_at;
  e.in_ns = t->out_at + off;
  e.runq_ns = runq < off ? runq : off;
  e.value = faults;
  ctx_send(&e);
}

// Why a thread blocks: waiting for I/O (io_schedule: a bio, a page being read), or by the system
// call it is in: a sleep, a futex (a lock or a condition variable), a file sync (the journal's
// commit); anything else (a pipe, a socket, poll) is other.
static __always_inline __u32 block_reason(struct task_struct *prev) {
  if (BPF_CORE_READ_BITFIELD(prev, in_iowait)) return PM_BLOCK_IO;
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
  if (!regs) return PM_BLOCK_OTHER;
#if defined(__TARGET_ARCH_x86)
  long nr = regs->orig_ax;
  if (nr == 35 || nr == 230) return PM_BLOCK_SLEEP;           // nanosleep, clock_nanosleep
  if (nr == 202 || nr == 449) return PM_BLOCK_LOCK;           // futex, futex_waitv
  if (nr == 74 || nr == 75 || nr == 277) return PM_BLOCK_IO;  // fsync, fdatasync, sync_file_range
#elif defined(__TARGET_ARCH_arm64)
  long nr = ((const struct user_pt_regs *)regs)->regs[8];     // the syscall number's register
  if (nr == 101 || nr == 115) return PM_BLOCK_SLEEP;
  if (nr == 98 || nr == 449) return PM_BLOCK_LOCK;
  if (nr == 82 || nr == 83 || nr == 84) return PM_BLOCK_IO;
#endif
  return PM_BLOCK_OTHER;
}

// A thread leaves the CPU: if it is in a poll, the stretch off the CPU that begins now counts
// for that poll (sent when it is back, at ctx_back).
static __always_inline void ctx_out(struct task_struct *prev, struct pm_thread *t, bool runnable) {
  struct pm_ctx_head h;
  t->ctx_in_poll = 0;
  t->ctx_switches = prev->nvcsw + prev->nivcsw;  // (this switch counted)
  if (!prev->mm) return;  // exiting: its memory is gone
  if (!ctx_read(t, &h) || h.active != 1) return;
  t->ctx_in_poll = 1;
  t->ctx_poll = h.head;
  t->ctx_id = h.id;
  t->ctx_wake_at = 0;
  t->ctx_reason = runnable ? PM_BLOCK_OTHER : block_reason(prev);
}

// The run queue's clock of the CPU a task is switched in on, as the scheduler set it for this
// switch (0 where the kernel has no group scheduling, whose cfs_rq names its rq).
static __always_inline __u64 rq_clock_of(struct task_struct *t) {
  struct cfs_rq *cfs = t->se.cfs_rq;
  if (!bpf_core_field_exists(cfs->rq) || !cfs) return 0;
  return BPF_CORE_READ(cfs, rq, clock);
}

// Back on a CPU at `now` after a stretch off it inside a poll: the stretch, with its wait for a
// CPU: all of it if it left runnable, else from its wakeup on (timed by ctx_wakeup, on the
// clock of the stretch). A thread can be woken where no wakeup tracepoint fires (seen after I/O
// waits here, about one switch in a thousand; bpftrace sees no wakeup either): its wait is
// then what the scheduler's own stamp says (sched_info.last_queued, against the run queue's
// clock, what run_delay adds up).
static __always_inline __u64 wait_since_out(struct task_struct *next, struct pm_thread *t, __u64 now, __u64 gap) {
  __u64 woke = t->ctx_wake_at;
  if (t->out_runnable) return gap;
  if (shared_stamps) {
    // The scheduler's stamp of this wakeup: still there, or just taken by its own program.
    __u32 slot = next->pid & (PM_RUNQ_STAMP_SLOTS - 1);
    struct pm_runq_stamp *s = bpf_map_lookup_elem(&runq_stamps, &slot);
    woke = s && s->pid == next->pid && s->start == (__u32)next->start_time ? (s->at ? s->at : s->taken) : 0;
  }
  if (woke > t->out_at && woke <= now) return now - woke;
  // Woken where no wakeup tracepoint fired: the scheduler's own queue stamp, on its clock.
  __u64 queued = next->sched_info.last_queued, clock = rq_clock_of(next);
  return queued && clock > queued ? clock - queued : 0;
}

static __always_inline void ctx_back(struct task_struct *next, struct pm_thread *t, __u64 now) {
  t->ctx_in_poll = 0;
  __u64 gap = now > t->out_at ? now - t->out_at : 0;
  __u64 wait = wait_since_out(next, t, now, gap);
  __u64 f = faults_of(next);
  ctx_send_gap(next, t, gap, wait, f > t->ctx_faults_at_in ? f - t->ctx_faults_at_in : 0);
}

// A thread in a poll left the CPU at out_at and is leaving it again now, but its switch in was
// not seen (about one switch in ten thousand here, where bpftrace sees neither it nor the wakeup
// before it). The stretch off the CPU began at out_at; how long it was, and its wait for a CPU,
// the thread's own counters say: its time since out_at less its CPU time since (sum_exec_runtime,
// current here), and its run_delay since. It lies inside the poll it began in: the thread had to
// be back on a CPU to end that poll.
static __always_inline void ctx_unseen_back(struct task_struct *prev, struct pm_thread *t, __u64 now) {
  t->ctx_in_poll = 0;
  __u64 span = now > t->out_at ? now - t->out_at : 0;
  __u64 exec = prev->se.sum_exec_runtime, delay = prev->sched_info.run_delay;
  __u64 ran = exec > t->exec_at_out ? exec - t->exec_at_out : 0;
  __u64 off = span > ran ? span - ran : 0;
  __u64 waited = delay > t->delay_at_out ? delay - t->delay_at_out : 0;
  ctx_send_gap(prev, t, off, waited, 0);
}

// Back on a CPU at `now`, with a switch out since its last switch in seen that the kernel did not
// trace for us (its switch count moved): the stretch off the CPU ended now and lasted its time
// since that switch in less its CPU time since. Which poll it was in is not known here; user
// space places it by its time among the thread's polls. Its wait for a CPU, by the scheduler's
// queue stamp.
static __always_inline void ctx_unseen_out(struct task_struct *next, struct pm_thread *t, __u64 now) {
  __u64 span = now > t->ctx_in_at ? now - t->ctx_in_at : 0;
  __u64 exec = next->se.sum_exec_runtime;
  __u64 ran = exec > t->ctx_exec_at_in ? exec - t->ctx_exec_at_in : 0;
  __u64 off = span > ran ? span - ran : 0;
  if (!off) return;
  __u64 queued = next->sched_info.last_queued, clock = rq_clock_of(next);
  __u64 wait = queued && clock > queued ? clock - queued : 0;
  struct pm_ctx_event e;
  ctx_event(&e, PM_CTX_GAP, next);
  e.reason = PM_BLOCK_OTHER;
  e.poll = PM_CTX_POLL_UNKNOWN;
  e.out_ns = now - off;
  e.in_ns = now;
  e.runq_ns = wait < off ? wait : off;
  ctx_send(&e);
}

// ---- OpenTelemetry thread context (OTEP 4947) ----
//
// An SDK keeps, per thread, a pointer to the running span's record in the TLS variable
// otel_thread_ctx_v1 (NULL: no span). There is no event when it changes: the programs read it at
// each switch out (and bio) of the thread, so each stretch on the CPU is known by the context it
// began with (the one read at the switch out before it: it cannot change off the CPU) and the
// one it ended with; each stretch off the CPU by the one it began with. User space adds them up
// per span. Loaded only where the target has the variable (otel_on).
const volatile __u32 otel_on = 0;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PM_OTEL_MAX_PROCS);
  __type(key, __u32);
  __type(value, struct pm_otel_tls);
} otel_procs SEC(".maps");  // by tgid, written by user space once it has looked

static __always_inline void otel_send(struct pm_otel_event *e) {
  if (bpf_ringbuf_output(&ctx_events, e, sizeof(*e), BPF_RB_NO_WAKEUP) != 0) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->ctx_events_dropped++;
  }
}

static __always_inline void otel_event(struct pm_otel_event *e, __u32 kind, struct task_struct *task) {
  __builtin_memset(e, 0, sizeof(*e));
  e->kind = kind;
  e->pid = task->tgid;
  e->tid = task->pid;
}

// The current thread's context (it is `task`: its memory is the one read). The pointer's slot is
// at the thread pointer + off (static TLS), or in its module's block, through the thread's DTV.
// false: a read failed (counted); a NULL pointer or a record not valid is no context (valid 0).
static __always_inline bool otel_read(struct task_struct *task, struct pm_thread *t, struct pm_otel_ctx *c) {
  __builtin_memset(c, 0, sizeof(*c));
#if defined(__TARGET_ARCH_x86)
  __u64 tp = task->thread.fsbase, slot, rec = 0;
  if (!tp) return true;
  if (t->otel_mode == PM_OTEL_STATIC) {
    slot = tp + t->otel_off;
  } else {
    __u64 dtv = 0, block = 0;  // glibc: the DTV after the TCB's self pointer; 16 bytes an entry
    if (bpf_probe_read_user(&dtv, sizeof(dtv), (const void *)(tp + 8)) != 0 || !dtv) goto failed;
    if (bpf_probe_read_user(&block, sizeof(block), (const void *)(dtv + t->otel_modid * 16)) != 0) goto failed;
    if (!block || block == ~0ULL) return true;  // not allocated for this thread (yet)
    slot = block + t->otel_off;
  }
  if (bpf_probe_read_user(&rec, sizeof(rec), (const void *)slot) != 0) goto failed;
  if (!rec) return true;
  if (bpf_probe_read_user(c, 28, (const void *)rec) != 0) goto failed;
  if (c->valid != 1) c->valid = 0;
  return true;
failed: {
  struct pm_probe_losses *l = losses_here();
  if (l) l->otel_read_failed++;
  __builtin_memset(c, 0, sizeof(*c));
  return false;
}
#else
  return true;  // read on x86-64 only (user space finds no variable elsewhere)
#endif
}

// A thread of the target being switched in that has no storage yet, or has not been told where
// its process's context is: where user space has looked, it is followed from here (its CPU time
// counts from this switch in); a process not yet looked at is announced, once.
static __always_inline struct pm_thread *otel_thread(struct task_struct *task, struct pm_thread *t, __u64 now) {
  if (!track_tree || !member_of(task)) return t;
  __u32 tgid = task->tgid;
  struct pm_otel_tls *p = bpf_map_lookup_elem(&otel_procs, &tgid);
  bool ask = false;
  if (!p) {
    struct pm_otel_tls pending = {.state = PM_OTEL_PENDING, .asked_at = now};
    long err = bpf_map_update_elem(&otel_procs, &tgid, &pending, BPF_NOEXIST);
    ask = err == 0;
    if (err != 0 && err != -17) {  // (-EEXIST: another CPU announced it)
      struct pm_probe_losses *l = losses_here();
      if (l) l->otel_no_proc_slot++;
    }
  } else if (p->state == PM_OTEL_PENDING && now - p->asked_at >= PM_OTEL_ASK_NS) {
    // Not found yet: a process just exec'd loads its libraries first. It asks again as it runs
    // (user space also looks again on its own, each round, for a while).
    p->asked_at = now;
    ask = true;
  }
  if (ask) {
    // User space is woken for this one: the sooner it looks, the fewer of the first spans are lost.
    struct pm_otel_event e;
    otel_event(&e, PM_OTEL_PROC, task);
    if (bpf_ringbuf_output(&ctx_events, &e, sizeof(e), 0) != 0) {
      struct pm_probe_losses *l = losses_here();
      if (l) l->ctx_events_dropped++;
    }
  }
  if (!p || p->state != PM_OTEL_READY) return t;
  if (!t) {
    t = bpf_task_storage_get(&threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!t) {
      struct pm_probe_losses *l = losses_here();
      if (l) l->no_thread_slot++;
      return 0;
    }
    t->out_at = now;
    t->exec_at_out = task->se.sum_exec_runtime;
    t->delay_at_out = task->sched_info.run_delay;
    t->switches_at_out = task->nvcsw + task->nivcsw;
    t->out_runnable = 1;
  }
  t->otel_mode = p->mode;
  t->otel_off = p->off;
  t->otel_modid = p->modid;
  // A thread that has never left a CPU is new: its variable starts NULL (no context). Any other
  // had a context not known here.
  t->otel_known = task->nvcsw + task->nivcsw == 0;
  __builtin_memset(&t->otel_ctx, 0, sizeof(t->otel_ctx));
  return t;
}

// A thread leaves the CPU at `now`: the stretch it ran (since its switch in, or since its last
// switch out where the switch in was not traced: then the stretch off the CPU before it is sent
// first, measured by its own counters), with its context at both ends.
static __always_inline void otel_out(struct task_struct *prev, struct pm_thread *t, __u64 now, bool runnable) {
  struct pm_otel_event e;
  otel_event(&e, PM_OTEL_RUN, prev);
  __u64 exec = prev->se.sum_exec_runtime, from = t->in_at, exec_from = t->ctx_exec_at_in;
  if (!from) {
    __u64 span = now > t->out_at ? now - t->out_at : 0;
    __u64 ran = exec > t->exec_at_out ? exec - t->exec_at_out : 0, delay = prev->sched_info.run_delay;
    __u64 off = span > ran ? span - ran : 0;
    from = t->out_at + off;
    exec_from = t->exec_at_out;
    if (t->otel_known && t->otel_ctx.valid == 1 && off) {
      struct pm_otel_event g;
      otel_event(&g, PM_OTEL_GAP, prev);
      g.reason = t->otel_reason;
      g.involuntary = t->out_runnable;
      g.from_ns = t->out_at;
      g.to_ns = from;
      __u64 waited = delay > t->delay_at_out ? delay - t->delay_at_out : 0;
      g.value = waited < off ? waited : off;
      g.ctx[0] = t->otel_ctx;
      otel_send(&g);
    }
  }
  e.start_known = t->otel_known;
  e.ctx[0] = t->otel_ctx;
  t->otel_known = prev->mm && otel_read(prev, t, &e.ctx[1]);
  t->otel_ctx = e.ctx[1];
  t->otel_reason = runnable ? PM_BLOCK_OTHER : block_reason(prev);
  t->ctx_wake_at = 0;
  if (e.ctx[0].valid != 1 && e.ctx[1].valid != 1) return;
  e.from_ns = from;
  e.to_ns = now;
  // On the CPU from its switch in to now, by the clock of the switches (the scheduler's own
  // runtime can take in a wait before it ran, when its clock was not updated at the switch); by
  // that runtime where the switch in was not seen.
  e.value = t->in_at ? now - from : exec > exec_from ? exec - exec_from : 0;
  __u64 f = faults_of(prev);
  e.faults = f > t->ctx_faults_at_in ? f - t->ctx_faults_at_in : 0;
  otel_send(&e);
}

// Back on a CPU at `now`: the stretch off it, in the context it left with.
static __always_inline void otel_back(struct task_struct *next, struct pm_thread *t, __u64 now) {
  if (!t->otel_known || t->otel_ctx.valid != 1 || !t->out_at) return;
  struct pm_otel_event e;
  otel_event(&e, PM_OTEL_GAP, next);
  __u64 gap = now > t->out_at ? now - t->out_at : 0;
  __u64 wait = wait_since_out(next, t, now, gap);
  e.reason = t->otel_reason;
  e.involuntary = t->out_runnable;
  e.from_ns = t->out_at;
  e.to_ns = now;
  e.value = wait < gap ? wait : gap;
  e.ctx[0] = t->otel_ctx;
  otel_send(&e);
}

// A new program in a process: where its variable is must be looked for again.
SEC("tp_btf/sched_process_exec")
int BPF_PROG(otel_exec, struct task_struct *p) {
  __u32 tgid = p->tgid;
  bpf_map_delete_elem(&otel_procs, &tgid);
  struct pm_thread *t = bpf_task_storage_get(&threads, p, 0, 0);
  if (t) t->otel_mode = 0;
  return 0;
}

// Once per thread (the first perf_monitor_poll_begin): its record's address.
SEC("usdt")
int BPF_USDT(context_thread, __u64 addr) {
  if (stopping) return 0;
  __u64 now = bpf_ktime_get_ns();
  struct task_struct *task = bpf_get_current_task_btf();
  struct pm_thread *t = current_thread(task, true, now);
  if (!t) return 0;
  t->ctx_addr = addr;
  t->ctx_faults_at_in = faults_of(task);
  struct pm_ctx_event e;
  ctx_event(&e, PM_CTX_THREAD, task);
  e.value = addr;
  ctx_send(&e);
  return 0;
}

// When a thread that blocked inside a poll is woken: its wait for a CPU starts here. Loaded only
// where a target publishes thread context (it sees every wakeup of the machine).
SEC("tp_btf/sched_wakeup")
int BPF_PROG(ctx_wakeup, struct task_struct *p) {
  struct pm_thread *t = bpf_task_storage_get(&threads, p, 0, 0);
  if (t && (t->ctx_in_poll || (t->otel_known && t->otel_ctx.valid == 1))) t->ctx_wake_at = bpf_ktime_get_ns();
  return 0;
}

// The sixth integer argument: libbpf 1.1 names the first five only.
#if defined(__TARGET_ARCH_x86)
#define PM_PARM6(ctx) ((ctx)->r9)
#elif defined(__TARGET_ARCH_arm64)
#define PM_PARM6(ctx) (((const struct user_pt_regs *)(ctx))->regs[5])
#else
#define PM_PARM6(ctx) 0 /* not read on this architecture: :arg6 counts as no ID */
#endif

// Integer argument n (1..6). All six are read and one is picked by index: a switch would be
// folded into a variable offset into the context, which the verifier refuses.
static __always_inline __u64 arg_of(struct pt_regs *ctx, __u32 n) {
  __u64 args[8] = {0, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx),
                   PT_REGS_PARM5(ctx), PM_PARM6(ctx), 0};
  return args[PM_BUCKET(n, 8)];
}

SEC("uprobe")
int call_entry(struct pt_regs *ctx) {
  if (stopping) return 0;
  __u64 now = bpf_ktime_get_ns();
  struct task_struct *task = bpf_get_current_task_btf();
  struct pm_thread *t = current_thread(task, true, now);
  if (!t) return 0;  // not the target's, or no slot (counted)
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u32 d = t->depth++;
  if (d >= PM_MAX_DEPTH) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->too_deep++;
    struct pm_func_stats *s = stats_of(cookie & 0xffff);
    if (s) s->entered++;
    return 0;
  }
  struct pm_frame *f = &t->frames[d & (PM_MAX_DEPTH - 1)];
  __u32 arg = (cookie >> 16) & 0xff;
  // A call without an ID argument of its own takes the innermost request it runs in: the
  // enclosing probed call's ID (its own argN, or one it inherited) or the open USDT request,
  // whichever began later.
  struct pm_frame *up = d > 0 ? &t->frames[(d - 1) & (PM_MAX_DEPTH - 1)] : 0;
  bool from_call = up && up->flags && (!t->in_request || up->start >= t->request.start);
  if (arg) {
    f->request_id = arg_of(ctx, arg);
    f->flags = PM_SPAN_HAS_REQUEST;
  } else if (from_call) {
    f->request_id = up->request_id;
    f->flags = PM_SPAN_IN_REQUEST;
  } else if (t->in_request) {
    f->request_id = t->request.request_id;
    f->flags = PM_SPAN_IN_REQUEST;
  } else {
    f->request_id = 0;
    f->flags = 0;
  }
  open_frame(task, t, f, cookie & 0xffff, now);
  return 0;
}

SEC("uretprobe")
int call_return(struct pt_regs *ctx) {
  if (stopping) return 0;
  __u64 now = bpf_ktime_get_ns();
  struct task_struct *task = bpf_get_current_task_btf();
  struct pm_thread *t = current_thread(task, false, now);
  if (!t || t->depth == 0) {
    // A followed thread's return without its call: the call began before perf-monitor
    // attached. Other processes' returns are none of ours.
    struct pm_probe_losses *l = followed(task) ? losses_here() : 0;
    if (l) l->unmatched++;
    return 0;
  }
  __u32 func = bpf_get_attach_cookie(ctx) & 0xffff;
  __u32 d = --t->depth;
  if (d >= PM_MAX_DEPTH) {
    // Too deep to keep: still a call of its function.
    struct pm_func_stats *s = stats_of(func);
    if (s) s->calls++;
    return 0;
  }
  // A call that never returned normally (longjmp, an exception) leaves frames above its
  // caller's: they are given up until this function's own.
  bool found = false;
  for (int i = 0; i < PM_MAX_DEPTH; ++i) {
    __u32 top = t->frames[d & (PM_MAX_DEPTH - 1)].func;
    if (top == func) {
      found = true;
      break;
    }
    struct pm_func_stats *s = stats_of(top);
    if (s) s->abandoned++;
    if (d == 0) break;
    d = --t->depth;
  }
  if (found) close_frame(task, t, &t->frames[d & (PM_MAX_DEPTH - 1)], now);
  return 0;
}

SEC("usdt")
int BPF_USDT(request_begin, __u64 id) {
  if (stopping) return 0;
  __u64 now = bpf_ktime_get_ns();
  struct task_struct *task = bpf_get_current_task_btf();
  struct pm_thread *t = current_thread(task, true, now);
  if (!t) return 0;
  if (t->in_request) {
    struct pm_probe_losses *l = losses_here();
    if (l) l->unmatched++;  // BEGIN twice: the first request is given up
  }
  t->in_request = 1;
  t->request.request_id = id;
  t->request.flags = PM_SPAN_HAS_REQUEST;
  open_frame(task, t, &t->request, PM_REQUEST_FUNC, now);
  return 0;
}

SEC("usdt")
int BPF_USDT(request_end, __u64 id) {
  if (stopping) return 0;
  __u64 now = bpf_ktime_get_ns();
  struct task_struct *task = bpf_get_current_task_btf();
  struct pm_thread *t = current_thread(task, false, now);
  if (!t || !t->in_request) {
    struct pm_probe_losses *l = followed(task) ? losses_here() : 0;
    if (l) l->unmatched++;
    return 0;
  }
  t->in_request = 0;
  close_frame(task, t, &t->request, now);
  return 0;
}

// The scheduler's side, for threads that entered a probed call: the split at each switch out,
// and the moment it gets the CPU back. A switch this program did not see for a thread shows in
// the thread's switch count, and its split falls back on the kernel's counters.
SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  struct pm_thread *pt = bpf_task_storage_get(&threads, prev, 0, 0);
  __u64 now = 0;
  if (pt && pt->out_at) {  // (0: its storage is being set up by a probe this switch interrupted)
    __u64 run, wait, blocked;
    now = switch_now(prev);
    if (pt->ctx_in_poll) ctx_unseen_back(prev, pt, now);  // (before its figures at out_at move on)
    if (pt->otel_mode) otel_out(prev, pt, now, preempt || TASK_STATE_BTF(prev) == 0);
    split_since_out(prev, pt, now, true, &run, &wait, &blocked);
    pt->acc[PM_ON_CPU_NS] += run;
    pt->acc[PM_RUNQ_NS] += wait;
    pt->acc[PM_BLOCKED_NS] += blocked;
    pt->out_at = now;
    pt->exec_at_out = prev->se.sum_exec_runtime;
    pt->delay_at_out = prev->sched_info.run_delay;
    pt->switches_at_out = prev->nvcsw + prev->nivcsw;
    // Still runnable as it leaves (preempted, or yielding): it waits for a CPU until it is back.
    pt->out_runnable = preempt || TASK_STATE_BTF(prev) == 0;
    pt->in_at = 0;
    if (pt->ctx_addr) ctx_out(prev, pt, pt->out_runnable);
  }
  struct pm_thread *nt = bpf_task_storage_get(&threads, next, 0, 0);
  if (otel_on && (!nt || !nt->otel_mode)) {
    if (!now) now = switch_now(prev);
    nt = otel_thread(next, nt, now);
  }
  if (nt) {
    if (!now) now = switch_now(prev);
    if (nt->otel_mode) {
      otel_back(next, nt, now);
      nt->ctx_faults_at_in = faults_of(next);
      nt->ctx_exec_at_in = next->se.sum_exec_runtime;
    }
    nt->in_at = now;
    if (nt->ctx_addr) {
      __u64 switches = next->nvcsw + next->nivcsw;
      if (nt->ctx_in_poll) {
        ctx_back(next, nt, now);
      } else if (nt->ctx_in_at && switches != nt->ctx_switches) {
        ctx_unseen_out(next, nt, now);
      }
      nt->ctx_faults_at_in = faults_of(next);
      nt->ctx_in_at = now;
      nt->ctx_exec_at_in = next->se.sum_exec_runtime;
      nt->ctx_switches = switches;
    }
  }
  return 0;
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(btf_bio_queue, struct bio *bio) {
  struct pm_thread *t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0, 0);
  if (!t) return 0;
  __u32 op = bio->bi_opf & 0xff;  // REQ_OP_READ 0, REQ_OP_WRITE 1
  if (op > 1) return 0;
  __u32 bytes = bio->bi_iter.bi_size;
  t->acc[op ? PM_BIO_WRITE : PM_BIO_READ] += bytes;
  if (t->otel_mode && bytes) {
    struct task_struct *task = bpf_get_current_task_btf();
    struct pm_otel_event e;
    otel_event(&e, PM_OTEL_BIO, task);
    if (task->mm && otel_read(task, t, &e.ctx[0]) && e.ctx[0].valid == 1) {
      e.reason = op;
      e.from_ns = e.to_ns = bpf_ktime_get_ns();
      e.value = bytes;
      otel_send(&e);
    }
  }
  struct pm_ctx_head h;
  if (t->ctx_addr && bytes && ctx_read(t, &h) && h.active == 1) {
    struct pm_ctx_event e;
    ctx_event(&e, PM_CTX_BIO, bpf_get_current_task_btf());
    e.reason = op;
    e.poll = h.head;
    e.id = h.id;
    e.out_ns = e.in_ns = bpf_ktime_get_ns();
    e.value = bytes;
    ctx_send(&e);
  }
  return 0;
}

// A thread that exits inside calls: they are counted as open at exit.
SEC("tp_btf/sched_process_exit")
int BPF_PROG(btf_exit, struct task_struct *p) {
  if (otel_on && p->pid == p->tgid) {
    __u32 tgid = p->tgid;
    bpf_map_delete_elem(&otel_procs, &tgid);
  }
  struct pm_thread *t = bpf_task_storage_get(&threads, p, 0, 0);
  if (!t) return 0;
  for (int i = 0; i < PM_MAX_DEPTH; ++i) {
    if (i >= t->depth) break;
    struct pm_func_stats *s = stats_of(t->frames[i].func);
    if (s) s->open_at_exit++;
  }
  if (t->in_request) {
    struct pm_func_stats *s = stats_of(PM_REQUEST_FUNC);
    if (s) s->open_at_exit++;
  }
  if (t->ctx_addr) {
    // Its record stays (the process keeps it): user space reads its last polls, then forgets it.
    struct pm_ctx_event e;
    ctx_event(&e, PM_CTX_EXIT, p);
    e.value = t->ctx_addr;
    ctx_send(&e);
  }
  bpf_task_storage_delete(&threads, p);
  return 0;
}

