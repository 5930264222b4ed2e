// SPDX-License-Identifier: Apache-2.0
// Thread context (include/perf-monitor/annotate.h) on perf-monitor's side. Each thread that
// publishes context has a record in its memory: the poll it runs now, and a log of its finished
// polls (request ID, begin and end on CLOCK_MONOTONIC). The kernel programs send what happened to
// a thread while it was in a poll (its stretches off the CPU, its bios), and the Reader takes the
// finished polls from the records; the Join puts the two together, clipped to each poll's own
// begin and end, and adds up each request over its polls, whichever threads ran them.
#pragma once

#include <linux/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory_resource>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/span.h"
#include "probe.h"

namespace pm::contexts {

// One finished poll, as a thread's log has it.
struct Poll {
  uint64_t id = 0;
  uint64_t begin_ns = 0, end_ns = 0;
  bool done = false;  // the request finished with it
};

class Join {
 public:
  using Out = std::function<void(const Span&)>;
  // A poll read from thread `tid`'s log (its number on that thread).
  void poll(int pid, int tid, uint64_t number, const Poll& p);
  // A kernel event of a thread in a poll (GAP or BIO).
  void event(const pm_ctx_event& e);
  // A thread's record is new or gone: its poll numbers start again.
  void forget_thread(int tid);
  // The end of a round of reading. The polls read a round ago take their events (a poll's
  // events were sent before it ended, so before its log entry was read; a round more covers a
  // record another CPU had reserved and not yet committed). A request is handed on a round after
  // its finishing poll was taken, once every poll read of it is in (a poll another thread ran
  // before may be read a round later than the one that finished it).
  void round(const Out& out, WallClock::time_point wall_at_mono_zero);
  // The end of the run: everything taken, every finished request handed on.
  void flush(const Out& out, WallClock::time_point wall_at_mono_zero);

  [[nodiscard]] uint64_t polls() const { return polls_taken_; }
  [[nodiscard]] uint64_t requests() const { return requests_out_; }
  [[nodiscard]] size_t open_requests() const { return requests_.size(); }
  // Polls and events not kept: past the bounds on open requests and unread stretches.
  [[nodiscard]] uint64_t dropped() const { return dropped_; }

 private:
  struct Read {
    int pid, tid;
    uint64_t number;
    Poll p;
  };
  // The threads that ran a request's polls (at most 64 kept): the first few in place, as most
  // requests run on one to four, so that a request costs no allocation of its own.
  class Tids {
   public:
    void add(int tid);
    [[nodiscard]] size_t size() const { return n_; }

   private:
    static constexpr size_t kInPlace = 4, kMax = 64;
    size_t n_ = 0;
    int few_[kInPlace] = {};
    std::vector<int> more_;
  };
  struct Request {
    int pid = 0, tid = 0;  // the thread of its first poll
    uint64_t id = 0;
    uint64_t first_begin = UINT64_MAX, last_end = 0, run_ns = 0;  // run_ns: the polls' time
    uint64_t runq_ns = 0, blocked_ns[PM_BLOCK_REASONS] = {};
    uint64_t voluntary = 0, involuntary = 0, bio_read = 0, bio_write = 0, faults = 0;
    uint32_t polls = 0, pending = 0;  // pending: read, not yet taken
    Tids tids;
    bool done = false;
    uint64_t done_round = 0;
  };
  using Key = std::pair<int, uint64_t>;  // (pid, request ID)
  // The IDs are the application's to choose: hashed with a seed of this run's, so that no
  // choice of them makes the lookups collide.
  struct KeyHash {
    uint64_t seed;
    size_t operator()(const Key& k) const;
  };
  // A thread's events not yet taken, in the order of their polls (a thread's polls are numbered
  // in the order it ran them, and its events come in that order): those before `head` are
  // taken. `polls`: how many different polls the rest are of.
  struct Pending {
    std::vector<pm_ctx_event> events;
    size_t head = 0, polls = 0, tail_run = 0;  // tail_run: events of the last one's poll
  };

