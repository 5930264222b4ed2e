// SPDX-License-Identifier: Apache-2.0
// Requests under OpenTelemetry thread context (OTEP 4947), with their own clocks as the truth:
//   pm-otel-server [--threads N] [--spans M] [--bytes B] [--dir D] [--delay-ms MS] [--truth FILE]
// Each of N threads runs M spans. A span: its record attached, a CPU burn (1 ms of the thread's
// CPU clock), a 500 us sleep, B bytes read with O_DIRECT (from a file written before the first
// span: reads add no metadata to the bios, so the bytes are exact), a half burn, the
// record detached; then 300 us asleep outside any span. Each thread sleeps 1 ms before its first. --truth writes a line per span:
//   TRACE_ID SPAN_ID TID WALL_NS CPU_NS BYTES
// (hex IDs; wall and CPU time from just before the attach to just after the detach).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "otel_context.h"

static int threads = 2, spans = 50, bytes = 65536, delay_ms = 0;
static const char* dir = "/tmp";
static FILE* truth;
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void burn(uint64_t cpu_ns) {
  uint64_t until = ns(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;
  volatile uint64_t x = 0;
  while (ns(CLOCK_THREAD_CPUTIME_ID) < until) {
    for (int i = 0; i < 1000; ++i) x += (uint64_t)i;
  }
}

static void nap(long us) {
  struct timespec t = {0, us * 1000L};
  nanosleep(&t, 0);
}

static void hex(const uint8_t* b, int n, char* out) {
  for (int i = 0; i < n; ++i) sprintf(out + 2 * i, "%02x", b[i]);
}

static void* worker(void* arg) {
  int index = (int)(long)arg;
  char path[4096];
  snprintf(path, sizeof path, "%s/otel-server-%d-%d.dat", dir, (int)getpid(), index);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
  void* buf = 0;
  if (fd < 0 || posix_memalign(&buf, 4096, (size_t)bytes) != 0) {
    perror(path);
    exit(1);
  }
  memset(buf, 'x', (size_t)bytes);
  if (pwrite(fd, buf, (size_t)bytes, 0) != bytes || fdatasync(fd) != 0) {
    perror("write");
    exit(1);
  }
  struct otel_thread_ctx_record rec;
  memset(&rec, 0, sizeof rec);
  pid_t tid = (pid_t)syscall(SYS_gettid);
  nap(1000);  // as a server waits for its first request
  for (int s = 0; s < spans; ++s) {
    // IDs no other span of the run has: the thread and span numbers in them, and the pid.
    uint64_t t1 = 0x4bf92f3577b34da6ULL ^ ((uint64_t)getpid() << 20), t2 = ((uint64_t)index << 32) | (uint64_t)s;
    uint64_t sp = 0x00f067aa0ba90000ULL | ((uint64_t)index << 16) | (uint64_t)s;
    memcpy(rec.trace_id, &t1, 8);
    memcpy(rec.trace_id + 8, &t2, 8);
    memcpy(rec.span_id, &sp, 8);
    rec.trace_flags = 1;
    uint64_t w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_THREAD_CPUTIME_ID);
    otel_context_attach(&rec);
    burn(1000000);
    nap(500);
    if (pread(fd, buf, (size_t)bytes, 0) != bytes) {
      perror("read");
      exit(1);
    }
    burn(500000);
    otel_context_detach();
    uint64_t c1 = ns(CLOCK_THREAD_CPUTIME_ID), w1 = ns(CLOCK_MONOTONIC);
    if (truth) {
      char t[33], p[17];
      hex(rec.trace_id, 16, t);
      hex(rec.span_id, 8, p);
      pthread_mutex_lock(&truth_lock);
      fprintf(truth, "%s %s %d %llu %llu %d\n", t, p, (int)tid, (unsigned long long)(w1 - w0),
              (unsigned long long)(c1 - c0), bytes);
      pthread_mutex_unlock(&truth_lock);
    }
    nap(300);
  }
  close(fd);
  unlink(path);
  free(buf);
  return 0;
}

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--spans")) spans = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bytes")) bytes = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!strcmp(argv[i], "--delay-ms")) delay_ms = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--truth")) {
      truth = fopen(argv[i + 1], "we");
      if (!truth) { perror(argv[i + 1]); return 1; }
    } else {
      fprintf(stderr, "pm-otel-server: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 1 || threads > 64 || spans < 0 || bytes < 4096 || bytes % 4096) {
    fprintf(stderr, "pm-otel-server: --threads 1..64, --bytes a multiple of 4096\n");
    return 2;
  }
  if (delay_ms > 0) nap(delay_ms * 1000L % 1000000L), sleep((unsigned)(delay_ms / 1000));
  pthread_t t[64];
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], 0, worker, (void*)(long)i);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], 0);
  if (truth) fclose(truth);
  return 0;
}
