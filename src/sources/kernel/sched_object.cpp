// SPDX-License-Identifier: Apache-2.0
#include "sources/kernel/sched_object.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "sources/kernel/skeleton.h"

#include <linux/types.h>

// clang-format off
#include "scheduler.h"
#include "scheduler.skel.h"
// clang-format on

namespace pm {

// The most live tasks a scoped pass holds (a larger tree is read with the task iterator).
constexpr uint32_t kScopeTasks = 16384;

namespace {

// The most live tasks a walk of the top lists holds: twice the machine's threads at the start
// and room for 4,096 more, within [16,384, 65,536] records (3.4 to 13.6 MB of kernel memory).
// A machine that grows past it is read with the task iterator from then on.
uint32_t top_walk_records() {
  uint32_t threads = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "re")) {
    // "0.00 0.01 0.05 1/123 4567": runnable/total scheduling entities.
    if (std::fscanf(f, "%*f %*f %*f %*u/%u", &threads) != 1) threads = 0;
    std::fclose(f);
  }
  return std::clamp<uint32_t>(2 * threads + 4096, 16384, 65536);
}

// An array map of pm_task records, mapped read-only here (the walks' output).
struct MappedRecords {
  void* at = MAP_FAILED;
  size_t bytes = 0;
  MappedRecords() = default;
  MappedRecords(const MappedRecords&) = delete;
  MappedRecords& operator=(const MappedRecords&) = delete;
  ~MappedRecords() {
    if (at != MAP_FAILED) ::munmap(at, bytes);
  }
  bool map(const bpf_map* map) {
    size_t length = static_cast<size_t>(bpf_map__value_size(map)) * bpf_map__max_entries(map);
    auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    length = (length + page - 1) / page * page;
    void* mapped = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);
    if (mapped == MAP_FAILED) return false;
    at = mapped;
    bytes = length;
    return true;
  }
  const pm_task* records() const { return static_cast<const pm_task*>(at); }
};

// A cgroup iterator attached to one cgroup (0: the v2 root) in `order`; null where it cannot be.
bpf_link* attach_cgroup_iter(bpf_program* prog, uint64_t cgroup_id, bpf_cgroup_iter_order order) {
  union bpf_iter_link_info info {};
  info.cgroup.cgroup_id = cgroup_id;
  info.cgroup.order = order;
  bpf_iter_attach_opts opts{};
  opts.sz = sizeof opts;
  opts.link_info = &info;
  opts.link_info_len = sizeof info;
  return bpf_program__attach_iter(prog, &opts);
}

}  // namespace

struct SchedObject::Impl {
  SkeletonPtr<scheduler_bpf> skel{nullptr, scheduler_bpf::destroy};
  bool btf = true;
  bool tree = false;
  bool all = false;
  std::vector<char> bytes;  // the iterator's output, reused
  std::vector<std::pair<uint32_t, uint32_t>> order;  // (tid, record) of a walk, reused
  // A tree in a cgroup of its own: the cgroup iterator over it, and the array its passes fill
  // (mapped here); none where the kernel lacks them.
  bpf_link* scope_link = nullptr;
  MappedRecords scope_map;
  bool scope_overflowed = false;  // a walk found more tasks than the array holds: not used again
  // The top lists' walk of every task, and its array; none where the kernel lacks them.
  bpf_link* top_link = nullptr;
  MappedRecords top_map;
  bool top_overflowed = false;  // as scope_overflowed
  ~Impl() {
    for (bpf_link* link : {scope_link, top_link}) {
      if (link != nullptr) bpf_link__destroy(link);
    }
  }
  // Attaches the cgroup iterator to the tree's cgroup and everything below it, and maps the
  // array; on any failure the tree is read with the task iterator, as without a cgroup.
  void scope(uint64_t cgroup_id) {
    if (!scope_map.map(skel->maps.scope_tasks)) return;
    scope_link = attach_cgroup_iter(skel->progs.tree_scope_tasks, cgroup_id, BPF_CGROUP_ITER_DESCENDANTS_PRE);
  }
  // The top lists' walk, run once per pass (on the root cgroup alone); on any failure they are
  // read with the task iterator.
  void walk_all() {
    if (!top_map.map(skel->maps.top_records)) return;
    top_link = attach_cgroup_iter(skel->progs.top_walk, 0, BPF_CGROUP_ITER_SELF_ONLY);
  }
};

