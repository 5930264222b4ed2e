// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The target tree in the kernel: a mark in each member task's local storage. Task storage is
// reached from the task itself (no hash lookup on the scheduler's hot path), dies with the task
// (a reused PID is never a member by mistake) and is only usable from typed programs (tp_btf,
// iterators), so an object loaded as raw_tp never follows a tree (track_tree stays false and the
// verifier drops every branch that would).
// Each object that includes this has its own `members` map; all but scheduler.bpf.c's are
// replaced by that one before load (bpf_map__reuse_fd), so there is one membership.
#ifndef PERF_MONITOR_BPF_TREE_BPF_H
#define PERF_MONITOR_BPF_TREE_BPF_H

// Set before load: follow the target tree; the unit of latency histograms, in ns (bucket i
// counts latencies below 2^i units).
const volatile bool track_tree = false;
const volatile __u64 hist_unit_ns = 1000;

struct pm_member {
  __u32 captured;    // its final figures were taken (it died): no longer live
  __u32 pad;
  __u64 blocked_ns;  // its blocked time as of its last wakeup (exact then: see scheduler.bpf.c)
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct pm_member);
} members SEC(".maps");

static __always_inline struct pm_member *member_of(struct task_struct *t) {
  return bpf_task_storage_get(&members, t, 0, 0);
}

// track_tree is tested first: system-wide, the hot paths look nothing up.
static __always_inline bool in_tree(struct task_struct *t) { return track_tree && member_of(t) != 0; }

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
