// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Shared between scheduler.bpf.c and the user side: fixed-width types and limits only. */
#ifndef PERF_MONITOR_BPF_SCHEDULER_H
#define PERF_MONITOR_BPF_SCHEDULER_H

/* log2 buckets of run-queue latency in microseconds: bucket i counts latencies < 2^i us
 * (bucket 0: under 1 us); the last bucket takes everything longer. */
#define PM_RUNQ_BUCKETS 32
/* Tasks whose run-queue stamp the raw_tp fallback holds at once (an LRU hash by pid). */
#define PM_RAW_STAMPS 16384
/* The typed programs' run-queue stamps: an array indexed by the pid's low bits (a power of two;
 * 1 MiB). Where pid_max is larger, two tasks of the same slot runnable at once lose a wait:
 * counted in runq_lost, never timed wrong. */
#define PM_RUNQ_STAMP_SLOTS 65536
/* A task's run-queue stamp (the typed programs' array, by pid_slot). The application probes'
 * programs read the same array, where they follow thread context (probe.bpf.c): `taken` keeps
 * the last stamp taken at a switch in, which their program on that switch may run after. */
struct pm_runq_stamp {
  __u64 at;     /* when the task became runnable (0: taken) */
  __u32 pid;
  __u32 start;  /* the task's start_time, low 32 bits (a reused pid is another task) */
  __u64 taken;  /* the last `at` taken */
};
/* The clock as the typed switch program read it, per CPU, with the switch it was read at
 * (prev's pid and its switch count, which the kernel counts before the tracepoint): the
 * application probes' switch program, which runs after it on the same switch, takes it rather
 * than read the clock again (a clock read is 100-200 ns in a program on a slow VM). */
/* The programs the scheduler's typed switch program ends in, in this order (switch_chain.bpf.h). */
#define PM_CHAIN_OFF_CPU 0  /* the off-CPU stacks' (stacks.bpf.c) */
#define PM_CHAIN_PROBES 1   /* the application probes' (probe.bpf.c) */
#define PM_CHAIN_SLOTS 2
struct pm_switch_clock {
  __u64 now;
  __u64 switches;
  __u32 pid;
  __u32 pad;
};
#include "tree.h"

/* System-wide scheduler counters, one slot per CPU (a per-CPU array of one element). */
struct pm_sched_counters {
  __u64 switches;     /* context switches */
  __u64 voluntary;    /* the previous task blocked (its state was not TASK_RUNNING) */
  __u64 involuntary;  /* the previous task was preempted while runnable */
  __u64 wakeups;      /* sched_wakeup (every wakeup of a sleeping task, also one that had not
                         left the CPU yet) and sched_wakeup_new */
  __u64 runq_ns;      /* the total wall-clock time (bpf_ktime_get_ns) of the run-queue waits
                         measured: every switch-in of a task stamped runnable since it last
                         ran (woken, new, or switched out still runnable) */
  __u64 runq_hist[PM_RUNQ_BUCKETS]; /* their count, by log2 bucket (the sum is the count) */
  __u64 runq_lost;    /* run-queue waits not timed: a task's stamp was overwritten by another
                         task's of the same slot (PM_RUNQ_STAMP_SLOTS) before it ran */
};

/* The target tree's share, one slot per CPU: what only the scheduler's hooks see (wakeups, each
 * run-queue wait), and the tree's comings and goings (tree.h). */
struct pm_tree_stats {
  __u64 wakeups;     /* its tasks woken */
  __u64 runq_ns;
  __u64 runq_hist[PM_RUNQ_BUCKETS];
  struct pm_tree_totals totals;
};

/* Run-queue latency of one cgroup (by slot, tree.h), per CPU. */
struct pm_cgroup_runq {
  __u64 count;
  __u64 ns;
  __u64 hist[PM_RUNQ_BUCKETS];
};

/* A process moved to another v2 cgroup (track_all): its live threads' on-CPU time at the move,
 * so user space credits what ran before it to the cgroup it ran in. */
#define PM_MAX_MOVES 4096
struct pm_move {
  __u64 leader_start_ns;
  __u64 cgroup_id; /* where it went */
  __u64 on_cpu_ns; /* its live threads' sum_exec_runtime at the move */
  __u64 at_ns;     /* bpf_ktime_get_ns() of the move */
  __u32 tgid;
  __u32 pad;
};

/* A v2 cgroup made (track_all): its id and path, so one removed before any walk saw it still
 * has a name. */
#define PM_MAX_MADE_CGROUPS 1024
#define PM_CGROUP_PATH_MAX 248
struct pm_cgroup_made {
  __u64 cgroup_id;
  char path[PM_CGROUP_PATH_MAX];
};

/* What the system-wide capture could not keep. */
struct pm_top_losses {
  __u64 exits_dropped;  /* a dying task's process had no room in the exited map */
  __u64 cgroups_over;   /* switch-ins of cgroups beyond PM_MAX_CGROUP_SLOTS */
  __u64 moves_dropped;  /* cgroup moves with no room in the moves queue */
};

#endif
