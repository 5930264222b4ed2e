// SPDX-License-Identifier: Apache-2.0
// The join of thread-context polls (from the threads' logs) with the kernel's events of each
// poll: stretches off the CPU clipped to the poll, a request added up over polls on several
// threads, and handed on only once every poll of it is in.
#include "sources/probes/contexts.h"

#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace pm::contexts {
namespace {

constexpr uint64_t kMs = 1000000;

pm_ctx_event gap(int tid, uint64_t poll, uint64_t out, uint64_t in, uint64_t runq, uint32_t reason,
                 bool preempted = false) {
  pm_ctx_event e{};
  e.kind = PM_CTX_GAP;
  e.pid = 100;
  e.tid = static_cast<__u32>(tid);
  e.poll = poll;
  e.out_ns = out;
  e.in_ns = in;
  e.runq_ns = runq;
  e.reason = reason;
  e.involuntary = preempted ? 1 : 0;
  return e;
}

pm_ctx_event bio(int tid, uint64_t poll, uint64_t at, uint64_t bytes, bool write) {
  pm_ctx_event e{};
  e.kind = PM_CTX_BIO;
  e.pid = 100;
  e.tid = static_cast<__u32>(tid);
  e.poll = poll;
  e.out_ns = e.in_ns = at;
  e.value = bytes;
  e.reason = write ? 1 : 0;
  return e;
}

struct Collect {
  std::vector<Span> spans;
  Join::Out out() {
    return [this](const Span& s) { spans.push_back(s); };
  }
};

TEST(ContextJoin, ARequestOverThreePollsOnTwoThreadsAddsUp) {
  Join j;
  Collect c;
  // Request 7: poll 0 on thread 1 (10..20 ms: blocked on I/O 12..16, then 1 ms waiting for a CPU),
  // poll 0 on thread 2 (30..35 ms: preempted 31..32), poll 1 on thread 1 (40..42 ms), done.
  j.event(gap(1, 0, 12 * kMs, 17 * kMs, 1 * kMs, PM_BLOCK_IO));
  j.event(bio(1, 0, 11 * kMs, 8192, true));
  j.event(gap(2, 0, 31 * kMs, 32 * kMs, 1 * kMs, PM_BLOCK_OTHER, true));
  j.poll(100, 1, 0, {7, 10 * kMs, 20 * kMs, false});
  j.poll(100, 2, 0, {7, 30 * kMs, 35 * kMs, false});
  j.poll(100, 1, 1, {7, 40 * kMs, 42 * kMs, true});
  j.round(c.out(), {});
  EXPECT_TRUE(c.spans.empty()) << "polls are taken a round after they are read";
  j.round(c.out(), {});
  EXPECT_TRUE(c.spans.empty()) << "a request is handed on a round after its last poll is taken";
  j.round(c.out(), {});
  ASSERT_EQ(c.spans.size(), 1u);
  const Span& s = c.spans[0];
  EXPECT_EQ(s.request_id, 7u);
  EXPECT_EQ(s.polls, 3u);
  EXPECT_EQ(s.threads, 2u);
  EXPECT_DOUBLE_EQ(s.seconds, 0.032);          // 10 .. 42 ms
  EXPECT_NEAR(s.pending_seconds, 0.015, 1e-12);  // 32 ms less 17 ms in polls
  EXPECT_NEAR(s.blocked_seconds, 0.004, 1e-12);
  EXPECT_NEAR(s.blocked_io_seconds, 0.004, 1e-12);
  EXPECT_NEAR(s.runq_seconds, 0.002, 1e-12);
  EXPECT_NEAR(s.on_cpu_seconds, 0.011, 1e-12);  // 17 ms in polls, less 6 ms off the CPU
  EXPECT_EQ(s.voluntary_switches, 1u);
  EXPECT_EQ(s.involuntary_switches, 1u);
  EXPECT_EQ(s.bio_write_bytes, 8192u);
  EXPECT_EQ(j.open_requests(), 0u);
}

TEST(ContextJoin, AStretchOffTheCpuIsClippedToItsPoll) {
  Join j;
  Collect c;
  // The switch came after the poll's end clock was read and before `active` was cleared: the
  // stretch 20..25 ms lies after the poll (10..21 ms) but for 1 ms.
  j.event(gap(1, 0, 20 * kMs, 25 * kMs, 0, PM_BLOCK_SLEEP));
  j.event(bio(1, 0, 22 * kMs, 4096, false));  // after the poll: not its
  j.poll(100, 1, 0, {9, 10 * kMs, 21 * kMs, true});
  j.flush(c.out(), {});
  ASSERT_EQ(c.spans.size(), 1u);
  EXPECT_NEAR(c.spans[0].blocked_sleep_seconds, 0.001, 1e-12);
  EXPECT_NEAR(c.spans[0].on_cpu_seconds, 0.010, 1e-12);
  EXPECT_EQ(c.spans[0].bio_read_bytes, 0u);
}

TEST(ContextJoin, EventsOfPollsNeverReadAreDroppedWithTheNextPoll) {
  Join j;
  Collect c;
  // Poll 3's log entry was overwritten before it was read; its event must not go to poll 4.
  j.event(gap(1, 3, 5 * kMs, 9 * kMs, 0, PM_BLOCK_LOCK));
  j.poll(100, 1, 4, {2, 10 * kMs, 12 * kMs, true});
  j.flush(c.out(), {});
  ASSERT_EQ(c.spans.size(), 1u);
  EXPECT_EQ(c.spans[0].blocked_seconds, 0);
  EXPECT_EQ(c.spans[0].voluntary_switches, 0u);
}

TEST(ContextJoin, EachPollTakesItsOwnEventsWhateverOrderTheyCameIn) {
  Join j;
  Collect c;
  // Thread 1's events of polls 0, 1 and 2, poll 1's last: each poll gets its own, once.
  j.event(gap(1, 0, 2 * kMs, 3 * kMs, 0, PM_BLOCK_SLEEP));
  j.event(gap(1, 2, 22 * kMs, 25 * kMs, 0, PM_BLOCK_IO));
  j.event(gap(1, 1, 12 * kMs, 14 * kMs, 0, PM_BLOCK_LOCK));
  j.event(gap(1, 1, 15 * kMs, 16 * kMs, 0, PM_BLOCK_LOCK));
  j.poll(100, 1, 0, {1, 1 * kMs, 5 * kMs, true});
  j.poll(100, 1, 1, {2, 10 * kMs, 20 * kMs, true});
  j.poll(100, 1, 2, {3, 21 * kMs, 30 * kMs, true});
  j.flush(c.out(), {});
  ASSERT_EQ(c.spans.size(), 3u);
  for (const Span& s : c.spans) {
    uint64_t id = s.request_id.value_or(0);
    EXPECT_NEAR(s.blocked_seconds, id == 1 ? 0.001 : 0.003, 1e-12) << id;
    EXPECT_EQ(s.voluntary_switches, id == 2 ? 2u : 1u) << id;
  }
  EXPECT_EQ(j.dropped(), 0u);
}

TEST(ContextJoin, PollsWithEventsWaitingAreBoundedAndWhatIsLeftOutCounted) {
  Join j;
  Collect c;
  // 65,536 polls' events wait at most; a thread that sends more has the rest counted as dropped,
  // and once its polls are taken, room is made again.
  constexpr uint64_t kBound = 65536;
  for (uint64_t p = 0; p < kBound + 10; ++p) j.event(gap(1, p, p * kMs, p * kMs + 1, 0, PM_BLOCK_OTHER));
  EXPECT_EQ(j.dropped(), 10u);
  j.event(gap(1, kBound - 1, 0, 1, 0, PM_BLOCK_OTHER));  // a poll already waiting: kept
  EXPECT_EQ(j.dropped(), 10u);
  j.poll(100, 1, kBound - 1, {1, 0, kBound * kMs, true});
  j.flush(c.out(), {});
  j.event(gap(2, 0, 0, 1, 0, PM_BLOCK_OTHER));
  EXPECT_EQ(j.dropped(), 10u);
  ASSERT_EQ(c.spans.size(), 1u);
  EXPECT_EQ(c.spans[0].voluntary_switches, 2u);  // the poll's two stretches, none of the older polls'
}

TEST(ContextJoin, AnIdUsedAgainWhileItsPollsWaitLosesNoPoll) {
  Join j;
  Collect c;
  // Request 5 finishes (poll 0), a poll of it is read a round later (poll 1), and the ID is used
  // again for a new request (poll 2) while poll 1 still waits: every poll counts once, none
  // after its request was handed on.
  j.poll(100, 1, 0, {5, 1 * kMs, 2 * kMs, true});
  j.round(c.out(), {});
  j.poll(100, 1, 1, {5, 3 * kMs, 4 * kMs, false});
  j.round(c.out(), {});
  j.poll(100, 1, 2, {5, 5 * kMs, 6 * kMs, true});
  j.round(c.out(), {});
  j.round(c.out(), {});
  j.round(c.out(), {});
  j.flush(c.out(), {});
  uint32_t polls = 0;
  for (const Span& s : c.spans) polls += s.polls;
  EXPECT_EQ(polls, 3u);
  EXPECT_EQ(j.polls(), 3u);
  EXPECT_EQ(j.open_requests(), 0u);
}

TEST(ContextJoin, AStretchWhosePollIsNotKnownIsPlacedByItsTime) {
  Join j;
  Collect c;
  // Its switch out was not traced: the stretch 12..15 ms (1 ms of it waiting for a CPU) lies in
  // thread 1's second poll, not its first.
  pm_ctx_event e = gap(1, PM_CTX_POLL_UNKNOWN, 12 * kMs, 15 * kMs, 1 * kMs, PM_BLOCK_OTHER);
  j.event(e);
  j.poll(100, 1, 0, {3, 1 * kMs, 5 * kMs, true});
  j.poll(100, 1, 1, {4, 10 * kMs, 20 * kMs, true});
  j.flush(c.out(), {});
  ASSERT_EQ(c.spans.size(), 2u);
  const Span& first = c.spans[0].request_id == 3u ? c.spans[0] : c.spans[1];
  const Span& second = c.spans[0].request_id == 4u ? c.spans[0] : c.spans[1];
  EXPECT_EQ(first.blocked_seconds + first.runq_seconds, 0);
  EXPECT_NEAR(second.blocked_other_seconds, 0.002, 1e-12);
  EXPECT_NEAR(second.runq_seconds, 0.001, 1e-12);
  EXPECT_NEAR(second.on_cpu_seconds, 0.007, 1e-12);
}

TEST(ContextJoin, AnUnfinishedRequestIsNotHandedOn) {
  Join j;
  Collect c;
  j.poll(100, 1, 0, {5, 1 * kMs, 2 * kMs, false});
  for (int i = 0; i < 3; ++i) j.round(c.out(), {});
  j.flush(c.out(), {});
  EXPECT_TRUE(c.spans.empty());
  EXPECT_EQ(j.open_requests(), 1u);
  EXPECT_EQ(j.polls(), 1u);
}

TEST(ContextJoin, SameIdInTwoProcessesIsTwoRequests) {
  Join j;
  Collect c;
  j.poll(100, 1, 0, {5, 1 * kMs, 2 * kMs, true});
  j.poll(200, 9, 0, {5, 1 * kMs, 4 * kMs, true});
  j.flush(c.out(), {});
  ASSERT_EQ(c.spans.size(), 2u);
  EXPECT_NE(c.spans[0].pid, c.spans[1].pid);
}

TEST(CounterClock, PlacesACountBetweenItsPointsAndPastTheLast) {
  CounterClock c;
  EXPECT_EQ(c.ns(100), 0u) << "no slope from one point";
  c.add(1000, 5000);
  c.add(3000, 6000);   // 2 counts a ns
  c.add(5000, 8000);   // 1 count a ns
  EXPECT_EQ(c.ns(2000), 5500u);
  EXPECT_EQ(c.ns(4000), 7000u);
  // Past the last point: on the slope of the last points (here all three: 0.75 ns a count).
  EXPECT_EQ(c.ns(6000), 8750u);
  EXPECT_EQ(c.ns(0), 4500u);
}

TEST(CounterClock, TheMachinesCounterAgreesWithClockMonotonic) {
  uint32_t kind = CounterClock::counter(1) != 0 ? 1 : (CounterClock::counter(2) != 0 ? 2 : 0);
  if (kind == 0) GTEST_SKIP() << "this CPU has no counter the context records use (x86 TSC, arm64 CNTVCT)";
  CounterClock c;
  c.sample(kind);  // two points, 2 ms apart
  for (int i = 0; i < 5; ++i) {
    ::usleep(10000);
    c.sample(kind);
  }
  ::usleep(5000);
  timespec ts{};
  uint64_t count = CounterClock::counter(kind);
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  // 5 ms past the last point: within 20 µs (a loaded machine's read pair takes microseconds).
  EXPECT_NEAR(static_cast<double>(c.ns(count)), static_cast<double>(now), 20e3);
}

}  // namespace
}  // namespace pm::contexts
