// SPDX-License-Identifier: Apache-2.0
/* perf-monitor request annotations: header-only, C and C++.
 *
 *   #include <perf-monitor/annotate.h>
 *   void handle(uint64_t id) {
 *     PERF_MONITOR_REQUEST_BEGIN(id);
 *     ...            // what the kernel does to this thread until END is attributed to `id`
 *     PERF_MONITOR_REQUEST_END(id);
 *   }
 *
 * Each macro is a USDT probe (provider perf_monitor, probes request_begin and request_end, one
 * 64-bit argument): a single `nop` in the code and a note in the ELF file (.note.stapsdt), the
 * format systemtap's <sys/sdt.h> writes. Nothing runs when no tool is attached; perf-monitor
 * attaches to them in `run` and `attach` when the target's executable has them.
 *
 * x86-64 and aarch64 are written out here; elsewhere <sys/sdt.h> is used when present, and the
 * macros do nothing otherwise. Define PERF_MONITOR_NO_ANNOTATIONS to compile them out. */
#ifndef PERF_MONITOR_ANNOTATE_H
#define PERF_MONITOR_ANNOTATE_H

#if defined(PERF_MONITOR_NO_ANNOTATIONS)
#define PERF_MONITOR__PROBE(name, arg) ((void)(arg))
#elif defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__))
#if defined(__x86_64__)
#define PERF_MONITOR__ADDR ".8byte"
#define PERF_MONITOR__ARG "8@%0"
#define PERF_MONITOR__CONSTRAINT "nor"
#else
#define PERF_MONITOR__ADDR ".8byte"
#define PERF_MONITOR__ARG "8@%0"
#define PERF_MONITOR__CONSTRAINT "r"
#endif
/* The note: the probe's address, the base (to find the load bias) and no semaphore; then the
 * provider, the name and the argument's location ("8@%rdi": 8 bytes in register rdi). */
#define PERF_MONITOR__PROBE(name, arg)                                                                  \
  __asm__ __volatile__("990: nop\n"                                                                     \
                       ".pushsection .note.stapsdt,\"?\",\"note\"\n"                                    \
                       ".balign 4\n"                                                                    \
                       ".4byte 992f-991f, 994f-993f, 3\n"                                               \
                       "991: .asciz \"stapsdt\"\n"                                                      \
                       "992: .balign 4\n"                                                               \
                       "993: " PERF_MONITOR__ADDR " 990b\n"                                             \
                       PERF_MONITOR__ADDR " _.stapsdt.base\n"                                           \
                       PERF_MONITOR__ADDR " 0\n"                                                        \
                       ".asciz \"perf_monitor\"\n"                                                      \
                       ".asciz \"" #name "\"\n"                                                         \
                       ".asciz \"" PERF_MONITOR__ARG "\"\n"                                             \
                       "994: .balign 4\n"                                                               \
                       ".popsection\n"                                                                  \
                       ".ifndef _.stapsdt.base\n"                                                       \
                       ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"          \
                       ".weak _.stapsdt.base\n"                                                         \
                       ".hidden _.stapsdt.base\n"                                                       \
                       "_.stapsdt.base: .space 1\n"                                                     \
                       ".size _.stapsdt.base, 1\n"                                                      \
                       ".popsection\n"                                                                  \
                       ".endif\n"                                                                       \
                       :                                                                                \
                       : PERF_MONITOR__CONSTRAINT((unsigned long long)(arg)))
#elif defined(__has_include)
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#define PERF_MONITOR__PROBE(name, arg) DTRACE_PROBE1(perf_monitor, name, (unsigned long long)(arg))
#endif
#endif

#ifndef PERF_MONITOR__PROBE
#define PERF_MONITOR__PROBE(name, arg) ((void)(arg))
#endif

/* Marks the start and the end of request `id` (any integer) on the calling thread. */
#define PERF_MONITOR_REQUEST_BEGIN(id) PERF_MONITOR__PROBE(request_begin, id)
#define PERF_MONITOR_REQUEST_END(id) PERF_MONITOR__PROBE(request_end, id)

#endif
