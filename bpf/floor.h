// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* floor.bpf.c shares nothing with user space; this header exists for the build's triad rule. */
#ifndef PERF_MONITOR_BPF_FLOOR_H
#define PERF_MONITOR_BPF_FLOOR_H
#endif
