// SPDX-License-Identifier: Apache-2.0
#include "sources/kernel/skeleton.h"

#include <fcntl.h>

#include <fmt/format.h>

#include "core/aggregator.h"
#include "core/file_reader.h"
#include "core/text.h"
#include "core/text_layout.h"

namespace pm {
namespace {

void self_text(TextBlock& b);

const MetricDesc kRuns = shown_by(self_text, {"self", "bpf_runs", MetricKind::kCounter, Unit::kNone,
                                              "Runs of each perf-monitor BPF program (events it saw), with "
                                              "kernel.bpf_stats_enabled=1"});
const MetricDesc kRunTime = shown_by(self_text, {"self", "bpf_run_seconds", MetricKind::kCounter, Unit::kSeconds,
                                                 "Time spent in each perf-monitor BPF program, with "
                                                 "kernel.bpf_stats_enabled=1"});

// self     bpf handle_switch 9721/s in 0.1% of a CPU  handle_wakeup 4340/s in 0.0% of a CPU
void self_text(TextBlock& b) {
  int at = text_order::kSelf;
  for (const Shown* runs : b.take_all(kRuns)) {
    std::string prog(label_of(*runs, "program"));
    const Shown* t = b.take(kRunTime, {{"program", prog}});
    std::string time = t == nullptr        ? "n/a"
                       : b.summary() ? human_time(t->value)
                                     : percent(100 * t->rate) + " of a CPU";
    b.item(at++, "self", fmt::format("bpf {} {} in {}", prog, counted(b, *runs), time));
  }
}

// kernel.bpf_stats_enabled, read at most once a second: every BPF source asks on every tick.
bool bpf_stats_enabled() {
  static FileReader reader;
  static MonoClock::time_point read_at;
  static bool on = false;
  auto now = MonoClock::now();
  if (read_at == MonoClock::time_point{} || now - read_at >= std::chrono::seconds(1)) {
    read_at = now;
    auto text = reader.read("/proc/sys/kernel/bpf_stats_enabled");
    on = text && trim(*text) == "1";
  }
  return on;
}

}  // namespace

void append_bpf_stats(bpf_object* obj, Samples& out) {
  // Every loaded program from the first reading on (a program first seen after it ran would
  // lose those runs from the totals), but only while the kernel keeps count.
  if (!bpf_stats_enabled()) return;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    int fd = bpf_program__fd(prog);
    if (fd < 0) continue;  // not loaded (the other attachment family, or disabled)
    bpf_prog_info info{};
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
    Labels l{{"program", bpf_program__name(prog)}};
    out.push_back({&kRuns, l, static_cast<double>(info.run_cnt)});
    out.push_back({&kRunTime, std::move(l), static_cast<double>(info.run_time_ns) / 1e9});
  }
}

Result<ChainSlot> chain_or_attach(bpf_program* prog, int chain_fd, uint32_t slot, bpf_link** link,
                                  bool* in_chain) {
  *link = nullptr;
  if (chain_fd < 0) return ChainSlot();  // attached with its object
  int fd = bpf_program__fd(prog);
  if (in_chain != nullptr) *in_chain = true;  // (before it runs there)
  if (bpf_map_update_elem(chain_fd, &slot, &fd, BPF_ANY) == 0) {
    return ChainSlot(UniqueFd(::fcntl(chain_fd, F_DUPFD_CLOEXEC, 0)), slot);
  }
  if (in_chain != nullptr) *in_chain = false;
  *link = bpf_program__attach(prog);
  if (*link == nullptr) return Error::from_errno(errno, std::string("attaching ") + bpf_program__name(prog));
  return ChainSlot();
}

}  // namespace pm