static_assert(static_cast<int>(TaskFig::kOnCpu) == PM_T_ON_CPU_NS && static_cast<int>(TaskFig::kUser) == PM_T_USER_NS &&
                  static_cast<int>(TaskFig::kSystem) == PM_T_SYSTEM_NS &&
                  static_cast<int>(TaskFig::kRunq) == PM_T_RUNQ_NS &&
                  static_cast<int>(TaskFig::kBlocked) == PM_T_BLOCKED_NS &&
                  static_cast<int>(TaskFig::kVoluntary) == PM_T_VOLUNTARY &&
                  static_cast<int>(TaskFig::kMinorFaults) == PM_T_MINOR_FAULTS &&
                  static_cast<int>(TaskFig::kRchar) == PM_T_RCHAR && static_cast<int>(TaskFig::kSyscr) == PM_T_SYSCR &&
                  static_cast<int>(TaskFig::kReadBytes) == PM_T_READ_BYTES &&
                  static_cast<int>(TaskFig::kMigrations) == PM_T_MIGRATIONS &&
                  static_cast<int>(TaskFig::kTaskFigs) == PM_T_FIGURES,
              "TaskFig (core/task_figures.h) is indexed as pm_task_figure (bpf/tree.h)");

TaskFigures task_figures(const __u64* fig) {
  TaskFigures f;
  for (int i = 0; i < PM_T_FIGURES; ++i) {
    bool ns =
        i == PM_T_ON_CPU_NS || i == PM_T_USER_NS || i == PM_T_SYSTEM_NS || i == PM_T_RUNQ_NS || i == PM_T_BLOCKED_NS;
    f.v[static_cast<size_t>(i)] = static_cast<double>(fig[i]) * (ns ? 1e-9 : 1.0);
  }
  return f;
}

