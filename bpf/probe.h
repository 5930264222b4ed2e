// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Shared between probe.bpf.c and the user side: fixed-width types and limits only. */
#ifndef PERF_MONITOR_BPF_PROBE_H
#define PERF_MONITOR_BPF_PROBE_H

#include "tree.h"

#define PM_MAX_FUNCS 64      /* probed functions; index PM_REQUEST_FUNC is the USDT request */
#define PM_REQUEST_FUNC (PM_MAX_FUNCS - 1)
#define PM_MAX_DEPTH 16      /* nested probed calls kept per thread; deeper ones are counted */
#define PM_CALL_BUCKETS 64   /* log2 ns: bucket i counts latencies < 2^i ns */
#define PM_SPAN_RING_BYTES (4 << 20)
#define PM_SPAN_BATCH 16      /* spans gathered per CPU before one ring buffer record */
#define PM_SPAN_BATCH_NS 50000000ULL /* a batch older than this goes at the next span */

/* The kernel's side of a call, as a difference between its end and its start. */
enum pm_kside {
  PM_ON_CPU_NS,
  PM_RUNQ_NS,     /* runnable, waiting for a CPU */
  PM_BLOCKED_NS,  /* blocked until woken */
  PM_VOLUNTARY,   /* switches out while blocking */
  PM_INVOLUNTARY, /* switches out while runnable (preempted) */
  PM_BIO_READ,    /* bytes of bios the thread submitted */
  PM_BIO_WRITE,
  PM_FAULTS,      /* page faults, minor and major */
  PM_KSIDE
};

/* A uprobe's cookie: the function's index, and the argument (1..6, 0: none) that carries the
 * request ID. */
#define PM_COOKIE(func, arg) ((__u64)(func) | ((__u64)(arg) << 16))

/* One finished call (or request), sent to user space through the ring buffer. */
struct pm_span {
  __u64 start_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
  __u64 duration_ns;
  __u64 request_id;
  __u32 func;
  __u32 flags; /* PM_SPAN_* */
  __u32 pid, tid;
  __u64 kside[PM_KSIDE];
};
#define PM_SPAN_HAS_REQUEST 1 /* the ID is the call's own (argN) or the request's (USDT) */
#define PM_SPAN_IN_REQUEST 2  /* the call ran inside a request (USDT, or an enclosing call's argN): its ID */

/* Thread context (include/perf-monitor/annotate.h): the head of a thread's record, as the
 * programs read it at a switch out or a bio. */
struct pm_ctx_head {
  __u32 active;
  __u32 version;
  __u64 id;
  __u64 head; /* the running poll's number */
};

/* Why a thread in a poll blocked, as far as the switch out tells. */
enum pm_ctx_reason { PM_BLOCK_IO, PM_BLOCK_SLEEP, PM_BLOCK_LOCK, PM_BLOCK_OTHER, PM_BLOCK_REASONS };

enum pm_ctx_kind {
  PM_CTX_THREAD, /* a thread announced its record: addr */
  PM_CTX_GAP,    /* a thread in a poll was off the CPU from out_ns to in_ns */
  PM_CTX_BIO,    /* a thread in a poll submitted a bio at out_ns: bytes (read: reason 0, write 1) */
  PM_CTX_EXIT,   /* a thread with a record exited */
  /* OpenTelemetry thread context (OTEP 4947), struct pm_otel_event: */
  PM_OTEL_PROC,  /* a process of the target not yet looked at: where is its otel_thread_ctx_v1? */
  PM_OTEL_RUN,   /* a thread ran from from_ns to to_ns (value: its CPU time) */
  PM_OTEL_GAP,   /* a thread was off the CPU from from_ns to to_ns (value: its wait for a CPU) */
  PM_OTEL_BIO,   /* a thread submitted a bio at from_ns (value: bytes; reason 0 read, 1 write) */
};

/* One event of a thread with a context record, sent to user space as it happens (before the
 * thread runs on: a poll's events are all in the ring buffer once it has ended). */
struct pm_ctx_event {
  __u32 kind;
  __u32 pid, tid;
  __u32 reason;      /* GAP: pm_ctx_reason of the wait (PM_BLOCK_OTHER if preempted); BIO: 0 read, 1 write */
  __u32 involuntary; /* GAP: it left runnable (preempted) */
  __u32 pad;
  __u64 poll;        /* the poll's number on its thread */
  __u64 id;          /* its request */
  __u64 out_ns, in_ns;
  __u64 runq_ns;     /* GAP: of out_ns..in_ns, the last runq_ns were a wait for a CPU */
  __u64 value;       /* THREAD: the record's address; GAP: page faults in the stretch before out_ns; BIO: bytes */
};
#define PM_CTX_RING_BYTES (1 << 20)
#define PM_CTX_POLL_UNKNOWN (~0ULL) /* GAP: a stretch whose switch out was not seen: placed by its time */

/* OpenTelemetry thread context (OTEP 4947): the head of the record a thread's TLS variable
 * otel_thread_ctx_v1 points to (28 bytes, as published), read at its switch out and its bios. */
struct pm_otel_ctx {
  __u8 trace_id[16];
  __u8 span_id[8];
  __u8 valid; /* 1: a context; anything else (or no record): none */
  __u8 trace_flags;
  __u16 attrs_data_size;
  __u32 pad;
};

