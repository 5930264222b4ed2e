// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Shared between stacks.bpf.c and the user side: fixed-width types and limits only.
 *
 * Stacks are captured in the kernel and unwound in user space. Kernel stacks go to a stack-trace
 * map (deduplicated there, read once per id). The user part of a stack cannot be walked in the
 * kernel without frame pointers, so a sample carries the thread's user registers and a copy of
 * the top of its user stack, and user space unwinds that copy with the binaries' DWARF CFI
 * (.eh_frame), as `perf record --call-graph dwarf` does.
 *
 * On-CPU: every sample (a software cpu-clock at --stack-rate per CPU) is one record.
 * Off-CPU: the blocked time is summed in the kernel per (thread, kernel stack, user pc, user sp,
 * preempted): a thread that blocks again at the same place, at the same depth of its stack, adds
 * to the same slot and nothing crosses to user space; the first time a slot is made, one record
 * with its stack copy does. */
#ifndef PERF_MONITOR_BPF_STACKS_H
#define PERF_MONITOR_BPF_STACKS_H

#include "tree.h"

#define PM_STACK_DEPTH 127          /* kernel frames kept per stack (the kernel's own limit) */
#define PM_STACK_CHUNK 2048         /* the user stack is copied in chunks: the last may not be mapped */
#define PM_STACK_CHUNKS 8
#define PM_STACK_BYTES (PM_STACK_CHUNK * PM_STACK_CHUNKS) /* user stack copied per record */
#define PM_STACK_REGS 40            /* room for the user pt_regs (x86-64: 21 words; arm64: 34) */
#define PM_MAX_KSTACKS 8192         /* distinct kernel stacks (preallocated: 8 MiB) */
#define PM_MAX_OFF_SLOTS 32768      /* off-CPU slots (thread, place) */

enum pm_stack_kind { PM_STACK_ON_CPU = 1, PM_STACK_OFF_CPU = 2 };

/* Where a thread went off the CPU: a place (off_slots gives each its slot in off_values, the
 * first time it is seen), whose value its blocked time adds to. */
struct pm_off_key {
  __u32 tgid;
  __u32 pid;
  __s32 kstack;     /* id in the kstacks map, < 0: none (the error the kernel gave) */
  __u32 preempted;  /* 1: switched out while runnable (preempted), 0: blocked or sleeping */
  __u64 uip;        /* user pc and sp (the registers at its entry into the kernel); 0: no user part */
  __u64 usp;
};

struct pm_off_value {
  __u64 ns;        /* time off the CPU, switch-out to switch-in */
  __u64 switches;  /* switch-ins that ended such a stretch */
};

/* One stack to unwind (ring buffer). */
struct pm_stack_record {
  __u32 kind;       /* pm_stack_kind */
  __u32 tgid;
  __u32 pid;
  __s32 kstack;     /* as in pm_off_key */
  __u64 mm;         /* with exec_id, the identity of the address space, never shown (an mm's */
  __u64 exec_id;    /* address may be reused by the next exec's; its exec count is not) */
  __u64 time_ns;    /* CLOCK_MONOTONIC of the sample */
  struct pm_off_key key;  /* off-CPU: the slot this stack is the place of */
  __u32 user;       /* 1: regs and stack are the thread's user state */
  __u32 stack_len;  /* bytes of stack copied from regs' sp up */
  char comm[16];
  __u64 regs[PM_STACK_REGS];
  __u8 stack[PM_STACK_BYTES];
};

/* A stretch off the CPU of at least stretch_min_ns (ring buffer "stretches"): user space joins
 * them with the spans of probed calls, to say where a slow request blocked. */
struct pm_stretch {
  __u64 out_ns;
  __u64 in_ns;
  struct pm_off_key key;  /* its place (key.pid: the thread) */
};

/* What the programs count, one slot per CPU. */
struct pm_stack_counters {
  __u64 samples;        /* on-CPU samples of the target */
  __u64 records_lost;   /* records that found no room in the ring buffer */
  __u64 off_slots_full; /* off-CPU stretches that found no slot (map full) */
  __u64 off_lost_ns;    /* and their time */
  __u64 kstack_lost;    /* kernel stacks the stack map could not hold */
  __u64 stack_copy_short; /* user stacks copied short of PM_STACK_BYTES less a chunk (the top of the stack) */
  __u64 stretches_lost;   /* stretches the ring buffer had no room for */
};

#endif
