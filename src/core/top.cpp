// SPDX-License-Identifier: Apache-2.0
#include "core/top.h"

namespace pm {

void TopFigures::add(const TopFigures& o) {
  user_s += o.user_s;
  system_s += o.system_s;
  runq_s += o.runq_s;
  blocked_s += o.blocked_s;
  read_bytes += o.read_bytes;
  write_bytes += o.write_bytes;
  faults += o.faults;
  switches += o.switches;
  if (o.rss_bytes) rss_bytes = rss_bytes.value_or(0) + *o.rss_bytes;
  blocked_known = blocked_known && o.blocked_known;
  io_known = io_known && o.io_known;
}

double TopFigures::key(TopSort sort) const {
  switch (sort) {
    case TopSort::kCpu:
      return cpu_s();
    case TopSort::kRunq:
      return runq_s;
    case TopSort::kBlocked:
      return blocked_s;
    case TopSort::kIo:
      return read_bytes + write_bytes;
    case TopSort::kFaults:
      return faults;
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

std::optional<TopSort> parse_top_sort(std::string_view s) {
  for (TopSort t : {TopSort::kCpu, TopSort::kRunq, TopSort::kBlocked, TopSort::kIo, TopSort::kFaults, TopSort::kMemory}) {
    if (s == to_string(t)) return t;
  }
  return std::nullopt;
}

}  // namespace pm