/* Where a process's otel_thread_ctx_v1 is, as user space found it from its ELF files and
 * memory: at the thread pointer + off (static TLS), or in the TLS block of module `modid` + off
 * (the thread's DTV: the older __tls_get_addr dialect). */
enum pm_otel_state { PM_OTEL_PENDING, PM_OTEL_READY, PM_OTEL_NONE };
enum pm_otel_mode { PM_OTEL_STATIC = 1, PM_OTEL_DTV = 2 };
struct pm_otel_tls {
  __u32 state;
  __u32 mode;
  __s64 off;
  __u64 modid;
  __u64 asked_at; /* PENDING: when user space was last asked to look (again) */
};
#define PM_OTEL_ASK_NS 1000000ULL /* a process still pending asks again at most this often */

struct pm_otel_event {
  __u32 kind; /* pm_ctx_kind: PM_OTEL_* */
  __u32 pid, tid;
  __u32 reason;      /* GAP: pm_ctx_reason; BIO: 0 read, 1 write */
  __u32 involuntary; /* GAP: it left runnable */
  __u32 start_known; /* RUN: ctx[0] was read at the stretch's start (its last switch out) */
  __u64 from_ns, to_ns;
  __u64 value;  /* RUN: CPU time; GAP: its last value ns waited for a CPU; BIO: bytes */
  __u64 faults; /* RUN: page faults in the stretch */
  /* RUN: the context at the stretch's start and at its end (the switch out); GAP, BIO: ctx[0] */
  struct pm_otel_ctx ctx[2];
};
#define PM_OTEL_MAX_PROCS 8192

/* An open call: when it began, its request ID, and the thread's figures then. */
struct pm_frame {
  __u64 start;
  __u64 request_id;
  __u32 func;
  __u32 flags; /* PM_SPAN_* */
  __u64 snap[PM_KSIDE];
};

/* A thread that entered a probed call: its running figures and its open calls. */
struct pm_thread {
  /* Its time is split at each switch out and at each call's ends (see split_since_out): these
   * are when it last left the CPU, its CPU time, run-queue wait and switch count then, when it
   * got the CPU back (0: that switch in was not seen), and whether it left runnable. */
  __u64 out_at, exec_at_out, delay_at_out, switches_at_out, in_at;
  __u32 out_runnable;
  __u32 pad;
  __u64 acc[PM_KSIDE]; /* on-CPU, run-queue, blocked time up to out_at; bio bytes */
  __u32 depth;                            /* open calls, also those too deep to keep */
  __u32 in_request;
  /* Thread context: its record's address (0: none), and the poll it was in when it last left the
   * CPU (ctx_in_poll), with the wait's reason, when it was woken, and its faults at switch in. */
  __u64 ctx_addr, ctx_poll, ctx_id, ctx_wake_at, ctx_faults_at_in;
  /* At its last switch in seen: when, its CPU time, and its switch count (a switch out between
   * that the kernel did not trace shows in the count at the next switch in). */
  __u64 ctx_in_at, ctx_exec_at_in, ctx_switches;
  __u32 ctx_in_poll, ctx_reason;
  /* OpenTelemetry thread context: where its process keeps the record pointer (otel_mode 0: not
   * read), the context it had at its last switch out (otel_known: read then), and why it left. */
  __u32 otel_mode, otel_known;
  __s64 otel_off;
  __u64 otel_modid;
  __u32 otel_reason, otel_pad;
  struct pm_otel_ctx otel_ctx;
  struct pm_frame request; /* the open perf_monitor:request span */
  struct pm_frame frames[PM_MAX_DEPTH];
};

/* Spans gathered on one CPU: a ring buffer record costs about what a call's probe does, so it
 * carries up to PM_SPAN_BATCH spans. */
struct pm_span_batch {
  __u32 n;
  __u32 pad;
  __u64 first_ns; /* when the oldest span in it was added */
  struct pm_span spans[PM_SPAN_BATCH];
};

/* Per function and per CPU: what every call added up to, whether its span reached user space
 * or not. */
struct pm_func_stats {
  __u64 entered; /* calls begun; in progress = entered - calls - open_at_exit - abandoned */
  __u64 calls;   /* finished calls */
  __u64 latency_ns;
  __u64 max_ns;
  __u64 kside[PM_KSIDE];
  __u64 open_at_exit; /* calls whose thread exited inside them */
  __u64 abandoned;    /* calls left without a return (longjmp, an exception unwinding them) */
  __u64 hist[PM_CALL_BUCKETS];
};

/* Per CPU: what could not be followed. */
struct pm_probe_losses {
  __u64 spans_dropped;   /* ring buffer full: the span is lost, the function's figures are not */
  __u64 too_deep;        /* calls nested deeper than PM_MAX_DEPTH: counted, no kernel side */
  __u64 no_thread_slot;  /* too many threads in calls at once */
  __u64 unmatched;       /* a return or request end without its start (attached mid-call) */
  __u64 ctx_events_dropped; /* context events lost to a full ring buffer */
  __u64 ctx_read_failed;    /* a context record that could not be read (page absent, bad address) */
  __u64 otel_read_failed;   /* an OpenTelemetry context pointer or record that could not be read */
  __u64 otel_no_proc_slot;  /* more target processes than PM_OTEL_MAX_PROCS at once */
};

#endif
