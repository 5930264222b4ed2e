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
// 3). Before 6.2 an array of atomic longs, exact. Since, each is a percpu_counter: `count` is the
// shared part, and each CPU holds up to a batch (32 pages or more) not yet folded into it, so
// reading `count` alone is off by up to batch × CPUs pages a process (256 KiB on two CPUs, a
// process that touched 100 kB reads as 0). /proc/PID/status and statm sum the CPUs' parts
// (percpu_counter_sum, since 6.16); so does this, over every possible CPU (a CPU that went
// offline had its part folded into `count`, and left zero).
struct mm_rss_stat___pre62 {
  atomic_long_t count[4];
} __attribute__((preserve_access_index));
struct mm_struct___pre62 {
  struct mm_rss_stat___pre62 rss_stat;
} __attribute__((preserve_access_index));
struct mm_struct___v62 {
  struct percpu_counter rss_stat[4];
} __attribute__((preserve_access_index));

// Set before load: the possible CPUs (nr_cpu_ids), the bound of the per-CPU sums. The verifier
// reads it as a constant, so the loop below is checked for exactly that many CPUs; beyond
// PM_MAX_SUM_CPUS it would take too long to check, and only `count` is read.
const volatile __u32 pm_nr_cpus = 0;
#define PM_MAX_SUM_CPUS 1024

// Where each CPU's part of a per-CPU variable lies. The kernel's BTF does not mark `counters` as
// a per-CPU pointer (bpf_per_cpu_ptr cannot take it), and its own per-CPU offsets are data
// symbols that kallsyms may not list (typed ksyms then fail to load). So a per-CPU map of our own
// tells them: its element's per-CPU pointer (the array's pptrs[0]) and that element's address on
// a CPU (bpf_map_lookup_percpu_elem) differ by that CPU's offset, the one per_cpu_ptr() adds.
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} pm_cpu_offsets SEC(".maps");

// A pointer as a number, read back through a helper: the verifier lets no arithmetic on a map's
// or a map value's address reach an address outside it, and here it only serves to compute one.
static __always_inline __u64 address_of(const void *p) {
  __u64 a = 0;
  bpf_probe_read_kernel(&a, sizeof a, &p);
  return a;
}

// Each layout's read is a subprogram of its own: inlined, the compiler may compute the old
// layout's offset ahead of the branch, where the verifier would meet a relocation this kernel
// cannot resolve; a subprogram in the branch not taken is never verified.
static __noinline void mm_counters_v62(struct mm_struct *mm, __s64 *out, bool sum) {
  struct mm_struct___v62 *m = (struct mm_struct___v62 *)mm;
  // Typed loads: `counters` points to an int, not a struct, so it is loaded as a plain number.
  __u64 at[4];
  for (int k = 0; k < 4; ++k) {
    out[k] = m->rss_stat[k].count;
    at[k] = (__u64)m->rss_stat[k].counters;
  }
  if (!sum || pm_nr_cpus > PM_MAX_SUM_CPUS) return;
  __u64 pptr = 0;
  __u64 pptrs = address_of(&pm_cpu_offsets) + bpf_core_field_offset(struct bpf_array, pptrs);
  if (bpf_probe_read_kernel(&pptr, sizeof pptr, (void *)pptrs) != 0) return;
  // Since 6.7 one allocation holds an mm's four counters side by side: one read per CPU.
  bool side_by_side = at[1] == at[0] + 4 && at[2] == at[0] + 8 && at[3] == at[0] + 12;
  __u32 zero = 0;
  for (__u32 cpu = 0; cpu < pm_nr_cpus && cpu < PM_MAX_SUM_CPUS; ++cpu) {
    void *here = bpf_map_lookup_percpu_elem(&pm_cpu_offsets, &zero, cpu);
    if (!here) break;
    __u64 off = address_of(here) - pptr;
    __s32 v[4] = {};
    if (side_by_side) {
      bpf_probe_read_kernel(v, sizeof v, (void *)(at[0] + off));
    } else {
      for (int k = 0; k < 4; ++k) bpf_probe_read_kernel(&v[k], sizeof v[k], (void *)(at[k] + off));
    }
    for (int k = 0; k < 4; ++k) out[k] += v[k];
  }
}
static __noinline void mm_counters_pre62(struct mm_struct *mm, __s64 *out) {
  for (int k = 0; k < 4; ++k) out[k] = BPF_CORE_READ((struct mm_struct___pre62 *)mm, rss_stat.count[k].counter);
}

// Every kind's count, in pages, never negative (a CPU's part may be negative while the sum is
// not; a read between the parts' updates may still come out below zero). `sum`: add the CPUs'
// parts (a few helper calls per CPU: asked once per process, not per thread).
static __always_inline void mm_counters(struct mm_struct *mm, __u64 out[4], bool sum) {
  __s64 v[4] = {};
  // The flavour whose field type matches this kernel's is the one that "exists".
  if (bpf_core_field_exists(((struct mm_struct___v62 *)mm)->rss_stat)) {
    mm_counters_v62(mm, v, sum);
  } else {
    mm_counters_pre62(mm, v);
  }
  for (int k = 0; k < 4; ++k) out[k] = v[k] > 0 ? v[k] : 0;
}

#endif
