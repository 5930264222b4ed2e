// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Kernel fields that were renamed or changed type between versions, read through CO-RE so one
// object runs on old and new kernels: each helper tests which field the running kernel has
// (bpf_core_field_exists / bpf_core_field_size, resolved by libbpf at load) and reads that one.
// The branch not taken is dead code the verifier never checks, so a field missing from this
// kernel costs nothing. Direct loads (tp_btf, iterators) where the pointer is typed.
#ifndef PERF_MONITOR_BPF_CORE_FIXES_BPF_H
#define PERF_MONITOR_BPF_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

// Before 5.14 a task's state was `long state`; since, `unsigned int __state`.
struct task_struct___pre514 {
  long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t) {
  if (bpf_core_field_exists(t->__state)) return BPF_CORE_READ(t, __state);
  return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

// The same for typed pointers (tp_btf): a direct load, not a helper call, on the hot path.
#define TASK_STATE_BTF(t) \
  (bpf_core_field_exists((t)->__state) ? (long)(t)->__state : ((struct task_struct___pre514 *)(t))->state)

// TASK_DEAD: the state of a task's last switch out (do_task_dead), the same on every kernel.
#define PM_TASK_DEAD 0x80

// Before 5.12 a bio named its disk (bi_disk); since, its block device (bi_bdev->bd_disk).
struct bio___pre512 {
  struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *bio_disk(struct bio *bio) {
  if (bpf_core_field_exists(bio->bi_bdev)) return BPF_CORE_READ(bio, bi_bdev, bd_disk);
  return BPF_CORE_READ((struct bio___pre512 *)bio, bi_disk);
}

// An mm's resident pages per kind (MM_FILEPAGES 0, MM_ANONPAGES 1, MM_SWAPENTS 2, MM_SHMEMPAGES
// 3). Since 6.2 each is a percpu_counter whose `count` is what /proc/PID/statm reports (the
// kernel reads it the same way, without summing the CPUs); before, an array of atomic longs.
struct mm_rss_stat___pre62 {
  atomic_long_t count[4];
} __attribute__((preserve_access_index));
struct mm_struct___pre62 {
  struct mm_rss_stat___pre62 rss_stat;
} __attribute__((preserve_access_index));
struct mm_struct___v62 {
  struct percpu_counter rss_stat[4];
} __attribute__((preserve_access_index));

// Each layout's read is a subprogram of its own: inlined, the compiler may compute the old
// layout's offset ahead of the branch, where the verifier would meet a relocation this kernel
// cannot resolve; a subprogram in the branch not taken is never verified.
static __noinline __s64 mm_counter_v62(struct mm_struct *mm, int kind) {
  return ((struct mm_struct___v62 *)mm)->rss_stat[kind & 3].count;  // typed: a direct load
}
static __noinline __s64 mm_counter_pre62(struct mm_struct *mm, int kind) {
  return BPF_CORE_READ((struct mm_struct___pre62 *)mm, rss_stat.count[kind & 3].counter);
}

static __always_inline __s64 mm_counter(struct mm_struct *mm, int kind) {
  // The flavour whose field type matches this kernel's is the one that "exists".
  __s64 v = bpf_core_field_exists(((struct mm_struct___v62 *)mm)->rss_stat) ? mm_counter_v62(mm, kind)
                                                                            : mm_counter_pre62(mm, kind);
  return v > 0 ? v : 0;
}

#endif
