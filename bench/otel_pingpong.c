// SPDX-License-Identifier: Apache-2.0
// The OpenTelemetry thread context row of bench/context_overhead.sh:
//   otel_pingpong N A   N round trips of one byte between two processes pinned to one CPU, as
//                       perf bench sched pipe; A = 1: each side's trip is a span published as
//                       OTEP 4947 says (examples/otel/otel_context.c: the record attached, the
//                       thread blocks inside it, detached); prints usecs/op
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "otel_context.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int trips(long n, int annotate, int reader, int writer, uint64_t side) {
  struct otel_thread_ctx_record rec;
  memset(&rec, 0, sizeof rec);
  memset(rec.trace_id, 0x4b, sizeof rec.trace_id);
  char c = 'x';
  for (long i = 0; i < n; ++i) {
    if (annotate) {
      uint64_t id = (uint64_t)i * 2 + side;
      memcpy(rec.span_id, &id, sizeof id);
      otel_context_attach(&rec);
    }
    if (side == 2 && write(writer, &c, 1) != 1) return 1;
    if (read(reader, &c, 1) != 1) return 1;
    if (side == 1 && write(writer, &c, 1) != 1) return 1;
    if (annotate) otel_context_detach();
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: otel_pingpong N 0|1\n");
    return 2;
  }
  long n = atol(argv[1]);
  int annotate = atoi(argv[2]);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof set, &set);
  int ping[2], pong[2];
  if (pipe(ping) != 0 || pipe(pong) != 0) return 1;
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) _exit(trips(n, annotate, ping[0], pong[1], 1));
  double t0 = now_s();
  if (trips(n, annotate, pong[0], ping[1], 2) != 0) return 1;
  double t1 = now_s();
  int status = 0;
  waitpid(child, &status, 0);
  printf("%.3f usecs/op\n", (t1 - t0) * 1e6 / (double)n);
  return 0;
}
