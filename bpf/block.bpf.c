// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Block I/O hooks, aggregated in the kernel: per-device bytes, request latency (issue ->
// complete) and queue depth (requests in flight at issue), and the bytes the target tree
// submits. tp_btf with raw_tp fallbacks, as in scheduler.bpf.c.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "block.h"
#include "tree.bpf.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// Per-CPU counters and histograms per device, allocated at a device's first I/O.
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, PM_MAX_DEVICES);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct pm_dev_stats);
} devices SEC(".maps");

// Requests in flight per device: the one figure that cannot be per CPU (a request may complete
// on another CPU than the one that issued it), so it is shared and updated atomically.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PM_MAX_DEVICES);
  __type(key, __u32);
  __type(value, __s64);
} inflight SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_tree_io);
} tree_io SEC(".maps");

// request -> when it was issued; bounded: a full map means a request goes unmeasured.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PM_MAX_INFLIGHT);
  __type(key, __u64);
  __type(value, __u64);
} issued SEC(".maps");

static __always_inline __u32 disk_dev(struct gendisk *disk) {
  if (!disk) return 0;
  return ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor);
}

static __always_inline struct pm_dev_stats *stats_of(__u32 dev) {
  struct pm_dev_stats *s = bpf_map_lookup_elem(&devices, &dev);
  if (s) return s;
  struct pm_dev_stats zero = {};
  bpf_map_update_elem(&devices, &dev, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&devices, &dev);
}

static __always_inline __s64 *inflight_of(__u32 dev) {
  __s64 *n = bpf_map_lookup_elem(&inflight, &dev);
  if (n) return n;
  __s64 zero = 0;
  bpf_map_update_elem(&inflight, &dev, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&inflight, &dev);
}

// REQ_OP_READ is 0 and REQ_OP_WRITE 1 in the low bits of the op flags; other ops (flush,
// discard) are neither and are not counted as data.
static __always_inline int op_index(__u32 opf) {
  __u32 op = opf & 0xff;
  return op == 0 ? 0 : op == 1 ? 1 : -1;
}

static __always_inline int on_bio_queue(struct bio *bio) {
  int dir = op_index(BPF_CORE_READ(bio, bi_opf));
  if (dir < 0) return 0;
  __u64 bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
  struct pm_dev_stats *s = stats_of(disk_dev(bio_disk(bio)));
  if (s) {
    s->bio_bytes[dir & 1] += bytes;
    s->bios[dir & 1]++;
  }
  // The submitting task is the current one (typed: task storage needs it).
  if (track_tree && member_of(bpf_get_current_task_btf())) {
    __u32 zero = 0;
    struct pm_tree_io *t = bpf_map_lookup_elem(&tree_io, &zero);
    if (t) {
      t->bio_bytes[dir & 1] += bytes;
      t->bios[dir & 1]++;
    }
  }
  return 0;
}

static __always_inline int on_rq_issue(struct request *rq) {
  __u32 dev = disk_dev(BPF_CORE_READ(rq, q, disk));
  struct pm_dev_stats *s = stats_of(dev);
  if (!s) return 0;
  s->requests++;
  __s64 *n = inflight_of(dev);
  __s64 depth = n ? __sync_fetch_and_add(n, 1) + 1 : 1;
  __u32 b = PM_BUCKET(log2_bucket(depth > 0 ? (__u64)depth : 0), PM_QD_BUCKETS);
  s->qd_hist[b]++;
  s->qd_sum += depth > 0 ? (__u64)depth : 0;
  __u64 key = (__u64)rq, now = bpf_ktime_get_ns();
  bpf_map_update_elem(&issued, &key, &now, BPF_ANY);
  return 0;
}

static __always_inline int on_rq_complete(struct request *rq) {
  __u64 key = (__u64)rq;
  __u64 *at = bpf_map_lookup_elem(&issued, &key);
  if (!at) return 0;  // issued before we attached, or the map was full
  __u64 lat = bpf_ktime_get_ns() - *at;
  bpf_map_delete_elem(&issued, &key);
  __u32 dev = disk_dev(BPF_CORE_READ(rq, q, disk));
  __s64 *n = bpf_map_lookup_elem(&inflight, &dev);
  if (n) __sync_fetch_and_add(n, -1);
  struct pm_dev_stats *s = stats_of(dev);
  if (!s) return 0;
  s->lat_count++;
  s->lat_ns += lat;
  __u32 b = PM_BUCKET(log2_bucket(in_hist_units(lat)), PM_LAT_BUCKETS);
  s->lat_hist[b]++;
  return 0;
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(btf_bio_queue, struct bio *bio) { return on_bio_queue(bio); }
SEC("tp_btf/block_rq_issue")
int BPF_PROG(btf_rq_issue, struct request *rq) { return on_rq_issue(rq); }
SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_rq_complete, struct request *rq, int error, unsigned int nr_bytes) { return on_rq_complete(rq); }

SEC("raw_tp/block_bio_queue")
int BPF_PROG(raw_bio_queue, struct bio *bio) { return on_bio_queue(bio); }
SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_rq_issue, struct request *rq) { return on_rq_issue(rq); }
SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_rq_complete, struct request *rq, int error, unsigned int nr_bytes) { return on_rq_complete(rq); }
