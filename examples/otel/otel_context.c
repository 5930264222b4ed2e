// SPDX-License-Identifier: Apache-2.0
// A small C writer of OpenTelemetry thread context (OTEP 4947), as an SDK publishes it: the TLS
// pointer otel_thread_ctx_v1 names the running span's record (trace ID, span ID, valid, trace
// flags, attributes), NULL between spans. An application links it into its executable (and
// exports the variable: -Wl,--export-dynamic-symbol=otel_thread_ctx_v1) or builds it as a shared
// library it loads at start (-mtls-dialect=gnu2 for TLSDESC, as OTEP 4947 recommends; the older
// __tls_get_addr dialect is read too). perf-monitor's tests and benchmarks use it both ways.
#include "otel_context.h"

__attribute__((visibility("default"))) __thread struct otel_thread_ctx_record* otel_thread_ctx_v1 = 0;

// The pointer goes NULL while the record is written, then names it (compiler fences only: a
// reader sees the thread stopped, as a signal handler would).
void otel_context_attach(struct otel_thread_ctx_record* record) {
  otel_thread_ctx_v1 = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  record->valid = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  otel_thread_ctx_v1 = record;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void otel_context_detach(void) {
  otel_thread_ctx_v1 = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
