#include "sources/kernel/sched_object.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sources/kernel/skeleton.h"

#include <linux/types.h>

// clang-format off
#include "scheduler.h"
#include "scheduler.skel.h"
// clang-format on

namespace pm {

struct SchedObject::Impl {
  SkeletonPtr<scheduler_bpf> skel{nullptr, scheduler_bpf::destroy};
  bool btf = true;
  bool tree = false;
  std::vector<char> bytes;  // the iterator's output, reused
};

SchedObject::SchedObject(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchedObject::~SchedObject() = default;

Result<std::shared_ptr<SchedObject>> SchedObject::load(const SchedObjectOptions& options) {
  auto impl = std::make_unique<Impl>();
  TreeTarget target;
  target.track_tree = options.track_tree;
  target.hist_unit_ns = options.hist_unit_ns;
  target.count_system = options.count_system;
  auto loaded = load_skeleton<scheduler_bpf>("scheduler", target);
  if (!loaded) return loaded.error();
  impl->skel = std::move(loaded->skel);
  impl->btf = loaded->btf;
  impl->tree = loaded->tree;
  return std::make_shared<SchedObject>(std::move(impl));
}

bool SchedObject::btf() const { return impl_->btf; }
bool SchedObject::follows_tree() const { return impl_->tree; }
int SchedObject::members_fd() const { return bpf_map__fd(impl_->skel->maps.members); }
bpf_object* SchedObject::object() const { return impl_->skel->obj; }
uint64_t SchedObject::seeded_tasks() const { return impl_->skel->bss->seeded_tasks; }
uint64_t SchedObject::seeded_processes() const { return impl_->skel->bss->seeded_processes; }
uint64_t SchedObject::seed_failures() const { return impl_->skel->bss->seed_failures; }

namespace {

// One pass of the task iterator: everything it wrote, appended to `bytes`.
Status run_iterator(bpf_link* link, std::vector<char>& bytes) {
  bytes.clear();
  UniqueFd fd(bpf_iter_create(bpf_link__fd(link)));
  if (!fd) return Error::from_errno(errno, "reading the tree's tasks (BPF iterator)");
  constexpr size_t kChunk = 64 * 1024;
  for (;;) {
    size_t at = bytes.size();
    bytes.resize(at + kChunk);
    ssize_t n = ::read(fd.get(), bytes.data() + at, kChunk);
    if (n < 0 && errno == EINTR) {
      bytes.resize(at);
      continue;
    }
    if (n < 0) {
      bytes.resize(at);
      return Error::from_errno(errno, "reading the tree's tasks (BPF iterator)");
    }
    bytes.resize(at + static_cast<size_t>(n));
    if (n == 0) return {};
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
  Status st = run_iterator(m.skel->links.tree_tasks, m.bytes);
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
  if (auto st = run_iterator(m.skel->links.tree_tasks, m.bytes); !st) return st;
  size_t n = m.bytes.size() / sizeof(pm_task);
  out.resize(n);
  if (n > 0) std::memcpy(out.data(), m.bytes.data(), n * sizeof(pm_task));
  return {};
}

bool SchedObject::read_counters(std::vector<pm_sched_counters>& per_cpu) const {
  return read_per_cpu(bpf_map__fd(impl_->skel->maps.counters), per_cpu);
}

bool SchedObject::read_tree(std::vector<pm_tree_stats>& per_cpu) const {
  return read_per_cpu(bpf_map__fd(impl_->skel->maps.tree), per_cpu);
}

}  // namespace pm
