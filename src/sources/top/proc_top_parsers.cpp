// SPDX-License-Identifier: Apache-2.0
#include "sources/top/proc_top_parsers.h"

#include <array>
#include <limits>

#include "core/text.h"

namespace pm {
namespace {

Error parse_error(std::string_view file, const std::string& what) {
  return make_error(Errc::kParse, std::string(file) + ": " + what);
}

}  // namespace

Result<TaskSchedstat> parse_task_schedstat(std::string_view text) {
  TaskSchedstat s;
  auto a = parse_u64(next_field(text)), b = parse_u64(next_field(text)), c = parse_u64(next_field(text));
  if (!a || !b || !c) return parse_error("/proc/PID/schedstat", "three numbers expected");
  s.on_cpu_ns = *a;
  s.runq_ns = *b;
  s.timeslices = *c;
  return s;
}

std::optional<uint64_t> parse_statm_resident(std::string_view text) {
  if (!parse_u64(next_field(text))) return std::nullopt;
  return parse_u64(next_field(text));
}

std::string command_line(std::string_view raw) {
  std::string s(raw);
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::optional<std::string> unified_cgroup_of(std::string_view text) {
  std::optional<std::string> out;
  for_each_line(text, [&](std::string_view line) {
    if (!out && line.substr(0, 3) == "0::") out = std::string(line.substr(3));
  });
  return out;
}

std::optional<double> cpu_stat_usage_s(std::string_view text) {
  size_t at = text.find("usage_usec ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 11);
  auto v = parse_u64(next_field(rest));
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * 1e-6;
}

}  // namespace pm
