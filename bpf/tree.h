// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Shared by the eBPF objects that follow the target tree (see tree.bpf.h). */
#ifndef PERF_MONITOR_BPF_TREE_H
#define PERF_MONITOR_BPF_TREE_H

/* Processes of the target tree the kernel side can follow at once. */
#define PM_MAX_TARGETS 65536

#endif
