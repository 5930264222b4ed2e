// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The target tree as both eBPF objects see it: a map of its tgids that user space seeds with the
// tree's processes, and a fork hook that adds each child of a member. Included by one .bpf.c at
// a time (each object has its own map).
#ifndef PERF_MONITOR_BPF_TREE_BPF_H
#define PERF_MONITOR_BPF_TREE_BPF_H

// Set before load: follow the target tree; the unit of latency histograms, in ns (bucket i
// counts latencies below 2^i units).
const volatile bool track_tree = false;
const volatile __u64 hist_unit_ns = 1000;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PM_MAX_TARGETS);
  __type(key, __u32);
  __type(value, __u8);
} targets SEC(".maps");

static __always_inline bool tgid_in_tree(__u32 tgid) {
  return track_tree && bpf_map_lookup_elem(&targets, &tgid) != 0;
}

// track_tree is tested before the task is read: system-wide, the hot paths read nothing.
static __always_inline bool in_tree(struct task_struct *t) { return track_tree && tgid_in_tree(BPF_CORE_READ(t, tgid)); }

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child) {
  if (!in_tree(parent)) return 0;
  __u32 ctgid = BPF_CORE_READ(child, tgid);
  __u8 one = 1;
  bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
  return 0;
}

// Bucket of v: 0 for 0, else floor(log2(v)) + 1, so bucket i holds values below 2^i.
static __always_inline __u32 log2_bucket(__u64 v) {
  if (v == 0) return 0;
  __u32 r = 0, shift;
  shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r = shift;
  shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
  shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
  shift = (v > 0xF) << 2; v >>= shift; r |= shift;
  shift = (v > 0x3) << 1; v >>= shift; r |= shift;
  r |= (__u32)(v >> 1);
  return r + 1;
}

// v in histogram units. The unit is fixed at load, so the verifier drops the branches not
// taken, and each division is by a constant (a multiply), not by a variable (a divide).
static __always_inline __u64 in_hist_units(__u64 ns) {
  if (hist_unit_ns == 1) return ns;
  if (hist_unit_ns == 1000000) return ns / 1000000;
  return ns / 1000;
}

// A histogram index the verifier can prove in range: the compiler folds a plain clamp into a
// form the verifier cannot bound, so b is hidden from the optimizer and masked (n: power of 2).
#define PM_BUCKET(b, n)                  \
  ({                                     \
    __u32 b_ = (b);                      \
    if (b_ >= (n)) b_ = (n) - 1;         \
    asm volatile("" : "+r"(b_));         \
    b_ & ((n) - 1);                      \
  })

#endif
