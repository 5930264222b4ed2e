// SPDX-License-Identifier: Apache-2.0
#include "sources/stacks/stack_source.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/fd.h"
#include "core/file_reader.h"
#include "core/outside_text.h"
#include "core/text_layout.h"
#include "sources/kernel/skeleton.h"
#include "sources/stacks/kernel_symbols.h"
#include "sources/stacks/unwinder.h"

// clang-format off
#include "scheduler.h"  // the switch chain's slots
#include "stacks.h"
#include "stacks.skel.h"
// clang-format on

namespace pm {
namespace {

using K = MetricKind;
void stacks_text(TextBlock& b);
const MetricDesc kSamples = shown_by(stacks_text, {"stacks", "samples", K::kCounter, Unit::kNone,
                                                   "On-CPU samples of the target (each stands for 1/rate s of CPU)"});
const MetricDesc kLost =
    shown_by(stacks_text, {"stacks", "lost", K::kCounter, Unit::kNone,
                           "Stack records the ring buffer had no room for, and off-CPU stretches that found no place"});

// stacks   99 samples (99.0/s)  lost 0
// (the summary lists the top stacks instead: text_sink)
void stacks_text(TextBlock& b) {
  const Shown* samples = b.take(kSamples);
  const Shown* lost = b.take(kLost);
  if (b.summary() || samples == nullptr) return;
  std::string s = "on-CPU samples " + counted(b, *samples);
  if (lost != nullptr && lost->value > 0) s += "  lost " + counted(b, *lost);
  b.line(text_order::kProbe + 90, "stacks", s);
}

constexpr size_t kPtRegsSp = 19;

uint64_t period_ns(int rate_hz) { return 1'000'000'000ULL / static_cast<uint64_t>(std::max(rate_hz, 1)); }  // x86-64 pt_regs: sp

// A stack's frames and each one's line (empty: no lines), as one key.
std::string join(const std::vector<std::string>& frames, const std::vector<SourceLine>& lines) {
  std::string s;
  for (size_t i = 0; i < frames.size(); ++i) {
    s += frames[i];
    if (i < lines.size()) {
      s += '\t';
      s += lines[i].file;
      s += ':';
      s += std::to_string(lines[i].line);
    }
    s += '\n';
  }
  return s;
}

// A stack and its source lines, as named.
struct Named {
  std::vector<std::string> frames;
  std::vector<SourceLine> lines;  // one per frame
};

struct Table {
  std::unordered_map<std::string, size_t> index;
  std::vector<StackProfile::Entry> entries;
  size_t index_of(std::vector<std::string> frames, std::vector<SourceLine> lines = {}) {
    std::string key = join(frames, lines);
    auto [it, fresh] = index.emplace(std::move(key), entries.size());
    if (fresh) entries.push_back({std::move(frames), 0, 0, std::move(lines)});
    return it->second;
  }
  StackProfile::Entry& at(Named named) { return entries[index_of(std::move(named.frames), std::move(named.lines))]; }
};

// The entries told apart by line, summed by frames alone (their lines left out).
std::vector<StackProfile::Entry> by_frames(const std::vector<StackProfile::Entry>& with_lines) {
  Table t;
  for (const StackProfile::Entry& e : with_lines) {
    StackProfile::Entry& sum = t.entries[t.index_of(e.frames)];
    sum.value += e.value;
    sum.count += e.count;
  }
  return std::move(t.entries);
}

constexpr size_t kMaxRawStacks = 200000;
// Where a request blocked: stretches off the CPU of 100 us or more, kept per thread (the last
// kStretchesPerThread of each of at most kStretchThreads threads), joined with each span as it
// comes; the kSlowSpans slowest spans of each function keep the place they blocked at most.
constexpr uint64_t kStretchMinNs = 100000;
constexpr size_t kStretchesPerThread = 1024;
constexpr size_t kStretchThreads = 8192;
constexpr size_t kSlowSpans = 16;  // on-CPU stacks known by their pcs (then forgotten, and named again)

template <typename T>
void put(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

struct KeyLess {
  bool operator()(const pm_off_key& a, const pm_off_key& b) const { return std::memcmp(&a, &b, sizeof a) < 0; }
};

}  // namespace

struct StackSource::Impl {
  Config::Stacks config;
  SkeletonPtr<stacks_bpf> skel{nullptr, stacks_bpf::destroy};
  std::vector<UniqueFd> perf_fds;
  std::vector<bpf_link*> links;
  ChainSlot chained;  // off_switch, in the scheduler object's switch chain
  std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> ring{nullptr, ring_buffer__free};
  stacks::Unwinder unwinder;
  stacks::KernelSymbols ksyms;
  std::unordered_map<int32_t, std::vector<std::string>> kernel_stacks;  // by stack id, outermost first
  Table on_cpu;
  // An on-CPU stack by what was sampled (the address space, thread name, kernel stack and user
  // pcs): a stack sampled again is counted without naming its frames again.
  std::unordered_map<std::string, size_t> on_cpu_raw;
  std::map<pm_off_key, Named, KeyLess> places;  // off-CPU place -> its frames
  std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> stretch_ring{nullptr, ring_buffer__free};
  std::unordered_map<uint32_t, std::deque<pm_stretch>> stretches;  // by thread, oldest first
  struct Blocked {
    int pid = 0, tid = 0;
    WallClock::time_point start;
    double seconds = 0;
    pm_off_key place{};
    double place_seconds = 0;
  };
  std::map<std::string, std::vector<Blocked>> slow;  // by function, slowest first
  WallClock::time_point wall_at_mono_zero;
  std::shared_ptr<StackProfile> profile = std::make_shared<StackProfile>();
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  bool finished = false;

  ~Impl() { detach(); }

  void detach() {
    chained = ChainSlot();
    for (bpf_link* l : links) bpf_link__destroy(l);
    links.clear();
    perf_fds.clear();
  }

  const std::vector<std::string>& kernel_frames(int32_t id) {
    auto it = kernel_stacks.find(id);
    if (it != kernel_stacks.end()) return it->second;
    std::vector<std::string> frames;
    if (id >= 0) {
      std::vector<uint64_t> ips(PM_STACK_DEPTH, 0);
      if (bpf_map__lookup_elem(skel->maps.kstacks, &id, sizeof id, ips.data(), ips.size() * sizeof(uint64_t), 0) == 0) {
        for (uint64_t ip : ips) {
          if (ip == 0) break;
          frames.push_back(ksyms.name(ip) + "_[k]");
        }
        // At a switch the innermost frames are the tracepoint's way into perf-monitor's own
        // program: not the thread's.
        size_t own = 0;
        for (const std::string& f : frames) {
          std::string_view n(f);
          if (!n.starts_with("bpf_prog_") && !n.starts_with("bpf_trace_run") && !n.starts_with("__traceiter_") &&
              !n.starts_with("__bpf_trace_")) {
            break;
          }
          own++;
        }
        frames.erase(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(own));
        std::reverse(frames.begin(), frames.end());
      }
    }
    return kernel_stacks.emplace(id, std::move(frames)).first->second;
  }

  std::vector<uint64_t> pcs_of(const pm_stack_record& r, bool once) {
    if (r.user == 0) return {};
    stacks::UserState st;
    st.regs = std::span<const uint64_t>(reinterpret_cast<const uint64_t*>(r.regs), PM_STACK_REGS);
    st.stack_start = reinterpret_cast<const uint64_t*>(r.regs)[kPtRegsSp];
    st.stack = std::span<const uint8_t>(r.stack, std::min<size_t>(r.stack_len, sizeof r.stack));
    return unwinder.walk({r.tgid, r.mm, r.exec_id}, r.pid, r.time_ns, st, once);
  }

  // A record walked, its frames not yet named: every record that came is walked first (while
  // its process still has the mappings it had), then named (which may read debug files: slow).
  struct Walked {
    uint32_t kind = 0, tgid = 0;
    uint64_t mm = 0, exec_id = 0;
    int32_t kstack = -1;
    char comm[16] = {};
    pm_off_key key{};
    std::vector<uint64_t> pcs;
  };
  std::vector<Walked> walked;

  // The thread's name, its user frames, its kernel frames; lines for the user frames only.
  Named frames_of(const Walked& r) {
    Named out;
    out.frames.push_back(clean_utf8(std::string_view(r.comm, strnlen(r.comm, sizeof r.comm))));
    out.lines.emplace_back();
    stacks::Frames user = unwinder.name({r.tgid, r.mm, r.exec_id}, r.pcs, &out.lines);
    out.frames.insert(out.frames.end(), user.begin(), user.end());
    const auto& k = kernel_frames(r.kstack);
    out.frames.insert(out.frames.end(), k.begin(), k.end());
    out.lines.resize(out.frames.size());
    return out;
  }

  void take_on_cpu(const Walked& r) {
    const std::vector<uint64_t>& pcs = r.pcs;
    std::string raw;
    raw.reserve(48 + pcs.size() * sizeof(uint64_t));
    put(raw, r.tgid);
    put(raw, r.mm);
    put(raw, r.exec_id);
    put(raw, r.kstack);
    raw.append(r.comm, sizeof r.comm);
    for (uint64_t pc : pcs) put(raw, pc);
    auto it = on_cpu_raw.find(raw);
    if (it == on_cpu_raw.end()) {
      if (on_cpu_raw.size() >= kMaxRawStacks) on_cpu_raw.clear();
      Named named = frames_of(r);
      it = on_cpu_raw.emplace(std::move(raw), on_cpu.index_of(std::move(named.frames), std::move(named.lines))).first;
    }
    StackProfile::Entry& e = on_cpu.entries[it->second];
    e.value++;
    e.count++;
  }

  static int on_stretch(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    if (size < sizeof(pm_stretch)) return 0;
    const auto& e = *static_cast<const pm_stretch*>(data);
    auto& list = self->stretches[e.key.pid];
    if (self->stretches.size() > kStretchThreads) {  // threads long gone make room
      self->stretches.clear();
      return 0;
    }
    list.push_back(e);
    if (list.size() > kStretchesPerThread) list.pop_front();
    return 0;
  }

  // The place where the span's thread was off the CPU longest during it.
  void see(const Span& sp) {
    if (sp.tid <= 0 || sp.polls > 0 || !sp.trace_id.empty()) return;  // one thread's spans only
    auto& list = slow[sp.function];
    if (list.size() >= kSlowSpans && list.back().seconds >= sp.seconds) return;
    ring_buffer__consume(stretch_ring.get());  // what the kernel sent up to the span's end
    auto mono = [&](WallClock::time_point t) {
      return static_cast<uint64_t>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::nanoseconds>(t - wall_at_mono_zero).count()));
    };
    uint64_t from = mono(sp.start), to = from + static_cast<uint64_t>(sp.seconds * 1e9);
    std::map<pm_off_key, uint64_t, KeyLess> by_place;
    if (auto it = stretches.find(static_cast<uint32_t>(sp.tid)); it != stretches.end()) {
      for (const pm_stretch& e : it->second) {
        uint64_t lo = std::max<uint64_t>(e.out_ns, from), hi = std::min<uint64_t>(e.in_ns, to);
        if (hi > lo) by_place[e.key] += hi - lo;
      }
    }
    Blocked b{sp.pid, sp.tid, sp.start, sp.seconds, {}, 0};
    for (const auto& [key, ns] : by_place) {
      if (static_cast<double>(ns) * 1e-9 > b.place_seconds) {
        b.place = key;
        b.place_seconds = static_cast<double>(ns) * 1e-9;
      }
    }
    auto at = std::find_if(list.begin(), list.end(), [&](const Blocked& o) { return o.seconds < sp.seconds; });
    list.insert(at, b);
    if (list.size() > kSlowSpans) list.pop_back();
  }

