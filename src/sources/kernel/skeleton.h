// SPDX-License-Identifier: Apache-2.0
// Loading a bpftool skeleton the way every kernel source here does: tp_btf programs where the
// kernel has BTF, else the raw_tp twins (programs are named btf_* and raw_*, and autoload is
// switched off for the pair not used; other programs are attached by their source). Programs
// named tree_* serve only a followed tree, and top_* only the top lists; each is loaded only then. A tree is followed only by
// typed programs (task storage): where they cannot load, the raw_tp fallback runs without it.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/fd.h"
#include "sources/kernel/bpf_load_options.h"

namespace pm {

template <typename Skel>
using SkeletonPtr = std::unique_ptr<Skel, void (*)(Skel*)>;

template <typename Skel>
struct LoadedSkeleton {
  SkeletonPtr<Skel> skel;
  bool btf;   // tp_btf programs (else raw_tp)
  bool tree;  // it follows the target tree (asked for, and typed programs loaded)
};

namespace detail {

template <typename Skel>
using BeforeLoad = std::function<void(Skel*)>;

template <typename Skel>
Result<SkeletonPtr<Skel>> load_as(const std::string& what, bool btf, const BpfLoadOptions& target,
                                  const BeforeLoad<Skel>& before_load) {
  SkeletonPtr<Skel> skel(Skel::open(), Skel::destroy);
  if (!skel) return Error::from_errno(errno, "opening the " + what + " BPF programs");
  bool tree = target.track_tree && btf;
  skel->rodata->track_tree = tree;
  skel->rodata->hist_unit_ns = target.hist_unit_ns;
  if constexpr (requires { skel->rodata->count_system; }) skel->rodata->count_system = target.count_system;
  // Every task, and cgroup storage: typed programs only.
  if constexpr (requires { skel->rodata->track_all; }) skel->rodata->track_all = target.track_all && btf;
  if constexpr (requires { skel->rodata->cgroup_depth; }) skel->rodata->cgroup_depth = btf ? target.cgroup_depth : 0;
  if constexpr (requires { skel->rodata->tree_cgroup_id; }) {
    skel->rodata->tree_cgroup_id = tree ? target.tree_cgroup_id : 0;
  }
  // Objects that sum per-CPU counters (an mm's RSS): over how many CPUs.
  if constexpr (requires { skel->rodata->pm_nr_cpus; }) {
    skel->rodata->pm_nr_cpus = static_cast<__u32>(std::max(libbpf_num_possible_cpus(), 0));
  }
  // Objects that filter out perf-monitor's own threads in the kernel.
  if constexpr (requires { skel->rodata->self_tgid; }) skel->rodata->self_tgid = static_cast<__u32>(::getpid());
  // Objects whose switch program runs after the scheduler's: its clock, and its chain.
  if constexpr (requires { skel->rodata->shared_clock; }) {
    skel->rodata->shared_clock = btf && target.switch_clock_fd >= 0 &&
                                 bpf_map__reuse_fd(skel->maps.switch_clock, target.switch_clock_fd) == 0;
    if (btf && target.switch_chain_fd >= 0) (void)bpf_map__reuse_fd(skel->maps.switch_chain, target.switch_chain_fd);
  }
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    std::string_view name = bpf_program__name(prog);
    // Programs of neither family (uprobes, USDT) are attached by hand, and always loaded.
    bool twin = name.starts_with("btf_") || name.starts_with("raw_");
    bool family = !twin || name.substr(0, 4) == (btf ? "btf_" : "raw_");
    bool needed = (tree || !name.starts_with("tree_")) &&  // nothing to follow: no tree hooks
                  ((target.track_all && btf) || !name.starts_with("top_"));
    bpf_program__set_autoload(prog, family && needed);
  }
  if (tree && target.members_fd >= 0) {
    if (int err = bpf_map__reuse_fd(skel->maps.members, target.members_fd); err != 0) {
      return Error::from_errno(-err, "sharing the tree's membership with the " + what + " programs");
    }
  }
  if (before_load) before_load(skel.get());
  if (int err = Skel::load(skel.get()); err != 0) {
    // EACCES from a load is the verifier's refusal, EPERM a missing capability.
    if (err == -EACCES)
      return make_error(Errc::kUnavailable, "the kernel's verifier refused the " + what + " programs");
    Error e = Error::from_errno(-err, "loading the " + what + " BPF programs");
    if (e.code == Errc::kPermissionDenied) e.message += " (run as root: loading BPF needs CAP_BPF and CAP_PERFMON)";
    return e;
  }
  if (int err = Skel::attach(skel.get()); err != 0) {
    return Error::from_errno(-err, "attaching the " + what + " BPF programs");
  }
  return skel;
}

}  // namespace detail

