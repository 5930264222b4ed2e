// SPDX-License-Identifier: Apache-2.0
// uprobe_multi links (Linux 6.6+), made with the bpf() system call: libbpf 1.1 predates them.
// One link puts a program on many offsets of one file, and taking it down waits for the kernel's
// grace periods once for all of them — a perf-event uprobe per function waits once per probe
// (about 0.1 s each, under a global lock: 62 probes took 13 s to take down).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fd.h"

namespace pm::probes {

// The attach type a program must be loaded with to be used in such a link (BPF_TRACE_UPROBE_MULTI).
inline constexpr unsigned kUprobeMultiAttachType = 48;

// Attaches prog_fd at `offsets` of `path` (the function's entries; their returns with
// `retprobe`), each call seeing the cookie of its offset; `shown` names the file in errors
// (path is /proc/self/fd/N for a file held open). Errc::kUnavailable where the kernel has no
// uprobe_multi links.
Result<UniqueFd> attach_uprobe_multi(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                                     const std::vector<uint64_t>& cookies, bool retprobe, const std::string& shown);

}  // namespace pm::probes
