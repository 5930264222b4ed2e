// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The target tree as the eBPF objects follow it; shared with the user side: fixed-width types
 * and limits only. scheduler.bpf.c owns the membership (a mark in each task's local storage,
 * set at fork), captures each task's final figures when it dies, and reports the live ones
 * through a task iterator; block.bpf.c and probe.bpf.c test the same marks (the map is shared). */
#ifndef PERF_MONITOR_BPF_TREE_H
#define PERF_MONITOR_BPF_TREE_H

/* Processes given as the tree's roots (run: the command; attach: the tree found in /proc). */
#define PM_MAX_SEEDS 65536

/* A task's own running figures, never its children's: the same kernel counters /proc and
 * getrusage() read, per task. */
enum pm_task_figure {
  PM_T_ON_CPU_NS,   /* se.sum_exec_runtime: time it ran, to the nanosecond */
  PM_T_USER_NS,     /* utime and stime: tick-sampled, only their ratio is used (user/system) */
  PM_T_SYSTEM_NS,
  PM_T_RUNQ_NS,     /* sched_info.run_delay: time runnable, waiting for a CPU */
  PM_T_BLOCKED_NS,  /* its life so far minus the two above: blocked, sleeping or stopped */
  PM_T_VOLUNTARY,   /* nvcsw, nivcsw */
  PM_T_INVOLUNTARY,
  PM_T_MINOR_FAULTS,
  PM_T_MAJOR_FAULTS,
  PM_T_RCHAR,       /* ioac, as /proc/PID/task/TID/io */
  PM_T_WCHAR,
  PM_T_SYSCR,
  PM_T_SYSCW,
  PM_T_READ_BYTES,
  PM_T_WRITE_BYTES,
  PM_T_CANCELLED_WRITE_BYTES,
  PM_T_MIGRATIONS,  /* se.nr_migrations: moves to another CPU */
  PM_T_FIGURES
};

/* Kinds of an mm's resident pages, as the kernel counts them (MM_FILEPAGES, ...). */
enum pm_rss_kind { PM_RSS_FILE, PM_RSS_ANON, PM_RSS_SWAP, PM_RSS_SHMEM, PM_RSS_KINDS };

/* A live task of the tree, one record per task from the task iterator. */
struct pm_task {
  __u32 pid;
  __u32 tgid;
  __u32 ppid;       /* the parent process's tgid */
  __u32 flags;      /* PM_TASK_* */
  __u64 start_ns;   /* when it was forked (CLOCK_MONOTONIC) */
  __u64 fig[PM_T_FIGURES];
  /* The process's memory (its mm, shared by its threads; zero once the mm is gone). */
  __u64 rss_pages[PM_RSS_KINDS];
  __u64 vm_pages;        /* total_vm */
  __u64 peak_rss_pages;  /* the largest RSS the process has had: its mm's high-water mark, and
                            that of the programs it ran before exec (signal->maxrss) */
  __u64 cgroup_id;       /* cgroup v2 id */
  __u64 leader_start_ns; /* its process's start: with tgid, a process's identity (PIDs are reused) */
  char comm[16];
};
#define PM_TASK_HAS_MM 1
#define PM_TASK_RUNNABLE 2   /* on a run queue now: its blocked time is as of its last sleep */
#define PM_TASK_KTHREAD 4

/* The tree's events and the final figures of its tasks that died, per CPU (user space sums the
 * CPUs; the peak is a maximum). */
struct pm_tree_totals {
  __u64 processes_seen;  /* processes forked by the tree (not counting the roots) */
  __u64 threads_seen;    /* threads created by the tree */
  __u64 not_followed;    /* children the kernel side could not mark (no memory): lost */
  __u64 tasks_exited;    /* tasks whose final figures are in `exited` */
  __u64 exited[PM_T_FIGURES];
  __u64 exited_peak_rss_pages;
};

/* System-wide (the top lists): the final figures of the tasks that died, per process, until user
 * space takes them (lookup-and-delete, once an interval). */
#define PM_MAX_EXITED 16384
struct pm_process_key {
  __u32 tgid;
  __u32 pad;
  __u64 leader_start_ns;
};
struct pm_exited {
  __u64 fig[PM_T_FIGURES];  /* summed over its tasks that died */
  __u64 tasks;
  __u64 cgroup_id;
  __u64 peak_rss_pages;
  __u32 leader_dead;        /* its main thread died: the process is over once its threads are */
  __u32 pad;
  char comm[16];
};

/* Run-queue latency per cgroup (at most PM_MAX_CGROUP_SLOTS cgroups at the configured depth): a
 * slot per cgroup, in the cgroup's own storage; per CPU histograms indexed by slot. */
#define PM_MAX_CGROUP_SLOTS 1024
struct pm_cgroup_slot {
  __u32 slot; /* 1-based: 0 means none (all slots taken) */
  __u32 pad;
};

#endif