SchedObject::SchedObject(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchedObject::~SchedObject() = default;

Result<std::shared_ptr<SchedObject>> SchedObject::load(const BpfLoadOptions& options) {
  auto impl = std::make_unique<Impl>();
  BpfLoadOptions target = options;
  target.members_fd = -1;  // the scheduler's object owns the membership map
  // A tree in a cgroup of its own is read by cgroup (kernels since 6.7 have the task list
  // iterator it needs); where that cannot load, the object loads without it.
  // PERF_MONITOR_TREE_WALK=tasks walks every task instead (to compare the two).
  const char* tree_walk = std::getenv("PERF_MONITOR_TREE_WALK");
  bool scoped = options.track_tree && options.tree_cgroup_id != 0 &&
                (tree_walk == nullptr || std::string_view(tree_walk) != "tasks");
  // The top lists walk every task in one program run (kernels that take an untrusted task as a
  // global function's argument); where that cannot load, the object loads without it and they
  // are read with the task iterator. PERF_MONITOR_TOP_WALK=tasks asks for that (to compare).
  const char* top_walk = std::getenv("PERF_MONITOR_TOP_WALK");
  bool walk = options.track_all && (top_walk == nullptr || std::string_view(top_walk) != "tasks");
  auto scope = [&scoped, &walk](scheduler_bpf* skel) {
    bool typed = bpf_program__autoload(skel->progs.btf_switch);
    if (!scoped) {
      bpf_program__set_autoload(skel->progs.tree_scope_tasks, false);
      bpf_program__set_autoload(skel->progs.tree_cgroup_attach, false);
    }
    if (!walk) bpf_program__set_autoload(skel->progs.top_walk, false);
    bpf_program__set_autoattach(skel->progs.tree_scope_tasks, false);  // attached to the cgroup below
    bpf_program__set_autoattach(skel->progs.top_walk, false);          // attached to the root below
    bpf_map__set_max_entries(skel->maps.scope_tasks, scoped ? kScopeTasks : 1);
    bpf_map__set_max_entries(skel->maps.top_records, walk && typed ? top_walk_records() : 1);
    // Run-queue stamps: the typed programs' pid-indexed array, or the raw_tp fallback's hash.
    bpf_map__set_max_entries(skel->maps.raw_runq_stamps,
                             typed ? static_cast<__u32>(std::max(1, libbpf_num_possible_cpus())) : PM_RAW_STAMPS);
    bpf_map__set_max_entries(skel->maps.runq_stamps, typed ? PM_RUNQ_STAMP_SLOTS : 1);
    bpf_map__set_max_entries(skel->maps.top_names, typed ? PM_RUNQ_STAMP_SLOTS : 1);
  };
  auto loaded = load_skeleton<scheduler_bpf>("scheduler", target, false, scope);
  // (Refused, the typed programs are loaded again as raw_tp, which list no tasks and follow no
  // tree: try without the top lists' walk, then without the tree's.)
  if (walk && (!loaded || !loaded->btf)) {
    walk = false;
    loaded = load_skeleton<scheduler_bpf>("scheduler", target, false, scope);
  }
  if (scoped && (!loaded || !loaded->tree)) {
    scoped = false;
    loaded = load_skeleton<scheduler_bpf>("scheduler", target, false, scope);
  }
  if (!loaded) return loaded.error();
  impl->skel = std::move(loaded->skel);
  impl->btf = loaded->btf;
  impl->tree = loaded->tree;
  impl->all = options.track_all && loaded->btf;
  if (scoped && impl->tree) impl->scope(options.tree_cgroup_id);
  if (walk && impl->all) impl->walk_all();
  return std::make_shared<SchedObject>(std::move(impl));
}

bool SchedObject::btf() const { return impl_->btf; }
bool SchedObject::follows_tree() const { return impl_->tree; }
int SchedObject::members_fd() const { return bpf_map__fd(impl_->skel->maps.members); }
int SchedObject::runq_stamps_fd() const { return btf() ? bpf_map__fd(impl_->skel->maps.runq_stamps) : -1; }
int SchedObject::switch_clock_fd() const { return btf() ? bpf_map__fd(impl_->skel->maps.switch_clock) : -1; }
int SchedObject::switch_chain_fd() const { return btf() ? bpf_map__fd(impl_->skel->maps.switch_chain) : -1; }
bpf_object* SchedObject::object() const { return impl_->skel->obj; }
uint64_t SchedObject::seeded_tasks() const { return impl_->skel->bss->seeded_tasks; }
uint64_t SchedObject::seeded_processes() const { return impl_->skel->bss->seeded_processes; }
uint64_t SchedObject::seed_failures() const { return impl_->skel->bss->seed_failures; }

namespace {

// One pass of the task iterator: everything it wrote, in `bytes` (its size is what was read;
// the buffer only grows, so a steady tree costs no allocation).
Status run_iterator(bpf_link* link, std::vector<char>& bytes, size_t& size) {
  size = 0;
  UniqueFd fd(bpf_iter_create(bpf_link__fd(link)));
  if (!fd) return Error::from_errno(errno, "reading the tree's tasks (BPF iterator)");
  for (;;) {
    if (bytes.size() - size < 64 * 1024) bytes.resize(std::max<size_t>(2 * bytes.size(), 256 * 1024));
    ssize_t n = ::read(fd.get(), bytes.data() + size, bytes.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno(errno, "reading the tree's tasks (BPF iterator)");
    if (n == 0) return {};
    size += static_cast<size_t>(n);
  }
}

}  // namespace

Result<size_t> SchedObject::seed(const std::vector<int>& tgids) {
  Impl& m = *impl_;
  if (!m.tree) return make_error(Errc::kUnavailable, "the scheduler programs do not follow a tree");
  int seeds = bpf_map__fd(m.skel->maps.seeds);
  __u8 one = 1;
  for (int tgid : tgids) {
    auto key = static_cast<__u32>(tgid);
    bpf_map_update_elem(seeds, &key, &one, BPF_ANY);
  }
  uint64_t before = m.skel->bss->seeded_processes;
  // While seeding, the fork hook also marks children of the seeds, so none forked during the
  // pass is missed; the pass marks every task the seeds have.
  m.skel->bss->seeding = true;
  size_t size = 0;
  Status st = run_iterator(m.skel->links.tree_tasks, m.bytes, size);
  m.skel->bss->seeding = false;
  for (int tgid : tgids) {
    auto key = static_cast<__u32>(tgid);
    bpf_map_delete_elem(seeds, &key);
  }
  if (!st) return st.error();
  return static_cast<size_t>(m.skel->bss->seeded_processes - before);
}

Status SchedObject::read_live(std::vector<pm_task>& out) {
  Impl& m = *impl_;
  out.clear();
  if (!m.tree) return {};
  auto* bss = m.skel->bss;
  if (m.scope_link != nullptr && !m.scope_overflowed && bss->scope_left == 0) {
    if (bss->scope_joined == 0) {
      bss->scope_count = 0;
      bss->scope_overflow = 0;
      size_t none = 0;
      if (auto st = run_iterator(m.scope_link, m.bytes, none); !st) return st;
      // A member that left during the walk is not in it: this reading walks every task too.
      if (bss->scope_overflow == 0 && bss->scope_left == 0) {
        const pm_task* first = m.scope_map.records();
        out.assign(first, first + std::min(bss->scope_count, kScopeTasks));
        return {};
      }
      // More tasks than the array holds: every task is walked from now on.
      if (bss->scope_overflow != 0) m.scope_overflowed = true;
    }
    // A task joined unmarked (the task iterator marks it), or one left, or too many.
    bss->scope_joined = 0;
  }
  size_t size = 0;
  if (auto st = run_iterator(m.skel->links.tree_tasks, m.bytes, size); !st) return st;
  size_t n = size / sizeof(pm_task);
  const auto* first = reinterpret_cast<const pm_task*>(m.bytes.data());  // NOLINT: records as written
  out.assign(first, first + n);
  return {};
}

bool SchedObject::tracks_all() const { return impl_->all; }

Status SchedObject::read_all(std::vector<pm_task>& out) {
  Impl& m = *impl_;
  out.clear();
  if (!m.all) return {};
  auto* bss = m.skel->bss;
  if (m.top_link != nullptr && !m.top_overflowed) {
    bss->top_count = 0;
    bss->top_overflow = 0;
    size_t none = 0;
    if (auto st = run_iterator(m.top_link, m.bytes, none); !st) return st;
    if (bss->top_overflow == 0) {
      // In tid order, as the task iterator gives them (the task list holds processes by age, each
      // one's threads together): the top model finds each task's last figures walking forward.
      const pm_task* first = m.top_map.records();
      auto n = static_cast<uint32_t>(std::min<size_t>(bss->top_count, bpf_map__max_entries(m.skel->maps.top_records)));
      m.order.clear();
      for (uint32_t i = 0; i < n; ++i) m.order.emplace_back(first[i].pid, i);
      std::sort(m.order.begin(), m.order.end());
      out.reserve(n);
      for (const auto& [tid, i] : m.order) out.push_back(first[i]);
      return {};
    }
    m.top_overflowed = true;  // more tasks than the array holds: the task iterator from now on
  }
  size_t size = 0;
  if (auto st = run_iterator(m.skel->links.top_tasks, m.bytes, size); !st) return st;
  const auto* first = reinterpret_cast<const pm_task*>(m.bytes.data());  // NOLINT: records as written
  out.assign(first, first + size / sizeof(pm_task));
  return {};
}

void SchedObject::take_exited(std::vector<std::pair<pm_process_key, pm_exited>>& out) {
  out.clear();
  if (!impl_->all) return;
  int fd = bpf_map__fd(impl_->skel->maps.exited);
  // Keys first, then each taken atomically: a death meanwhile makes a new entry, for next time.
  std::vector<pm_process_key> keys;
  pm_process_key key{}, next{};
  const pm_process_key* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    keys.push_back(next);
    key = next;
    prev = &key;
  }
  for (pm_process_key& k : keys) {
    pm_exited e{};
    if (bpf_map_lookup_and_delete_elem(fd, &k, &e) == 0) out.emplace_back(k, e);
  }
}

void SchedObject::take_made_cgroups(std::vector<std::pair<uint64_t, std::string>>& out) {
  out.clear();
  if (!impl_->all) return;
  int fd = bpf_map__fd(impl_->skel->maps.made_cgroups);
  pm_cgroup_made m{};
  while (out.size() < PM_MAX_MADE_CGROUPS && bpf_map_lookup_and_delete_elem(fd, nullptr, &m) == 0) {
    size_t n = strnlen(m.path, sizeof m.path);
    if (n + 1 >= sizeof m.path) continue;  // cut short: a walk names it, rather than a wrong name
    out.emplace_back(m.cgroup_id, std::string(m.path, n));
  }
}

void SchedObject::take_moves(std::vector<pm_move>& out) {
  out.clear();
  if (!impl_->all) return;
  int fd = bpf_map__fd(impl_->skel->maps.moves);
  pm_move m{};
  while (out.size() < PM_MAX_MOVES && bpf_map_lookup_and_delete_elem(fd, nullptr, &m) == 0) out.push_back(m);
}

bool SchedObject::read_cgroup_runq(std::vector<CgroupRunq>& out) const {
  out.clear();
  const Impl& m = *impl_;
  __u32 handed = m.skel->bss->next_slot;  // slots asked for so far, also those refused
  __u32 slots = std::min<__u32>(handed, PM_MAX_CGROUP_SLOTS);
  if (slots == 0) return true;
  auto cpus = static_cast<size_t>(libbpf_num_possible_cpus());
  int ids_fd = bpf_map__fd(m.skel->maps.slot_cgroups), runq_fd = bpf_map__fd(m.skel->maps.cgroup_runq);
  static_assert(sizeof(pm_cgroup_runq) % 8 == 0, "a per-CPU value is laid out at its size");
  // Slots 0..slots, each map in one call (a thousand cgroups: two system calls, not two
  // thousand); a kernel without batch lookups is asked slot by slot.
  std::vector<__u32> keys(slots + 1);
  std::vector<__u64> ids(slots + 1);
  std::vector<pm_cgroup_runq> values((slots + 1) * cpus);
  auto batch = [&](int fd, void* vals) {
    __u32 count = slots + 1, next = 0;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    int err = bpf_map_lookup_batch(fd, nullptr, &next, keys.data(), vals, &count, &opts);
    return (err == 0 || errno == ENOENT) && count == slots + 1;
  };
  bool batched = batch(ids_fd, ids.data()) && batch(runq_fd, values.data());
  for (__u32 slot = 1; slot <= slots; ++slot) {
    pm_cgroup_runq* per_cpu = &values[slot * cpus];
    if (!batched) {
      if (bpf_map_lookup_elem(ids_fd, &slot, &ids[slot]) != 0) continue;
      if (ids[slot] != 0 && bpf_map_lookup_elem(runq_fd, &slot, per_cpu) != 0) continue;
    }
    if (ids[slot] == 0) continue;  // asked for, not yet given its cgroup
    CgroupRunq r;
    r.cgroup_id = ids[slot];
    r.hist.assign(PM_RUNQ_BUCKETS, 0);
    for (size_t c = 0; c < cpus; ++c) {
      r.count += per_cpu[c].count;
      r.ns += per_cpu[c].ns;
      for (size_t b = 0; b < PM_RUNQ_BUCKETS; ++b) r.hist[b] += per_cpu[c].hist[b];
    }
    out.push_back(std::move(r));
  }
  return handed <= PM_MAX_CGROUP_SLOTS;
}

std::pair<uint64_t, uint64_t> SchedObject::top_losses() const {
  std::vector<pm_top_losses> per_cpu;
  std::pair<uint64_t, uint64_t> sum{0, 0};
  if (!read_per_cpu(bpf_map__fd(impl_->skel->maps.top_losses), per_cpu)) return sum;
  for (const pm_top_losses& l : per_cpu) {
    sum.first += l.exits_dropped;
    sum.second += l.cgroups_over;
  }
  return sum;
}

uint64_t SchedObject::moves_dropped() const {
  std::vector<pm_top_losses> per_cpu;
  uint64_t sum = 0;
  if (!read_per_cpu(bpf_map__fd(impl_->skel->maps.top_losses), per_cpu)) return sum;
  for (const pm_top_losses& l : per_cpu) sum += l.moves_dropped;
  return sum;
}

bool SchedObject::read_counters(std::vector<pm_sched_counters>& per_cpu) const {
  return read_per_cpu(bpf_map__fd(impl_->skel->maps.counters), per_cpu);
}

bool SchedObject::read_tree(std::vector<pm_tree_stats>& per_cpu) const {
  return read_per_cpu(bpf_map__fd(impl_->skel->maps.tree), per_cpu);
}

}  // namespace pm
