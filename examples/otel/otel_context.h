// SPDX-License-Identifier: Apache-2.0
// The OTEP 4947 thread context record and the writer's two calls (otel_context.c).
#pragma once
#include <stdint.h>

struct otel_thread_ctx_record {
  uint8_t trace_id[16];
  uint8_t span_id[8];
  uint8_t valid;
  uint8_t trace_flags;
  uint16_t attrs_data_size;
  uint8_t attrs_data[36];
};

#ifdef __cplusplus
extern "C" {
#endif
void otel_context_attach(struct otel_thread_ctx_record* record);
void otel_context_detach(void);
#ifdef __cplusplus
}
#endif
