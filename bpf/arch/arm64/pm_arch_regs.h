// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// arm64's registers as libbpf's bpf_tracing.h reads them (__TARGET_ARCH_arm64), for a build whose
// vmlinux.h comes from another architecture's kernel. The layout is the kernel's UAPI one
// (arch/arm64/include/uapi/asm/ptrace.h), the same on every arm64 kernel.
#ifndef PERF_MONITOR_BPF_ARCH_ARM64_REGS_H
#define PERF_MONITOR_BPF_ARCH_ARM64_REGS_H
#ifndef PM_HAVE_USER_PT_REGS
struct user_pt_regs {
  __u64 regs[31];
  __u64 sp;
  __u64 pc;
  __u64 pstate;
};
#endif
#endif