  static int on_record(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    if (size < sizeof(pm_stack_record)) return 0;
    const auto& r = *static_cast<const pm_stack_record*>(data);
    if (r.kind != PM_STACK_ON_CPU && r.kind != PM_STACK_OFF_CPU) return 0;
    Walked w;
    w.kind = r.kind;
    w.tgid = r.tgid;
    w.mm = r.mm;
    w.exec_id = r.exec_id;
    w.kstack = r.kstack;
    std::memcpy(w.comm, r.comm, sizeof w.comm);
    w.key = r.key;
    w.pcs = self->pcs_of(r, r.kind == PM_STACK_OFF_CPU);  // an off-CPU place is named once, for good
    self->walked.push_back(std::move(w));
    return 0;
  }

  // Every record that came, walked; then each named and counted.
  void drain() {
    ring_buffer__consume(ring.get());
    for (const Walked& w : walked) {
      if (w.kind == PM_STACK_ON_CPU) {
        take_on_cpu(w);
      } else {
        places[w.key] = frames_of(w);
      }
    }
    walked.clear();
  }

  pm_stack_counters counters() const {
    std::vector<pm_stack_counters> per_cpu;
    if (!read_per_cpu(bpf_map__fd(skel->maps.counters), per_cpu)) return {};
    return sum_counters(per_cpu);
  }

