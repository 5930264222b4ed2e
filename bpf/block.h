// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Shared between block.bpf.c and the user side: fixed-width types and limits only. */
#ifndef PERF_MONITOR_BPF_BLOCK_H
#define PERF_MONITOR_BPF_BLOCK_H

#include "tree.h"

/* log2 buckets: request latency in microseconds (bucket i: < 2^i us), queue depth in requests
 * (bucket i: depth < 2^i). */
#define PM_LAT_BUCKETS 32
#define PM_QD_BUCKETS 16
#define PM_MAX_DEVICES 256
#define PM_MAX_INFLIGHT 65536

/* Per device and per CPU (user space sums the CPUs). dev is the whole disk's device number,
 * major << 20 | minor (the kernel's own encoding). */
struct pm_dev_stats {
  __u64 bio_bytes[2];  /* submitted bios, [0] read, [1] write */
  __u64 bios[2];
  __u64 requests;      /* requests issued to the driver */
  __u64 lat_count;     /* completed requests with a measured latency */
  __u64 lat_ns;
  __u64 lat_hist[PM_LAT_BUCKETS];
  __u64 qd_hist[PM_QD_BUCKETS];  /* requests in flight when a request was issued, itself included */
  __u64 qd_sum;                  /* the sum of those depths: the histogram's sum */
};

/* The target tree's bios, one slot per CPU. */
struct pm_tree_io {
  __u64 bio_bytes[2];
  __u64 bios[2];
};

#endif
