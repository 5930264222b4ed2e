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

/* Thread context: which request the calling thread is working for, in a few plain stores, with
 * no trap per request. Where the probes above trap into the kernel at each mark (about a
 * microsecond each), these write a record in the thread's memory that perf-monitor's kernel
 * programs read at the events they already handle (a switch out, a bio):
 *
 *   perf_monitor_poll_begin(id);   // this thread starts (or resumes) working for request `id`
 *   ...                            // its switches, waits and bios count for `id`
 *   perf_monitor_poll_end(done);   // it stops; done != 0: request `id` is finished
 *
 * A synchronous server calls begin at the start of a request and end(1) at its end. An async
 * executor calls begin when it polls a task and end when the poll returns, end(1) once the task
 * is complete: a request's kernel time then follows it from worker to worker, and its time
 * between polls is reported as pending. Polls do not nest: a begin while a poll runs ends that
 * poll (not finished) first.
 *
 * Each thread's first begin allocates its record (PERF_MONITOR_CONTEXT_LOG finished polls, 32
 * bytes each, 4096 unless defined before this header; perf-monitor reads them every 10 ms) in a
 * sealed memory file of its own, and announces it to perf-monitor through the USDT probe
 * perf_monitor:context_thread: one trap per thread. The record is kept for the life of the
 * process. perf-monitor maps the same pages (so it reads a thread's last polls even after the
 * process has exited), takes the finished polls (their begin and end, read from the CPU's
 * counter and mapped to CLOCK_MONOTONIC, the clock of the kernel's events) and adds the kernel's
 * side: run-queue wait, blocked time (block I/O, sleep, lock, other), switches, bio bytes.
 *
 * Linux, C99/C++11 and later, GCC or Clang; elsewhere (and with PERF_MONITOR_NO_ANNOTATIONS)
 * the two calls do nothing. The record's layout is version 1 (perf_monitor_context below). */
#if !defined(PERF_MONITOR_NO_ANNOTATIONS) && defined(__linux__) && defined(__GNUC__) && \
    (defined(__x86_64__) || defined(__aarch64__))
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PERF_MONITOR_CONTEXT_LOG
#define PERF_MONITOR_CONTEXT_LOG 4096
#endif

/* One finished poll. */
struct perf_monitor_context_poll {
  uint64_t id;
  uint64_t begin, end; /* on the record's clock */
  uint64_t flags;      /* 1: the request finished with this poll */
};

/* A thread's record. The kernel side reads the first 24 bytes at a switch out or a bio of the
 * thread (it is not running then, or it is in the kernel: the record is not being written). */
struct perf_monitor_context {
  volatile uint32_t active;  /* 1 while a poll runs */
  uint32_t version;          /* 1 */
  volatile uint64_t id;      /* the running poll's request */
  volatile uint64_t head;    /* polls finished so far: the running poll's number, and the log's head */
  volatile uint64_t begin;
  uint32_t capacity; /* entries in log: a power of two */
  uint32_t clock;    /* of begin and end: 0 CLOCK_MONOTONIC ns, 1 the x86 TSC, 2 arm64's CNTVCT_EL0 */
  struct perf_monitor_context_poll log[PERF_MONITOR_CONTEXT_LOG];
};

/* The calling thread's record (one per thread in the whole process: a weak definition, merged). */
__attribute__((weak)) __thread struct perf_monitor_context* perf_monitor_thread_context;

#define PERF_MONITOR__FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* The clock of the stamps: the CPU's own counter where there is one (x86's TSC read takes 11 ns
 * here, clock_gettime 26 ns: the pair's cost is mostly its two stamps); perf-monitor maps it to
 * CLOCK_MONOTONIC. PERF_MONITOR_CONTEXT_MONOTONIC makes it clock_gettime. */
#if defined(__x86_64__) && !defined(PERF_MONITOR_CONTEXT_MONOTONIC)
#define PERF_MONITOR__CLOCK 1
static inline uint64_t perf_monitor__stamp(void) { return __builtin_ia32_rdtsc(); }
#elif defined(__aarch64__) && !defined(PERF_MONITOR_CONTEXT_MONOTONIC)
#define PERF_MONITOR__CLOCK 2
static inline uint64_t perf_monitor__stamp(void) {
  uint64_t v;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
#else
#define PERF_MONITOR__CLOCK 0
static inline uint64_t perf_monitor__stamp(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* The record's pages: a sealed memory file (it cannot shrink or grow), so that perf-monitor can
 * map the same pages and read the thread's last polls after the process has exited. */
static inline void* perf_monitor__context_pages(size_t size) {
  int fd = (int)syscall(SYS_memfd_create, "perf-monitor-context", 1u | 2u); /* MFD_CLOEXEC | MFD_ALLOW_SEALING */
  if (fd < 0) return MAP_FAILED;
  void* p = MAP_FAILED;
  /* 1033: F_ADD_SEALS; 1 | 2 | 4: F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW */
  if (ftruncate(fd, (off_t)size) == 0 && fcntl(fd, 1033, 1 | 2 | 4) == 0)
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p;
}

/* Once per thread: the record, announced to perf-monitor. NULL if it cannot be allocated (the
 * polls then go unrecorded). */
static __attribute__((noinline, unused)) struct perf_monitor_context* perf_monitor__context_new(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t size = (sizeof(struct perf_monitor_context) + page - 1) / page * page;
  void* p = perf_monitor__context_pages(size);
  struct perf_monitor_context* c =
      p != MAP_FAILED ? (struct perf_monitor_context*)p
                      : (struct perf_monitor_context*)calloc(1, sizeof(struct perf_monitor_context));
  if (!c) return c;
  c->version = 1;
  c->capacity = PERF_MONITOR_CONTEXT_LOG;
  c->clock = PERF_MONITOR__CLOCK;
  perf_monitor_thread_context = c;
  PERF_MONITOR__PROBE(context_thread, (uintptr_t)c);
  return c;
}

static inline void perf_monitor_poll_end(int done);

static inline __attribute__((unused)) void perf_monitor_poll_begin(uint64_t id) {
  struct perf_monitor_context* c = perf_monitor_thread_context;
  if (__builtin_expect(!c, 0) && !(c = perf_monitor__context_new())) return;
  if (c->active) perf_monitor_poll_end(0);
  c->id = id;
  PERF_MONITOR__FENCE();
  c->active = 1; /* first: a switch from here on counts for the poll; its time is clipped to begin */
  PERF_MONITOR__FENCE();
  c->begin = perf_monitor__stamp();
}

static inline __attribute__((unused)) void perf_monitor_poll_end(int done) {
  struct perf_monitor_context* c = perf_monitor_thread_context;
  if (!c || !c->active) return;
  uint64_t end = perf_monitor__stamp();
  uint64_t head = c->head;
  struct perf_monitor_context_poll* e = &c->log[head & (PERF_MONITOR_CONTEXT_LOG - 1)];
  e->id = c->id;
  e->begin = c->begin;
  e->end = end;
  e->flags = done ? 1 : 0;
  PERF_MONITOR__FENCE();
  c->active = 0; /* last: a switch until here counts for the poll (clipped to end) */
  __atomic_store_n(&c->head, head + 1, __ATOMIC_RELEASE); /* the entry, then the head that shows it */
}
#else
#define perf_monitor_poll_begin(id) ((void)(id))
#define perf_monitor_poll_end(done) ((void)(done))
#endif

#endif
