// SPDX-License-Identifier: Apache-2.0
#include "core/top.h"

namespace pm {

void TopFigures::add(const TopFigures& o) {
  TaskFigures::add(o);
  if (o.rss_bytes) rss_bytes = rss_bytes.value_or(0) + *o.rss_bytes;
  blocked_known = blocked_known && o.blocked_known;
  io_known = io_known && o.io_known;
}

TopFigures top_delta(const TaskFigures& now, const TaskFigures& then) {
  TopFigures f;
  static_cast<TaskFigures&>(f) = now.since(then);
  double cpu = f[TaskFig::kOnCpu], u = f[TaskFig::kUser], s = f[TaskFig::kSystem];
  f[TaskFig::kSystem] = u + s > 0 ? cpu * s / (u + s) : 0;
  f[TaskFig::kUser] = cpu - f[TaskFig::kSystem];
  return f;
}

double TopFigures::key(TopSort sort) const {
  switch (sort) {
    case TopSort::kCpu:
      return cpu_s();
    case TopSort::kRunq:
      return runq_s();
    case TopSort::kBlocked:
      return blocked_s();
    case TopSort::kIo:
      return io_bytes();
    case TopSort::kFaults:
      return faults();
    case TopSort::kMemory:
      return rss_bytes.value_or(0);
  }
  return 0;
}

const char* to_string(TopSort sort) {
  switch (sort) {
    case TopSort::kCpu:
      return "cpu";
    case TopSort::kRunq:
      return "runq";
    case TopSort::kBlocked:
      return "blocked";
    case TopSort::kIo:
      return "io";
    case TopSort::kFaults:
      return "faults";
    case TopSort::kMemory:
      return "memory";
  }
  return "cpu";
}

namespace {
constexpr TopSort kSorts[] = {TopSort::kCpu, TopSort::kRunq,   TopSort::kBlocked,
                              TopSort::kIo,  TopSort::kFaults, TopSort::kMemory};
}  // namespace

std::optional<TopSort> parse_top_sort(std::string_view s) {
  for (TopSort t : kSorts) {
    if (s == to_string(t)) return t;
  }
  return std::nullopt;
}

std::vector<std::string> top_sort_list() {
  std::vector<std::string> out;
  for (TopSort t : kSorts) out.emplace_back(to_string(t));
  return out;
}

std::string top_sort_names() {
  std::string s;
  for (size_t i = 0; i < std::size(kSorts); ++i) {
    s += i == 0 ? "" : i + 1 == std::size(kSorts) ? " or " : ", ";
    s += to_string(kSorts[i]);
  }
  return s;
}

}  // namespace pm
