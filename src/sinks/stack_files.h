// SPDX-License-Identifier: Apache-2.0
// The profile's files: folded stacks (FlameGraph's input, one line per stack: frames joined by
// ';', then its value) and pprof (gzipped protobuf, for `go tool pprof`, Parca, Pyroscope).
//
// On-CPU values are samples (folded) and samples and CPU nanoseconds (pprof); off-CPU values are
// microseconds (folded, as `offcputime -f` prints) and nanoseconds and switches (pprof).
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "core/profile.h"
#include "core/safe_file.h"

namespace pm {

enum class StackKind { kOnCpu, kOffCpu };

// A folded line's value: samples, or whole microseconds (each stack rounded down).
uint64_t folded_value(const StackProfile::Entry& e, StackKind kind);
std::string folded_stacks(const StackProfile& p, StackKind kind);
// The pprof Profile message, not compressed (pprof_file gzips it).
std::string pprof_profile(const StackProfile& p, StackKind kind);
// A path ending in .pb.gz, .pb or .pprof is written as pprof, any other as folded stacks.
bool is_pprof_path(std::string_view path);
// Writes the kind's stacks to `file`, opened for path at the start (safe_file's rules: never
// through another user's link), and puts it in place.
Status write_stack_file(const StackProfile& p, StackKind kind, const std::string& path, OutputFile& file);

}  // namespace pm