  void take(const Read& r);
  void emit(Request& q, const Out& out, WallClock::time_point wall_at_mono_zero);

  std::vector<Read> read_now_, read_before_;
  std::unordered_map<int, Pending> events_;  // by tid
  size_t pending_polls_ = 0;                 // over all threads
  // Stretches whose poll is not known (their switch out was not traced): placed by their time
  // among the thread's polls, by tid.
  std::unordered_map<int, std::vector<pm_ctx_event>> loose_;
  // Open requests, hundreds to thousands at a time, each looked up three or four times: their
  // nodes come from a pool that keeps the memory of those handed on, so a lookup finds a node
  // still in the cache rather than a new allocation (half perf-monitor's CPU at 140,000 polls a
  // second went to these lookups and malloc before).
  std::pmr::unsynchronized_pool_resource pool_;
  std::pmr::unordered_map<Key, Request, KeyHash> requests_{1024, KeyHash{seed()}, std::equal_to<Key>{}, &pool_};
  static uint64_t seed();
  std::vector<Key> finished_;  // requests whose finishing poll was taken
  uint64_t round_ = 0, polls_taken_ = 0, requests_out_ = 0, dropped_ = 0;
};

// The writers' stamps on CLOCK_MONOTONIC. A record's clock is CLOCK_MONOTONIC itself, or the
// CPU's counter (the x86 TSC, arm64's CNTVCT_EL0: half the cost of clock_gettime), read here
// beside CLOCK_MONOTONIC at every reading of the records: a counter value is placed between the
// two points around it (beyond the last, on the slope of about the last second).
class CounterClock {
 public:
  // The counter of the records' clock `kind` on this machine (1 x86 TSC, 2 arm64 CNTVCT); 0
  // where this CPU has none of that kind.
  static uint64_t counter(uint32_t kind);
  // Takes a point now (the first one twice, 2 ms apart, for a slope to begin with).
  void sample(uint32_t kind);
  void add(uint64_t count, uint64_t ns);  // a point (tests)
  // CLOCK_MONOTONIC ns of a counter value; 0 while there are fewer than two points.
  [[nodiscard]] uint64_t ns(uint64_t count) const;

 private:
  std::vector<std::pair<uint64_t, uint64_t>> points_;  // (count, ns), in order; the last ~40 s
  mutable size_t last_ = 0;  // the segment [last_, last_ + 1] the last count fell in (they come in order)
};

// The threads' records, each read where perf-monitor mapped the thread's memory file (it stays
// readable once the process has exited), else from the process's memory while it lives.
class Reader {
 public:
  Reader() = default;
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader();
  // Thread `tid` of `pid` announced its record at `addr`.
  void thread(int pid, int tid, uint64_t addr);
  // It exited: its log is read once more, then let go.
  void exited(int tid);
  // Every thread's polls finished since the last read, into `join`.
  void read(Join& join);

  [[nodiscard]] size_t threads() const { return threads_.size(); }
  [[nodiscard]] uint64_t lost() const { return lost_; }       // overwritten before they were read
  [[nodiscard]] uint64_t unreadable() const { return bad_; }  // records that could not be read or were not valid

 private:
  struct Thread {
    int pid = 0;
    uint64_t addr = 0;
    const unsigned char* map = nullptr;  // the record, mapped; nullptr: read from the process
    size_t size = 0;
    uint32_t capacity = 0;
    uint32_t clock = 0;  // of its stamps: 0 CLOCK_MONOTONIC, else a CounterClock kind
    uint64_t tail = 0;  // polls read so far
    bool exited = false;
  };
  bool copy(const Thread& t, uint64_t offset, void* dst, size_t len) const;
  bool read_thread(int tid, Thread& t, Join& join);

  std::unordered_map<int, Thread> threads_;
  CounterClock counters_[3];  // by clock kind (0 unused)
  uint64_t lost_ = 0, bad_ = 0;
};

}  // namespace pm::contexts
