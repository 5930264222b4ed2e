// SPDX-License-Identifier: Apache-2.0
// OpenTelemetry thread context's Join on synthetic kernel events: which span each stretch on and
// off the CPU counts for, and when a span is handed on.
#include "sources/probes/otel.h"

#include <cstring>

#include <gtest/gtest.h>

namespace pm::otel {
namespace {

pm_otel_ctx ctx(uint8_t span) {
  pm_otel_ctx c{};
  std::memset(c.trace_id, 0xab, sizeof c.trace_id);
  c.span_id[7] = span;
  c.valid = 1;
  c.trace_flags = 1;
  return c;
}

pm_otel_event run(int tid, uint64_t from, uint64_t to, uint64_t cpu, const pm_otel_ctx& a, const pm_otel_ctx& b,
                  bool start_known = true) {
  pm_otel_event e{};
  e.kind = PM_OTEL_RUN;
  e.pid = 100;
  e.tid = static_cast<uint32_t>(tid);
  e.from_ns = from;
  e.to_ns = to;
  e.value = cpu;
  e.start_known = start_known;
  e.ctx[0] = a;
  e.ctx[1] = b;
  return e;
}

pm_otel_event gap(int tid, uint64_t from, uint64_t to, uint64_t runq, uint32_t reason, const pm_otel_ctx& c) {
  pm_otel_event e{};
  e.kind = PM_OTEL_GAP;
  e.pid = 100;
  e.tid = static_cast<uint32_t>(tid);
  e.from_ns = from;
  e.to_ns = to;
  e.value = runq;
  e.reason = reason;
  e.ctx[0] = c;
  return e;
}

std::vector<Span> flush(Join& j) {
  std::vector<Span> out;
  j.flush([&](const Span& s) { out.push_back(s); }, WallClock::time_point{});
  return out;
}

TEST(OtelJoin, AStretchCountsForTheSpanAtBothItsEndsOrForTheOneSpanAtEither) {
  Join j;
  pm_otel_ctx none{}, a = ctx(1);
  j.event(run(1, 0, 1000, 900, none, a));         // the span began in it: counts for a
  j.event(gap(1, 1000, 5000, 1000, PM_BLOCK_IO, a));  // off the CPU in a: 3 us blocked, 1 us waiting
  j.event(run(1, 5000, 6000, 1000, a, a));
  j.event(run(1, 6000, 7000, 500, a, none));       // it ended in it: counts for a
  std::vector<Span> s = flush(j);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].trace_id, "abababababababababababababababab");
  EXPECT_EQ(s[0].parent_span_id, "0000000000000001");
  EXPECT_DOUBLE_EQ(s[0].on_cpu_seconds, 2400e-9);
  EXPECT_DOUBLE_EQ(s[0].blocked_io_seconds, 3000e-9);
  EXPECT_DOUBLE_EQ(s[0].runq_seconds, 1000e-9);
  EXPECT_DOUBLE_EQ(s[0].seconds, 7000e-9);
  EXPECT_EQ(s[0].voluntary_switches, 1u);
  EXPECT_EQ(s[0].threads, 1u);
}

TEST(OtelJoin, AStretchBetweenTwoSpansIsSplitAndOneWithNoContextCountsForNone) {
  Join j;
  pm_otel_ctx none{}, a = ctx(1), b = ctx(2);
  j.event(run(1, 0, 1000, 1000, a, b));
  j.event(run(1, 1000, 2000, 1000, none, none));  // (not sent by the kernel side; nothing either way)
  std::vector<Span> s = flush(j);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].on_cpu_seconds + s[1].on_cpu_seconds, 1000e-9);
  EXPECT_DOUBLE_EQ(s[0].on_cpu_seconds, 500e-9);
}

TEST(OtelJoin, AStretchWhoseStartWasNotSeenCountsForTheContextAtItsEnd) {
  Join j;
  pm_otel_ctx a = ctx(1), b = ctx(2);
  j.event(run(1, 0, 1000, 800, b, a, /*start_known=*/false));  // ctx[0] is not a reading
  std::vector<Span> s = flush(j);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].parent_span_id, "0000000000000001");
  EXPECT_DOUBLE_EQ(s[0].on_cpu_seconds, 800e-9);
}

TEST(OtelJoin, ASpanOnTwoThreadsIsOneSpanHandedOnOnceNoThreadHoldsIt) {
  Join j;
  pm_otel_ctx none{}, a = ctx(1);
  std::vector<Span> out;
  auto keep = [&](const Span& s) { out.push_back(s); };
  j.event(run(1, 0, 1000, 1000, none, a));  // thread 1 leaves the CPU in it
  j.event(run(2, 500, 2000, 1500, none, a));
  j.round(2000 + Join::kIdleNs, keep, WallClock::time_point{});
  EXPECT_TRUE(out.empty()) << "two threads hold it";
  j.event(run(1, 3000, 4000, 1000, a, none));
  j.event(run(2, 3000, 4000, 1000, a, none));
  j.round(4000 + Join::kIdleNs - 1, keep, WallClock::time_point{});
  EXPECT_TRUE(out.empty()) << "not idle long enough";
  j.round(4000 + Join::kIdleNs, keep, WallClock::time_point{});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].threads, 2u);
  EXPECT_DOUBLE_EQ(out[0].on_cpu_seconds, 4500e-9);
  EXPECT_EQ(out[0].tid, 1);
}

TEST(OtelJoin, BiosCountForTheirSpanAndOpenSpansAreBounded) {
  Join j;
  pm_otel_event bio{};
  bio.kind = PM_OTEL_BIO;
  bio.pid = 100;
  bio.tid = 1;
  bio.reason = 1;
  bio.value = 4096;
  bio.ctx[0] = ctx(1);
  j.event(bio);
  for (size_t i = 0; i < Join::kMaxOpen + 10; ++i) {
    pm_otel_ctx c = ctx(0);
    std::memcpy(c.trace_id, &i, sizeof i);
    j.event(gap(1, 0, 10, 0, PM_BLOCK_OTHER, c));
  }
  EXPECT_EQ(j.dropped(), 11u);
  size_t with_bytes = 0;
  for (const Span& s : flush(j)) with_bytes += s.bio_write_bytes == 4096;
  EXPECT_EQ(with_bytes, 1u);
}

}  // namespace
}  // namespace pm::otel
