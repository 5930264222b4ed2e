// SPDX-License-Identifier: Apache-2.0
#include "sources/probes/contexts.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "core/fd.h"

namespace pm::contexts {
namespace {

// The record's layout, version 1 (annotate.h's struct perf_monitor_context).
struct RecordHead {
  uint32_t active, version;
  uint64_t id, head, begin;
  uint32_t capacity, clock;
};
struct LogEntry {
  uint64_t id, begin, end, flags;
};
static_assert(sizeof(RecordHead) == 40 && sizeof(LogEntry) == 32);
// Bounds on what a process can make perf-monitor hold (its records are the application's to
// write, and another user's application is hostile data): a log of at most 65,536 polls (2 MiB);
// 4,096 threads read; 262,144 open requests (about 80 MB); 65,536 polls with kernel events
// not yet read (a poll's events wait at most a round or two: a few per thread). What goes past
// them is counted, never kept.
constexpr uint32_t kMaxCapacity = 1u << 16;
constexpr size_t kMaxThreads = 4096;
constexpr size_t kMaxOpen = 1u << 18;
constexpr size_t kMaxPending = 1u << 16;

// The part of [a, b) inside [lo, hi).
uint64_t overlap(uint64_t a, uint64_t b, uint64_t lo, uint64_t hi) {
  uint64_t s = std::max(a, lo), e = std::min(b, hi);
  return e > s ? e - s : 0;
}

double secs(uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace

// ---- Join ----

void Join::Tids::add(int tid) {
  if (std::find(few_, few_ + std::min(n_, kInPlace), tid) != few_ + std::min(n_, kInPlace)) return;
  if (std::find(more_.begin(), more_.end(), tid) != more_.end() || n_ >= kMax) return;
  if (n_ < kInPlace) {
    few_[n_] = tid;
  } else {
    more_.push_back(tid);
  }
  ++n_;
}

uint64_t Join::seed() {
  static const uint64_t s = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                            reinterpret_cast<uintptr_t>(&s);
  return s;
}

size_t Join::KeyHash::operator()(const Key& k) const {
  // splitmix64's finalizer over the ID, the pid and the seed.
  uint64_t x = k.second ^ seed ^ (static_cast<uint64_t>(static_cast<uint32_t>(k.first)) << 32);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<size_t>(x ^ (x >> 31));
}

void Join::poll(int pid, int tid, uint64_t number, const Poll& p) {
  auto [it, fresh] = requests_.try_emplace(Key{pid, p.id});
  if (fresh && requests_.size() > kMaxOpen) {
    requests_.erase(it);
    ++dropped_;
    return;
  }
  Request& q = it->second;
  if (q.done) {
    // The ID was used again for a new request before the last one was handed on: that one is
    // complete as far as it will ever be.
    q.done_round = 0;
    q.pending = 0;
  }
  ++q.pending;
  read_now_.push_back({pid, tid, number, p});
}

void Join::event(const pm_ctx_event& e) {
  if (e.kind != PM_CTX_GAP && e.kind != PM_CTX_BIO) return;
  if (e.poll == PM_CTX_POLL_UNKNOWN) {
    auto& list = loose_[static_cast<int>(e.tid)];
    if (list.size() < 4096) {
      list.push_back(e);
    } else {
      ++dropped_;
    }
    return;
  }
  Pending& t = events_[static_cast<int>(e.tid)];
  auto& list = t.events;
  auto by_poll = [](const pm_ctx_event& a, const pm_ctx_event& b) { return a.poll < b.poll; };
  if (t.head == list.size() || e.poll >= list.back().poll) {
    bool fresh = t.head == list.size() || e.poll != list.back().poll;
    if (fresh && pending_polls_ >= kMaxPending) {
      ++dropped_;
      return;
    }
    if (!fresh && t.tail_run >= 4096) return;  // a poll with more stretches off the CPU keeps its first ones
    t.tail_run = fresh ? 1 : t.tail_run + 1;
    if (fresh) {
      ++t.polls;
      ++pending_polls_;
    }
    list.push_back(e);
    return;
  }
  // An event of an earlier poll than the last one's (not seen here; kept in order all the same).
  auto [lo, hi] = std::equal_range(list.begin() + static_cast<ptrdiff_t>(t.head), list.end(), e, by_poll);
  if (lo == hi && pending_polls_ >= kMaxPending) {
    ++dropped_;
    return;
  }
  if (hi - lo >= 4096) return;
  if (lo == hi) {
    ++t.polls;
    ++pending_polls_;
  }
  list.insert(hi, e);
}

void Join::forget_thread(int tid) {
  if (auto it = events_.find(tid); it != events_.end()) {
    pending_polls_ -= it->second.polls;
    events_.erase(it);
  }
  loose_.erase(tid);
}

void Join::take(const Read& r) {
  ++polls_taken_;
  const Poll& p = r.p;
  uint64_t begin = p.begin_ns, end = std::max(p.end_ns, p.begin_ns);
  // (By its key: the entry a read was made with may have been handed on since, when the ID was
  // used again for a new request.)
  Request& q = requests_[{r.pid, p.id}];
  if (q.polls == 0) {
    q.pid = r.pid;
    q.tid = r.tid;
    q.id = p.id;
  }
  ++q.polls;
  if (q.pending > 0) --q.pending;
  q.first_begin = std::min(q.first_begin, begin);
  q.last_end = std::max(q.last_end, end);
  q.run_ns += end - begin;
  q.tids.add(r.tid);
  // Its events, each clipped to the poll: a switch between the record's `active` and the clock
  // read beside it lies partly outside.
  auto gap = [&](const pm_ctx_event& e) {
    uint64_t out = e.out_ns, in = std::max(e.in_ns, e.out_ns);
    uint64_t woke = in - std::min<uint64_t>(e.runq_ns, in - out);
    uint64_t blocked = overlap(out, woke, begin, end), runq = overlap(woke, in, begin, end);
    if (blocked + runq == 0 && (out < begin || out >= end)) return;
    q.runq_ns += runq;
    q.blocked_ns[std::min<uint32_t>(e.reason, PM_BLOCK_OTHER)] += blocked;
    ++(e.involuntary ? q.involuntary : q.voluntary);
    q.faults += e.value;
  };
  // This poll's events; those of older ones of the thread (a poll lost from an overwritten log)
  // are dropped with them.
  if (auto pending = events_.find(r.tid); pending != events_.end()) {
    Pending& t = pending->second;
    auto& list = t.events;
    size_t i = t.head;
    uint64_t poll = UINT64_MAX;
    for (; i < list.size() && list[i].poll <= r.number; ++i) {
      const pm_ctx_event& e = list[i];
      if (e.poll != poll) {
        poll = e.poll;
        --t.polls;
        --pending_polls_;
      }
      if (e.poll != r.number) continue;
      if (e.kind == PM_CTX_BIO) {
        if (e.out_ns >= begin && e.out_ns <= end) (e.reason ? q.bio_write : q.bio_read) += e.value;
        continue;
      }
      gap(e);
    }
    t.head = i;
    if (t.head == list.size()) {
      events_.erase(pending);
    } else if (t.head >= 1024 && t.head * 2 >= list.size()) {
      list.erase(list.begin(), list.begin() + static_cast<ptrdiff_t>(t.head));
      t.head = 0;
    }
  }
  // Stretches placed by their time: the part inside this poll is its; one that ended before
  // the poll's end has no later poll to go to (polls are taken in order).
  auto loose = loose_.find(r.tid);
  if (loose != loose_.end()) {
    auto& list = loose->second;
    for (const pm_ctx_event& e : list) gap(e);
    list.erase(std::remove_if(list.begin(), list.end(), [&](const pm_ctx_event& e) { return e.in_ns <= end; }),
               list.end());
    if (list.empty()) loose_.erase(loose);
  }
  if (p.done) {
    q.done = true;
    q.done_round = round_;
    finished_.push_back({r.pid, p.id});
  }
}

void Join::emit(Request& q, const Out& out, WallClock::time_point wall_at_mono_zero) {
  ++requests_out_;
  if (!out) return;
  Span s;
  s.function = "request";
  s.pid = q.pid;
  s.tid = q.tid;
  s.request_id = q.id;
  s.own_request = true;
  s.start = wall_at_mono_zero +
            std::chrono::duration_cast<WallClock::duration>(std::chrono::nanoseconds(q.first_begin));
  uint64_t span = q.last_end - q.first_begin;
  s.seconds = secs(span);
  uint64_t blocked = 0;
  for (uint64_t b : q.blocked_ns) blocked += b;
  uint64_t off = std::min(q.runq_ns + blocked, q.run_ns);
  s.on_cpu_seconds = secs(q.run_ns - off);
  s.runq_seconds = secs(q.runq_ns);
  s.blocked_seconds = secs(blocked);
  s.blocked_io_seconds = secs(q.blocked_ns[PM_BLOCK_IO]);
  s.blocked_sleep_seconds = secs(q.blocked_ns[PM_BLOCK_SLEEP]);
  s.blocked_lock_seconds = secs(q.blocked_ns[PM_BLOCK_LOCK]);
  s.blocked_other_seconds = secs(q.blocked_ns[PM_BLOCK_OTHER]);
  s.pending_seconds = secs(span > q.run_ns ? span - q.run_ns : 0);
  s.voluntary_switches = q.voluntary;
  s.involuntary_switches = q.involuntary;
  s.bio_read_bytes = q.bio_read;
  s.bio_write_bytes = q.bio_write;
  s.page_faults = q.faults;
  s.polls = q.polls;
  s.threads = static_cast<uint32_t>(q.tids.size());
  out(s);
}

void Join::round(const Out& out, WallClock::time_point wall_at_mono_zero) {
  ++round_;
  for (const Read& r : read_before_) take(r);
  read_before_ = std::move(read_now_);
  read_now_.clear();
  std::vector<Key> waiting;
  for (const Key& k : finished_) {
    auto it = requests_.find(k);
    if (it == requests_.end()) continue;
    Request& q = it->second;
    if (q.pending > 0 || q.done_round >= round_) {
      waiting.push_back(k);
      continue;
    }
    emit(q, out, wall_at_mono_zero);
    requests_.erase(it);
  }
  finished_ = std::move(waiting);
}

void Join::flush(const Out& out, WallClock::time_point wall_at_mono_zero) {
  for (const Read& r : read_before_) take(r);
  for (const Read& r : read_now_) take(r);
  read_before_.clear();
  read_now_.clear();
  for (const Key& k : finished_) {
    auto it = requests_.find(k);
    if (it == requests_.end()) continue;
    emit(it->second, out, wall_at_mono_zero);
    requests_.erase(it);
  }
  finished_.clear();
  events_.clear();
  pending_polls_ = 0;
  loose_.clear();
}

// ---- CounterClock ----

uint64_t CounterClock::counter(uint32_t kind) {
#if defined(__x86_64__)
  if (kind == 1) return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  if (kind == 2) {
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
  }
#endif
  (void)kind;
  return 0;
}

namespace {
uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

void CounterClock::sample(uint32_t kind) {
  auto point = [&] {
    // The counter on both sides of the clock read: the clock's value at their middle. The
    // tightest of a few tries, and none that took over 20 µs (perf-monitor was preempted
    // between the reads: the middle could be off by as much).
    uint64_t best_count = 0, best_ns = 0, best_took = UINT64_MAX;
    for (int i = 0; i < 3; ++i) {
      uint64_t t0 = mono_ns(), a = counter(kind), ns = mono_ns(), b = counter(kind), t1 = mono_ns();
      if (a != 0 && b >= a && t1 - t0 < best_took) {
        best_count = a + (b - a) / 2;
        best_ns = ns;
        best_took = t1 - t0;
      }
    }
    if (best_count != 0 && best_took < 20000) add(best_count, best_ns);
  };
  // The first two points 2 ms apart (a slope to begin with), however many tries that takes.
  for (int i = 0; i < 20 && points_.size() < 2; ++i) {
    point();
    if (points_.size() < 2) ::usleep(points_.empty() ? 100 : 2000);
  }
  if (points_.size() >= 2) point();
}

void CounterClock::add(uint64_t count, uint64_t ns) {
  if (!points_.empty() && (count <= points_.back().first || ns <= points_.back().second)) return;
  points_.emplace_back(count, ns);
  // A point every reading (10 ms): the last 4,096 are about 40 s. The first stays: the slope
  // from it is the steadiest.
  if (points_.size() > 4096) points_.erase(points_.begin() + 1, points_.begin() + 1025);
}

uint64_t CounterClock::ns(uint64_t count) const {
  if (points_.size() < 2) return 0;
  // Inside the segment the last count fell in (counts come in order: most do).
  if (last_ + 1 < points_.size() && points_[last_].first <= count && count < points_[last_ + 1].first) {
    const auto &lo = points_[last_], &hi = points_[last_ + 1];
    long double slope = static_cast<long double>(hi.second - lo.second) / static_cast<long double>(hi.first - lo.first);
    return lo.second + static_cast<uint64_t>(static_cast<long double>(count - lo.first) * slope);
  }
  // The two points around it (or the last two segments' worth at the ends).
  auto after = std::upper_bound(points_.begin(), points_.end(), count,
                                [](uint64_t c, const std::pair<uint64_t, uint64_t>& p) { return c < p.first; });
  auto hi = after == points_.end() ? points_.end() - 1 : (after == points_.begin() ? after + 1 : after);
  auto lo = hi - 1;
  if (after == points_.end()) {
    // Past the last point: on the slope of about the last second (at least 100 points back).
    lo = hi - std::min<ptrdiff_t>(hi - points_.begin(), 100);
  }
  long double slope = static_cast<long double>(hi->second - lo->second) / static_cast<long double>(hi->first - lo->first);
  if (after != points_.begin() && after != points_.end()) last_ = static_cast<size_t>(after - points_.begin()) - 1;
  const auto& anchor = after == points_.begin() ? *lo : *(after - 1);
  long double ns = static_cast<long double>(anchor.second) +
                   (static_cast<long double>(count) - static_cast<long double>(anchor.first)) * slope;
  return ns <= 0 ? 0 : static_cast<uint64_t>(ns);
}

// ---- Reader ----

Reader::~Reader() {
  for (auto& [tid, t] : threads_) {
    if (t.map != nullptr) ::munmap(const_cast<unsigned char*>(t.map), t.size);
  }
}

bool Reader::copy(const Thread& t, uint64_t offset, void* dst, size_t len) const {
  if (t.map != nullptr) {
    if (offset > t.size || len > t.size - offset) return false;
    std::memcpy(dst, t.map + offset, len);
    return true;
  }
  iovec local{dst, len};
  iovec remote{reinterpret_cast<void*>(t.addr + offset), len};
  return ::process_vm_readv(t.pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

void Reader::thread(int pid, int tid, uint64_t addr) {
  auto old = threads_.find(tid);
  if (old != threads_.end()) {
    if (old->second.map != nullptr) ::munmap(const_cast<unsigned char*>(old->second.map), old->second.size);
    threads_.erase(old);
  }
  if (threads_.size() >= kMaxThreads) {
    ++bad_;
    return;
  }
  Thread t;
  t.pid = pid;
  t.addr = addr;
  RecordHead h{};
  if (!copy(t, 0, &h, sizeof h) || h.version != 1 || h.capacity == 0 || h.capacity > kMaxCapacity ||
      (h.capacity & (h.capacity - 1)) != 0) {
    ++bad_;
    return;
  }
  t.capacity = h.capacity;
  t.clock = h.clock;
  if (t.clock > 2 || (t.clock != 0 && CounterClock::counter(t.clock) == 0)) {
    ++bad_;  // a clock this machine cannot read
    return;
  }
  t.tail = 0;  // it announced the record at its first poll: every poll since counts
  // The record's own pages: a sealed memory file of exactly the record's pages (that cannot
  // shrink under the mapping), else it is read from the process.
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t bytes = sizeof(RecordHead) + size_t{t.capacity} * sizeof(LogEntry);
  size_t size = (bytes + page - 1) / page * page;
  if (addr % page == 0) {
    std::string path = fmt::format("/proc/{}/map_files/{:x}-{:x}", tid, addr, addr + size);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    int seals = fd ? ::fcntl(fd.get(), F_GET_SEALS) : -1;
    if (fd && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) == size &&
        seals >= 0 && (seals & F_SEAL_SHRINK) != 0) {
      void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
      if (m != MAP_FAILED) {
        t.map = static_cast<const unsigned char*>(m);
        t.size = size;
      }
    }
  }
  threads_[tid] = t;
}

void Reader::exited(int tid) {
  auto it = threads_.find(tid);
  if (it != threads_.end()) it->second.exited = true;
}

bool Reader::read_thread(int tid, Thread& t, Join& join) {
  RecordHead h{};
  if (!copy(t, 0, &h, sizeof h)) return false;
  uint64_t head = h.head;
  if (head < t.tail || head - t.tail > (uint64_t{1} << 32)) {  // back, or 4 billion polls in 10 ms: not a
    ++bad_;                                                     // log annotate.h writes
    t.tail = head;
    return true;
  }
  if (head - t.tail > t.capacity) {
    lost_ += head - t.tail - t.capacity;
    t.tail = head - t.capacity;
  }
  std::vector<LogEntry> got;
  got.reserve(head - t.tail);
  for (uint64_t n = t.tail; n < head;) {
    uint64_t slot = n & (t.capacity - 1);
    uint64_t run = std::min<uint64_t>(head - n, t.capacity - slot);  // up to the log's end
    size_t at = got.size();
    got.resize(at + run);
    if (!copy(t, sizeof(RecordHead) + slot * sizeof(LogEntry), got.data() + at, run * sizeof(LogEntry))) return false;
    n += run;
  }
  // Entries the thread overwrote while they were copied are not kept.
  RecordHead again{};
  uint64_t safe_from = t.tail;
  if (copy(t, 0, &again, sizeof again) && again.head > t.capacity) {
    safe_from = std::max(safe_from, again.head - t.capacity);
  }
  for (uint64_t n = t.tail; n < head; ++n) {
    if (n < safe_from) {
      ++lost_;
      continue;
    }
    const LogEntry& e = got[n - t.tail];
    uint64_t begin = e.begin, end = e.end;
    if (t.clock != 0) {
      begin = counters_[t.clock].ns(begin);
      end = counters_[t.clock].ns(end);
    }
    join.poll(t.pid, tid, n, Poll{e.id, begin, end, (e.flags & 1) != 0});
  }
  t.tail = head;
  return true;
}

void Reader::read(Join& join) {
  // A point of every counter clock in use, before the polls that end before it are placed.
  bool used[3] = {};
  for (const auto& [tid, t] : threads_) used[t.clock] = true;
  for (uint32_t k = 1; k < 3; ++k) {
    if (used[k]) counters_[k].sample(k);
  }
  for (auto it = threads_.begin(); it != threads_.end();) {
    Thread& t = it->second;
    bool ok = read_thread(it->first, t, join);
    if (!ok || t.exited) {
      // (Its polls just read keep their events: they are taken in a later round.)
      if (t.map != nullptr) ::munmap(const_cast<unsigned char*>(t.map), t.size);
      it = threads_.erase(it);
      continue;
    }
    ++it;
  }
}

}  // namespace pm::contexts