  // Every place's time, once, at the end: a place whose record was lost keeps its kernel frames.
  void read_off_cpu(Table& off) {
    int fd = bpf_map__fd(skel->maps.off_slots);
    int values = bpf_map__fd(skel->maps.off_values);
    pm_off_key key{}, next{};
    pm_off_key* prev = nullptr;
    while (bpf_map_get_next_key(fd, prev, &next) == 0) {
      key = next;
      prev = &key;
      uint32_t slot = 0;
      pm_off_value v{};
      if (bpf_map_lookup_elem(fd, &key, &slot) != 0 || bpf_map_lookup_elem(values, &slot, &v) != 0 || v.ns == 0) {
        continue;
      }
      Named named;
      if (auto it = places.find(key); it != places.end()) {
        named = it->second;
      } else {
        named.frames.push_back("[unknown]");
        const auto& k = kernel_frames(key.kstack);
        named.frames.insert(named.frames.end(), k.begin(), k.end());
        named.lines.resize(named.frames.size());
      }
      StackProfile::Entry& e = off.at(std::move(named));
      e.value += v.ns;
      e.count += v.switches;
    }
  }
};

StackSource::StackSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StackSource::~StackSource() = default;

Result<std::unique_ptr<StackSource>> StackSource::create(const Config::Stacks& config, const BpfLoadOptions& target) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  bool off = config.off_cpu;
  int chain = off ? target.switch_chain_fd : -1;
  auto loaded = load_skeleton<stacks_bpf>("stacks", target, /*btf_only=*/true, [off, chain](stacks_bpf* s) {
    bpf_program__set_autoload(s->progs.off_switch, off);
    if (chain >= 0) bpf_program__set_autoattach(s->progs.off_switch, false);  // the scheduler's ends in it
    s->rodata->stretch_min_ns = off ? kStretchMinNs : 0;
    if (!off) {  // their preallocated room unused
      bpf_map__set_max_entries(s->maps.off_slots, 1);
      bpf_map__set_max_entries(s->maps.off_values, 1);
    }
  });
  if (!loaded) return loaded.error();
  impl->skel = std::move(loaded->skel);
  bpf_link* own = nullptr;
  auto slot = chain_or_attach(impl->skel->progs.off_switch, chain, PM_CHAIN_OFF_CPU, &own, &impl->skel->bss->in_chain);
  if (!slot) return slot.error();
  impl->chained = std::move(*slot);
  if (own != nullptr) impl->links.push_back(own);
  impl->ksyms = stacks::KernelSymbols::load();
  // Each process's mapped files are held open (and libdw holds its modules'): as many open files
  // as the hard limit allows, as `run` asks for its tree.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  impl->ring.reset(ring_buffer__new(bpf_map__fd(impl->skel->maps.records), &Impl::on_record, impl.get(), nullptr));
  if (!impl->ring) return Error::from_errno(errno, "opening the stacks' ring buffer");
  impl->stretch_ring.reset(
      ring_buffer__new(bpf_map__fd(impl->skel->maps.stretches), &Impl::on_stretch, impl.get(), nullptr));
  if (!impl->stretch_ring) return Error::from_errno(errno, "opening the stacks' ring buffer");
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  impl->wall_at_mono_zero = WallClock::now() - std::chrono::duration_cast<WallClock::duration>(
                                                   std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  if (config.on_cpu) {
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.sample_period = period_ns(config.rate_hz);
    for (int cpu : online_cpus()) {
      int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
      if (fd < 0) return Error::from_errno(errno, "opening the cpu-clock sampling event on CPU " + std::to_string(cpu));
      impl->perf_fds.emplace_back(fd);
      bpf_link* link = bpf_program__attach_perf_event(impl->skel->progs.on_cpu_sample, fd);
      if (link == nullptr) return Error::from_errno(errno, "attaching the on-CPU sampling program");
      impl->links.push_back(link);
    }
  }
  impl->profile->on_cpu_wanted = config.on_cpu;
  impl->profile->off_cpu_wanted = config.off_cpu;
  impl->profile->period_ns = period_ns(config.rate_hz);
  impl->profile->start_unix_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  return std::make_unique<StackSource>(std::move(impl));
}

bool StackSource::sees_spans() const { return impl_->config.off_cpu; }

void StackSource::see_span(const Span& span) { impl_->see(span); }

int StackSource::wake_fd() const { return ring_buffer__epoll_fd(impl_->ring.get()); }

void StackSource::on_wake() { impl_->drain(); }

void StackSource::collect(Samples& out) {
  impl_->drain();  // what did not wake it (see bpf/stacks.bpf.c)
  ring_buffer__consume(impl_->stretch_ring.get());
  pm_stack_counters c = impl_->counters();
  out.push_back({&kSamples, {}, static_cast<double>(c.samples)});
  out.push_back({&kLost, {}, static_cast<double>(c.records_lost + c.off_slots_full)});
}

void StackSource::finish() {
  Impl& m = *impl_;
  if (m.finished) return;
  m.finished = true;
  m.detach();  // no more samples
  m.drain();
  ring_buffer__consume(m.stretch_ring.get());
  StackProfile& p = *m.profile;
  p.duration_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - m.start).count());
  Table off;
  if (m.config.off_cpu) m.read_off_cpu(off);
  auto by_value = [](const StackProfile::Entry& a, const StackProfile::Entry& b) {
    return a.value != b.value ? a.value > b.value : a.frames < b.frames;
  };
  p.on_cpu_lines = std::move(m.on_cpu.entries);
  p.off_cpu_lines = std::move(off.entries);
  p.on_cpu = by_frames(p.on_cpu_lines);
  p.off_cpu = by_frames(p.off_cpu_lines);
  for (auto* list : {&p.on_cpu, &p.off_cpu, &p.on_cpu_lines, &p.off_cpu_lines}) {
    std::sort(list->begin(), list->end(), by_value);
  }
  pm_stack_counters c = m.counters();
  p.records_lost = c.records_lost;
  p.off_lost_ns = c.off_lost_ns;
  p.kernel_stacks_lost = c.kstack_lost;
}

void StackSource::report(EndReport& r) const {
  r.stacks = impl_->profile;
  // The slowest requests (the probes' report, made before this one): where each blocked.
  for (Span& sp : r.slowest_requests) {
    auto list = impl_->slow.find(sp.function);
    if (list == impl_->slow.end()) continue;
    for (const Impl::Blocked& b : list->second) {
      if (b.tid != sp.tid || b.pid != sp.pid || b.start != sp.start || b.place_seconds <= 0) continue;
      auto place = impl_->places.find(b.place);
      if (place == impl_->places.end()) break;
      sp.blocked_stack = place->second.frames;
      sp.blocked_stack_lines = place->second.lines;
      sp.blocked_stack_seconds = b.place_seconds;
      break;
    }
  }
}

}  // namespace pm