// btf_only: an object with tp_btf programs and no raw_tp twins (it needs what only typed
// programs can do, such as task storage); where tp_btf cannot load, it is unavailable.
// before_load: a last change to the opened object (a program's expected attach type, say).
template <typename Skel>
Result<LoadedSkeleton<Skel>> load_skeleton(const std::string& what, const BpfLoadOptions& target, bool btf_only = false,
                                           const detail::BeforeLoad<Skel>& before_load = {}) {
  // libbpf's own chatter would break the one-line error rule; PERF_MONITOR_BPF_DEBUG=1 keeps it
  // (the verifier's log, when it refuses a program).
  if (std::getenv("PERF_MONITOR_BPF_DEBUG") == nullptr) libbpf_set_print(nullptr);
  // PERF_MONITOR_BPF_ATTACH=raw_tp forces the fallback (to check it on a kernel that would not
  // need it).
  const char* force = std::getenv("PERF_MONITOR_BPF_ATTACH");
  bool has_btf = ::access("/sys/kernel/btf/vmlinux", R_OK) == 0;
  if (btf_only && !has_btf) {
    return make_error(Errc::kUnavailable, "the " + what + " programs need a kernel with BTF (/sys/kernel/btf/vmlinux)");
  }
  bool btf = has_btf && (btf_only || !(force != nullptr && std::string_view(force) == "raw_tp"));
  auto skel = detail::load_as<Skel>(what, btf, target, before_load);
  if (!skel && btf && !btf_only) {
    btf = false;  // tp_btf refused (an old kernel, a restricted one): raw tracepoints
    skel = detail::load_as<Skel>(what, false, target, before_load);
  }
  if (!skel) return skel.error();
  return LoadedSkeleton<Skel>{std::move(*skel), btf, target.track_tree && btf};
}

// A slot of the scheduler object's switch chain (bpf/switch_chain.bpf.h) that holds a source's
// switch program: emptied when dropped, so the program stops with its source.
class ChainSlot {
 public:
  ChainSlot() = default;
  ChainSlot(UniqueFd chain, uint32_t slot) : chain_(std::move(chain)), slot_(slot) {}
  ChainSlot(ChainSlot&&) noexcept = default;
  ChainSlot& operator=(ChainSlot&& other) noexcept {
    if (this != &other) {
      empty();
      chain_ = std::move(other.chain_);
      slot_ = other.slot_;
    }
    return *this;
  }
  ~ChainSlot() { empty(); }

 private:
  void empty() {
    if (chain_) (void)bpf_map_delete_elem(chain_.get(), &slot_);
  }
  UniqueFd chain_;
  uint32_t slot_ = 0;
};

// A source's sched_switch program: put in slot `slot` of the scheduler object's chain (chain_fd),
// where there is one (load it with autoattach off then), so the scheduler's switch program ends
// in it, or on its own where the kernel refuses that (its link in *link); chain_fd < 0: it was
// attached with its object. in_chain (may be null): the program's own flag, whether to go on
// along the chain, true while it is in it.
Result<ChainSlot> chain_or_attach(bpf_program* prog, int chain_fd, uint32_t slot, bpf_link** link,
                                  bool* in_chain = nullptr);

// Sums a per-CPU array's single slot over every possible CPU.
template <typename T>
bool read_per_cpu(int map_fd, std::vector<T>& per_cpu) {
  per_cpu.resize(static_cast<size_t>(libbpf_num_possible_cpus()));
  __u32 zero = 0;
  return bpf_map_lookup_elem(map_fd, &zero, per_cpu.data()) == 0;
}

// The CPUs' slots of a struct of __u64 counters only (no histogram, no maximum), summed field by
// field: the kernel's per-CPU losses and counts as one.
template <typename T>
T sum_counters(const std::vector<T>& per_cpu) {
  static_assert(sizeof(T) % sizeof(__u64) == 0 && std::is_trivially_copyable_v<T>, "a struct of __u64 counters");
  constexpr size_t kFields = sizeof(T) / sizeof(__u64);
  __u64 sum[kFields] = {};
  for (const T& c : per_cpu) {
    __u64 f[kFields];
    std::memcpy(f, &c, sizeof f);
    for (size_t i = 0; i < kFields; ++i) sum[i] += f[i];
  }
  T out;
  std::memcpy(&out, sum, sizeof out);
  return out;
}

}  // namespace pm

#include "core/metric.h"

namespace pm {

// What the programs of a BPF object cost, where the kernel keeps count (sysctl
// kernel.bpf_stats_enabled=1; perf-monitor does not turn it on itself: it costs two clock reads
// per run): runs and run time per program, under family "self".
void append_bpf_stats(bpf_object* obj, Samples& out);

}  // namespace pm
