/* floor.bpf.c shares nothing with user space; this header exists for the build's triad rule. */
#ifndef PERF_MONITOR_BPF_FLOOR_H
#define PERF_MONITOR_BPF_FLOOR_H
#endif
