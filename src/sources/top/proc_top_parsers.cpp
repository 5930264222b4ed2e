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

Result<TaskStat> parse_task_stat(std::string_view text) {
  constexpr std::string_view kFile = "/proc/PID/stat";
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return parse_error(kFile, "no '(comm)'");
  }
  TaskStat st;
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  // The fields after comm, from 0 (field 3 of proc(5), the state).
  enum {
    kState = 0,
    kPpid = 1,
    kFlags = 6,
    kMinflt = 7,
    kMajflt = 9,
    kUtime = 11,
    kStime = 12,
    kNice = 16,
    kThreads = 17,
    kStart = 19,
    kNeeded = 20
  };
  std::array<std::string_view, kNeeded> f{};
  std::string_view rest = text.substr(close + 1);
  for (auto& field : f) {
    field = next_field(rest);
    if (field.empty()) return parse_error(kFile, "fewer than 20 fields after comm");
  }
  if (f[kState].size() != 1) return parse_error(kFile, "bad state '" + std::string(f[kState]) + "'");
  st.state = f[kState][0];
  bool ok = true;
  auto u64 = [&](size_t i) {
    auto v = parse_u64(f[i]);
    ok = ok && v.has_value();
    return v.value_or(0);
  };
  auto i64 = [&](size_t i) {
    auto v = parse_i64(f[i]);
    ok = ok && v.has_value();
    return v.value_or(0);
  };
  int64_t ppid = i64(kPpid), nice = i64(kNice);
  st.flags = u64(kFlags);
  st.minflt = u64(kMinflt);
  st.majflt = u64(kMajflt);
  st.utime = u64(kUtime);
  st.stime = u64(kStime);
  st.num_threads = i64(kThreads);
  st.starttime = u64(kStart);
  if (!ok || ppid < 0 || ppid > std::numeric_limits<int>::max() || nice < -20 || nice > 19) {
    return parse_error(kFile, "a field is not a number in range");
  }
  st.ppid = static_cast<int>(ppid);
  st.nice = static_cast<int>(nice);
  return st;
}

Result<TaskSchedstat> parse_task_schedstat(std::string_view text) {
  TaskSchedstat s;
  auto a = parse_u64(next_field(text)), b = parse_u64(next_field(text)), c = parse_u64(next_field(text));
  if (!a || !b || !c) return parse_error("/proc/PID/schedstat", "three numbers expected");
  s.on_cpu_ns = *a;
  s.runq_ns = *b;
  s.timeslices = *c;
  return s;
}

Result<TaskStatus> parse_task_status(std::string_view text) {
  TaskStatus st;
  bool bad = false;
  for_each_line(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = line.substr(0, colon), rest = line.substr(colon + 1);
    if (key == "Uid") {
      auto v = parse_u64(next_field(rest));  // real, effective, saved, filesystem: the real one
      if (!v || *v > std::numeric_limits<uint32_t>::max()) {
        bad = true;
        return;
      }
      st.uid = static_cast<uint32_t>(*v);
    } else if (key == "voluntary_ctxt_switches" || key == "nonvoluntary_ctxt_switches") {
      auto v = parse_u64(next_field(rest));
      if (!v) {
        bad = true;
        return;
      }
      (key[0] == 'v' ? st.voluntary : st.nonvoluntary) = *v;
    }
  });
  if (bad) return parse_error("/proc/PID/status", "a Uid or context switch line is not a number");
  if (!st.uid) return parse_error("/proc/PID/status", "no Uid line");
  return st;
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

}  // namespace pm
