// SPDX-License-Identifier: Apache-2.0
#include "sources/kernel/sched_object.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
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
  size_t size = 0;
  if (auto st = run_iterator(m.skel->links.tree_tasks, m.bytes, size); !st) return st;
  size_t n = size / sizeof(pm_task);
  const auto* first = reinterpret_cast<const pm_task*>(m.bytes.data());  // NOLINT: records as written
  out.assign(first, first + n);
  return {};
}

bool SchedObject::read_counters(std::vector<pm_sched_counters>& per_cpu) const {
  return read_per_cpu(bpf_map__fd(impl_->skel->maps.counters), per_cpu);
}

bool SchedObject::read_tree(std::vector<pm_tree_stats>& per_cpu) const {
  return read_per_cpu(bpf_map__fd(impl_->skel->maps.tree), per_cpu);
}

}  // namespace pm
